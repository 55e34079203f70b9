"""attntopo: the shape of transformer attention.

Text → model → attention → Jensen–Shannon distances between tokens → Vietoris–Rips
persistent homology → analyses.

>>> import attntopo as at
>>> model = at.load_model("minilm")
>>> att = model.attention("Quantum information theory allows us to study attention")
>>> D = at.token_distances(att)            # (layers, heads, n, n), JS distance base 2
>>> dgm = at.persistence(D[1, 2], maxdim=1)
"""

from importlib.metadata import PackageNotFoundError, version as _version

from .analyses import Analysis, analyze
from .attention import Attention
from .distances import METRICS, token_distances
from .errors import (
    AttntopoError,
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
from .io import load_result
from .models import AttentionModel, load_model, packaged_aliases
from .topology import Diagram, persistence, persistence_batch

try:
    __version__ = _version("attntopo")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "Analysis",
    "Attention",
    "AttentionModel",
    "AttntopoError",
    "Diagram",
    "EmptyTextError",
    "InvalidInputError",
    "InvalidMatrixError",
    "METRICS",
    "MissingDependencyError",
    "ModelLoadError",
    "ModelNotFoundError",
    "OutOfRangeError",
    "ResultFormatError",
    "TextTooLongError",
    "UnsafeWeightsError",
    "__version__",
    "analyze",
    "load_model",
    "load_result",
    "packaged_aliases",
    "persistence",
    "persistence_batch",
    "token_distances",
]
