"""Queries and keys of every attention head, captured with forward hooks in one forward pass.

The kernel (Performer) approximations of :func:`attntopo.theory.approximability` need each
head's own query and key vectors, exactly as the model multiplies them:

* **BERT-style** self-attention (``query`` / ``key`` linear layers): the linear layers'
  outputs, reshaped to ``(heads, n, head_dim)``;
* **Llama-style** attention (``q_proj`` / ``k_proj`` and rotary position embeddings): the
  projections' outputs after the rotary embedding, which the attention module receives as
  ``position_embeddings=(cos, sin)`` (captured by a forward pre-hook on the module) and applies
  with its own model family's ``apply_rotary_pos_emb``; grouped-query keys are repeated to the
  query heads as the model's ``repeat_kv`` does (key head ``j`` serves query heads
  ``j·g … j·g + g − 1``, ``g = n_heads / n_kv_heads``).

The logits are ``scaling · q_i · k_j`` with the module's own ``scaling`` (``head_dim ** -0.5``
for both families), plus the causal mask for decoder models.  One forward pass gives the
queries, the keys and the attention weights of that same pass; :func:`capture_qk` checks that
``softmax(scaling · Q Kᵀ + mask)``, recomputed in float64, reproduces those weights (only the
float32 rounding of one pass separates them, ≈1e-6), so an attention module with a step this
capture does not model (query/key norms, ALiBi, sliding windows) is refused with
:class:`~attntopo.errors.ModelLoadError` instead of giving wrong queries silently.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..errors import InvalidInputError, ModelLoadError
from .model import AttentionModel, Encoding

__all__ = ["QKCapture", "capture_qk", "attention_from_qk", "one_blas_thread", "SELF_CHECK_ATOL"]

#: Largest absolute difference allowed between the recomputed weights and the pass's own
#: weights (the same pass: float32 rounding of the logits and the softmax only, ≈1e-6).
SELF_CHECK_ATOL = 1e-4


@dataclass(frozen=True)
class QKCapture:
    """Queries, keys and attention weights of one text's forward pass.

    Attributes
    ----------
    encoding : Encoding
        The tokens (special tokens included), as :meth:`AttentionModel.tokenize` gives them.
    queries, keys : ndarray of shape (n_layers, n_heads, n_tokens, head_dim), float32
        What the model multiplies: rotary embedding applied (Llama-style), grouped-query keys
        repeated to the query heads.
    scaling : ndarray of shape (n_layers,), float64
        The factor of the logits, ``logits = scaling · Q Kᵀ`` (``head_dim ** -0.5``).
    causal : bool
        Decoder model: the mask sets logits above the diagonal to ``-inf``.
    attention : ndarray of shape (n_layers, n_heads, n_tokens, n_tokens), float32
        The attention weights of the same pass.
    self_check : float
        ``max |softmax(scaling · Q Kᵀ + mask) − attention|`` over every head (float64).
    """

    encoding: Encoding
    queries: np.ndarray
    keys: np.ndarray
    scaling: np.ndarray
    causal: bool
    attention: np.ndarray
    self_check: float

    @property
    def n_tokens(self) -> int:
        return int(self.queries.shape[2])

    def weights(self, layer: int | None = None) -> np.ndarray:
        """``softmax(scaling · Q Kᵀ + mask)`` in float64: ``(L, H, n, n)``, or ``(H, n, n)`` of one layer."""
        if layer is None:
            return np.stack([self.weights(l) for l in range(self.queries.shape[0])])
        return attention_from_qk(self.queries[layer], self.keys[layer], float(self.scaling[layer]), self.causal)


def attention_from_qk(Q: np.ndarray, K: np.ndarray, scaling: float, causal: bool) -> np.ndarray:
    """Exact softmax attention of queries and keys, in float64.

    Parameters
    ----------
    Q, K : ndarray of shape (..., n, d)
    scaling : float
        Logits are ``scaling · Q Kᵀ``.
    causal : bool
        Mask keys after the query (``j > i``).

    Returns
    -------
    ndarray of shape (..., n, n), float64
        Rows sum to 1.
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    z = scaling * (Q @ np.swapaxes(K, -1, -2))
    if causal:
        n = z.shape[-1]
        z = np.where(np.tril(np.ones((n, n), dtype=bool)), z, -np.inf)
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


