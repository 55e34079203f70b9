"""Subpackages that can be called as their main function.

``attntopo.compress`` and ``attntopo.features`` are subpackages (with helpers, constants and
result classes) *and* the names the issues and papers write as functions:
``attntopo.compress(text, model, …)``.  A plain top-level function of the same name would be
shadowed by the subpackage as soon as Python imports it (the import system binds the
subpackage onto its parent), so the subpackage itself becomes callable instead: its module
object gets a :class:`types.ModuleType` subclass with ``__call__`` (assigning ``__class__`` on a
module is supported by the language since 3.5).  ``attntopo.compress.compress`` stays the same
function.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Callable


def make_callable(module_name: str, function_name: str) -> None:
    """Make the module ``module_name`` callable as its attribute ``function_name``."""
    module = sys.modules[module_name]

    class CallableModule(types.ModuleType):
        __doc__ = module.__doc__

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            function: Callable[..., Any] = getattr(self, function_name)
            return function(*args, **kwargs)

    CallableModule.__name__ = CallableModule.__qualname__ = (
        f"CallableModule[{module_name}.{function_name}]"
    )
    module.__class__ = CallableModule
