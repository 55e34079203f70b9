#!/usr/bin/env python3
"""Check that the import graph of ``src/attntopo`` runs one way: no cycles, no upward imports,
no reaching into another subpackage's private modules or names.

Reads every module's imports with :mod:`ast` (module level *and* inside functions: a lazy import
is still a dependency; imports under ``if TYPE_CHECKING:`` are not, they never run), resolves
them to modules of the package and checks two rules:

1. **No cycle** among modules (strongly connected components of the graph, Tarjan).
2. **Layers**: a module may import only from its own layer or a lower one (``LAYERS`` below,
   the table of docs/architecture.md). There are no exemptions: where a lower module must
   reach something above it, the package namespace installs a hook (``attntopo._hooks``).
3. **Private stays private**: a module may not import another subpackage's private module
   (``from attntopo.features._compute import …`` outside ``attntopo.features``) or private
   name (``from attntopo.io import _lock`` outside ``attntopo.io``); what one subpackage offers
   another belongs in a public or declared interface module.  The package's top-level private
   modules (``_validation``, ``_progress``, …) are its shared vocabulary and open to all.
   ``ALLOWED_PRIVATE`` lists the offenders of the day this rule came (issue 29): it may only
   shrink, and an entry that no longer occurs fails the check until it is removed.

Exit 0 and one summary line when all hold; otherwise one line per violation and exit 1.
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
    (
        "vocabulary",
        (
            "_version",
            "_hooks",
            "errors",
            "constants",
            "_validation",
            "_progress",
            "_callable",
            "_threads",
            "_memory",
            "_lazy",
        ),
    ),
    ("storage and kernels", ("io", "_native", "_mds")),
    ("computation", ("models", "attention", "words", "distances", "topology")),
    ("analyses", ("analyses",)),
    (
        "built on analyses",
        ("datasets", "features", "sklearn", "corpus", "compress", "theory", "hardmax"),
    ),
    ("rendering", ("_html", "plots")),
    ("reports", ("report",)),
    # the interfaces use the public namespace (attntopo/__init__.py, lazy) like any user would;
    # the namespace itself never imports an interface
    ("interfaces and the public namespace", ("cli", "web", "__main__", "")),
]


def unknown_prefixes(modules: set[str]) -> list[str]:
    """Names in LAYERS that are no module or package of ``modules`` (a stale entry)."""
    return [p for _, prefixes in LAYERS for p in prefixes if p and f"{PACKAGE}.{p}" not in modules]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int:
    """Rank of ``module``'s layer in LAYERS; -1 when no layer names it."""
    rel = module[len(PACKAGE) + 1 :] if module != PACKAGE else ""
    best, best_len = -1, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if prefix == "" and rel == "":
                return rank
            if (
                prefix
                and (rel == prefix or rel.startswith(prefix + "."))
                and len(prefix) > best_len
            ):
                best, best_len = rank, len(prefix)
    return best


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_records(path: Path, modules: set[str]) -> list[tuple[str, str, int]]:
    """(what is imported, the module of the package it resolves to, line) for every runtime
    import in ``path``: ``from ..io import _lock`` gives
    ``("attntopo.io._lock", "attntopo.io", n)``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines), filename=str(path))
    found: list[tuple[str, str, int]] = []

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
                        found.append((target, resolved, node.lineno))
        visit(node)

    visit(tree)
    return found


def imports_of(path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """(imported module of the package, line) for every runtime import in ``path``."""
    return [(resolved, line) for _, resolved, line in import_records(path, modules)]


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def subpackage_of(module: str) -> str:
    """The part of the package a module belongs to: its first name below ``attntopo``
    (``attntopo.features._compute`` -> ``features``; the package itself -> ``""``)."""
    return module.split(".")[1] if "." in module else ""


def private_reach(src: str, target: str, resolved: str) -> str | None:
    """What an import of ``target`` (resolving to module ``resolved``) from module ``src`` takes
    that is private to another subpackage, or None.

    A module is private to its subpackage when a name below the subpackage starts with ``_``
    (``attntopo.features._compute``); a name is private when it starts with ``_``
    (``from attntopo.io import _lock``).  The package's own top-level private modules
    (``_validation``, ``_progress``, ``_threads``, …) are its shared vocabulary, open to all.
    """
    if subpackage_of(resolved) == subpackage_of(src):
        return None
    parts = resolved.split(".")[2:]  # below the subpackage
    if any(_private(p) for p in parts):
        return resolved
    rest = target[len(resolved) + 1 :] if target != resolved else ""
    if rest and _private(rest.split(".")[0]):
        return f"{resolved}:{rest.split('.')[0]}"
    return None


#: Private cross-imports still tolerated, (importing module, what it takes): none. What one
#: subpackage offers another lives in a declared, documented module (analyses.building,
#: features.pipeline, models.instruments, models.precision, compress.grouping; io.lock_folder,
#: topology.persistence.persistence_batch_valid). Keep it empty: a stale entry is reported.
ALLOWED_PRIVATE: frozenset[tuple[str, str]] = frozenset()


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
    seen_private: set[tuple[str, str]] = set()
    reported: set[tuple[str, str, int]] = set()
    problems: list[str] = [
        f"LAYERS in tools/check_imports.py names {p!r}, which is no module of "
        f"{PACKAGE}: remove it there and in docs/architecture.md"
        for p in unknown_prefixes(modules)
    ]
    for f in files:
        src = module_name(f)
        if layer_of(src) < 0:
            problems.append(
                f"{f.relative_to(ROOT.parent)}: {src} is in no layer: add it to LAYERS "
                f"in tools/check_imports.py and to docs/architecture.md"
            )
        for target, dst, line in import_records(f, modules):
            graph[src].add(dst)
            reach = private_reach(src, target, dst)
            if reach is not None and (src, reach, line) not in reported:
                reported.add((src, reach, line))
                seen_private.add((src, reach))
                if (src, reach) not in ALLOWED_PRIVATE:
                    problems.append(
                        f"{f.relative_to(ROOT.parent)}:{line}: {src} takes {reach}, private to "
                        f"{PACKAGE}.{subpackage_of(dst)}: import a public name, or declare the "
                        f"interface in a documented module there"
                    )
            # a package's __init__ may re-export its own submodules, and a submodule may import
            # its parent package's siblings: only imports across layers are checked
            if layer_of(dst) > layer_of(src):
                problems.append(
                    f"{f.relative_to(ROOT.parent)}:{line}: {src} ({LAYERS[layer_of(src)][0]}) "
                    f"imports {dst} ({LAYERS[layer_of(dst)][0]}), a higher layer"
                )
    for src, reach in sorted(ALLOWED_PRIVATE - seen_private):
        problems.append(
            f"ALLOWED_PRIVATE in tools/check_imports.py lists ({src!r}, {reach!r}), which no "
            f"longer occurs: remove it (the list only shrinks)"
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
        print(f"{len(problems)} import problem(s) in {len(files)} modules")
        return 1
    edges = sum(len(v) for v in graph.values())
    print(
        f"import graph OK: {len(files)} modules, {edges} edges, no cycle, no upward import, "
        f"no private cross-import beyond the {len(ALLOWED_PRIVATE)} allowed"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
