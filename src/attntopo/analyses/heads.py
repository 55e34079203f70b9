"""Head space and model-to-model comparison (the old module path).

The code is in :mod:`._head_space` (:func:`head_distances`, :func:`head_space`),
:mod:`._model_comparison` (:func:`compare_models`) and :mod:`attntopo._mds`
(:func:`classical_mds`); every name this module offered is still importable from it.
"""

from .._mds import classical_mds
from ._head_space import REDUCTIONS, HeadSpace, head_distances, head_labels, head_space
from ._model_comparison import DIAGRAM_DISTANCES, ModelComparison, compare_models

__all__ = [
    "HeadSpace",
    "ModelComparison",
    "head_distances",
    "head_space",
    "compare_models",
    "classical_mds",
    "head_labels",
    "REDUCTIONS",
    "DIAGRAM_DISTANCES",
]
