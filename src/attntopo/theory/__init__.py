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
