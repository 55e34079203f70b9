"""Section ``kernel``: the Jensen–Shannon C kernel alone, in pair-keys per second against the
same process's rate of the kernel's own vectorized logarithm (issue 36).

A *pair-key* is one key of one pair of rows where both rows can be nonzero (the keys a pair
has to read: the rest of its divergence comes from per-row sums): for causal rows ``i < j``
the keys ``0..i``, so a causal head has ``Σ_{i<j} (i + 1) ≈ n³/6`` of them and a head without
zeros ``n · n(n − 1)/2``.  Each pair-key costs one logarithm (of ``p + q``), an add and a
multiply-add, so the kernel's log rate on a cache-resident array bounds its pair-key rate;
their ratio says how much of the work is the logarithm itself.  One thread (the ctypes call
runs on the calling thread), one matrix at a time, rows made as attention rows are (softmax of
Gaussian logits, causal mask).  Times are the measuring thread's CPU time
(``time.thread_time``): on a shared machine the scheduler takes the core away for stretches
that wall time would count (the log rate read 375 M/s by the wall clock and 984 M/s by CPU
time in one such run); cache and memory contention from other jobs still count.
"""

from __future__ import annotations

import time
from typing import Any

from _common import log, machine_info, median

#: (label, n, causal, response rows or None): a causal head (the issue's case), a head without
#: zeros, and the response rows of a RAG-shaped causal pair (the prompt score's r·n pairs)
CASES = [
    ("causal head", 768, True, None),
    ("bidirectional head", 512, False, None),
    ("causal, response rows of a RAG pair (r = n/8)", 1024, True, 128),
]
LOG_VALUES = 1 << 14  # 128 KiB of float64: in cache, so the log rate is the arithmetic's
LOG_CALLS = 400


def pair_keys(n: int, causal: bool, rows: Any = None) -> int:
    """Pair-keys of a matrix of ``n`` rows over ``n`` keys (all pairs, or the pairs of the
    chosen ``rows`` with every row, each pair once)."""
    if rows is None:
        if not causal:
            return n * n * (n - 1) // 2
        return sum(j * (j + 1) // 2 for j in range(n))
    chosen = sorted(int(i) for i in rows)
    seen = set()
    total = 0
    for i in chosen:
        for j in range(n):
            if j == i or (j in seen):
                continue
            total += (min(i, j) + 1) if causal else n
        seen.add(i)
    return total


def _rows(n: int, causal: bool, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(1, n, n)) * 3.0
    if causal:
        logits[:, np.triu(np.ones((n, n), bool), 1)] = -np.inf
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return np.ascontiguousarray(e / e.sum(-1, keepdims=True))


def log_rates(lib, reps: int) -> dict:
    """Values per second of the kernel's log and numpy's on the same cache-resident array."""
    import numpy as np

    x = np.random.default_rng(1).uniform(1e-3, 2.0, LOG_VALUES)
    y = np.empty_like(x)

    def kernel_log():
        for _ in range(LOG_CALLS):
            lib.attntopo_log(x.ctypes.data, y.ctypes.data, x.size)

    def numpy_log():
        for _ in range(LOG_CALLS):
            np.log(x, out=y)

    out = {}
    for name, fn in (("kernel_log", kernel_log), ("numpy_log", numpy_log)):
        fn()
        times = []
        for _ in range(reps):
            t0 = time.thread_time()
            fn()
            times.append(time.thread_time() - t0)
        out[name] = LOG_VALUES * LOG_CALLS / median(times)
    return out


def section_kernel(cfg: dict) -> dict:
    import numpy as np

    from attntopo import _native

    res: dict[str, Any] = {"machine_start": machine_info(), "kernel": _native.describe()}
    lib = _native.kernel()
    if lib is None:
        return {**res, "error": f"the C kernel is not available: {_native.describe()}"}
    reps = max(3, int(cfg.get("kernel_repeats", 5)))
    cutoff = 1e-6
    rows = []
    for label, n, causal, r in cfg.get("kernel_cases", CASES):
        A = _rows(n, causal)
        below = np.zeros(1, dtype=np.int64)
        if r is None:
            out = np.empty((1, n, n))
            chosen = None

            def call():
                lib.attntopo_js_divergences_many(
                    A.ctypes.data, 1, n, n, out.ctypes.data, cutoff, below.ctypes.data
                )
        else:
            chosen = np.arange(n - r, n, dtype=np.int64)
            out = np.empty((1, r, n))

            def call():
                lib.attntopo_js_cross_many(
                    A.ctypes.data,
                    1,
                    n,
                    n,
                    chosen.ctypes.data,
                    r,
                    out.ctypes.data,
                    cutoff,
                    below.ctypes.data,
                )

        log(f"kernel: {label}, n={n}")
        call()
        # the log rate measured around each case, so that both see the same load
        before = log_rates(lib, reps)
        times = []
        for _ in range(reps):
            t0 = time.thread_time()
            call()
            times.append(time.thread_time() - t0)
        after = log_rates(lib, reps)
        keys = pair_keys(n, causal, chosen)
        t = median(times)
        log_rate = median([before["kernel_log"], after["kernel_log"]])
        rows.append(
            {
                "label": label,
                "n": n,
                "causal": causal,
                "rows": r,
                "pair_keys": keys,
                "s": t,
                "runs": reps,
                "pair_keys_per_s": keys / t,
                "kernel_log_per_s": log_rate,
                "numpy_log_per_s": median([before["numpy_log"], after["numpy_log"]]),
                "ratio": keys / t / log_rate,
            }
        )
    res["rows"] = rows
    res["machine_end"] = machine_info()
    return res
