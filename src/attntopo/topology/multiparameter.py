"""Two-parameter persistence of a growing metric space: distance × time.

Points arrive one after another: point ``i`` appears at time ``times[i]`` and the
distances between points that are already there never change (a causal transformer
never revises the past).  The Vietoris–Rips complexes

    K(ε, t) = all simplices whose points arrived by time t and are pairwise within ε

form a **two-parameter filtration**: vertex ``i`` enters at ``(0, times[i])`` and edge
``(i, j)`` at ``(D[i, j], max(times[i], times[j]))``; higher simplices enter when all
their edges are there.  Its Betti numbers over the (distance × time) plane are the
**Hilbert function** ``HF_d(ε, t) = dim H_d(K(ε, t))``.  The column ``HF_d(·, t)`` is the
Betti curve of the ordinary (one-parameter) Rips filtration of the points present at
time ``t`` — the "time slice" — so the slices and the two-parameter view agree exactly.

Two backends compute the Hilbert function, with identical results:

``"multipers"``
    Builds the bifiltration as a ``multipers.SimplexTreeMulti`` (vertices and edges with
    ``insert_batch``, a two-parameter edge collapse, then the flag expansion), computes
    the signed measure of the Hilbert function (its Möbius inversion: a few signed Dirac
    masses) on the exact filtration values, and sums it over the requested grid.
    Needs the optional extra ``attntopo[multiparameter]`` (``multipers==2.3.2``).
``"slices"``
    Computes (or takes) the one-parameter diagram of each time slice and counts the bars
    alive at each distance: ``HF_d(ε, t) = #{bars (b, d) of slice t : b ≤ ε < d}``.
    No extra dependency.

:func:`signed_measure` exposes multipers' signed barcodes: the Hilbert decomposition
(exact) and the **rank invariant**'s signed barcode (on a distance grid; the rank of
``H(K(x)) → H(K(y))`` for ``x ≤ y`` in the plane).

Conventions: filtrations are closed (a simplex with value ``≤ ε`` is in ``K(ε, ·)``);
bars are half-open ``[birth, death)``.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any, Literal, Sequence, get_args

import numpy as np

from .._validation import check_bool, check_choice, check_dim, check_int, is_int
from ..constants import MULTI_BACKENDS
from ..errors import InvalidInputError, MissingDependencyError
from .diagram import Diagram
from .persistence import _check_maxdim, persistence_batch, validate_distance_matrix

__all__ = [
    "HilbertFunction",
    "MAX_EXACT_CELLS",
    "SignedMeasure",
    "arrival_times",
    "bifiltration",
    "default_scale_grid",
    "hilbert_function",
    "hilbert_from_diagrams",
    "signed_measure",
    "multipers_available",
]

MULTIPERS_HINT = (
    "two-parameter persistence needs multipers: pip install 'attntopo[multiparameter]' "
    "(multipers==2.3.2); the slice backend (backend='slices') needs nothing more"
)

#: Signed-measure invariants of :func:`signed_measure`.
Invariant = Literal["hilbert", "rank"]
_INVARIANTS: tuple[str, ...] = get_args(Invariant)


# --------------------------------------------------------------------- multipers
def _multipers():
    """Import multipers quietly (its KeOps dependency prints a CUDA warning on stdout)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            import multipers  # noqa: F401
            import multipers.simplex_tree_multi  # noqa: F401
    except ImportError:
        raise MissingDependencyError(MULTIPERS_HINT) from None
    return multipers


def multipers_available() -> bool:
    """True if multipers can be imported (the two-parameter backend is usable)."""
    try:
        _multipers()
    except MissingDependencyError:
        return False
    return True


# ------------------------------------------------------------------------ inputs
def arrival_times(n: int) -> np.ndarray:
    """Default arrival times: point ``i`` (0-based) arrives at time ``i + 1``.

    With these times ``K(ε, t)`` holds exactly the first ``t`` points: time is the
    prefix length.

    Returns
    -------
    ndarray of shape (n,), float64
    """
    return np.arange(1, int(n) + 1, dtype=np.float64)


