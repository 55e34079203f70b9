"""The ``lookback`` set: Lookback Lens's lookback ratio, per head.

Chuang et al., *Lookback Lens: Detecting and Mitigating Contextual Hallucinations in Large
Language Models Using Only Attention Maps* (EMNLP 2024).  For a (prompt, answer) pair read as
one text, ``C`` is the context (every token before the answer's first token) and, for an answer
token ``i``, ``N_i`` the answer's own tokens it can see: the answer tokens ``j <= i`` for a
causal model (itself included), all the answer's tokens for a bidirectional one.  Per head,
with ``a_ij`` the attention of query ``i`` on key ``j``:

    A_ctx(i) = Σ_{j ∈ C} a_ij / |C|          (mean attention on the context)
    A_new(i) = Σ_{j ∈ N_i} a_ij / |N_i|      (mean attention on the new tokens)
    LR(i)    = A_ctx(i) / (A_ctx(i) + A_new(i))

and the feature is the mean of ``LR(i)`` over the answer's tokens ``i`` (the paper's span
average, the span being the whole answer).  ``LR`` lies in [0, 1]; it does not change when a
row is scaled, so removing special tokens (``drop_special=True``: they leave ``C`` and the
answer, and the rows are renormalized) is the same as leaving them out of both means.

The paper reads the ratio during generation: at step ``t`` the row of the token just fed
(the last prompt token, then each new token) over the context and the ``t − 1`` tokens
generated so far (plus the response header, ``"#Answer#:"``, which its code counts as new).
Here the pair goes through the model once (teacher forcing) and the queries are the answer's
own tokens, each counting itself among the new tokens: the same rows shifted by one step (the
last prompt token's row is not read; the answer's last token's is).

Cost per head: ``O(r n)`` for ``r`` answer tokens of ``n``, reading only the answer's rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidInputError

__all__ = [
    "LOOKBACK_QUANTITIES",
    "lookback_names",
    "answer_start",
    "lookback_ratios",
    "lookback_features",
]

#: The set's one quantity per head.
LOOKBACK_QUANTITIES: tuple[str, ...] = ("ratio",)


def lookback_names() -> list[str]:
    """Quantity names of the ``lookback`` set."""
    return list(LOOKBACK_QUANTITIES)


def answer_start(special: np.ndarray, offsets: list, boundary: int) -> int:
    """Index (among all tokens) of the answer's first token: the first non-special token
    that starts at or after character ``boundary``; ``n`` if there is none.  Every token
    before it (special ones such as ``<s>`` included) is the context, every token from it on
    (special ones such as a final ``[SEP]`` included) the answer."""
    special = np.asarray(special, dtype=bool)
    starts = np.array([a for a, _ in offsets], dtype=np.int64)
    hit = np.flatnonzero(~special & (starts >= boundary))
    return int(hit[0]) if hit.size else int(special.size)


def lookback_ratios(
    A: Any, start: int, causal: bool, *, keep: np.ndarray | None = None
) -> np.ndarray:
    """``LR(i)`` of every answer token of every head, shape (B, r), float64.

    Parameters
    ----------
    A : ndarray of shape (B, n, n) or (n, n)
        Attention matrices (rows: queries).
    start : int
        The answer's first token (:func:`answer_start`): tokens ``< start`` are the context.
    causal : bool
        New tokens of query ``i``: the answer's tokens ``j <= i`` (causal) or all of them.
    keep : ndarray of shape (n,), bool, optional
        Tokens taken into account (e.g. the non-special ones); all by default.  Columns ``r``:
        the kept answer tokens, in order.

    Raises
    ------
    InvalidInputError
        No kept context token or no kept answer token, or a kept answer row with no weight on
        the kept tokens (its ratio is 0 / 0).
    """
    A = np.asarray(A)
    if A.ndim == 2:
        A = A[None]
    n = A.shape[-1]
    kept = np.ones(n, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    idx = np.arange(n)
    ctx = kept & (idx < start)
    ans = kept & (idx >= start)
    if not ctx.any():
        raise InvalidInputError("the lookback set needs at least one context (prompt) token")
    rows = np.flatnonzero(ans)
    if not rows.size:
        raise InvalidInputError("the lookback set needs at least one answer token")
    R = A[:, rows, :].astype(np.float64)  # (B, r, n): the answer's rows only
    on_ctx = R @ ctx.astype(np.float64)
    # new tokens of each answer query: kept answer keys j <= i (causal) or all kept answer keys
    new = np.broadcast_to(ans, (rows.size, n))
    if causal:
        new = new & (idx[None, :] <= rows[:, None])
    on_new = np.einsum("brn,rn->br", R, new.astype(np.float64))
    m_ctx = on_ctx / np.count_nonzero(ctx)
    m_new = on_new / new.sum(axis=1)
    total = m_ctx + m_new
    if np.any(total <= 0):
        raise InvalidInputError(
            "an answer token attends only to removed tokens, so its lookback ratio is 0 / 0"
        )
    return m_ctx / total


def lookback_features(
    A: Any, start: int, causal: bool, *, keep: np.ndarray | None = None
) -> np.ndarray:
    """The ``lookback`` set of one pair, shape (B, 1): the mean of :func:`lookback_ratios`
    over the answer's tokens, per head."""
    return lookback_ratios(A, start, causal, keep=keep).mean(axis=1, keepdims=True)
