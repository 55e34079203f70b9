"""Persistence engines: one exact Vietoris–Rips kernel behind four back ends.

Four engines compute the Vietoris–Rips persistent homology of a finite metric
space given as a dense distance matrix:

``"auto"`` (the default)
    ripser.py's compiled core for matrices of at most :data:`AUTO_RIPSER_MAX_N`
    points computed on one thread, giotto-ph otherwise (and everywhere when
    ripser.py is not installed; it comes with the ``features``, ``corpus`` and
    ``ray`` extras).  Why: see "Small matrices" below.
``"giotto"``
    giotto-ph (core dependency): its compiled core
    ``gph.modules.gph_ripser.rips_dm``, the function behind
    :func:`gph.ripser_parallel`, called directly because ``import gph`` spends
    ~1.4 s importing scikit-learn for the Python wrapper (falls back to
    :func:`gph.ripser_parallel` if the core cannot be used).
``"ripser"``
    ripser.py (optional: ``pip install ripser``): its compiled core ``pyRipser``,
    called directly for the same reason (falls back to :func:`ripser.ripser`).
``"gudhi"``
    :class:`gudhi.RipsComplex` + :class:`gudhi.SimplexTree` (core dependency).

Exactness by ranks
------------------
The ripser-family engines compute in float32.  A Vietoris–Rips filtration only
depends on the *order* of the distances, and every birth and death is one of
the pairwise distances.  So before calling any engine the kernel replaces each
distance by its rank among the sorted unique distances (``0`` gets rank 0).
Ranks are small integers, exact in float32 (up to 2**24 distinct values, i.e.
any matrix with n <= 5793), so ties are preserved, every engine sees exactly
the same filtration, and each rank in the output is mapped back to the exact
float64 distance.  Result: the three engines return **bit-for-bit identical**
diagrams, in exact float64.  :func:`compute_many` ranks a whole stack of same-size
matrices at once (one row-wise sort), and maps every engine output of the stack back,
drops zero-length bars and sorts them in one pass: on small matrices (a short text's heads)
doing this matrix by matrix costs a sizeable share of giotto-ph's own time.  Above 2**24
distinct values the kernel passes the distances themselves and snaps every float32 output
to the nearest distance instead (exact except between distances that collide in float32).

Conventions shared by all engines
---------------------------------
* Edges of length ``<= threshold`` are in the complex; the complex is cut at
  ``threshold``; a class still alive there is reported with death ``inf``.
* Zero-length bars (birth == death) are dropped.
* A single point gives one H0 bar ``[0, inf]``.
* Coefficients in Z/2.

Small matrices
--------------
giotto-ph is the fastest engine from a few dozen points on, more so with H2; gudhi is the
slowest (it cuts the complex at the enclosing radius, as the ripser family does).  But
giotto-ph starts and joins C++ threads in every call, also with one thread; when every core
is busy (a corpus run: persistence workers beside a forward pass, or one Ray actor per
CPU) each start waits for a core.  ripser.py's core is single-threaded and starts nothing.
Hence ``"auto"``: ripser.py's core up to :data:`AUTO_RIPSER_MAX_N` points, giotto-ph above.
The diagrams do not depend on the engine (ranks, above; the tests compare every engine bit
for bit), so ``"auto"`` only chooses the speed.  The measurements behind these choices
(``benchmarks/engines_bench.py``, ``docs/engines_bench.json``) are in docs/benchmarks.md,
section 8.

This module imports nothing from attntopo at import time so that worker
processes can load it as a standalone file (see ``_pool``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

__all__ = ["Engine", "ENGINES", "DEFAULT_ENGINE", "available_engines", "get_engine"]

#: The engine used when ``engine=None`` (falls back to the first available one).
DEFAULT_ENGINE = "auto"

#: Largest number of distinct distances for which ranks are exact in float32.
_MAX_EXACT_RANKS = 2**24
#: Distances per vectorized block of :func:`compute_many`.
_BLOCK_DISTANCES = 1 << 16

_EMPTY = np.empty((0, 2), dtype=np.float64)


# --------------------------------------------------------------------------- ranks
@functools.lru_cache(maxsize=16)
def _triu_cached(n: int) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n, 1)
    i.setflags(write=False)
    j.setflags(write=False)
    return i, j


def _triu(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle indices (k > 0) of an (n, n) matrix, row-major (squareform order).

    Cached for n <= 512 (at most 2 MB each), where the saving matters.
    """
    return _triu_cached(n) if n <= 512 else np.triu_indices(n, 1)


