"""The threads the distance kernels run on, and the recomputation of close pairs in tiles."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

_REFINE_ELEMENTS = 1 << 16  # elements per refinement step (pairs × n)


_EXECUTORS: dict[int, ThreadPoolExecutor] = {}
_EXECUTORS_PID = 0
_EXECUTORS_LOCK = threading.Lock()


def _shared_executor(n: int) -> ThreadPoolExecutor:
    """The process's pool of ``n`` distance threads (one torch thread each), made once.

    Reused by every call: a corpus computes distances text after text, and starting and
    joining two threads per text cost ~0.7 ms of a ~30 ms text.  A forked child makes its own.
    """
    global _EXECUTORS_PID
    with _EXECUTORS_LOCK:
        if _EXECUTORS_PID != os.getpid():
            _EXECUTORS.clear()
            _EXECUTORS_PID = os.getpid()
        pool = _EXECUTORS.get(n)
        if pool is None:
            pool = _EXECUTORS[n] = ThreadPoolExecutor(
                n,
                thread_name_prefix="attntopo-distances",
                initializer=torch.set_num_threads,
                initargs=(1,),
            )
        return pool


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
            self._pool = _shared_executor(self.n)
        return self

    def __exit__(self, *exc: object) -> None:
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
        # torch's inference and grad modes are per thread: the workers run in the caller's, or
        # an output tensor made under inference_mode (a model's forward hook) refuses their
        # in-place writes
        inference, grad = torch.is_inference_mode_enabled(), torch.is_grad_enabled()

        def drain() -> None:
            with torch.inference_mode(inference), torch.set_grad_enabled(grad):
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
