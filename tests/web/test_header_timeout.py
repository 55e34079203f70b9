"""A request's headers have a time limit (issue 33, item 7: three connections sending a byte a
second stayed open 70 s).  A real uvicorn server in a child process, started as ``attntopo
serve`` starts it (``uvicorn_options``), with ``header_timeout=1``; raw sockets play the slow
clients."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import pytest

WEB = "the explorer needs the web extra: pip install 'attntopo[web]'"
pytest.importorskip("fastapi", reason=WEB)
pytest.importorskip("uvicorn", reason=WEB)

from _live import server_process  # noqa: E402
from attntopo.errors import InvalidInputError  # noqa: E402
from attntopo.web import Settings  # noqa: E402

LIMIT = 1.0
REQUEST = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow\r\n\r\n"


@pytest.fixture(scope="module")
def server():
    with server_process(header_timeout=LIMIT) as (url, _pid):
        yield int(url.rsplit(":", 1)[1])


def _drip(port: int, data: bytes, every: float, out: list) -> None:
    """Send ``data`` a byte every ``every`` seconds until the server closes; append
    ``(seconds until closed, bytes sent, what the server answered)``."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(0.01)
    t0, sent, got = time.monotonic(), 0, b""
    try:
        while time.monotonic() - t0 < 20:
            if sent < len(data):
                try:
                    s.send(data[sent : sent + 1])
                    sent += 1
                except OSError:  # the server closed the connection
                    break
            deadline = time.monotonic() + every
            while time.monotonic() < deadline:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    out.append((time.monotonic() - t0, sent, got))
                    return
                got += chunk
    finally:
        s.close()
    out.append((time.monotonic() - t0, sent, got))


def _answer(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_slow_headers_are_answered_408_and_closed(server):
    out: list = []
    clients = [threading.Thread(target=_drip, args=(server, REQUEST, 0.2, out)) for _ in range(3)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    assert len(out) == 3
    for seconds, sent, got in out:
        # closed at the limit (timed from the connection, a moment before the client's clock)
        assert LIMIT - 0.1 <= seconds < LIMIT + 4, seconds
        assert sent < len(REQUEST)
        status, body = _answer(got)
        assert status == 408 and list(body) == ["error"]
        assert body["error"] == (
            "the request's headers took longer than 1 s to arrive (the "
            "server's --header-timeout): the connection is closed; send the "
            "whole request at once"
        )


def test_a_silent_connection_is_closed_too(server):
    out: list = []
    _drip(server, b"", 0.05, out)
    [(seconds, _, got)] = out
    assert LIMIT - 0.1 <= seconds < LIMIT + 4 and _answer(got)[0] == 408


def test_whole_requests_and_kept_alive_connections_are_served(server):
    with socket.create_connection(("127.0.0.1", server)) as s:
        s.settimeout(5)
        for _ in range(2):  # the second request is timed from its own first byte
            time.sleep(LIMIT * 0.8)
            s.sendall(REQUEST)
            got = b""
            while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
                got += s.recv(65536)
            status, body = _answer(got)
            assert status == 200 and body["status"] == "ok"
    # headers that arrive in pieces within the limit are fine
    quick = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server)) as s:
        s.settimeout(5)
        for k in range(0, len(quick), 20):
            s.sendall(quick[k : k + 20])
            time.sleep(LIMIT * 0.1)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    assert _answer(got)[0] == 200


def test_the_limit_is_checked_in_one_line():
    with pytest.raises(
        InvalidInputError, match="^header_timeout must be a positive number of seconds, got 0$"
    ):
        Settings(header_timeout=0)
    r = subprocess.run(
        [sys.executable, "-m", "attntopo", "serve", "--header-timeout", "-1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "--header-timeout" in r.stderr
