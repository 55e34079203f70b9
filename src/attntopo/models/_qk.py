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
from ._description import Encoding
from .model import AttentionModel
from .precision import normalize_rows

__all__ = [
    "QKCapture",
    "capture_qk",
    "attention_from_qk",
    "one_blas_thread",
    "SELF_CHECK_ATOL",
    "self_check_atol",
]

#: Largest absolute difference allowed between the recomputed weights and the pass's own
#: weights (the same pass: float32 rounding of the logits and the softmax only, ≈1e-6).
#: A float16 or bfloat16 model rounds its logits too: :func:`self_check_atol` adds that.
SELF_CHECK_ATOL = 1e-4


def self_check_atol(
    Q: np.ndarray, K: np.ndarray, scaling: float, causal: bool, dtype: str
) -> np.ndarray:
    """Per row, the largest difference rounding explains between the weights recomputed from
    captured queries and keys and the weights of a pass in ``dtype``.

    A model in ``dtype`` (unit roundoff ``u``) computes each logit as ``fl(fl(q·k) · s)``: the
    product accumulates in at least float32 (``u_a``) and is rounded to ``dtype``, then scaled and
    rounded again, so ``|ẑ − z| ≤ δz = (2u + u²)|z| + γ_d(u_a)(1 + u)² · s Σ_k |q_k k_k|``.  The
    softmax moves by at most ``½ max_j δz_j`` per row (its Jacobian's ∞-norm is ½), its output
    is rounded to ``dtype`` (``u`` at most, the weights being ≤ 1), and the row is divided by a
    sum within :func:`~attntopo.models.row_sum_tolerance` ``t`` of 1 (``t / (1 − t)``).
    The float32 part of the pass keeps :data:`SELF_CHECK_ATOL`; a float32 model's bound is that
    plus the renormalization's ``t / (1 − t)``.

    Parameters
    ----------
    Q, K : ndarray of shape (H, n, d)
        Captured queries and keys (the values the model multiplied).
    scaling : float
    causal : bool
        Only keys ``j <= i`` count for row ``i``.
    dtype : str
        The model's dtype.

    Returns
    -------
    ndarray of shape (H, n), float64
        Constant for float32 and float64 models.
    """
    from .precision import _ACC_UNIT, _FORMATS, _gamma, row_sum_tolerance, weights_dtype

    H, n, d = Q.shape
    name = weights_dtype(dtype)
    u = _FORMATS[name][0]
    t = row_sum_tolerance(name, n)
    if u <= _ACC_UNIT:
        return np.full((H, n), SELF_CHECK_ATOL + t / (1 - t))
    Q64, K64 = np.asarray(Q, np.float64), np.asarray(K, np.float64)
    z = np.abs(scaling * (Q64 @ np.swapaxes(K64, -1, -2)))
    mag = abs(scaling) * (np.abs(Q64) @ np.swapaxes(np.abs(K64), -1, -2))
    dz = (2 * u + u * u) * z + _gamma(d, min(u, _ACC_UNIT)) * (1 + u) ** 2 * mag
    if causal:
        dz = np.where(np.tril(np.ones((n, n), dtype=bool)), dz, 0.0)
    return 0.5 * dz.max(-1) + u + t / (1 - t) + SELF_CHECK_ATOL


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
        """``softmax(scaling · Q Kᵀ + mask)`` in float64:
        ``(L, H, n, n)``, or ``(H, n, n)`` of one layer."""
        if layer is None:
            return np.stack([self.weights(li) for li in range(self.queries.shape[0])])
        return attention_from_qk(
            self.queries[layer], self.keys[layer], float(self.scaling[layer]), self.causal
        )


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
def one_blas_thread(*, limits: int = 1, user_api: str | None = "blas") -> Iterator[None]:
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
            f"{len(found)} attention modules with query/key (BERT) or q_proj/k_proj (Llama) "
            f"projections for {model.n_layers} layers; supported: "
            "BERT-style and Llama-style (rotary) self-attention"
        )
    idx = [getattr(m[0], "layer_idx", None) for m in found]
    if all(isinstance(i, int) for i in idx):
        found = [f for _, f in sorted(zip(idx, found), key=lambda t: t[0])]
    return found


def _head_dim(mod: Any, style: str, model: AttentionModel) -> int:
    d = (
        getattr(mod, "head_dim", None)
        if style == "rotary"
        else getattr(mod, "attention_head_size", None)
    )
    if not d:
        d = model.config.hidden_size // model.n_heads
    return int(d)


