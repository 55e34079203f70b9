"""Shared helpers of the CLI tests: run ``python -m attntopo`` as a subprocess, check errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(
    *args: str,
    cwd: Path | None = None,
    timeout: float = 300,
    stdin: str | None = None,
    columns: int = 120,
) -> subprocess.CompletedProcess:
    """``python -m attntopo ARGS`` in the repository root (or ``cwd``), non-interactive plots,
    tables as wide as a terminal of ``columns`` characters."""
    env = dict(os.environ, MPLBACKEND="Agg", COLUMNS=str(columns))
    env.pop("ATTNTOPO_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "attntopo", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or ROOT,
        env=env,
    )


def assert_one_line_error(r: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit code 2, nothing on stdout, one ``error: ...`` line holding every fragment."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ")
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    assert r.stdout == ""
    return lines[0]
