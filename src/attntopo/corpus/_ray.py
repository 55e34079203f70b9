"""The Ray engine of :func:`attntopo.corpus.run` (``backend="ray"``, ``--backend ray``).

Step 5 of a corpus run (:mod:`attntopo.corpus._local`) on a Ray cluster: the same batches,
the same :class:`~attntopo.corpus.BatchWorker`, the same part files, so a store written by
Ray equals one written by the local engine row for row.

How it runs
-----------
1. **Ray.** With ``ray_address`` (or ``RAY_ADDRESS`` in the environment, which ``ray job
   submit`` sets) this process joins that cluster as its driver and leaves it running;
   otherwise it starts a local Ray with ``n_jobs`` CPUs (all by default) and shuts it down
   at the end, also after an error.  A process already connected (``ray.init`` called by the
   user) is used as is.  An address where nothing answers is one line
   (:class:`~attntopo.errors.InvalidInputError`) after at most :data:`CONNECT_TIMEOUT_S`
   seconds, not Ray's minutes of retries.  A local Ray dies with this process however it
   ends, ``kill -9`` included (:class:`_Watchdog`).
2. **Input.** The driver reads the input with the core reader (``prep.input.batches``: the
   same ids, rows, empty-text rule and carried columns as the local engine, stdin included)
   and puts each batch not yet in the store into Ray's object store (``ray.put``); the
   dataset is ``ray.data.from_arrow_refs`` of those blocks, one block per batch.  The
   driver keeps only references; the texts live in the object store (shared memory,
   spilled to disk when it is full) and are a small fraction of the work's memory (a
   128-token text is ~0.5 kB of UTF-8 and ~13 MB of float64 matrices in a worker).  Ray
   Data's own readers (``read_text``, ``read_parquet``, …) were not used: they would need the
   input on a file system every node can see, would number rows and make ids differently,
   and could not read stdin.
3. **Work.** ``map_batches`` runs :class:`_RayWorker` on an actor pool
   (``ActorPoolStrategy(size=n_actors)``, one CPU per actor, ``batch_size=None`` so that a
   call gets exactly one input block, that is one batch): each actor builds one
   ``BatchWorker(settings, n_jobs=1)`` and so loads the model once, then computes batch
   after batch.  The torch threads of an actor follow its CPUs (Ray sets
   ``OMP_NUM_THREADS``; the actor also calls ``torch.set_num_threads``).  An actor returns
   the feature values packed in one fixed-size list column (``BatchWorker(packed=True)``),
   not as ~2,000 float64 columns of a batch's 32 rows: Ray Data's cost per block grows with
   its columns, and measured here an actor then idled 123 ms between two batches and a block
   took 376 ms to reach the driver, against 13 ms and 164 ms packed (1,000 texts of ~32
   tokens: 63 → 70 texts/s in steady state).
4. **Store.** The driver consumes the results as they come (``iter_batches``, in completion
   order), unpacks the feature columns (:func:`~attntopo.corpus._work.unpack_features`) and
   writes each batch with ``prep.writer.write_part(k, rows)``: one atomic part per
   batch, named by the batch.  Only the driver writes, which gives exactly once after
   ``kill -9``: a part is either complete or absent (temporary file, fsync, rename); a
   re-run skips the batches whose part exists; Ray's retries of a task on a restarted actor
   (a lost node) deliver the batch's rows to the driver once; and nothing can write into
   the store after the driver is gone (actors orphaned by a killed driver never touch it).
   The store also needs no file system shared between nodes: it lives where the driver
   runs.  The price: every row travels to the driver (a few kB per text without
   ``keep_diagrams``).

Errors raised in an actor (a model whose files differ on a node, a missing package there)
come back as the original attntopo exception; one text that fails is a ``failed`` row, as
in the local engine.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from .._progress import NO_PROGRESS, Reporter
from .._validation import check_positive_int
from ..errors import AttntopoError, DeviceError, InvalidInputError, MissingDependencyError
from ._local import log
from ._prepare import Prepared
from ._work import unpack_features

__all__ = ["run_ray", "check_ray_address", "RayRunStats", "ActorStats", "CONNECT_TIMEOUT_S"]

#: Seconds to wait for a TCP answer from ``ray_address`` before giving up with one line.
CONNECT_TIMEOUT_S = 5.0
#: Columns the actors add to each output block for the driver (removed before writing):
#: the batch, the call's start and end (``time.time()`` on the actor's node), the actor's
#: init seconds (on its first batch only), its name and its peak resident memory (bytes).
_BATCH, _START, _END, _INIT, _ACTOR, _RSS = (
    "__attntopo_batch",
    "__attntopo_start",
    "__attntopo_end",
    "__attntopo_init_s",
    "__attntopo_actor",
    "__attntopo_rss",
)


@dataclass
class ActorStats:
    """What one actor did: ``batches`` and ``texts`` computed, ``busy_s`` seconds inside
    ``BatchWorker`` calls, ``init_s`` seconds to build its worker (model load included),
    ``peak_rss`` its process's peak resident memory in bytes (0 where unknown)."""

    batches: int = 0
    texts: int = 0
    busy_s: float = 0.0
    init_s: float = 0.0
    peak_rss: int = 0

    @property
    def texts_per_s(self) -> float:
        """Throughput while busy (texts per second of work): what one more actor adds."""
        return self.texts / self.busy_s if self.busy_s > 0 else float("nan")


