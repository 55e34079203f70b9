"""Distances between attention rows: each token becomes a point of a metric space.

Row ``i`` of an attention matrix is query token ``i``'s probability distribution
over the keys.  :func:`token_distances` measures how far apart two such rows are,
for every pair of rows and for every head at once, and returns the
``[..., n, n]`` distance matrices that the persistence engines consume.

Metrics (``p``, ``q`` are two rows; all logarithms below are natural unless said):

``"jensen_shannon"`` (default)
    ``sqrt(JS(p, q) / ln(base))`` with ``JS = ½ KL(p‖m) + ½ KL(q‖m)``,
    ``m = (p + q) / 2``.  The square root of the Jensen–Shannon divergence is a
    true metric; with ``base=2`` it lies in ``[0, 1]``.  Same numbers as
    ``scipy.spatial.distance.jensenshannon(p, q, base=base)``.
``"hellinger"``
    ``sqrt(1 - Σ sqrt(p q)) = ‖sqrt(p) - sqrt(q)‖₂ / sqrt(2)``, the normalized
    Hellinger distance, in ``[0, 1]``.
``"fisher_rao"``
    ``2 arccos(Σ sqrt(p q))``, the Fisher–Rao geodesic distance on the
    probability simplex (twice the Bhattacharyya angle), in ``[0, π]``.
``"total_variation"``
    ``½ Σ |p - q|``, in ``[0, 1]``.

Accuracy.  Everything is computed in float64 by default.  The Jensen–Shannon
matrix is first computed with one logarithm per element
(``JS = ln 2 + ½ Σ p ln p + ½ Σ q ln q − ½ Σ (p+q) ln(p+q)``), which loses
relative accuracy when two rows are nearly identical (the divergence is then a
small difference of sums of order 1; scipy's formula has the same problem and
even returns NaN there).  Every pair whose fast divergence is below 1e-6 nats is
recomputed with a cancellation-free form (``JS = ¼ Σ (p+q) φ((p−q)/(p+q))``,
``φ(d) = (1+d) ln(1+d) + (1−d) ln(1−d) = 2d atanh(d) + log1p(−d²) ≥ 0``), so
near-identical rows get distances with a relative error of about 1e-15, the
worst case (just above the cutoff) is about 1e-11, and identical rows get
exactly 0.  (Real attention rarely has such pairs; if every pair needs it, the
call is about 6× slower.)  Hellinger and Fisher–Rao use one matrix product
of square-rooted rows and recompute close pairs from
``sqrt p − sqrt q = (p − q) / (sqrt p + sqrt q)`` in the same way.

Speed.  The Jensen–Shannon work is ``n³/2`` logarithms per matrix (``u ln u`` for
every pair of rows and every key).  On the CPU in float64 (the default) it runs in
attntopo's C kernel (:mod:`attntopo._native`: one fused loop per matrix with a
vectorized logarithm within 1 ulp, AVX2+FMA where the CPU has it), one matrix per
worker thread, skipping for each pair the keys where both rows are 0 (for causal
attention about 3× less work).  Without the kernel (not built, ``ATTNTOPO_NATIVE=0``,
``dtype=torch.float32`` or tensors on a GPU) a pure-torch path computes the same
numbers in cache-sized tiles; the logarithm is then most of the time and the whole
step about 3× slower on the CPU.
"""

from __future__ import annotations

import contextlib
import math
import threading
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from attntopo import _native
from attntopo._progress import NO_PROGRESS, ProgressOption, Reporter, make_reporter
from attntopo._validation import check_metric, check_number, check_paper_compat, check_positive_int
from attntopo.constants import PaperMode
from attntopo.errors import InvalidInputError, InvalidMatrixError

__all__ = ["METRICS", "token_distances", "pairwise_distance"]

#: Names accepted by ``metric=``.
from attntopo.constants import METRICS  # noqa: E402  (defined torch-free for the CLI)

_DEFAULT_CHUNK_ELEMENTS = 1 << 26  # ≈ 0.5 GiB of float64 temporaries
_TILE_TARGET = 1 << 18  # elements per JS tile: amortizes Python overhead, stays near the cache
_GROUP = 16  # rows per support group (joint-support restriction of the JS tiles)
_STRIP_ROWS = 4  # rows i per JS tile (pairs i > j inside a tile are wasted work: ~_STRIP_ROWS / 2n)
_NEG_TOL = 1e-6  # entries down to -_NEG_TOL are round-off and clipped to 0
_SUM_TOL = 1e-3  # rows must sum to 1 within this tolerance
_RENORM_TOL = 1e-13  # rows summing to 1 within this are not rescaled
_JS_CUTOFF = {torch.float64: 1e-6, torch.float32: 1e-4}  # nats; below: recompute accurately
_H2_CUTOFF = {torch.float64: 1e-6, torch.float32: 1e-4}  # 1 - BC; below: recompute accurately
_TINY = {torch.float64: 1e-300, torch.float32: 1e-30}  # stands in for exact zeros inside log
_LN2 = math.log(2.0)
_SERIES_D = 0.1  # |d| below this: power series of φ(d) (NumPy reference)
_SERIES_TERMS = 9  # d**18 relative to d**2 is < 1e-16 for |d| < 0.1
_REFINE_ELEMENTS = 1 << 16  # elements per refinement step (pairs × n)


