"""The explorer's FastAPI application: settings, limits, error handling and static files.

:func:`create_app` builds one ASGI app from :class:`Settings`.  Everything is served locally
(the page, its JS and CSS, plotly.js from the installed plotly package, an API reference
page rendered from ``/openapi.json``), so the explorer works without internet access.

Errors are always JSON ``{"error": "one line"}``: 400 for malformed JSON and for inputs the
library refuses (:class:`~attntopo.errors.AttntopoError`: an out-of-range layer, a text with
more tokens than the model takes, …), 422 for invalid fields, 503 when ``max_concurrent``
analyses are already running, 504 after ``timeout`` seconds, 500 with a generic message for
anything unexpected (the traceback goes to the server log, never to the client).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import AttntopoError, InvalidInputError
from .cache import LRUCache

__all__ = ["Settings", "create_app", "ServerState", "LOOPBACK_HOSTS"]

log = logging.getLogger("attntopo.web")

STATIC_DIR = Path(__file__).with_name("static")
#: Hosts that only this machine can reach.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

# Content-Security-Policy of every response: the page may load and contact only this server.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@dataclass
class Settings:
    """Settings of the explorer (the options of ``attntopo serve``).

    Attributes
    ----------
    model : str
        Default model of the page; also allowed when it is not a packaged alias (a hub id
        or a folder given on the command line).
    host, port : str, int
        Where uvicorn listens (used by :func:`attntopo.web.serve` and for the Host check).
    max_chars : int
        Longest text accepted, in characters.
    max_concurrent : int
        Analyses that may run at once; more get 503.
    timeout : float
        Seconds a request may take before it gets 504 (the computation finishes in the
        background and is cached, so a retry is fast).
    cache_size : int
        Analyses and comparisons kept in memory (LRU).
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
    """

    model: str = "minilm"
    host: str = "127.0.0.1"
    port: int = 8000
    max_chars: int = 2000
    max_concurrent: int = 2
    timeout: float = 60.0
    cache_size: int = 16
    max_triangles: int = 20000
    models: tuple[str, ...] | None = None
    allowed_hosts: tuple[str, ...] | None = None
    preload: bool = False

    def __post_init__(self) -> None:
        def positive_int(name: str, lo: int = 1, hi: int | None = None) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
                rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
                raise InvalidInputError(f"{name} must be an integer {rng}, got {v!r}")

        if not isinstance(self.model, str) or not self.model.strip():
            raise InvalidInputError("model must be a non-empty model name")
        positive_int("port", 0, 65535)
        positive_int("max_chars", 1, 1_000_000)
        positive_int("max_concurrent", 1, 64)
        positive_int("cache_size", 0)
        positive_int("max_triangles", 0)
        try:
            t = float(self.timeout)
        except (TypeError, ValueError):
            t = math.nan
        if isinstance(self.timeout, bool) or not (t > 0) or math.isinf(t):
            raise InvalidInputError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        self.timeout = t
        if self.models is not None:
            self.models = tuple(str(m) for m in self.models)
        if self.allowed_hosts is not None:
            self.allowed_hosts = tuple(str(h).lower() for h in self.allowed_hosts)

    @property
    def is_loopback(self) -> bool:
        return self.host.strip("[]").lower() in LOOPBACK_HOSTS

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


class JobError(Exception):
    """A request that cannot run now: ``status`` 503 (busy) or 504 (timeout)."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


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

        names = list(self.settings.models) if self.settings.models is not None else packaged_aliases()
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


