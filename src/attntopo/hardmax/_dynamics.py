"""The hardmax attention dynamics of Alcalde, Fantuzzi & Zuazua (2025), on arrays.

Tokens ``z_1 … z_n`` in ``R^d`` (the rows of ``Z``) move, layer after layer, by

.. math::

    z_i^{k+1} = \\frac{z_i^k}{1 + \\alpha} + \\frac{\\alpha}{1 + \\alpha}
    \\frac{1}{|C_i^k|} \\sum_{j \\in C_i^k} z_j^k, \\qquad
    C_i^k = \\operatorname{argmax}_j \\langle A z_i^k, z_j^k \\rangle,

with ``A`` symmetric positive definite and ``α > 0``: each token steps towards the mean of the
tokens it attends to most (ties averaged).  Token ``i`` is a *leader* at step ``k`` when it
attends only to itself, ``C_i^k = {i}``.

Floating point
--------------
Two decisions need a tolerance; both are relative to the size of the numbers involved, so
scaling ``Z`` or ``A`` changes nothing:

*ties* — ``j ∈ C_i`` when ``s_ij >= max_l s_il − τ_i`` with ``s_ij = ⟨A z_i, z_j⟩`` and
    ``τ_i = rtol · ‖A‖₂ · ‖z_i‖ · R``, ``R = max_j ‖z_j^0‖``.  The computed ``s_ij`` is off by
    at most about ``2 d u ‖A‖₂ ‖z_i‖ ‖z_j‖`` (``u = 2^-53``; the product ``A z_i`` and the dot
    product), so ``rtol`` (default ``max(1e-12, 4 d u)``: 1e-12 up to ``d ≈ 1100``) lies
    above round-off and far below the gaps of any configuration that is not an exact tie.
*coincidence* — tokens ``i`` and ``j`` are at the *same point* when
    ``‖z_i − z_j‖ <= cluster_tol · R`` (default ``1e-8``).  A follower converging to its
    leader reaches it only in the limit, and in floating point it comes within round-off of
    it: from then on the two are one point.  Clusters at a step are the connected components
    of this relation; *leaders* are the tokens whose ``C_i`` holds only tokens at their own
    point, except a token that was not a leader at the previous step and is now at the point
    of one that was (a follower that has reached its leader; in exact arithmetic it would
    stay a hair's breadth behind, still attending to the leader).  For distinct tokens (every
    ``z_j`` more than ``cluster_tol · R`` from ``z_i``) this is the paper's ``C_i = {i}``; a
    group of identical tokens (duplicates in ``Z0``) that attends only to itself is a group
    of leaders, although in exact arithmetic none of them has ``C_i = {i}`` (they tie with
    each other).
*points counted once* — a follower at a leader's point is left out of every attention set
    (the sets that held any token of that point hold the point's leaders instead,
    :func:`count_points_once`): in exact arithmetic a token attends to the leader or to the
    follower, never both, and counting both would break exact ties (a token tied between two
    leaders would drift to the one with a merged follower).  Tokens identical in ``Z0`` keep
    their multiplicity, as in exact arithmetic.

The update is computed as ``z + α/(1+α) · (mean − z)``, so a token whose ``C_i`` is ``{i}``
stays *exactly* where it is.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._validation import check_nonneg_int, check_number
from ..errors import InvalidMatrixError

__all__ = [
    "DEFAULT_CLUSTER_TOL",
    "default_rtol",
    "check_tokens",
    "check_spd",
    "Tolerances",
    "tolerances",
    "attention_sets",
    "hardmax_step",
    "count_points_once",
    "check_alpha",
    "check_steps",
    "Run",
    "run_dynamics",
    "close_pairs",
    "cluster_labels",
    "point_labels",
]

#: Default ``cluster_tol``: tokens closer than this times ``R`` are one point.
DEFAULT_CLUSTER_TOL = 1e-8
_U = np.finfo(np.float64).eps / 2  # unit round-off of float64


def default_rtol(d: int) -> float:
    """The default tie tolerance for tokens in ``R^d``: ``max(1e-12, 4 d u)``, ``u = 2^-53``."""
    return max(1e-12, 4.0 * int(d) * _U)


# ------------------------------------------------------------------------ inputs
def _as_float_array(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise TypeError(a.dtype)
        return np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        shape = getattr(x, "shape", None)
        raise InvalidMatrixError(
            f"{name} must be an array of real numbers, got {type(x).__name__}"
            + (f" of shape {tuple(shape)}" if shape is not None else "")
        ) from None


def check_tokens(Z0: Any) -> np.ndarray:
    """``Z0`` as a float64 array of shape ``(n, d)``, ``n, d >= 1``, all finite.

    Raises
    ------
    InvalidMatrixError
        Not a 2-D array of finite real numbers with at least one token and one coordinate.
    """
    Z = _as_float_array(Z0, "Z0")
    if Z.ndim != 2 or Z.shape[0] < 1 or Z.shape[1] < 1:
        raise InvalidMatrixError(
            f"Z0 must have shape (n, d), one row per token (n >= 1, d >= 1), got shape {Z.shape}"
        )
    bad = ~np.isfinite(Z)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InvalidMatrixError(f"Z0 must be finite; Z0[{i}, {j}] = {Z[i, j]}")
    return np.ascontiguousarray(Z)


def check_spd(A: Any, d: int) -> np.ndarray:
    """``A`` as a symmetric positive definite float64 ``(d, d)`` array (``None``: the identity).

    Symmetry is checked to a relative ``1e-12`` (``max|A − Aᵀ| <= 1e-12 · max|A|``) and
    ``(A + Aᵀ)/2`` is returned, so the bilinear form is exactly symmetric.  Positive
    definiteness: the Cholesky factorization succeeds and the smallest eigenvalue is > 0.

    Raises
    ------
    InvalidMatrixError
        Wrong shape for tokens in ``R^d``, not finite, not symmetric, or not positive definite
        (the message gives the smallest eigenvalue and the shift that would fix it).
    """
    if A is None:
        return np.eye(d)
    M = _as_float_array(A, "A")
    if M.shape != (d, d):
        raise InvalidMatrixError(
            f"A must be a ({d}, {d}) matrix for tokens in "
            f"R^{d} (Z0 has {d} columns), got shape {M.shape}"
        )
    if not np.all(np.isfinite(M)):
        raise InvalidMatrixError("A must be finite; it holds NaN or inf")
    top = float(np.max(np.abs(M))) if M.size else 0.0
    asym = float(np.max(np.abs(M - M.T))) if M.size else 0.0
    if asym > 1e-12 * top:
        raise InvalidMatrixError(
            f"A must be symmetric: max |A - A.T| = {asym:.3g} (relative {asym / top:.3g}); "
            f"use its symmetric part (A + A.T) / 2"
        )
    S = 0.5 * (M + M.T)
    lam_min = float(np.linalg.eigvalsh(S)[0])
    ok = lam_min > 0
    if ok:
        try:
            np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            ok = False
    if not ok:
        raise InvalidMatrixError(
            f"A must be positive definite; its smallest eigenvalue is {lam_min:.6g} "
            f"(A + c·I with c > {max(-lam_min, 0.0):.6g} is)"
        )
    return S


def check_alpha(alpha: Any) -> float:
    """``α``: a positive finite number."""
    return float(
        check_number(
            alpha,
            "alpha",
            lo=0,
            lo_open=True,
            hint="the step size of the update z + α/(1+α)·(mean − z)",
        )
    )


# -------------------------------------------------------------------- tolerances
class Tolerances(NamedTuple):
    """The two tolerances of one run (module docstring), in absolute units."""

    #: Relative tie tolerance ``rtol``.
    rtol: float
    #: Relative coincidence tolerance ``cluster_tol``.
    cluster_tol: float
    #: ``R = max_j ‖z_j^0‖``.
    scale: float
    #: ``‖A‖₂``.
    norm_A: float

    @property
    def same_point(self) -> float:
        """Distance at or below which two tokens are one point: ``cluster_tol · R``."""
        return self.cluster_tol * self.scale


def tolerances(
    Z0: np.ndarray, A: np.ndarray, rtol: Any = None, cluster_tol: Any = None
) -> Tolerances:
    """The tolerances of a run on ``Z0`` with ``A`` (checked; ``None`` = the defaults)."""
    d = Z0.shape[1]
    rtol = (
        default_rtol(d)
        if rtol is None
        else float(check_number(rtol, "rtol", lo=0, hint="relative tie tolerance"))
    )
    cluster_tol = (
        DEFAULT_CLUSTER_TOL
        if cluster_tol is None
        else float(
            check_number(
                cluster_tol,
                "cluster_tol",
                lo=0,
                hint="relative distance at which tokens are one point",
            )
        )
    )
    scale = float(np.max(np.linalg.norm(Z0, axis=1)))
    norm_A = float(np.linalg.norm(A, 2))
    return Tolerances(rtol, cluster_tol, scale, norm_A)


# ---------------------------------------------------------------------- dynamics
def attention_sets(Z: np.ndarray, A: np.ndarray, tol: Tolerances) -> np.ndarray:
    """The hardmax attention sets ``C_i``: ``(n, n)`` bool, row ``i`` marks ``C_i``.

    ``j ∈ C_i`` when ``⟨A z_i, z_j⟩ >= max_l ⟨A z_i, z_l⟩ − rtol · ‖A‖₂ · ‖z_i‖ · R``.
    """
    S = (Z @ A) @ Z.T  # S[i, j] = <A z_i, z_j>
    gap = tol.rtol * tol.norm_A * np.linalg.norm(Z, axis=1) * tol.scale
    return S >= (S.max(axis=1) - gap)[:, None]


def count_points_once(C: np.ndarray, labels: np.ndarray, leaders: np.ndarray) -> np.ndarray:
    """Attention sets ``(n, n)`` bool with the followers merged into a leader's point left out.

    A *merged follower* is a token that is not a leader but lies at the point of one (same
    ``labels``; :func:`run_dynamics` keeps it a follower).  In exact arithmetic it is still a
    hair's breadth from its leader, and a token ``i`` attends to the leader or to the follower,
    whichever scores higher: one of the two, not both.  In floating point their scores fall
    within the tie tolerance once the follower is close enough, and counting both would give
    that point double weight in ``i``'s mean (a token exactly tied between two leaders would
    drift to the one with a merged follower).  So every row that holds any token of such a
    point holds the point's leaders instead, and no merged follower (the follower's own row
    included: it keeps moving towards its leader).  Points of leaders only (tokens identical in
    ``Z0``) keep their multiplicity, as in exact arithmetic.

    Parameters
    ----------
    C : ndarray of shape (n, n), bool
        Attention sets (:func:`attention_sets`); row ``i`` marks ``C_i``.
    labels : ndarray of shape (n,), int
        The point of each token (:func:`cluster_labels`).
    leaders : ndarray of shape (n,), bool
        The leaders at this step.

    Returns
    -------
    ndarray of shape (n, n), bool
        ``C`` itself when no follower has merged, else a new array.
    """
    merged = ~leaders & np.isin(labels, labels[leaders])
    if not merged.any():
        return C
    points = np.unique(labels[merged])  # the points with merged followers, sorted
    members = np.flatnonzero(np.isin(labels, points))
    pos = np.searchsorted(points, labels[members])  # each member's point, 0 … len(points)-1
    rows, cols = np.nonzero(C[:, members])
    hits = np.zeros((C.shape[0], points.size), dtype=bool)
    hits[rows, pos[cols]] = True  # hits[i, p]: C_i holds some token of point p
    out = C.copy()
    out[:, members] = False
    heads = leaders[members]
    out[:, members[heads]] = hits[:, pos[heads]]
    return out


def hardmax_step(Z: np.ndarray, C: np.ndarray, alpha: float) -> np.ndarray:
    """One step ``z + α/(1+α) · (mean_{C_i} z − z)`` for attention sets ``C`` ``(n, n)`` bool."""
    W = C.astype(np.float64)
    mean = (W @ Z) / W.sum(axis=1, keepdims=True)
    return Z + (alpha / (1.0 + alpha)) * (mean - Z)


def close_pairs(Z: np.ndarray, radius: float) -> np.ndarray:
    """Pairs ``(i, j)``, ``i < j``, of rows of ``Z`` at most ``radius`` apart: ``(p, 2)`` int.

    A k-d tree (:meth:`scipy.spatial.cKDTree.query_pairs`, distances from coordinate
    differences): with a radius far below the spread of the tokens it looks at few pairs, so
    the bookkeeping stays below the cost of the dynamics even for large ``n``.
    """
    from scipy.spatial import cKDTree

    if Z.shape[0] < 2:
        return np.zeros((0, 2), dtype=np.int64)
    return np.asarray(
        cKDTree(Z).query_pairs(radius, output_type="ndarray"), dtype=np.int64
    ).reshape(-1, 2)


def cluster_labels(n: int, pairs: np.ndarray) -> np.ndarray:
    """Connected components of ``n`` tokens joined by
    ``pairs`` ``(p, 2)``, numbered by first token."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if pairs.shape[0] == 0:  # every token on its own
        return np.arange(n, dtype=np.int64)
    g = coo_matrix((np.ones(pairs.shape[0]), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, lab = connected_components(g, directed=False)
    _, first, inverse = np.unique(lab, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


def point_labels(Z: np.ndarray, radius: float) -> np.ndarray:
    """``(n,)`` int: the point (cluster) of each token, tokens within ``radius`` joined."""
    return cluster_labels(Z.shape[0], close_pairs(Z, radius))


class Run(NamedTuple):
    """What :func:`run_dynamics` returns."""

    trajectories: np.ndarray  # (steps + 1, n, d)
    leaders: np.ndarray  # (steps + 1, n) bool
    labels: np.ndarray  # (steps + 1, n) int: cluster of each token at each step
    tol: Tolerances


def run_dynamics(Z0: np.ndarray, A: np.ndarray, alpha: float, steps: int, tol: Tolerances) -> Run:
    """Iterate the dynamics ``steps`` times on checked inputs (no loop over tokens).

    Returns the trajectories ``(steps + 1, n, d)``, the leaders ``(steps + 1, n)`` (bool;
    at the last step from the attention sets of the last positions) and the cluster label of
    every token at every step ``(steps + 1, n)``.
    """
    n, d = Z0.shape
    traj = np.empty((steps + 1, n, d))
    leaders = np.empty((steps + 1, n), dtype=bool)
    labels = np.empty((steps + 1, n), dtype=np.int64)
    Z = Z0
    for k in range(steps + 1):
        traj[k] = Z
        C = attention_sets(Z, A, tol)
        pairs = close_pairs(Z, tol.same_point)
        labels[k] = cluster_labels(n, pairs)
        # leaders: every j in C_i is at i's point (same cluster label: within cluster_tol·R,
        # or chained to it by such steps)
        rows, cols = np.nonzero(C)
        own = np.ones(n, dtype=bool)
        own[rows[labels[k][rows] != labels[k][cols]]] = False
        if k > 0 and pairs.shape[0]:  # a follower that reached a leader's point stays a follower
            prev = leaders[k - 1]
            own &= prev | ~np.isin(labels[k], labels[k][prev])
        leaders[k] = own
        if k < steps:
            Z = hardmax_step(Z, count_points_once(C, labels[k], own), alpha)
    return Run(traj, leaders, labels, tol)


def check_steps(steps: Any) -> int:
    """``steps``: an int >= 0 (layers to apply)."""
    return check_nonneg_int(steps, "steps", hint="number of layers to apply")
