"""The table of result kinds: the ``kind`` written in a saved result → the class that reads it."""

from __future__ import annotations

from .compare import Comparison, PhraseTopology
from .head_types import HeadTypes
from .heads import HeadSpace, ModelComparison
from .text import Analysis
from .timeline import Timeline

__all__ = ["KINDS"]

#: kind (``attntopo.json``'s ``"kind"``) → result class.
KINDS: dict[str, type] = {
    "analysis": Analysis,
    "comparison": Comparison,
    "phrase_topology": PhraseTopology,
    "head_space": HeadSpace,
    "head_space_comparison": ModelComparison,
    "head_types": HeadTypes,
    "timeline": Timeline,
}
