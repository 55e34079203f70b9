"""Figures of attntopo results: static (matplotlib) and interactive (plotly).

Needs the ``plots`` extra (``pip install 'attntopo[plots]'``): importing this package without
matplotlib raises :class:`~attntopo.errors.MissingDependencyError`; the interactive ``iplot_*``
functions raise it when plotly is missing.  No computation module imports this package.

>>> import attntopo as at
>>> from attntopo import plots
>>> a = at.analyze("Quantum information theory allows us to study attention", layers=1, heads=2)
>>> fig = plots.plot_diagram(a.diagram(1, 2), title="layer 1, head 2")
>>> plots.save_figure(fig, "diagram.svg")
>>> plots.save_figure(plots.iplot_threshold_graph(a.distance_matrix(1, 2),
...                   labels=a.attention.labels), "graph.html")       # offline, slider over ε

Conventions: every ``plot_*`` function returns a :class:`matplotlib.figure.Figure`, takes
``ax=`` when it draws a single panel, never calls ``show()`` and never changes
``matplotlib.rcParams``; colours are colour-blind safe (Okabe–Ito, viridis, cividis) and
each homology dimension has its own marker as well as its own colour.
"""

from __future__ import annotations

try:
    import matplotlib  # noqa: F401
except ImportError:  # pragma: no cover - exercised only without the extra
    from ..errors import MissingDependencyError

    raise MissingDependencyError(
        "attntopo.plots needs matplotlib: pip install 'attntopo[plots]'"
    ) from None

from ._layout import mds_layout, suggest_scale, suggest_scales, threshold_complex
from ._style import DIM_COLORS, OKABE_ITO, thin_labels
from .bundles import (
    Bundle,
    analysis_bundle,
    comparison_bundle,
    head_space_bundle,
    head_tag,
    timeline_bundle,
)
from .compare import (
    iplot_compare_diagrams,
    iplot_compare_graphs,
    iplot_compare_heads,
    plot_compare_diagrams,
    plot_compare_graph,
    plot_compare_graphs,
    plot_compare_heads,
    plot_phrase_distances,
)
from .compress import compression_bundle, plot_compression_heads
from .export import FORMATS, figure_to_bytes, figures_to_html, plotly_div, save_figure
from .features import plot_head_importance
from .hardmax import (
    hardmax_bundle,
    plot_cluster_counts,
    plot_h0_by_step,
    plot_hardmax_overview,
    plot_trajectories,
)
from .heads import (
    iplot_head_mds,
    plot_head_barcode,
    plot_head_distances,
    plot_head_mds,
    plot_head_types,
    plot_model_diagrams,
)
from .interactive import (
    iplot_diagram,
    iplot_distance_matrix,
    iplot_head_grid,
    iplot_threshold_graph,
)
from .static import (
    plot_attention,
    plot_barcode,
    plot_diagram,
    plot_distance_matrix,
    plot_head_grid,
    plot_head_overview,
    plot_head_stat,
    plot_threshold_graph,
)
from .theory_approx import (
    approx_bundle,
    plot_approx_budgets,
    plot_approx_entropy,
    plot_approx_winners,
    plot_approximability,
)
from .theory_context import (
    context_bundle,
    plot_context,
    plot_equivariance,
    plot_margins,
    plot_similarity,
    plot_word,
)
from .theory_depth import DEPTH_PANELS, depth_bundle, plot_depth
from .timeline import (
    iplot_timeline,
    plot_betti_heatmap,
    plot_coherence,
    plot_timeline_diagrams,
    plot_timeline_overview,
    plot_vineyard,
)

__all__ = [
    "Bundle",
    "compression_bundle",
    "DEPTH_PANELS",
    "approx_bundle",
    "plot_approx_budgets",
    "plot_approx_entropy",
    "plot_approx_winners",
    "plot_approximability",
    "context_bundle",
    "depth_bundle",
    "plot_context",
    "plot_depth",
    "plot_equivariance",
    "plot_margins",
    "plot_similarity",
    "plot_word",
    "hardmax_bundle",
    "plot_cluster_counts",
    "plot_compression_heads",
    "plot_head_importance",
    "plot_h0_by_step",
    "plot_hardmax_overview",
    "plot_trajectories",
    "analysis_bundle",
    "comparison_bundle",
    "head_space_bundle",
    "head_tag",
    "timeline_bundle",
    "iplot_compare_diagrams",
    "iplot_compare_graphs",
    "iplot_compare_heads",
    "iplot_head_mds",
    "iplot_timeline",
    "plot_betti_heatmap",
    "plot_coherence",
    "plot_compare_diagrams",
    "plot_compare_graph",
    "plot_compare_graphs",
    "plot_compare_heads",
    "plot_head_barcode",
    "plot_head_distances",
    "plot_head_mds",
    "plot_head_types",
    "plot_model_diagrams",
    "plot_phrase_distances",
    "plot_timeline_diagrams",
    "plot_timeline_overview",
    "plot_vineyard",
    "DIM_COLORS",
    "FORMATS",
    "OKABE_ITO",
    "figure_to_bytes",
    "figures_to_html",
    "plotly_div",
    "iplot_diagram",
    "iplot_distance_matrix",
    "iplot_head_grid",
    "iplot_threshold_graph",
    "mds_layout",
    "plot_attention",
    "plot_barcode",
    "plot_diagram",
    "plot_distance_matrix",
    "plot_head_grid",
    "plot_head_overview",
    "plot_head_stat",
    "plot_threshold_graph",
    "save_figure",
    "suggest_scale",
    "suggest_scales",
    "thin_labels",
    "threshold_complex",
]
