"""Distances between persistence diagrams, one homology dimension at a time.

Conventions (the same as gudhi's defaults, so numbers are comparable):

* ground metric between points: L∞, ``max(|b1 - b2|, |d1 - d2|)``;
* a point may instead be matched to the diagonal at cost ``(d - b) / 2``;
* **infinite bars** (death ``inf``) are matched only with infinite bars of the same
  dimension, in order of birth, at cost ``|b1 - b2|``; if the two diagrams have different
  numbers of infinite bars in a dimension, the distance in that dimension is ``inf``.
  Pass ``infinite="ignore"`` to drop infinite bars instead (then only finite bars count);
* dimensions are **never pooled**: given two :class:`Diagram` objects and no ``dim``, the
  functions return one distance per dimension.

Both distances are exact.  Wasserstein uses an optimal assignment on the diagonal-augmented
cost matrix (:func:`scipy.optimize.linear_sum_assignment`); bottleneck uses gudhi when it is
installed (exact, fast) and otherwise a binary search over candidate values with
maximum bipartite matchings — the same routine that returns an optimal matching.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_choice, check_dim, check_wasserstein_p
from ..constants import DIAGRAM_METRICS, INFINITE_BARS
from ..errors import InvalidInputError
from .diagram import Diagram

__all__ = [
    "bottleneck",
    "wasserstein",
    "diagram_distance",
    "matching",
    "DIAGRAM_METRICS",
]


def _points(x: Any, dim: int | None) -> np.ndarray:
    if isinstance(x, Diagram):
        if dim is None:
            raise InvalidInputError("give dim= when passing one dimension of a Diagram")
        dim = check_dim(dim, x.maxdim, hint="the dimensions this diagram holds")
        return np.asarray(x[dim], dtype=np.float64).reshape(-1, 2)
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(
            "a diagram is a Diagram or a (k, 2) array of "
            f"(birth, death) numbers, got {type(x).__name__}"
        ) from None
    if a.size == 0:
        return np.zeros((0, 2))
    if a.ndim != 2 or a.shape[1] != 2:
        raise InvalidInputError(
            f"a diagram of one dimension is a (k, 2) array of (birth, death), got shape {a.shape}"
        )
    if np.isnan(a).any():
        raise InvalidInputError(
            "diagram contains NaN: births and deaths must be numbers (inf allowed for deaths)"
        )
    if np.isinf(a[:, 0]).any():
        raise InvalidInputError("diagram has an infinite birth: only deaths may be inf")
    if (a[:, 1] < a[:, 0]).any():
        raise InvalidInputError("diagram has a point with death < birth")
    return a


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inf = np.isinf(a[:, 1])
    return a[~inf], np.sort(a[inf, 0])


def _infinite_part(ia: np.ndarray, ib: np.ndarray, infinite: str) -> np.ndarray | None:
    """Costs of matching infinite bars (sorted births), or None if the counts differ."""
    if infinite == "ignore":
        return np.zeros(0)
    if len(ia) != len(ib):
        return None
    return np.abs(ia - ib)


def _check_infinite(infinite: Any) -> None:
    check_choice(infinite, "infinite", INFINITE_BARS, what="infinite-bar handling (infinite=)")


def _augmented_cost(fa: np.ndarray, fb: np.ndarray, p: float) -> np.ndarray:
    """(n+m) × (n+m) cost matrix: rows = A ∪ diag(B), columns = B ∪ diag(A)."""
    n, m = len(fa), len(fb)
    big = np.inf
    C = np.zeros((n + m, n + m))
    if n and m:
        C[:n, :m] = np.maximum(
            np.abs(fa[:, None, 0] - fb[None, :, 0]), np.abs(fa[:, None, 1] - fb[None, :, 1])
        )
    da = (fa[:, 1] - fa[:, 0]) / 2.0
    db = (fb[:, 1] - fb[:, 0]) / 2.0
    # A_i -> its own diagonal projection only
    blockA = np.full((n, n), big)
    np.fill_diagonal(blockA, da)
    C[:n, m:] = blockA
    blockB = np.full((m, m), big)
    np.fill_diagonal(blockB, db)
    C[n:, :m] = blockB
    # diagonal to diagonal: free
    if math.isinf(p):
        return C
    with np.errstate(over="ignore"):
        return np.where(np.isinf(C), np.inf, C**p)


def _as_matching(rows: np.ndarray, cols: np.ndarray, n: int, m: int) -> list[tuple[int, int]]:
    """Translate assignment on the augmented matrix into (i, j) pairs; -1 means the diagonal."""
    out = []
    for r, c in zip(rows.tolist(), cols.tolist()):
        if r < n and c < m:
            out.append((r, c))
        elif r < n:
            out.append((r, -1))
        elif c < m:
            out.append((-1, c))
    return out


def _finite_indices(a: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.isfinite(a[:, 1]))


def _infinite_indices_sorted(a: np.ndarray) -> np.ndarray:
    idx = np.flatnonzero(np.isinf(a[:, 1]))
    return idx[np.argsort(a[idx, 0], kind="stable")]


def _wasserstein_arrays(a: np.ndarray, b: np.ndarray, p: float, infinite: str, want_matching: bool):
    from scipy.optimize import linear_sum_assignment

    fa_idx, fb_idx = _finite_indices(a), _finite_indices(b)
    fa, fb = a[fa_idx], b[fb_idx]
    ia_idx, ib_idx = _infinite_indices_sorted(a), _infinite_indices_sorted(b)
    inf_cost = _infinite_part(a[ia_idx, 0], b[ib_idx, 0], infinite)
    pairs: list[tuple[int, int]] = []
    if inf_cost is None:
        return math.inf, None
    if len(fa) + len(fb):
        C = _augmented_cost(fa, fb, p)
        finite_C = np.where(np.isinf(C), 0.0, C)
        mx = finite_C.max() if finite_C.size else 0.0
        C = np.where(np.isinf(C), (mx + 1.0) * (len(C) + 1), C)
        rows, cols = linear_sum_assignment(C)
        total = float(C[rows, cols].sum())
        if want_matching:
            for i, j in _as_matching(rows, cols, len(fa), len(fb)):
                pairs.append((int(fa_idx[i]) if i >= 0 else -1, int(fb_idx[j]) if j >= 0 else -1))
    else:
        total = 0.0
    total += float(np.sum(inf_cost**p))
    if want_matching and infinite == "match":
        pairs.extend((int(i), int(j)) for i, j in zip(ia_idx, ib_idx))
    return total ** (1.0 / p), pairs


def _bottleneck_arrays(
    a: np.ndarray, b: np.ndarray, infinite: str, want_matching: bool, exact_own: bool
):
    fa_idx, fb_idx = _finite_indices(a), _finite_indices(b)
    fa, fb = a[fa_idx], b[fb_idx]
    ia_idx, ib_idx = _infinite_indices_sorted(a), _infinite_indices_sorted(b)
    inf_cost = _infinite_part(a[ia_idx, 0], b[ib_idx, 0], infinite)
    if inf_cost is None:
        return math.inf, None
    inf_val = float(inf_cost.max()) if inf_cost.size else 0.0
    if not want_matching and not exact_own:
        try:
            import gudhi
        except ImportError:
            gudhi = None
        if gudhi is not None:
            # gudhi's default tolerance is the smallest positive double: exact up to that,
            # so identical diagrams come back as ~2e-308; snap that to 0
            val = float(gudhi.bottleneck_distance(fa, fb)) if len(fa) + len(fb) else 0.0
            val = 0.0 if val < 1e-300 else val
            return max(val, inf_val), None
    val, pairs = _bottleneck_matching(fa, fb)
    out_pairs = None
    if want_matching:
        out_pairs = [
            (int(fa_idx[i]) if i >= 0 else -1, int(fb_idx[j]) if j >= 0 else -1) for i, j in pairs
        ]
        if infinite == "match":
            out_pairs.extend((int(i), int(j)) for i, j in zip(ia_idx, ib_idx))
    return max(val, inf_val), out_pairs


def _bottleneck_matching(fa: np.ndarray, fb: np.ndarray) -> tuple[float, list[tuple[int, int]]]:
    """Exact bottleneck distance of finite diagrams and an optimal matching.

    Binary search over the sorted candidate values (all entries of the augmented cost matrix)
    for the smallest ``c`` admitting a perfect matching that uses only edges of cost ≤ c.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    n, m = len(fa), len(fb)
    if n + m == 0:
        return 0.0, []
    C = _augmented_cost(fa, fb, math.inf)
    N = n + m
    cands = np.unique(C[np.isfinite(C)])

    def feasible(c: float):
        allowed = np.isfinite(C) & (C <= c)
        allowed[n:, m:] = True
        g = csr_matrix(allowed.astype(np.int8))
        match = maximum_bipartite_matching(g, perm_type="column")
        return (match >= 0).all(), match

    lo, hi = 0, len(cands) - 1
    best = None
    while lo < hi:
        mid = (lo + hi) // 2
        ok, match = feasible(cands[mid])
        if ok:
            hi = mid
            best = match
        else:
            lo = mid + 1
    value = float(cands[lo])
    if best is None or not np.all(C[np.arange(N), best] <= value):
        ok, best = feasible(value)
        assert ok
    pairs = _as_matching(np.arange(N), np.asarray(best), n, m)
    return value, pairs


