"""The pages that list the row distances list the registry's: docs/concepts.md's table (names,
in order, and ranges) and every paragraph of README.md and docs/*.md that names two or more of
them (the option tables, the web API's fields, examples of output) names them all."""

from __future__ import annotations

import math
import re
from pathlib import Path

from attntopo.distances import DISTANCES

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _upper(d) -> str:
    return "π" if d.upper == math.pi else f"{d.upper:g}"


def test_concepts_table_is_the_registry():
    text = (ROOT / "docs" / "concepts.md").read_text(encoding="utf-8")
    start = text.index("| name | formula | range |\n|---|---|---|\n")
    rows = re.findall(r"^\| `(\w+)` \|.*\| \[0, (\S+)\] \|$", text[start:].split("\n\n")[0], re.M)
    assert rows == [(name, _upper(d)) for name, d in DISTANCES.items()]


def test_every_list_of_distances_is_complete():
    names = list(DISTANCES)
    lists, incomplete = 0, []
    for page in PAGES:
        for paragraph in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
            # a command's help as docs/cli.md shows it wraps the choices inside its box
            text = "\n".join(line for line in paragraph.splitlines() if "│" not in line)
            named = [n for n in names if re.search(rf"(?<![\w-]){n}(?![\w-])", text)]
            if len(named) >= 2:
                lists += 1
                if missing := [n for n in names if n not in named]:
                    incomplete.append(f"{page.name} lacks {missing} in {text[:60]!r}")
    assert not incomplete, "\n".join(incomplete)
    assert lists >= 5  # the tables of concepts.md, cli.md and web.md, api.md, features.md


def test_help_shown_in_docs_offers_every_distance():
    """docs/cli.md shows commands' help as the terminal draws it: ``--metric``'s choices wrap
    inside the box (``<jensen_shannon|hellinger|fisher_`` / ``rao|total_variation>``)."""
    lines = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").splitlines()
    shown = []
    for i, line in enumerate(lines):
        start = line.find("<jensen_shannon")
        if start < 0:
            continue
        choices = line[start:].split()[0]
        while not choices.endswith(">"):  # the rest is the next row's first word
            i += 1
            choices += lines[i].strip("│ ").split()[0]
        shown.append(choices)
    assert len(shown) >= 5 and set(shown) == {"<" + "|".join(DISTANCES) + ">"}
