"""Persistence engines: one exact Vietoris–Rips kernel behind three back ends.

Three engines compute the Vietoris–Rips persistent homology of a finite metric
space given as a dense distance matrix:

``"giotto"``
    giotto-ph (core dependency, the default): its compiled core
    ``gph.modules.gph_ripser.rips_dm``, the function behind
    :func:`gph.ripser_parallel`, called directly because ``import gph`` spends
    ~1.4 s importing scikit-learn for the Python wrapper (falls back to
    :func:`gph.ripser_parallel` if the core cannot be used).
``"ripser"``
    :func:`ripser.ripser` from `ripser.py` (optional: ``pip install ripser``).
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
diagrams, in exact float64.  The ranking costs one ``np.unique`` over the upper
triangle: 0.15 ms at n=32, 0.7 ms at n=128, 2.7 ms at n=256 (against 0.6 ms,
17 ms and 260 ms for the H0+H1 computation itself).  Above 2**24 distinct values
the kernel passes the distances themselves and snaps every float32 output to
the nearest distance instead (exact except between distances that collide in
float32).

Conventions shared by all engines
---------------------------------
* Edges of length ``<= threshold`` are in the complex; the complex is cut at
  ``threshold``; a class still alive there is reported with death ``inf``.
* Zero-length bars (birth == death) are dropped.
* A single point gives one H0 bar ``[0, inf]``.
* Coefficients in Z/2.

Measured on the project machine (2 cores, one of them busy with another job;
giotto-ph 0.2.4, ripser 0.6.15, gudhi 3.13; Jensen–Shannon matrices of random
Dirichlet rows; H0+H1 through :func:`persistence`, ranks and validation
included; one thread; median ms):

======  ======  ======  ======
n       giotto  ripser  gudhi
======  ======  ======  ======
32      0.7     0.9     2.1
128     17      32      97
256     231     273     1480
======  ======  ======  ======

giotto-ph is the fastest everywhere, more so with H2 (96 ms against 383 ms at
n=128), and 2 threads help it a little from n~128 (15 ms at 128, 194 ms at
256), hence the default.  gudhi cuts the complex at the enclosing radius (above
it the complex is a cone), as the ripser family does.

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
DEFAULT_ENGINE = "giotto"

#: Largest number of distinct distances for which ranks are exact in float32.
_MAX_EXACT_RANKS = 2**24

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
    """A validated distance matrix in the form the engines take.

    Attributes
    ----------
    n : int
        Number of points.
    values : ndarray of shape (m,)
        Sorted unique distances (float64), ``values[0] == 0``.
    exact : bool
        True when ranks are used (m <= 2**24): the engines see ranks and every
        rank maps back to an exact distance.  False: they see float32 distances
        and outputs are snapped to the nearest distance.
    condensed : ndarray of shape (n * (n - 1) / 2,)
        float32 upper triangle in :func:`scipy.spatial.distance.squareform`
        order: ranks (exact) or distances.
    radius : float
        Enclosing radius ``min_i max_j D[i, j]`` in the same unit.
    """

    def __init__(self, D: np.ndarray) -> None:
        n = D.shape[0]
        self.n = n
        self._iu = iu = _triu(n)
        upper = D[iu]
        lower = D.T[iu]
        symmetric = np.array_equal(upper, lower)
        if not symmetric:
            upper = 0.5 * (upper + lower)
        values, inv = np.unique(upper, return_inverse=True)
        inv = inv.reshape(-1)
        if values.size == 0 or values[0] != 0.0:
            values = np.concatenate([[0.0], values])
            inv = inv + 1
        self.values = values
        self.exact = values.size <= _MAX_EXACT_RANKS
        self.condensed = (inv if self.exact else upper).astype(np.float32)
        S = D if symmetric else self._square(upper, np.float64)
        r = float(S.max(axis=1).min())
        self.radius = float(np.searchsorted(values, r)) if self.exact else r

    def _square(self, cond: np.ndarray, dtype) -> np.ndarray:
        R = np.zeros((self.n, self.n), dtype=dtype)
        R[self._iu] = cond
        R[self._iu[1], self._iu[0]] = cond
        return R

    def square(self, dtype=np.float32) -> np.ndarray:
        """ndarray of shape (n, n): the symmetric matrix of ranks (or distances)."""
        return self._square(self.condensed, dtype)

    def to_units(self, threshold: float) -> float:
        """A threshold in engine units: the largest rank whose distance is <= it."""
        if not np.isfinite(threshold) or not self.exact:
            return float(threshold)
        return float(np.searchsorted(self.values, threshold, side="right") - 1)

    def from_units(self, dgm: Any) -> np.ndarray:
        """An engine's (k, 2) output mapped back to exact float64 distances (inf kept)."""
        dgm = np.asarray(dgm, dtype=np.float64).reshape(-1, 2)
        out = np.full(dgm.shape, np.inf)
        finite = np.isfinite(dgm)
        v = dgm[finite]
        values = self.values
        if self.exact:
            idx = np.rint(v).astype(np.int64)
        else:  # snap to the nearest distance (values.size > 2**24 here)
            hi = np.clip(np.searchsorted(values, v), 1, values.size - 1)
            lo = hi - 1
            idx = np.where(values[hi] - v < v - values[lo], hi, lo)
        out[finite] = values[np.clip(idx, 0, values.size - 1)]
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
    """Load the default engine's compiled core (used by worker processes at start)."""
    _gph_core()


