"""Head types (the old module path; the code is in :mod:`._head_types`).

Every name this module offered is still importable from it.
"""

from ..words import punctuation_mask, token_strings
from ._compat import callable_module
from ._head_types import (
    BAND_WIDTH,
    BROAD_ENTROPY,
    FEATURES,
    FIT_MAX_ERROR,
    LABEL_DESCRIPTIONS,
    LABELS,
    NEXT_THRESHOLD,
    PREVIOUS_THRESHOLD,
    SELF_THRESHOLD,
    SINK_THRESHOLD,
    HeadTypes,
    head_features,
    head_types,
    label_heads,
)
from ._head_types import __all__ as _all

__all__ = list(_all)  # the names this module always offered

callable_module(__name__, "head_types")  # deprecated: attntopo.analyses.head_types(...) calls it
