"""One vocabulary on the command line (issue 15, item 8, and the CLI parts of items 3 and 5):
every option means one thing in every command, flags take no value, the JSON keys agree, tables
fit 80 columns, errors name the CLI's own fix.  Each test runs ``python -m attntopo`` as a
subprocess."""

from __future__ import annotations

import json

import pytest
import typer

from attntopo.cli import app

from _cli import assert_one_line_error, run  # noqa: E402


def _command_paths(command=None, prefix=()):
    """Every runnable command of the app: ``[("analyze",), ("hardmax", "train"), …]``."""
    command = command or typer.main.get_command(app)
    out = []
    for name, sub in getattr(command, "commands", {}).items():
        if getattr(sub, "commands", None):
            out += _command_paths(sub, prefix + (name,))
        else:
            out.append(prefix + (name,))
    return out


# ----------------------------------------------------------------------- flags
def test_flags_show_no_value_placeholder():
    """typer wrote ``<bool>`` beside every flag (``--json <bool>``), inviting ``--json true``."""
    paths = _command_paths()
    assert ("analyze",) in paths and ("hardmax", "train") in paths
    for path in [()] + paths:
        r = run(*path, "--help")
        assert r.returncode == 0, (path, r.stderr)
        assert "<bool>" not in r.stdout, path
        assert "--help" in r.stdout
    r = run("analyze", "--help")
    line = next(ln for ln in r.stdout.splitlines() if "--json" in ln)
    assert line.split("--json", 1)[1].split()[0] == "Print", line  # the help text follows the name


# ------------------------------------------------------------------ --plot-format
@pytest.mark.model
def test_plot_format_implies_plots(tmp_path):
    """``--plot-format svg`` without ``--plots`` was an error; it asks for figures, so it draws them."""
    out = tmp_path / "res"
    r = run("analyze", "Quantum information theory", "--layer", "0", "--head", "0", "--plot-format", "svg",
            "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["figures"] and all(f.endswith(".svg") for f in doc["figures"])
    assert sorted(p.relative_to(out).as_posix() for p in (out / "figures").iterdir()) == doc["figures"]
    assert_one_line_error(run("analyze", "hello", "--plot-format", "svg"), "--plot-format needs --out DIR")
