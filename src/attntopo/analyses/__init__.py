"""Analyses: one private module per question a user asks, each answered by a result class.

=======================  ==========================================================
module                   question (function → result)
=======================  ==========================================================
``_analysis``            one text, every head (:func:`analyze` → :class:`Analysis`)
``_comparison``          two texts, head by head (:func:`compare` → :class:`Comparison`)
``_phrase``              one phrase in several contexts (:func:`phrase_topology` →
                         :class:`PhraseTopology`)
``_head_types``          what pattern each head draws (:func:`head_types` → :class:`HeadTypes`)
``_head_space``          how far apart the heads are (:func:`head_space` → :class:`HeadSpace`)
``_model_comparison``    two models' head spaces (:func:`compare_models` →
                         :class:`ModelComparison`)
``_timeline``            topology as tokens arrive (:func:`timeline` → :class:`Timeline`,
                         in ``_timeline_result``)
=======================  ==========================================================

Shared by all of them: ``_result`` (the protocol every result follows), ``_kinds`` (the table of
result kinds and :func:`load_result`), ``_inputs`` (texts or attentions + a model),
``_provenance`` and ``_html_hook`` (where the rendering layer plugs in ``_repr_html_``).

The public names are imported on first use, so importing a small part of the package loads no
analysis and no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

# public name -> private module (relative to this package) that defines it: the one place a
# public name is written (__all__ is derived from it; tests/unit/test_public_names.py holds
# the TYPE_CHECKING imports below equal to it)
_LAZY = {
    "Analysis": "._analysis",
    "analyze": "._analysis",
    "Comparison": "._comparison",
    "compare": "._comparison",
    "PhraseTopology": "._phrase",
    "phrase_topology": "._phrase",
    "HeadTypes": "._head_types",
    "head_types": "._head_types",
    "HeadSpace": "._head_space",
    "head_distances": "._head_space",
    "head_space": "._head_space",
    "ModelComparison": "._model_comparison",
    "compare_models": "._model_comparison",
    "Timeline": "._timeline_result",
    "timeline": "._timeline",
    "KINDS": "._kinds",
    "load_result": "._kinds",
    "Result": "._result",
    "Columns": "._result",
    "RANKING_RULE": "._ranking",
    "set_html_renderer": "._html_hook",
    "SUMMARY_STATS": "..constants",
}
__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_names(globals(), _LAZY, package=__name__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only: the names of _LAZY
    from ..constants import SUMMARY_STATS as SUMMARY_STATS
    from ._analysis import Analysis as Analysis
    from ._analysis import analyze as analyze
    from ._comparison import Comparison as Comparison
    from ._comparison import compare as compare
    from ._head_space import HeadSpace as HeadSpace
    from ._head_space import head_distances as head_distances
    from ._head_space import head_space as head_space
    from ._head_types import HeadTypes as HeadTypes
    from ._head_types import head_types as head_types
    from ._html_hook import set_html_renderer as set_html_renderer
    from ._kinds import KINDS as KINDS
    from ._kinds import load_result as load_result
    from ._model_comparison import ModelComparison as ModelComparison
    from ._model_comparison import compare_models as compare_models
    from ._phrase import PhraseTopology as PhraseTopology
    from ._phrase import phrase_topology as phrase_topology
    from ._ranking import RANKING_RULE as RANKING_RULE
    from ._result import Columns as Columns
    from ._result import Result as Result
    from ._timeline import timeline as timeline
    from ._timeline_result import Timeline as Timeline
