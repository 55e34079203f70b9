"""The explorer's ASGI middleware: the Host check, security headers and the body size limit.

Both classes are pure ASGI middleware (no request object is built), added by
:func:`attntopo.web.app.create_app`:

* :class:`Guard` refuses foreign ``Host`` headers (DNS-rebinding protection) and adds the
  security headers (Content-Security-Policy, …) to every response;
* :class:`BodyLimit` counts the bytes of a request body as they arrive, by wrapping
  ``receive``: a declared ``Content-Length`` over the limit is refused before anything is
  read, and any body (chunked, without a ``Content-Length``, or with one that lies) is
  refused the moment its running total passes the limit.  The rest is never read: the
  ``413`` answer says ``Connection: close`` and the server closes the connection.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException

from ._errors import error_response

__all__ = ["BodyLimit", "BodyTooLarge", "Guard", "max_body_bytes"]

# Content-Security-Policy of every response: the page may load and contact only this server.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_CLOSE = {"Connection": "close"}


def max_body_bytes(max_chars: int) -> int:
    """Largest request body accepted, in bytes, for texts of at most ``max_chars`` characters.

    A JSON body holds at most two texts (4 bytes a character in UTF-8, up to 6 as a JSON
    ``\\uXXXX`` escape) plus a few small fields: ``2 * 6 * max_chars + 16384``.
    """
    return 2 * 6 * max_chars + 16_384


async def _reply(send, status: int, message: str, headers: dict | None = None) -> None:
    """Send ``{"error": message}`` as the whole response."""
    resp = error_response(status, message, headers)
    await send({"type": "http.response.start", "status": status, "headers": resp.raw_headers})
    await send({"type": "http.response.body", "body": resp.body})


class BodyTooLarge(HTTPException):
    """Raised by :class:`BodyLimit`'s ``receive`` once a body passes the limit.

    An :class:`~starlette.exceptions.HTTPException` (413, ``Connection: close``), so that
    FastAPI passes it on unchanged from wherever the body is read and the app's handler
    answers it as one JSON line; :class:`BodyLimit` answers it itself if it gets that far.
    """

    def __init__(self, limit: int, received: int | None = None, declared: int | None = None):
        if declared is not None:
            what = f"{declared} bytes declared by Content-Length"
        else:
            what = f"more than {limit} bytes received"
        super().__init__(
            413, f"request body too large ({what}; at most {limit} bytes)", dict(_CLOSE)
        )
        self.limit, self.received = limit, received


class BodyLimit:
    """ASGI middleware: at most ``max_body`` bytes of request body, counted as they arrive.

    Parameters
    ----------
    app : ASGI application
    max_body : int
        Bytes of body accepted per request (the sum of every ``http.request`` message).
    """

    def __init__(self, app, max_body: int):
        self.app = app
        self.max_body = int(max_body)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body:
            exc = BodyTooLarge(self.max_body, declared=declared)
            return await _reply(send, 413, exc.detail, exc.headers)

        received = 0
        started = False

        async def counted_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise BodyTooLarge(self.max_body, received=received)
            return message

        async def watched_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except BodyTooLarge as exc:  # read outside FastAPI's request handling
            if started:
                raise
            await _reply(send, 413, exc.detail, exc.headers)


def _content_length(scope) -> int | None:
    for k, v in scope.get("headers", ()):
        if k.lower() == b"content-length":
            try:
                return int(v)
            except ValueError:
                return None
    return None


class Guard:
    """ASGI middleware: Host check (DNS-rebinding protection) and security headers.

    Parameters
    ----------
    app : ASGI application
    hosts : tuple of str
        Host names accepted (``"*"``: any).
    """

    def __init__(self, app, hosts: tuple[str, ...]):
        self.app = app
        self.hosts = set(hosts)
        self.any_host = "*" in self.hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if not self.any_host:
            host = next(
                (v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == b"host"),
                "",
            )
            name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
            if name.lower() not in self.hosts:
                return await _reply(
                    send,
                    400,
                    f"invalid Host header {host[:100]!r}: this server answers only to "
                    f"{', '.join(sorted(self.hosts))} (DNS-rebinding protection)",
                )
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
