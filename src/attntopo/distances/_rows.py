"""The public distance functions and the chunked driver they share (:func:`_distances`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .._progress import NO_PROGRESS, ProgressOption, Reporter, make_reporter
from .._threads import torch_threads
from .._validation import check_indices, check_metric, check_paper_compat
from ..constants import PaperMode
from ..errors import InvalidInputError, InvalidMatrixError
from ._checks import _as_tensor, _as_vector, _check_base, _check_settings, _prepare, _validate
from ._js import _js_native, _mirror_chosen_, _native_lib
from ._registry import DISTANCES
from ._workers import _Workers

__all__ = ["token_distances", "row_distances", "pairwise_distance"]


def token_distances(
    att: Any,
    *,
    metric: str = "jensen_shannon",
    base: float = 2.0,
    paper_compat: PaperMode | bool | None = False,
    chunk_elements: int | None = None,
    dtype: torch.dtype = torch.float64,
    n_jobs: int | None = None,
    progress: ProgressOption = False,
) -> np.ndarray:
    """Distances between the rows of attention matrices, for every pair of rows of every matrix.

    Metrics, their formulas, accuracy and speed: :mod:`attntopo.distances`; the paper's
    recipes: docs/concepts.md.

    Parameters
    ----------
    att : Attention, array_like or torch.Tensor of shape (..., n, n)
        An :class:`Attention` (its ``weights``, ``(L, H, n, n)``) or matrices with any number
        of leading dimensions.  Row ``i`` is query ``i``'s distribution over the keys:
        entries ``>= 0`` (down to ``-1e-6`` clipped as round-off), rows summing to 1 within
        ``1e-3`` (rescaled in float64; within ``1e-13`` used as given).  Never modified.
    metric : str, default "jensen_shannon"
        A key of :data:`~attntopo.distances.DISTANCES`.
    base : float, default 2.0
        Logarithm base of Jensen–Shannon, finite and > 1: distances in ``[0, 1]`` for 2, in
        ``[0, sqrt(ln 2)]`` for ``e``.  Ignored by the other metrics and the paper modes.
    paper_compat : {False, None, "notebook", "listing"}, default False
        The founding paper's Jensen–Shannon recipes (a reproduction aid, never the default;
        ``metric="jensen_shannon"`` only): rows softmaxed again, natural log, and scipy's
        distance (``"listing"``, in ``[0, sqrt(ln 2)]``) or its square root (``"notebook"``,
        a fourth root of the divergence, in ``[0, (ln 2)^¼]``).  False/None: attntopo's own.
    chunk_elements : int, optional
        Budget for temporary arrays, in elements of ``dtype`` (default ``2**26``, ≈ 0.5 GiB
        of float64); the result does not depend on it.
    dtype : torch.dtype, default torch.float64
        Precision of the bulk computation (float64: ~1e-12; float32: ~1e-5, worth it only
        where the C kernel does not run, e.g. a GPU).  Close pairs are always recomputed in
        float64; the output is float64 either way.
    n_jobs : int, optional
        Worker threads for this call (default: ``torch.get_num_threads()``); torch itself
        runs on one thread during the call.
    progress : bool, callable or None, default False
        Report the matrices done: ``True`` a bar, ``None`` a bar on a terminal or in Jupyter,
        or ``callback(done, total, stage)`` (:mod:`attntopo._progress`).

    Returns
    -------
    ndarray of shape (..., n, n), float64
        ``out[..., i, j]``: the distance between rows ``i`` and ``j`` of one matrix.  Exactly
        symmetric, exactly 0 on the diagonal and between identical rows, never NaN.

    Raises
    ------
    InvalidInputError
        Unknown ``metric`` or ``paper_compat``, a paper mode with another metric, bad
        ``base``, ``chunk_elements``, ``dtype`` or ``n_jobs``, non-numeric input.
    InvalidMatrixError
        Input not ``(..., n, n)``, NaN/inf, negative entries, rows not summing to 1.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1.0, 0.0], [0.5, 0.5]])
    >>> token_distances(a).round(4)
    array([[0.    , 0.5579],
           [0.5579, 0.    ]])
    """
    metric, base, budget, threads = _check_settings(
        metric, base, chunk_elements, dtype, n_jobs, DISTANCES
    )
    paper_compat = check_paper_compat(paper_compat)
    if paper_compat and metric != "jensen_shannon":
        raise InvalidInputError(
            f"paper_compat={paper_compat!r} reproduces the paper's Jensen–Shannon recipe only; "
            f"use metric='jensen_shannon' (got metric={metric!r})"
        )

    x = _as_tensor(att)
    if x.ndim < 2:
        raise InvalidMatrixError(
            f"attention must have shape [..., n, n] (at least 2-D); got shape {tuple(x.shape)}"
        )
    if x.shape[-1] != x.shape[-2]:
        raise InvalidMatrixError(
            "attention matrices must be square [..., n, n]; "
            f"got last two dims {tuple(x.shape[-2:])}"
        )
    n_mats = math.prod(x.shape[:-2])
    with make_reporter(progress, total=n_mats, description="distances") as reporter:
        reporter.stage("distances")
        return _distances(
            x, metric, base, paper_compat, budget, dtype, threads, "attention", reporter
        )


def _distances(
    x: torch.Tensor,
    metric: str,
    base: float,
    paper_compat: str | None,
    budget: int,
    dtype: torch.dtype,
    threads: int | None,
    noun: str,
    reporter: Reporter = NO_PROGRESS,
    as_tensor: bool = False,
    rows: np.ndarray | None = None,
    nearest: int = 0,
) -> Any:
    """Distances between the rows of each ``(m, k)`` matrix of ``x`` (``(..., m, k)``, checked
    settings): the common body of :func:`token_distances` and :func:`row_distances`
    (``as_tensor``: a float64 tensor on ``x``'s device instead of an array).
    ``paper_compat`` is a checked mode (``"notebook"``, ``"listing"``) or ``None``.

    Returns ``(..., m, m)`` float64.  ``noun`` names the input in error messages;
    ``reporter`` advances by the matrices of each chunk done.  ``rows``:
    checked distinct int64 row indices; only the distances from them to all rows,
    ``(..., len(rows), m)``, the same numbers as those rows of the full result;
    ``nearest``: see :func:`token_distances_tensor`.
    """
    lead, m, k = tuple(x.shape[:-2]), int(x.shape[-2]), int(x.shape[-1])
    r = m if rows is None else int(rows.size)
    out_t = None
    if as_tensor:
        out_t = torch.empty(lead + (r, m), dtype=torch.float64, device=x.device)
        out = out_t.numpy() if x.device.type == "cpu" else None
    else:
        out = np.empty(lead + (r, m), dtype=np.float64)
    if math.prod(lead) * r * m == 0:
        reporter.advance(math.prod(lead))
        return out_t if as_tensor else out
    if k == 0:
        raise InvalidMatrixError(f"{noun}: rows have no entries (k = 0); distributions need one")
    x3 = x.reshape(-1, m, k)
    batch = x3.shape[0]
    out3 = out.reshape(batch, r, m) if out is not None else None

    on_cpu = x3.device.type == "cpu"
    n_workers = (threads or torch.get_num_threads()) if on_cpu else 1
    dist = DISTANCES[metric]
    lib = _native_lib(dtype, x3) if dist.native else None
    with torch.no_grad(), torch_threads(1 if on_cpu else threads), _Workers(n_workers) as workers:
        # one cheap pass: validation, and (for the torch JS path) the union of the rows' supports
        need_support = dist.support and lib is None
        support, nonneg = _validate(x3, lead, paper_compat, budget, need_support, noun)
        if lib is not None:
            _js_native(
                x3,
                out3,
                paper_compat,
                nonneg,
                base,
                budget,
                workers,
                lib,
                reporter,
                rows,
                nearest if rows is not None else 0,
            )
            return out_t if as_tensor else out
        out3_t = out_t.reshape(batch, r, m) if out_t is not None else torch.from_numpy(out3)
        per = max(1, min(batch, budget // (2 * r * m + 6 * m * k)))
        for h0 in range(0, batch, per):
            P = _prepare(x3[h0 : h0 + per], paper_compat, nonneg)  # float64, rows sum to 1
            if rows is not None:
                rows_t = torch.from_numpy(rows)
                if dist.cross is not None:
                    D = dist.finish(
                        dist.cross(P, rows_t, dtype, budget, support, workers), base, paper_compat
                    )
                    _mirror_chosen_(D, rows_t)
                else:  # the full matrices' chosen rows
                    D = dist.finish(
                        dist.block(P, dtype, budget, support, workers), base, paper_compat
                    )
                    full = torch.empty_like(D)
                    _symmetrize_into(D, full)
                    D = full.index_select(-2, rows_t.to(full.device))
                out3_t[h0 : h0 + per].copy_(D)
                reporter.advance(P.shape[0])
                continue
            D = dist.finish(dist.block(P, dtype, budget, support, workers), base, paper_compat)
            _symmetrize_into(D, out3_t[h0 : h0 + per])
            reporter.advance(P.shape[0])
    return out_t if as_tensor else out


def token_distances_tensor(
    x: Any,
    *,
    metric: str = "jensen_shannon",
    rows: Any = None,
    dtype: torch.dtype = torch.float64,
    nearest: int = 0,
) -> torch.Tensor:
    """:func:`token_distances` (Jensen–Shannon with base 2 by default) of a tensor, as a
    float64 tensor on its device: the distances of a CUDA tensor stay on the GPU (for the
    minimum spanning trees of :func:`attntopo.topology.prim_edges`), a CPU tensor's share the
    C kernel's output.

    x : torch.Tensor or array of shape (..., n, n), rows distributions (checked as there).
    metric : a key of :data:`~attntopo.distances.DISTANCES`.
    rows : sequence of int, optional
        Only the distances from these tokens (distinct; negative count from the end) to every
        token: ``r·n`` pairs instead of ``n²/2`` (the prompt score needs the response's rows
        alone).  The result is then ``out[..., a, j] = D[..., rows[a], j]``, the same numbers
        as those rows of the full matrix (the same bits with the C kernel; a distance without a
        kernel for chosen rows, ``Distance.cross``, computes the full matrices).
    nearest : int, default 0
        With ``rows``: of the tokens before ``nearest`` that are not in ``rows``, only each
        row's nearest one is wanted (its distance, the minimum over them: the prompt score's
        nearest prompt token).  The C kernel then skips the pairs that a lower bound (the
        row's mass on keys the other row cannot reach; then Pinsker's, from the rows' L1
        distance) shows are farther than one already found, and leaves them at the largest
        distance (1); the minimum is the same bits.
        Other paths compute every pair.
    Returns a torch.Tensor of shape (..., n, n), or (..., len(rows), n), float64, on ``x``'s
    device.
    """
    metric, base, budget, threads = _check_settings(metric, 2.0, None, dtype, None, DISTANCES)
    t = _as_tensor(x)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise InvalidMatrixError(
            f"attention must have shape [..., n, n]; got shape {tuple(t.shape)}"
        )
    chosen = None
    if rows is not None:
        n = int(t.shape[-1])
        if hasattr(rows, "tolist"):
            rows = rows.tolist()
        if isinstance(rows, (list, tuple)) and not rows:
            chosen = np.zeros(0, dtype=np.int64)
        else:
            chosen = np.array(
                check_indices(rows, n, "row", name="rows", owner="the matrix"), dtype=np.int64
            )
    return _distances(
        t,
        metric,
        base,
        None,
        budget,
        dtype,
        threads,
        "attention",
        as_tensor=True,
        rows=chosen,
        nearest=max(0, int(nearest)),
    )


def row_distances(
    x: Any,
    *,
    metric: str = "jensen_shannon",
    base: float = 2.0,
    chunk_elements: int | None = None,
    dtype: torch.dtype = torch.float64,
    n_jobs: int | None = None,
) -> np.ndarray:
    """Distances between the rows of each matrix of a stack; matrices need not be square.

    The same numbers, accuracy and speed as :func:`token_distances` (which is the square
    case), for stacks of shape ``(..., m, k)``: ``m`` distributions over ``k`` outcomes
    per matrix.  :func:`attntopo.analyses.head_distances` uses it with the heads as
    rows: for one query token, the ``L·H`` heads' attention rows over the keys.

    Parameters
    ----------
    x : array_like or torch.Tensor of shape (..., m, k)
        Rows are probability distributions: entries ``>= 0`` (down to ``-1e-6`` clipped),
        rows summing to 1 within ``1e-3`` (rescaled exactly as in :func:`token_distances`).
    metric : str, default "jensen_shannon"
        A key of :data:`~attntopo.distances.DISTANCES` (see :func:`token_distances`).
    base : float, default 2.0
        Logarithm base of the Jensen–Shannon divergence (> 1).
    chunk_elements, dtype, n_jobs
        As in :func:`token_distances`.  Keys that no row of the whole input uses are skipped
        (JS); the result does not depend on ``chunk_elements``.

    Returns
    -------
    ndarray of shape (..., m, m), float64
        ``out[..., a, b]`` is the distance between rows ``a`` and ``b`` of the same matrix:
        exactly symmetric, exactly 0 on the diagonal, never NaN.

    Raises
    ------
    InvalidInputError
        Bad ``metric``, ``base``, ``chunk_elements``, ``dtype`` or ``n_jobs``.
    InvalidMatrixError
        Input with fewer than 2 dimensions, NaN/inf, negative entries or rows that do not
        sum to 1.
    """
    metric, base, budget, threads = _check_settings(
        metric, base, chunk_elements, dtype, n_jobs, DISTANCES
    )
    t = _as_tensor(x)
    if t.ndim < 2:
        raise InvalidMatrixError(
            f"rows must come as a stack of shape [..., m, k] (at least 2-D); got {tuple(t.shape)}"
        )
    return _distances(t, metric, base, None, budget, dtype, threads, "input")


def pairwise_distance(
    p: Any, q: Any, *, metric: str = "jensen_shannon", base: float = 2.0
) -> float:
    """Distance between two distributions, reference implementation in NumPy.

    Straightforward, accurate float64 formulas for one pair; used by the tests
    and handy in documentation.  :func:`token_distances` gives the same numbers
    for all pairs at once.

    Parameters
    ----------
    p, q : array_like of shape (n,)
        Probability vectors: entries ``>= 0`` (down to ``-1e-6`` clipped), each
        summing to 1 within ``1e-3`` (renormalized exactly).
    metric : str, default "jensen_shannon"
        A key of :data:`~attntopo.distances.DISTANCES` (see :func:`token_distances`).
    base : float, default 2.0
        Logarithm base for ``"jensen_shannon"``; a finite number > 1.

    Returns
    -------
    float
        The distance, in ``[0, DISTANCES[metric].upper]`` (JS with base 2).
    """
    metric = check_metric(metric, DISTANCES)
    base = _check_base(base)
    pv = _as_vector(p, "p")
    qv = _as_vector(q, "q")
    if pv.shape != qv.shape:
        raise InvalidInputError(
            f"p and q must have the same length; got {pv.shape[0]} and {qv.shape[0]}"
        )
    return DISTANCES[metric].reference(pv, qv, base)


def _symmetrize_into(D: torch.Tensor, out: torch.Tensor) -> None:
    """``out = U + Uᵀ`` with ``U`` the strict upper triangle of ``D`` (``D`` is overwritten).

    Exactly symmetric, zero diagonal; one pass fewer than mirroring in place and copying.
    """
    D.triu_(1)
    if out.device == D.device and out.dtype == D.dtype:
        torch.add(D, D.transpose(-1, -2), out=out)
    else:
        out.copy_(torch.add(D, D.transpose(-1, -2)))
