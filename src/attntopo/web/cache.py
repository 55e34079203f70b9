"""A small thread-safe LRU cache with single-flight computation.

The explorer keeps the expensive results (an :class:`~attntopo.analyses.Analysis` or
:class:`~attntopo.analyses.Comparison` of every head of a text) keyed by everything
that decides them: model, text(s), metric, homology dimension and settings.  Changing the
layer, the head or the threshold in the page then never re-runs the model.

Two requests for the same key that arrive together compute it once: the second waits for
the first (single flight) and both get the same object.
"""

from __future__ import annotations

import sys
import threading
import types
from collections import OrderedDict
from typing import Any, Callable, Hashable

__all__ = ["LRUCache", "deep_sizeof"]

# shared by every entry, never an entry's own: not counted, not walked into
_SHARED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def deep_sizeof(obj: Any) -> int:
    """Bytes held by ``obj`` and everything it reaches: the data of every NumPy array (a view
    counts the array it views, once) and torch tensor (its storage, once), plus
    :func:`sys.getsizeof` of every other object, each counted once; classes, modules and
    functions are shared, not counted.  An estimate of what dropping ``obj`` would free."""
    import numpy as np

    torch = sys.modules.get("torch")
    seen: set[int] = set()
    total = 0
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _SHARED):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            base = o
            while isinstance(base.base, np.ndarray):
                base = base.base
            if base is not o:  # a view: its header here, the array it views once
                total += sys.getsizeof(o)
                stack.append(base)
                continue
            # getsizeof counts the data of an array that owns it, not of one over foreign memory
            total += sys.getsizeof(o) + (0 if o.flags.owndata else o.nbytes)
            if o.dtype.hasobject:
                stack.extend(o.ravel().tolist())
            continue
        if torch is not None and isinstance(o, torch.Tensor):
            storage = o.untyped_storage()
            key = ("storage", storage.data_ptr())
            if hash(key) not in seen:
                seen.add(hash(key))
                total += storage.nbytes()
            total += sys.getsizeof(o)
            continue
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        else:
            d = getattr(o, "__dict__", None)
            if isinstance(d, dict):
                stack.append(d)
            for name in getattr(type(o), "__slots__", ()):
                if hasattr(o, name):
                    stack.append(getattr(o, name))
    return total


class LRUCache:
    """Least-recently-used cache of at most ``maxsize`` entries (``maxsize = 0``: no caching)
    holding at most ``max_bytes`` bytes (``None``: no bound in bytes).

    Parameters
    ----------
    maxsize : int
        Entries kept; the least recently used one is dropped when a new one arrives.
    max_bytes : int, optional
        Bytes kept, each entry measured by ``sizeof`` when it is stored: the least recently
        used entries are dropped until the new one fits; an entry larger than ``max_bytes``
        on its own is returned but not kept.
    sizeof : callable
        An entry's size in bytes (:func:`deep_sizeof`).
    """

    def __init__(
        self,
        maxsize: int = 32,
        max_bytes: int | None = None,
        sizeof: Callable[[Any], int] = deep_sizeof,
    ):
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ValueError(f"maxsize must be an int >= 0, got {maxsize!r}")
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
        ):
            raise ValueError(f"max_bytes must be None or an int >= 0, got {max_bytes!r}")
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self._sizeof = sizeof
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        #: bytes held by the entries, as measured when each was stored
        self.nbytes = 0
        self._lock = threading.Lock()
        self._inflight: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The cached value (marked as recently used), or ``default``."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            return default

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value``, dropping the least recently used entries beyond ``maxsize``
        entries or ``max_bytes`` bytes (a value larger than ``max_bytes`` is not stored)."""
        if self.maxsize == 0:
            return
        size = self._sizeof(value) if self.max_bytes is not None else 0
        with self._lock:
            self._drop(key)
            if self.max_bytes is not None and size > self.max_bytes:
                return
            self._data[key] = value
            self._sizes[key] = size
            self.nbytes += size
            while len(self._data) > self.maxsize or (
                self.max_bytes is not None and self.nbytes > self.max_bytes
            ):
                self._drop(next(iter(self._data)))

    def _drop(self, key: Hashable) -> None:
        """Forget ``key`` (under the lock)."""
        if key in self._data:
            del self._data[key]
            self.nbytes -= self._sizes.pop(key)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._sizes.clear()
            self.nbytes = 0

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> tuple[Any, bool]:
        """``(value, cached)``: the cached value, or ``compute()`` stored under ``key``.

        Concurrent callers with the same key compute once; exceptions are not cached.
        """
        missing = object()
        value = self.get(key, missing)
        if value is not missing:
            return value, True
        with self._lock:
            key_lock = self._inflight.setdefault(key, threading.Lock())
        with key_lock:
            value = self.get(key, missing)
            if value is not missing:
                return value, True
            try:
                with self._lock:
                    self.misses += 1
                value = compute()
                self.put(key, value)
                return value, False
            finally:
                with self._lock:
                    if self._inflight.get(key) is key_lock:
                        del self._inflight[key]

    def stats(self) -> dict:
        with self._lock:
            bound = {} if self.max_bytes is None else {"max_bytes": self.max_bytes}
            return {
                "size": len(self._data),
                "maxsize": self.maxsize,
                "bytes": self.nbytes,
                **bound,
                "hits": self.hits,
                "misses": self.misses,
            }
