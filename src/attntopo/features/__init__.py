"""Topological features for prediction: texts → a table of named features per head.

>>> import attntopo
>>> table = attntopo.features(["A first text.", "Another one."], model="minilm", sets=("js", "template"))
>>> table.columns[0]
'L0H0.js.h0.n_bars'
>>> X = table.to_numpy()                      # (2, n_features)

Feature sets (formulas in ``docs/features.md``):

``js``            attntopo's own: statistics of each head's Jensen–Shannon Rips diagram
``graph``         tda4atd / la-tda: invariants of the attention graph at thresholds τ
``barcode``       tda4atd: statistics of the Rips barcode of ``1 − max(A, Aᵀ)``
``template``      la-tda: distances to fixed attention patterns
``prompt``        TOHA: prompt-to-response spanning-forest score, for (prompt, response) pairs
``js_image``      persistence images of the JS diagrams (persim)
``js_landscape``  persistence landscapes of the JS diagrams (persim)
``js_per_token``  the ``js`` quantities that grow with the text, divided by its token count
``spectral``      LapEigvals: the top-k eigenvalues of each head's attention Laplacian
``lookback``      Lookback Lens: each head's attention on the prompt against the answer, for pairs
``zigzag``        HalluZig: zigzag persistence of the head-mean attention graphs through the layers

The per-set functions take stacks of matrices, so they also serve attention from elsewhere.
The subpackage is callable: ``attntopo.features(...)`` is ``attntopo.features.features(...)``.
"""

from ._ablation import ablated_heads
from ._barcode import BARCODE_QUANTITIES, barcode_features, barcode_matrices
from ._compute import DEFAULT_SETS, FEATURE_SETS, feature_names, features
from ._graph import CYCLE_CAP, DEFAULT_THRESHOLDS, GRAPH_QUANTITIES, graph_features
from ._js import DEFAULT_QUANTILES, DEFAULT_SCALES
from ._lookback import lookback_features, lookback_ratios
from ._prompt import spanning_forest_length
from ._select import head_scores, select_heads
from ._settings import FeatureSettings
from ._spectral import SPECTRAL_K, attention_laplacian, spectral_features
from ._table import FeatureTable, column_name, model_column, parse_column
from ._template import TEMPLATES, template_features
from ._zigzag import layer_graph, zigzag_diagrams, zigzag_features

__all__ = [
    "BARCODE_QUANTITIES",
    "ablated_heads",
    "CYCLE_CAP",
    "DEFAULT_QUANTILES",
    "DEFAULT_SCALES",
    "DEFAULT_SETS",
    "DEFAULT_THRESHOLDS",
    "FEATURE_SETS",
    "FeatureSettings",
    "FeatureTable",
    "GRAPH_QUANTITIES",
    "SPECTRAL_K",
    "TEMPLATES",
    "barcode_features",
    "attention_laplacian",
    "barcode_matrices",
    "column_name",
    "feature_names",
    "features",
    "graph_features",
    "head_scores",
    "layer_graph",
    "lookback_features",
    "lookback_ratios",
    "model_column",
    "parse_column",
    "select_heads",
    "spanning_forest_length",
    "spectral_features",
    "template_features",
    "zigzag_diagrams",
    "zigzag_features",
]

from .._callable import make_callable as _make_callable

_make_callable(__name__, "features")
