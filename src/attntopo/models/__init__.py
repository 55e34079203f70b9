"""Models: packaged aliases, hub ids, local folders and GGUF files, loaded with eager attention."""

from ._counts import check_selection, configured_counts
from .loading import cache_dir
from .model import (
    AttentionModel,
    Encoding,
    ModelDescription,
    clear_model_cache,
    describe_model,
    load_model,
)
from .precision import normalize_rows, row_sum_tolerance
from .specs import ALIASES, DEFAULT_MODEL, ModelSpec, packaged_aliases, resolve_spec

__all__ = [
    "ALIASES",
    "DEFAULT_MODEL",
    "AttentionModel",
    "Encoding",
    "ModelSpec",
    "ModelDescription",
    "cache_dir",
    "check_selection",
    "clear_model_cache",
    "configured_counts",
    "describe_model",
    "load_model",
    "normalize_rows",
    "packaged_aliases",
    "resolve_spec",
    "row_sum_tolerance",
]
