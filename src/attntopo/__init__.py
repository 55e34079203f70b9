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

from ._version import __version__
from .errors import (
    AttntopoError,
    DeviceError,
    EmptyTextError,
    InvalidInputError,
    InvalidMatrixError,
    MissingDependencyError,
    ModelLoadError,
    ModelNotFoundError,
    OutOfRangeError,
    ResultFormatError,
    TextTooLongError,
    UnsafeWeightsError,
)
from . import _hooks
from .analyses import set_html_renderer as _set_html_renderer


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


# public name -> module that defines it
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


__all__ = sorted(
    [
        *_LAZY,
        *_CALLABLE_SUBPACKAGES,
        "AttntopoError",
        "DeviceError",
        "EmptyTextError",
        "InvalidInputError",
        "InvalidMatrixError",
        "MissingDependencyError",
        "ModelLoadError",
        "ModelNotFoundError",
        "OutOfRangeError",
        "ResultFormatError",
        "TextTooLongError",
        "UnsafeWeightsError",
        "__version__",
    ]
)


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


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .analyses._analysis import Analysis, analyze
    from .analyses._comparison import Comparison, compare
    from .analyses._head_space import HeadSpace, head_distances, head_space
    from .analyses._head_types import HeadTypes, head_types
    from .analyses._model_comparison import ModelComparison, compare_models
    from .analyses._phrase import PhraseTopology, phrase_topology
    from .analyses._timeline import timeline
    from .analyses._timeline_result import Timeline
    from .attention import Attention
    from .distances import METRICS, token_distances
    from .analyses._kinds import load_result
    from .models import AttentionModel, load_model, packaged_aliases
    from .topology import Diagram, bottleneck, complex_at, persistence, persistence_batch, wasserstein
    from .features import FeatureSettings, FeatureTable, select_heads
    from .corpus import open_store
    from .theory import Approximability, Context, Depth, approximability, context, depth
