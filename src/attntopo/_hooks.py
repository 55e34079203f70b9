"""Hooks through which the package namespace (top layer) serves lower layers without an
upward import.

Lower layers never import higher ones (docs/architecture.md).  Where a lower module must
answer with something that lives higher up, it asks a hook here; :mod:`attntopo` (the package
namespace, which any import of a submodule runs first) installs the hooks at import time.
This module imports nothing.

``result_kind(kind)``
    The result class of a saved kind that lives above the analyses (feature tables, hardmax
    and compression results), imported on first use; ``None`` for an unknown kind.
"""

from __future__ import annotations

from typing import Callable, Optional

__all__ = ["result_kind"]

result_kind: Optional[Callable[[str], Optional[type]]] = None
