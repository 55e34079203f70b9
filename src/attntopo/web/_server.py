"""How uvicorn serves the explorer: the connection limits uvicorn leaves open.

uvicorn times out an idle kept-alive connection (5 s), but not a request that is still
arriving: a connection that sends its head, or its body, a byte a second stays open for as
long as it likes (slowloris; 3 such connections stayed 70 s).  :func:`uvicorn_options` gives
uvicorn an HTTP protocol (its own h11 one) with two timers, each answered with the explorer's
error shape, 408, after which the connection is closed:

* ``Settings.header_timeout``: the request head (request line and headers), from its first
  byte (or from the connection's start), must be complete within it;
* ``Settings.body_timeout``: the request body, from the end of the head, must be complete
  within it (chunked or not).  A deadline that falls while the server itself is not reading
  (its buffer of unread body is full) starts a new full period instead: that wait is not the
  client's (a pause that ended before the deadline still counts against it).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["timeout_protocol", "uvicorn_options"]


def uvicorn_options(settings: Any) -> dict:
    """Keyword arguments of ``uvicorn.run`` / ``uvicorn.Config`` that carry ``settings``'
    connection limits (``attntopo serve`` and the tests' live servers pass them)."""
    return {"http": timeout_protocol(settings.header_timeout, settings.body_timeout)}


def _timeout_answer(part: str, seconds: float, option: str) -> bytes:
    """A whole 408 response, ``{"error": "one line"}``, that closes the connection."""
    body = json.dumps(
        {
            "error": (
                f"the request's {part} took longer than {seconds:g} s to arrive (the server's "
                f"{option}): the connection is closed; send the whole request at once"
            )
        }
    ).encode()
    head = (
        f"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    return head + body


def timeout_protocol(header_seconds: float, body_seconds: float) -> type:
    """uvicorn's h11 protocol class with a timeout on each request's head (``header_seconds``)
    and on its body (``body_seconds`` from the end of the head)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    limits = {
        "head": (header_seconds, _timeout_answer("headers", header_seconds, "--header-timeout")),
        "body": (body_seconds, _timeout_answer("body", body_seconds, "--body-timeout")),
    }

    class TimeoutProtocol(H11Protocol):
        """Closes a connection whose request head or body takes longer than its limit."""

        _timer: Any = None
        _phase: str | None = None  # what the timer waits for: "head" or "body"

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm("head")  # a connection that sends nothing is closed too

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE:  # a request's head is arriving
                self._arm("head")
            super().data_received(data)
            self._follow()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # a pipelined request may have begun; else the next request's head is timed from
            # its first byte, and until then uvicorn's keep-alive timeout closes an idle
            # connection
            if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
                self._disarm()
            else:
                self._follow()

        def _follow(self) -> None:
            """The timer for what the client still has to send."""
            state = self.conn.their_state
            if state is h11.SEND_BODY:
                self._arm("body")
            elif state is h11.IDLE:  # a next head: begun, or awaited (uvicorn's keep-alive
                self._arm("head")  # timer is off once a late body has been read)
            else:  # the request is complete (or the connection broken)
                self._disarm()

        def _arm(self, phase: str) -> None:
            if self._timer is not None and self._phase == phase:
                return  # timed from the phase's start
            self._disarm()
            self._phase = phase
            self._timer = self.loop.call_later(limits[phase][0], self._too_slow, phase)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._phase = None

        def _too_slow(self, phase: str) -> None:
            self._timer = self._phase = None
            waiting = h11.IDLE if phase == "head" else h11.SEND_BODY
            if self.transport.is_closing() or self.conn.their_state is not waiting:
                return
            if phase == "body" and self.flow.read_paused:
                self._arm("body")  # the server is not reading: not the client's delay
                return
            seconds, answer = limits[phase]
            self.logger.info("closing a connection whose request %s took over %g s", phase, seconds)
            cycle = self.cycle
            if phase == "body" and cycle is not None:
                # the app waiting for the body reads a disconnect and its answer goes nowhere
                cycle.disconnected = True
                cycle.message_event.set()
                if cycle.response_started:  # it has answered already (413, 404, …)
                    self.transport.close()
                    return
            self.transport.write(answer)
            self.transport.close()

    return TimeoutProtocol