@contextlib.contextmanager
def one_blas_thread(limits: int = 1, user_api: str | None = "blas") -> Iterator[None]:
    """BLAS (and with ``user_api=None`` OpenMP) on ``limits`` thread(s) inside the block.

    Small stacked products (heads × n × n, n of a few hundred) run far faster on one thread:
    on a loaded 2-core machine OpenBLAS's two threads made a (12, 137, 137) SVD take 1.4 s
    instead of 35 ms.  Needs threadpoolctl (installed with scikit-learn); without it, nothing
    changes.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=limits, user_api=user_api):
        yield


# ----------------------------------------------------------------- attention modules
def _attention_modules(model: AttentionModel) -> list[tuple[Any, str, Any, Any]]:
    """``(module, style, query_linear, key_linear)`` of every self-attention, in layer order."""
    found = []
    for _, mod in model.hf_model.named_modules():
        if hasattr(mod, "q_proj") and hasattr(mod, "k_proj"):
            found.append((mod, "rotary", mod.q_proj, mod.k_proj))
        elif hasattr(mod, "query") and hasattr(mod, "key") and hasattr(mod, "attention_head_size"):
            if "Cross" in type(mod).__name__:
                continue
            found.append((mod, "plain", mod.query, mod.key))
    if len(found) != model.n_layers:
        raise ModelLoadError(
            f"cannot capture queries and keys of {model.name} ({model.model_type}): found "
            f"{len(found)} attention modules with query/key (BERT) or q_proj/k_proj (Llama) projections "
            f"for {model.n_layers} layers; supported: BERT-style and Llama-style (rotary) self-attention"
        )
    idx = [getattr(m[0], "layer_idx", None) for m in found]
    if all(isinstance(i, int) for i in idx):
        found = [f for _, f in sorted(zip(idx, found), key=lambda t: t[0])]
    return found


def _head_dim(mod: Any, style: str, model: AttentionModel) -> int:
    d = getattr(mod, "head_dim", None) if style == "rotary" else getattr(mod, "attention_head_size", None)
    if not d:
        d = model.config.hidden_size // model.n_heads
    return int(d)


def capture_qk(model: AttentionModel, text: str, *, truncate: bool = False, check: bool = True) -> QKCapture:
    """Queries and keys of every head of ``text``, from one forward pass with hooks.

    Parameters
    ----------
    model : AttentionModel
        A BERT-style or Llama-style model (:func:`attntopo.load_model`).
    text : str
    truncate : bool
        Cut a text longer than the model's limit instead of raising.
    check : bool, default True
        Check that the captured queries and keys reproduce the pass's attention weights
        within :data:`SELF_CHECK_ATOL`.

    Returns
    -------
    QKCapture

    Raises
    ------
    ModelLoadError
        The model's attention is of another kind, or the captured queries and keys do not
        reproduce its weights.
    InvalidInputError, EmptyTextError, TextTooLongError
    """
    import torch

    if not isinstance(model, AttentionModel):
        raise InvalidInputError(f"capture_qk needs a loaded AttentionModel, got {type(model).__name__}")
    enc = model._encode([text], truncate=bool(truncate))[0]
    mods = _attention_modules(model)
    got: list[dict] = [{} for _ in mods]
    handles = []

    def keep(slot: dict, name: str):
        def hook(_mod, _args, output):
            slot[name] = output.detach()
        return hook

    def keep_rotary(slot: dict):
        def pre_hook(_mod, _args, kwargs):
            slot["rope"] = kwargs.get("position_embeddings")
        return pre_hook

    # the hooks live only while this thread holds the model: another thread's forward pass
    # never runs through them
    with model._lock:
        try:
            for slot, (mod, style, q_lin, k_lin) in zip(got, mods):
                handles.append(q_lin.register_forward_hook(keep(slot, "q")))
                handles.append(k_lin.register_forward_hook(keep(slot, "k")))
                if style == "rotary":
                    handles.append(mod.register_forward_pre_hook(keep_rotary(slot), with_kwargs=True))
            ids = torch.tensor([enc.ids], dtype=torch.long, device=model.device)
            with torch.inference_mode():
                out = model.hf_model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
        finally:
            for h in handles:
                h.remove()
    atts = getattr(out, "attentions", None)
    if not atts or any(a is None for a in atts):
        raise ModelLoadError(f"{model.name} returned no attention weights: load it with attn_implementation='eager'")
    attention = torch.stack([a[0].float() for a in atts]).cpu().numpy()
    n = len(enc.ids)
    Qs, Ks, scales = [], [], []
    for slot, (mod, style, _, _) in zip(got, mods):
        if "q" not in slot or "k" not in slot:
            raise ModelLoadError(f"the query/key projections of {model.name} did not run in the forward pass")
        d = _head_dim(mod, style, model)
        q = slot["q"].reshape(1, n, -1, d).transpose(1, 2)  # (1, H, n, d)
        k = slot["k"].reshape(1, n, -1, d).transpose(1, 2)  # (1, Hkv, n, d)
        if style == "rotary":
            rope = slot.get("rope")
            if rope is None:
                raise ModelLoadError(
                    f"{model.name} ({model.model_type}) passes no rotary position embeddings to its attention: "
                    f"its queries and keys cannot be captured"
                )
            apply = getattr(inspect.getmodule(type(mod)), "apply_rotary_pos_emb", None)
            if apply is None:
                raise ModelLoadError(f"{model.model_type} has no apply_rotary_pos_emb: cannot rebuild its rotary queries")
            q, k = apply(q, k, rope[0], rope[1])
        groups = q.shape[1] // k.shape[1]
        if groups > 1:
            k = k.repeat_interleave(groups, dim=1)
        Qs.append(q[0].float().cpu().numpy())
        Ks.append(k[0].float().cpu().numpy())
        scales.append(float(getattr(mod, "scaling", d**-0.5)))
    cap = QKCapture(encoding=enc, queries=np.stack(Qs), keys=np.stack(Ks), scaling=np.asarray(scales),
                    causal=bool(model.causal), attention=attention, self_check=0.0)
    with one_blas_thread():
        err = float(max(np.abs(cap.weights(l) - attention[l]).max() for l in range(len(mods))))
    if check and not err <= SELF_CHECK_ATOL:
        raise ModelLoadError(
            f"queries and keys captured from {model.name} ({model.model_type}) do not reproduce its attention "
            f"(max difference {err:.3g} > {SELF_CHECK_ATOL:g}): its attention has a step attntopo does not model "
            f"(query/key norms, ALiBi, sliding windows, …)"
        )
    return QKCapture(encoding=enc, queries=cap.queries, keys=cap.keys, scaling=cap.scaling, causal=cap.causal,
                     attention=attention, self_check=err)
