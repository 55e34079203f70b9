"""The import graph of src/attntopo runs one way (tools/check_imports.py, see docs/architecture.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "check_imports.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True)


def test_import_graph_has_no_cycle_and_no_upward_import():
    r = _run()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no cycle, no upward import" in r.stdout


def _load_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_imports", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_checker_sees_cycles():
    tool = _load_tool()
    assert tool.strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert tool.strongly_connected({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(
    "source, upward",
    [
        ("from ..report import report_html\n", True),  # module level
        ("def f():\n    from .. import report\n", True),  # a lazy import is a dependency too
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..report import x\n", False),
        ("from ..report import x  # layering: deprecated alias\n", True),  # no exemptions
        ("from ..topology import persistence\n", False),  # downward
    ],
)
def test_the_checker_reads_module_and_function_level_imports(tmp_path, monkeypatch, source, upward):
    tool = _load_tool()
    pkg = tmp_path / "attntopo"
    for sub in ("analyses", "topology"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "report.py").write_text("x = 1\n")
    (pkg / "analyses" / "_thing.py").write_text(textwrap.dedent(source))
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    files = sorted(pkg.rglob("*.py"))
    modules = {tool.module_name(f) for f in files}
    found = tool.imports_of(pkg / "analyses" / "_thing.py", modules)
    src_layer = tool.layer_of("attntopo.analyses._thing")
    assert any(tool.layer_of(dst) > src_layer for dst, _ in found) is upward


def test_every_module_has_a_layer_and_unknown_ones_are_flagged():
    tool = _load_tool()
    assert tool.layer_of("attntopo.newthing") == -1
    assert tool.layer_of("attntopo") == len(tool.LAYERS) - 1
    assert tool.layer_of("attntopo.analyses._result") < tool.layer_of("attntopo.plots.static")
    assert tool.layer_of("attntopo.io") < tool.layer_of("attntopo.analyses")


def test_layers_name_only_real_modules():
    """A stale LAYERS entry (``depth``, ``approx``, ``context`` were: the theory lives in
    ``theory/``) is reported; today's LAYERS has none."""
    tool = _load_tool()
    files = sorted((tool.ROOT / tool.PACKAGE).rglob("*.py"))
    modules = {tool.module_name(f) for f in files}
    assert tool.unknown_prefixes(modules) == []
    assert tool.unknown_prefixes(modules - {"attntopo.theory"}) == ["theory"]


def test_architecture_page_lists_the_checkers_layers():
    """docs/architecture.md's table is LAYERS: same layers, same order, same modules."""
    import re

    tool = _load_tool()
    rows = [line for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith(("| layer", "|---"))]
    table = []
    for row in rows:
        layer, modules = (c.strip() for c in row.strip("|").split("|")[:2])
        names = [m for m in re.findall(r"`([^`]+)`", modules)]
        table.append((layer, tuple("" if n == "attntopo/__init__.py" else n for n in names)))
    assert table == [(layer, prefixes) for layer, prefixes in tool.LAYERS]
