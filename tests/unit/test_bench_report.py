"""The benchmark report's engines section is docs/engines_bench.json's numbers, and
docs/benchmarks.md holds it as rendered (the measurements live there, not in docstrings)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _report
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return _report


def test_engines_section_shows_every_measured_size(report_module):
    doc = json.loads((ROOT / "docs" / "engines_bench.json").read_text(encoding="utf-8"))
    section = "\n".join(report_module.engines_section())
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and ln[2].isdigit()]
    sizes = [int(r["n"]) for r in doc["table"]]
    assert [int(ln.split("|")[1]) for ln in rows[: len(sizes)]] == sizes
    first = doc["table"][0]
    assert f"{first['giotto_alone_ms']:.2f} / {first['giotto_busy_ms']:.2f}" in rows[0]


def test_benchmarks_md_holds_the_engines_section_as_rendered(report_module):
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert "\n".join(report_module.engines_section()) in text


def test_engines_module_docstring_holds_no_timings():
    from attntopo.topology import engines

    assert " ms" not in engines.__doc__ and "docs/benchmarks.md" in engines.__doc__
