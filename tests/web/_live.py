"""Helpers shared by the browser tests and ``tools/make_screenshot.py``: a real uvicorn server in a
background thread on a free localhost port, and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import threading
import time
from typing import Iterator

CHROMIUM = os.environ.get("ATTNTOPO_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def chromium_missing_reason() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install 'attntopo[test]')"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        found = shutil.which("chromium")
        hint = f" (found {found}; set ATTNTOPO_CHROMIUM)" if found else ""
        return (
            f"{CHROMIUM} is missing{hint}: install Debian's chromium "
            f"(apt-get install -y chromium, or `make browser` as root)"
        )
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def live_server(settings=None) -> Iterator[str]:
    """Run the explorer with uvicorn in a thread; yields its base URL."""
    import uvicorn

    from attntopo.web import Settings, create_app, uvicorn_options

    port = free_port()
    settings = settings or Settings()
    settings.host, settings.port = "127.0.0.1", port
    config = uvicorn.Config(
        create_app(settings),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
        **uvicorn_options(settings),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="attntopo-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def chromium_browser():
    """A headless Chromium (Debian's) under Playwright's sync API."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


_SERVE = """
import sys, uvicorn
from attntopo.web import Settings, create_app, uvicorn_options
port = int(sys.argv[1])
settings = Settings(host="127.0.0.1", port=port, **eval(sys.argv[2]))
uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on",
            **uvicorn_options(settings))
"""


@contextlib.contextmanager
def server_process(**settings) -> Iterator[tuple[str, int]]:
    """Run the explorer with uvicorn in a child process (its own memory, so its RSS can be
    read from ``/proc/<pid>/status``); yields ``(base URL, pid)``.  No model is preloaded."""
    import subprocess
    import sys

    import httpx

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE, str(port), repr(settings)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the test server exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(url + "/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the test server did not start within 60 s")
            time.sleep(0.1)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def memory_kib(pid: int) -> dict[str, int]:
    """``VmRSS`` (resident now) and ``VmHWM`` (peak resident) of a process, in KiB (Linux)."""
    from attntopo._memory import status_kib

    out = status_kib("VmRSS", "VmHWM", pid=pid)
    assert out is not None, f"/proc/{pid}/status cannot be read"
    return out


def drip(port: int, data: bytes, every: float, out: list, *, head: bytes = b"") -> None:
    """Send ``head`` at once, then ``data`` a byte every ``every`` seconds, until the server
    closes; append ``(seconds from the end of head until closed, bytes of data sent, what the
    server answered)`` (the slow clients of the header and body timeout tests)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head)
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


def drip_together(port: int, data: bytes, every: float, n: int = 3, *, head: bytes = b"") -> list:
    """:func:`drip` from ``n`` clients at once; their ``n`` outcomes."""
    out: list = []
    clients = [
        threading.Thread(target=drip, args=(port, data, every, out), kwargs={"head": head})
        for _ in range(n)
    ]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    assert len(out) == n
    return out


def answer(raw: bytes) -> tuple[int, dict]:
    """``(status, JSON body)`` of one raw HTTP response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)
