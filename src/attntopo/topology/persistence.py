"""Vietoris–Rips persistence of distance matrices: one function, three engines.

:func:`persistence` computes the diagram of one matrix, :func:`persistence_batch`
of many, in parallel worker processes when that pays off.  All engines return
the same exact float64 diagrams (see :mod:`attntopo.topology.engines`).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from .._progress import ProgressOption, make_reporter
from .._validation import check_maxdim, check_positive_int, check_threshold, is_int
from ..constants import MAX_MAXDIM as _MAX_MAXDIM
from ..errors import InvalidInputError, InvalidMatrixError
from . import _pool
from .diagram import Diagram
from .engines import compute, compute_many, condense, default_threads, get_engine

__all__ = ["persistence", "persistence_batch", "pool_shutdown", "validate_distance_matrix"]

#: Highest homology dimension accepted (:data:`attntopo.constants.MAX_MAXDIM`).  Cost
#: grows steeply with it: a JS matrix with n=96 takes ~10 ms for maxdim=1, ~75 ms for 2
#: and ~1.1 s for 3 (giotto).
MAX_MAXDIM = _MAX_MAXDIM

_SYM_RTOL = 1e-9
_DIAG_ATOL = 1e-12

# pool policy (see persistence_batch): estimated serial work, in ms, above which
# the worker pool is used when it is already running / when it must be started.
_WARM_MIN_MS = 20.0
_COLD_MIN_MS = 400.0


def pool_shutdown() -> None:
    """Stop the worker processes used by :func:`persistence_batch`.

    They are started again on next use; also called automatically at exit.
    """
    _pool.pool_shutdown()


# ----------------------------------------------------------------- validation
def _to_numpy(D: Any) -> Any:
    if hasattr(D, "detach") and hasattr(D, "cpu"):  # torch tensor, without importing torch
        D = D.detach().cpu()
        if hasattr(D, "numpy"):
            D = D.numpy()
    return D


def validate_distance_matrix(D: Any, *, name: str = "D") -> np.ndarray:
    """Check a distance matrix and return it as a float64 ndarray.

    Parameters
    ----------
    D : array-like of shape (n, n)
        numpy array, nested lists, torch tensor, ...
    name : str
        How to call the matrix in error messages.

    Returns
    -------
    ndarray of shape (n, n), float64

    Raises
    ------
    InvalidMatrixError
        Not 2-D square, empty, non-numeric, not finite, negative, not symmetric
        (relative tolerance 1e-9) or non-zero diagonal (tolerance 1e-12).
    """
    D = _to_numpy(D)
    try:
        if np.iscomplexobj(D):
            raise TypeError("complex")
        A = np.asarray(D, dtype=np.float64)
    except (TypeError, ValueError):
        shape = getattr(D, "shape", None)
        raise InvalidMatrixError(
            f"{name}: expected a square (n, n) matrix of real numbers, got "
            f"{type(D).__name__}" + (f" of shape {tuple(shape)}" if shape is not None else "")
        ) from None
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InvalidMatrixError(
            f"{name}: expected a square (n, n) distance matrix, got shape {A.shape}"
        )
    n = A.shape[0]
    if n == 0:
        raise InvalidMatrixError(f"{name}: expected at least one point (n >= 1), got shape (0, 0)")
    bad = ~np.isfinite(A)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InvalidMatrixError(
            f"{name}: distances must be finite; found {int(bad.sum())} NaN/inf entries "
            f"(first D[{i}, {j}] = {A[i, j]}); use threshold= to cut the filtration instead of inf"
        )
    if (A < 0).any():
        i, j = np.unravel_index(np.argmin(A), A.shape)
        raise InvalidMatrixError(
            f"{name}: distances must be non-negative; found D[{i}, {j}] = {A[i, j]:.6g}"
        )
    scale = float(A.max())
    if n > 1:
        asym = np.abs(A - A.T)
        if float(asym.max()) > _SYM_RTOL * scale:
            i, j = np.unravel_index(np.argmax(asym), A.shape)
            raise InvalidMatrixError(
                f"{name}: distance matrix must be symmetric (relative tolerance 1e-9); "
                f"D[{i}, {j}] = {A[i, j]:.10g} but D[{j}, {i}] = {A[j, i]:.10g}; "
                "symmetrize it with (D + D.T) / 2"
            )
    diag = np.abs(np.diagonal(A))
    if float(diag.max()) > _DIAG_ATOL:
        i = int(np.argmax(diag))
        raise InvalidMatrixError(
            f"{name}: distance matrix must have a zero diagonal (|D[i, i]| <= 1e-12); "
            f"found D[{i}, {i}] = {A[i, i]:.6g}"
        )
    return A


def _check_maxdim(maxdim: Any, name: str = "maxdim") -> int:
    """The persistence rule: 0..MAX_MAXDIM."""
    return check_maxdim(maxdim, hi=MAX_MAXDIM, name=name, hint="cost explodes with it; 1 is usual")


def _check_threads(n_jobs: Any, n: int) -> int:
    threads = check_positive_int(n_jobs, "n_jobs", None, hint="None: chosen by size")
    return default_threads(n) if threads is None else threads


# --------------------------------------------------------------------- single
def persistence(
    D: Any,
    *,
    maxdim: int = 1,
    threshold: float = float("inf"),
    engine: str | None = None,
    n_jobs: int | None = None,
) -> Diagram:
    """Vietoris–Rips persistence diagram of a finite metric space.

    Parameters
    ----------
    D : array-like of shape (n, n)
        Distance matrix: finite, non-negative, symmetric (relative tolerance
        1e-9; the mean of ``D`` and ``D.T`` is used), zero diagonal (1e-12).
        numpy arrays, nested lists and torch tensors are accepted.
    maxdim : int, default 1
        Highest homology dimension, 0..3.  Cost grows steeply: at n=96, H2 is
        ~7x and H3 ~100x the cost of H1.
    threshold : float, default inf
        Cut the filtration there: only edges of length ``<= threshold`` enter;
        classes still alive at the cut are reported with death ``inf``.
    engine : {"auto", "giotto", "ripser", "gudhi"} or None
        ``None`` = ``"auto"``: ripser.py's core up to n=40 on one thread (it starts no
        threads), giotto-ph above; gudhi is the slowest.  All engines return identical
        diagrams (:mod:`attntopo.topology.engines`; timings: docs/benchmarks.md, section 8).
    n_jobs : int, optional
        Threads for giotto-ph (others ignore it).  Default: 1 below n=96, else
        the CPU count (max 8).

    Returns
    -------
    Diagram
        Exact float64 (birth, death) pairs for dims 0..maxdim; every value is an
        entry of ``D``.  H0 bars are born at 0 and die at the edge lengths of a
        minimum spanning tree; one H0 bar is infinite.  Zero-length bars
        (birth == death) are dropped.

    Raises
    ------
    InvalidMatrixError
        ``D`` is not a valid distance matrix (the message says why).
    InvalidInputError
        Bad ``maxdim``, ``threshold``, ``engine`` or ``n_jobs``.
    MissingDependencyError
        The engine's package is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> square = np.array([[0, 1, 2**.5, 1], [1, 0, 1, 2**.5],
    ...                    [2**.5, 1, 0, 1], [1, 2**.5, 1, 0]])
    >>> persistence(square)[1]
    array([[1.        , 1.41421356]])
    """
    A = validate_distance_matrix(D)
    maxdim = _check_maxdim(maxdim)
    threshold = check_threshold(threshold)
    eng = get_engine(engine=engine)
    n_jobs = _check_threads(n_jobs, A.shape[0])
    dgms = compute(A, maxdim, threshold, eng.name, n_jobs)
    return Diagram(dgms, maxdim=maxdim, threshold=threshold, engine=eng.name)


# ---------------------------------------------------------------------- batch
def _cost_ms(n: int, maxdim: int, engine: str) -> float:
    """Rough serial time of one matrix (fit to giotto-ph on JS matrices, 2 cores)."""
    if maxdim == 0:
        base = 0.05 * (n / 128.0) ** 2
    else:
        base = 16.0 * (n / 128.0) ** 3.7 * 6.0 ** (maxdim - 1)
    if engine == "gudhi":
        base *= 8.0
    elif engine == "ripser":
        base *= 1.5
    return 0.5 + base  # 0.5 ms: validation, ranks, Diagram


def _as_matrices(Ds: Any) -> list[np.ndarray]:
    Ds = _to_numpy(Ds)
    if isinstance(Ds, np.ndarray):
        if Ds.ndim < 3:
            raise InvalidMatrixError(
                f"Ds: expected a sequence of (n, n) matrices or an array of shape (..., n, n), "
                f"got an array of shape {Ds.shape}; for one matrix use persistence(D)"
            )
        if Ds.shape[-1] != Ds.shape[-2]:
            raise InvalidMatrixError(
                f"Ds: expected an array of shape (..., n, n), got shape {Ds.shape}"
            )
        flat = Ds.reshape((-1,) + Ds.shape[-2:])
        return [validate_distance_matrix(flat[i], name=f"Ds[{i}]") for i in range(flat.shape[0])]
    if isinstance(Ds, (str, bytes)) or not hasattr(Ds, "__iter__"):
        raise InvalidMatrixError(
            f"Ds: expected a sequence of (n, n) matrices or an array of shape (..., n, n), "
            f"got {type(Ds).__name__}"
        )
    return [validate_distance_matrix(D, name=f"Ds[{i}]") for i, D in enumerate(Ds)]


def _check_n_jobs(n_jobs: Any) -> int:
    cpus = os.cpu_count() or 1
    if n_jobs is None or (is_int(n_jobs) and n_jobs == -1):
        return cpus
    if not is_int(n_jobs) or n_jobs < 1:
        raise InvalidInputError(
            f"n_jobs must be None (all CPUs), -1 (all CPUs) or an int >= 1, got {n_jobs!r}"
        )
    return int(n_jobs)


def _chunks(costs: list[float], n_workers: int) -> list[list[int]]:
    """Group task indices, largest first, into ~4 chunks per worker of similar cost."""
    order = sorted(range(len(costs)), key=lambda i: -costs[i])
    target = max(sum(costs) / (4 * n_workers), 5.0)
    chunks: list[list[int]] = []
    cur: list[int] = []
    acc = 0.0
    for i in order:
        cur.append(i)
        acc += costs[i]
        if acc >= target:
            chunks.append(cur)
            cur, acc = [], 0.0
    if cur:
        chunks.append(cur)
    return chunks


def persistence_batch(
    Ds: Any,
    *,
    maxdim: int = 1,
    threshold: float = float("inf"),
    engine: str | None = None,
    n_jobs: int | None = None,
    progress: ProgressOption = False,
) -> list[Diagram]:
    """Persistence diagrams of many distance matrices, in parallel processes.

    Parameters
    ----------
    Ds : sequence of array-like of shape (n_i, n_i), or ndarray of shape (..., n, n)
        Matrices (sizes may differ in a sequence); an array is flattened in C
        order over its leading dimensions, e.g. ``(L, H, n, n)`` gives
        ``L * H`` diagrams, layer-major.  Every matrix is validated first, in
        this process; errors name the index (``Ds[i]``).
    maxdim, threshold, engine
        As in :func:`persistence`.
    n_jobs : int, optional
        Worker processes: ``None`` or ``-1`` = all CPUs, capped by the number of
        matrices; ``1`` = serial, in this process, one thread.
    progress : bool, callable or None, default False
        Report the matrices done (per stack of ~50 ms of same-size matrices serially, per
        chunk of matrices with the worker pool): ``True`` a bar, ``None`` a bar on a terminal or in
        Jupyter, or a callback ``callback(done, total, stage)`` (see :mod:`attntopo._progress`).

    Returns
    -------
    list of Diagram
        One per matrix, in input order; identical to ``persistence`` of each.

    Notes
    -----
    Workers are separate interpreters started once and reused (see
    ``attntopo.topology._pool``): safe after torch is imported, no
    ``__main__`` guard needed, one thread each.  The pool is used only when the
    estimated serial work exceeds ~20 ms (pool running) or ~400 ms (pool to be
    started, ~0.3 s); otherwise the batch runs serially in this process.  If
    the pool cannot be started a warning is issued and the batch runs serially.
    Measured on 2 cores (one busy with another job): 72 JS matrices with
    n=128, H0+H1: 1.33 s serial, 0.73 s with the pool running, 0.92 s when the
    call also starts it; 72 matrices of n=20: 54 ms serial, 44 ms pooled.
    """
    # settings first (their errors come before any matrix's), then every matrix
    _check_maxdim(maxdim)
    check_threshold(threshold)
    get_engine(engine=engine)
    _check_n_jobs(n_jobs)
    mats = _as_matrices(Ds)
    with make_reporter(progress, total=len(mats), description="persistence") as reporter:
        return persistence_batch_valid(mats, maxdim, threshold, engine, n_jobs, progress=reporter)


def persistence_batch_valid(
    mats: list[np.ndarray],
    maxdim: int = 1,
    threshold: float = float("inf"),
    engine: str | None = None,
    n_jobs: int | None = None,
    *,
    progress: ProgressOption = False,
) -> list[Diagram]:
    """:func:`persistence_batch` for matrices already known to be valid distance matrices.

    ``mats``: float64 ``(n, n)`` arrays as :func:`validate_distance_matrix` returns them
    (e.g. straight from :func:`attntopo.distances.token_distances`, which guarantees
    finite, non-negative, exactly symmetric matrices with a zero diagonal); they are not
    checked again, which matters for thousands of small matrices.  ``progress``: as in
    :func:`persistence_batch` (an open reporter advances by one per matrix).
    """
    maxdim = _check_maxdim(maxdim)
    threshold = check_threshold(threshold)
    eng = get_engine(engine=engine)
    one_thread = n_jobs == 1
    n_jobs = _check_n_jobs(n_jobs)
    if not mats:
        return []
    with make_reporter(progress, total=len(mats), description="persistence") as reporter:
        reporter.stage("persistence")
        return _batch(mats, maxdim, threshold, eng, n_jobs, one_thread, reporter)


def _stacks(idx: list[int], mats: list[np.ndarray]) -> list[list[int]]:
    """``idx`` grouped by matrix size, in order of first appearance."""
    groups: dict[int, list[int]] = {}
    for i in idx:
        groups.setdefault(mats[i].shape[0], []).append(i)
    return list(groups.values())


def _batch(
    mats: list[np.ndarray],
    maxdim: int,
    threshold: float,
    eng: Any,
    n_jobs: int,
    one_thread: bool,
    reporter: Any,
) -> list[Diagram]:
    """Diagrams of valid matrices: same-size matrices go to the engines as one stack
    (``engines.compute_many``), in cost-balanced chunks on the pool or, serially, in stacks
    of ~50 ms (so that progress moves)."""
    n_jobs = min(n_jobs, len(mats))
    costs = [_cost_ms(A.shape[0], maxdim, eng.name) for A in mats]
    total = sum(costs)
    results: list[Any] = [None] * len(mats)
    use_pool = n_jobs > 1 and total >= (_WARM_MIN_MS if _pool.pool_size() >= 2 else _COLD_MIN_MS)
    if use_pool:
        chunks = [_stacks(c, mats) for c in _chunks(costs, n_jobs)]
        # the matrices themselves travel (references here, no copy); the worker condenses them
        jobs = [
            [([mats[i] for i in g], mats[g[0]].shape[0], maxdim, threshold, eng.name, 1) for g in c]
            for c in chunks
        ]
        try:
            out = _pool.run_chunks(jobs, n_jobs, reporter.advance if reporter.enabled else None)
        except _pool.PoolStartError as exc:
            warnings.warn(
                f"persistence_batch: could not start worker processes ({exc}); running serially",
                RuntimeWarning,
                stacklevel=4,
            )
            use_pool = False
        else:
            for c, res in zip(chunks, out):
                for i, r in zip((i for g in c for i in g), res):
                    results[i] = r
    if not use_pool:
        for g in _stacks(list(range(len(mats))), mats):
            n = mats[g[0]].shape[0]
            threads = 1 if one_thread else default_threads(n)
            step = max(1, int(50.0 / _cost_ms(n, maxdim, eng.name)))
            for s in range(0, len(g), step):
                part = g[s : s + step]
                for i, r in zip(
                    part,
                    compute_many(
                        condense([mats[i] for i in part]), n, maxdim, threshold, eng.name, threads
                    ),
                ):
                    results[i] = r
                reporter.advance(len(part))
    # engines.compute_many returns sorted, checked float64 arrays: wrapped without a copy
    return [Diagram._from_engine(r, threshold, eng.name) for r in results]
