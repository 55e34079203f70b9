"""Compressing attention by persistent clusters (the founding paper's §7.1), measured.

Within one head, tokens whose attention rows lie close together under the Jensen–Shannon
distance form H0 clusters; replacing each cluster's rows by one representative leaves fewer
distinct rows.  :func:`compress` does that inside a real forward pass and measures what it costs;
random grouping, k-means on the rows and ToMe-style merging by key similarity, at the same number
of clusters per head, are the baselines.  docs/compression.md has the measurements.

>>> from attntopo.compress import compress
>>> c = compress("minilm", "The cat sat on the mat because it was tired.", scale="gap")
>>> c.compression, c.effect["cosine"]                                  # doctest: +SKIP

The function is ``attntopo.compress.compress``: a top-level ``attntopo.compress`` would be
shadowed by this subpackage as soon as it is imported (as ``attntopo.features`` is).
"""

from ._grouping import METHODS, REPRESENTATIVES, baseline_labels, gap_scale, persistence_labels, replace_rows
from ._run import Compression, compress, compressed_attention, compression_table

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
