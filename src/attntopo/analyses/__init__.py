"""Analyses: one module per question a user asks.

Importing this package registers every result kind with :func:`attntopo.load_result`.
"""

from .compare import Comparison, PhraseTopology, compare, phrase_topology
from .head_types import HeadTypes, head_types
from .heads import HeadSpace, ModelComparison, compare_models, head_distances, head_space
from .text import SUMMARY_STATS, Analysis, analyze
from .timeline import Timeline

# the function attntopo.timeline lives in the module of the same name; re-exporting it here
# would shadow the module attntopo.analyses.timeline, so it is reached through attntopo.timeline

__all__ = [
    "Analysis",
    "Comparison",
    "HeadSpace",
    "HeadTypes",
    "ModelComparison",
    "PhraseTopology",
    "SUMMARY_STATS",
    "Timeline",
    "analyze",
    "compare",
    "compare_models",
    "head_distances",
    "head_space",
    "head_types",
    "phrase_topology",
]
