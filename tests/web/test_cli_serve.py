"""``attntopo serve``: its checks (one line, exit 2) and a real start and stop."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from _live import free_port
from attntopo.cli import main

pytest.importorskip(
    "fastapi", reason="the explorer needs the web extra: pip install 'attntopo[web]'"
)
pytest.importorskip(
    "uvicorn", reason="the explorer needs the web extra: pip install 'attntopo[web]'"
)


def _one_error_line(capsys, *words: str) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def test_serve_without_fastapi_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "fastapi", None)  # "not installed"
    for name in [m for m in sys.modules if m == "attntopo.web" or m.startswith("attntopo.web.")]:
        monkeypatch.delitem(sys.modules, name)
    assert main(["serve", "--port", str(free_port())]) == 2
    _one_error_line(capsys, "pip install 'attntopo[web]'")


@pytest.mark.parametrize(
    "args, words",
    [
        (["--timeout", "0"], ["--timeout"]),
        (["--timeout", "nan"], ["--timeout"]),
        (["--max-chars", "0"], ["--max-chars"]),
        (["--max-concurrent", "0"], ["--max-concurrent"]),
        (["--model", "./no/such/folder"], ["no such model"]),
        (["--port", "70000"], ["--port"]),
    ],
)
def test_serve_bad_options(capsys, args, words):
    assert main(["serve", *args]) == 2
    _one_error_line(capsys, *words)


def test_serve_port_in_use(capsys):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    _one_error_line(capsys, "cannot listen", str(port), "--port")


@pytest.mark.slow
def test_serve_starts_serves_and_stops(tmp_path):
    port = free_port()
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "attntopo",
            "serve",
            "--port",
            str(port),
            "--no-open",
            "--max-chars",
            "300",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 90
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as r:
                    health = json.loads(r.read())
                    break
            except OSError:
                time.sleep(0.3)
        assert health is not None, proc.stderr.read() if proc.poll() is not None else "no answer"
        assert health["max_chars"] == 300
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            assert b"attntopo" in r.read()
    finally:
        proc.terminate()
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    assert f"http://127.0.0.1:{port}/" in err
    assert "Traceback" not in err and "warning" not in err.lower()
