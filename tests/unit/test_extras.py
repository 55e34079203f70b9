"""The optional dependencies `make test` installs cover what the public API uses."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _closure(extras: dict[str, list[str]], names: list[str]) -> set[str]:
    """Distribution names required by the given extras, following attntopo[...] references."""
    out: set[str] = set()
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in extras[name]:
            m = re.fullmatch(r"attntopo\[([\w,\-]+)\]", req.replace(" ", ""))
            if m:
                todo += m.group(1).split(",")
            else:
                out.add(re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower())
    return out


def test_make_test_installs_pandas_for_to_pandas():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    make = (ROOT / "Makefile").read_text()
    installed = re.search(r'pip\)? install -q -e "\.\[([\w,]+)\]"', make.replace("$(PIP)", "pip"))
    assert installed, "the Makefile's editable install line moved"
    wanted = _closure(extras, installed.group(1).split(","))
    assert "pandas" in wanted  # Result.to_pandas()
    assert {"matplotlib", "plotly"} <= wanted