@dataclass
class RayRunStats:
    """Timings of one :func:`run_ray` call (seconds).

    Attributes
    ----------
    address : str
        The cluster's address (``"local"`` for a Ray started here).
    started : bool
        Whether this call started (and shut down) Ray.
    n_actors, cpus_per_actor : int
        The actor pool.
    gpus_per_actor : float
        Ray's ``num_gpus`` of each actor (0: none; the actors load the model on the CPU).
    connect_s : float
        ``ray.init``: starting a local Ray, or joining a cluster.
    input_s : float
        Reading the input and putting its batches into the object store.
    first_s : float
        From the dataset's start to the first part written (actor processes, model loads,
        one batch).
    pipeline_s : float
        From the dataset's start to the last part written.
    shutdown_s : float
        ``ray.shutdown`` (0 when the cluster was joined).
    write_s : float
        The driver's time writing parts (its share of the work: it bounds a cluster's
        throughput at ``texts / write_s`` texts per second).
    batches, texts : int
        Batches and texts (rows) written by this call.
    actors : dict
        ``{actor: ActorStats}``, the actor named ``node-id:pid``.
    log : list of tuple
        Per batch: ``(batch, actor, start, end, received, texts)``: the actor's call (its
        node's clock) and the driver's receipt (``time.time()``).
    """

    address: str = ""
    started: bool = False
    n_actors: int = 0
    cpus_per_actor: int = 1
    gpus_per_actor: float = 0.0
    connect_s: float = 0.0
    input_s: float = 0.0
    first_s: float = float("nan")
    pipeline_s: float = 0.0
    shutdown_s: float = 0.0
    write_s: float = 0.0
    batches: int = 0
    texts: int = 0
    actors: dict[str, ActorStats] = field(default_factory=dict)
    log: list[tuple[int, str, float, float, float, int]] = field(default_factory=list)
    _calls: set[tuple[str, float]] = field(default_factory=set, repr=False)

    @property
    def busy_s(self) -> float:
        """Seconds of ``BatchWorker`` work, summed over actors."""
        return sum(a.busy_s for a in self.actors.values())

    @property
    def texts_per_actor_s(self) -> float:
        """Texts per busy second of one actor (all actors pooled): the throughput one more
        actor adds, which sizes a cluster."""
        return self.texts / self.busy_s if self.busy_s > 0 else float("nan")

    @property
    def gap_s(self) -> float:
        """Mean idle time of an actor between two consecutive batches (end of one call to
        the start of the next on the same actor): Ray's scheduling cost per batch."""
        gaps = []
        by_actor: dict[str, list[tuple[float, float]]] = {}
        for _, actor, start, end, _, _ in self.log:
            by_actor.setdefault(actor, []).append((start, end))
        for calls in by_actor.values():
            calls.sort()
            gaps += [max(0.0, b[0] - a[1]) for a, b in zip(calls, calls[1:])]
        return sum(gaps) / len(gaps) if gaps else float("nan")

    @property
    def delivery_s(self) -> float:
        """Mean time from the end of an actor's call to the driver holding its rows (one
        machine's clock only; across nodes it includes their clocks' offset)."""
        d = [received - end for _, _, _, end, received, _ in self.log]
        return sum(d) / len(d) if d else float("nan")

    @property
    def steady_texts_per_s(self) -> float:
        """Texts per second from the first part written to the last (no start-up)."""
        if len(self.log) < 2:
            return float("nan")
        t = sorted(r[4] for r in self.log)
        first = min(self.log, key=lambda r: r[4])
        return (self.texts - first[5]) / (t[-1] - t[0]) if t[-1] > t[0] else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers (what the benchmark records)."""
        return {
            "address": self.address,
            "started": self.started,
            "n_actors": self.n_actors,
            "cpus_per_actor": self.cpus_per_actor,
            "gpus_per_actor": self.gpus_per_actor,
            "connect_s": self.connect_s,
            "input_s": self.input_s,
            "first_s": self.first_s,
            "pipeline_s": self.pipeline_s,
            "shutdown_s": self.shutdown_s,
            "write_s": self.write_s,
            "driver_bound_texts_per_s": self.texts / self.write_s
            if self.write_s > 0
            else float("nan"),
            "batches": self.batches,
            "texts": self.texts,
            "busy_s": self.busy_s,
            "texts_per_actor_s": self.texts_per_actor_s,
            "gap_s": self.gap_s,
            "delivery_s": self.delivery_s,
            "steady_texts_per_s": self.steady_texts_per_s,
            "actors": {
                k: {
                    "batches": a.batches,
                    "texts": a.texts,
                    "busy_s": a.busy_s,
                    "init_s": a.init_s,
                    "texts_per_s": a.texts_per_s,
                    "peak_rss_mib": a.peak_rss / 2**20,
                }
                for k, a in self.actors.items()
            },
        }


# ------------------------------------------------------------------ the actor
class _RayWorker:
    """The callable class of ``map_batches``: one :class:`~attntopo.corpus.BatchWorker` per
    actor (the model loaded once, in ``__init__``), applied to one batch per call.

    Each input block carries the batch number in ``__attntopo_batch``; the output has the
    worker's rows plus that column, the call's start and end, the actor's init seconds (on
    its first output only) and the actor's name, which the driver strips before writing.
    """

    def __init__(self, settings: Any, cpus: int = 1, device: str = "cpu") -> None:
        t0 = time.perf_counter()
        try:
            import torch

            torch.set_num_threads(max(1, int(cpus)))
        except Exception:  # noqa: BLE001 - torch is loaded by the worker anyway; threads are a hint
            pass
        from ._work import BatchWorker

        # packed=True: the feature values travel as one fixed-size list column, not ~2,000
        # float64 columns of 32 rows (Ray Data's per-block cost grows with the columns: see
        # _write and docs/corpus.md); the driver unpacks them before writing.
        # An error here (a model whose files differ on this node, a missing package) would
        # reach the driver as Ray's ActorDiedError with the original exception only as text,
        # after Ray retried the actor; kept and raised by the first call instead, it reaches
        # the driver as itself (Ray's task error wraps the exception object).
        self.error: Exception | None = None
        try:
            self.worker = BatchWorker(settings, n_jobs=1, packed=True, device=device)
        except DeviceError as e:  # say which GPU Ray gave (a node without a working CUDA)
            self.error = DeviceError(
                f"{e} (a Ray actor given GPU {_gpu_ids()} on {socket.gethostname()})"
            )
        except Exception as e:  # noqa: BLE001 - re-raised by __call__
            self.error = e
        try:
            import ray

            node = ray.get_runtime_context().get_node_id()[:8]
        except Exception:  # noqa: BLE001 - only a label
            node = socket.gethostname()
        self.name = f"{node}:{os.getpid()}"
        self.init_s = time.perf_counter() - t0

    def __call__(self, table: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.error is not None:
            raise self.error
        batches = pc.unique(table[_BATCH]).to_pylist()
        outs = []
        for k in sorted(batches):
            part = table if len(batches) == 1 else table.filter(pc.equal(table[_BATCH], k))
            start = time.time()
            rows = self.worker(part.drop_columns([_BATCH]))
            end = time.time()
            n = rows.num_rows
            for name, value, typ in (
                (_BATCH, k, pa.int64()),
                (_START, start, pa.float64()),
                (_END, end, pa.float64()),
                (_INIT, self.init_s, pa.float64()),
                (_ACTOR, self.name, pa.string()),
                (_RSS, _peak_rss(), pa.int64()),
            ):
                rows = rows.append_column(name, pa.array([value] * n, typ))
            self.init_s = 0.0
            outs.append(rows)
        return outs[0] if len(outs) == 1 else pa.concat_tables(outs)


def _gpu_ids() -> str:
    """The GPUs Ray assigned to this actor (its ``num_gpus`` resource), as text."""
    try:
        import ray

        return ",".join(str(i) for i in ray.get_gpu_ids()) or "none"
    except Exception:  # noqa: BLE001 - only a label
        return "?"


def _peak_rss() -> int:
    """Peak resident memory of this actor's process in bytes: its own (``VmHWM``;
    :func:`attntopo._memory.peak_rss`).

    An actor is a fresh worker process that the raylet starts (fork + exec), so its
    ``ru_maxrss`` would start at the raylet's resident size at the fork, not at the driver's:
    measured 2026-11-29 (ray 2.60, one actor before and one after the driver grew to 928 MiB):
    ``ru_maxrss`` 78.6 and 78.8 MiB, ``VmHWM`` 78.8 and 78.9 MiB, the raylet's own peak 27 MiB.
    ``ru_maxrss`` was its own in effect, but only because the raylet stays small; ``VmHWM`` is
    the actor's own by definition."""
    from .._memory import peak_rss

    return peak_rss()


