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

from .._lazy import lazy_names
from ._registry import FEATURE_SETS as _SETS

__doc__ = __doc__.replace("{sets}", "\n".join(
    f"``{name}``{' ' * max(1, 16 - len(name))}{s.source}: {s.summary}"
    + (" (pairs)" if s.input == "pair" else "") for name, s in _SETS.items()))

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
