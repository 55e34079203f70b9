"""Jensen–Shannon divergences of all row pairs: the C kernel, the torch tiles, and the
cancellation-free recomputation of nearly identical rows (the module docstring of
:mod:`attntopo.distances` states the formulas and their accuracy)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .. import _native
from .._progress import NO_PROGRESS, Reporter
from ._checks import _prepare
from ._workers import _REFINE_ELEMENTS, _refine_, _Workers

_TILE_TARGET = 1 << 18  # elements per JS tile: amortizes Python overhead, stays near the cache
# on a GPU a tile is a few kernel launches and there is no cache to stay in: larger tiles (n=512,
# 72 heads, H100: 1.5 s with 2**18, 0.17 s with 2**22, the same distances)
_TILE_TARGET_GPU = 1 << 22
_GROUP = 16  # rows per support group (joint-support restriction of the JS tiles)
_STRIP_ROWS = 4  # rows i per JS tile (pairs i > j inside a tile are wasted work: ~_STRIP_ROWS / 2n)
_JS_CUTOFF = {torch.float64: 1e-6, torch.float32: 1e-4}  # nats; below: recompute accurately
_TINY = {torch.float64: 1e-300, torch.float32: 1e-30}  # stands in for exact zeros inside log
_LN2 = math.log(2.0)
_SERIES_D = 0.1  # |d| below this: power series of φ(d) (NumPy reference)
_SERIES_TERMS = 9  # d**18 relative to d**2 is < 1e-16 for |d| < 0.1


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
    target = _TILE_TARGET if P.device.type == "cpu" else _TILE_TARGET_GPU
    tile = max(1, min(target, budget // (4 * workers.n)))

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


def _key_range(mask: torch.Tensor) -> tuple[int, int] | torch.Tensor:
    """The keys of a (k,) bool mask on the host: ``(first, last + 1)`` when they are one run
    (a slice, no copy), else their indices."""
    idx = torch.nonzero(mask).reshape(-1)
    if idx.numel() == 0:
        return (0, 0)
    first, last = int(idx[0]), int(idx[-1])
    return (first, last + 1) if last - first + 1 == idx.numel() else idx


def _js_cross_block(
    P: torch.Tensor,
    rows: torch.Tensor,
    dtype: torch.dtype,
    budget: int,
    support: torch.Tensor,
    workers: _Workers,
) -> torch.Tensor:
    """JS divergences (nats) from the rows ``rows`` of each matrix to all of its rows, in torch.

    P : (B, m, k) float64 rows (sums 1 up to round-off); rows : (r,) int64 distinct, on the
    host; support : (m, k) bool, True where any matrix of the whole input is nonzero.
    Returns (B, r, m) float64 on P's device; ``[:, a, rows[a]]`` is not meaningful (the
    caller sets it).  The pairs are taken in tiles of a group of chosen rows (``_GROUP``) by
    a chunk of columns; each tile sums only over the keys ``K`` where some row of the group
    *and* some row of the chunk can be nonzero (a key outside ``K`` has ``p`` or ``q`` 0
    for every pair of the tile and adds exactly 0 to the bracket of :func:`_js_block`): for
    causal attention the overlap of the two rows' prefixes, to a group's size.  Pairs below
    the cutoff are recomputed by :func:`_js_accurate`.
    """
    B, m, k = P.shape
    r = int(rows.numel())
    dev = P.device
    out = torch.empty((B, r, m), dtype=torch.float64, device=dev)
    rows_d = rows.to(dev)
    rowsum = P.sum(-1)
    Pc = P.to(dtype)
    Pz = Pc.clamp_min(_TINY[dtype])
    XP = torch.log(Pz).mul_(Pc)  # p ln p; exactly 0 where p == 0
    PR, XR, sumR = Pz.index_select(1, rows_d), XP.index_select(1, rows_d), rowsum[:, rows_d]
    target = _TILE_TARGET if dev.type == "cpu" else _TILE_TARGET_GPU
    tile = max(1, min(target, budget // (4 * workers.n)))
    # the keys of each (row group, column chunk): one pass over the support on the host
    sup = support.cpu()
    groups = [(g, min(r, g + _GROUP)) for g in range(0, r, _GROUP)]
    k_rows = [sup[rows[g0:g1]].any(0) for g0, g1 in groups]
    # columns per chunk: a multiple of _GROUP filling a tile with one head (GPU: few launches)
    cols = min(m, max(_GROUP, tile // max(1, _GROUP * k) // _GROUP * _GROUP))
    chunks = [(c, min(m, c + cols)) for c in range(0, m, cols)]
    k_cols = [sup[c0:c1].any(0) for c0, c1 in chunks]
    tasks = []
    for gi, (g0, g1) in enumerate(groups):
        for ci, (c0, c1) in enumerate(chunks):
            keys = _key_range(k_rows[gi] & k_cols[ci])
            nk = keys[1] - keys[0] if isinstance(keys, tuple) else int(keys.numel())
            ht = max(1, min(B, tile // max(1, (g1 - g0) * (c1 - c0) * nk)))
            if not isinstance(keys, tuple):
                keys = keys.to(dev)
            tasks += [(h0, min(B, h0 + ht), g0, g1, c0, c1, keys) for h0 in range(0, B, ht)]

    def pick(X: torch.Tensor, keys: Any) -> torch.Tensor:
        return X[..., keys[0] : keys[1]] if isinstance(keys, tuple) else X.index_select(-1, keys)

    def cross_tile(t: tuple[Any, ...]) -> None:
        h0, h1, g0, g1, c0, c1, keys = t
        a, b = pick(PR[h0:h1, g0:g1], keys), pick(Pz[h0:h1, c0:c1], keys)
        shape = (h1 - h0, g1 - g0, c1 - c0, a.shape[-1])
        numel = shape[0] * shape[1] * shape[2] * shape[3]
        U = workers.buffer("u", numel, dtype, dev).view(shape)
        L = workers.buffer("l", numel, dtype, dev).view(shape)
        torch.add(a[:, :, None], b[:, None], out=U)
        S = torch.log(U, out=L).mul_(U).sum(-1).to(torch.float64)  # Σ_K u ln u
        # c = Σ_K p ln p + ln2 Σ_all p;  JS = ½ (c_p + c_q − Σ_K u ln u)
        cR = pick(XR[h0:h1, g0:g1], keys).sum(-1).to(torch.float64)
        cR.add_(sumR[h0:h1, g0:g1], alpha=_LN2)
        cC = pick(XP[h0:h1, c0:c1], keys).sum(-1).to(torch.float64)
        cC.add_(rowsum[h0:h1, c0:c1], alpha=_LN2)
        out[h0:h1, g0:g1, c0:c1] = S.neg_().add_(cR[:, :, None]).add_(cC[:, None, :]).mul_(0.5)

    workers.run(cross_tile, tasks)
    # pairs below the cutoff, a chosen row with itself left out: recomputed accurately, the
    # earlier row first (as in the full matrix; the accurate form is symmetric anyway)
    out[:, torch.arange(r, device=dev), rows_d] = math.inf
    idx = torch.nonzero(out < _JS_CUTOFF[dtype])
    if idx.numel():
        step = max(1, min(_REFINE_ELEMENTS, budget // (8 * workers.n)) // max(1, k))

        def refine(s0: int) -> None:
            b, a, j = idx[s0 : s0 + step].unbind(1)
            i = rows_d[a]
            out[b, a, j] = _js_accurate(P[b, torch.minimum(i, j)], P[b, torch.maximum(i, j)])

        workers.run(refine, list(range(0, idx.shape[0], step)))
    return out


def _mirror_chosen_(D: torch.Tensor, rows: torch.Tensor) -> None:
    """Distances ``D`` (B, r, m) from ``rows`` to all rows, made exactly consistent in place:
    0 for a row with itself, and the distance between two chosen rows ``rows[a]``,
    ``rows[b]`` (``b < a``) copied from the row listed first (as the C kernel does)."""
    rows_d = rows.to(D.device)
    RR = D.index_select(-1, rows_d).triu_(1)
    D[:, :, rows_d] = RR + RR.transpose(-1, -2)


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
    rows: np.ndarray | None = None,
    nearest: int = 0,
) -> None:
    """Jensen–Shannon distances of every matrix of ``x3`` with the C kernel, into ``out3``.

    x3 : (B, m, k) validated rows; out3 : (B, m, m) C-contiguous float64, fully written.
    One task per matrix: rows normalized in float64 (:func:`_prepare`), divergences of all
    pairs in C (:mod:`attntopo._native`), pairs below the cutoff recomputed with the
    cancellation-free NumPy form, then square roots and mirroring in C.  Same numbers as the
    torch path to ~1e-14 (tests/unit/distances/test_native.py).

    rows : (r,) int64 distinct row indices, optional: only the distances from these rows to
    all rows, ``out3`` (B, r, m): ``r·m`` pairs instead of ``m²/2``, the same bits as the
    full matrix's rows ``rows``.  ``nearest``: of the columns before it that are not in
    ``rows``, only each chosen row's minimum is wanted (:func:`_js_native_rows`).
    """
    scale = 1.0 if paper_compat else 1.0 / math.log(base)  # paper modes: natural log
    cutoff = _JS_CUTOFF[torch.float64]
    fourth_root = int(paper_compat == "notebook")
    if rows is not None:
        mode = (paper_compat, nonneg, scale, cutoff, fourth_root)
        _js_native_rows(x3, out3, mode, budget, workers, lib, reporter, rows, nearest)
        return
    batch, m, k = x3.shape
    # rows are normalized for many matrices at once (few large torch ops), in chunks of
    # at most 1/16 of the budget (2**22 elements by default)
    step = max(1, min(batch, (budget // 16) // max(1, m * k)))
    # a task is a run of consecutive matrices: about 2**20 logarithms (~1 ms), and at least
    # 4 tasks per worker when there are enough matrices (small matrices: one C call for
    # many of them instead of one Python call each)
    per_task = max(1, (1 << 20) // max(1, m * m * k // 2))

    for h0 in range(0, batch, step):
        P = _prepare(x3[h0 : h0 + step], paper_compat, nonneg).contiguous().numpy()
        out_b = out3[h0 : h0 + P.shape[0]]
        cnt = P.shape[0]
        size = max(1, min(per_task, -(-cnt // (4 * workers.n))))
        runs = [(a, min(cnt, a + size)) for a in range(0, cnt, size)]
        below = np.zeros(cnt, dtype=np.int64)

        def divergences(run: tuple[int, int]) -> None:
            a, b = run
            status = lib.attntopo_js_divergences_many(
                P[a].ctypes.data, b - a, m, k, out_b[a].ctypes.data, cutoff, below[a:].ctypes.data
            )
            if status < 0:
                raise MemoryError(f"the C kernel could not allocate scratch memory for {m} rows")

        def finish(run: tuple[int, int]) -> None:
            a, b = run
            for h in a + np.flatnonzero(below[a:b]):  # pairs under the cutoff: recomputed
                _refine_np_(out_b[h], P[h], cutoff)  # with the cancellation-free form
            lib.attntopo_js_finish_many(out_b[a].ctypes.data, b - a, m, scale, fourth_root)

        workers.run(divergences, runs)
        workers.run(finish, runs)
        reporter.advance(cnt)


def _js_native_rows(
    x3: torch.Tensor,
    out3: np.ndarray,
    mode: tuple,
    budget: int,
    workers: _Workers,
    lib: Any,
    reporter: Reporter,
    rows: np.ndarray,
    nearest: int = 0,
) -> None:
    """:func:`_js_native` for the distances from ``rows`` to all rows (``out3``: (B, r, m);
    ``mode``: the paper mode, whether no entry is negative, the scale, the cutoff, fourth root).

    Per matrix the per-row quantities are prepared once (sums, prefix sums, supports:
    ``m·k`` logarithms), then the chosen rows are shared among the workers in blocks (a few
    matrices with many rows each balance across the threads as well as many matrices do),
    then pairs below the cutoff are recomputed and the distances finished per matrix.

    ``nearest`` > 0: of the columns ``j < nearest`` not in ``rows`` only each chosen row's
    minimum is needed (the prompt score's nearest prompt token): the kernel skips the pairs
    that a lower bound (support masses, then Pinsker's) shows cannot be it, and those
    entries read as the largest distance
    (``attntopo_js_cross_rows_nearest``); the minimum is the same bits.
    """
    batch, m, k = x3.shape
    r = int(rows.size)
    paper_compat, nonneg, scale, cutoff, fourth_root = mode
    # the input in float64 and its prefix sums: two (m, k) arrays a matrix, 1/16 of the budget
    step = max(1, min(batch, (budget // 32) // max(1, m * (k + 1))))
    for h0 in range(0, batch, step):
        P = _prepare(x3[h0 : h0 + step], paper_compat, nonneg).contiguous().numpy()
        out_b = out3[h0 : h0 + P.shape[0]]
        cnt = P.shape[0]
        CM = np.empty((cnt, 2 * m))
        S = np.empty((cnt, m, k + 1))
        LH = np.empty((cnt, 2 * m), dtype=np.int64)
        # blocks of chosen rows: about 8 tasks per worker, at least 8 rows each
        size = max(8, -(-r * cnt // (8 * workers.n)))
        blocks = [(a, min(r, a + size)) for a in range(0, r, size)]
        below = np.zeros((cnt, len(blocks)), dtype=np.int64)

        def prepare(h: int) -> None:
            lib.attntopo_js_rows_prepare(
                P[h].ctypes.data, m, k, CM[h].ctypes.data, S[h].ctypes.data, LH[h].ctypes.data
            )

        def divergences(task: tuple[int, int]) -> None:
            h, b = task
            a0, a1 = blocks[b]
            args = (
                P[h].ctypes.data,
                m,
                k,
                CM[h].ctypes.data,
                S[h].ctypes.data,
                LH[h].ctypes.data,
                rows.ctypes.data,
                r,
                a0,
                a1,
                out_b[h].ctypes.data,
                cutoff,
            )
            n_below = (
                lib.attntopo_js_cross_rows_nearest(*args, nearest)
                if nearest > 0
                else lib.attntopo_js_cross_rows(*args)
            )
            if n_below < 0:
                raise MemoryError(f"the C kernel could not allocate scratch memory for {m} rows")
            below[h, b] = n_below

        def finish(h: int) -> None:
            if below[h].any():  # pairs under the cutoff: the cancellation-free form
                _refine_np_(out_b[h], P[h], cutoff, rows)
            lib.attntopo_js_cross_finish_many(
                out_b[h].ctypes.data, 1, m, rows.ctypes.data, r, scale, fourth_root
            )

        workers.run(prepare, list(range(cnt)))
        workers.run(divergences, [(h, b) for h in range(cnt) for b in range(len(blocks))])
        workers.run(finish, list(range(cnt)))
        reporter.advance(cnt)


def _refine_np_(
    o: np.ndarray,
    P: np.ndarray,
    cutoff: float,
    rows: np.ndarray | None = None,
) -> None:
    """Recompute ``o[i, j]`` (i < j) below ``cutoff`` with the cancellation-free JS terms.

    With ``rows``: ``o[a, j]`` is the pair (``rows[a]``, ``j``), every entry below the cutoff
    (the kernel marks the ones it leaves for later with HUGE_VAL), recomputed with the
    earlier row first as in the full matrix."""
    if rows is None:
        r, c = np.nonzero(np.triu(o < cutoff, 1))  # lower triangle not written yet: masked out
    else:
        r, c = np.nonzero(o < cutoff)
    step = max(1, _REFINE_ELEMENTS // max(1, P.shape[1]))
    for a in range(0, r.size, step):
        ri, ci = r[a : a + step], c[a : a + step]
        if rows is None:
            o[ri, ci] = 0.25 * _phi_terms_np(P[ri], P[ci]).sum(-1)
        else:
            i = rows[ri]
            o[ri, ci] = 0.25 * _phi_terms_np(P[np.minimum(i, ci)], P[np.maximum(i, ci)]).sum(-1)


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
    # |d|: φ is even, and computing it at +|d| makes the result exactly symmetric in p and q
    # (at -d the two log1p's round differently: identical rows got distances to a third row
    # that differed by ~1e-12, enough to break the triangle inequality by as much)
    d = torch.sub(p, q).abs_().div_(u)  # NaN where u == 0, fixed below
    inner = d < 1.0
    t = torch.rsub(d, 1.0)
    torch.div(d, t, out=t).mul_(2.0).log1p_().mul_(d)  # 2d atanh(d)
    t.add_(d.mul_(d).neg_().log1p_())  # + log1p(-d²)
    t.masked_fill_(~inner, 2.0 * _LN2).mul_(u).masked_fill_(u == 0, 0.0)
    return t.sum(-1).mul_(0.25)


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