# ------------------------------------------------------------------ connecting
def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - the engine needs Ray Data
    except ImportError as e:
        raise MissingDependencyError(
            f"backend='ray' needs ray with Ray Data: pip install 'attntopo[ray]' ({e})"
        ) from None
    return ray


def _probe(address: str) -> None:
    """Raise one line unless something accepts a TCP connection at ``host:port``."""
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidInputError(
            f"ray_address {address!r} is not HOST:PORT (the address `ray start --head` prints, "
            "e.g. 10.0.0.1:6379), 'auto' or ray://HOST:PORT"
        )
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        why = "timed out" if isinstance(e, socket.timeout) else (e.strerror or type(e).__name__)
        raise InvalidInputError(
            f"no Ray cluster answers at {address!r} ({why}): start one with `ray start --head` "
            "and pass the address it prints, or leave out --ray-address (ray_address=) to "
            "start a local Ray"
        ) from None


def check_ray_address(address: Any) -> str:
    """``address`` checked before any work: something answers there, within
    :data:`CONNECT_TIMEOUT_S` seconds (``"auto"``: the cluster running on this machine, probed
    at its ``host:port`` and returned as ``"auto"``, so that ``ray.init`` also finds that
    cluster's session token; ``ray://`` addresses are left to Ray Client).

    Raises
    ------
    InvalidInputError
        Not an address, or nothing answers there: one line saying what to do.
    """
    if not isinstance(address, str) or not address.strip():
        raise InvalidInputError(
            f"ray_address must be HOST:PORT, 'auto' or ray://HOST:PORT, got {address!r}"
        )
    address = address.strip()
    if address.startswith("ray://"):
        return address
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address_or_die

            found = canonicalize_bootstrap_address_or_die("auto")
        except ConnectionError as e:  # none, or several (Ray says which)
            reason = " ".join(str(e).split())[:300]
            raise InvalidInputError(
                f"ray_address 'auto': no single Ray cluster runs on this machine ({reason}); start "
                "one with `ray start --head`, name one as HOST:PORT, or leave out --ray-address to "
                "start a local Ray"
            ) from None
        except ValueError as e:  # RAY_ADDRESS (which 'auto' reads) is not an address
            raise InvalidInputError(
                f"ray_address 'auto' reads RAY_ADDRESS={os.environ.get('RAY_ADDRESS', '')!r}: "
                f"{' '.join(str(e).split())}; set it to HOST:PORT or unset it"
            ) from None
        except ImportError:  # a Ray without that helper: let ray.init find it
            return address
        _probe(found)
        # ray.init("auto") reads the local cluster's session, token included; ray.init with its
        # host:port does not, and a token-authenticated cluster (Ray >= 2.52) refuses it
        return address
    _probe(address)
    return address


