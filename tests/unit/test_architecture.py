"""The import graph of src/attntopo runs one way
(tools/check_imports.py, see docs/architecture.md)."""

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


def _synthetic_package(root: Path, files: dict[str, str]) -> Path:
    """``root/attntopo`` holding ``files`` (path below the package -> source),
    every folder a package."""
    pkg = root / "attntopo"
    for rel, source in {"__init__.py": "", **files}.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        init = path.parent / "__init__.py"
        if not init.exists():
            init.write_text("")
        path.write_text(source)
    return pkg


def _load_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_imports", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_checker_sees_cycles():
    tool = _load_tool()
    assert tool.strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]
    assert tool.strongly_connected({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(
    "source, upward",
    [
        ("from ..report import report_html\n", True),  # module level
        ("def f():\n    from .. import report\n", True),  # a lazy import is a dependency too
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..report import x\n",
            False,
        ),
        ("from ..report import x  # layering: deprecated alias\n", True),  # no exemptions
        ("from ..topology import persistence\n", False),  # downward
    ],
)
def test_the_checker_reads_module_and_function_level_imports(tmp_path, monkeypatch, source, upward):
    tool = _load_tool()
    pkg = _synthetic_package(
        tmp_path,
        {
            "topology/__init__.py": "",
            "report.py": "x = 1\n",
            "analyses/_thing.py": textwrap.dedent(source),
        },
    )
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
    rows = [
        line
        for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and not line.startswith(("| layer", "|---"))
    ]
    table = []
    for row in rows:
        layer, modules = (c.strip() for c in row.strip("|").split("|")[:2])
        names = [m for m in re.findall(r"`([^`]+)`", modules)]
        table.append((layer, tuple("" if n == "attntopo/__init__.py" else n for n in names)))
    assert table == [(layer, prefixes) for layer, prefixes in tool.LAYERS]


@pytest.mark.parametrize(
    "src, target, resolved, reach",
    [
        # another subpackage's private module, by module or by name
        (
            "attntopo.corpus._work",
            "attntopo.features._compute.chunk_start",
            "attntopo.features._compute",
            "attntopo.features._compute",
        ),
        (
            "attntopo.sklearn",
            "attntopo.features._select",
            "attntopo.features._select",
            "attntopo.features._select",
        ),
        ("attntopo.corpus._store", "attntopo.io._lock", "attntopo.io", "attntopo.io:_lock"),
        (
            "attntopo.analyses._analysis",
            "attntopo.topology.persistence._check_threads",
            "attntopo.topology.persistence",
            "attntopo.topology.persistence:_check_threads",
        ),
        # the declared interfaces are public modules and names
        (
            "attntopo.analyses._analysis",
            "attntopo.topology.persistence.persistence_batch_valid",
            "attntopo.topology.persistence",
            None,
        ),
        (
            "attntopo.sklearn",
            "attntopo.features.pipeline.best_heads",
            "attntopo.features.pipeline",
            None,
        ),
        (
            "attntopo.theory._depth",
            "attntopo.models.instruments.forward_capture",
            "attntopo.models.instruments",
            None,
        ),
        # allowed: a subpackage's own private modules, public names, the package's vocabulary
        (
            "attntopo.features._compute",
            "attntopo.features._select.best_heads",
            "attntopo.features._select",
            None,
        ),
        ("attntopo.corpus._work", "attntopo.features.features", "attntopo.features", None),
        ("attntopo.corpus._work", "attntopo._validation.check_bool", "attntopo._validation", None),
        ("attntopo.corpus._work", "attntopo._progress", "attntopo._progress", None),
        ("attntopo.web.api", "attntopo.__version__", "attntopo", None),  # dunders are not private
    ],
)
def test_private_reach(src, target, resolved, reach):
    assert _load_tool().private_reach(src, target, resolved) == reach


def test_the_checker_rejects_private_cross_imports_and_stale_allowances(
    tmp_path, monkeypatch, capsys
):
    """A synthetic package: an unlisted private cross-import fails with its file and line, a
    listed one passes, and a listed one that no longer occurs fails as stale."""
    tool = _load_tool()
    pkg = _synthetic_package(
        tmp_path,
        {
            "features/_compute.py": "def chunk_start():\n    pass\n",
            "corpus/_work.py": "x = 1\n\nfrom ..features._compute import chunk_start\n",
        },
    )
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "LAYERS", [("low", ("features",)), ("high", ("corpus", ""))])
    monkeypatch.setattr(tool, "ALLOWED_PRIVATE", frozenset())
    assert tool.main([]) == 1
    out = capsys.readouterr().out
    assert (
        "attntopo/corpus/_work.py:3: attntopo.corpus._work takes attntopo.features._compute" in out
    )
    pair = ("attntopo.corpus._work", "attntopo.features._compute")
    monkeypatch.setattr(tool, "ALLOWED_PRIVATE", frozenset({pair}))
    assert tool.main([]) == 0, capsys.readouterr().out
    (pkg / "corpus" / "_work.py").write_text(
        "from ..features import _compute  # noqa\n"
    )  # still private
    assert tool.main([]) == 0
    (pkg / "corpus" / "_work.py").write_text("x = 1\n")  # fixed: the allowance is stale
    assert tool.main([]) == 1
    assert "no longer occurs: remove it" in capsys.readouterr().out


def test_no_private_cross_imports_today():
    """No subpackage reaches into another's private modules (the full run passes with an empty
    allowance); the declared interface modules exist."""
    tool = _load_tool()
    files = sorted((tool.ROOT / tool.PACKAGE).rglob("*.py"))
    modules = {tool.module_name(f) for f in files}
    assert (
        tool.ALLOWED_PRIVATE == frozenset()
    )  # every cross-subpackage need goes through a declared module
    assert {
        "attntopo.analyses.building",
        "attntopo.features.pipeline",
        "attntopo.models.instruments",
        "attntopo.models.precision",
        "attntopo.compress.grouping",
    } <= modules
    r = _run()
    assert r.returncode == 0 and "no private cross-import beyond" in r.stdout, r.stdout
