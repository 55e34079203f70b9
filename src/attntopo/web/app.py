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

import concurrent.futures
import contextlib
import logging
import threading
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import AttntopoError, InvalidInputError
from ._errors import JobError, error_response, one_line, validation_message
from ._guard import BodyLimit, Guard, max_body_bytes
from ._state import LOOPBACK_HOSTS, ServerState, Settings, _Slots
from .api import build_router
from .cache import LRUCache

__all__ = ["Settings", "create_app", "ServerState", "LOOPBACK_HOSTS"]

log = logging.getLogger("attntopo.web")

STATIC_DIR = Path(__file__).with_name("static")


# ---------------------------------------------------------------------------- app
def plotly_js_path() -> Path:
    """plotly.min.js bundled with the installed plotly package."""
    import plotly

    p = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not p.is_file():  # pragma: no cover - every plotly wheel ships it
        raise InvalidInputError(f"plotly.min.js not found in the plotly package ({p})")
    return p


_FASTAPI_BODY_ERROR = "There was an error parsing the body"


def _body_message(cause: BaseException | None) -> str:
    """What a request body that FastAPI could not read as JSON gets instead of FastAPI's own
    words (malformed JSON is a validation error, answered elsewhere)."""
    if isinstance(cause, RecursionError):  # [[[[…]]]] past Python's recursion limit
        return (
            "the request body nests JSON arrays or objects too deeply to be read: send one "
            "JSON object of the request's fields (see /docs)"
        )
    what = f" ({type(cause).__name__})" if cause is not None else ""
    return (
        f"the request body cannot be read as JSON{what}: send one JSON object of the "
        "request's fields (see /docs)"
    )


def _add_error_handlers(app: FastAPI, settings: Settings) -> None:
    """Every error the app answers is ``{"error": "one line"}`` with its status."""

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        status, msg = validation_message(list(exc.errors()), settings.max_chars)
        return error_response(status, msg)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 400 and detail == _FASTAPI_BODY_ERROR:  # FastAPI's json.loads failed
            detail = _body_message(exc.__cause__)
        elif exc.status_code == 404:
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
        return error_response(
            500,
            "internal error: the server could not complete this request "
            "(details are in the server log)",
        )


def _add_pages(app: FastAPI) -> None:
    """The page, its local API reference, and the static files (plotly.js and the ε slider
    served from the installed packages)."""
    vendor = plotly_js_path()

    @app.get("/static/vendor/plotly.min.js", include_in_schema=False)
    async def _plotly_js():
        return FileResponse(vendor, media_type="text/javascript")

    # the one ε slider of every threshold graph (the reports inline the same file)
    slider_js = Path(str(resources.files("attntopo.plots").joinpath("assets/scale_slider.js")))

    @app.get("/static/scale_slider.js", include_in_schema=False)
    async def _slider_js():
        return FileResponse(slider_js, media_type="text/javascript")

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
    settings = settings or Settings()

    def new_executor() -> concurrent.futures.ThreadPoolExecutor:
        return concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.max_concurrent + 4, thread_name_prefix="attntopo-web"
        )

    state = ServerState(
        settings=settings,
        cache=LRUCache(settings.cache_size, settings.cache_memory),
        executor=new_executor(),
        slots=_Slots(settings.max_concurrent),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if settings.preload:

            def preload() -> None:
                try:
                    name = state.check_model(None)
                    state.loaded[name] = settings.load(name).info()
                except Exception as e:  # noqa: BLE001 - reported when a request uses it
                    log.warning("could not preload model %s: %s", settings.model, one_line(e))

            threading.Thread(target=preload, name="attntopo-preload", daemon=True).start()
        yield
        # queued jobs are dropped; a fresh (idle, threadless) pool keeps the app usable if its
        # lifespan starts again (one TestClient context after another, in-process fuzzers)
        old, state.executor = state.executor, new_executor()
        old.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="attntopo explorer",
        version=__version__,
        description=(
            "The JSON API of the attntopo explorer: text → model → attention → Jensen–Shannon "
            "token distances → Vietoris–Rips persistence. The explorer page uses exactly these "
            'routes. Errors are `{"error": "one line"}` with status 400 (malformed JSON, input '
            "the library refuses), 408 (a request's head or body too slow to arrive), 413 "
            "(a body over the limit), 422 (invalid fields), 503 (busy), 504 (timeout) or 500. "
            'Infinite and undefined numbers are the strings "inf" and "nan".'
        ),
        docs_url=None,  # FastAPI's Swagger page loads its assets from a CDN; /docs is local
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.attntopo = state

    _add_error_handlers(app, settings)
    app.include_router(build_router(settings))
    _add_pages(app)

    # the last added runs first: the Host check and headers, then the body limit
    app.add_middleware(BodyLimit, max_body=max_body_bytes(settings.max_chars))
    app.add_middleware(Guard, hosts=settings.host_names())
    return app
