"""Where points lie with respect to the convex polytope spanned by some vertices.

The theorem of Alcalde, Fantuzzi & Zuazua places the limit points of the hardmax dynamics on
the boundary of the polytope ``K = conv(leaders)``.  :func:`polytope_position` checks that
for given points, two independent ways:

*linear programming* (any dimension, :func:`scipy.optimize.linprog`, HiGHS): for a point
    ``x`` solve ``max t`` subject to ``x = Σ λ_l v_l``, ``Σ λ_l = 1``, ``λ_l >= 0``,
    ``λ_l >= t``, ``t <= 1``.  Infeasible: ``x ∉ K``.  The relative interior of ``K`` is the set of
    convex combinations with *every* ``λ_l > 0``, so ``t* > 0`` means ``x`` is in the relative
    interior and ``t* = 0`` that it is on the relative boundary.
*facets* (:class:`scipy.spatial.ConvexHull`, Qhull), when ``K`` is full-dimensional in its
    affine hull of dimension ``2 <= m <= 8`` (Qhull's cost grows steeply with ``m``):
    ``x`` is in ``K`` when every facet inequality ``a·y + b <= 0`` holds and on its relative
    boundary when one of them is an equality.  For ``m = 1`` the facets are the two ends
    of a segment.

Low-dimensional polytopes are handled as what they are: when the vertices span an affine
subspace of dimension ``m < d`` (fewer than ``d + 1`` leaders, or leaders on a hyperplane),
``K`` has no interior in ``R^d`` and *every* point of ``K`` is on its boundary in ``R^d``;
``on_boundary`` then says only that the point is in ``K``, and ``on_relative_boundary``
carries the finer statement (on the boundary of ``K`` inside its own affine hull).  The
points are compared in the coordinates of that affine hull (an orthonormal basis from the
SVD of the centred vertices); the distance to the hull is reported too.

Tolerances: a point within ``tol · R`` of the affine hull (``R`` the largest norm of the
vertices and points) is in it; the facet test uses ``tol · R``; the LP test calls ``t* <=
lp_tol`` zero (HiGHS' feasibility tolerance is 1e-7, so ``lp_tol = 1e-6``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PolytopePosition", "polytope_position", "affine_dimension", "MAX_HULL_DIM"]

#: Largest affine dimension for which the Qhull facet test is run as well.
MAX_HULL_DIM = 8


@dataclass(frozen=True)
class PolytopePosition:
    """Where each of ``k`` points lies relative to ``K = conv(vertices)``.

    Attributes
    ----------
    affine_dim : int
        Dimension ``m`` of the affine hull of the vertices (0 for one point).
    ambient_dim : int
        ``d``.
    inside : ndarray of shape (k,), bool
        The point is in ``K`` (LP feasible and in the affine hull).
    on_boundary : ndarray of shape (k,), bool
        In ``K`` and on its boundary in ``R^d`` (every point of ``K`` when ``m < d``).
    on_relative_boundary : ndarray of shape (k,), bool
        In ``K`` and on its boundary within its affine hull (the vertex itself when ``m = 0``).
    lp_margin : ndarray of shape (k,)
        ``t*`` of the LP (``nan`` where infeasible): ``> 0`` in the relative interior.
    hull_margin : ndarray of shape (k,) or None
        ``max_facets (a·y + b) / R`` from Qhull (``<= 0`` inside, ``0`` on the boundary);
        ``None`` when the facet test was not run (``m = 0`` or ``m > MAX_HULL_DIM``).
    offset : ndarray of shape (k,)
        Distance of each point from the affine hull of the vertices.
    """

    affine_dim: int
    ambient_dim: int
    inside: np.ndarray
    on_boundary: np.ndarray
    on_relative_boundary: np.ndarray
    lp_margin: np.ndarray
    hull_margin: np.ndarray | None
    offset: np.ndarray

    @property
    def degenerate(self) -> bool:
        """The polytope has no interior in ``R^d`` (``affine_dim < ambient_dim``)."""
        return self.affine_dim < self.ambient_dim

    def agree(self) -> bool:
        """The LP and the facet test (where run) give the same verdicts."""
        if self.hull_margin is None:
            return True
        return (
            True
            if not len(self.inside)
            else bool(
                np.all(self._hull_inside == self.inside)
                and np.all(self._hull_rel_boundary == self.on_relative_boundary)
            )
        )

    # set by polytope_position when the facet test ran
    _hull_inside: np.ndarray | None = None
    _hull_rel_boundary: np.ndarray | None = None


def affine_dimension(V: np.ndarray, *, tol: float = 1e-9) -> tuple[int, np.ndarray, np.ndarray]:
    """Affine dimension of the rows of ``V`` ``(m, d)``, their centroid and an orthonormal basis.

    Returns ``(r, c, B)`` with ``B`` of shape ``(r, d)``: the singular vectors of ``V − c``
    whose singular values exceed ``tol · max(1, R)`` (``R`` the largest row norm).
    """
    V = np.asarray(V, dtype=np.float64)
    c = V.mean(axis=0)
    if V.shape[0] < 2:
        return 0, c, np.zeros((0, V.shape[1]))
    _, s, Vt = np.linalg.svd(V - c, full_matrices=False)
    R = max(1.0, float(np.max(np.linalg.norm(V, axis=1))))
    r = int(np.sum(s > tol * R))
    return r, c, Vt[:r]


def _lp_margin(Y: np.ndarray, x: np.ndarray) -> float:
    """``max t`` s.t. ``Yᵀλ = x``, ``Σλ = 1``, ``λ >= 0``,
    ``λ >= t``, ``t <= 1``; ``nan`` if infeasible."""
    from scipy.optimize import linprog

    m, r = Y.shape
    # variables (λ_1..λ_m, t); minimise -t
    c = np.zeros(m + 1)
    c[-1] = -1.0
    A_eq = np.zeros((r + 1, m + 1))
    A_eq[:r, :m] = Y.T
    A_eq[r, :m] = 1.0
    b_eq = np.concatenate([x, [1.0]])
    A_ub = np.hstack([-np.eye(m), np.ones((m, 1))])  # t - λ_l <= 0
    b_ub = np.zeros(m)
    bounds = [(0.0, None)] * m + [(None, 1.0)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status == 2:  # infeasible
        return float("nan")
    if res.status != 0:
        raise RuntimeError(f"linprog failed: {res.message}")
    return float(res.x[-1])


def polytope_position(
    points: np.ndarray, vertices: np.ndarray, *, tol: float = 1e-9, lp_tol: float = 1e-6
) -> PolytopePosition:
    """Where ``points`` ``(k, d)`` lie relative to ``conv(vertices)`` ``(m, d)`` (module docstring).

    Parameters
    ----------
    points : ndarray of shape (k, d)
    vertices : ndarray of shape (m, d), m >= 1
        Points spanning the polytope (repeated or interior ones are allowed).
    tol : float
        Relative tolerance of the affine-hull and facet tests (times ``R``).
    lp_tol : float
        LP margins ``t* <= lp_tol`` count as zero (the relative boundary).

    Returns
    -------
    PolytopePosition
    """
    P = np.atleast_2d(np.asarray(points, dtype=np.float64))
    V = np.atleast_2d(np.asarray(vertices, dtype=np.float64))
    if V.shape[0] < 1 or V.shape[1] != P.shape[1]:
        raise ValueError(f"vertices must be (m >= 1, {P.shape[1]}), got {V.shape}")
    k, d = P.shape
    R = max(1e-300, float(np.max(np.linalg.norm(np.vstack([V, P]), axis=1))))
    r, c, B = affine_dimension(V, tol=tol)
    Yv = (V - c) @ B.T  # (m, r) coordinates in the affine hull
    Yp = (P - c) @ B.T
    offset = np.linalg.norm((P - c) - Yp @ B, axis=1)
    in_aff = offset <= tol * R
    lp = np.full(k, np.nan)
    for i in range(k):
        if in_aff[i]:
            lp[i] = _lp_margin(Yv, Yp[i]) if r > 0 else 1.0
    inside = in_aff & ~np.isnan(lp)
    if r == 0:
        rel_boundary = inside.copy()  # a single point: the vertex itself
    else:
        rel_boundary = inside & (lp <= lp_tol)
    on_boundary = inside.copy() if r < d else rel_boundary.copy()
    hull_margin = None
    extra = {}
    if 1 <= r <= MAX_HULL_DIM:
        if r == 1:
            lo, hi = float(Yv.min()), float(Yv.max())
            h = np.maximum(lo - Yp[:, 0], Yp[:, 0] - hi) / R
        else:
            from scipy.spatial import ConvexHull

            hull = ConvexHull(Yv)
            eq = hull.equations  # (f, r + 1): a·y + b <= 0 inside, |a| = 1
            h = (Yp @ eq[:, :-1].T + eq[:, -1]).max(axis=1) / R
        hull_margin = h
        extra = {
            "_hull_inside": in_aff & (h <= tol),
            "_hull_rel_boundary": in_aff & (np.abs(h) <= tol),
        }
    return PolytopePosition(
        r, d, inside, on_boundary, rel_boundary, lp, hull_margin, offset, **extra
    )
