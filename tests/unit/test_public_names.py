"""Public names are written once per module: in ``_LAZY`` (name -> the module that defines
it).  ``__all__`` is derived from it, and the ``TYPE_CHECKING`` imports (which static type
checkers and IDEs need as literal imports) must name the same names, each the same object
that the lazy lookup returns, each as ``from m import X as X`` (an explicit re-export: type
checkers and ruff cannot read a derived ``__all__``).  Every module of the package with a
``_LAZY`` is checked, so a name added to one place and not the other fails here, naming the
line to add."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

import attntopo

SRC = Path(attntopo.__file__).parent


def _lazy_modules() -> list[str]:
    """Dotted names of the package's modules that assign ``_LAZY``."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assigns = [node for node in tree.body if isinstance(node, ast.Assign)]
        if any(getattr(t, "id", None) == "_LAZY" for node in assigns for t in node.targets):
            parts = path.relative_to(SRC.parent).with_suffix("").parts
            out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


MODULES = _lazy_modules()


def _source(name: str) -> tuple[ast.Module, Path]:
    mod = importlib.import_module(name)
    path = Path(mod.__file__)
    return ast.parse(path.read_text(encoding="utf-8")), path


def _type_checking_imports(tree: ast.Module, package: str) -> dict[str, str]:
    """``{name: absolute module}`` of the imports in the module's ``if TYPE_CHECKING:``, each
    checked to be ``X as X``."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.unparse(imp)
                where = importlib.util.resolve_name("." * imp.level + (imp.module or ""), package)
                for alias in imp.names:
                    assert alias.asname == alias.name, (
                        f"line {imp.lineno}: write `{alias.name} as {alias.name}` (a re-export)"
                    )
                    out[alias.name] = where
    return out


def test_every_lazy_module_is_found():
    assert {
        "attntopo",
        "attntopo.analyses",
        "attntopo.features",
        "attntopo.features.pipeline",
        "attntopo.distances",
        "attntopo.theory",
    } <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_derived_from_lazy(name):
    """``__all__`` holds every lazy name, and its expression writes none of them again."""
    mod = importlib.import_module(name)
    tree, path = _source(name)
    assert set(mod._LAZY) <= set(mod.__all__)
    assert len(mod.__all__) == len(set(mod.__all__))
    (assign,) = [
        n
        for n in tree.body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
    ]
    names = {n.id for n in ast.walk(assign.value) if isinstance(n, ast.Name)}
    literals = {n.value for n in ast.walk(assign.value) if isinstance(n, ast.Constant)}
    assert "_LAZY" in names, f"{path}:{assign.lineno}: derive __all__ from _LAZY"
    assert not literals & set(mod._LAZY), (
        f"{path}:{assign.lineno}: {sorted(literals & set(mod._LAZY))} written again in __all__"
    )


@pytest.mark.parametrize("name", MODULES)
def test_type_checking_imports_are_the_lazy_names(name):
    """The ``TYPE_CHECKING`` block imports exactly the lazy names, each from a module where it
    is the object the lazy lookup gives."""
    mod = importlib.import_module(name)
    tree, path = _source(name)
    package = mod.__name__ if path.name == "__init__.py" else mod.__package__
    imported = _type_checking_imports(tree, package)
    missing = sorted(set(mod._LAZY) - set(imported))
    extra = sorted(set(imported) - set(mod._LAZY))
    hint = "; ".join(
        f"from {importlib.util.resolve_name(mod._LAZY[n], package)} import {n} as {n}"
        for n in missing
    )
    assert not missing, f"{path}: add to its TYPE_CHECKING block: {hint}"
    assert not extra, f"{path}: TYPE_CHECKING imports {extra}, which are not in _LAZY"
    for public, where in imported.items():
        assert getattr(importlib.import_module(where), public) is getattr(mod, public), (
            f"{path}: TYPE_CHECKING imports {public} from {where}, _LAZY from {mod._LAZY[public]}"
        )


def test_the_top_level_errors_are_written_once():
    """The error classes ``import attntopo`` gives are its one import from ``errors``; ``__all__``
    takes them from it, and lists each public name once."""
    from attntopo import errors

    tops = {
        n
        for n in attntopo.__all__
        if isinstance(getattr(attntopo, n, None), type)
        and issubclass(getattr(attntopo, n), BaseException)
    }
    assert tops == set(attntopo._ERRORS)
    assert all(getattr(errors, n) is getattr(attntopo, n) for n in tops)
    assert "AttntopoError" in tops and "__version__" in attntopo.__all__
