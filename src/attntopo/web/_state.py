"""What the explorer's routes and its application share: settings, slots, the server state.

A private module below :mod:`attntopo.web.app` and :mod:`attntopo.web.api` (both import it;
it imports neither), so the web layer's imports run one way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .._validation import check_byte_size, check_device, check_dtype
from ..errors import InvalidInputError
from ._errors import JobError
from .cache import LRUCache

__all__ = ["LOOPBACK_HOSTS", "ServerState", "Settings", "normalize_model"]

#: Hosts that only this machine can reach.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass
class Settings:
    """Settings of the explorer (the options of ``attntopo serve``).

    Attributes
    ----------
    model : str
        Default model of the page; also allowed when it is not a packaged alias (a hub id
        or a folder given on the command line).
    host, port : str, int
        Where uvicorn listens (used by ``attntopo serve`` and for the Host check).
    max_chars : int
        Longest text accepted, in characters.
    max_concurrent : int
        Analyses that may run at once; more get 503.
    timeout : float
        Seconds a request may take before it gets 504 (the computation finishes in the
        background and is cached, so a retry is fast).
    header_timeout : float
        Seconds a request's head (request line and headers) may take to arrive, from its first
        byte or from the connection's start; a slower one is answered 408 and its connection
        closed (:func:`attntopo.web.uvicorn_options`).
    body_timeout : float
        Seconds a request's body may take to arrive, from the end of its head (chunked or
        not); a slower one is answered 408 and its connection closed, as for the head.
    cache_size : int
        Analyses and comparisons kept in memory (LRU).
    cache_memory : int or str
        Bytes the kept results may hold together (``"1GB"``, ``"512MB"`` or an int of bytes;
        default 1GB), each measured when it is stored (its arrays' bytes and
        its Python objects': :func:`attntopo.web.cache.deep_sizeof`); the least recently used
        are dropped to make room, and a result larger than the bound is not kept.
    max_triangles : int
        Triangles sent per head and text (the earliest-born; the page says where the list
        stops being complete).
    models : tuple of str, optional
        Models the page may use (default: the packaged aliases installed here, plus
        ``model``).
    allowed_hosts : tuple of str, optional
        Host headers accepted (default: loopback names when bound to loopback, any
        otherwise); protects a local server against DNS rebinding.
    preload : bool
        Load the default model in the background at startup.
    device, dtype : str
        Where and in what every model of the page is loaded (``attntopo serve --device
        --dtype``; :func:`attntopo.load_model`'s): ``"cpu"`` and ``"float32"`` by default.
    """

    model: str = "minilm"
    host: str = "127.0.0.1"
    port: int = 8000
    max_chars: int = 2000
    max_concurrent: int = 2
    timeout: float = 60.0
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    cache_size: int = 16
    cache_memory: int | str = "1GB"
    max_triangles: int = 20000
    models: tuple[str, ...] | None = None
    allowed_hosts: tuple[str, ...] | None = None
    preload: bool = False
    device: str = "cpu"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        def positive_int(name: str, lo: int = 1, hi: int | None = None) -> None:
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, int)
                or v < lo
                or (hi is not None and v > hi)
            ):
                rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
                raise InvalidInputError(f"{name} must be an integer {rng}, got {v!r}")

        if not isinstance(self.model, str) or not self.model.strip():
            raise InvalidInputError("model must be a non-empty model name")
        if not isinstance(self.host, str) or not self.host.strip("[] \t"):
            raise InvalidInputError(  # "" binds every interface, IPv4 and IPv6
                f"host must be an address such as '127.0.0.1' or '0.0.0.0', got {self.host!r}"
            )
        positive_int("port", 0, 65535)
        positive_int("max_chars", 1, 1_000_000)
        positive_int("max_concurrent", 1, 64)
        positive_int("cache_size", 0)
        self.cache_memory = check_byte_size(self.cache_memory, "cache_memory")
        positive_int("max_triangles", 0)
        for name in ("timeout", "header_timeout", "body_timeout"):
            v = getattr(self, name)
            try:
                t = float(v)
            except (TypeError, ValueError):
                t = math.nan
            if isinstance(v, bool) or not (t > 0) or math.isinf(t):
                raise InvalidInputError(f"{name} must be a positive number of seconds, got {v!r}")
            setattr(self, name, t)
        self.device = check_device(self.device)  # before the server starts: one line
        self.dtype = check_dtype(self.dtype, self.device)
        if self.models is not None:
            self.models = tuple(str(m) for m in self.models)
        if self.allowed_hosts is not None:
            self.allowed_hosts = tuple(str(h).lower() for h in self.allowed_hosts)

    @property
    def is_loopback(self) -> bool:
        return self.host.strip("[]").lower() in LOOPBACK_HOSTS

    def load(self, name: str) -> Any:
        """``name`` loaded (cached per process) on this server's device, in its dtype."""
        from ..models import load_model

        # a server draws no progress bars (its requests run in threads)
        return load_model(name, device=self.device, dtype=self.dtype, progress=False)

    def host_names(self) -> tuple[str, ...]:
        """Host header values accepted (``("*",)`` = any)."""
        if self.allowed_hosts is not None:
            return self.allowed_hosts
        if self.is_loopback:
            return ("127.0.0.1", "localhost", "::1", "[::1]")
        return ("*",)


class _Slots:
    """A counter of running analyses (released by the worker thread when it finishes)."""

    def __init__(self, n: int):
        self.n = n
        self.running = 0
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        with self._lock:
            if self.running >= self.n:
                return False
            self.running += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)


@dataclass
class ServerState:
    """What the routes share: settings, the result cache, the worker threads and slots."""

    settings: Settings
    cache: LRUCache
    executor: concurrent.futures.ThreadPoolExecutor
    slots: _Slots
    started: float = field(default_factory=time.time)
    loaded: dict = field(default_factory=dict)  # model name -> AttentionModel.info()

    def allowed_models(self) -> list[str]:
        """Models the page may use, default first."""
        from ..models import packaged_aliases

        names = (
            list(self.settings.models) if self.settings.models is not None else packaged_aliases()
        )
        default = normalize_model(self.settings.model)
        return [default] + [n for n in names if normalize_model(n) != default]

    def check_model(self, name: str | None) -> str:
        """The model to use for a request (its default, or one of :meth:`allowed_models`)."""
        allowed = self.allowed_models()
        if name is None or not str(name).strip():
            return allowed[0]
        key = normalize_model(name)
        if key not in [normalize_model(a) for a in allowed]:
            raise InvalidInputError(
                f"model {str(name)[:80]!r} is not available on this server; available: "
                f"{', '.join(allowed)} (start the server with --model NAME to offer another)"
            )
        return key

    async def run(self, fn: Callable[[], Any], *, heavy: bool) -> Any:
        """Run ``fn`` in a worker thread under the concurrency limit and the timeout.

        ``heavy`` jobs (a model run) need a free slot, else :class:`JobError` 503.  A job
        that outlives the timeout raises :class:`JobError` 504; its thread finishes in the
        background (keeping its slot until then) and stores its result in the cache.
        """
        s = self.settings
        if heavy and not self.slots.try_acquire():
            raise JobError(
                503,
                f"the server is busy: {self.slots.running} analyses are running (at most "
                f"{s.max_concurrent} at once, --max-concurrent); try again in a moment",
                {"Retry-After": "2"},
            )

        def job() -> Any:
            try:
                return fn()
            finally:
                if heavy:
                    self.slots.release()

        try:
            fut = self.executor.submit(job)
        except RuntimeError:  # executor shut down: the server is stopping
            if heavy:
                self.slots.release()
            raise JobError(503, "the server is shutting down") from None
        try:
            return await asyncio.wait_for(asyncio.wrap_future(fut), timeout=s.timeout)
        except asyncio.TimeoutError:
            raise JobError(
                504,
                f"the request took longer than {s.timeout:g} s (the server's --timeout) and was "
                f"abandoned; its result is cached when it finishes, so retrying soon may be fast",
            ) from None


def normalize_model(name: str) -> str:
    """Aliases are case-insensitive; other names (hub ids, paths) are kept as written."""
    from ..models import ALIASES

    text = str(name).strip()
    return text.lower() if text.lower() in ALIASES else text
