"""attntopo: the shape of transformer attention.

Text → model → attention → Jensen–Shannon distances between tokens → Vietoris–Rips
persistent homology → analyses.

>>> import attntopo as at
>>> model = at.load_model("minilm")
>>> att = model.attention("Quantum information theory allows us to study attention")
>>> D = at.token_distances(att)            # (layers, heads, n, n), JS distance base 2
>>> dgm = at.persistence(D[1, 2], maxdim=1)

The public names are imported lazily (on first use), so ``import attntopo`` and the
command line start fast; torch and transformers load only when something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _hooks
from ._version import __version__ as __version__
from .analyses import set_html_renderer as _set_html_renderer
from .errors import AttntopoError as AttntopoError
from .errors import DeviceError as DeviceError
from .errors import EmptyTextError as EmptyTextError
from .errors import InvalidInputError as InvalidInputError
from .errors import InvalidMatrixError as InvalidMatrixError
from .errors import MissingDependencyError as MissingDependencyError
from .errors import ModelLoadError as ModelLoadError
from .errors import ModelNotFoundError as ModelNotFoundError
from .errors import OutOfRangeError as OutOfRangeError
from .errors import ResultFormatError as ResultFormatError
from .errors import TextTooLongError as TextTooLongError
from .errors import UnsafeWeightsError as UnsafeWeightsError

#: The error classes imported above: public at the top level, written once (in the import;
#: ``X as X`` marks a re-export for type checkers and linters, since __all__ is derived).
_ERRORS = tuple(
    sorted(
        n
        for n, v in list(globals().items())
        if isinstance(v, type) and v.__module__ == "attntopo.errors"
    )
)


def _render_html(result: Any) -> str | None:
    """Notebook HTML of a result (``_repr_html_``): the report module's view of an
    :class:`Analysis` or a :class:`Comparison`, ``None`` (plain ``repr``) for other kinds.

    Installed below into the analyses' hook, so that computation never imports rendering;
    the report module (and matplotlib/plotly with it) is imported on the first call only.
    """
    kind = getattr(result, "kind", None)
    if kind not in ("analysis", "comparison"):
        return None
    from . import report

    return report.analysis_html(result) if kind == "analysis" else report.comparison_html(result)


_set_html_renderer(_render_html)

#: Result kinds whose classes live above the analyses: kind -> (module, class).  The analyses'
#: load_result asks for them through attntopo._hooks (it may not import the layers above).
_UPPER_KINDS = {
    "feature_table": ("attntopo.features", "FeatureTable"),
    "detector_evaluation": ("attntopo.features", "DetectorEvaluation"),
    "hardmax_simulation": ("attntopo.hardmax", "HardmaxSimulation"),
    "hardmax_classifier": ("attntopo.hardmax", "HardmaxClassifier"),
    "compression": ("attntopo.compress", "Compression"),
    "depth": ("attntopo.theory", "Depth"),
    "approximability": ("attntopo.theory", "Approximability"),
    "context": ("attntopo.theory", "Context"),
}


def _result_kind(kind: str) -> type | None:
    where = _UPPER_KINDS.get(kind)
    return None if where is None else getattr(importlib.import_module(where[0]), where[1])


_hooks.result_kind = _result_kind


# public name -> module that defines it: the one place a lazy public name is written
# (__all__ is derived from it; tests/unit/test_public_names.py holds the TYPE_CHECKING
# imports at the end equal to it)
_LAZY = {
    "Analysis": "attntopo.analyses._analysis",
    "analyze": "attntopo.analyses._analysis",
    "Comparison": "attntopo.analyses._comparison",
    "compare": "attntopo.analyses._comparison",
    "PhraseTopology": "attntopo.analyses._phrase",
    "phrase_topology": "attntopo.analyses._phrase",
    "Timeline": "attntopo.analyses._timeline_result",
    "timeline": "attntopo.analyses._timeline",
    "HeadTypes": "attntopo.analyses._head_types",
    "head_types": "attntopo.analyses._head_types",
    "HeadSpace": "attntopo.analyses._head_space",
    "head_distances": "attntopo.analyses._head_space",
    "head_space": "attntopo.analyses._head_space",
    "ModelComparison": "attntopo.analyses._model_comparison",
    "compare_models": "attntopo.analyses._model_comparison",
    "Attention": "attntopo.attention",
    "METRICS": "attntopo.distances",
    "token_distances": "attntopo.distances",
    "load_result": "attntopo.analyses._kinds",
    "AttentionModel": "attntopo.models.model",
    "load_model": "attntopo.models.model",
    "packaged_aliases": "attntopo.models.specs",
    "Diagram": "attntopo.topology.diagram",
    "persistence": "attntopo.topology",
    "persistence_batch": "attntopo.topology",
    "bottleneck": "attntopo.topology.diagram_distances",
    "wasserstein": "attntopo.topology.diagram_distances",
    "complex_at": "attntopo.topology.complex",
    "FeatureTable": "attntopo.features",
    "FeatureSettings": "attntopo.features",
    "select_heads": "attntopo.features",
    "HardmaxSimulation": "attntopo.hardmax",
    "open_store": "attntopo.corpus",
    "depth": "attntopo.theory._depth",
    "Depth": "attntopo.theory._depth",
    "approximability": "attntopo.theory._approx",
    "Approximability": "attntopo.theory._approx",
    "context": "attntopo.theory._context",
    "Context": "attntopo.theory._context",
}

#: Subpackages that are also called as functions: ``attntopo.compress(text, model, …)`` and
#: ``attntopo.features(texts, …)`` call the subpackage (see attntopo._callable); imported lazily.
_CALLABLE_SUBPACKAGES = ("compress", "features")


__all__ = sorted([*_LAZY, *_CALLABLE_SUBPACKAGES, *_ERRORS, "__version__"])


def __getattr__(name: str) -> Any:
    if name in _CALLABLE_SUBPACKAGES:
        value = importlib.import_module(f"attntopo.{name}")
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'attntopo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only: the names of _LAZY
    from .analyses._analysis import Analysis as Analysis
    from .analyses._analysis import analyze as analyze
    from .analyses._comparison import Comparison as Comparison
    from .analyses._comparison import compare as compare
    from .analyses._head_space import HeadSpace as HeadSpace
    from .analyses._head_space import head_distances as head_distances
    from .analyses._head_space import head_space as head_space
    from .analyses._head_types import HeadTypes as HeadTypes
    from .analyses._head_types import head_types as head_types
    from .analyses._kinds import load_result as load_result
    from .analyses._model_comparison import ModelComparison as ModelComparison
    from .analyses._model_comparison import compare_models as compare_models
    from .analyses._phrase import PhraseTopology as PhraseTopology
    from .analyses._phrase import phrase_topology as phrase_topology
    from .analyses._timeline import timeline as timeline
    from .analyses._timeline_result import Timeline as Timeline
    from .attention import Attention as Attention
    from .corpus import open_store as open_store
    from .distances import METRICS as METRICS
    from .distances import token_distances as token_distances
    from .features import FeatureSettings as FeatureSettings
    from .features import FeatureTable as FeatureTable
    from .features import select_heads as select_heads
    from .hardmax import HardmaxSimulation as HardmaxSimulation
    from .models.model import AttentionModel as AttentionModel
    from .models.model import load_model as load_model
    from .models.specs import packaged_aliases as packaged_aliases
    from .theory._approx import Approximability as Approximability
    from .theory._approx import approximability as approximability
    from .theory._context import Context as Context
    from .theory._context import context as context
    from .theory._depth import Depth as Depth
    from .theory._depth import depth as depth
    from .topology import persistence as persistence
    from .topology import persistence_batch as persistence_batch
    from .topology.complex import complex_at as complex_at
    from .topology.diagram import Diagram as Diagram
    from .topology.diagram_distances import bottleneck as bottleneck
    from .topology.diagram_distances import wasserstein as wasserstein