# ------------------------------------------------------------------- error messages
def one_line(msg: Any, limit: int = 400) -> str:
    s = re.sub(r"\s*\n\s*", " ", str(msg)).strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def error_response(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": one_line(message)}, status_code=status, headers=headers)


def _field_name(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts)


def validation_message(errors: list[dict], max_chars: int) -> tuple[int, str]:
    """``(status, one line)`` for pydantic's errors: 400 for malformed JSON, else 422."""
    if not errors:
        return 422, "invalid request"
    e = errors[0]
    kind = e.get("type", "")
    loc = tuple(e.get("loc", ()))
    name = _field_name(loc)
    ctx = e.get("ctx") or {}
    if kind == "json_invalid":
        pos = loc[1] if len(loc) > 1 else None
        where = f" at character {pos}" if isinstance(pos, int) else ""
        return 400, f"malformed JSON in the request body{where}: {ctx.get('error', 'cannot be parsed')}"
    if loc == ("body",) or not name:
        if kind == "missing":
            return 400, "the request needs a JSON body (Content-Type: application/json)"
        if kind in ("model_attributes_type", "dict_type", "model_type"):
            return 400, ("the request body must be a JSON object (send Content-Type: application/json), "
                         "see /docs for its fields")
        name = ""
    if kind == "missing":
        msg = f"missing field {name!r}"
    elif kind == "extra_forbidden":
        msg = f"unknown field {name!r}; see /docs for the fields of this request"
    elif kind == "string_too_long":
        got = e.get("input")
        n = len(got) if isinstance(got, str) else None
        limit = ctx.get("max_length", max_chars)
        msg = (f"{name} is too long: {n} characters; this server accepts at most {limit} "
               f"(attntopo serve --max-chars)") if n is not None else f"{name} is too long (at most {limit} characters)"
    elif kind == "string_too_short" and ctx.get("min_length") == 1:
        msg = f"{name} is empty: give at least one word"
    else:
        text = str(e.get("msg", "invalid value"))
        text = re.sub(r"^(Value error|Assertion failed), ", "", text)
        if not name or text.startswith(name):
            msg = text
        else:
            msg = f"{name}: {text[:1].lower() + text[1:]}"
    more = len(errors) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return 422, msg


# --------------------------------------------------------------------- middleware
class _Guard:
    """Pure ASGI middleware: Host check, body size limit, security headers."""

    def __init__(self, app, hosts: tuple[str, ...], max_body: int):
        self.app = app
        self.hosts = set(hosts)
        self.any_host = "*" in self.hosts
        self.max_body = max_body

    async def _reply(self, send, status: int, message: str) -> None:
        resp = error_response(status, message)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(k.encode(), v.encode()) for k, v in resp.headers.items()]})
        await send({"type": "http.response.body", "body": resp.body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not self.any_host:
            host = headers.get("host", "")
            name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
            if name.lower() not in self.hosts:
                return await self._reply(
                    send, 400, f"invalid Host header {host[:100]!r}: this server answers only to "
                    f"{', '.join(sorted(self.hosts))} (DNS-rebinding protection)")
        length = headers.get("content-length")
        if length is not None:
            try:
                too_big = int(length) > self.max_body
            except ValueError:
                too_big = False
            if too_big:
                return await self._reply(
                    send, 413, f"request body too large ({length} bytes; at most {self.max_body})")
        path = scope.get("path", "")

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                extra = [
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"content-security-policy", _CSP.encode()),
                ]
                if path.startswith("/api/"):
                    extra.append((b"cache-control", b"no-store"))
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        return await self.app(scope, receive, send_with_headers)


# ---------------------------------------------------------------------------- app
def plotly_js_path() -> Path:
    """plotly.min.js bundled with the installed plotly package."""
    import plotly

    p = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not p.is_file():  # pragma: no cover - every plotly wheel ships it
        raise InvalidInputError(f"plotly.min.js not found in the plotly package ({p})")
    return p


def create_app(settings: Settings | None = None) -> FastAPI:
    """The explorer as an ASGI app (run it with uvicorn; ``attntopo serve`` does).

    Parameters
    ----------
    settings : Settings, optional
        Limits and defaults (``Settings()`` if not given).

    Returns
    -------
    fastapi.FastAPI
        Routes: ``/`` (the page), ``/api/*`` (JSON API), ``/openapi.json``, ``/docs`` (a
        local API reference page), ``/static/*``.
    """
    from .api import build_router

    settings = settings or Settings()
    executor = concurrent.futures.ThreadPoolExecutor(
        max_workers=settings.max_concurrent + 4, thread_name_prefix="attntopo-web"
    )
    state = ServerState(
        settings=settings,
        cache=LRUCache(settings.cache_size),
        executor=executor,
        slots=_Slots(settings.max_concurrent),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if settings.preload:
            def preload() -> None:
                try:
                    from ..models import load_model

                    name = state.check_model(None)
                    state.loaded[name] = load_model(name).info()
                except Exception as e:  # noqa: BLE001 - reported when a request uses it
                    log.warning("could not preload model %s: %s", settings.model, one_line(e))

            threading.Thread(target=preload, name="attntopo-preload", daemon=True).start()
        yield
        executor.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="attntopo explorer",
        version=__version__,
        description=(
            "The JSON API of the attntopo explorer: text → model → attention → Jensen–Shannon "
            "token distances → Vietoris–Rips persistence. The explorer page uses exactly these "
            "routes. Errors are `{\"error\": \"one line\"}` with status 400 (malformed JSON, input "
            "the library refuses), 422 (invalid fields), 503 (busy), 504 (timeout) or 500. "
            "Infinite and undefined numbers are the strings \"inf\" and \"nan\"."
        ),
        docs_url=None,  # FastAPI's Swagger page loads its assets from a CDN; /docs is local
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.attntopo = state

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        status, msg = validation_message(list(exc.errors()), settings.max_chars)
        return error_response(status, msg)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404:
            detail = f"not found: {request.url.path[:200]}"
        elif exc.status_code == 405:
            detail = f"method {request.method} is not allowed on {request.url.path[:200]}"
        return error_response(exc.status_code, detail, getattr(exc, "headers", None))

    @app.exception_handler(JobError)
    async def _job(request: Request, exc: JobError):
        return error_response(exc.status, exc.message, exc.headers)

    @app.exception_handler(AttntopoError)
    async def _attntopo(request: Request, exc: AttntopoError):
        return error_response(400, str(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal error: the server could not complete this request "
                                   "(details are in the server log)")

    app.include_router(build_router(settings))

    vendor = plotly_js_path()

    @app.get("/static/vendor/plotly.min.js", include_in_schema=False)
    async def _plotly_js():
        return FileResponse(vendor, media_type="text/javascript")

    @app.get("/", include_in_schema=False)
    async def _index():
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    @app.get("/docs", include_in_schema=False)
    async def _docs():
        return FileResponse(STATIC_DIR / "docs.html", media_type="text/html")

    @app.get("/favicon.ico", include_in_schema=False)
    async def _favicon():
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    # JSON bodies hold at most two texts of max_chars characters (4 bytes each in UTF-8,
    # up to 6 as JSON escapes) plus a few small fields
    max_body = 2 * 6 * settings.max_chars + 16_384
    app.add_middleware(_Guard, hosts=settings.host_names(), max_body=max_body)
    return app

