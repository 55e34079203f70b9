"""The table of result kinds and :func:`load_result`.

Every result class names its kind (``Analysis.kind == "analysis"``); a saved result's
``attntopo.json`` carries it, and :data:`KINDS` maps it back to the class that reads it.  A new
result kind is added here, in one line.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _hooks
from ..errors import ResultFormatError
from ..io import load_payload
from ._analysis import Analysis
from ._comparison import Comparison
from ._head_space import HeadSpace
from ._head_types import HeadTypes
from ._model_comparison import ModelComparison
from ._phrase import PhraseTopology
from ._result import Result
from ._timeline_result import Timeline

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
    if isinstance(kind, str) and kind not in KINDS and _hooks.result_kind is not None:
        # kinds of the layers above (features, hardmax, compress): the package namespace
        # knows them and imports their module on first use (attntopo._hooks)
        cls = _hooks.result_kind(kind)
        if cls is not None:
            KINDS[kind] = cls
    loader = KINDS[kind]._from_payload if isinstance(kind, str) and kind in KINDS else None
    if loader is None:
        raise ResultFormatError(
            f"unknown result kind {kind!r} in {str(path)!r}; known: {', '.join(sorted(KINDS))}"
        )
    try:
        return loader(meta, arrays)
    except ResultFormatError as e:
        raise ResultFormatError(f"{kind} result in {str(path)!r} is invalid: {e}") from None
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
        what = f"missing entry {e}" if isinstance(e, KeyError) else str(e)
        raise ResultFormatError(
            f"{kind} result in {str(path)!r} is incomplete or corrupt: {what}"
        ) from None