def _check_times(times: Any, n: int) -> np.ndarray:
    if times is None:
        return arrival_times(n)
    try:
        t = np.asarray(times, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(
            "times must be an array of n numbers (one arrival time per point)"
        ) from None
    if t.shape != (n,):
        raise InvalidInputError(f"times must have shape ({n},) (one per point), got {t.shape}")
    if not np.all(np.isfinite(t)):
        raise InvalidInputError("arrival times must be finite numbers")
    return t


def _check_backend(backend: Any) -> str:
    check_choice(backend, "backend", MULTI_BACKENDS)
    if backend == "auto":
        return "multipers" if multipers_available() else "slices"
    return backend


def _grid(values: Any, name: str) -> np.ndarray:
    try:
        g = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be numbers") from None
    if g.size == 0 or not np.all(np.isfinite(g)):
        raise InvalidInputError(f"{name} must hold at least one finite number")
    return np.unique(g)


#: Most grid cells (distances × times × dimensions) of a default "exact" Hilbert grid; above
#: it the default grid becomes regular (a long bidirectional timeline has ~n³/6 distinct
#: distances, which would need gigabytes).
MAX_EXACT_CELLS = 4_000_000


def default_scale_grid(values: np.ndarray, n_times: int, n_dims: int) -> np.ndarray:
    """Every distinct value in ``values`` (and 0) — the exact critical values — unless that
    grid would exceed :data:`MAX_EXACT_CELLS` cells; then a regular grid on ``[0, max]``
    as fine as the budget allows (at least 256 values)."""
    exact = np.unique(np.concatenate([[0.0], np.asarray(values, dtype=np.float64).ravel()]))
    per_scale = max(1, int(n_times) * int(n_dims))
    if exact.size * per_scale <= MAX_EXACT_CELLS:
        return exact
    k = max(256, MAX_EXACT_CELLS // per_scale)
    top = float(exact[-1])
    return np.linspace(0.0, top if top > 0 else 1.0, k)


def _scale_grid(scales: Any, D: np.ndarray, n_times: int = 1, n_dims: int = 1) -> np.ndarray:
    """Distance grid: None → the exact critical values (see :func:`default_scale_grid`)."""
    if scales is None:
        return default_scale_grid(D[np.triu_indices(D.shape[0], 1)], n_times, n_dims)
    if is_int(scales):
        scales = check_int(scales, "scales as a resolution", lo=2)
        top = float(D.max()) if D.size else 1.0
        return np.linspace(0.0, top if top > 0 else 1.0, int(scales))
    g = _grid(scales, "scales")
    if g[0] < 0:
        raise InvalidInputError("scale grid values must be >= 0 (they are distances)")
    return g


# ------------------------------------------------------------------- containers
@dataclass(frozen=True, eq=False)
class HilbertFunction:
    """Betti numbers of a two-parameter (distance × time) filtration on a grid.

    Attributes
    ----------
    scales : ndarray of shape (k,)
        Distance values, increasing.
    times : ndarray of shape (m,)
        Time values, increasing.
    values : ndarray of shape (maxdim + 1, k, m), int64
        ``values[d, i, j] = dim H_d(K(scales[i], times[j]))``.
    backend : str
        ``"multipers"`` or ``"slices"``.

    Notes
    -----
    The Hilbert function is a step function, constant on each cell
    ``[scales[i], scales[i+1]) × [times[j], times[j+1])`` when ``scales`` holds every critical
    value (the default grid of :func:`hilbert_function`); :meth:`at` evaluates it there.
    """

    scales: np.ndarray
    times: np.ndarray
    values: np.ndarray
    backend: str = "slices"

    @property
    def maxdim(self) -> int:
        return self.values.shape[0] - 1

    def betti(self, dim: int) -> np.ndarray:
        """ndarray of shape (k, m): the Betti-``dim`` numbers over ``scales`` × ``times``."""
        return self.values[check_dim(dim, self.maxdim)]

    def at(self, scale: Any, t: Any, *, dim: int = 1) -> np.ndarray | int:
        """Value at ``(scale, t)`` (scalars or broadcastable arrays): the grid cell below-left.

        Points below the smallest grid value in either direction give 0 (nothing has
        arrived yet).
        """
        e = np.asarray(scale, dtype=np.float64)
        tt = np.asarray(t, dtype=np.float64)
        i = np.searchsorted(self.scales, e, side="right") - 1
        j = np.searchsorted(self.times, tt, side="right") - 1
        B = self.betti(dim)
        out = np.where((i >= 0) & (j >= 0), B[np.clip(i, 0, None), np.clip(j, 0, None)], 0)
        return int(out) if out.ndim == 0 else out.astype(np.int64)

    def __repr__(self) -> str:
        return (
            f"HilbertFunction(maxdim={self.maxdim}, scales={self.scales.size} values in "
            f"[{self.scales[0]:.3g}, {self.scales[-1]:.3g}], "
            f"times={self.times.size}, backend={self.backend!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HilbertFunction):
            return NotImplemented
        return (
            np.array_equal(self.scales, other.scales)
            and np.array_equal(self.times, other.times)
            and np.array_equal(self.values, other.values)
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class SignedMeasure:
    """A signed barcode: Dirac masses with integer weights that decompose an invariant.

    Attributes
    ----------
    invariant : {"hilbert", "rank"}
    degree : int
        Homology dimension.
    points : ndarray
        ``"hilbert"``: shape (k, 2), rows ``(scale, t)``.  ``"rank"``: shape (k, 4), rows
        ``(scale_birth, t_birth, scale_death, t_death)`` — signed rectangles (deaths may be inf).
    weights : ndarray of shape (k,), int64
    scale_grid : ndarray or None
        The distance grid the rank invariant was computed on (None: exact values).

    Notes
    -----
    Hilbert: ``HF(x) = Σ_i w_i [p_i ≤ x]``.  Rank: ``rk(x ≤ y) = Σ_i w_i [b_i ≤ x, y < d_i]``
    (componentwise; ``y < d`` in both coordinates), for grid points ``x ≤ y``.
    """

    invariant: str
    degree: int
    points: np.ndarray
    weights: np.ndarray
    scale_grid: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.weights.size)

    def hilbert(self, scale: Any, t: Any) -> np.ndarray | int:
        """Evaluate a Hilbert signed measure at ``(scale, t)`` (broadcasting)."""
        if self.invariant != "hilbert":
            raise InvalidInputError(
                "hilbert() needs a Hilbert signed measure; use rank() for the rank invariant"
            )
        e = np.asarray(scale, dtype=np.float64)[..., None]
        tt = np.asarray(t, dtype=np.float64)[..., None]
        p = self.points
        out = (((p[:, 0] <= e) & (p[:, 1] <= tt)) * self.weights).sum(axis=-1)
        return int(out) if np.ndim(out) == 0 else out.astype(np.int64)

    def rank(self, x: Sequence[float], y: Sequence[float]) -> int:
        """Rank of ``H_d(K(x)) → H_d(K(y))`` for ``x ≤ y`` (points ``(scale, t)``)."""
        if self.invariant != "rank":
            raise InvalidInputError("rank() needs a rank signed measure (invariant='rank')")
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.shape != (2,) or y.shape != (2,) or np.any(x > y):
            raise InvalidInputError(
                "rank(x, y) needs two points (scale, t) with x <= y componentwise"
            )
        p = self.points
        m = (p[:, 0] <= x[0]) & (p[:, 1] <= x[1]) & (y[0] < p[:, 2]) & (y[1] < p[:, 3])
        return int(self.weights[m].sum())

    def __repr__(self) -> str:
        return f"SignedMeasure({self.invariant!r}, degree={self.degree}, {len(self)} points)"


# ----------------------------------------------------------------- bifiltration
def bifiltration(
    D: Any,
    *,
    times: Any = None,
    maxdim: int = 1,
    scale_grid: Any = None,
    collapse: bool = True,
):
    """The (distance, time) Rips bifiltration as a ``multipers.SimplexTreeMulti``.

    Vertex ``i`` at ``(0, times[i])``, edge ``(i, j)`` at
    ``(D[i, j], max(times[i], times[j]))``, then the flag (clique) expansion up to
    dimension ``maxdim + 1`` (what ``H_maxdim`` needs).

    Parameters
    ----------
    D : array-like of shape (n, n)
        Distance matrix (validated as in :func:`~attntopo.topology.persistence`).
    times : array-like of shape (n,), optional
        Arrival times; default ``1, 2, …, n`` (:func:`arrival_times`).
    maxdim : int
        Highest homology dimension of interest.
    scale_grid : array-like, optional
        Restrict the distance parameter to this grid: each edge value is pushed *up* to
        the smallest grid value ``≥`` it (edges above the largest grid value are left
        out), so the complex at every grid point is exactly the original one.
    collapse : bool
        Apply multipers' two-parameter edge collapse before the expansion (same homology
        at every point of the plane; much faster downstream).

    Returns
    -------
    multipers.SimplexTreeMulti with 2 parameters, float64 filtration values.

    Raises
    ------
    MissingDependencyError
        multipers is not installed.
    """
    A = validate_distance_matrix(D)
    maxdim = _check_maxdim(maxdim)
    collapse = check_bool(collapse, "collapse")
    n = A.shape[0]
    t = _check_times(times, n)
    mp = _multipers()
    st = mp.SimplexTreeMulti(num_parameters=2)
    st.insert_batch(
        np.arange(n, dtype=np.int32)[None, :],
        np.column_stack([np.zeros(n), t]).astype(np.float64),
    )
    iu, ju = np.triu_indices(n, 1)
    dv = A[iu, ju]
    if scale_grid is not None:
        g = _grid(scale_grid, "scale_grid")
        keep = dv <= g[-1]
        iu, ju, dv = iu[keep], ju[keep], g[np.searchsorted(g, dv[keep], side="left")]
    if iu.size:
        st.insert_batch(
            np.vstack([iu, ju]).astype(np.int32),
            np.column_stack([dv, np.maximum(t[iu], t[ju])]).astype(np.float64),
        )
        if collapse:
            st.collapse_edges(-1)
    st.expansion(maxdim + 1)
    return st


# ---------------------------------------------------------------- signed measure
def signed_measure(
    D: Any,
    *,
    times: Any = None,
    degree: int = 1,
    invariant: str = "hilbert",
    resolution: int = 32,
    scale_grid: Any = None,
    n_jobs: int = -1,
) -> SignedMeasure:
    """Signed barcode of the Hilbert function or of the rank invariant (multipers).

    Parameters
    ----------
    D, times
        As in :func:`bifiltration`.
    degree : int
        Homology dimension.
    invariant : {"hilbert", "rank"}
        ``"hilbert"``: exact, on every critical value (fast: ~0.05 s at n=100 after the
        edge collapse).  ``"rank"``: the rank invariant's signed barcode on a distance
        grid of ``resolution`` regular values in ``[0, max D]`` (or ``scale_grid``) and every
        arrival time; exact on that grid.  Cost grows fast with the grid: ~0.3 s for
        n=100 and 32 values, ~1.2 s for 64, minutes on all critical values.
    resolution : int
        Distance grid size for the rank invariant.
    scale_grid : array-like, optional
        Explicit distance grid for the rank invariant (overrides ``resolution``).
    n_jobs : int
        Threads multipers may use (-1: all).

    Returns
    -------
    SignedMeasure
    """
    check_choice(invariant, "invariant", _INVARIANTS)
    degree = _check_maxdim(degree, "degree")
    A = validate_distance_matrix(D)
    grid = None
    if invariant == "rank":
        if scale_grid is None:
            grid = _scale_grid(check_int(resolution, "resolution", lo=2), A)
        else:
            grid = _grid(scale_grid, "scale_grid")
    st = bifiltration(A, times=times, maxdim=degree, scale_grid=grid)
    mp = _multipers()
    with contextlib.redirect_stdout(io.StringIO()):
        ((pts, w),) = mp.signed_measure(st, degree=degree, invariant=invariant, n_jobs=n_jobs)
    ncol = 2 if invariant == "hilbert" else 4
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, ncol)
    w = np.asarray(w, dtype=np.int64).ravel()
    keep = w != 0
    return SignedMeasure(invariant, degree, pts[keep], w[keep], grid)


# -------------------------------------------------------------- Hilbert function
def _sum_measure_on_grid(
    pts: np.ndarray, w: np.ndarray, scales: np.ndarray, times: np.ndarray
) -> np.ndarray:
    """Σ_i w_i [p_i ≤ (scale_a, t_b)] for every grid point, by 2-D cumulative sums."""
    out = np.zeros((scales.size, times.size), dtype=np.int64)
    if w.size == 0:
        return out
    i = np.searchsorted(scales, pts[:, 0], side="left")
    j = np.searchsorted(times, pts[:, 1], side="left")
    ok = (i < scales.size) & (j < times.size)
    np.add.at(out, (i[ok], j[ok]), w[ok])
    return out.cumsum(axis=0).cumsum(axis=1)


def hilbert_from_diagrams(
    diagrams: Sequence[Diagram], times: Any, scales: Any, *, maxdim: int | None = None
) -> HilbertFunction:
    """Hilbert function from one-parameter diagrams of the time slices (no multipers).

    Parameters
    ----------
    diagrams : sequence of Diagram, length m
        ``diagrams[j]`` is the Rips diagram of the points present at ``times[j]``.
    times : array-like of shape (m,)
        Increasing times.
    scales : array-like of shape (k,)
        Distance grid.
    maxdim : int, optional
        Default: the smallest maxdim of the diagrams.

    Returns
    -------
    HilbertFunction
        ``values[d, i, j] = #{(b, e) in diagrams[j][d] : b ≤ scales[i] < e}``.
    """
    diagrams = list(diagrams)
    times = np.asarray(times, dtype=np.float64)
    if times.shape != (len(diagrams),):
        raise InvalidInputError(
            f"need one time per diagram: {len(diagrams)} diagrams, times of shape {times.shape}"
        )
    if times.size > 1 and np.any(np.diff(times) <= 0):
        raise InvalidInputError("times must be strictly increasing")
    scales = _grid(scales, "scales")
    if maxdim is None:
        maxdim = min((g.maxdim for g in diagrams), default=0)
    maxdim = int(maxdim)
    values = np.zeros((maxdim + 1, scales.size, times.size), dtype=np.int64)
    for j, g in enumerate(diagrams):
        for d in range(maxdim + 1):
            bars = np.asarray(g[d], dtype=np.float64).reshape(-1, 2)
            if not bars.size:
                continue
            # a bar [b, e) counts at scales[i] iff b <= scales[i] < e
            start = np.searchsorted(scales, bars[:, 0], side="left")
            stop = np.searchsorted(scales, bars[:, 1], side="left")
            col = np.zeros(scales.size + 1, dtype=np.int64)
            np.add.at(col, start, 1)
            np.add.at(col, stop, -1)
            values[d, :, j] = np.cumsum(col[:-1])
    return HilbertFunction(scales, times, values, "slices")


def hilbert_function(
    D: Any,
    *,
    times: Any = None,
    maxdim: int = 1,
    scales: Any = None,
    t: Any = None,
    backend: str = "auto",
    diagrams: Sequence[Diagram] | None = None,
    n_jobs: int = -1,
) -> HilbertFunction:
    """Betti numbers of the (distance × time) Rips bifiltration on a grid.

    Parameters
    ----------
    D : array-like of shape (n, n)
        Distances between the points; they never change as time goes on.
    times : array-like of shape (n,), optional
        Arrival time of each point; default ``1..n`` (time = number of points present).
    maxdim : int
        Highest homology dimension.
    scales : None, int or array-like
        Distance grid: ``None`` (default) = every distinct distance and 0, on which the
        result is exact everywhere (:meth:`HilbertFunction.at`) — unless that grid would
        hold more than :data:`MAX_EXACT_CELLS` cells, then a regular one; an int ``k`` =
        ``k`` regular values in ``[0, max D]``; or explicit values.
    t : array-like, optional
        Time grid; default: the distinct arrival times.
    backend : {"auto", "multipers", "slices"}
        ``"auto"`` uses multipers when installed, else the slices.  Both are exact and
        agree (tested).
    diagrams : sequence of Diagram, optional
        Slice diagrams for the ``t`` grid (backend ``"slices"``), if already computed:
        ``diagrams[j]`` must be the Rips diagram of the points with ``times <= t[j]``,
        with maxdim ``>= maxdim``.
    n_jobs : int
        Threads (multipers) or worker processes (slices).

    Returns
    -------
    HilbertFunction
        ``values`` of shape (maxdim + 1, len(scales), len(t)).
    """
    A = validate_distance_matrix(D)
    maxdim = _check_maxdim(maxdim)
    n = A.shape[0]
    tt = _check_times(times, n)
    backend = _check_backend(backend)
    t_g = np.unique(tt) if t is None else _grid(t, "t")
    scale_g = _scale_grid(scales, A, t_g.size, maxdim + 1)
    if backend == "slices":
        if diagrams is None:
            subsets = [np.flatnonzero(tt <= x) for x in t_g]
            mats = [A[np.ix_(s, s)] for s in subsets if s.size]
            dgms = persistence_batch(mats, maxdim=maxdim, n_jobs=n_jobs)
            it = iter(dgms)
            empty = Diagram([np.zeros((0, 2))] * (maxdim + 1), maxdim=maxdim)
            diagrams = [next(it) if s.size else empty for s in subsets]
        else:
            diagrams = list(diagrams)
            if len(diagrams) != t_g.size:
                raise InvalidInputError(f"got {len(diagrams)} diagrams for {t_g.size} times")
            if any(g.maxdim < maxdim for g in diagrams):
                raise InvalidInputError(f"every diagram must hold dimensions 0..{maxdim}")
        return hilbert_from_diagrams(diagrams, t_g, scale_g, maxdim=maxdim)
    st = bifiltration(A, times=tt, maxdim=maxdim)
    mp = _multipers()
    with contextlib.redirect_stdout(io.StringIO()):
        sms = mp.signed_measure(
            st, degrees=list(range(maxdim + 1)), invariant="hilbert", n_jobs=n_jobs
        )
    values = np.stack(
        [
            _sum_measure_on_grid(
                np.asarray(p, dtype=np.float64).reshape(-1, 2),
                np.asarray(w, dtype=np.int64).ravel(),
                scale_g,
                t_g,
            )
            for p, w in sms
        ]
    )
    return HilbertFunction(scale_g, t_g, values, "multipers")
