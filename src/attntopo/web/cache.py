"""A small thread-safe LRU cache with single-flight computation.

The explorer keeps the expensive results (an :class:`~attntopo.analyses.text.Analysis` or
:class:`~attntopo.analyses.compare.Comparison` of every head of a text) keyed by everything
that decides them: model, text(s), metric, homology dimension and settings.  Changing the
layer, the head or the threshold in the page then never re-runs the model.

Two requests for the same key that arrive together compute it once: the second waits for
the first (single flight) and both get the same object.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

__all__ = ["LRUCache"]


class LRUCache:
    """Least-recently-used cache of at most ``maxsize`` entries (``maxsize = 0``: no caching).

    Parameters
    ----------
    maxsize : int
        Entries kept; the least recently used one is dropped when a new one arrives.
    """

    def __init__(self, maxsize: int = 32):
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ValueError(f"maxsize must be an int >= 0, got {maxsize!r}")
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
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
        """Store ``value`` (dropping the least recently used entries beyond ``maxsize``)."""
        if self.maxsize == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

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
            return {"size": len(self._data), "maxsize": self.maxsize, "hits": self.hits,
                    "misses": self.misses}
