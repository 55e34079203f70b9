"""A request's body has a time limit too (``--body-timeout``, from the end of its head): a
client that sends whole headers and then its body a byte at a time no longer holds a
connection for as long as it likes.  A real uvicorn server in a child process, started as
``attntopo serve`` starts it (``uvicorn_options``), with ``body_timeout=2`` and a header
timeout long enough not to be the one that acts; raw sockets play the clients."""

from __future__ import annotations

import socket
import time

import pytest

WEB = "the explorer needs the web extra: pip install 'attntopo[web]'"
pytest.importorskip("fastapi", reason=WEB)
pytest.importorskip("uvicorn", reason=WEB)

from _live import answer, drip, drip_together, server_process  # noqa: E402
from attntopo.cli._common import main  # noqa: E402
from attntopo.errors import InvalidInputError  # noqa: E402
from attntopo.web import Settings  # noqa: E402

LIMIT = 2.0  # s: the clients in time take at most 0.6 of it, leaving 0.8 s for a loaded machine
HEADER_LIMIT = 8.0
# a body the server reads whole and answers without a model: 400, the layer out of range
BODY = b'{"text": "hi", "layer": 6, "head": 0}'
IN_RANGE_ERROR = "layer 6 is out of range: minilm has 6 layers, valid are 0..5 (or -6..-1)"
SLOW_BODY = (
    "the request's body took longer than 2 s to arrive (the server's --body-timeout): the "
    "connection is closed; send the whole request at once"
)


def _head(path: str = "/api/analyze", *, length: int | None = len(BODY)) -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{framing}\r\n\r\n"
    ).encode()


def _chunked(*pieces: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


@pytest.fixture(scope="module")
def server():
    with server_process(header_timeout=HEADER_LIMIT, body_timeout=LIMIT) as (url, _pid):
        yield int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_slow_body_is_answered_408_and_closed(server, chunked):
    head = _head(length=None if chunked else len(BODY))
    body = _chunked(BODY) if chunked else BODY
    for seconds, sent, got in drip_together(server, body, 0.2, head=head):
        # closed at the limit, timed from the end of the head (before the client's clock)
        assert LIMIT - 0.1 <= seconds < LIMIT + 4, seconds
        assert sent < len(body)
        status, error = answer(got)
        assert (status, error) == (408, {"error": SLOW_BODY})
        assert got.count(b"HTTP/1.1") == 1


def test_a_body_never_sent_is_timed_out_too(server):
    out: list = []
    drip(server, b"", 0.05, out, head=_head())
    [(seconds, _, got)] = out
    assert LIMIT - 0.1 <= seconds < LIMIT + 4 and answer(got) == (408, {"error": SLOW_BODY})


def test_a_slow_body_after_the_answer_is_closed_without_a_second_one(server):
    """A route that answers before reading the body (404 here) leaves the connection to the
    rest of the body: the client gets its one answer, then the connection is closed."""
    out: list = []
    drip(server, BODY, 0.2, out, head=_head("/api/nowhere"))
    [(seconds, sent, got)] = out
    assert LIMIT - 0.1 <= seconds < LIMIT + 4 and sent < len(BODY)
    assert got.count(b"HTTP/1.1") == 1
    assert answer(got) == (404, {"error": "not found: /api/nowhere"})


def _send_in_pieces(port: int, head: bytes, body: bytes, pieces: int) -> bytes:
    """The head in ``pieces`` pieces, then the body in as many, each phase taking 0.4 of its
    limit; the whole answer (the request says ``Connection: close``)."""
    head = head.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(10)
        for data, limit in ((head, HEADER_LIMIT / 8), (body, LIMIT)):
            step = -(-len(data) // pieces)
            for k in range(0, len(data), step):
                s.sendall(data[k : k + step])
                time.sleep(limit * 0.4 / pieces)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    return got


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_sent_in_time_is_read_whole(server, chunked):
    """A body in pieces within the limit (after a head that took its own time) is read whole
    and answered: here the layer it names is refused, so the server parsed all of it."""
    half = len(BODY) // 2
    body = _chunked(BODY[:half], BODY[half:]) if chunked else BODY
    got = _send_in_pieces(server, _head(length=None if chunked else len(BODY)), body, 4)
    assert answer(got) == (400, {"error": IN_RANGE_ERROR})


def test_kept_alive_requests_each_have_their_own_limit(server):
    """Two requests on one connection, each taking 0.6 of the limit (together 1.2 of it):
    both answered."""
    with socket.create_connection(("127.0.0.1", server)) as s:
        s.settimeout(10)
        for _ in range(2):
            s.sendall(_head())
            time.sleep(LIMIT * 0.3)
            s.sendall(BODY[:10])
            time.sleep(LIMIT * 0.3)
            s.sendall(BODY[10:])
            got = b""
            while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
                got += s.recv(65536)
            assert answer(got) == (400, {"error": IN_RANGE_ERROR})


def test_the_limit_is_checked_in_one_line(capsys):
    with pytest.raises(
        InvalidInputError, match="^body_timeout must be a positive number of seconds, got -1$"
    ):
        Settings(body_timeout=-1)
    for bad in ("0", "-2", "nan", "inf"):
        code = main(["serve", "--body-timeout", bad])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", (bad, code, out, err)
        [line] = err.strip().splitlines()
        assert "--body-timeout" in line and "seconds" in line, line
