"""Persistent homology of distance matrices and the canonical :class:`Diagram`.

>>> from attntopo.topology import persistence
>>> dgm = persistence(D, maxdim=1)          # D: (n, n) distance matrix
>>> dgm[1]                                  # (k, 2) array of H1 (birth, death)

Engines: ``"auto"`` (default: ripser.py's core for small matrices, giotto-ph above),
``"giotto"`` (giotto-ph), ``"ripser"`` (ripser.py), ``"gudhi"``; they return identical
exact float64 diagrams.
"""

from ._mst import h0_deaths, h0_diagrams, mst_edges, prim_contracted, prim_edges, single_linkage
from ._packing import pack_diagrams, unpack_diagrams
from .complex import (
    Complex,
    clusters_at,
    complex_at,
    connection_scale,
    connection_scales,
    cophenetic_matrix,
    dendrogram,
    edge_birth,
    linkage,
    simplex_scale,
)
from .diagram import Diagram, summary_table
from .diagram_distances import DIAGRAM_METRICS, bottleneck, diagram_distance, matching, wasserstein
from .engines import DEFAULT_ENGINE, ENGINES, Engine, available_engines
from .persistence import (
    MAX_MAXDIM,
    persistence,
    persistence_batch,
    pool_shutdown,
    validate_distance_matrix,
)

__all__ = [
    "h0_deaths",
    "h0_diagrams",
    "prim_contracted",
    "prim_edges",
    "mst_edges",
    "single_linkage",
    "Diagram",
    "pack_diagrams",
    "unpack_diagrams",
    "summary_table",
    "persistence",
    "persistence_batch",
    "pool_shutdown",
    "validate_distance_matrix",
    "ENGINES",
    "Engine",
    "DEFAULT_ENGINE",
    "MAX_MAXDIM",
    "available_engines",
    "bottleneck",
    "wasserstein",
    "diagram_distance",
    "matching",
    "DIAGRAM_METRICS",
    "Complex",
    "complex_at",
    "edge_birth",
    "connection_scale",
    "connection_scales",
    "simplex_scale",
    "clusters_at",
    "linkage",
    "dendrogram",
    "cophenetic_matrix",
]
