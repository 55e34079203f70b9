#!/usr/bin/env python3
"""Check that the import graph of ``src/attntopo`` runs one way: no cycles, no upward imports.

Reads every module's imports with :mod:`ast` (module level *and* inside functions: a lazy import
is still a dependency; imports under ``if TYPE_CHECKING:`` are not, they never run), resolves
them to modules of the package and checks two rules:

1. **No cycle** among modules (strongly connected components of the graph, Tarjan).
2. **Layers**: a module may import only from its own layer or a lower one (``LAYERS`` below,
   the table of docs/architecture.md). There are no exemptions: where a lower module must
   reach something above it, the package namespace installs a hook (``attntopo._hooks``).

Exit 0 and one summary line when both hold; otherwise one line per violation and exit 1.
Usage: ``python tools/check_imports.py [--graph]`` (``--graph`` prints every edge).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "attntopo"

#: (layer, module prefixes) from the bottom up; a module belongs to the longest matching prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("vocabulary", ("_version", "_hooks", "errors", "constants", "_validation", "_progress", "_callable", "_threads")),
    ("storage and kernels", ("io", "_native", "_mds")),
    ("computation", ("models", "attention", "words", "distances", "topology")),
    ("analyses", ("analyses",)),
    ("built on analyses", ("datasets", "features", "sklearn", "corpus", "compress", "theory", "hardmax")),
    ("rendering", ("_html", "plots")),
    ("reports", ("report",)),
    # the interfaces use the public namespace (attntopo/__init__.py, lazy) like any user would;
    # the namespace itself never imports an interface
    ("interfaces and the public namespace", ("cli", "web", "__main__", "")),
]


def unknown_prefixes(modules: set[str]) -> list[str]:
    """Names in LAYERS that are no module or package of ``modules`` (a stale entry)."""
    return [p for _, prefixes in LAYERS for p in prefixes
            if p and f"{PACKAGE}.{p}" not in modules]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int:
    """Rank of ``module``'s layer in LAYERS; -1 when no layer names it."""
    rel = module[len(PACKAGE) + 1:] if module != PACKAGE else ""
    best, best_len = -1, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if prefix == "" and rel == "":
                return rank
            if prefix and (rel == prefix or rel.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = rank, len(prefix)
    return best


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """(imported module of the package, line) for every runtime import in ``path``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines), filename=str(path))
    found: list[tuple[str, int]] = []

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.orelse:
                    visit_node(sub)
                continue
            visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                targets = [f"{prefix}.{a.name}" for a in node.names] or [prefix]
            for target in targets:
                if target == PACKAGE or target.startswith(PACKAGE + "."):
                    resolved = resolve(target)
                    if resolved and resolved != name:
                        found.append((resolved, node.lineno))
        visit(node)

    visit(tree)
    return found


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def main(argv: list[str]) -> int:
    files = sorted((ROOT / PACKAGE).rglob("*.py"))
    modules = {module_name(f) for f in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    problems: list[str] = [f"LAYERS in tools/check_imports.py names {p!r}, which is no module of "
                           f"{PACKAGE}: remove it there and in docs/architecture.md"
                           for p in unknown_prefixes(modules)]
    for f in files:
        src = module_name(f)
        if layer_of(src) < 0:
            problems.append(f"{f.relative_to(ROOT.parent)}: {src} is in no layer: add it to LAYERS "
                            f"in tools/check_imports.py and to docs/architecture.md")
        for dst, line in imports_of(f, modules):
            graph[src].add(dst)
            # a package's __init__ may re-export its own submodules, and a submodule may import
            # its parent package's siblings: only imports across layers are checked
            if layer_of(dst) > layer_of(src):
                problems.append(
                    f"{f.relative_to(ROOT.parent)}:{line}: {src} ({LAYERS[layer_of(src)][0]}) "
                    f"imports {dst} ({LAYERS[layer_of(dst)][0]}), a higher layer"
                )
    for comp in strongly_connected(graph):
        problems.append(f"import cycle among {len(comp)} modules: " + " -> ".join(comp))
    if "--graph" in argv:
        for src in sorted(graph):
            for dst in sorted(graph[src]):
                print(f"{src} -> {dst}")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problem(s) in {len(files)} modules")
        return 1
    edges = sum(len(v) for v in graph.values())
    print(f"import graph OK: {len(files)} modules, {edges} edges, no cycle, no upward import")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