class _Prepared:
    """One distance matrix in the form the engines take.

    Attributes
    ----------
    n : int
        Number of points.
    condensed : ndarray of shape (n * (n - 1) / 2,)
        float32 upper triangle in :func:`scipy.spatial.distance.squareform` order: ranks (the
        usual case, mapped back exactly by :func:`compute_many`) or, above 2**24 distinct
        distances, the distances themselves (snapped back by :func:`_compute_inexact`).
    radius : float
        Enclosing radius ``min_i max_{j != i} D[i, j]`` in the same unit.
    units_threshold : float
        The caller's threshold in the same unit (``inf`` for none).
    """

    __slots__ = ("n", "condensed", "radius", "units_threshold")

    def __init__(
        self, n: int, condensed: np.ndarray, radius: float, units_threshold: float
    ) -> None:
        self.n = n
        self.condensed = condensed
        self.radius = radius
        self.units_threshold = units_threshold

    def square(self, dtype=np.float32) -> np.ndarray:
        """ndarray of shape (n, n): the symmetric matrix of ranks (or distances)."""
        iu = _triu(self.n)
        R = np.zeros((self.n, self.n), dtype=dtype)
        R[iu] = self.condensed
        R[iu[1], iu[0]] = self.condensed
        return R


def condense(mats: Any) -> np.ndarray:
    """Upper triangles of same-size distance matrices, each made exactly symmetric.

    Parameters
    ----------
    mats : ndarray of shape (m, n, n) or sequence of m ndarrays of shape (n, n)
        float64 distance matrices, symmetric within round-off.

    Returns
    -------
    ndarray of shape (m, n * (n - 1) / 2), float64
        Row k is matrix k's upper triangle in squareform order; a matrix whose two
        triangles differ anywhere is replaced by ``(D + D.T) / 2``.  Only this array is
        allocated (no stacked copy of the matrices): at n=126 a third of the time of stacking
        and indexing, and no second copy of a batch's matrices in memory.
    """
    m = len(mats)
    n = mats[0].shape[0] if m else 0
    i, j = _triu(n)
    upper_at, lower_at = i * n + j, j * n + i
    C = np.empty((m, i.size))
    lower = np.empty(i.size)
    for k in range(m):
        flat = np.ascontiguousarray(mats[k], dtype=np.float64).reshape(-1)
        row = C[k]
        np.take(flat, upper_at, out=row)
        np.take(flat, lower_at, out=lower)
        if not np.array_equal(row, lower):
            row += lower
            row *= 0.5
    return C