# ----------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------


def token_distances(
    att: Any,
    metric: str = "jensen_shannon",
    *,
    base: float = 2.0,
    paper_compat: PaperMode | bool | None = False,
    chunk_elements: int | None = None,
    dtype: torch.dtype = torch.float64,
    n_threads: int | None = None,
    progress: ProgressOption = False,
) -> np.ndarray:
    """Distances between the rows of attention matrices.

    Parameters
    ----------
    att : Attention or array_like or torch.Tensor
        Either an object with a ``.weights`` attribute (the :class:`Attention`
        container, weights of shape ``(L, H, n, n)``) or an array / tensor /
        nested list of shape ``(..., n, n)`` with any number (including zero) of
        leading batch dimensions.  Row ``i`` of each matrix is query ``i``'s
        distribution over the keys: entries ``>= 0`` (down to ``-1e-6`` is
        accepted as round-off and clipped) and rows summing to 1 within
        ``1e-3``.  Rows are rescaled to sum to 1 in float64, as
        :func:`scipy.spatial.distance.jensenshannon` does (rows already within
        ``1e-13`` of 1 are used as given, so that rescaling never swamps the
        difference between two nearly identical rows).  Exact zeros are fine
        (``0 · log 0 = 0``).  The input is never modified.
    metric : {"jensen_shannon", "hellinger", "fisher_rao", "total_variation"}
        Distance between two rows ``p`` and ``q`` (see the module docstring):

        - ``"jensen_shannon"``: ``sqrt(JS divergence)`` with logarithm base
          ``base``; in ``[0, 1]`` for ``base=2``, in ``[0, sqrt(ln 2)]`` for
          ``base=e``.  A true metric.
        - ``"hellinger"``: ``sqrt(1 - Σ sqrt(p q))``, equal to
          ``‖sqrt(p) - sqrt(q)‖₂ / sqrt(2)``; in ``[0, 1]``.
        - ``"fisher_rao"``: ``2 arccos(Σ sqrt(p q))``; in ``[0, π]``.  Computed as
          the equal ``4 arcsin(hellinger / sqrt(2))``, which stays accurate
          for close rows where ``arccos`` near 1 does not.
        - ``"total_variation"``: ``½ Σ |p - q|``; in ``[0, 1]``.
    base : float, default 2.0
        Logarithm base of the Jensen–Shannon divergence; a finite number > 1
        (bases in ``(0, 1)`` would make the divergence negative).  Only used
        by ``"jensen_shannon"`` (ignored by the other metrics and by the
        paper modes, which always use the natural log).
    paper_compat : {False, None, "notebook", "listing"}, default False
        Reproduce one of the founding paper's two recipes instead of the
        recommended metric (a reproduction aid, never the default).  Both pass
        every row through a softmax *again* (``exp(A) / Σ exp(A)`` over all
        keys, masked/future keys included) and use the natural log:

        - ``"listing"``: the paper's printed Listing 1, scipy's distance, the
          square root of the divergence:
          ``scipy.spatial.distance.jensenshannon(softmax(p), softmax(q))``;
          in ``[0, sqrt(ln 2)]``.
        - ``"notebook"``: the author's published notebooks
          (``persistent_homology_of_attention``), which take ``np.sqrt`` of that
          again, a fourth root of the divergence:
          ``sqrt(jensenshannon(softmax(p), softmax(q)))``; in ``[0, (ln 2)^¼]``.
        - ``False`` / ``None``: attntopo's own distance (``base``, no softmax).
        - ``True``: deprecated alias of ``"notebook"`` (DeprecationWarning).

        The extra softmax flattens the rows and gives masked (future) keys
        weight again, so distances shrink with length.  Two one-hot rows, at
        natural-log JS distance ``sqrt(ln 2) = 0.833``, are at 0.218
        (``"listing"``) after the softmax for ``n=7`` (0.099 for ``n=40``,
        0.058 for ``n=120``), and the notebook's extra square root turns that
        into 0.466 (0.315, 0.241).  Only valid with
        ``metric="jensen_shannon"``; any finite input is accepted.  The
        notebooks compute in float32 and get NaN for nearly identical rows;
        this computes in float64 (docs/concepts.md).
    chunk_elements : int, optional
        Budget, in elements of ``dtype``, for temporary arrays (besides the
        input and the output).  Default ``2**26`` (≈ 0.5 GiB of float64).  The
        result does not depend on it.  A few ``n × n`` matrices per head are
        always needed, whatever the budget.
    dtype : torch.dtype, default torch.float64
        Precision of the bulk computation: ``torch.float64`` (distances accurate
        to ~1e-12 or better) or ``torch.float32`` (~1e-5; worth it only where the C
        kernel does not run, e.g. on a GPU: on the CPU the float64 kernel is faster
        than the float32 torch path).  Close pairs are always recomputed in
        float64; the output is float64 either way.
    n_threads : int, optional
        Number of worker threads for this call; default: torch's current
        ``torch.get_num_threads()``.  The work is split into independent
        tiles run by that many Python threads, each doing single-threaded
        torch operations (robust when the cores are shared with other work);
        torch's own thread count is set to 1 during the call and restored
        afterwards.
    progress : bool, callable or None, default False
        Report the matrices done, per chunk of matrices: ``True`` a bar, ``None`` a bar
        on a terminal or in Jupyter, or a callback ``callback(done, total, stage)`` (see
        :mod:`attntopo._progress`).

    Returns
    -------
    ndarray of shape (..., n, n), float64
        ``out[..., i, j]`` is the distance between rows ``i`` and ``j`` of the
        same matrix.  Exactly symmetric, exactly 0 on the diagonal and between
        identical rows, never NaN.

    Raises
    ------
    InvalidInputError
        Unknown ``metric``, bad ``base``, unknown ``paper_compat`` or a paper mode
        with another metric,
        bad ``chunk_elements``, ``dtype`` or ``n_threads``, non-numeric input.
    InvalidMatrixError
        Input that is not ``(..., n, n)``, has NaN/inf, negative entries, or
        rows that do not sum to 1.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1.0, 0.0], [0.5, 0.5]])
    >>> token_distances(a).round(4)
    array([[0.    , 0.5579],
           [0.5579, 0.    ]])
    """
    metric, base, budget, threads = _check_settings(metric, base, chunk_elements, dtype, n_threads)
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
        return _distances(x, metric, base, paper_compat, budget, dtype, threads, "attention",
                          reporter)


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
) -> np.ndarray:
    """Distances between the rows of each ``(m, k)`` matrix of ``x`` (``(..., m, k)``, checked
    settings): the common body of :func:`token_distances` and :func:`row_distances`.
    ``paper_compat`` is a checked mode (``"notebook"``, ``"listing"``) or ``None``.

    Returns ``(..., m, m)`` float64.  ``noun`` names the input in error messages;
    ``reporter`` advances by the matrices of each chunk done.
    """
    lead, m, k = tuple(x.shape[:-2]), int(x.shape[-2]), int(x.shape[-1])
    out = np.empty(lead + (m, m), dtype=np.float64)
    if out.size == 0:
        reporter.advance(math.prod(lead))
        return out
    if k == 0:
        raise InvalidMatrixError(f"{noun}: rows have no entries (k = 0); distributions need one")
    x3 = x.reshape(-1, m, k)
    batch = x3.shape[0]
    out3 = out.reshape(batch, m, m)

    on_cpu = x3.device.type == "cpu"
    n_workers = (threads or torch.get_num_threads()) if on_cpu else 1
    lib = _native_lib(dtype, x3) if metric == "jensen_shannon" else None
    with torch.no_grad(), _torch_threads(1 if on_cpu else threads), _Workers(n_workers) as workers:
        # one cheap pass: validation, and (for the torch JS path) the union of the rows' supports
        need_support = metric == "jensen_shannon" and lib is None
        support, nonneg = _validate(x3, lead, paper_compat, budget, need_support, noun)
        if lib is not None:
            _js_native(x3, out3, paper_compat, nonneg, base, budget, workers, lib, reporter)
            return out
        out3_t = torch.from_numpy(out3)
        per = max(1, min(batch, budget // (2 * m * m + 6 * m * k)))
        for h0 in range(0, batch, per):
            P = _prepare(x3[h0 : h0 + per], paper_compat, nonneg)  # float64, rows sum to 1
            if metric == "jensen_shannon":
                D = _js_block(P, dtype, budget, support, workers)
            elif metric in ("hellinger", "fisher_rao"):
                D = _hellinger_block(P, dtype, budget, workers)
            else:
                D = _tv_block(P, dtype, budget, workers)
            _finish_(D, metric, base, paper_compat)
            _symmetrize_into(D, out3_t[h0 : h0 + per])
            reporter.advance(P.shape[0])
    return out


def pairwise_distance(p: Any, q: Any, metric: str = "jensen_shannon", base: float = 2.0) -> float:
    """Distance between two distributions, reference implementation in NumPy.

    Straightforward, accurate float64 formulas for one pair; used by the tests
    and handy in documentation.  :func:`token_distances` gives the same numbers
    for all pairs at once.

    Parameters
    ----------
    p, q : array_like of shape (n,)
        Probability vectors: entries ``>= 0`` (down to ``-1e-6`` clipped), each
        summing to 1 within ``1e-3`` (renormalized exactly).
    metric : {"jensen_shannon", "hellinger", "fisher_rao", "total_variation"}
        See :func:`token_distances`.
    base : float, default 2.0
        Logarithm base for ``"jensen_shannon"``; a finite number > 1.

    Returns
    -------
    float
        The distance (``[0, 1]`` for JS base 2, Hellinger and total variation;
        ``[0, π]`` for Fisher–Rao).
    """
    metric = check_metric(metric)
    base = _check_base(base)
    pv = _as_vector(p, "p")
    qv = _as_vector(q, "q")
    if pv.shape != qv.shape:
        raise InvalidInputError(
            f"p and q must have the same length; got {pv.shape[0]} and {qv.shape[0]}"
        )
    if metric == "jensen_shannon":
        js = 0.25 * float(np.sum(_phi_terms_np(pv, qv)))
        return math.sqrt(min(max(js, 0.0), _LN2) / math.log(base))
    if metric == "total_variation":
        return min(0.5 * float(np.sum(np.abs(pv - qv))), 1.0)
    r = np.sqrt(pv) + np.sqrt(qv)
    diff = (pv - qv) / np.where(r > 0, r, 1.0)  # = sqrt p − sqrt q, without cancellation
    h = min(math.sqrt(0.5 * float(np.sum(diff * diff))), 1.0)
    if metric == "hellinger":
        return h
    return min(4.0 * math.asin(h / math.sqrt(2.0)), math.pi)


# ----------------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------------


def _check_settings(
    metric: Any, base: Any, chunk_elements: Any, dtype: Any, n_threads: Any
) -> tuple[str, float, int, int | None]:
    """Checked ``(metric, base, budget, threads)`` of the public distance functions."""
    metric = check_metric(metric)
    base = _check_base(base)
    budget = check_positive_int(chunk_elements, "chunk_elements", _DEFAULT_CHUNK_ELEMENTS)
    if dtype not in (torch.float64, torch.float32):
        raise InvalidInputError(f"dtype must be torch.float64 or torch.float32; got {dtype!r}")
    threads = check_positive_int(n_threads, "n_threads", None)
    return metric, base, budget, threads


def _check_base(base: Any) -> float:
    return check_number(
        base, "base", lo=1.0, lo_open=True,
        hint="2 gives distances in [0, 1], math.e the natural log",
    )


def _as_tensor(att: Any) -> torch.Tensor:
    x = att.weights if hasattr(att, "weights") else att
    if isinstance(x, torch.Tensor):
        t = x.detach()
        if t.is_complex() or t.dtype == torch.bool:
            raise InvalidInputError(f"attention must hold real numbers; got torch dtype {t.dtype}")
        if not t.is_floating_point():
            t = t.to(torch.float64)
        return t
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as exc:
        detail = str(exc).replace("\n", " ")
        raise InvalidInputError(
            "attention must be an array of shape [..., n, n] "
            f"(ragged or non-numeric input): {detail}"
        ) from None
    if a.dtype.kind not in "fiu" or a.dtype == np.float16:
        if a.dtype == np.float16:
            a = a.astype(np.float32)
        else:
            raise InvalidInputError(f"attention must hold real numbers; got dtype {a.dtype}")
    if a.dtype.kind in "iu":
        a = a.astype(np.float64)
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    a = np.ascontiguousarray(a)
    with warnings.catch_warnings():  # read-only arrays are fine: the input is only read
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(a)


def _as_vector(v: Any, name: str) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=np.float64)
    except (ValueError, TypeError):
        raise InvalidInputError(f"{name} must be a 1-D array of real numbers") from None
    if a.ndim != 1 or a.size == 0:
        raise InvalidInputError(f"{name} must be a non-empty 1-D array; got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise InvalidMatrixError(
            f"{name} contains NaN or inf; only finite probabilities are allowed"
        )
    if np.min(a) < -_NEG_TOL:
        raise InvalidMatrixError(
            f"{name} has a negative entry ({np.min(a):.3g}); probabilities must be >= 0"
        )
    a = np.clip(a, 0.0, None)
    s = float(a.sum())
    if abs(s - 1.0) > _SUM_TOL:
        raise InvalidMatrixError(
            f"{name} sums to {s:.6g}, not 1 within {_SUM_TOL:g}; renormalize it (v / v.sum()) first"
        )
    return a / s if abs(s - 1.0) > _RENORM_TOL else a


@contextlib.contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


class _Workers:
    """Run independent tasks on ``n`` Python threads, each doing single-threaded torch ops.

    Torch releases the GIL inside its kernels, so threads give real parallelism.
    Coarse tasks pulled from a shared queue replace torch's per-operation OpenMP
    parallelism, whose barriers stall badly when the cores are also busy with
    other work (measured: 2 OpenMP threads 8-13× slower than 1 on a loaded
    2-core machine; 2 workers degrade gracefully).
    """

    def __init__(self, n: int) -> None:
        self.n = max(1, int(n))
        self._pool: ThreadPoolExecutor | None = None
        self.local = threading.local()  # per-thread scratch buffers

    def __enter__(self) -> _Workers:
        if self.n > 1:
            self._pool = ThreadPoolExecutor(
                self.n, initializer=torch.set_num_threads, initargs=(1,)
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def run(self, fn: Callable[[Any], None], tasks: list[Any]) -> None:
        """Call ``fn(task)`` for every task (in any order, possibly concurrently)."""
        if self._pool is None or len(tasks) <= 1:
            for task in tasks:
                fn(task)
            return
        it = iter(tasks)
        lock = threading.Lock()
        done = object()

        def drain() -> None:
            while True:
                with lock:
                    task = next(it, done)
                if task is done:
                    return
                fn(task)

        futures = [self._pool.submit(drain) for _ in range(min(self.n, len(tasks)))]
        for f in futures:
            f.result()

    def buffer(
        self, name: str, numel: int, dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        """A flat scratch tensor of at least ``numel`` elements owned by the calling thread."""
        buf = getattr(self.local, name, None)
        if buf is None or buf.numel() < numel or buf.dtype != dtype or buf.device != device:
            buf = torch.empty(numel, dtype=dtype, device=device)
            setattr(self.local, name, buf)
        return buf[:numel]


def _validate(
    x3: torch.Tensor,
    lead: tuple[int, ...],
    paper_compat: str | None,
    budget: int,
    need_support: bool,
    noun: str = "attention",
) -> tuple[torch.Tensor | None, bool]:
    """Check values chunk by chunk; return the (m, k) union of row supports (JS only)
    and whether no entry is negative.  ``noun`` names the input in messages."""
    batch, n, k = x3.shape
    step = max(1, min(batch, budget // max(1, 2 * n * k)))
    support = torch.zeros((n, k), dtype=torch.bool, device=x3.device) if need_support else None
    nonneg = True
    for h0 in range(0, batch, step):
        c = x3[h0 : h0 + step]
        lo_t, hi_t = torch.aminmax(c)  # NaN propagates; one pass instead of isfinite + min
        lo, hi = float(lo_t), float(hi_t)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise InvalidMatrixError(
                f"{noun} contains NaN or inf; only finite values are allowed"
            )
        if paper_compat:
            continue
        nonneg = nonneg and lo >= 0.0
        if lo < -_NEG_TOL:
            raise InvalidMatrixError(
                f"{noun} has a negative entry ({lo:.3g}); entries must be >= 0 "
                f"(down to -{_NEG_TOL:g} is clipped as round-off)"
            )
        sums = c.sum(-1, dtype=torch.float64)
        dev = (sums - 1.0).abs()
        worst = int(dev.argmax())
        if float(dev.reshape(-1)[worst]) > _SUM_TOL:
            s = float(sums.reshape(-1)[worst])
            matrix = tuple(int(i) for i in np.unravel_index(h0 + worst // n, lead)) if lead else ()
            where = f"matrix {matrix}, row {worst % n}" if lead else f"row {worst % n}"
            raise InvalidMatrixError(
                f"{noun} {where} sums to {s:.6g}, not 1 within {_SUM_TOL:g}; rows must be "
                f"probability distributions: renormalize them first (x / x.sum(-1, keepdims=True))"
            )
        if support is not None:
            if lo > 0.0:  # no zeros in this chunk: every key is in the support
                support.fill_(True)
            else:
                support |= (c > 0).any(0)
    if support is not None and paper_compat:
        support.fill_(True)  # softmax rows have no zeros
    return support, nonneg


def _prepare(xc: torch.Tensor, paper_compat: str | None, nonneg: bool = False) -> torch.Tensor:
    """Float64 copy of a chunk of matrices with rows that are distributions.

    ``nonneg``: the caller has checked that no entry is negative (the clamp is skipped).
    """
    P = xc.to(torch.float64, copy=True)
    if paper_compat:
        return torch.softmax(P, dim=-1)
    if not nonneg:
        P.clamp_(min=0.0)
    sums = P.sum(-1, keepdim=True)
    # rows already within round-off of 1 are used as given (dividing would perturb
    # near-identical rows by more than their difference); the others are rescaled
    off = (sums - 1.0).abs() > _RENORM_TOL
    if bool(off.any()):  # dividing by 1 changes nothing: skip the pass when no row is off
        P.div_(torch.where(off, sums, 1.0))
    return P



def _finish_(D: torch.Tensor, metric: str, base: float, paper_compat: str | None) -> torch.Tensor:
    """Turn a block's raw values into distances, in place.

    JS blocks hold the divergence in nats → ``sqrt(JS / ln base)`` (``"listing"``: the square
    root of the natural-log divergence; ``"notebook"``: its fourth root); Hellinger blocks hold H → Fisher–Rao is
    ``2 arccos(BC) = 4 arcsin(H / sqrt 2)``, accurate also for close rows; others are final.
    """
    if metric == "jensen_shannon":
        D.clamp_(0.0, _LN2)
        if paper_compat == "notebook":
            D.sqrt_().sqrt_()
        elif paper_compat == "listing":
            D.sqrt_()
        else:
            D.div_(math.log(base)).sqrt_()
    elif metric == "fisher_rao":
        D.mul_(1.0 / math.sqrt(2.0)).clamp_(0.0, 1.0).asin_().mul_(4.0)
        D.clamp_(0.0, math.pi)
    return D

def _symmetrize_into(D: torch.Tensor, out: torch.Tensor) -> None:
    """``out = U + Uᵀ`` with ``U`` the strict upper triangle of ``D`` (``D`` is overwritten).

    Exactly symmetric, zero diagonal; one pass fewer than mirroring in place and copying.
    """
    D.triu_(1)
    if out.device == D.device and out.dtype == D.dtype:
        torch.add(D, D.transpose(-1, -2), out=out)
    else:
        out.copy_(torch.add(D, D.transpose(-1, -2)))


# ----------------------------------------------------------------------------------
# Jensen–Shannon
# ----------------------------------------------------------------------------------


def _js_block(
    P: torch.Tensor, dtype: torch.dtype, budget: int, support: torch.Tensor, workers: _Workers
) -> torch.Tensor:
    """JS divergence (nats) of all row pairs of a chunk; strict upper triangle valid.

    P : (B, n, n) float64 rows (sums 1 up to round-off).  support : (n, n) bool,
    True where any matrix of the whole input is nonzero.  With ``u = p + q``,

        JS(p, q) = ½ [Σ p ln p + Σ q ln q − Σ u ln u] + ½ ln 2 (Σ p + Σ q),

    and a key where ``p`` or ``q`` is 0 adds exactly 0 to the bracket, so the sums
    run only over the keys ``K`` where some row of a group (``_GROUP`` rows, fixed
    boundaries; the ``i`` of pairs ``i <= j``) can be nonzero: a prefix for causal
    attention, about 3× less work.  ``K`` does not depend on the chunking, so
    neither does the result.  Pairs below the cutoff are recomputed by
    :func:`_js_accurate`.
    """
    B, n, _ = P.shape
    out = torch.zeros((B, n, n), dtype=torch.float64, device=P.device)
    rowsum = P.sum(-1)
    Pc = P.to(dtype)
    Pz = Pc.clamp_min(_TINY[dtype])  # u = p + q never 0 inside the log
    XP = torch.log(Pz).mul_(Pc)  # p ln p; exactly 0 where p == 0 (0 times a finite log)
    tile = max(1, min(_TILE_TARGET, budget // (4 * workers.n)))

    for s in range(0, n, _GROUP):
        e = min(n, s + _GROUP)
        # keys where some row of the group can be nonzero (pairs i in group, j >= i)
        idx = torch.nonzero(support[s:e].any(0)).reshape(-1)
        k = int(idx.numel())  # >= 1: rows are not all zero
        first, last = int(idx[0]), int(idx[-1])
        if last - first + 1 == k:
            PJ = Pz[:, s:, first : last + 1]
            XJ = XP[:, s:, first : last + 1]
        else:
            PJ = Pz[:, s:].index_select(-1, idx)
            XJ = XP[:, s:].index_select(-1, idx)
        # c = Σ_K p ln p + ln2 Σ_all p per row, rows s..n-1 (Σ_all p is 1 up to round-off);
        # JS(p, q) = ½ (c_p + c_q - Σ_K (p+q) ln(p+q))
        cJ = XJ.sum(-1).to(torch.float64).add_(rowsum[:, s:], alpha=_LN2)
        _js_sums_torch(PJ, out, s, e, k, dtype, tile, workers)
        blk = out[:, s:e, s:]  # JS = ½ (c_p + c_q − Σ_K u ln u)
        blk.neg_().add_(cJ[:, : e - s, None]).add_(cJ[:, None, :]).mul_(0.5)
    _refine_(out, P, _JS_CUTOFF[dtype], budget, workers, _js_accurate)
    return out


def _js_sums_torch(
    PJ: torch.Tensor,
    out: torch.Tensor,
    s: int,
    e: int,
    k: int,
    dtype: torch.dtype,
    tile: int,
    workers: _Workers,
) -> None:
    """``out[:, i, j] = Σ_K u ln u`` (u = p + q) for the rows ``s <= i < e`` of a group, ``j >= i``.

    PJ : (B, n - s, k) rows ``s..n-1`` restricted to the group's keys ``K``, entries > 0.
    Pure torch, in cache-sized tiles (add, log, multiply, sum) shared among the workers.
    """
    B, n = out.shape[0], out.shape[-1]
    m = n - s
    # tile shape: heads × rows × cols × k  <= tile elements
    per_row = m * k
    if per_row > tile:
        ht, bs, bj = 1, 1, max(1, tile // k)
    else:  # few rows per strip (little work below the diagonal), more heads per tile
        bs = min(e - s, _STRIP_ROWS, max(1, tile // per_row))
        ht = max(1, tile // (bs * per_row))
        bj = m
    tasks = [
        (h0, min(B, h0 + ht), a, min(e, a + bs), c, min(n, c + bj))
        for h0 in range(0, B, ht)
        for a in range(s, e, bs)
        for c in range(a, n, bj)
    ]

    def js_tile(t: tuple[int, ...], s: int = s, k: int = k, PJ: torch.Tensor = PJ) -> None:
        # Σ_K u ln u for the pairs of one tile, written into out (few ops: Python
        # overhead per tile matters as much as cache size)
        h0, h1, a, b, c, d = t
        shape = (h1 - h0, b - a, d - c, k)
        numel = shape[0] * shape[1] * shape[2] * k
        U = workers.buffer("u", numel, dtype, PJ.device).view(shape)
        L = workers.buffer("l", numel, dtype, PJ.device).view(shape)
        torch.add(PJ[h0:h1, a - s : b - s, None], PJ[h0:h1, None, c - s : d - s], out=U)
        # Σ_k u ln u, in place (same operations and order as linalg.vecdot: product,
        # then sum over the last dim, without its full-size temporary)
        torch.log(U, out=L).mul_(U)
        if dtype == torch.float64:
            torch.sum(L, -1, out=out[h0:h1, a:b, c:d])
        else:
            out[h0:h1, a:b, c:d] = L.sum(-1)

    workers.run(js_tile, tasks)



def _native_lib(dtype: torch.dtype, x: torch.Tensor) -> Any:
    """The C kernel when it applies (float64 work on the CPU and the kernel built), else None."""
    if dtype != torch.float64 or x.device.type != "cpu":
        return None
    return _native.kernel()


def _js_native(
    x3: torch.Tensor,
    out3: np.ndarray,
    paper_compat: str | None,
    nonneg: bool,
    base: float,
    budget: int,
    workers: _Workers,
    lib: Any,
    reporter: Reporter = NO_PROGRESS,
) -> None:
    """Jensen–Shannon distances of every matrix of ``x3`` with the C kernel, into ``out3``.

    x3 : (B, m, k) validated rows; out3 : (B, m, m) C-contiguous float64, fully written.
    One task per matrix: rows normalized in float64 (:func:`_prepare`), divergences of all
    pairs in C (:mod:`attntopo._native`), pairs below the cutoff recomputed with the
    cancellation-free NumPy form, then square roots and mirroring in C.  Same numbers as the
    torch path to ~1e-14 (tests/unit/test_native.py).
    """
    batch, m, k = x3.shape
    scale = 1.0 if paper_compat else 1.0 / math.log(base)  # paper modes: natural log
    cutoff = _JS_CUTOFF[torch.float64]
    fourth_root = int(paper_compat == "notebook")
    # rows are normalized for many matrices at once (few large torch ops), in chunks of
    # at most 1/16 of the budget (2**22 elements by default)
    step = max(1, min(batch, (budget // 16) // max(1, m * k)))
    # a task is a run of consecutive matrices: about 2**20 logarithms (~1 ms), and at least
    # 4 tasks per worker when there are enough matrices (small matrices: one C call for
    # many of them instead of one Python call each)
    per_task = max(1, (1 << 20) // max(1, m * m * k // 2))

    for h0 in range(0, batch, step):
        P = _prepare(x3[h0 : h0 + step], paper_compat, nonneg).contiguous().numpy()
        O = out3[h0 : h0 + P.shape[0]]
        cnt = P.shape[0]
        size = max(1, min(per_task, -(-cnt // (4 * workers.n))))
        runs = [(a, min(cnt, a + size)) for a in range(0, cnt, size)]
        below = np.zeros(cnt, dtype=np.int64)

        def divergences(r: tuple[int, int]) -> None:
            a, b = r
            status = lib.attntopo_js_divergences_many(
                P[a].ctypes.data, b - a, m, k, O[a].ctypes.data, cutoff, below[a:].ctypes.data
            )
            if status < 0:
                raise MemoryError(f"the C kernel could not allocate scratch memory for {m} rows")

        def finish(r: tuple[int, int]) -> None:
            a, b = r
            for h in a + np.flatnonzero(below[a:b]):  # pairs under the cutoff: recomputed
                _refine_np_(O[h], P[h], cutoff)  # with the cancellation-free form
            lib.attntopo_js_finish_many(O[a].ctypes.data, b - a, m, scale, fourth_root)

        workers.run(divergences, runs)
        workers.run(finish, runs)
        reporter.advance(cnt)


def _refine_np_(o: np.ndarray, P: np.ndarray, cutoff: float) -> None:
    """Recompute ``o[i, j]`` (i < j) below ``cutoff`` with the cancellation-free JS terms."""
    r, c = np.nonzero(np.triu(o < cutoff, 1))  # lower triangle not written yet: masked out
    step = max(1, _REFINE_ELEMENTS // max(1, P.shape[1]))
    for a in range(0, r.size, step):
        ri, ci = r[a : a + step], c[a : a + step]
        o[ri, ci] = 0.25 * _phi_terms_np(P[ri], P[ci]).sum(-1)

def _js_accurate(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Cancellation-free JS divergence (nats) of row pairs p, q: (m, n) float64 -> (m,).

    Per key, with ``u = p + q`` and ``d = (p − q) / u``, the divergence term is
    ``u φ(d) / 4`` where ``φ(d) = (1+d) ln(1+d) + (1−d) ln(1−d)
    = d · log1p(2d / (1−d)) + log1p(−d²)`` (the first term is ``2d atanh d``).
    For small ``|d|`` the two terms are about ``2d²`` and ``−d²``: no
    catastrophic cancellation, a relative error of a few ulp.  ``φ(±1) = 2 ln 2``
    (a key where one row is 0); keys where both are 0 contribute 0.
    """
    u = p + q
    d = torch.sub(p, q).div_(u)  # NaN where u == 0, fixed below
    inner = d.abs() < 1.0
    t = torch.rsub(d, 1.0)
    torch.div(d, t, out=t).mul_(2.0).log1p_().mul_(d)  # 2d atanh(d)
    t.add_(d.mul_(d).neg_().log1p_())  # + log1p(-d²)
    t.masked_fill_(~inner, 2.0 * _LN2).mul_(u).masked_fill_(u == 0, 0.0)
    return t.sum(-1).mul_(0.25)


def _pairs_below(D: torch.Tensor, cutoff: float) -> torch.Tensor:
    """(m, 3) indices (batch, i, j), i < j, where D is below cutoff."""
    n = D.shape[-1]
    upper = torch.ones((n, n), dtype=torch.bool, device=D.device).triu_(1)
    return torch.nonzero((D < cutoff) & upper)


def _refine_(
    out: torch.Tensor,
    P: torch.Tensor,
    cutoff: float,
    budget: int,
    workers: _Workers,
    exact: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> None:
    """Recompute ``out[b, i, j] = exact(P[b, i], P[b, j])`` where it is below cutoff (i < j)."""
    idx = _pairs_below(out, cutoff)
    if idx.numel() == 0:
        return
    n = P.shape[-1]
    # a few (pairs × n) temporaries per step, kept cache-sized (and within the budget)
    step = max(1, min(_REFINE_ELEMENTS, budget // (8 * workers.n)) // n)

    def refine(r0: int) -> None:
        b, i, j = idx[r0 : r0 + step].unbind(1)
        out[b, i, j] = exact(P[b, i], P[b, j])

    workers.run(refine, list(range(0, idx.shape[0], step)))


def _phi_terms_np(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """NumPy twin of the accurate JS terms: (p+q) φ((p-q)/(p+q)), 0 where p = q = 0."""
    u = p + q
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(u > 0, (p - q) / np.where(u > 0, u, 1.0), 0.0)
    d2 = d * d
    series = np.zeros_like(d)
    for j in range(_SERIES_TERMS, 0, -1):
        series = series * d2 + 1.0 / (j * (2 * j - 1))
    series *= d2
    plus = np.where(d > -1.0, (1.0 + d) * np.log1p(np.where(d > -1.0, d, 0.0)), 0.0)
    minus = np.where(d < 1.0, (1.0 - d) * np.log1p(np.where(d < 1.0, -d, 0.0)), 0.0)
    direct = plus + minus  # 0·log 0 = 0 at d = ±1
    phi = np.where(np.abs(d) < _SERIES_D, series, direct)
    return u * phi


# ----------------------------------------------------------------------------------
# Hellinger / Fisher–Rao and total variation
# ----------------------------------------------------------------------------------


def _half_sq_root_diff(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """½ Σ (sqrt p − sqrt q)², using sqrt p − sqrt q = (p − q) / (sqrt p + sqrt q) (exact-ish)."""
    r = p.sqrt() + q.sqrt()
    diff = (p - q) / torch.where(r > 0, r, 1.0)
    return 0.5 * (diff * diff).sum(-1)


def _tv_block(P: torch.Tensor, dtype: torch.dtype, budget: int, workers: _Workers) -> torch.Tensor:
    """Total variation distances of all row pairs of a chunk: (B, n, k) -> (B, n, n) float64."""
    B, n, k = P.shape
    Pc = P.to(dtype)
    out = torch.empty((B, n, n), dtype=torch.float64, device=P.device)
    rows = max(1, budget // max(1, 4 * n * k * workers.n))  # bounds cdist's work per task

    def one_block(t: tuple[int, int]) -> None:
        h, a = t
        b = min(n, a + rows)
        out[h, a:b] = torch.cdist(Pc[h, a:b], Pc[h], p=1.0).to(torch.float64)

    workers.run(one_block, [(h, a) for h in range(B) for a in range(0, n, rows)])
    return out.mul_(0.5).clamp_(0.0, 1.0)


# ----------------------------------------------------------------------------------
# rows of non-square stacks (added for head distances, issue 6; self-contained)
# ----------------------------------------------------------------------------------

__all__.append("row_distances")


def row_distances(
    x: Any,
    metric: str = "jensen_shannon",
    *,
    base: float = 2.0,
    chunk_elements: int | None = None,
    dtype: torch.dtype = torch.float64,
    n_threads: int | None = None,
) -> np.ndarray:
    """Distances between the rows of each matrix of a stack; matrices need not be square.

    The same numbers, accuracy and speed as :func:`token_distances` (which is the square
    case), for stacks of shape ``(..., m, k)``: ``m`` distributions over ``k`` outcomes
    per matrix.  :func:`attntopo.analyses.heads.head_distances` uses it with the heads as
    rows: for one query token, the ``L·H`` heads' attention rows over the keys.

    Parameters
    ----------
    x : array_like or torch.Tensor of shape (..., m, k)
        Rows are probability distributions: entries ``>= 0`` (down to ``-1e-6`` clipped),
        rows summing to 1 within ``1e-3`` (rescaled exactly as in :func:`token_distances`).
    metric : {"jensen_shannon", "hellinger", "fisher_rao", "total_variation"}
        See :func:`token_distances`.
    base : float, default 2.0
        Logarithm base of the Jensen–Shannon divergence (> 1).
    chunk_elements, dtype, n_threads
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
        Bad ``metric``, ``base``, ``chunk_elements``, ``dtype`` or ``n_threads``.
    InvalidMatrixError
        Input with fewer than 2 dimensions, NaN/inf, negative entries or rows that do not
        sum to 1.
    """
    metric, base, budget, threads = _check_settings(metric, base, chunk_elements, dtype, n_threads)
    t = _as_tensor(x)
    if t.ndim < 2:
        raise InvalidMatrixError(
            f"rows must come as a stack of shape [..., m, k] (at least 2-D); got {tuple(t.shape)}"
        )
    return _distances(t, metric, base, None, budget, dtype, threads, "input")


def _hellinger_block(
    P: torch.Tensor, dtype: torch.dtype, budget: int, workers: _Workers
) -> torch.Tensor:
    """Normalized Hellinger distances of all row pairs of a chunk: (B, m, k) -> (B, m, m)."""
    B, m, _ = P.shape
    H2 = torch.empty((B, m, m), dtype=torch.float64, device=P.device)
    rowsum = P.sum(-1)

    def one_matrix(h: int) -> None:
        S = torch.sqrt(P[h].to(dtype))
        bc = (S @ S.T).to(torch.float64)
        H2[h] = (rowsum[h, :, None] * 0.5 + rowsum[h, None, :] * 0.5).sub_(bc)

    workers.run(one_matrix, list(range(B)))
    _refine_(H2, P, _H2_CUTOFF[dtype], budget, workers, _half_sq_root_diff)
    return H2.clamp_(0.0, 1.0).sqrt_()
