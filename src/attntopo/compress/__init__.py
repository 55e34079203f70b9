"""Compressing attention by persistent clusters (the founding paper's §7.1), measured.

Within one head, tokens whose attention rows lie close together under the Jensen–Shannon
distance form H0 clusters; replacing each cluster's rows by one representative leaves fewer
distinct rows.  :func:`compress` does that inside a real forward pass and measures what it costs;
random grouping, k-means on the rows and ToMe-style merging by key similarity, at the same number
of clusters per head, are the baselines.  docs/compression.md has the measurements.

>>> import attntopo
>>> c = attntopo.compress("The cat sat on the mat because it was tired.",
...                       model="minilm")                              # doctest: +SKIP
>>> c.compression, c.effect["cosine"]                                  # doctest: +SKIP

The subpackage is callable: ``attntopo.compress(...)`` is ``attntopo.compress.compress(...)``
(see ``attntopo._callable`` for why it is not a separate top-level function).
"""

from ._run import Compression, compress, compressed_attention, compression_table
from .grouping import (
    METHODS,
    REPRESENTATIVES,
    baseline_labels,
    gap_scale,
    persistence_labels,
    replace_rows,
)

__all__ = [
    "compress",
    "compression_table",
    "Compression",
    "compressed_attention",
    "METHODS",
    "REPRESENTATIVES",
    "persistence_labels",
    "baseline_labels",
    "replace_rows",
    "gap_scale",
]

from .._callable import make_callable as _make_callable

_make_callable(__name__, "compress")