def _per_dim(a, b, dim, fn):
    if isinstance(a, Diagram) and isinstance(b, Diagram) and dim is None:
        if a.maxdim != b.maxdim:
            raise InvalidInputError(
                f"diagrams have different maxdim ({a.maxdim} vs "
                f"{b.maxdim}): pass dim= to compare one dimension"
            )
        return np.array([fn(_points(a, d), _points(b, d)) for d in range(a.maxdim + 1)])
    return fn(_points(a, dim), _points(b, dim))


def wasserstein(a, b, *, p: float = 1.0, dim: int | None = None, infinite: str = "match"):
    """p-Wasserstein distance between two diagrams (L∞ ground metric), exact.

    Parameters
    ----------
    a, b : Diagram or array of shape (k, 2)
        Two diagrams.  With two :class:`Diagram` objects and ``dim=None`` the result is an
        array of shape (maxdim + 1,), one distance per dimension.
    p : float ≥ 1
        Order (1 and 2 are the usual choices).
    dim : int, optional
        Homology dimension to compare.
    infinite : {"match", "ignore"}
        How infinite bars are treated (see the module docstring).

    Returns
    -------
    float or ndarray of shape (maxdim + 1,)
        Distance in the units of the filtration (e.g. Jensen–Shannon distance).
    """
    _check_infinite(infinite)
    p = check_wasserstein_p(p)
    return _per_dim(a, b, dim, lambda x, y: _wasserstein_arrays(x, y, p, infinite, False)[0])


