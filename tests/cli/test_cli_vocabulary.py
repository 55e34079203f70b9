"""One vocabulary on the command line (issue 15, item 8, and the CLI parts of items 3 and 5):
every option means one thing in every command, flags take no value, the JSON keys agree, tables
fit 80 columns, errors name the CLI's own fix.  Each test runs ``python -m attntopo`` as a
subprocess."""

from __future__ import annotations

import typer

from attntopo.cli import app

from _cli import run  # noqa: E402


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
