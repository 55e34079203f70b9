"""How uvicorn serves the explorer: the connection limits uvicorn leaves open.

uvicorn times out an idle kept-alive connection (5 s), but not a request whose head is still
arriving: a connection that sends a byte a second stays open for as long as it likes
(slowloris; 3 such connections stayed 70 s).  :func:`uvicorn_options` gives uvicorn an HTTP
protocol (its own h11 one) that closes a connection whose request head, from its first byte
(or from the connection's start), is not complete within ``Settings.header_timeout`` seconds,
after answering 408 with the explorer's error shape.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["header_timeout_protocol", "uvicorn_options"]


def uvicorn_options(settings: Any) -> dict:
    """Keyword arguments of ``uvicorn.run`` / ``uvicorn.Config`` that carry ``settings``'
    connection limits (``attntopo serve`` and the tests' live servers pass them)."""
    return {"http": header_timeout_protocol(settings.header_timeout)}


def _timeout_answer(seconds: float) -> bytes:
    """A whole 408 response, ``{"error": "one line"}``, that closes the connection."""
    body = json.dumps(
        {
            "error": (
                f"the request's headers took longer than {seconds:g} s to arrive (the server's "
                "--header-timeout): the connection is closed; send the whole request at once"
            )
        }
    ).encode()
    head = (
        f"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    return head + body


def header_timeout_protocol(seconds: float) -> type:
    """uvicorn's h11 protocol class with a timeout on each request's head (``seconds``)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    answer = _timeout_answer(seconds)

    class HeaderTimeoutProtocol(H11Protocol):
        """Closes a connection whose request head is not complete ``seconds`` after it began."""

        _head_timer: Any = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()  # a connection that sends nothing is closed too

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE:  # a request's head is arriving
                self._arm()
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # its head is complete
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # the next request's head is timed from its first byte; until then uvicorn's
            # keep-alive timeout closes an idle connection
            self._disarm()

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _too_slow(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            self.logger.info("closing a connection whose request head took over %g s", seconds)
            self.transport.write(answer)
            self.transport.close()

    return HeaderTimeoutProtocol
