"""Deprecated ways of reaching analyses, kept working for one release."""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

__all__ = ["callable_module"]


def callable_module(module_name: str, function: str) -> None:
    """Make the module ``module_name`` callable as its function ``function`` (deprecated).

    Until 0.x ``attntopo.analyses`` bound the functions ``compare`` and ``head_types`` over
    the modules of the same names, so ``from attntopo.analyses import compare; compare(a, b)``
    called the function.  The name is the module again; calling it still works, with a
    :class:`DeprecationWarning` pointing to ``attntopo.<function>``.
    """
    module = sys.modules[module_name]

    class _CallableModule(types.ModuleType):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            warnings.warn(
                f"calling the module {module_name} is deprecated: call attntopo.{function}(...) "
                f"(or {module_name}.{function}(...))",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(self, function)(*args, **kwargs)

    module.__class__ = _CallableModule