def bottleneck(a, b, *, dim: int | None = None, infinite: str = "match"):
    """Bottleneck distance between two diagrams (L∞ ground metric), exact.

    Same arguments and return shape as :func:`wasserstein`.
    """
    _check_infinite(infinite)
    return _per_dim(a, b, dim, lambda x, y: _bottleneck_arrays(x, y, infinite, False, False)[0])


def diagram_distance(
    a,
    b,
    *,
    metric: str = "bottleneck",
    p: float = 1.0,
    dim: int | None = None,
    infinite: str = "match",
):
    """``bottleneck`` or ``wasserstein`` (order ``p``) by name; see those functions."""
    check_choice(metric, "metric", DIAGRAM_METRICS, what="diagram metric")
    if metric == "bottleneck":
        return bottleneck(a, b, dim=dim, infinite=infinite)
    return wasserstein(a, b, p=p, dim=dim, infinite=infinite)


def matching(
    a,
    b,
    *,
    metric: str = "wasserstein",
    p: float = 1.0,
    dim: int | None = None,
    infinite: str = "match",
) -> tuple[float, list[tuple[int, int]]]:
    """An optimal matching between the points of two diagrams of one dimension.

    Returns
    -------
    distance : float
    pairs : list of (i, j)
        Row ``i`` of ``a`` matched to row ``j`` of ``b``; ``-1`` stands for the diagonal
        (a point born and dying at once).  With ``infinite="match"`` infinite bars are paired
        in order of birth.  Empty if the distance is ``inf``.
    """
    _check_infinite(infinite)
    if isinstance(a, Diagram) and dim is None:
        raise InvalidInputError("give dim= to match one dimension of two diagrams")
    x, y = _points(a, dim), _points(b, dim)
    check_choice(metric, "metric", DIAGRAM_METRICS, what="diagram metric")
    if metric == "wasserstein":
        val, pairs = _wasserstein_arrays(x, y, check_wasserstein_p(p), infinite, True)
    else:
        val, pairs = _bottleneck_arrays(x, y, infinite, True, True)
    return val, (pairs or [])
