"""The feature table: one row per text, one named column per (head, set, quantity).

Column names read ``L{layer}H{head}.{set}.{quantity}`` with model indices (0-based), e.g.
``L3H7.js.h1.total_persistence``, ``L3H7.graph.t0.1.b1``, ``L3H7.template.prev``.  A set with
one block of columns per text rather than per head (``zigzag``: all chosen layers and heads
together) writes ``L*H*.{set}.{quantity}``, e.g. ``L*H*.zigzag.h1.n_bars``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._validation import is_int
from ..analyses import KINDS, Columns, Result
from ..errors import InvalidInputError, MissingDependencyError, ResultFormatError
from ..io import json_safe

__all__ = ["FeatureTable", "column_name", "model_column", "parse_column"]

KIND = "feature_table"
_NAME = re.compile(r"^L(\d+|\*)H(\d+|\*)\.([a-z_]+)\.(.+)$")
#: The layer and head of a column that belongs to no single head (``L*H*``).
_ALL = "*"


def column_name(layer: int, head: int, set_name: str, quantity: str) -> str:
    """``L{layer}H{head}.{set}.{quantity}``."""
    return f"L{layer}H{head}.{set_name}.{quantity}"


def model_column(set_name: str, quantity: str) -> str:
    """``L*H*.{set}.{quantity}``: a column of all the chosen layers and heads together."""
    return f"L{_ALL}H{_ALL}.{set_name}.{quantity}"


def parse_column(name: str) -> tuple[int | None, int | None, str, str]:
    """``(layer, head, set, quantity)`` of a column name (inverse of :func:`column_name`);
    layer and head are None for a column of no single head (``L*H*``, :func:`model_column`)."""
    m = _NAME.match(name)
    if m is None or (m.group(1) == _ALL) != (m.group(2) == _ALL):
        raise InvalidInputError(
            f"{name!r} is not a feature column name (expected 'L<layer>H<head>.<set>.<quantity>' "
            "or 'L*H*.<set>.<quantity>')"
        )
    if m.group(1) == _ALL:
        return None, None, m.group(3), m.group(4)
    return int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)


def _head_pairs(heads: Any) -> list[tuple[int, int]]:
    """``(layer, head)`` pairs from tuples or 2-item lists of ints (duplicates kept once)."""
    if isinstance(heads, (str, bytes)) or not hasattr(heads, "__iter__"):
        raise InvalidInputError(f"heads must be (layer, head) pairs, got {heads!r}")
    out: list[tuple[int, int]] = []
    for h in heads:
        if not isinstance(h, (tuple, list)) or len(h) != 2 or not all(is_int(x) for x in h):
            raise InvalidInputError(
                f"heads must be (layer, head) pairs of ints, e.g. [(3, 7), (0, 1)]; got {h!r}"
            )
        out.append((int(h[0]), int(h[1])))
    return list(dict.fromkeys(out))


@dataclass(eq=False)
class FeatureTable(Result):
    """Topological features of a list of texts: a result like every attntopo result.

    ``save(folder)`` and :func:`attntopo.load_result` round-trip it (the kind table names
    this class, imported on first use); equality compares every
    field but the provenance.

    Attributes
    ----------
    values : ndarray of shape (n_texts, n_features), float64
        One row per text that was computed (skipped texts have no row).
    columns : tuple of str, length n_features
        Stable column names ``L{layer}H{head}.{set}.{quantity}`` (see :func:`parse_column`).
    index : ndarray of shape (n_texts,), int64
        Position of each row's text in the input list.
    texts : list of str
        The texts of the rows (for a (prompt, response) pair: prompt and response joined).
    skipped : tuple of int
        Input positions of empty texts skipped with ``on_empty="skip"``.
    settings : dict
        Model, sets, layers, heads and the sets' parameters.
    provenance : dict
        Package versions and creation time (not part of equality).
    """

    values: np.ndarray
    columns: tuple[str, ...]
    index: np.ndarray
    texts: list[str]
    skipped: tuple[int, ...] = ()
    settings: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = KIND

    def __post_init__(self) -> None:
        self.values = np.asarray(self.values, dtype=np.float64).reshape(len(self.index), -1)
        self.columns = tuple(self.columns)
        self.index = np.asarray(self.index, dtype=np.int64)
        self.texts = list(self.texts)
        self.skipped = tuple(int(i) for i in self.skipped)
        if (
            self.values.shape != (self.index.size, len(self.columns))
            or len(self.texts) != self.index.size
        ):
            raise InvalidInputError(
                f"feature table: values {self.values.shape}, {len(self.columns)} columns, "
                f"{self.index.size} index entries and {len(self.texts)} texts do not agree"
            )

    # ---------------------------------------------------------------- access
    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]

    def __len__(self) -> int:
        return self.values.shape[0]

    def feature_names(self) -> list[str]:
        """The column names, in order."""
        return list(self.columns)

    def to_numpy(self) -> np.ndarray:
        """The values, ndarray of shape (n_texts, n_features), float64."""
        return self.values

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)

    def heads(self) -> list[tuple[int, int]]:
        """The (layer, head) pairs present, in column order (``L*H*`` columns belong to none)."""
        seen: dict[tuple[int, int], None] = {}
        for c in self.columns:
            layer, head, _, _ = parse_column(c)
            if layer is not None and head is not None:
                seen[(layer, head)] = None
        return list(seen)

    def select(self, *, heads=None, sets=None) -> "FeatureTable":
        """The columns of some (layer, head) pairs and/or some sets, as a new table.

        ``heads``: ``(layer, head)`` pairs (tuples, or 2-item lists as ``json.load`` gives
        them), model indices; ``sets``: a set name or names.  The columns come in the order
        asked: set by set (in ``sets``' order, else the table's), within a set the heads in
        ``heads``' order (else the table's), quantities as in the table.  Each column keeps its
        name, so its values are those of the head it names whatever the order.  ``heads``
        leaves out the ``L*H*`` columns, which belong to no head.
        """
        want_heads = None if heads is None else _head_pairs(heads)
        want_sets = (
            None if sets is None else list(dict.fromkeys([sets] if isinstance(sets, str) else sets))
        )
        head_rank = None if want_heads is None else {h: k for k, h in enumerate(want_heads)}
        set_rank = None if want_sets is None else {s: k for k, s in enumerate(want_sets)}
        keep = []
        for k, c in enumerate(self.columns):
            layer, head, s, _ = parse_column(c)
            if (head_rank is None or (layer, head) in head_rank) and (
                set_rank is None or s in set_rank
            ):
                keep.append(
                    (
                        set_rank[s] if set_rank is not None else 0,
                        head_rank[(layer, head)] if head_rank is not None else 0,
                        k,
                    )
                )
        if not keep:
            raise InvalidInputError("no column matches that selection of heads and sets")
        if set_rank is None:  # the table's set order: by each set's first column
            first: dict[str, int] = {}
            for _, _, k in keep:
                first.setdefault(parse_column(self.columns[k])[2], k)
            keep = [(first[parse_column(self.columns[k])[2]], h, k) for _, h, k in keep]
        cols = [k for _, _, k in sorted(keep)]
        return FeatureTable(
            self.values[:, cols],
            tuple(self.columns[k] for k in cols),
            self.index,
            self.texts,
            self.skipped,
            dict(self.settings),
            dict(self.provenance),
        )

    # --------------------------------------------------------------- protocol
    def summary(self) -> Columns:
        """Columns of equal length: ``text_index`` then every feature column."""
        out: dict[str, np.ndarray] = {"text_index": self.index}
        for k, c in enumerate(self.columns):
            out[c] = self.values[:, k]
        return Columns(out)

    def to_pandas(self):
        """A DataFrame (rows: texts, indexed by input position; columns: the features)."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingDependencyError("to_pandas needs pandas: pip install pandas") from None
        return pd.DataFrame(
            self.values, columns=list(self.columns), index=pd.Index(self.index, name="text_index")
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (what ``--json`` prints)."""
        return json_safe(
            {
                "kind": self.kind,
                "columns": list(self.columns),
                "index": self.index,
                "rows": self.values,
                "texts": self.texts,
                "skipped": list(self.skipped),
                "settings": self.settings,
                "provenance": self.provenance,
            }
        )

    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {
            "columns": list(self.columns),
            "texts": self.texts,
            "skipped": list(self.skipped),
            "settings": self.settings,
            "provenance": self.provenance,
        }
        return meta, {"values": self.values, "index": self.index}

    @classmethod
    def _from_payload(cls, meta: dict, arrays: dict) -> "FeatureTable":
        columns = meta["columns"]
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise ResultFormatError("'columns' must be a list of column names")
        index = np.asarray(arrays["index"])
        values = np.asarray(arrays["values"])
        if index.ndim != 1 or index.dtype.kind not in "iu" or (index.size and index.min() < 0):
            raise ResultFormatError(
                f"array 'index' must be 1-D non-negative integers, got {index.dtype} {index.shape}"
            )
        if values.dtype.kind != "f" or values.shape != (index.size, len(columns)):
            raise ResultFormatError(
                f"array 'values' must be floats of shape ({index.size}, {len(columns)}), got "
                f"{values.dtype} {values.shape}"
            )
        return cls(
            values=values,
            columns=tuple(columns),
            index=index,
            texts=list(meta["texts"]),
            skipped=tuple(meta.get("skipped", ())),
            settings=dict(meta.get("settings", {})),
            provenance=dict(meta.get("provenance", {})),
        )

    def __repr__(self) -> str:
        sets = self.settings.get("sets", ())
        return (
            f"FeatureTable(texts={len(self)}, features={len(self.columns)}, "
            f"sets={list(sets)}, model={self.settings.get('model')!r})"
        )


KINDS[KIND] = FeatureTable  # load_result reads saved tables once attntopo.features is imported
