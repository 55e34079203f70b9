"""The hardmax dynamics on a real model's tokens, with ``A`` from one attention head.

Construction (also in docs/hardmax.md)
--------------------------------------
For layer ``l`` and head ``h`` of a model whose attention scores are
``q_i·k_j = (W_Q x_i + b_Q)·(W_K x_j + b_K) / sqrt(d_h)``:

1. ``M = W_Q^hᵀ W_K^h`` (``d × d``, rank <= ``d_h``), the bilinear part of the score, from the
   head's rows of the query and key projections (for grouped-query models the key head that
   query head ``h`` shares).  The biases are left out: ``x_iᵀ W_Q^hᵀ b_K`` does not depend on
   ``j`` (no effect on the argmax), but ``b_Qᵀ W_K^h x_j`` does, and the paper's model has no
   such term.  ``1/sqrt(d_h)`` does not change an argmax.  Rotary position embeddings
   (Llama, SmolLM2) are left out too: their scores are not a fixed bilinear form.
2. ``S = (M + Mᵀ)/2``: the paper needs a symmetric ``A``.  ``⟨S x, y⟩`` equals the head's
   score only on average over the two orders; the antisymmetric part is dropped.
3. ``A = S + (margin · ‖S‖₂ − λ_min(S)) · I``, so that ``λ_min(A) = margin · ‖S‖₂ > 0``
   (``margin`` default 0.01).  Adding ``c·I`` adds ``c ⟨x_i, x_j⟩`` to every score, a
   preference for tokens in the direction of ``x_i``; it is as large as the head's most
   negative curvature, so the result is the head's symmetric score *plus* an isotropic term
   of that size, not the head itself.

The tokens ``Z0`` are the hidden states entering layer ``l`` (``hidden_states[l]``: the
embeddings for ``l = 0``), as the model computes them for the text (special tokens
included), after the layer's input normalization where it has one before attention
(``input_layernorm`` of Llama-style models; BERT normalizes at the end of the previous layer).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_int, check_number
from ..attention import token_labels
from ..errors import InvalidInputError, OutOfRangeError

__all__ = ["key_query_matrix", "token_states", "simulate_text", "DEFAULT_MARGIN"]

#: Default relative margin: ``λ_min(A) = margin · ‖S‖₂``.
DEFAULT_MARGIN = 0.01


def _load(model: Any):
    from ..models import load_model

    return load_model(model) if isinstance(model, str) else model


def _check_layer_head(m: Any, layer: Any, head: Any) -> tuple[int, int]:
    L, H = int(m.n_layers), int(m.n_heads)
    lay = check_int(
        layer,
        "layer",
        lo=-L,
        hi=L - 1,
        error=OutOfRangeError,
        hint=f"{m.name} has {L} layers, 0-based; -1 is the last",
    )
    hd = check_int(
        head,
        "head",
        lo=-H,
        hi=H - 1,
        error=OutOfRangeError,
        hint=f"{m.name} has {H} heads per layer, 0-based",
    )
    return lay % L, hd % H


def _projections(m: Any, layer: int) -> tuple[Any, Any, Any]:
    """(query Linear, key Linear, input norm or None) of ``layer`` (BERT- or Llama-style)."""
    mods = dict(m.hf_model.named_modules())
    for q_suffix, k_suffix, norm_suffix in (
        (f"layer.{layer}.attention.self.query", f"layer.{layer}.attention.self.key", None),
        (
            f"layers.{layer}.self_attn.q_proj",
            f"layers.{layer}.self_attn.k_proj",
            f"layers.{layer}.input_layernorm",
        ),
    ):
        q = [mod for name, mod in mods.items() if name == q_suffix or name.endswith("." + q_suffix)]
        k = [mod for name, mod in mods.items() if name == k_suffix or name.endswith("." + k_suffix)]
        if len(q) == 1 and len(k) == 1:
            norm = None
            if norm_suffix is not None:
                found = [
                    mod
                    for name, mod in mods.items()
                    if name == norm_suffix or name.endswith("." + norm_suffix)
                ]
                norm = found[0] if len(found) == 1 else None
            return q[0], k[0], norm
    raise InvalidInputError(
        f"{m.name} ({m.model_type}): no query/key projections found for layer {layer}; "
        f"key_query_matrix knows BERT-style (attention.self.query/key) and Llama-style "
        f"(self_attn.q_proj/k_proj) models"
    )


def key_query_matrix(
    model: Any = "minilm", *, layer: int, head: int, margin: float = DEFAULT_MARGIN
) -> tuple[np.ndarray, dict]:
    """``A`` for one head: ``W_Qᵀ W_K`` symmetrized and shifted to be positive definite.

    Parameters
    ----------
    model : str or AttentionModel
        A packaged alias (``"minilm"``), a Hugging Face id or folder, or a loaded model.
    layer, head : int
        0-based (negative counts from the end).
    margin : float, default 0.01
        ``λ_min(A) = margin · ‖S‖₂`` (> 0).

    Returns
    -------
    A : ndarray of shape (d, d), float64
        Symmetric positive definite (``d`` = the model's hidden size).
    info : dict
        ``layer``, ``head``, ``head_dim``, ``kv_head``, ``shift`` (the ``c`` added to the
        diagonal), ``norm_S`` (``‖S‖₂``), ``eig_S`` (smallest and largest eigenvalue of ``S``),
        ``antisymmetric_share`` (``‖M − Mᵀ‖_F / ‖M + Mᵀ‖_F``), ``margin`` and ``construction``.
    """
    m = _load(model)
    lay, hd = _check_layer_head(m, layer, head)
    margin = float(
        check_number(margin, "margin", lo=0, lo_open=True, hint="λ_min(A) = margin·‖S‖₂")
    )
    q, k, _ = _projections(m, lay)
    Wq = q.weight.detach().to("cpu").double().numpy()  # (H * dh, d)
    Wk = k.weight.detach().to("cpu").double().numpy()  # (Hkv * dh, d)
    H, Hkv = int(m.n_heads), int(m.n_kv_heads)
    dh = Wq.shape[0] // H
    kv = hd // max(1, H // Hkv)
    Mq = Wq[hd * dh : (hd + 1) * dh]
    Mk = Wk[kv * dh : (kv + 1) * dh]
    M = Mq.T @ Mk
    S = 0.5 * (M + M.T)
    eig = np.linalg.eigvalsh(S)
    norm_S = float(max(abs(eig[0]), abs(eig[-1])))
    shift = margin * norm_S - float(eig[0])
    A = S + shift * np.eye(S.shape[0])
    info = {
        "layer": lay,
        "head": hd,
        "head_dim": int(dh),
        "kv_head": int(kv),
        "margin": margin,
        "shift": shift,
        "norm_S": norm_S,
        "eig_S": [float(eig[0]), float(eig[-1])],
        "antisymmetric_share": float(
            np.linalg.norm(M - M.T) / max(np.linalg.norm(M + M.T), 1e-300)
        ),
        "construction": (
            "A = (M + M.T)/2 + (margin*||S||_2 - lambda_min(S)) I, M = W_Q[h].T W_K[h] (no biases)"
        ),
    }
    return A, info


def token_states(
    model: Any, text: str, *, layer: int, truncate: bool = False
) -> tuple[np.ndarray, list[str]]:
    """The hidden states entering ``layer`` for ``text`` and the tokens' labels.

    Returns
    -------
    Z : ndarray of shape (n, d), float64
        ``hidden_states[layer]`` of one forward pass (special tokens included), after the
        layer's input normalization where it precedes attention (Llama-style).
    labels : list of str
        Readable unique token labels (as :attr:`attntopo.Attention.labels`).
    """
    import torch

    m = _load(model)
    lay, _ = _check_layer_head(m, layer, 0)
    enc = m.tokenize(text, truncate=truncate)
    ids = torch.tensor([enc.ids], dtype=torch.long, device=m.device)
    with torch.inference_mode():
        out = m.hf_model(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            output_hidden_states=True,
            **m.forward_kwargs,
        )
        h = out.hidden_states[lay]
        _, _, norm = _projections(m, lay)
        if norm is not None:
            h = norm(h)
    Z = h[0].detach().to("cpu").double().numpy()
    labels, _src = token_labels(enc.tokens, enc.offsets, enc.special, text=enc.text)
    return Z, labels


def simulate_text(
    text: str,
    model: Any = "minilm",
    *,
    layer: int,
    head: int,
    alpha: float = 1.0,
    steps: int = 50,
    margin: float = DEFAULT_MARGIN,
    truncate: bool = False,
    rtol: float | None = None,
    cluster_tol: float | None = None,
):
    """The hardmax dynamics on a model's tokens for ``text``, with ``A`` from one head.

    ``Z0`` = :func:`token_states` (the hidden states entering ``layer``), ``A`` =
    :func:`key_query_matrix` (``W_Qᵀ W_K`` of ``head``, symmetrized, shifted by ``margin``);
    then :func:`simulate`.  The result's ``tokens`` are the token labels and its ``source``
    records the model, text, layer, head and the construction of ``A``.

    Raises
    ------
    EmptyTextError, TextTooLongError
        As :meth:`AttentionModel.attention`.
    OutOfRangeError
        ``layer`` or ``head`` outside the model.
    InvalidInputError
        ``alpha``, ``steps``, ``margin`` or the tolerances out of range.
    """
    from ._dynamics import check_alpha, check_steps
    from ._simulation import simulate

    m = _load(model)
    check_alpha(alpha)
    check_steps(steps)
    A, info = key_query_matrix(m, layer=layer, head=head, margin=margin)
    Z0, labels = token_states(m, text, layer=info["layer"], truncate=truncate)
    source = {
        "kind": "model",
        "model": m.name,
        "model_info": m.info(),
        "text": text,
        "z0": f"hidden_states[{info['layer']}]",
        **info,
    }
    return simulate(
        Z0,
        A=A,
        alpha=alpha,
        steps=steps,
        rtol=rtol,
        cluster_tol=cluster_tol,
        tokens=labels,
        source=source,
    )
