"""A per-text cache of feature rows in scikit-learn's ``memory=`` convention (joblib.Memory).

Cross-validation and grid searches call a feature transformer on many overlapping subsets
of the same texts.  The features of one text depend only on the text, the model and the
settings, so each row is stored under a key made of

* the model's identity: its name, kind, resolved path, revision, GGUF file and the hub's
  commit hash when the weights came from the hub (``AttentionModel.spec``, ``config._commit_hash``),
  its device and dtype;
* the settings: the column names (they encode the sets, layers, heads, thresholds, scales and
  quantiles) and every other option that changes a value (``drop_special``, ``truncate``,
  ``cycle_cap``, …), and attntopo's version (a new version may compute a set differently);
* the SHA-256 of the text;

and a later call computes only the texts it has not seen, in one :func:`features` call.
``memory`` follows scikit-learn (:func:`sklearn.utils.validation.check_memory`): ``None``
caches nothing, a path is a :class:`joblib.Memory` location, or any object with joblib's
``Memory`` interface.  Rows are stored through ``memory.cache`` (one small pickle per text),
so ``memory.clear()`` empties the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Callable, Sequence

import numpy as np

from .._version import __version__
from ..errors import InvalidInputError

__all__ = ["check_memory", "model_fingerprint", "row_key", "cached_rows"]


def check_memory(memory: Any) -> Any:
    """``memory`` as an object with joblib's ``Memory`` interface (scikit-learn's convention).

    ``None`` (no caching) or a path (``str`` or :class:`os.PathLike`) becomes a
    :class:`joblib.Memory` (quiet); an object with a ``cache`` method is returned as is.
    Anything else raises :class:`~attntopo.errors.InvalidInputError`.
    """
    if isinstance(memory, os.PathLike):
        memory = os.fspath(memory)
    if memory is None or isinstance(memory, str):
        import joblib

        return joblib.Memory(location=memory, verbose=0)
    if not hasattr(memory, "cache"):
        raise InvalidInputError(
            f"memory must be None, a folder path or a joblib.Memory, got {type(memory).__name__}"
        )
    return memory


def _caches(memory: Any) -> bool:
    """False for a memory that stores nothing (``joblib.Memory(location=None)``)."""
    return getattr(memory, "location", True) is not None


def model_fingerprint(model: Any) -> dict[str, Any]:
    """What identifies a loaded model's weights and numerics (plain JSON data)."""
    spec = getattr(model, "spec", None)
    return {
        "name": getattr(model, "name", str(model)),
        "kind": getattr(spec, "kind", None),
        "path": str(getattr(spec, "path", "")),
        "revision": getattr(spec, "revision", None),
        "gguf_file": getattr(spec, "gguf_file", None),
        "commit": getattr(getattr(model, "config", None), "_commit_hash", None),
        "device": str(getattr(model, "device", "")),
        "dtype": str(getattr(model, "dtype", "")),
    }


#: How a cached row's values map to its columns: 2 since every value is placed by its own
#: (layer, head) (rows cached before, with layers or heads given out of order, put values
#: under another head's name: they are not read again).
_ROW_LAYOUT = 2


def settings_digest(fingerprint: dict, columns: Sequence[str], options: dict) -> str:
    """SHA-256 of the model, the columns and the other options (and attntopo's version, and
    :data:`_ROW_LAYOUT`)."""
    blob = json.dumps(
        {
            "attntopo": __version__,
            "model": fingerprint,
            "columns": list(columns),
            "options": options,
            "rows": _ROW_LAYOUT,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def row_key(digest: str, text: Any) -> str:
    """The cache key of one text's row under settings ``digest``; a (prompt, answer) pair is
    keyed by both parts (so that no split of the same characters shares its key)."""
    if isinstance(text, tuple):
        text = "\x00pair\x00" + json.dumps(list(text))
    return digest + "-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _feature_row(key: str, row: Any = None) -> Any:
    """What ``memory.cache`` stores: ``row`` under ``key`` (``row`` is not part of the hash)."""
    return row


def cached_rows(
    texts: Sequence[str],
    memory: Any,
    digest: str,
    n_columns: int,
    compute: Callable[[list[str]], np.ndarray],
) -> tuple[np.ndarray, int]:
    """Rows of ``texts`` from ``memory``, computing the missing ones with one ``compute`` call.

    Parameters
    ----------
    texts : sequence of str
        The texts, in order (repeats are computed once).
    memory : joblib.Memory-like
        Where rows live (see :func:`check_memory`).
    digest : str
        :func:`settings_digest` of the model and settings.
    n_columns : int
        Width of a row (a stored row of another width counts as missing).
    compute : callable
        ``compute(list_of_texts)`` → ndarray of shape (len(list), n_columns).

    Returns
    -------
    values : ndarray of shape (len(texts), n_columns), float64
    computed : int
        How many distinct texts were computed (the rest came from the cache).
    """
    if not _caches(memory):
        return np.asarray(compute(list(texts)), dtype=np.float64), len(set(texts))
    store = memory.cache(_feature_row, ignore=["row"], verbose=0)
    out = np.empty((len(texts), n_columns), dtype=np.float64)
    missing: dict[str, list[int]] = {}
    keys = [row_key(digest, t) for t in texts]
    for k, (text, key) in enumerate(zip(texts, keys)):
        row = store(key) if store.check_call_in_cache(key) else None
        if row is None or np.shape(row) != (n_columns,):
            missing.setdefault(text, []).append(k)
        else:
            out[k] = row
    if missing:
        todo = list(missing)
        new = np.asarray(compute(todo), dtype=np.float64)
        for text, row in zip(todo, new):
            for k in missing[text]:
                out[k] = row
            store(row_key(digest, text), row=row)
    return out, len(missing)
