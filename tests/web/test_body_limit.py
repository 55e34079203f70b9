"""The request body limit counts bytes as they arrive (issue 13: a chunked 200 MB upload was
read into memory in full, then answered 422).

In process (httpx's ASGITransport pulls the body one chunk per ``receive``) the number of
chunks the server asked for is exact; against a real uvicorn server in a child process the
bytes the client got rid of are bounded by the socket buffers of the loopback connection,
and the server's peak resident memory shows what it kept.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

pytest.importorskip(
    "fastapi", reason="the explorer needs the web extra: pip install 'attntopo[web]'"
)
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx: pip install 'attntopo[web]'")
pytest.importorskip(
    "uvicorn", reason="the explorer needs the web extra: pip install 'attntopo[web]'"
)

from _live import memory_kib, server_process  # noqa: E402
from attntopo.web import Settings, create_app  # noqa: E402
from attntopo.web._guard import max_body_bytes  # noqa: E402
from web_helpers import BASE, assert_clean_error, assert_serving, make_client  # noqa: E402

CHUNK = 64 * 1024
MAX_BODY = max_body_bytes(Settings().max_chars)  # the default server's limit
# uvicorn's h11 protocol stops reading the socket once 64 KiB of body wait for the app
UVICORN_BUFFER = 64 * 1024


def _sysctl_max(name: str) -> int:
    with open(f"/proc/sys/net/ipv4/{name}") as f:
        return int(f.read().split()[-1])


def _in_flight_bound() -> int:
    """Most body bytes a client can get rid of although the server stopped reading at the
    limit: the limit, uvicorn's buffer, the server's receive and the client's send buffer."""
    return MAX_BODY + UVICORN_BUFFER + _sysctl_max("tcp_rmem") + _sysctl_max("tcp_wmem")


# a body far larger than anything the connection can absorb (at least the 50 MB of the issue)
TOTAL = max(50 * 2**20, 2 * _in_flight_bound())


class Body:
    """A JSON body of ``total`` bytes in chunks, counting the bytes handed out."""

    def __init__(self, total: int = TOTAL):
        self.total, self.sent = total, 0

    def _chunks(self):
        yield b'{"text": "'
        while self.sent < self.total:
            self.sent += CHUNK
            yield b"x" * CHUNK
        yield b'"}'

    def __iter__(self):
        return self._chunks()

    async def chunks_async(self):
        for c in self._chunks():
            yield c

    @property
    def exhausted(self) -> bool:
        return self.sent >= self.total


async def _post_streamed(headers: dict, body: Body):
    import httpx

    transport = httpx.ASGITransport(app=create_app(Settings()))
    async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=30) as c:
        return await c.post(
            "/api/analyze",
            content=body.chunks_async(),
            headers={"content-type": "application/json", **headers},
        )


# ------------------------------------------------------------------------ in process
@pytest.mark.parametrize(
    "headers", [{}, {"content-length": "100"}], ids=["chunked", "lying-length"]
)
def test_streamed_body_over_the_limit_gets_413_at_the_limit(headers):
    """No Content-Length, or one that claims 100 bytes: the 413 comes as soon as the running
    total passes the limit; the server asks for no chunk after that one."""
    body = Body()
    r = asyncio.run(_post_streamed(headers, body))
    assert_clean_error(r, 413, "too large", str(MAX_BODY))
    assert r.headers["connection"] == "close"
    assert not body.exhausted
    assert MAX_BODY < body.sent <= MAX_BODY + CHUNK


def test_streamed_body_under_the_limit_is_read_as_usual():
    """A chunked body within the limit reaches validation (here: maxdim out of range)."""
    import httpx

    async def chunks():
        for part in (b'{"text": "hello', b' world", ', b'"maxdim": 7}'):
            yield part

    async def post():
        transport = httpx.ASGITransport(app=create_app(Settings()))
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as c:
            return await c.post(
                "/api/analyze", content=chunks(), headers={"content-type": "application/json"}
            )

    assert_clean_error(asyncio.run(post()), 422, "maxdim")


def test_declared_length_over_the_limit_is_refused_before_reading():
    c = make_client()
    r = c.post(
        "/api/analyze",
        content=b"{}",
        headers={"content-type": "application/json", "content-length": str(MAX_BODY + 1)},
    )
    assert_clean_error(r, 413, "too large", "Content-Length")
    assert_serving(c)


# ---------------------------------------------------------------- a real uvicorn server
@pytest.mark.slow
def test_chunked_upload_to_a_live_server_is_cut_off_at_the_limit():
    import httpx

    with server_process() as (url, pid):
        before = memory_kib(pid)["VmRSS"]
        body = Body()
        r = httpx.post(
            url + "/api/analyze",
            content=body,
            timeout=60,
            headers={"content-type": "application/json"},
        )
        assert_clean_error(r, 413, "too large")
        assert not body.exhausted, "the server read the whole body"
        assert body.sent <= _in_flight_bound() + CHUNK
        grown = memory_kib(pid)["VmHWM"] - before
        # the server holds at most the limit plus uvicorn's buffer of body; the rest of the
        # margin is the handling of one request (TOTAL is over 50 MB)
        assert grown < 8 * 1024, f"server peak RSS grew by {grown} KiB"
        assert httpx.get(url + "/api/health").status_code == 200


def _raw_post(url: str, declared: int, body: Body) -> tuple[bytes, int]:
    """POST with a hand-written Content-Length header; returns (the answer, bytes sent)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(
            f"POST /api/analyze HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared}\r\n\r\n".encode()
        )
        try:
            for chunk in body:
                s.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection: what we want
        answer = b""
        try:
            while part := s.recv(65536):
                answer += part
        except ConnectionResetError:
            pass
        return answer, body.sent


@pytest.mark.slow
def test_lying_content_length_on_a_live_server_bounds_what_is_read():
    """A Content-Length under the limit followed by 50+ MB, and one over the limit with no
    body at all: the server reads neither body to the end and keeps no copy of it."""
    with server_process() as (url, pid):
        before = memory_kib(pid)["VmRSS"]
        body = Body()
        answer, sent = _raw_post(url, 1000, body)
        assert answer.startswith(b"HTTP/1.1 4"), answer[:200]
        assert not body.exhausted and sent <= _in_flight_bound() + CHUNK
        answer, sent = _raw_post(url, 10**10, Body(0))
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"10000000000 bytes declared" in answer
        assert memory_kib(pid)["VmHWM"] - before < 8 * 1024
