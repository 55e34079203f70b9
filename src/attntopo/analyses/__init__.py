"""Analyses: one module per question a user asks, each answered by a result class.

The public names are imported on first use, so importing a small part of the package
(:mod:`attntopo.analyses._html_hook`, which :mod:`attntopo` does at start-up) loads no
analysis and no torch.

The modules ``compare``, ``head_types`` and ``timeline`` keep their names: the functions of
the same names are :func:`attntopo.compare`, :func:`attntopo.head_types` and
:func:`attntopo.timeline` (``attntopo.analyses.compare`` is always the module).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module (relative to this package) that defines it
_LAZY = {
    "Analysis": ".text",
    "analyze": ".text",
    "SUMMARY_STATS": ".text",
    "Comparison": ".compare",
    "PhraseTopology": ".compare",
    "phrase_topology": ".compare",
    "HeadTypes": ".head_types",
    "HeadSpace": ".heads",
    "ModelComparison": ".heads",
    "compare_models": ".heads",
    "head_distances": ".heads",
    "head_space": ".heads",
    "Timeline": ".timeline",
    "KINDS": "._kinds",
    "load_result": "._kinds",
}
# names that are modules of this package (their functions live at attntopo.<name>)
_MODULES = ("compare", "head_types", "timeline", "heads", "text")

__all__ = sorted([*_LAZY, "compare", "head_types"])


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from . import compare, head_types
    from .compare import Comparison, PhraseTopology, phrase_topology
    from .head_types import HeadTypes
    from .heads import HeadSpace, ModelComparison, compare_models, head_distances, head_space
    from .text import SUMMARY_STATS, Analysis, analyze
    from ._kinds import KINDS, load_result
    from .timeline import Timeline
