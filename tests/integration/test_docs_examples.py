"""The README tour and every ```python example in docs/*.md run, and what they show is checked.

Each page's blocks run top to bottom in one fresh namespace (a page is one session), in a
temporary working folder that holds a link to ``examples/`` (files the examples write land
there). A block is checked by what it is written as:

* a doctest block (lines starting ``>>>``) runs through :mod:`doctest` (``ELLIPSIS``,
  ``NORMALIZE_WHITESPACE``): what it shows is what it prints;
* a plain block runs, and its ``assert`` lines hold; when it calls ``print``, its full-line
  comments (``# …``) are the output, line by line (docs/models.md writes examples that way).

An HTML comment on the line before a block's fence changes how it runs:
``<!-- test: slow -->`` (minutes of work, or not needed for the quick check),
``<!-- test: smollm2 -->`` (loads the packaged SmolLM2, ~30 s), and
``<!-- no-test: REASON -->`` (never run: needs a hub, or takes many minutes). Each page
runs once without its slow/smollm2 blocks (the later blocks must not need them) and, when
it has any, once more in full under the ``slow`` (and ``smollm2``) markers.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!--\s*(no-test|test)\s*(?::\s*(.*?))?\s*-->\s*$")
KINDS = {"slow", "smollm2"}


@dataclass
class Block:
    page: str
    line: int
    code: str
    kinds: frozenset  # subset of KINDS
    skip: str | None  # the reason of a no-test mark

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        kinds: frozenset = frozenset()
        skip = None
        if mark and mark.group(1) == "no-test":
            skip = mark.group(2) or ""
            assert skip, f"{path.name}:{line}: a no-test mark needs a reason"
        elif mark:
            kinds = frozenset(k.strip() for k in (mark.group(2) or "").split(","))
            assert kinds <= KINDS, f"{path.name}:{line}: unknown test mark {mark.group(0)!r}"
        page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        out.append(Block(page, line, m.group(1), kinds, skip))
    return out


def _is_doctest(code: str) -> bool:
    return any(ln.lstrip().startswith(">>>") for ln in code.splitlines())


def _run_doctest(block: Block, ns: dict) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.code, ns, block.name, block.page, block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    runner.run(test, out=report.write, clear_globs=False)
    ns.update(test.globs)  # DocTest runs in a copy of the namespace: later blocks see its names
    assert runner.failures == 0, f"{block.name}: the example's output differs\n{report.getvalue()}"


def _run_plain(block: Block, ns: dict) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.code, block.name, "exec"), ns)  # noqa: S102 - the documentation's own code
    if re.search(r"\bprint\(", block.code):
        expected = [ln.strip()[2:] for ln in block.code.splitlines() if ln.strip().startswith("# ")]
        if expected:
            assert out.getvalue().splitlines() == expected, f"{block.name}: printed output differs"


def run_page(path: Path, with_kinds: frozenset, tmp_path: Path, monkeypatch) -> int:
    """Run a page's blocks (those without a kind, plus those whose kinds are all in
    ``with_kinds``); return how many ran."""
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "__docs__"}
    ran = 0
    for block in blocks(path):
        if block.skip is not None or not block.kinds <= with_kinds:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            if _is_doctest(block.code):
                _run_doctest(block, ns)
            else:
                _run_plain(block, ns)
        ran += 1
    return ran


def _params():
    for path in PAGES:
        bs = blocks(path)
        if not any(b.skip is None for b in bs):
            continue
        rel = path.relative_to(ROOT).as_posix()
        if any(not b.kinds and b.skip is None for b in bs):
            yield pytest.param(path, frozenset(), id=rel)
        extra = frozenset().union(*(b.kinds for b in bs if b.skip is None))
        if extra:
            marks = [pytest.mark.slow] + (
                [pytest.mark.smollm2, pytest.mark.xdist_group("smollm2")]
                if "smollm2" in extra
                else []
            )
            yield pytest.param(path, extra, id=f"{rel}[full]", marks=marks)


@pytest.mark.model
@pytest.mark.parametrize("path, kinds", list(_params()))
def test_page_examples(path, kinds, tmp_path, monkeypatch):
    assert run_page(path, kinds, tmp_path, monkeypatch) > 0


def test_no_test_marks_are_rare():
    """Almost every example runs: a no-test mark is for what needs a hub or takes minutes,
    and it says why (blocks() refuses one without a reason)."""
    skipped = [b.name for path in PAGES for b in blocks(path) if b.skip is not None]
    total = sum(len(blocks(path)) for path in PAGES)
    # at most one block in eight (7 of 66 today: the feature pages' 300-text pipelines, each run
    # on a few fortunes by the test its mark names, a GPU block, a repeat of theory.md's calls)
    assert len(skipped) * 8 <= total and total >= 40, (skipped, total)


def test_marks_are_read(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "intro\n\n```python\nx = 1\n```\n\n<!-- test: slow -->\n```python\ny = 2\n```\n"
        "<!-- no-test: needs a hub -->\n```python\nz = 3\n```\n",
        encoding="utf-8",
    )
    bs = blocks(page)
    assert [(b.line, b.kinds, b.skip) for b in bs] == [
        (3, frozenset(), None),
        (8, frozenset({"slow"}), None),
        (12, frozenset(), "needs a hub"),
    ]
