"""The web layer's own modules import one way (issue 14, circle 2: api.py imported from app.py,
which imported api.py back)."""

from __future__ import annotations

import ast
from pathlib import Path

import attntopo.web

WEB = Path(attntopo.web.__file__).parent


def _web_imports(path: Path) -> set[str]:
    """Modules of attntopo.web that ``path`` imports (at any depth of the file)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attntopo.web."):
            out.add(node.module.split(".")[2])
    return out


def test_web_modules_form_no_cycle():
    graph = {p.stem: _web_imports(p) & {q.stem for q in WEB.glob("*.py")} for p in WEB.glob("*.py")}
    assert "app" not in graph["api"], "api.py must not import app.py"
    # depth-first search for a back edge
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join(trail + [node, nxt])}"
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert {"_state", "_errors"} <= graph["app"] and {"_state", "_errors"} <= graph["api"]
