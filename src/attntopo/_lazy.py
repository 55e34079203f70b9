"""Lazy names of a package or module: imported from their submodule on first use (PEP 562).

Importing ``attntopo`` must not import torch, transformers or scikit-learn until a name that
needs them is used; each package lists its names and where they live, and this module turns the
list into the module-level ``__getattr__`` and ``__dir__`` that resolve them (and cache the value
in the module's globals, so the lookup runs once per name).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_names(
    module_globals: dict, names: Mapping[str, str], *, package: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a module whose ``names`` map a name to a relative submodule.

    ``package`` resolves the relative submodule names (``__name__`` in a package's
    ``__init__``, ``__package__`` in a plain module).
    """
    qualname = module_globals["__name__"]

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {qualname!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where, package), name)
        module_globals[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(module_globals) | set(module_globals.get("__all__", ())))

    return __getattr__, __dir__
