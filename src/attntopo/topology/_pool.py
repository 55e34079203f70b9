"""A small persistent pool of worker processes for :func:`persistence_batch`.

Why not :mod:`multiprocessing`?  The parent process of attntopo has usually
imported torch (OpenMP thread pools, other threads): ``fork`` from it is unsafe
in general (and warned about from Python 3.12), while ``spawn``/``forkserver``
workers re-import the user's ``__main__`` (scripts need the
``if __name__ == "__main__"`` guard) and would import the whole ``attntopo``
package, torch included, in every worker.  Instead each worker here is a fresh
interpreter (``sys.executable -c <script>``, started once and reused) that loads
only ``topology/engines.py`` as a standalone file plus numpy and the engine
packages, with ``OMP_NUM_THREADS=1`` and friends.  Jobs and results travel as
pickles over the worker's stdin/stdout (its own prints are redirected to
stderr); one parent thread per worker feeds it.

The pool is created on first use, grows to the number of workers asked for,
is rebuilt in a forked child (pid check), is shut down at interpreter exit, and
restarts a worker that died once per chunk before giving up.
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["pool_shutdown", "pool_size", "run_chunks", "WorkerError", "PoolStartError"]

_ENGINES_PATH = str(Path(__file__).with_name("engines.py"))

_WORKER_SCRIPT = r"""
import os, sys, pickle
proto = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
sys.stdout = sys.stderr
inp = sys.stdin.buffer
cfg = pickle.load(inp)
sys.path[:] = cfg["sys_path"]
import importlib.util
spec = importlib.util.spec_from_file_location(cfg["module_name"], cfg["engines_path"])
mod = importlib.util.module_from_spec(spec)
sys.modules[cfg["module_name"]] = mod
spec.loader.exec_module(mod)
import numpy
mod.warm_up()
for name in cfg["preload"]:
    try:
        __import__(name)
    except ImportError:
        pass
pickle.dump(("ready", os.getpid()), proto)
proto.flush()
while True:
    try:
        job = pickle.load(inp)
    except EOFError:
        break
    if job is None:
        break
    try:
        msg = ("ok", mod.run_job(job))
    except BaseException as exc:
        msg = ("error", "%s: %s" % (type(exc).__name__, exc))
    pickle.dump(msg, proto, protocol=pickle.HIGHEST_PROTOCOL)
    proto.flush()
