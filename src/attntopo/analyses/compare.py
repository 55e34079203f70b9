"""Comparing two texts, and one phrase across contexts (the old module path).

The code is in :mod:`._comparison` (:func:`compare`), :mod:`._phrase`
(:func:`phrase_topology`) and :mod:`attntopo.words` (words and their matching); every name
this module offered is still importable from it.
"""

from ..constants import COUNT_NAMES, DISTANCE_NAMES
from ..words import SharedToken, find_phrase, normalize_token, split_words, word_tokens
from ._comparison import Comparison, compare
from ._compat import callable_module
from ._phrase import PhraseTopology, phrase_topology

__all__ = [
    "SharedToken",
    "Comparison",
    "compare",
    "PhraseTopology",
    "phrase_topology",
    "find_phrase",
    "split_words",
    "word_tokens",
    "normalize_token",
    "DISTANCE_NAMES",
    "COUNT_NAMES",
]

callable_module(__name__, "compare")  # deprecated: attntopo.analyses.compare(...) calls compare
