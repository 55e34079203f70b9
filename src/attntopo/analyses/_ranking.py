"""Which homology dimension a default ranking of heads uses, and ranks that keep ties.

Results that rank heads without being told a dimension (:meth:`Comparison.most_similar_heads`,
:meth:`Analysis.most_persistent_heads`, the command line's tables, the explorer, the figures'
outlines) follow one rule, :data:`RANKING_RULE`:

    the highest homology dimension ``d <= maxdim`` in which no value is shared by more than
    half of the heads (NaN left out); H0 when there is none.

A dimension in which most heads have the same value cannot order them: the top (or the
bottom) of the ranking would be one long tie.  The common case is H1 on short texts: most
heads have no loop in either text, so their H1 distance (and H1 persistence) is exactly 0 —
two six-token MiniLM texts give 59 to 68 zeros among 72 heads — and a ranking by H1 would
be a ranking of zeros.  Real texts of a few dozen words have H1 bars in almost every head,
and the rule picks H1 there.

Ranks follow :func:`scipy.stats.rankdata` with ``method="min"``: rank 1 is the best, equal
values share the smallest rank of their group (1, 1, 1, 4, …), and NaN (e.g. no shared
token) ranks last.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from ._result import Columns

__all__ = ["RANKING_RULE", "informative_dim", "rank_order", "ranked_heads"]

#: The rule, in words (written into ``to_dict()`` and the documentation).
RANKING_RULE = (
    "the highest homology dimension in which no value is shared by more than half of the "
    "heads (NaN left out); H0 when there is none"
)


def informative_dim(values: np.ndarray) -> int:
    """The highest dimension in which no value is shared by more than half of the heads.

    Parameters
    ----------
    values : array_like of shape (..., maxdim + 1)
        One value per head (any leading shape, e.g. ``(L, H)``) and homology dimension.

    Returns
    -------
    int
        The highest ``d >= 1`` such that the most frequent of the non-NaN values of
        ``values[..., d]`` occurs at most ``m / 2`` times (``m`` the number of non-NaN
        values, ``m >= 2``); 0 when there is none.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v.reshape(-1, v.shape[-1])
    for d in range(v.shape[1] - 1, 0, -1):
        col = v[:, d]
        col = col[~np.isnan(col)]
        if col.size >= 2 and 2 * np.unique(col, return_counts=True)[1].max() <= col.size:
            return d
    return 0


def rank_order(
    key: np.ndarray, tiebreak: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Order and ranks of values where smaller is better, ties kept as ties.

    Parameters
    ----------
    key : array_like of shape (N,)
        Smaller is better; NaN ranks last.
    tiebreak : array_like of shape (N,), optional
        Orders heads *within* a tie (smaller first; NaN last), then the position does.  It
        never changes a rank.

    Returns
    -------
    order : int ndarray of shape (N,)
        Positions, best first.
    ranks : int ndarray of shape (N,)
        ``scipy.stats.rankdata(key, method="min")`` with NaN as the largest value: rank 1 is
        the best, and tied values share the smallest rank of their group.
    """
    k = np.asarray(key, dtype=np.float64).ravel()
    nan = np.isnan(k)
    t = np.zeros_like(k) if tiebreak is None else np.asarray(tiebreak, dtype=np.float64).ravel()
    t = np.where(np.isnan(t), np.inf, t)
    order = np.lexsort((np.arange(k.size), t, np.where(nan, np.inf, k), nan))
    ranks = np.full(k.size, int((~nan).sum()) + 1, dtype=np.int64)  # NaN: after every number
    if (~nan).any():
        ranks[~nan] = rankdata(k[~nan], method="min").astype(np.int64)
    return order, ranks


def ranked_heads(
    layers, heads, values: np.ndarray, key: np.ndarray, tiebreak: np.ndarray | None = None
) -> Columns:
    """A ranking table of the heads of a (layers × heads) grid, best first.

    Parameters
    ----------
    layers, heads : sequence of int
        Model indices of the grid's rows and columns.
    values : array_like of shape (n_layers · n_heads,)
        The numbers shown, layer-major.
    key, tiebreak : array_like of shape (n_layers · n_heads,)
        As in :func:`rank_order` (smaller is better).

    Returns
    -------
    Columns
        ``layer``, ``head``, ``value``, ``rank`` (ties share the smallest rank of their group)
        and ``n_tied`` (heads sharing that rank; 1: no tie).
    """
    order, ranks = rank_order(key, tiebreak)
    n_tied = np.bincount(ranks)[ranks] if ranks.size else ranks
    H = len(heads)
    return Columns(
        {
            "layer": np.array([layers[t // H] for t in order], dtype=np.int64),
            "head": np.array([heads[t % H] for t in order], dtype=np.int64),
            "value": np.asarray(values, dtype=np.float64).ravel()[order],
            "rank": ranks[order],
            "n_tied": n_tied[order],
        }
    )