@contextmanager
def _connected(
    ray: Any, address: str | None, n_jobs: int | None, stats: RayRunStats
) -> Iterator[None]:
    """Ray connected for the block: joined (``address``), already there, or started here."""
    t0 = time.perf_counter()
    quiet = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    if ray.is_initialized():
        if address is not None:
            raise InvalidInputError(
                "Ray is already initialized in this process: leave out ray_address (the run "
                "uses that connection), or call ray.shutdown() first"
            )
        stats.address = "existing"
        yield
        return
    if address is None and os.environ.get("RAY_ADDRESS"):
        address = os.environ["RAY_ADDRESS"]
    if address is not None:
        address = check_ray_address(address)
        if n_jobs is not None:
            log.debug("corpus: n_jobs=%d actors on the cluster at %s", n_jobs, address)
        try:
            ray.init(address=address, **quiet)
        except ValueError as e:  # a malformed address, ray:// without ray[client]
            raise InvalidInputError(
                f"ray_address {address!r}: {' '.join(str(e).split())}"
            ) from None
        except ConnectionError as e:
            hint = (
                ""
                if os.environ.get("RAY_AUTH_MODE", "").lower() == "token"
                else " (a cluster with token authentication needs RAY_AUTH_MODE=token here and its "
                "token in ~/.ray/auth_token or RAY_AUTH_TOKEN)"
            )
            raise InvalidInputError(
                f"cannot join the Ray cluster at {address!r}: {' '.join(str(e).split())}{hint}"
            ) from None
        stats.address, stats.started = address, False
    else:
        cpus = n_jobs if n_jobs is not None else _cpu_count()
        watchdog = _Watchdog.start()
        try:
            ray.init(address="local", num_cpus=cpus, **quiet)
        except BaseException:
            watchdog.stop()
            raise
        stats.address, stats.started = "local", True
    stats.connect_s = time.perf_counter() - t0
    try:
        yield
    finally:
        if stats.started:
            t1 = time.perf_counter()
            try:
                ray.shutdown()
            finally:
                watchdog.stop()
            stats.shutdown_s = time.perf_counter() - t1


