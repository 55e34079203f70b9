"""The theory around attention, measured on real models (issue 18).

``depth``            per-layer geometry: rank collapse, JS geometry, intrinsic dimension,
                     Fisher–Rao movement (:mod:`._depth`)
``approximability``  how well band+sparse, top-k, low-rank, kernel and clustered attention
                     approximate every head (:mod:`._approx`)
``context``          permutation equivariance, contextual-mapping margins, self-similarity
                     (:mod:`._context`)

Each returns a result with ``summary()``, ``save()``/``load_result``, and a static figure in
:mod:`attntopo.plots`.  Public names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

# public name -> private module (each module's owner adds its names here)
_LAZY = {
    "depth": "._depth",
    "Depth": "._depth",
    "approximability": "._approx",
    "Approximability": "._approx",
    "context": "._context",
    "Context": "._context",
    "word_contexts": "._context",
    "CONTEXT_SENTENCES": "._context",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_names(globals(), _LAZY, package=__name__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only: the names of _LAZY
    from ._approx import Approximability as Approximability
    from ._approx import approximability as approximability
    from ._context import CONTEXT_SENTENCES as CONTEXT_SENTENCES
    from ._context import Context as Context
    from ._context import context as context
    from ._context import word_contexts as word_contexts
    from ._depth import Depth as Depth
    from ._depth import depth as depth
