"""Names shared by every stage, importable without torch (the CLI needs them at start-up).

Every option set is written once, as a :data:`typing.Literal` type for annotations, and
its values as a tuple (``get_args`` of the type) for checks and ``--help`` texts::

    Metric = Literal["jensen_shannon", ...]      # def f(metric: Metric = "jensen_shannon")
    METRICS = get_args(Metric)                   # check_choice(metric, "metric", METRICS)
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "Metric",
    "METRICS",
    "EngineName",
    "ENGINE_NAMES",
    "DiagramMetric",
    "DIAGRAM_METRICS",
    "InfiniteBars",
    "INFINITE_BARS",
    "MultiBackend",
    "MULTI_BACKENDS",
    "PlotFormat",
    "PLOT_FORMATS",
    "SummaryStat",
    "SUMMARY_STATS",
    "DEFAULT_MODEL",
    "MAX_MAXDIM",
    "MAX_ANALYSIS_MAXDIM",
    "PairDistance",
    "DISTANCE_NAMES",
    "COUNT_NAMES",
    "PaperMode",
    "PAPER_MODES",
]

#: Row distances accepted by ``metric=`` (see :mod:`attntopo.distances`).
Metric = Literal["jensen_shannon", "hellinger", "fisher_rao", "total_variation"]
METRICS: tuple[str, ...] = get_args(Metric)

#: Persistence engines by name (the registry with their packages is
#: :data:`attntopo.topology.ENGINES`; its keys are these names, in this order).
EngineName = Literal["auto", "giotto", "ripser", "gudhi"]
ENGINE_NAMES: tuple[str, ...] = get_args(EngineName)

#: The founding paper's recipes, reproduced on request with ``paper_compat=`` (never the
#: default): ``"notebook"`` is what the author's published notebooks compute, ``"listing"``
#: what the paper's printed Listing 1 computes (docs/concepts.md, "Reproducing the paper").
PaperMode = Literal["notebook", "listing"]
PAPER_MODES: tuple[str, ...] = get_args(PaperMode)

#: Distances between persistence diagrams (see :mod:`attntopo.topology.diagram_distances`).
DiagramMetric = Literal["bottleneck", "wasserstein"]
DIAGRAM_METRICS: tuple[str, ...] = get_args(DiagramMetric)

#: How diagram distances treat infinite bars: pair them by birth, or drop them.
InfiniteBars = Literal["match", "ignore"]
INFINITE_BARS: tuple[str, ...] = get_args(InfiniteBars)

#: Two-parameter persistence backends (see :mod:`attntopo.topology.multiparameter`).
MultiBackend = Literal["auto", "multipers", "slices"]
MULTI_BACKENDS: tuple[str, ...] = get_args(MultiBackend)

#: Figure file formats (matplotlib writes png/svg/pdf, plotly html).
PlotFormat = Literal["png", "svg", "pdf", "html"]
PLOT_FORMATS: tuple[str, ...] = get_args(PlotFormat)

#: Per-dimension statistics of a diagram in summary tables (see :meth:`Diagram.summary`).
SummaryStat = Literal[
    "n_bars",
    "n_infinite",
    "total_persistence",
    "max_persistence",
    "persistence_entropy",
]
SUMMARY_STATS: tuple[str, ...] = get_args(SummaryStat)

#: The model used when none is named (a packaged alias: all-MiniLM-L6-v2).
DEFAULT_MODEL: str = "minilm"

#: Highest homology dimension :func:`attntopo.topology.persistence` computes.
MAX_MAXDIM: int = 3

#: Highest homology dimension the analyses (``analyze``, ``compare``, ``timeline``,
#: ``head_space``) and the CLI accept: H2 is already costly on a whole model.
MAX_ANALYSIS_MAXDIM: int = 2

#: Distances between two diagrams reported per head and homology dimension by
#: :func:`attntopo.compare` and :func:`attntopo.phrase_topology` (bottleneck, Wasserstein
#: of order 1 and 2): the ``by=``/``name=`` values of their tables and figures.
PairDistance = Literal["bottleneck", "wasserstein1", "wasserstein2"]
DISTANCE_NAMES: tuple[str, ...] = get_args(PairDistance)

#: Counts of simplices among shared tokens per head in a comparison: present in both texts
#: (``shared_*``) and in one text (``*_a``, ``*_b``), at the head's scale.
COUNT_NAMES: tuple[str, ...] = (
    "shared_edges",
    "shared_triangles",
    "edges_a",
    "edges_b",
    "triangles_a",
    "triangles_b",
)
