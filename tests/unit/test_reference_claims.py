"""tests/README.md's "References and how each is checked" names tests that exist.

Each claim of equality with a reference (la-tda, tda4atd, TOHA, the founding paper's code,
scipy, gudhi, …) is listed there with its test as ``path::name`` (``::name`` continues the
last path of the row); a renamed or deleted test would leave a claim unchecked silently.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _section() -> str:
    text = (TESTS / "README.md").read_text(encoding="utf-8")
    start = text.index("## References and how each is checked")
    return text[start : text.index("\n## ", start + 3)]


def test_every_listed_test_exists():
    missing, seen = [], 0
    for line in _section().splitlines():
        if not line.startswith("|"):
            continue
        path = None
        for m in re.finditer(r"`([\w/]+\.py)?::(\w+)`", line):
            path = m.group(1) or path
            assert path is not None, f"{m.group(0)} has no file before it in its row: {line[:80]}"
            source = (TESTS / path).read_text(encoding="utf-8") if (TESTS / path).exists() else ""
            seen += 1
            if not re.search(rf"^def {m.group(2)}\(", source, re.MULTILINE):
                missing.append(f"{path}::{m.group(2)}")
        for m in re.finditer(r"`(_\w+)\.(\w+)`", line):
            source = (TESTS / f"{m.group(1)}.py").read_text(encoding="utf-8")
            if not re.search(rf"^def {m.group(2)}\(", source, re.MULTILINE):
                missing.append(f"{m.group(1)}.{m.group(2)}")
    assert seen > 40
    assert not missing, missing


def test_every_row_has_a_test_or_a_stated_difference():
    for line in _section().splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        if len(cells) != 3 or set(cells[0]) <= {"-"} or cells[0] == "claim":
            continue
        assert cells[1] not in ("", "—") or cells[2] not in ("", "—"), line