#: The watchdog's program (``python -c``, argument: the driver's pid; its stdin the read end
#: of a pipe whose only writer is the driver): it records the driver's descendants every
#: 0.2 s (Ray's only: a command line that names ray); a byte on stdin means a clean end
#: (exit), end of file without one means the driver died (``kill -9``, a crash): then every
#: descendant recorded and still alive (the same process, not a reused pid) is killed.
_WATCHDOG = """
import os, select, sys
import psutil
driver = psutil.Process(int(sys.argv[1]))
me = os.getpid()
seen = {}
while True:
    ready = select.select([0], [], [], 0.2)[0]
    try:
        for p in driver.children(recursive=True):
            if p.pid != me and p.pid not in seen:
                try:
                    if "ray" in " ".join(p.cmdline()):
                        seen[p.pid] = p
                except psutil.Error:
                    pass
    except psutil.Error:
        pass
    if ready:
        if os.read(0, 1):
            sys.exit(0)
        break
for p in seen.values():
    try:
        if p.is_running():
            p.kill()
    except psutil.Error:
        pass
"""


class _Watchdog:
    """The local Ray's processes die with this process, however it ends.

    ``ray.init()`` starts a local Ray as children of the driver: ``gcs_server`` and
    ``raylet`` share its fate (Ray kills them when their parent dies), but the raylet's own
    children, the dashboard and runtime-env agents (~170 MB), outlived a ``kill -9`` of the
    command for minutes: they notice the raylet's death, then wait on the dead GCS to report
    it.  A small process in its own session (so that Ctrl-C on the terminal does not reach it)
    records the driver's descendants while Ray runs and kills them if the driver dies without
    saying goodbye (:data:`_WATCHDOG`); a clean end (``ray.shutdown()``, also after an error
    or Ctrl-C) tells it to leave them alone.  Needs ``psutil`` (which Ray installs) and a
    POSIX system; without either, no watchdog.
    """

    def __init__(self, proc: Any, fd: int | None) -> None:
        self.proc, self.fd = proc, fd

    @classmethod
    def start(cls) -> "_Watchdog":
        import importlib.util
        import subprocess
        import sys

        if os.name != "posix" or importlib.util.find_spec("psutil") is None:
            return cls(None, None)
        r, w = os.pipe()  # both ends non-inheritable: Ray's processes get neither
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _WATCHDOG, str(os.getpid())],
                stdin=r,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            os.close(w)
            return cls(None, None)
        finally:
            os.close(r)
        return cls(proc, w)

    def stop(self) -> None:
        """A clean end: the watchdog leaves without killing anything."""
        if self.fd is None:
            return
        try:
            os.write(self.fd, b"x")
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None
        try:
            self.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - it exits by itself
            pass


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@contextmanager
def _quiet_data(ray: Any) -> Iterator[Any]:
    """Ray Data without its own progress bars and log lines (our bar is the run's; an error
    is raised to the caller), and with an actor's exception raised as itself; restored
    afterwards.  Yields the :class:`ray.data.DataContext` the dataset is built with."""
    ctx = ray.data.DataContext.get_current()
    wanted = {
        "enable_progress_bars": False,
        "print_on_execution_start": False,
        # an actor's exception comes back as itself, not as "UDF failed" with it lost
        "raise_original_map_exception": True,
    }
    saved = {k: getattr(ctx, k) for k in wanted if hasattr(ctx, k)}
    for k in saved:
        setattr(ctx, k, wanted[k])
    handlers = [
        (h, h.level)
        for h in logging.getLogger("ray.data").handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    for h, _ in handlers:
        h.setLevel(logging.CRITICAL)  # an error is raised to the caller, not logged twice
    try:
        yield ctx
    finally:
        for k, v in saved.items():
            setattr(ctx, k, v)
        for h, level in handlers:
            h.setLevel(level)


def _unwrap(e: BaseException) -> BaseException | None:
    """The attntopo error an actor raised, out of Ray's wrappers (a ``RayTaskError`` keeps
    the exception raised in the actor as ``cause``), or None."""
    seen: set[int] = set()
    x: BaseException | None = e
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        cause = getattr(x, "cause", None)
        if isinstance(cause, BaseException):
            x = cause
            continue
        if isinstance(x, AttntopoError):
            # Ray Data appends its retry note to the message ("\nFailed to apply UDF
            # transform after 1/1 attempts …"): our messages are one line, so cut it off
            if x.args and isinstance(x.args[0], str) and "\nFailed to " in x.args[0]:
                x.args = (x.args[0].split("\nFailed to ", 1)[0],) + x.args[1:]
            return x
        x = x.__cause__ or x.__context__
    return None


def check_gpus_per_actor(value: Any) -> float:
    """``gpus_per_actor`` as Ray takes a ``num_gpus`` resource: ``None`` or 0 (no GPU), a
    fraction in (0, 1) (actors share a GPU), or a whole number of GPUs; else one line."""
    from .._validation import check_number

    if value is None:
        return 0.0
    g = check_number(value, "gpus_per_actor", lo=0.0, hint="GPUs per Ray actor: 0.5, 1, 2")
    if g > 1 and g != int(g):
        raise InvalidInputError(
            f"gpus_per_actor {g:g}: Ray takes a fraction below 1 or a whole number of GPUs"
        )
    return float(g)


# ------------------------------------------------------------------ the engine
def run_ray(
    prep: Prepared,
    *,
    progress: Reporter = NO_PROGRESS,
    ray_address: str | None = None,
    n_jobs: int | None = None,
    gpus_per_actor: float | None = None,
) -> RayRunStats:
    """Step 5 of :func:`attntopo.corpus.run` on Ray: every batch of ``prep.todo`` computed by
    an actor pool and written by this process as one part file (module docstring).

    Parameters
    ----------
    prep : Prepared
        Steps 1–4 (:func:`attntopo.corpus.prepare`): the store, the input, the settings.
    progress : Reporter
        Advanced by the rows of each batch as its part is written.
    ray_address : str, optional
        A running cluster: ``HOST:PORT`` (what ``ray start --head`` prints), ``"auto"`` (the
        cluster started on this machine) or ``ray://HOST:PORT`` (Ray Client, needs
        ``ray[client]``).  Default: ``RAY_ADDRESS`` from the environment, else a local Ray
        started here with ``n_jobs`` CPUs and shut down at the end.
    n_jobs : int, optional
        Actors (one CPU each); for a local Ray also its CPUs.  Default: every CPU of the
        cluster (of this machine for a local Ray).
    gpus_per_actor : float, optional
        Ray's ``num_gpus`` resource of each actor (:func:`check_gpus_per_actor`): Ray places
        the actors on GPUs and sets each one's ``CUDA_VISIBLE_DEVICES``, and the actor loads
        the model on ``"cuda"``, the GPU it was given.  The actors are at most
        ``cluster GPUs / gpus_per_actor``.  Default: none.

    Returns
    -------
    RayRunStats
        Timings: Ray's start, the input, the first batch, the pipeline, per actor.

    Raises
    ------
    InvalidInputError
        No cluster at ``ray_address`` (one line, within :data:`CONNECT_TIMEOUT_S` s for
        ``HOST:PORT``); an error an actor raised (the original exception, e.g. a model whose
        files differ on a node).
    MissingDependencyError
        ray (``attntopo[ray]``) is not installed.
    """
    ray = _import_ray()
    if n_jobs is not None:
        n_jobs = check_positive_int(n_jobs, "n_jobs", allow_none=False)
    gpus = check_gpus_per_actor(gpus_per_actor)
    stats = RayRunStats(gpus_per_actor=gpus)
    if not prep.todo:
        return stats
    progress.stage("starting Ray")
    with _connected(ray, ray_address, n_jobs, stats):
        cluster_cpus = int(ray.cluster_resources().get("CPU", 0))
        n_actors = n_jobs if n_jobs is not None else max(1, cluster_cpus)
        if cluster_cpus < 1:
            raise InvalidInputError(
                f"the Ray cluster at {stats.address!r} has no CPUs for the actors"
            )
        if gpus:
            cluster_gpus = float(ray.cluster_resources().get("GPU", 0))
            if cluster_gpus < gpus:
                raise InvalidInputError(
                    f"gpus_per_actor={gpus:g}, but the Ray cluster at {stats.address!r} has "
                    f"{cluster_gpus:g} GPUs"
                )
            n_actors = min(n_actors, int(cluster_gpus / gpus + 1e-9))
        n_actors = max(1, min(n_actors, cluster_cpus, len(prep.todo)))
        stats.n_actors = n_actors
        log.info(
            "corpus: Ray at %s, %d actor%s × 1 CPU%s, %d batches",
            stats.address,
            n_actors,
            "s" if n_actors > 1 else "",
            f" + {gpus:g} GPU" if gpus else "",
            len(prep.todo),
        )
        try:
            _pipeline(ray, prep, progress, stats)
        except Exception as e:
            inner = _unwrap(e)
            if inner is not None and inner is not e:
                raise inner.with_traceback(None) from None
            raise
    return stats


def _pipeline(ray: Any, prep: Prepared, progress: Reporter, stats: RayRunStats) -> None:
    import pyarrow as pa

    settings, store = prep.settings, prep.store
    t0 = time.perf_counter()
    refs, expected = [], {}
    for k, table in prep.input.batches(settings.batch_size, skip=store.done_batches()):
        table = table.append_column(_BATCH, pa.array([k] * table.num_rows, pa.int64()))
        refs.append(ray.put(table))
        expected[k] = table.num_rows
        del table
    stats.input_s = time.perf_counter() - t0
    progress.stage("features")
    t1 = time.perf_counter()
    parts = _Assembler(expected)
    with _quiet_data(ray):
        ds = ray.data.from_arrow_refs(refs).map_batches(
            _RayWorker,
            fn_constructor_kwargs={
                "settings": settings,
                "cpus": stats.cpus_per_actor,
                # Ray's CUDA_VISIBLE_DEVICES makes the actor's GPU "cuda"
                "device": "cuda" if stats.gpus_per_actor else "cpu",
            },
            # a call gets one block: one batch, as the local engine computes it; Ray wants a
            # number with GPUs: a batch's rows (blocks hold one batch; a split one is joined
            # again by _Assembler, and the worker computes each piece by its batch column)
            batch_size=settings.batch_size if stats.gpus_per_actor else None,
            batch_format="pyarrow",
            zero_copy_batch=True,
            compute=ray.data.ActorPoolStrategy(size=stats.n_actors),
            num_cpus=stats.cpus_per_actor,
            num_gpus=stats.gpus_per_actor or None,  # Ray's own placement; none: CPU actors
        )
        del refs  # the dataset holds them now
        # prefetch_batches=0: with prefetching, iter_batches holds each block back until the
        # next one has arrived (measured: one whole batch of latency per part)
        for out in ds.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0):
            for k, pieces in parts.add(out):
                _write(prep, k, pieces, progress, stats)
                if stats.batches == 1:
                    stats.first_s = time.perf_counter() - t1
            del out
    stats.pipeline_s = time.perf_counter() - t1
    missing = parts.missing()
    if missing:
        raise RuntimeError(
            f"Ray returned incomplete rows for {len(missing)} batch(es), the first batch "
            f"{missing[0]}: run the same command again to compute them"
        )


