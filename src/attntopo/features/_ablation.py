"""Head ablation in the forward pass: chosen heads attend uniformly, everything after sees it.

:func:`ablated_heads` runs a loaded model with an attention function of its own kind
(``eager``) registered under another name (``transformers.AttentionInterface``, as
:mod:`attntopo.compress` does): it computes each layer's attention exactly as eager attention
does, then replaces the chosen heads' weights by the **uniform** distribution over the keys
each query may see (all real tokens for a bidirectional model, the tokens up to the query for
a causal one; padding never), and multiplies the new weights with the values.  So

* the ablated heads' attention matrices, which the feature sets read, are the uniform ones
  (row ``i`` is ``1/n`` on every key, or ``1/(i+1)`` on keys ``0..i`` for a causal model);
* their output is the mean of the values, and every later layer sees that.

Uniform (mean) attention keeps each head's output on the scale of the values, where zeroing
a head's output would leave its attention pattern, and so its features, unchanged.  The
model's own attention setting is put back afterwards, also after an error.
"""

from __future__ import annotations

import contextvars
import inspect
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from ..errors import InvalidInputError

__all__ = ["ablated_heads", "check_heads"]

_NAME = "attntopo_ablate"
_ACTIVE: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "attntopo_ablate", default=None
)


def _allowed(module: Any, mask: Any, B: int, Q: int, K: int, device: Any) -> Any:
    """Boolean ``(B, 1, Q, K)``: the keys each query may attend to."""
    import torch

    if mask is not None:
        m = mask[..., :K]
        ok = m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2
        return ok.expand(B, 1, Q, K)
    if getattr(module, "is_causal", False) and Q > 1:
        return torch.ones(Q, K, dtype=torch.bool, device=device).tril(K - Q).expand(B, 1, Q, K)
    return torch.ones(B, 1, Q, K, dtype=torch.bool, device=device)


def _attention(module, query, key, value, attention_mask, **kwargs):
    """Eager attention of ``module``'s model family, the active ablation applied."""
    import torch

    eager = inspect.getmodule(type(module)).eager_attention_forward
    out, w = eager(module, query, key, value, attention_mask, **kwargs)
    targets = (_ACTIVE.get() or {}).get(getattr(module, "layer_idx", None))
    if not targets:
        return out, w
    B, H, Q, K = w.shape
    groups = H // value.shape[1]
    V = value.repeat_interleave(groups, dim=1) if groups > 1 else value
    allowed = _allowed(module, attention_mask, B, Q, K, w.device).to(w.dtype)
    uniform = allowed / allowed.sum(-1, keepdim=True).clamp(min=1)
    w2 = w.clone()
    w2[:, list(targets)] = uniform.expand(B, len(targets), Q, K)
    return torch.matmul(w2, V).transpose(1, 2).contiguous(), w2


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    if _NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(_NAME, _attention)
        AttentionMaskInterface.register(_NAME, ALL_MASK_ATTENTION_FUNCTIONS["eager"])


def check_heads(heads: Any, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``(layer, head)`` pairs of a model with these counts (0-based; negatives count back)."""
    try:
        pairs = [(int(a), int(b)) for a, b in heads]
    except (TypeError, ValueError):
        raise InvalidInputError(
            "heads must be (layer, head) pairs, e.g. [(0, 3), (2, 7)]"
        ) from None
    out = []
    for a, b in pairs:
        if not (-n_layers <= a < n_layers and -n_heads <= b < n_heads):
            raise InvalidInputError(
                f"head ({a}, {b}) is outside the model's {n_layers} layers x {n_heads} heads"
            )
        out.append((a % n_layers, b % n_heads))
    if not out:
        raise InvalidInputError("heads is empty: name at least one (layer, head) pair to ablate")
    return sorted(set(out))


@contextmanager
def ablated_heads(model: Any, heads: Sequence[tuple[int, int]]) -> Iterator[list[tuple[int, int]]]:
    """While active, ``model`` (an :class:`~attntopo.models.AttentionModel`) runs with ``heads``
    ablated: each attends uniformly to the keys it may see (see the module docstring).

    Yields the checked, sorted ``(layer, head)`` pairs.  Every forward pass of the model in
    the block (``model.attention``, :func:`~attntopo.features.features`, a pipeline's
    ``predict``) is ablated; the model's attention setting is restored on exit.
    """
    pairs = check_heads(heads, model.n_layers, model.n_heads)
    targets: dict[int, list[int]] = {}
    for a, b in pairs:
        targets.setdefault(a, []).append(b)
    _register()
    hf = model.hf_model
    with model._lock:
        old = hf.config._attn_implementation
        token = _ACTIVE.set(targets)
        try:
            hf.set_attn_implementation(_NAME)
            yield pairs
        finally:
            hf.set_attn_implementation(old)
            _ACTIVE.reset(token)
