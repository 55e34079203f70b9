"""The feature pipeline's declared interface for ``corpus`` and ``sklearn``.

The corpus engines (local and Ray) run the same chunked feature computation as
:func:`attntopo.features.features`, and the scikit-learn estimators reuse its cache, head
selection and ablation; both import those pieces from here, never from the private modules
behind them (``tools/check_imports.py``, rule 3).  Names load lazily, so importing this module
costs nothing until a name is used.

Chunked computation (corpus)
    ``ChunkFeatures``            one chunk's feature rows, computed as each layer streams by
    ``stream_into``              run the model over a chunk's texts into a ``ChunkFeatures``
    ``set_columns``              a settings record's column names, in the store's order
    ``head_order``               the (layer, head) keys of a row, as ``ChunkFeatures(order=)``
    ``PERSISTENCE_SETS``         the sets that need persistence diagrams (worker processes)
    ``threads_beside_workers``   torch threads left for the main process beside ``n_jobs`` workers
    ``join_pair``                a (prompt, answer) pair as the one text the model reads, and where
                                 the answer starts (exactly as ``features`` joins pairs)
    ``answer_check``             ``stream_into``'s check refusing a pair whose answer kept no token
    ``PAIR_SETS``                the sets that need (prompt, answer) pairs
Cache (``AttentionFeatures(memory=)``)
    ``check_memory``, ``model_fingerprint``, ``settings_digest``, ``cached_rows``
Heads (``SelectHeads``, ``ablate_heads``)
    ``HEAD_CRITERIA``, ``check_labels``, ``head_scores``, ``best_heads``, ``parse_column``,
    ``check_heads``, ``ablated_heads``
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

_LAZY = {
    "ChunkFeatures": "._compute",
    "stream_into": "._compute",
    "set_columns": "._compute",
    "head_order": "._compute",
    "PERSISTENCE_SETS": "._compute",
    "threads_beside_workers": "._compute",
    "join_pair": "._compute",
    "answer_check": "._compute",
    "PAIR_SETS": "._compute",
    "check_memory": "._cache",
    "model_fingerprint": "._cache",
    "settings_digest": "._cache",
    "cached_rows": "._cache",
    "HEAD_CRITERIA": "._select",
    "check_labels": "._select",
    "head_scores": "._select",
    "best_heads": "._select",
    "parse_column": "._table",
    "check_heads": "._ablation",
    "ablated_heads": "._ablation",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_names(globals(), _LAZY, package=__package__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only: the names of _LAZY
    from ._ablation import ablated_heads as ablated_heads
    from ._ablation import check_heads as check_heads
    from ._cache import cached_rows as cached_rows
    from ._cache import check_memory as check_memory
    from ._cache import model_fingerprint as model_fingerprint
    from ._cache import settings_digest as settings_digest
    from ._compute import PAIR_SETS as PAIR_SETS
    from ._compute import PERSISTENCE_SETS as PERSISTENCE_SETS
    from ._compute import ChunkFeatures as ChunkFeatures
    from ._compute import answer_check as answer_check
    from ._compute import head_order as head_order
    from ._compute import join_pair as join_pair
    from ._compute import set_columns as set_columns
    from ._compute import stream_into as stream_into
    from ._compute import threads_beside_workers as threads_beside_workers
    from ._select import HEAD_CRITERIA as HEAD_CRITERIA
    from ._select import best_heads as best_heads
    from ._select import check_labels as check_labels
    from ._select import head_scores as head_scores
    from ._table import parse_column as parse_column
