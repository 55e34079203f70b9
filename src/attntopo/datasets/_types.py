"""The labelled-text container every loader returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ..errors import MissingDependencyError

__all__ = ["TextDataset"]


@dataclass(frozen=True)
class TextDataset:
    """Texts with one label each (unpacks as ``texts, labels = dataset``).

    Attributes
    ----------
    texts : list of str
    labels : list
        One label per text (str or int).
    groups : list of int or None
        Texts that must stay on the same side of a split share a group (e.g. a human text and
        the model's continuation of its first words); use with ``GroupKFold``.
    name : str
        Which loader made it.
    info : dict
        The loader's settings and source (file, filter, counts).
    """

    texts: list[str]
    labels: list[Any]
    groups: list[int] | None = None
    name: str = ""
    info: dict = field(default_factory=dict)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.texts, self.labels))

    def __len__(self) -> int:
        return len(self.texts)

    def classes(self) -> list[Any]:
        """The distinct labels, sorted."""
        return sorted(set(self.labels), key=str)

    def counts(self) -> dict[Any, int]:
        """Texts per label."""
        values, counts = np.unique(
            np.asarray(self.labels, dtype=object).astype(str), return_counts=True
        )
        return {v: int(c) for v, c in zip(values, counts)}

    def to_pandas(self):
        """A DataFrame with columns ``text``, ``label`` (and ``group``)."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingDependencyError("to_pandas needs pandas: pip install pandas") from None
        data = {"text": self.texts, "label": self.labels}
        if self.groups is not None:
            data["group"] = self.groups
        return pd.DataFrame(data)
