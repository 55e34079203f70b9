"""Progress on the command line: on a terminal (a pseudo-terminal here) the long commands draw
a bar with units done / total on stderr and stdout keeps only the results; with --json, or
when stderr is not a terminal, there is no bar and stdout is pure JSON."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading

import pytest

from _cli import ROOT, run

pytestmark = [pytest.mark.slow, pytest.mark.model]

TEXT = "Quantum information theory allows us to study attention using entanglement"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def run_on_terminal(*args: str, timeout: float = 300) -> tuple[int, str, str]:
    """``python -m attntopo ARGS`` with stderr on a pseudo-terminal (120 columns) and stdout on
    a pipe; returns ``(exit code, stdout, stderr without terminal control sequences)``."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = dict(os.environ, MPLBACKEND="Agg", TERM="xterm-256color", COLUMNS="120")
    for var in ("ATTNTOPO_PROGRESS", "ATTNTOPO_DEBUG", "NO_COLOR", "TTY_COMPATIBLE"):
        env.pop(var, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "attntopo", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:  # read the terminal while the command runs (its buffer is small)
        while True:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: the command closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        reader.join(timeout=10)
        os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace")
    return proc.returncode, out.decode(), _ANSI.sub("\n", err)


def _counts(err: str) -> set[tuple[int, int]]:
    """Every ``done/total`` the bar showed."""
    return {(int(a), int(b)) for a, b in re.findall(r"(\d+)/(\d+)", err)}


@pytest.mark.parametrize(
    ("args", "total", "stage"),
    [
        # one text, layer 0: 1 forward pass (6 layers) + 12 heads' distances + 12 diagrams
        (["analyze", TEXT, "--layer", "0"], 6 + 2 * 12, "persistence"),
        # two texts: 2 passes of 6 layers, 12 heads' distances and diagrams of both texts and of the
        # shared words, diagram distances and connection scales per head
        (
            ["compare", TEXT, "Classical information theory studies entropy", "--layer", "0"],
            2 * 6 + 12 * 8,
            "connection scales",
        ),
        (["timeline", "The cat sat on the mat."], None, "vines"),
        # each command's LAST stage: the bar is redrawn ~10 times a second, so an earlier stage can
        # pass unseen, but the final redraw when the bar stops always shows the last one; heads:
        # only the counts are checked
        (["heads", TEXT], None, None),
    ],
    ids=["analyze", "compare", "timeline", "heads"],
)
def test_a_terminal_shows_a_bar_with_counts(args, total, stage):
    code, out, err = run_on_terminal(*args)
    assert code == 0, err
    assert stage is None or stage in err, err
    counts = _counts(err)
    assert counts, err
    if total is not None:
        assert (total, total) in counts, (total, sorted(counts))
    assert any(0 < d < t for d, t in counts) or max(t for _, t in counts) > 1, sorted(counts)
    assert out.strip() and "━" not in out  # results on stdout, the bar on stderr only


def test_json_on_a_terminal_has_pure_json_and_no_bar():
    code, out, err = run_on_terminal("analyze", TEXT, "--layer", "0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["summary"]) == 12
    assert "━" not in err and not _counts(err) and "persistence" not in err, err


def test_no_bar_when_stderr_is_not_a_terminal():
    r = run("analyze", TEXT, "--layer", "0")
    assert r.returncode == 0, r.stderr
    assert "━" not in r.stderr and "\x1b[" not in r.stderr and "persistence ·" not in r.stderr