def _giotto(P: "_Prepared", maxdim: int, thresh: float, n_threads: int) -> list[np.ndarray]:
    cut = min(thresh, P.radius)
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
        P.square(np.float32), metric="precomputed", maxdim=maxdim, thresh=thresh,
        n_threads=n_threads,
    )
    return list(out["dgms"])


def _ripser(P: "_Prepared", maxdim: int, thresh: float, n_threads: int) -> list[np.ndarray]:
    from ripser import ripser

    M = P.square(np.float32)
    return list(ripser(M, maxdim=maxdim, thresh=thresh, distance_matrix=True)["dgms"])


def _gudhi(P: "_Prepared", maxdim: int, thresh: float, n_threads: int) -> list[np.ndarray]:
    import gudhi

    # Above the enclosing radius min_i max_j D[i, j] the Rips complex is a cone
    # (contractible): nothing of dimension >= 1 survives it, so cut there.
    cut = min(thresh, P.radius)
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
        "giotto": Engine(
            "giotto", "gph", "giotto-ph", "giotto-ph ripser_parallel (default, fastest)", _giotto
        ),
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


def get_engine(engine: str | None = None) -> Engine:
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
    check_choice(engine, "engine", ENGINES, what="persistence engine", hint="or None for the default")
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

    No validation happens here (``persistence`` validates); this is the kernel
    shared by the in-process path and the worker processes.

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
    P = _Prepared(D)
    raw = ENGINES[engine]._run(P, maxdim, P.to_units(threshold), n_threads)
    out = []
    for d in range(maxdim + 1):
        dgm = P.from_units(raw[d]) if d < len(raw) else _EMPTY
        dgm = dgm[dgm[:, 1] > dgm[:, 0]]  # drop zero-length bars
        if dgm.shape[0] > 1:  # sorted by (birth, death), as Diagram keeps them
            dgm = dgm[np.lexsort((dgm[:, 1], dgm[:, 0]))]
        out.append(np.ascontiguousarray(dgm))
    return out


def default_threads(n: int) -> int:
    """giotto-ph threads for one matrix of ``n`` points when the caller said None.

    Threads only help the H1+ reduction of larger matrices; on a small matrix
    the thread start costs more than it saves (n=32: 0.6 ms with 1, 1.6 ms with 2).
    """
    if n < 96:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))
