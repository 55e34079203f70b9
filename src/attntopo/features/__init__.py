"""Topological features for prediction: texts → a table of named features per head.

>>> import attntopo
>>> table = attntopo.features(["A first text.", "Another one."], model="minilm",
...                           sets=("js", "template"))
>>> table.columns[0]
'L0H0.js.h0.n_bars'
>>> X = table.to_numpy()                      # (2, n_features)

Feature sets (:data:`FEATURE_SETS`, the registry every list of sets derives from; formulas
in ``docs/features.md``):

{sets}

The per-set functions take stacks of matrices, so they also serve attention from elsewhere.
The subpackage is callable: ``attntopo.features(...)`` is ``attntopo.features.features(...)``.
Its names load on first use, so reading :data:`FEATURE_SETS` (the command line's help does)
imports neither torch nor the sets' dependencies.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ._registry import FEATURE_SETS as _SETS

__doc__ = __doc__.replace(
    "{sets}",
    "\n".join(
        f"``{name}``{' ' * max(1, 16 - len(name))}{s.source}: {s.summary}"
        + (" (pairs)" if s.input == "pair" else "")
        for name, s in _SETS.items()
    ),
)

_LAZY = {
    "BARCODE_QUANTITIES": "._barcode",
    "ablated_heads": "._ablation",
    "CYCLE_CAP": "._graph",
    "DEFAULT_QUANTILES": "._js",
    "DEFAULT_SCALES": "._js",
    "DEFAULT_SETS": "._registry",
    "DEFAULT_THRESHOLDS": "._graph",
    "DetectorEvaluation": "._evaluate",
    "FEATURE_SETS": "._registry",
    "FeatureSet": "._registry",
    "FeatureSettings": "._settings",
    "FeatureTable": "._table",
    "GRAPH_QUANTITIES": "._graph",
    "SETTING_NAMES": "._settings",
    "SPECTRAL_K": "._spectral",
    "TEMPLATES": "._template",
    "balanced_subsample": "._evaluate",
    "barcode_features": "._barcode",
    "attention_laplacian": "._spectral",
    "barcode_matrices": "._barcode",
    "column_name": "._table",
    "evaluate_detectors": "._evaluate",
    "feature_names": "._compute",
    "features": "._compute",
    "graph_features": "._graph",
    "head_scores": "._select",
    "layer_graph": "._zigzag",
    "lookback_features": "._lookback",
    "lookback_ratios": "._lookback",
    "model_column": "._table",
    "parse_column": "._table",
    "select_heads": "._select",
    "spanning_forest_length": "._prompt",
    "spectral_features": "._spectral",
    "template_features": "._template",
    "zigzag_diagrams": "._zigzag",
    "zigzag_features": "._zigzag",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_names(globals(), _LAZY, package=__name__)

from .._callable import make_callable as _make_callable  # noqa: E402

_make_callable(__name__, "features")


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only: the names of _LAZY
    from ._ablation import ablated_heads as ablated_heads
    from ._barcode import BARCODE_QUANTITIES as BARCODE_QUANTITIES
    from ._barcode import barcode_features as barcode_features
    from ._barcode import barcode_matrices as barcode_matrices
    from ._compute import feature_names as feature_names
    from ._compute import features as features
    from ._evaluate import DetectorEvaluation as DetectorEvaluation
    from ._evaluate import balanced_subsample as balanced_subsample
    from ._evaluate import evaluate_detectors as evaluate_detectors
    from ._graph import CYCLE_CAP as CYCLE_CAP
    from ._graph import DEFAULT_THRESHOLDS as DEFAULT_THRESHOLDS
    from ._graph import GRAPH_QUANTITIES as GRAPH_QUANTITIES
    from ._graph import graph_features as graph_features
    from ._js import DEFAULT_QUANTILES as DEFAULT_QUANTILES
    from ._js import DEFAULT_SCALES as DEFAULT_SCALES
    from ._lookback import lookback_features as lookback_features
    from ._lookback import lookback_ratios as lookback_ratios
    from ._prompt import spanning_forest_length as spanning_forest_length
    from ._registry import DEFAULT_SETS as DEFAULT_SETS
    from ._registry import FEATURE_SETS as FEATURE_SETS
    from ._registry import FeatureSet as FeatureSet
    from ._select import head_scores as head_scores
    from ._select import select_heads as select_heads
    from ._settings import SETTING_NAMES as SETTING_NAMES
    from ._settings import FeatureSettings as FeatureSettings
    from ._spectral import SPECTRAL_K as SPECTRAL_K
    from ._spectral import attention_laplacian as attention_laplacian
    from ._spectral import spectral_features as spectral_features
    from ._table import FeatureTable as FeatureTable
    from ._table import column_name as column_name
    from ._table import model_column as model_column
    from ._table import parse_column as parse_column
    from ._template import TEMPLATES as TEMPLATES
    from ._template import template_features as template_features
    from ._zigzag import layer_graph as layer_graph
    from ._zigzag import zigzag_diagrams as zigzag_diagrams
    from ._zigzag import zigzag_features as zigzag_features
