"""Every command of the CLI is documented in docs/cli.md, and every documented command exists."""

from __future__ import annotations

import re
from pathlib import Path

from attntopo.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _commands() -> set[str]:
    names = {c.name or c.callback.__name__.removesuffix("_cmd") for c in app.registered_commands}
    return names | {g.name for g in app.registered_groups}


def test_every_command_has_a_section_and_a_line_in_the_overview():
    text = DOC.read_text(encoding="utf-8")
    sections = set(re.findall(r"^## `attntopo ([a-z-]+)", text, flags=re.M)) - {"--version"}
    overview = text.split("\n## ", 1)[0]
    commands = _commands()
    assert commands, "no command registered"
    assert commands - sections == set(), (
        f"commands without a section in docs/cli.md: {commands - sections}"
    )
    assert sections - commands == set(), (
        f"sections of docs/cli.md for no command: {sections - commands}"
    )
    missing = {c for c in commands if f"attntopo {c}" not in overview}
    assert missing == set(), (
        f"commands missing from the overview at the top of docs/cli.md: {missing}"
    )
