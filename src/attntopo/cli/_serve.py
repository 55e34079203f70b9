"""``attntopo serve``: the explorer web page and its JSON API (127.0.0.1 by default)."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import __version__
from .._validation import check_byte_size, check_number
from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError
from ._common import check_device_dtype
from ._options import DebugOpt, command, with_help
from ._output import err_console, esc

_SERVE_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo serve                       # http://127.0.0.1:8000, packaged models\n"
    "  attntopo serve --port 8080 --open    # another port; open the page in a browser\n"
    "  attntopo serve --model smollm2 --max-chars 4000 --timeout 180\n\n"
    "The page and its JSON API (reference at /docs, schema at /openapi.json) are served by this "
    "process only; every script and style is local, so it works offline. It listens on 127.0.0.1 "
    "(this machine) unless --host says otherwise; there is no authentication."
)


_HELPS = {  # the shared options in this command's words
    "model": "Default model of the page; a hub id or folder given "
    "here is offered too (besides the packaged aliases).",
}


@command("serve", epilog=_SERVE_EPILOG, no_args_is_help=False, helps=_HELPS)
def serve_cmd(
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="HOST",
            help="Address to listen on; 127.0.0.1 = this machine only (0.0.0.0: every interface).",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port",
            "-p",
            min=0,
            max=65535,
            metavar="PORT",
            help="TCP port.",
        ),
    ] = 8000,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    max_chars: Annotated[
        int,
        typer.Option(
            "--max-chars",
            min=1,
            metavar="N",
            help="Longest text accepted, in characters.",
        ),
    ] = 2000,
    max_concurrent: Annotated[
        int,
        typer.Option(
            "--max-concurrent",
            min=1,
            metavar="N",
            help="Analyses running at once; more requests get 503 (busy).",
        ),
    ] = 2,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="S",
            help="Seconds a request may take before it gets "
            "504; the computation finishes and is cached.",
        ),
    ] = 60.0,
    header_timeout: Annotated[
        float,
        typer.Option(
            "--header-timeout",
            metavar="S",
            help="Seconds a request's headers may take to arrive; a slower connection gets 408 and "
            "is closed.",
        ),
    ] = 10.0,
    body_timeout: Annotated[
        float,
        typer.Option(
            "--body-timeout",
            metavar="S",
            help="Seconds a request's body may take to arrive after its headers; a slower "
            "connection gets 408 and is closed.",
        ),
    ] = 30.0,
    cache_size: Annotated[
        int,
        typer.Option(
            "--cache-size",
            min=0,
            metavar="N",
            help="Analyses and comparisons kept in memory.",
        ),
    ] = 16,
    cache_memory: Annotated[
        str,
        typer.Option(
            "--cache-memory",
            metavar="SIZE",
            help="Memory the kept analyses and comparisons may hold together (e.g. 512MB, 4GB), "
            "each measured when kept; the least recently used are dropped to make room.",
        ),
    ] = "1GB",
    open_browser: Annotated[
        bool,
        typer.Option(
            "--open/--no-open",
            help="Open the page in the default browser.",
        ),
    ] = False,
    debug: Annotated[bool, with_help(DebugOpt, "Log every request and show tracebacks.")] = False,
) -> None:
    """Serve the explorer: a local web page to type two texts, pick a model, layer and head, move a threshold slider and watch the token graphs, persistence diagrams and head maps — and the JSON API it uses.

    Stop with Ctrl+C.
    """  # noqa: E501 - typer keeps line breaks of help text
    if not host.strip("[] \t"):  # "" binds every interface, IPv4 and IPv6 (--host "$UNSET")
        raise InvalidInputError(
            f"--host {host!r} is empty: give an address to listen on, such as 127.0.0.1 "
            "(this machine only) or 0.0.0.0 (every interface)"
        )
    check_number(timeout, "--timeout", lo=0, lo_open=True, hint="seconds")
    check_number(header_timeout, "--header-timeout", lo=0, lo_open=True, hint="seconds")
    check_number(body_timeout, "--body-timeout", lo=0, lo_open=True, hint="seconds")
    cache_memory = check_byte_size(cache_memory, "--cache-memory")
    from ..errors import MissingDependencyError

    try:
        import uvicorn
    except ImportError:
        raise MissingDependencyError(
            "attntopo serve needs uvicorn: pip install 'attntopo[web]'"
        ) from None
    from ..models import resolve_spec
    from ..web import Settings, create_app, uvicorn_options  # one line without fastapi

    resolve_spec(model)  # an unknown alias or a missing folder fails here, in one line
    device, dtype = check_device_dtype(device, dtype)  # so does a device this machine lacks
    settings = Settings(
        model=model,
        host=host,
        port=port,
        max_chars=max_chars,
        max_concurrent=max_concurrent,
        timeout=timeout,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        cache_size=cache_size,
        cache_memory=cache_memory,
        preload=True,
        device=device,
        dtype=dtype,
    )
    _port_free(host, port)
    application = create_app(settings)
    shown = host if settings.is_loopback else "127.0.0.1"
    shown = f"[{shown}]" if ":" in shown and not shown.startswith("[") else shown
    url = f"http://{shown}:{port}/"
    if not settings.is_loopback:
        err_console.print(
            f"[bold red]warning: listening on {esc(host)}:{port}, not only on this machine.[/bold "
            "red] The explorer has no authentication: anyone who can reach this port can run "
            "models here and read what is typed. Use the default "
            "--host 127.0.0.1 unless that is what you want.",
            soft_wrap=True,
        )
    where = (
        ""
        if (settings.device, settings.dtype) == ("cpu", "float32")
        else f" ({settings.dtype} on {settings.device})"
    )
    err_console.print(
        f"attntopo {__version__} explorer on [bold]{url}[/bold] · API reference {url}docs · "
        f"default model {esc(model)}{where} · at most {max_chars} characters, "
        f"{max_concurrent} analyses at once, {timeout:g} s each · Ctrl+C stops",
        soft_wrap=True,
    )
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, lambda: webbrowser.open(url)).start()
    uvicorn.run(
        application,
        host=host.strip("[]"),
        port=port,
        log_level="info" if debug else "warning",
        access_log=debug,
        server_header=False,
        **uvicorn_options(settings),
    )


def _port_free(host: str, port: int) -> None:
    """Fail with one line, before starting uvicorn, when the address cannot be bound."""
    import socket

    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host.strip("[]"), port))
    except OSError as e:
        hint = " (another server is running there? try --port 8001)" if port else ""
        raise InvalidInputError(
            f"cannot listen on {host}:{port}: {e.strerror or e}{hint}"
        ) from None
