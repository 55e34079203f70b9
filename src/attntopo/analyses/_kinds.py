"""The table of result kinds and :func:`load_result`.

Every result class names its kind (``Analysis.kind == "analysis"``); a saved result's
``attntopo.json`` carries it, and :data:`KINDS` maps it back to the class that reads it.  A new
result kind is added here, in one line.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ResultFormatError
from ..io import load_payload
from ._result import Result
from .compare import Comparison, PhraseTopology
from .head_types import HeadTypes
from .heads import HeadSpace, ModelComparison
from .text import Analysis
from .timeline import Timeline

__all__ = ["KINDS", "load_result"]

#: kind (``attntopo.json``'s ``"kind"``) → result class.
KINDS: dict[str, type[Result]] = {
    "analysis": Analysis,
    "comparison": Comparison,
    "phrase_topology": PhraseTopology,
    "head_space": HeadSpace,
    "head_space_comparison": ModelComparison,
    "head_types": HeadTypes,
    "timeline": Timeline,
}


def load_result(path: str | os.PathLike) -> Any:
    """Load any saved attntopo result (an :class:`Analysis`, :class:`Comparison`, …).

    Parameters
    ----------
    path : path
        A folder written by a result's ``save``.

    Returns
    -------
    Result
        An instance of ``KINDS[kind]``, equal to the result that was saved.

    Raises
    ------
    ResultFormatError
        No result folder there, a format version this attntopo cannot read, an unknown kind,
        or arrays/metadata that are missing or of the wrong shape, type or range (one line
        naming what is wrong).
    """
    meta, arrays = load_payload(path)
    kind = meta.get("kind")
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ResultFormatError(
            f"unknown result kind {kind!r} in {str(path)!r}; known: {', '.join(sorted(KINDS))}"
        )
    try:
        return cls._from_payload(meta, arrays)
    except ResultFormatError as e:
        raise ResultFormatError(f"{kind} result in {str(path)!r} is invalid: {e}") from None
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
        what = f"missing entry {e}" if isinstance(e, KeyError) else str(e)
        raise ResultFormatError(f"{kind} result in {str(path)!r} is incomplete or corrupt: {what}") from None
