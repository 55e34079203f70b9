"""No function in src/, benchmarks/ or experiments/ runs over 100 lines of code.

A function's lines of code are its logical lines, as Python's tokenizer ends them (one
``NEWLINE`` token each), from ``def`` to its end: a statement or a signature spread over
several physical lines is one line, so the count is the same before and after ``ruff
format`` (which puts each argument of a long call or signature on its own line); blank
lines, comments and the docstring do not count; the lines of a function nested in it do.
Split a longer function along its seams (checking inputs, building settings, the loop,
assembling the result).
"""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("src", "benchmarks", "experiments")
MAX_CODE_LINES = 100


def _code_rows(source: str) -> set[int]:
    """The line numbers where a logical line ends (its ``NEWLINE`` token)."""
    return {
        tok.start[0]
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.NEWLINE
    }


def _docstring_rows(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    first = fn.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return set(range(first.lineno, first.end_lineno + 1))
    return set()


def long_functions(source: str, limit: int = MAX_CODE_LINES) -> list[tuple[str, int, int]]:
    """``(name, line, code lines)`` of every function of ``source`` over ``limit`` code lines."""
    code = _code_rows(source)
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            rows = set(range(node.lineno, node.end_lineno + 1)) & code
            n = len(rows - _docstring_rows(node))
            if n > limit:
                out.append((node.name, node.lineno, n))
    return out


def _function(n_code: int, *, docstring: int = 0, blank: int = 0, comments: int = 0) -> str:
    lines = ["def f(x):"]
    if docstring:
        lines += ['    """Doc.'] + ["    more"] * (docstring - 2) + ['    """']
    lines += [""] * blank + ["    # a comment"] * comments
    lines += [f"    x = x + {k}" for k in range(n_code - 2)] + ["    return x"]
    return "\n".join(lines) + "\n"


def test_the_count_leaves_out_docstring_blank_and_comment_lines():
    # def line + (n - 2) statements + return: n code lines
    assert long_functions(_function(101, docstring=30, blank=5, comments=7)) == [("f", 1, 101)]
    assert long_functions(_function(100, docstring=30, blank=5, comments=7)) == []


def test_a_statement_over_several_physical_lines_is_one_line():
    one = "def f(a, b):\n    return g(a, b)\n"
    spread = "def f(\n    a,\n    b,\n):\n    return g(\n        a,\n        b,\n    )\n"
    assert long_functions(one, limit=0) == long_functions(spread, limit=0) == [("f", 1, 2)]


def test_the_count_takes_nested_functions_and_multiline_strings():
    src = textwrap.dedent('''
        def outer():
            """Doc."""
            s = """
            # not a comment: a line of a string
            """
            def inner():
                return 1
            return s, inner
        ''')
    # outer: its def, the assignment of the string, inner's def and return, its own return
    assert long_functions(src, limit=0) == [("outer", 2, 5), ("inner", 7, 2)]


def _sources() -> list[Path]:
    return sorted(
        p
        for folder in FOLDERS
        for p in (ROOT / folder).rglob("*.py")
        if "build" not in p.relative_to(ROOT).parts
    )


def test_there_are_sources_to_check():
    assert len(_sources()) > 50


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_function_runs_over_100_code_lines(folder):
    offenders = [
        f"{p.relative_to(ROOT)}:{line} {name} ({n} code lines)"
        for p in _sources()
        if p.relative_to(ROOT).parts[0] == folder
        for name, line, n in long_functions(p.read_text(encoding="utf-8"))
    ]
    assert not offenders, (
        f"functions over {MAX_CODE_LINES} logical lines of code (docstrings, blank and "
        "comment lines not counted); split them along their seams:\n" + "\n".join(offenders)
    )
