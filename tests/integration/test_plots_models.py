"""Figures of a real MiniLM analysis: every static figure and the interactive ones draw real
tokens (subwords, [CLS]/[SEP]) and real diagrams to files.

Every format, the options and the errors are checked on synthetic attention in
tests/unit/plots/test_plots.py; this file only adds what a model's output brings.
"""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

import attntopo as at  # noqa: E402
from _figures import check_figure_file, check_standalone_html  # noqa: E402
from attntopo import plots  # noqa: E402

pytestmark = pytest.mark.slow

TEXT = "Quantum information theory allows us to study attention using entanglement."
LAYER, HEAD = 1, 2


@pytest.fixture(scope="module")
def analysis(minilm):
    """Two layers × three heads of MiniLM on a short text, computed once."""
    return at.analyze(TEXT, minilm, layers=[0, 1], heads=[0, 1, 2])


def _labels(fig) -> set[str]:
    return {t.get_text() for ax in fig.axes for t in (*ax.get_xticklabels(), *ax.get_yticklabels())}


@pytest.mark.parametrize(
    "name",
    [
        "diagram",
        "barcode",
        "distance_matrix",
        "attention",
        "head_grid",
        "head_stat",
        "threshold_graph",
        "overview",
    ],
)
def test_static_figure_of_a_real_analysis(name, analysis, tmp_path):
    att = analysis.attention
    D = analysis.distance_matrix(LAYER, HEAD)
    dgm = analysis.diagram(LAYER, HEAD)
    W = att.weights[analysis.layers.index(LAYER), analysis.heads.index(HEAD)]
    fig = {
        "diagram": lambda: plots.plot_diagram(dgm),
        "barcode": lambda: plots.plot_barcode(dgm),
        "distance_matrix": lambda: plots.plot_distance_matrix(D, labels=att.labels),
        "attention": lambda: plots.plot_attention(W, labels=att.labels),
        "head_grid": lambda: plots.plot_head_grid(analysis),
        "head_stat": lambda: plots.plot_head_stat(analysis, stat="total_persistence_h1"),
        "threshold_graph": lambda: plots.plot_threshold_graph(
            D, plots.suggest_scale(dgm, D), labels=att.labels, special=att.special
        ),
        "overview": lambda: plots.plot_head_overview(analysis, LAYER, HEAD),
    }[name]()
    assert isinstance(fig, Figure)
    if name in ("distance_matrix", "attention"):
        # every token labels the axes: specials, and subwords as their slices of the text
        assert (
            {"[CLS]", "[SEP]", "Quantum", "en", "tangle", "ment"} <= set(att.labels) <= _labels(fig)
        )
    check_figure_file(plots.save_figure(fig, tmp_path / f"{name}.png"), "png")


def test_interactive_figures_of_a_real_analysis(analysis, tmp_path):
    pytest.importorskip("plotly")
    att = analysis.attention
    D = analysis.distance_matrix(LAYER, HEAD)
    for name, fig in [
        ("head_grid", plots.iplot_head_grid(analysis)),
        ("threshold_graph", plots.iplot_threshold_graph(D, labels=att.labels, special=att.special)),
    ]:
        check_standalone_html(plots.save_figure(fig, tmp_path / f"{name}.html"))