def capture_qk(
    model: AttentionModel, text: str, *, truncate: bool = False, check: bool = True
) -> QKCapture:
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
        within :func:`self_check_atol` (about :data:`SELF_CHECK_ATOL` for a float32 model;
        a float16 or bfloat16 model rounds its logits, and the bound grows with them).

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
        raise InvalidInputError(
            f"capture_qk needs a loaded AttentionModel, got {type(model).__name__}"
        )
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
                    handles.append(
                        mod.register_forward_pre_hook(keep_rotary(slot), with_kwargs=True)
                    )
            ids = torch.tensor([enc.ids], dtype=torch.long, device=model.device)
            with torch.inference_mode():
                out = model.hf_model(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    output_attentions=True,
                    **model.forward_kwargs,
                )
        finally:
            for h in handles:
                h.remove()
    atts = getattr(out, "attentions", None)
    if not atts or any(a is None for a in atts):
        raise ModelLoadError(
            f"{model.name} returned no attention weights: load it with attn_implementation='eager'"
        )
    # rows renormalized in float64 (a bfloat16 row sums to 1 only within ~2^-8)
    attention = (
        torch.stack(
            [
                normalize_rows(a[0], what=f"attention of {model.name}, layer {i}")
                for i, a in enumerate(atts)
            ]
        )
        .cpu()
        .numpy()
    )
    dtype = str(atts[0].dtype).replace("torch.", "")
    n = len(enc.ids)
    Qs, Ks, scales = [], [], []
    for slot, (mod, style, _, _) in zip(got, mods):
        if "q" not in slot or "k" not in slot:
            raise ModelLoadError(
                f"the query/key projections of {model.name} did not run in the forward pass"
            )
        d = _head_dim(mod, style, model)
        q = slot["q"].reshape(1, n, -1, d).transpose(1, 2)  # (1, H, n, d)
        k = slot["k"].reshape(1, n, -1, d).transpose(1, 2)  # (1, Hkv, n, d)
        if style == "rotary":
            rope = slot.get("rope")
            if rope is None:
                raise ModelLoadError(
                    f"{model.name} ({model.model_type}) passes no rotary position embeddings to "
                    "its attention: its queries and keys cannot be captured"
                )
            apply = getattr(inspect.getmodule(type(mod)), "apply_rotary_pos_emb", None)
            if apply is None:
                raise ModelLoadError(
                    f"{model.model_type} has no apply_rotary_pos_emb: "
                    "cannot rebuild its rotary queries"
                )
            q, k = apply(q, k, rope[0], rope[1])
        groups = q.shape[1] // k.shape[1]
        if groups > 1:
            k = k.repeat_interleave(groups, dim=1)
        Qs.append(q[0].float().cpu().numpy())
        Ks.append(k[0].float().cpu().numpy())
        scales.append(float(getattr(mod, "scaling", d**-0.5)))
    cap = QKCapture(
        encoding=enc,
        queries=np.stack(Qs),
        keys=np.stack(Ks),
        scaling=np.asarray(scales),
        causal=bool(model.causal),
        attention=attention,
        self_check=0.0,
    )
    err, excess, allowed = 0.0, -np.inf, SELF_CHECK_ATOL
    with one_blas_thread():
        for li in range(len(mods)):
            diff = np.abs(cap.weights(li) - attention[li]).max(-1)  # (H, n)
            bound = self_check_atol(
                cap.queries[li], cap.keys[li], float(cap.scaling[li]), cap.causal, dtype
            )
            err = max(err, float(diff.max()))
            worst = np.unravel_index(int(np.argmax(diff - bound)), diff.shape)
            if float(diff[worst] - bound[worst]) > excess:
                excess, allowed = float(diff[worst] - bound[worst]), float(bound[worst])
    if check and not excess <= 0:
        raise ModelLoadError(
            f"queries and keys captured from {model.name} ({model.model_type}) do not reproduce "
            f"its attention (difference {excess + allowed:.3g} > {allowed:.3g}, the rounding of a "
            f"{dtype} pass): its attention has a step attntopo does "
            "not model (query/key norms, ALiBi, sliding windows, …)"
        )
    return QKCapture(
        encoding=enc,
        queries=cap.queries,
        keys=cap.keys,
        scaling=cap.scaling,
        causal=cap.causal,
        attention=attention,
        self_check=err,
    )
