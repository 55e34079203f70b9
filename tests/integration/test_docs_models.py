"""docs/models.md runs: every python block, top to bottom in one namespace; a block's full-line
comments are the output its print() calls must give, line by line."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PAGE = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def _blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_models_page_examples_run():
    blocks = _blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 6
    ns: dict = {"__name__": "docs_models"}
    for k, code in enumerate(blocks):
        expected = [ln[2:] for ln in code.splitlines() if ln.startswith("# ")]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("default")
            exec(compile(code, f"{PAGE.name}, block {k + 1}", "exec"), ns)  # noqa: S102
        if expected:
            assert out.getvalue().splitlines() == expected, f"block {k + 1}"
