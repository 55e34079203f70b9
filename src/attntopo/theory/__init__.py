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

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'attntopo.theory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