"""

_THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


class PoolStartError(RuntimeError):
    """A worker process could not be started (the caller falls back to serial)."""


class WorkerError(RuntimeError):
    """A worker failed on a job, or died twice on the same chunk."""


class _Worker:
    """One worker interpreter and its pipes."""

    def __init__(self, preload: Sequence[str]) -> None:
        env = dict(os.environ)
        for var in _THREAD_VARS:
            env[var] = "1"
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_SCRIPT],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                close_fds=True,
            )
        except (OSError, ValueError, TypeError) as exc:  # e.g. no usable sys.executable
            raise PoolStartError(f"could not start a worker process: {exc}") from None
        cfg = {
            "sys_path": list(sys.path),
            "engines_path": _ENGINES_PATH,
            "module_name": "_attntopo_topology_engines",
            "preload": list(preload),
        }
        try:
            self._send(cfg)
        except (OSError, pickle.PickleError) as exc:
            self.kill()
            raise PoolStartError(f"could not start a worker process: {exc}") from None

    def wait_ready(self) -> None:
        try:
            tag, _ = self._recv()
            if tag != "ready":
                raise PoolStartError(f"worker sent {tag!r} instead of 'ready'")
        except (OSError, EOFError, pickle.UnpicklingError, ValueError) as exc:
            self.kill()
            raise PoolStartError(f"worker process failed to start: {exc!r}") from None

    def _send(self, obj: Any) -> None:
        pickle.dump(obj, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def _recv(self) -> Any:
        return pickle.load(self.proc.stdout)

    def run(self, job: list) -> list:
        """Send one chunk, wait for its results; raises OSError/EOFError if the worker died."""
        self._send(job)
        tag, payload = self._recv()
        if tag != "ok":
            raise WorkerError(f"persistence worker failed: {payload}")
        return payload

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, timeout: float = 1.0) -> None:
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
            self.proc.wait(timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        finally:
            for f in (self.proc.stdout,):
                try:
                    if f:
                        f.close()
                except OSError:
                    pass

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass


class _Pool:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.workers: list[_Worker] = []
        self.lock = threading.Lock()
        self.preload = ()

    def ensure(self, n: int) -> None:
        """Grow to at least ``n`` live workers (started in parallel)."""
        for w in self.workers:
            if not w.alive():
                w.kill()  # reap it and close its pipes
        self.workers = [w for w in self.workers if w.alive()]
        new = []
        try:
            for _ in range(n - len(self.workers)):
                new.append(_Worker(self.preload))
            for w in new:
                w.wait_ready()
        except PoolStartError:
            for w in new:
                w.kill()
            raise
        self.workers.extend(new)

    def run_chunks(
        self, chunks: list[list], n_workers: int, on_chunk: Callable[[int], None] | None = None
    ) -> list[list]:
        """Run ``chunks`` on ``n_workers`` workers; results in chunk order.

        ``on_chunk(k)`` is called in this (the calling) thread after each chunk of ``k`` tasks
        is done.
        """
        self.ensure(n_workers)
        results: list[Any] = [None] * len(chunks)
        errors: list[BaseException] = []
        next_idx = iter(range(len(chunks)))
        take = threading.Lock()
        finished: queue.SimpleQueue = (
            queue.SimpleQueue()
        )  # finished chunks' sizes; None: a feeder ends

        def feed(slot: int) -> None:
            try:
                work(slot)
            finally:
                finished.put(None)

        def work(slot: int) -> None:
            while not errors:
                with take:
                    i = next(next_idx, None)
                if i is None:
                    return
                for attempt in (0, 1):
                    w = self.workers[slot]
                    try:
                        results[i] = w.run(chunks[i])
                        finished.put(len(results[i]))
                        break
                    except WorkerError as exc:
                        errors.append(exc)
                        return
                    except (OSError, EOFError, pickle.UnpicklingError, ValueError) as exc:
                        w.kill()
                        if attempt == 1:
                            errors.append(
                                WorkerError(
                                    f"persistence worker process died twice on the same chunk "
                                    f"({exc!r}); rerun with n_jobs=1 to see the error in-process"
                                )
                            )
                            return
                        try:
                            fresh = _Worker(self.preload)
                            fresh.wait_ready()
                        except PoolStartError as exc2:
                            errors.append(WorkerError(f"could not restart a worker: {exc2}"))
                            return
                        self.workers[slot] = fresh

        threads = [
            threading.Thread(target=feed, args=(k,), daemon=True, name=f"attntopo-pool-{k}")
            for k in range(min(n_workers, len(chunks)))
        ]
        try:
            for t in threads:
                t.start()
            running = len(threads)
            while running:  # progress is reported from this thread, never from a feeder
                k = finished.get()
                if k is None:
                    running -= 1
                elif on_chunk is not None and not errors:
                    on_chunk(k)
            for t in threads:
                t.join()
        except BaseException:
            # interrupted (e.g. Ctrl-C): replies would be left in the pipes
            self.shutdown(kill=True)
            raise
        if errors:
            raise errors[0]
        return results

    def shutdown(self, kill: bool = False) -> None:
        workers, self.workers = self.workers, []
        for w in workers:
            if kill:
                w.kill()
            else:
                w.close()


_POOL: _Pool | None = None
_POOL_LOCK = threading.Lock()


def _get_pool() -> _Pool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.pid != os.getpid():
            # a forked child must not talk to its parent's workers
            _POOL = _Pool()
        return _POOL


def pool_size() -> int:
    """Number of live worker processes (0 when no pool is running)."""
    pool = _POOL
    if pool is None or pool.pid != os.getpid():
        return 0
    return sum(w.alive() for w in pool.workers)


def run_chunks(
    chunks: list[list], n_workers: int, on_chunk: Callable[[int], None] | None = None
) -> list[list]:
    """Run chunks of ``engines.compute_many`` argument tuples on the shared pool.

    Parameters
    ----------
    chunks : list of list of tuple
        Each tuple is ``(mats, n, maxdim, threshold, engine, n_threads)``: a list of
        distance matrices of one size ``n`` (see ``engines.run_job``).
    n_workers : int
        Worker processes to use (the pool grows if needed).
    on_chunk : callable, optional
        ``on_chunk(k)`` after each finished chunk of ``k`` matrices, called in the calling
        thread (progress reporting).

    Returns
    -------
    list of list
        Per chunk, the diagrams (lists of per-dimension arrays) of its matrices, tuple
        after tuple, in order.
    """
    pool = _get_pool()
    with pool.lock:
        return pool.run_chunks(chunks, n_workers, on_chunk)


def pool_shutdown() -> None:
    """Stop the worker processes (they are restarted on next use)."""
    global _POOL
    with _POOL_LOCK:
        pool = _POOL
        _POOL = None
    if pool is not None and pool.pid == os.getpid():
        with pool.lock:
            pool.shutdown()


atexit.register(pool_shutdown)