def _row_max_min(units: np.ndarray, n: int) -> np.ndarray:
    """``min_i max_{j != i}`` of each row's square matrix (m, K) -> (m,), by blocks."""
    iu = _triu(n)
    out = np.empty(units.shape[0], dtype=units.dtype)
    step = max(1, (1 << 22) // (n * n))
    for s in range(0, units.shape[0], step):
        u = units[s : s + step]
        Q = np.zeros((u.shape[0], n, n), dtype=units.dtype)
        Q[:, iu[0], iu[1]] = u
        Q[:, iu[1], iu[0]] = u
        out[s : s + step] = Q.max(axis=2).min(axis=1)
    return out


def _rank_stack(C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks of each row's distances among that row's sorted unique distances.

    Returns ``(units, V, nvals)``: ``units`` (m, K) float32 ranks (``0`` for a zero distance,
    ties share a rank); ``V`` (m, K + 1) float64 with ``V[k, r]`` the distance of rank ``r``
    in row ``k`` (``V[k, 0] == 0``; ``inf`` past the last rank); ``nvals`` (m,) ranks used.
    """
    m, K = C.shape
    rows = np.arange(m)[:, None]
    order = C.argsort(axis=1)  # ties share a rank whatever their order: no stable sort (3x slower)
    S = C[rows, order]
    step = np.empty((m, K), dtype=np.int64)
    step[:, 0] = S[:, 0] != 0.0
    np.not_equal(S[:, 1:], S[:, :-1], out=step[:, 1:])
    rs = step.cumsum(axis=1, out=step)
    units = np.empty((m, K), dtype=np.float32)
    units[rows, order] = rs
    V = np.empty((m, K + 1))
    V.fill(np.inf)
    V[:, 0] = 0.0
    V[rows, rs] = S
    return units, V, rs[:, -1] + 1


def _prepare_exact(
    C: np.ndarray, n: int, threshold: float
) -> tuple[list[_Prepared], np.ndarray, np.ndarray]:
    """Every row of ``C`` (m, K) as a :class:`_Prepared` in ranks: its enclosing radius and
    ``threshold`` as ranks too (the largest rank whose distance is ``<= threshold``), plus
    :func:`_rank_stack`'s ``V`` and ``nvals`` to map the engine's output back."""
    units, V, nvals = _rank_stack(C)
    radius = _row_max_min(units, n).astype(np.float64)
    if np.isfinite(threshold):
        thr = (V <= threshold).sum(axis=1) - 1.0
    else:
        thr = np.full(C.shape[0], float(threshold))
    P = [_Prepared(n, units[k], float(radius[k]), float(thr[k])) for k in range(C.shape[0])]
    return P, V, nvals


def _compute_inexact(
    c: np.ndarray, n: int, maxdim: int, threshold: float, engine: str, n_threads: int
) -> list[np.ndarray]:
    """One matrix with more than 2**24 distinct distances: float32 distances, snapped back."""
    values = np.unique(np.concatenate([[0.0], c]))
    units = c.astype(np.float32)
    radius = float(_row_max_min(units[None], n)[0])
    P = _Prepared(n, units, radius, float(threshold))
    raw = ENGINES[engine]._run(P, maxdim, n_threads)
    out = []
    for d in range(maxdim + 1):
        dgm = np.asarray(raw[d], dtype=np.float64).reshape(-1, 2) if d < len(raw) else _EMPTY
        snapped = np.full(dgm.shape, np.inf)
        finite = np.isfinite(dgm)
        v = dgm[finite]
        hi = np.clip(np.searchsorted(values, v), 1, values.size - 1)
        lo = hi - 1
        snapped[finite] = values[np.where(values[hi] - v < v - values[lo], hi, lo)]
        snapped = snapped[snapped[:, 1] > snapped[:, 0]]
        out.append(np.ascontiguousarray(snapped[np.lexsort((snapped[:, 1], snapped[:, 0]))]))
    return out


# ------------------------------------------------------------------ engine calls
_GPH_CORE: Any = None


def _gph_core() -> Any:
    """giotto-ph's compiled core ``gph.modules.gph_ripser``, or None to use the public API.

    ``import gph`` takes ~1.4 s because its Python wrapper imports scikit-learn;
    the compiled core loads in ~1 ms.  When gph is not imported yet, the core is
    loaded under its own name ``gph.modules.gph_ripser`` (so a later ``import gph``
    reuses it).  Any surprise (layout or signature change) falls back to
    :func:`gph.ripser_parallel`, whose output the tests compare with this path.
    """
    global _GPH_CORE
    if _GPH_CORE is None:
        _GPH_CORE = False
        name = "gph.modules.gph_ripser"
        try:
            core = sys.modules.get(name)
            if core is None:
                import importlib.machinery

                spec = importlib.util.find_spec("gph")
                folder = os.path.join(list(spec.submodule_search_locations)[0], "modules")
                for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                    path = os.path.join(folder, "gph_ripser" + suffix)
                    if os.path.exists(path):
                        loader = importlib.machinery.ExtensionFileLoader(name, path)
                        cspec = importlib.util.spec_from_file_location(name, path, loader=loader)
                        core = importlib.util.module_from_spec(cspec)
                        loader.exec_module(core)
                        sys.modules[name] = core
                        break
            if core is not None and hasattr(core, "rips_dm"):
                _GPH_CORE = core
        except Exception:  # pragma: no cover - depends on the installed giotto-ph
            _GPH_CORE = False
    return _GPH_CORE or None


def warm_up() -> None:
    """Load the default engine's compiled cores (used by worker processes at start)."""
    _gph_core()
    _ripser_core()


def _giotto(P: "_Prepared", maxdim: int, n_threads: int) -> list[np.ndarray]:
    cut = min(P.units_threshold, P.radius)
    core = _gph_core()
    n_threads = max(1, int(n_threads))
    if core is not None:
        try:
            res = core.rips_dm(
                P.condensed, np.zeros(P.n, dtype=np.float32), 2, maxdim, cut, n_threads, False
            )
            return [
                np.asarray(d, dtype=np.float64).reshape(-1, 2)
                for d in res.births_and_deaths_by_dim()
            ]
        except TypeError:  # pragma: no cover - binding signature changed
            pass
    from gph import ripser_parallel

    out = ripser_parallel(
        P.square(np.float32),
        metric="precomputed",
        maxdim=maxdim,
        thresh=P.units_threshold,
        n_threads=n_threads,
    )
    return list(out["dgms"])


_RIPSER_CORE: Any = None


def _ripser_core() -> Any:
    """ripser.py's compiled core, the top-level module ``pyRipser``, or None.

    ``import ripser`` imports scikit-learn and persim for its Python wrapper (~1 s); the core
    loads in ~2 ms and takes the condensed distances in squareform order, as giotto-ph's does.
    A core without ``doRipsFiltrationDM`` falls back to :func:`ripser.ripser`.
    """
    global _RIPSER_CORE
    if _RIPSER_CORE is None:
        try:
            import pyRipser

            _RIPSER_CORE = pyRipser if hasattr(pyRipser, "doRipsFiltrationDM") else False
        except Exception:  # noqa: BLE001 - not installed, or another layout
            _RIPSER_CORE = False
    return _RIPSER_CORE or None


def _ripser(P: "_Prepared", maxdim: int, n_threads: int) -> list[np.ndarray]:
    core = _ripser_core()
    if core is not None:
        try:
            res = core.doRipsFiltrationDM(
                np.ascontiguousarray(P.condensed, dtype=np.float32),
                maxdim,
                min(P.units_threshold, P.radius),
                2,
            )
            return [
                np.asarray(d, dtype=np.float64).reshape(-1, 2)
                for d in res["births_and_deaths_by_dim"]
            ]
        except (TypeError, KeyError):  # pragma: no cover - binding signature changed
            pass
    from ripser import ripser

    M = P.square(np.float32)
    return list(ripser(M, maxdim=maxdim, thresh=P.units_threshold, distance_matrix=True)["dgms"])


#: Largest matrix (points) that the ``"auto"`` engine gives to ripser.py's core, on one thread.
AUTO_RIPSER_MAX_N = 40


def _auto(P: "_Prepared", maxdim: int, n_threads: int) -> list[np.ndarray]:
    if P.n <= AUTO_RIPSER_MAX_N and n_threads <= 1 and _ripser_core() is not None:
        return _ripser(P, maxdim, n_threads)
    return _giotto(P, maxdim, n_threads)


def _gudhi(P: "_Prepared", maxdim: int, n_threads: int) -> list[np.ndarray]:
    import gudhi

    # Above the enclosing radius min_i max_j D[i, j] the Rips complex is a cone
    # (contractible): nothing of dimension >= 1 survives it, so cut there.
    cut = min(P.units_threshold, P.radius)
    rips = gudhi.RipsComplex(distance_matrix=P.square(np.float64), max_edge_length=cut)
    st = rips.create_simplex_tree(max_dimension=maxdim + 1)
    # gudhi skips the top dimension of the complex unless persistence_dim_max;
    # the top dimension is maxdim + 1 unless the cut left a smaller complex.
    st.compute_persistence(
        homology_coeff_field=2, min_persistence=0.0, persistence_dim_max=st.dimension() <= maxdim
    )
    return [np.asarray(st.persistence_intervals_in_dimension(d)) for d in range(maxdim + 1)]


@dataclass(frozen=True)
class Engine:
    """A persistence back end.

    Attributes
    ----------
    name : str
        Name used in ``persistence(..., engine=name)``.
    module : str
        Python module to import.
    pip : str
        Package to ``pip install`` when the module is missing.
    description : str
        One line for humans.
    """

    name: str
    module: str
    pip: str
    description: str
    _run: Callable[..., list] = field(repr=False, compare=False)

    def is_available(self) -> bool:
        """Whether the engine's module can be imported (checked without importing)."""
        return _has_module(self.module)


_AVAILABLE_CACHE: dict[str, bool] = {}


def _has_module(module: str) -> bool:
    if module not in _AVAILABLE_CACHE:
        try:
            _AVAILABLE_CACHE[module] = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            _AVAILABLE_CACHE[module] = False
    return _AVAILABLE_CACHE[module]


#: Registry of engines, name -> :class:`Engine` (read-only mapping; iterate for names).
ENGINES: Mapping[str, Engine] = MappingProxyType(
    {
        "auto": Engine(
            "auto",
            "gph",
            "giotto-ph",
            f"ripser.py's core up to n={AUTO_RIPSER_MAX_N} "
            "on one thread, giotto-ph above (default)",
            _auto,
        ),
        "giotto": Engine("giotto", "gph", "giotto-ph", "giotto-ph ripser_parallel", _giotto),
        "ripser": Engine("ripser", "ripser", "ripser", "ripser.py (Ripser, C++)", _ripser),
        "gudhi": Engine("gudhi", "gudhi", "gudhi", "gudhi RipsComplex + SimplexTree", _gudhi),
    }
)


def available_engines() -> list[str]:
    """Names of the engines whose package is installed, default first.

    Returns
    -------
    list of str
        Subset of ``list(ENGINES)``.
    """
    return [name for name, eng in ENGINES.items() if eng.is_available()]


def get_engine(*, engine: str | None = None) -> Engine:
    """Resolve an engine name (``None`` = default) to an installed :class:`Engine`.

    Raises
    ------
    InvalidInputError
        Unknown engine name.
    MissingDependencyError
        The engine's package is not installed (the message names the pip package).
    """
    from .._validation import check_choice
    from ..errors import MissingDependencyError

    if engine is None:
        avail = available_engines()
        if not avail:
            raise MissingDependencyError(
                "no persistence engine is installed; install one with `pip install giotto-ph`"
            )
        return ENGINES[DEFAULT_ENGINE] if DEFAULT_ENGINE in avail else ENGINES[avail[0]]
    check_choice(
        engine, "engine", ENGINES, what="persistence engine", hint="or None for the default"
    )
    eng = ENGINES[engine]
    if not eng.is_available():
        raise MissingDependencyError(
            f"persistence engine {engine!r} needs the package {eng.pip!r}: "
            f"`pip install {eng.pip}` (or use engine='giotto')"
        )
    return eng


def _singleton(maxdim: int) -> list[np.ndarray]:
    return [np.array([[0.0, np.inf]])] + [_EMPTY.copy() for _ in range(maxdim)]


def compute(
    D: np.ndarray, maxdim: int, threshold: float, engine: str, n_threads: int = 1
) -> list[np.ndarray]:
    """Exact Vietoris–Rips diagrams of a validated distance matrix.

    No validation happens here (``persistence`` validates); :func:`compute_many` of one.

    Parameters
    ----------
    D : ndarray of shape (n, n)
        float64 distance matrix, symmetric (within round-off), zero diagonal.
    maxdim : int
        Highest homology dimension.
    threshold : float
        Cut of the filtration (``inf`` for none).
    engine : str
        Key of :data:`ENGINES`.
    n_threads : int
        Threads for engines that use them (giotto only).

    Returns
    -------
    list of ndarray of shape (k_d, 2)
        float64 (birth, death) per dimension 0..maxdim, sorted by (birth, death),
        zero-length bars removed, ``inf`` deaths for classes alive at the cut.
    """
    if D.shape[0] == 1:
        return _singleton(maxdim)
    return compute_many(condense(D[None]), D.shape[0], maxdim, threshold, engine, n_threads)[0]


def compute_many(
    C: np.ndarray, n: int, maxdim: int, threshold: float, engine: str, n_threads: int = 1
) -> list[list[np.ndarray]]:
    """Exact Vietoris–Rips diagrams of ``m`` distance matrices of the same size.

    The kernel behind :func:`compute`, the batch and the worker processes: the ranks,
    enclosing radii and thresholds of all ``m`` matrices are computed in a few vectorized
    steps, the engine runs once per matrix, and the outputs of all matrices are mapped back
    to distances, cleaned and sorted together (at ``n`` ~ 30 this preparation cost more
    than giotto-ph's own work when it was done matrix by matrix).

    Parameters
    ----------
    C : ndarray of shape (m, n * (n - 1) / 2)
        float64 upper triangles in squareform order (see :func:`condense`): non-negative,
        finite.
    n : int
        Points per matrix.
    maxdim, threshold, engine, n_threads
        As in :func:`compute`.

    Returns
    -------
    list of m lists of ndarray of shape (k_d, 2)
        What :func:`compute` returns for each matrix, in order.  The arrays of one call are
        C-contiguous views of one array.
    """
    C = np.asarray(C, dtype=np.float64)
    m = C.shape[0]
    if n == 1:
        return [_singleton(maxdim) for _ in range(m)]
    if C.shape[1] + 1 > _MAX_EXACT_RANKS:
        return [_compute_inexact(C[k], n, maxdim, threshold, engine, n_threads) for k in range(m)]
    # blocks of ~64k distances: the vectorized steps stay in cache and their temporaries small
    # (a worker's chunk at n=126 is ~300 matrices: ~100 MB of temporaries at once, and slower)
    step = max(1, _BLOCK_DISTANCES // C.shape[1])
    out: list[list[np.ndarray]] = []
    for s in range(0, m, step):
        out.extend(_compute_block(C[s : s + step], n, maxdim, threshold, engine, n_threads))
    return out


def _compute_block(
    C: np.ndarray, n: int, maxdim: int, threshold: float, engine: str, n_threads: int
) -> list[list[np.ndarray]]:
    """:func:`compute_many` of one block of rows, exact ranks."""
    m = C.shape[0]
    prepared, V, nvals = _prepare_exact(C, n, threshold)
    run = ENGINES[engine]._run
    dims = maxdim + 1
    counts = np.zeros((m, dims), dtype=np.int64)
    parts = [_EMPTY]
    for k, P in enumerate(prepared):
        raw = run(P, maxdim, n_threads)
        for d in range(min(dims, len(raw))):
            a = np.asarray(raw[d], dtype=np.float64).reshape(-1, 2)
            counts[k, d] = a.shape[0]
            parts.append(a)
    B = np.concatenate(parts)
    key = np.repeat(np.arange(m * dims), counts.ravel())  # matrix-major, dimension within
    out = np.full(B.shape, np.inf)
    finite = np.isfinite(B)
    rows = np.broadcast_to((key // dims)[:, None], B.shape)[finite]
    out[finite] = V[rows, np.clip(np.rint(B[finite]).astype(np.int64), 0, nvals[rows] - 1)]
    keep = out[:, 1] > out[:, 0]  # drop zero-length bars
    out, key = out[keep], key[keep]
    order = np.lexsort((out[:, 1], out[:, 0], key))  # by (birth, death) within each diagram
    out = out[order]
    bounds = np.concatenate([[0], np.cumsum(np.bincount(key, minlength=m * dims))])
    return [
        [out[bounds[k * dims + d] : bounds[k * dims + d + 1]] for d in range(dims)]
        for k in range(m)
    ]


def run_job(job: list) -> list[list[np.ndarray]]:
    """A worker's job: tuples ``(mats, n, maxdim, threshold, engine, n_threads)`` of same-size
    matrices; the results of :func:`compute_many` on each, concatenated."""
    out: list[list[np.ndarray]] = []
    for mats, *rest in job:
        out.extend(compute_many(condense(mats), *rest))
    return out


def default_threads(n: int) -> int:
    """giotto-ph threads for one matrix of ``n`` points when the caller said None.

    Threads only help the H1+ reduction of larger matrices; on a small matrix
    the thread start costs more than it saves (n=32: 0.6 ms with 1, 1.6 ms with 2).
    """
    if n < 96:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))
