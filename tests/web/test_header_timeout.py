"""A request's headers have a time limit (issue 33, item 7: three connections sending a byte a
second stayed open 70 s).  A real uvicorn server in a child process, started as ``attntopo
serve`` starts it (``uvicorn_options``), with ``header_timeout=1``; raw sockets play the slow
clients."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

WEB = "the explorer needs the web extra: pip install 'attntopo[web]'"
pytest.importorskip("fastapi", reason=WEB)
pytest.importorskip("uvicorn", reason=WEB)

from _live import answer, drip, drip_together, server_process  # noqa: E402
from attntopo.errors import InvalidInputError  # noqa: E402
from attntopo.web import Settings  # noqa: E402

LIMIT = 1.0
REQUEST = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow\r\n\r\n"


@pytest.fixture(scope="module")
def server():
    with server_process(header_timeout=LIMIT) as (url, _pid):
        yield int(url.rsplit(":", 1)[1])


def test_slow_headers_are_answered_408_and_closed(server):
    for seconds, sent, got in drip_together(server, REQUEST, 0.2):
        # closed at the limit (timed from the connection, a moment before the client's clock)
        assert LIMIT - 0.1 <= seconds < LIMIT + 4, seconds
        assert sent < len(REQUEST)
        status, body = answer(got)
        assert status == 408 and list(body) == ["error"]
        assert body["error"] == (
            "the request's headers took longer than 1 s to arrive (the "
            "server's --header-timeout): the connection is closed; send the "
            "whole request at once"
        )


def test_a_silent_connection_is_closed_too(server):
    out: list = []
    drip(server, b"", 0.05, out)
    [(seconds, _, got)] = out
    assert LIMIT - 0.1 <= seconds < LIMIT + 4 and answer(got)[0] == 408


def test_whole_requests_and_kept_alive_connections_are_served(server):
    with socket.create_connection(("127.0.0.1", server)) as s:
        s.settimeout(5)
        for _ in range(2):  # the second request is timed from its own first byte
            time.sleep(LIMIT * 0.8)
            s.sendall(REQUEST)
            got = b""
            while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
                got += s.recv(65536)
            status, body = answer(got)
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
    assert answer(got)[0] == 200


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
