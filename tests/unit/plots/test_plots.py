"""Figures of a synthetic analysis (no model): every function, every format, no global state.

The same figures of a real MiniLM analysis: tests/integration/test_plots_models.py."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import base64
import subprocess
import sys
import types

import numpy as np
import pytest

from _synthetic import text_attention

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

import attntopo as at  # noqa: E402
from _figures import STATIC_FORMATS, check_figure_file, check_standalone_html  # noqa: E402
from attntopo import plots  # noqa: E402
from attntopo.errors import InvalidInputError, InvalidMatrixError, MissingDependencyError  # noqa: E402
from attntopo.plots import _layout, _style  # noqa: E402

TEXT = "Quantum information theory allows us to study attention using entanglement."


@pytest.fixture(scope="module")
def rc_before():
    return matplotlib.rcParams.copy()


@pytest.fixture(scope="module")
def analysis(rc_before):
    """Two layers × three heads of synthetic attention over a short text, computed once."""
    return at.analyze(text_attention(TEXT, L=2, H=3), n_jobs=1)


@pytest.fixture(scope="module")
def head(analysis):
    layer, h = 1, 2
    return types.SimpleNamespace(
        dgm=analysis.diagram(layer, h),
        D=analysis.distance_matrix(layer, h),
        W=analysis.attention.weights[analysis.layers.index(layer), analysis.heads.index(h)],
        labels=analysis.attention.labels,
        special=analysis.attention.special,
    )


def _static_figures(analysis, head):
    eps = plots.suggest_scale(head.dgm, head.D)
    return {
        "diagram": lambda: plots.plot_diagram(head.dgm, title="layer 1, head 2"),
        "diagram_h1": lambda: plots.plot_diagram(head.dgm, dims=[1]),
        "barcode": lambda: plots.plot_barcode(head.dgm),
        "distance_matrix": lambda: plots.plot_distance_matrix(head.D, labels=head.labels),
        "attention": lambda: plots.plot_attention(head.W, labels=head.labels),
        "head_grid": lambda: plots.plot_head_grid(analysis),
        "head_stat": lambda: plots.plot_head_stat(analysis, stat="total_persistence_h1"),
        "threshold_graph": lambda: plots.plot_threshold_graph(
            head.D, eps, labels=head.labels, highlight=[1, 2], special=head.special
        ),
        "overview": lambda: plots.plot_head_overview(analysis, 1, 2),
    }


@pytest.mark.parametrize(
    "name",
    [
        "diagram",
        "diagram_h1",
        "barcode",
        "distance_matrix",
        "attention",
        "head_grid",
        "head_stat",
        "threshold_graph",
        "overview",
    ],
)
def test_static_figure_every_format(name, analysis, head, tmp_path):
    fig = _static_figures(analysis, head)[name]()
    assert isinstance(fig, Figure)
    for fmt in STATIC_FORMATS:
        out = plots.save_figure(fig, tmp_path / f"{name}.{fmt}")
        assert out == tmp_path / f"{name}.{fmt}"
        check_figure_file(out, fmt)
    # atomic writes leave no temporary files behind
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{name}.{f}" for f in STATIC_FORMATS
    )


@pytest.mark.parametrize("name", ["diagram", "distance_matrix", "threshold_graph", "head_grid"])
def test_interactive_figure_html(name, analysis, head, tmp_path):
    pytest.importorskip("plotly")
    fig = {
        "diagram": lambda: plots.iplot_diagram(head.dgm, title="layer 1, head 2"),
        "distance_matrix": lambda: plots.iplot_distance_matrix(head.D, labels=head.labels),
        "threshold_graph": lambda: plots.iplot_threshold_graph(
            head.D, labels=head.labels, highlight=[0], special=head.special
        ),
        "head_grid": lambda: plots.iplot_head_grid(analysis),
    }[name]()
    out = plots.save_figure(fig, tmp_path / f"{name}.html")
    check_standalone_html(out)


def test_threshold_graph_slider_has_one_step_per_scale(head):
    """The slider holds the given scales; the figure opens with complex_at's simplices drawn
    (the page recomputes them per step: tests/web/test_report_slider.py)."""
    pytest.importorskip("plotly")
    scales = [0.2, 0.35, 0.5, 0.7]
    fig = plots.iplot_threshold_graph(head.D, scales=scales, labels=head.labels, start=2)
    meta = fig.layout.meta["attntopo"]
    assert meta["scales"] == scales and meta["start"] == 2
    n = head.D.shape[0]
    assert len(base64.b64decode(meta["steps"])) == n * (n - 1) // 2  # one byte per pair
    xs = np.asarray(fig.data[1].x, dtype=float)
    n_edges = int(np.isnan(xs).sum())  # a NaN closes each segment
    assert n_edges == len(at.complex_at(head.D, 0.5).simplices(1))
    assert len(fig.data[2].x) == n


def test_figures_to_html_inlines_plotly_once(head, tmp_path):
    pytest.importorskip("plotly")
    data = plots.figures_to_html(
        [("diagram", plots.iplot_diagram(head.dgm)), plots.iplot_distance_matrix(head.D)],
        title="report",
    )
    path = tmp_path / "report.html"
    path.write_bytes(data)
    check_standalone_html(path)
    html = data.decode()
    assert html.count("Plotly.newPlot") == 2


def test_save_figure_rejects_unknown_suffix(head, tmp_path):
    fig = plots.plot_diagram(head.dgm)
    with pytest.raises(InvalidInputError, match=r"\.png, \.svg, \.pdf, \.html"):
        plots.save_figure(fig, tmp_path / "x.jpeg")
    with pytest.raises(InvalidInputError, match="suffix"):
        plots.save_figure(fig, tmp_path / "noext")
    with pytest.raises(InvalidInputError, match="plotly"):
        plots.save_figure(fig, tmp_path / "x.html")
    with pytest.raises(InvalidInputError, match="matplotlib Figure or a plotly Figure"):
        plots.save_figure(object(), tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_plotly_static_export_needs_kaleido(head, tmp_path):
    pytest.importorskip("plotly")
    import importlib.util

    if importlib.util.find_spec("kaleido") is not None:
        pytest.skip("kaleido is installed")
    with pytest.raises(MissingDependencyError, match="kaleido"):
        plots.save_figure(plots.iplot_diagram(head.dgm), tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_ax_draws_into_given_axes_and_subfigures(head):
    fig = Figure(figsize=(8, 4))
    left, right = fig.subfigures(1, 2)
    ax1, ax2 = left.subplots(), right.subplots()
    assert plots.plot_diagram(head.dgm, ax=ax1) is fig
    assert plots.plot_threshold_graph(head.D, 0.5, labels=head.labels, ax=ax2) is fig
    assert len(ax1.lines) > 0 and len(ax2.collections) > 0
    with pytest.raises(InvalidInputError, match="Axes"):
        plots.plot_barcode(head.dgm, ax="not an axes")


def test_diagram_puts_infinite_points_on_the_infinity_line(head):
    fig = plots.plot_diagram(head.dgm)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == "∞"
    inf_y = ax.get_yticks()[-1]
    finite_max = max(float(np.max(p[np.isfinite(p[:, 1]), 1], initial=0)) for p in head.dgm)
    assert inf_y > finite_max
    h0 = [ln for ln in ax.lines if ln.get_label().startswith("H0")][0]
    assert np.isclose(np.max(h0.get_ydata()), inf_y)  # H0's never-dying class


def test_label_thinning_for_128_tokens():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(128, 3))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    labels = [f"tok{i}" for i in range(128)]
    fig = plots.plot_distance_matrix(D, labels=labels)
    ax = fig.axes[0]
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert 10 <= len(shown) <= _style.MAX_LABELS
    assert shown[1].startswith("tok4")  # every 4th
    pos, texts = _style.thin_labels(labels, 128)
    assert pos[:3] == [0, 4, 8] and len(texts) == 32


def test_threshold_complex_matches_brute_force():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(12, 2))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    eps = 0.45
    edges, tris = _layout.threshold_complex(D, eps)
    n = len(D)
    want_e = {(i, j) for i in range(n) for j in range(i + 1, n) if D[i, j] <= eps}
    want_t = {
        (i, j, k)
        for i in range(n)
        for j in range(i + 1, n)
        for k in range(j + 1, n)
        if D[i, j] <= eps and D[i, k] <= eps and D[j, k] <= eps
    }
    assert {tuple(e) for e in edges.tolist()} == want_e
    assert {tuple(t) for t in tris.tolist()} == want_t


def test_mds_layout_is_deterministic_and_exact_for_planar_points():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(15, 2))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    Y1, Y2 = _layout.mds_layout(D), _layout.mds_layout(D.copy())
    assert np.array_equal(Y1, Y2)
    DY = np.sqrt(((Y1[:, None] - Y1[None]) ** 2).sum(-1))
    assert np.allclose(DY, D, atol=1e-9)


def test_bad_inputs_name_what_is_allowed(head):
    with pytest.raises(InvalidMatrixError, match="square"):
        plots.plot_distance_matrix(np.zeros((3, 4)))
    with pytest.raises(InvalidInputError, match="one label per token"):
        plots.plot_distance_matrix(head.D, labels=["a", "b"])
    with pytest.raises(InvalidInputError, match="positive"):
        plots.plot_threshold_graph(head.D, 0.0)
    with pytest.raises(InvalidInputError, match="out of range"):
        plots.plot_threshold_graph(head.D, 0.5, highlight=[10_000])
    with pytest.raises(InvalidInputError, match="dims must be"):
        plots.plot_diagram(head.dgm, dims=[3])
    with pytest.raises(InvalidInputError, match="allowed"):
        plots.plot_head_stat(
            types.SimpleNamespace(
                diagrams=[],
                layers=(),
                heads=(),
                attention=None,
                summary=lambda: {"layer": [], "x_h1": []},
            ),
            stat="nope",
        )


def test_no_global_state_changed(analysis, head, rc_before, tmp_path):
    import matplotlib.pyplot as plt

    fignums = plt.get_fignums()
    for name, make in _static_figures(analysis, head).items():
        plots.save_figure(make(), tmp_path / f"{name}.png")
    assert plt.get_fignums() == fignums  # no pyplot state: nothing left open
    after = matplotlib.rcParams.copy()
    changed = {k for k in rc_before if rc_before[k] != after[k]}
    assert not changed, f"rcParams changed: {sorted(changed)}"


def test_computation_modules_never_import_plots():
    code = (
        "import sys, attntopo, attntopo.analyses, attntopo.io, attntopo.cli\n"
        "bad = [m for m in ('attntopo.plots', 'matplotlib', 'plotly') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_head_grid_readable_for_30_by_9(analysis, tmp_path):
    """SmolLM2's 30 × 9 grid: one panel per head, row and column labels, a sensible size."""
    flat = [d for row in analysis.diagrams for d in row]
    grid = [[flat[(i * 9 + j) % len(flat)] for j in range(9)] for i in range(30)]
    fake = types.SimpleNamespace(
        diagrams=grid,
        layers=tuple(range(30)),
        heads=tuple(range(9)),
        attention=analysis.attention,
        metric=analysis.metric,
        threshold=analysis.threshold,
    )
    fig = plots.plot_head_grid(fake)
    assert len(fig.axes) == 270
    w, h = fig.get_size_inches()
    assert 6 < w < 12 and 20 < h < 30
    assert fig.axes[0].get_title() == "head 0"
    assert fig.axes[9 * 29].get_ylabel() == "layer 29"
    out = plots.save_figure(fig, tmp_path / "grid.png", dpi=100)
    check_figure_file(out, "png")