def _by_batch(block: Any) -> list[tuple[int, Any]]:
    """``(batch, rows)`` of an output block, by the batch column."""
    import pyarrow.compute as pc

    ks = pc.unique(block[_BATCH]).to_pylist()
    if len(ks) == 1:
        return [(int(ks[0]), block)]
    return [(int(k), block.filter(pc.equal(block[_BATCH], k))) for k in sorted(ks)]


class _Assembler:
    """Output blocks in, complete batches out: each batch once, whatever Ray's blocks are.

    With ``batch_size=None`` an output block is one actor call's rows for one batch; were
    Ray to split or merge blocks, or deliver a block twice (it should not), the rows are
    regrouped by their batch column, duplicates (same ``row``) dropped and a batch handed out
    only when all its ``expected`` rows are there.
    """

    def __init__(self, expected: dict[int, int]) -> None:
        self.expected = dict(expected)
        self.pieces: dict[int, list[Any]] = {}
        self.seen: dict[int, set[int]] = {}
        self.done: set[int] = set()
        self.duplicates = 0

    def add(self, block: Any) -> list[tuple[int, list[Any]]]:
        """The batches that ``block`` completes: ``(k, pieces)``, pieces in arrival order."""
        complete = []
        for k, piece in _by_batch(block):
            if k not in self.expected:
                raise RuntimeError(f"Ray returned rows of batch {k}, which was not sent")
            if k in self.done:
                self.duplicates += piece.num_rows
                continue
            seen = self.seen.setdefault(k, set())
            rows = piece["row"].to_pylist()
            keep = []
            for i, r in enumerate(rows):
                if r not in seen:
                    seen.add(r)
                    keep.append(i)
            if len(keep) < len(rows):
                self.duplicates += len(rows) - len(keep)
                if not keep:
                    continue
                piece = piece.take(keep)
            self.pieces.setdefault(k, []).append(piece)
            if len(seen) >= self.expected[k]:
                self.done.add(k)
                del self.seen[k]
                complete.append((k, self.pieces.pop(k)))
        return complete

    def missing(self) -> list[int]:
        """Batches not complete (yet)."""
        return sorted(k for k in self.expected if k not in self.done)


def _joined(pieces: list[Any]) -> Any:
    """One batch's pieces as one table, rows in input order (by ``row``)."""
    import pyarrow as pa

    t = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
    rows = t["row"].to_pylist()
    if any(b <= a for a, b in zip(rows, rows[1:])):
        t = t.sort_by("row")
    return t


def _write(
    prep: Prepared, k: int, pieces: list[Any], progress: Reporter, stats: RayRunStats
) -> None:
    """Part ``k`` from the actors' rows: in input order, the driver's columns taken off, the
    store's schema; the timing columns go to ``stats``."""
    received = time.time()
    t = _joined(pieces)
    for piece in pieces:  # a piece per actor call (or less, were Ray to split a call's rows)
        actor, start, end, init, rss = (
            piece[c][0].as_py() for c in (_ACTOR, _START, _END, _INIT, _RSS)
        )
        a = stats.actors.setdefault(actor, ActorStats())
        a.texts += piece.num_rows
        a.peak_rss = max(a.peak_rss, rss)
        stats.log.append((k, actor, start, end, received, piece.num_rows))
        if (actor, start) not in stats._calls:
            stats._calls.add((actor, start))
            a.batches += 1
            a.busy_s += end - start
            a.init_s += init
    rows = unpack_features(t, prep.store.feature_columns, prep.store.schema)
    if rows.schema.remove_metadata() != prep.store.schema.remove_metadata():
        rows = rows.cast(prep.store.schema.remove_metadata())
    prep.writer.write_part(k, rows)
    stats.write_s += time.time() - received
    stats.batches += 1
    stats.texts += rows.num_rows
    progress.advance(rows.num_rows)
