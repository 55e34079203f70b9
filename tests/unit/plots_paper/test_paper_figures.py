"""Figures fit for a paper (issue 15, item 7), on real-like synthetic attention (no model).

Each test measures one defect the issue lists, on the drawn figure (``fig.canvas.draw()`` with
the Agg renderer, then the artists' window extents in pixels), so that it failed before the
fix: colliding token labels, shared tokens hiding their shared edge, "1 edges", mixed number
formats and raw column names, a colour bar taller than its matrix, an untitled timeline
overview with an unexplained empty panel, raw tokenizer pieces on axes, and 30 layer colours
without a key.  The last tests draw every static figure of the package in PNG, SVG and PDF
and check that no figure changes ``matplotlib.rcParams``.

The real models' versions of the first checks: tests/integration/test_paper_figures_models.py.
"""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import math
import re
from decimal import Decimal

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.collections import LineCollection, PathCollection  # noqa: E402

import attntopo as at  # noqa: E402
from _paper_figures import drawn, overlapping_pairs, token_labels_of  # noqa: E402
from attntopo import (  # noqa: E402
    compare,
    head_space,
    phrase_topology,
    plots,  # noqa: E402
)
from attntopo.plots import _style as S  # noqa: E402
from attntopo.plots._labels import TokenLabels, separate_points  # noqa: E402
from attntopo.plots._layout import display_labels  # noqa: E402
from attntopo.plots.export import figure_to_bytes  # noqa: E402

LONG = (
    "Quantum information theory allows us to study how attention heads in a transformer "
    "share information between tokens, and whether the topology of their distances "
    "tells us something about the meaning of the text that the model reads."
)
_PIECES = re.compile(r"\w+|[^\w\s]")


# ------------------------------------------------------------------ real-like attention
def real_like(
    text: str = LONG,
    L: int = 1,
    H: int = 2,
    seed: int = 0,
    *,
    sink: float = 6.0,
    causal: bool = False,
    same: tuple[tuple[int, ...], ...] = (),
    model: str = "real-like",
    special: bool = True,
) -> at.Attention:
    """Attention with the structure of a real encoder's heads.

    A strong sink on the first token (most rows nearly alike: the dense cluster that a real
    MiniLM or SmolLM2 head shows), a weaker one on the last, previous-token attention in odd
    heads and a little noise.  ``same``: groups of token positions whose rows are made
    identical (tokens at distance 0, drawn at the same place by MDS).
    """
    pieces = [(m.group(), m.start(), m.end()) for m in _PIECES.finditer(text)]
    tokens, offsets = [p[0] for p in pieces], [(p[1], p[2]) for p in pieces]
    if special:
        tokens, offsets = ["[CLS]", *tokens, "[SEP]"], [(0, 0), *offsets, (0, 0)]
    n = len(tokens)
    rng = np.random.default_rng(seed)
    W = np.empty((L, H, n, n))
    past = np.tril(np.ones((n, n), bool))
    for li in range(L):
        for h in range(H):
            logits = rng.normal(scale=0.3, size=(n, n))
            logits[:, 0] += sink * (1 + 0.2 * h)
            logits[:, -1] += 0.6 * sink
            idx = np.arange(1, n)
            logits[idx, idx - 1] += 2.0 * (h % 2)
            for group in same:
                logits[list(group)] = logits[group[0]]
            if causal:
                logits = np.where(past, logits, -np.inf)
            e = np.exp(logits - logits.max(1, keepdims=True))
            W[li, h] = e / e.sum(1, keepdims=True)
    return at.Attention.from_weights(
        W,
        tokens,
        text=text,
        offsets=offsets,
        model=model,
        causal=causal,
        special=[special and k in (0, n - 1) for k in range(n)],
    )


@pytest.fixture(scope="module")
def dense():
    """A 41-token text on a sink head: most tokens crowd into one cluster of the MDS layout."""
    att = real_like()
    a = at.analyze(att, layers=[0], heads=[0, 1], n_jobs=1)
    D = a.distance_matrix(0, 0)
    return att, a, D, plots.suggest_scale(a.diagram(0, 0), D)


# ------------------------------------------------------------------------ token labels
def _naive_overlaps(ax, renderer) -> int:
    """Overlapping label pairs if every label sat at the fixed offset (3, 3) points of its token,
    as they did before: how crowded the layout is."""
    layer = next(a for a in ax.artists if isinstance(a, TokenLabels))
    P = ax.transData.transform(layer.xy[layer.labelled]) + 3 * renderer.points_to_pixels(1.0)
    sizes = [
        (e.width, e.height) for e in (t.get_window_extent(renderer) for t in layer.annotations)
    ]
    boxes = [(x, y, x + w, y + h) for (x, y), (w, h) in zip(P, sizes)]
    return sum(
        1
        for i in range(len(boxes))
        for j in range(i)
        if min(boxes[i][2], boxes[j][2]) - max(boxes[i][0], boxes[j][0]) > 1
        and min(boxes[i][3], boxes[j][3]) - max(boxes[i][1], boxes[j][1]) > 1
    )


@pytest.mark.parametrize("dpi", [100, 200])
def test_dense_threshold_graph_labels_do_not_collide(dense, dpi):
    att, _, D, eps = dense
    fig = plots.plot_threshold_graph(D, eps, labels=att.labels, special=att.special)
    fig.set_dpi(dpi)
    r = drawn(fig)
    ax = fig.axes[0]
    labels = token_labels_of(ax)
    assert len(labels) == att.n_tokens  # 41 tokens, all labelled (max_labels=60)
    # before: 15 pairs of labels written over each other at the fixed (3, 3) offset
    assert overlapping_pairs(labels, r) == []
    assert (
        _naive_overlaps(ax, r) >= 8
    )  # dense: labels at a fixed offset would collide in 8 pairs or more
    fb = fig.bbox
    for t in labels:  # and every label stays on the figure
        b = t.get_window_extent(r)
        assert b.x0 >= fb.x0 - 1 and b.x1 <= fb.x1 + 1 and b.y0 >= fb.y0 - 1 and b.y1 <= fb.y1 + 1


def test_labels_moved_away_have_leader_lines_to_their_token(dense):
    att, _, D, eps = dense
    fig = plots.plot_threshold_graph(D, eps, labels=att.labels, special=att.special)
    r = drawn(fig)
    ax = fig.axes[0]
    layer = next(a for a in ax.artists if isinstance(a, TokenLabels))
    X = ax.transData.transform(layer.xy)
    assert layer.has_leader.any()  # the crowded cluster needs them
    segs = [ax.transData.transform(s) for s in layer.leaders.get_segments()]
    assert len(segs) <= int(layer.has_leader.sum())
    by_point = {}
    for k, i in enumerate(layer.labelled):
        by_point[i] = layer.annotations[k]
    for seg in segs:
        start, end = seg
        i = int(np.argmin(np.hypot(*(X - start).T)))
        # the line starts at the edge of its token's marker …
        assert np.hypot(*(X[i] - start)) <= layer.marker_radius[i] * r.points_to_pixels(1.0) + 0.5
        # … and ends on that token's label
        b = by_point[i].get_window_extent(r)
        assert b.x0 - 0.5 <= end[0] <= b.x1 + 0.5 and b.y0 - 0.5 <= end[1] <= b.y1 + 0.5
    for k, i in enumerate(layer.labelled):  # a label without a leader sits right next to its token
        if not layer.has_leader[k]:
            b = by_point[i].get_window_extent(r)
            gap = math.hypot(
                max(b.x0 - X[i, 0], 0, X[i, 0] - b.x1), max(b.y0 - X[i, 1], 0, X[i, 1] - b.y1)
            )
            assert gap < 10 * r.points_to_pixels(1.0)


def test_labels_do_not_collide_in_the_four_panel_overview(dense):
    att, a, _, _ = dense
    fig = plots.plot_head_overview(a, 0, 0)
    r = drawn(fig)
    graph = fig.axes[3]
    assert len(token_labels_of(graph)) == att.n_tokens
    assert overlapping_pairs(token_labels_of(graph), r) == []


def test_compare_graph_labels_do_not_collide():
    A = real_like(LONG, seed=1)
    B = real_like(LONG.replace("Quantum", "Classical").replace("transformer", "network"), seed=2)
    c = compare(A, B, scale=0.2)
    fig = plots.plot_compare_graphs(c, layer=0, head=0, highlight="information")
    r = drawn(fig)
    for ax in fig.axes[:2]:
        labels = token_labels_of(ax)
        assert len(labels) >= 40
        assert overlapping_pairs(labels, r) == []


# ------------------------------------------------------- tokens at the same place
def _shared_pair_case():
    a_text = "quantum information theory allows us to study the attention of heads"
    b_text = "classical information theory studies the entropy of attention in heads"
    # "information" and "theory" are tokens 2 and 3 of both texts ([CLS] is 0): identical rows
    A = real_like(a_text, seed=1, sink=1.0, same=((2, 3),))
    B = real_like(b_text, seed=2, sink=1.0, same=((2, 3),))
    return compare(A, B, scale=0.3)


def test_shared_tokens_at_the_same_place_keep_their_shared_edge_visible():
    c = _shared_pair_case()
    assert c.a.distances[0, 0][2, 3] == 0.0 and c.b.distances[0, 0][2, 3] == 0.0
    fig = plots.plot_compare_graph(c, side="a", layer=0, head=0)
    r = drawn(fig)
    ax = fig.axes[0]
    shared_lines = [
        col
        for col in ax.collections
        if isinstance(col, LineCollection) and np.allclose(col.get_linewidths(), 2.2)
    ]
    assert len(shared_lines) == 1
    shared = next(
        col
        for col in ax.collections
        if isinstance(col, PathCollection)
        and col.get_paths()
        and len(col.get_offsets())
        and np.allclose(col.get_sizes(), 46.0)
    )
    P = ax.transData.transform(np.asarray(shared.get_offsets()))
    radius = math.sqrt(46.0) / 2 * r.points_to_pixels(1.0)
    X = {tuple(np.round(p, 6)) for p in np.asarray(shared.get_offsets())}
    assert len(X) == len(shared.get_offsets())  # no two shared tokens on the same spot
    # the edge information–theory: its drawn length beyond the two markers is visible
    segs = [ax.transData.transform(s) for s in shared_lines[0].get_segments()]
    lengths = sorted(float(np.hypot(*(s[1] - s[0]))) for s in segs)
    shortest = lengths[0]
    assert shortest - 2 * radius >= 4.0, (
        shortest,
        radius,
    )  # before: 0 px, both diamonds on one spot
    # the shared edges lie above the plain tokens, under the shared ones
    plain = min(col.get_zorder() for col in ax.collections if isinstance(col, PathCollection))
    assert plain < shared_lines[0].get_zorder() < shared.get_zorder()
    assert any("nudged apart" in t.get_text() for t in ax.texts)
    assert P.shape[0] == 6  # information, theory, the, of, attention, heads


def test_threshold_graph_spreads_tokens_at_distance_zero():
    att = real_like(
        "the cat sat on the mat and then it ran away", seed=4, sink=1.0, same=((2, 3, 4),)
    )
    D = at.analyze(att, layers=[0], heads=[0], n_jobs=1).distance_matrix(0, 0)
    assert D[2, 3] == D[3, 4] == 0.0
    fig = plots.plot_threshold_graph(D, 0.3, labels=att.labels)
    r = drawn(fig)
    ax = fig.axes[0]
    P = ax.transData.transform(np.asarray(ax.collections[-1].get_offsets()))
    gaps = [float(np.hypot(*(P[i] - P[j]))) for i, j in ((2, 3), (3, 4), (2, 4))]
    assert min(gaps) >= math.sqrt(22.0) * r.points_to_pixels(1.0)  # a marker's width apart at least
    assert any("3 crowded tokens nudged apart" in t.get_text() for t in ax.texts)
    # given coordinates are drawn exactly as given
    X = np.arange(2 * att.n_tokens, dtype=float).reshape(-1, 2)
    X[3] = X[2]
    fig = plots.plot_threshold_graph(D, 0.3, coords=X)
    np.testing.assert_array_equal(np.asarray(fig.axes[0].collections[-1].get_offsets()), X)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-20, 20), st.integers(-20, 20)), min_size=2, max_size=30),
    st.floats(0.5, 3.0),
)
def test_separate_points_properties(pts, min_dist):
    """No pair ends closer than 0.98 · min_dist; points with room do not move; each moves at most
    as far as the crowd it sits in could push it (n · min_dist)."""
    X = np.asarray(pts, dtype=float)
    Y, moved = separate_points(X, min_dist)
    d = np.hypot(*(Y[:, None, :] - Y[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(d, np.inf)
    assert d.min() >= 0.98 * min_dist - 1e-9
    d0 = np.hypot(*(X[:, None, :] - X[None, :, :]).transpose(2, 0, 1))
    np.fill_diagonal(d0, np.inf)
    lonely = d0.min(1) >= 0.98 * min_dist * (1 + len(X))  # far from everything: never pushed
    assert not moved[lonely].any()
    np.testing.assert_array_equal(Y[~moved], X[~moved])
    assert np.all(np.hypot(*(Y - X).T) <= len(X) * min_dist + 1e-9)


# ------------------------------------------------------------------------- plurals
def test_counts_take_the_right_number():
    assert S.plural(1, "edge") == "1 edge"
    assert S.plural(0, "edge") == "0 edges"
    assert S.plural(2, "triangle") == "2 triangles"
    assert (
        S.plural(1, "prefix", "prefixes") == "1 prefix"
        and S.plural(3, "prefix", "prefixes") == "3 prefixes"
    )
    D = np.array([[0.0, 0.1, 0.9], [0.1, 0.0, 0.9], [0.9, 0.9, 0.0]])
    title = plots.plot_threshold_graph(D, 0.5).axes[0].get_title()
    assert "1 edge ·" in title and "0 triangles" in title and "1 edges" not in title


_BAD_PLURAL = re.compile(
    r"(?<![\w.])1 (edges|triangles|vines|features|tokens|heads|contexts|prefixes|points|"
    r"steps|bars|texts|layers|leaders)\b"
)


def test_one_shared_edge_reads_singular():
    a_text, b_text = "alpha beta gamma delta", "beta alpha epsilon zeta"
    A = real_like(a_text, seed=5, sink=0.5)
    B = real_like(b_text, seed=6, sink=0.5)
    c = compare(A, B)
    eps = float(max(c.a.distances[0, 0][1, 2], c.b.distances[0, 0][1, 2])) * 1.0001
    title = plots.plot_compare_graph(c, side="a", layer=0, head=0, scale=eps).axes[0].get_title()
    assert _BAD_PLURAL.search(title) is None, title


# ---------------------------------------------------------------- numbers and names
@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(-1e6, 1e6, allow_nan=False),
            st.floats(-1e-3, 1e-3),
            st.integers(-1000, 1000).map(float),
            st.just(float("nan")),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 4),
)
def test_number_format_is_one_format_and_exact_to_its_last_digit(values, digits):
    fmt, unit = S.number_format(values, digits)
    texts = [fmt(v) for v in values]
    finite = [(v, t) for v, t in zip(values, texts) if math.isfinite(v)]
    assert all(t == "–" for v, t in zip(values, texts) if not math.isfinite(v))
    assert all("e" not in t and "E" not in t for _, t in finite)
    decimals = {len(t.split(".")[1]) if "." in t else 0 for _, t in finite}
    assert len(decimals) <= 1  # one format: the same number of decimals everywhere
    e = 0
    if unit:
        m = re.fullmatch(r"×10([⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)", unit)
        assert m
        e = int(m.group(1).translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
    dec = decimals.pop() if decimals else 0
    # exact decimal arithmetic: values down to the subnormal 5e-324 (10.0 ** -324 is 0.0)
    for v, t in finite:
        # within half a unit of the last written digit (plus float round-off of the integers)
        err = abs(Decimal(t).scaleb(e) - Decimal(v))
        assert err <= Decimal(5).scaleb(e - dec - 1) * Decimal("1.000000001") + Decimal(
            1e-12
        ) * abs(Decimal(v))
    big = max((abs(v) for v, _ in finite), default=0.0)
    if big > 0 and not all(v == round(v) for v, _ in finite):
        # the largest value keeps its significant digits
        lead = Decimal(fmt(big)).scaleb(e)
        top = Decimal(big).adjusted()  # floor(log10(big)), exact
        assert abs(lead - Decimal(big)) <= Decimal(5).scaleb(top - digits + 2) * Decimal(
            "1.000000001"
        )


def test_number_format_examples_from_the_issue():
    fmt, unit = S.number_format([0.00048, 2.6e-05, 0.0])
    assert [fmt(v) for v in (0.00048, 2.6e-05, 0.0)] == ["4.8", "0.3", "0.0"] and unit == "×10⁻⁴"
    fmt, unit = S.number_format([0.52, 0.05, 0.0])
    assert [fmt(v) for v in (0.52, 0.05, 0.0)] == ["0.52", "0.05", "0.00"] and unit == ""
    fmt, unit = S.number_format([5e-324, 0.0])  # subnormal: 10.0 ** -324 underflows to 0
    assert [fmt(v) for v in (5e-324, 0.0)] == ["4.9", "0.0"] and unit == "×10⁻³²⁴"
    fmt, unit = S.number_format([3.0, 0.0, 12.0])
    assert [fmt(v) for v in (3.0, 0.0, 12.0)] == ["3", "0", "12"] and unit == ""


def test_column_titles_are_one_mapping():
    assert S.column_title("max_persistence_h1") == "max persistence (H1)"
    assert S.column_title("n_bars_h0") == "bars (H0)"
    assert S.column_title("persistence_entropy_h1") == "persistence entropy (H1)"
    assert S.column_title("shared_edges") == "shared edges"
    assert S.column_title("something_new") == "something new"


def _cell_texts(ax):
    return [t.get_text() for t in ax.texts]


def test_head_statistic_heatmap_writes_one_format_and_a_human_title(dense):
    a = at.analyze(real_like(LONG, L=2, H=4, seed=7, sink=2.0), n_jobs=1)
    stat = "max_persistence_h1"
    v = np.asarray(a.summary()[stat])
    assert (
        (v == 0).any() and (v > 0).any() and not np.all(v == np.round(v))
    )  # mixed, as in the issue
    fig = plots.plot_head_stat(a, stat=stat)
    drawn(fig)
    ax = fig.axes[0]
    cells = _cell_texts(ax)
    assert len(cells) == v.size
    decimals = {len(c.split(".")[1]) if "." in c else 0 for c in cells}
    assert len(decimals) == 1 and not any("e" in c for c in cells), (
        cells
    )  # before: "0", "0.0023", "2.6e-05"
    cb = ax.child_axes[0]
    assert cb.get_ylabel().startswith("max persistence (H1)")
    assert "max persistence (H1)" in ax.get_title()
    every = [ax.get_title(), cb.get_ylabel(), ax.get_xlabel(), ax.get_ylabel()] + cells
    assert not any("_" in t for t in every), every  # no raw column names
    fmt, _ = S.number_format(v)
    ticks = [t for t in cb.get_yticklabels() if t.get_text()]
    assert (
        ticks
        and {len(t.get_text().split(".")[1]) if "." in t.get_text() else 0 for t in ticks}
        == decimals
    )
    for t in ticks:  # each tick sits where its label says (no 0.0125 written 0.013)
        assert float(t.get_text()) == pytest.approx(t.get_position()[1], abs=1e-12)
    # an integer statistic is written as integers, its colour bar ticks at integers
    fig = plots.plot_head_stat(a, stat="n_bars_h0")
    drawn(fig)
    assert all(re.fullmatch(r"\d+", c) for c in _cell_texts(fig.axes[0]))
    assert all(
        float(t.get_text()) == round(float(t.get_text()))
        for t in fig.axes[0].child_axes[0].get_yticklabels()
        if t.get_text()
    )
    assert fig.axes[0].child_axes[0].get_ylabel() == "bars (H0)"


def test_compare_heads_heatmap_writes_one_format(dense):
    A = real_like(LONG, L=2, H=3, seed=1, sink=2.0)
    B = real_like(LONG.replace("Quantum", "Classical"), L=2, H=3, seed=2, sink=2.0)
    c = compare(A, B)
    fig = plots.plot_compare_heads(c, name="bottleneck", dim=0)
    drawn(fig)
    cells = _cell_texts(fig.axes[0])
    assert len(cells) == 6 and len({len(x.split(".")[1]) if "." in x else 0 for x in cells}) == 1


# ------------------------------------------------------------ colour bars and titles
def _phrase_figure():
    ctx = [
        real_like("the theory of mind explains how people think about other people", seed=k, H=2)
        for k in range(3)
    ]
    return plots.plot_phrase_distances(phrase_topology("theory of mind", ctx), layer=0, head=1)


def _long_label_matrix(kind):
    att = real_like("a b c d e f g", seed=3, sink=1.0)
    labels = [f"{lab} — a rather long label" for lab in att.labels]
    if kind == "distance":
        D = at.analyze(att, layers=[0], heads=[0], n_jobs=1).distance_matrix(0, 0)
        return plots.plot_distance_matrix(
            D, labels=labels, title="distances between the tokens of a text"
        )
    return plots.plot_attention(
        att.weights[0, 0], labels=labels, title="attention of one head of a model"
    )


@pytest.mark.parametrize(
    "make",
    [
        _phrase_figure,
        lambda: _long_label_matrix("distance"),
        lambda: _long_label_matrix("attention"),
    ],
    ids=["phrase", "distance", "attention"],
)
def test_colour_bar_is_as_tall_as_its_matrix_and_clear_of_the_title(make):
    fig = make()
    r = drawn(fig)
    ax = fig.axes[0]
    cb = (ax.child_axes + fig.axes[1:])[0]  # the colour bar, however it was made
    a, b = ax.get_window_extent(r), cb.get_window_extent(r)
    # before: the phrase figure's bar was 1.75 times as tall as its 3 × 3 matrix
    assert b.height == pytest.approx(a.height, rel=0.02)
    assert b.y0 == pytest.approx(a.y0, abs=2) and b.x0 > a.x1
    title = ax.title.get_window_extent(r)
    assert title.y0 >= b.y1 - 1  # the title sits above the bar, not under it
    fb = fig.bbox
    for t in [ax.title, cb.yaxis.label] + ax.get_yticklabels():
        e = t.get_window_extent(r)
        if t.get_text():
            assert e.x0 >= fb.x0 - 1 and e.x1 <= fb.x1 + 1 and e.y1 <= fb.y1 + 1, t.get_text()


# ----------------------------------------------------------------- timeline overview
def _causal(words: str, seed: int, sink: float) -> at.Attention:
    return real_like(words, seed=seed, sink=sink, causal=True, special=False, model="causal-like")


def test_timeline_overview_has_a_title_panel_titles_and_explains_an_empty_vineyard():
    tl = at.timeline(_causal("the cat sat on the mat", 3, 6.0), layers=0, heads=0, n_jobs=1)
    assert not tl.vines(dim=1)  # no H1 feature in any prefix
    fig = plots.plot_timeline_overview(tl, dim=1)
    drawn(fig)
    sup = fig.get_suptitle()
    assert "layer 0, head 0" in sup and "causal-like" in sup and "6 prefixes" in sup
    titles = [ax.get_title(loc="left") for ax in fig.axes[:3]]
    assert [t[:3] for t in titles] == ["(a)", "(b)", "(c)"]
    assert "coherence" in titles[0] and "vineyard H1" in titles[1] and "Betti 1" in titles[2]
    assert all(
        ax.get_title() == "" for ax in fig.axes[:3]
    )  # no "…: coherence" over the whole figure
    assert any("no H1 feature" in t.get_text() for t in fig.axes[1].texts)  # before: an empty panel
    assert any("Betti 1 is 0" in t.get_text() for t in fig.axes[2].texts)
    assert "0 features" in titles[1]


def test_vineyard_with_features_has_no_empty_note():
    tl = at.timeline(_causal(LONG, 0, 0.5), layers=0, heads=0, n_jobs=1)
    n = len(tl.vines(dim=1))
    assert n > 0
    fig = plots.plot_vineyard(tl, dim=1, top=None)
    assert not any("no H1" in t.get_text() for t in fig.axes[0].texts)
    assert S.plural(n, "vine") in fig.axes[0].get_title()
    fig = plots.plot_vineyard(tl, dim=1, top=0)
    assert any("no vine drawn" in t.get_text() for t in fig.axes[0].texts)


# -------------------------------------------------------------------- raw tokens
RAW = ["<|im_start|>", "The", "Ġcat", "Ġsat", "Ċ", "Ġon", "Ġthe", "Ġmat", ".", "Ċ"]
_RAW_MARK = re.compile(r"Ġ|Ċ|^##|▁")


def _all_texts(fig, renderer=None):
    out = []
    for ax in fig.axes:
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() + ax.texts]
        out.append(ax.get_title())
    return [t for t in out if t]


def test_raw_tokens_are_shown_as_display_labels():
    assert display_labels(RAW) == [
        "<|im_start|>",
        "The",
        "·cat",
        "·sat",
        "↵",
        "·on",
        "·the",
        "·mat",
        ".",
        "↵#2",
    ]
    assert display_labels(["[CLS]", "quant", "##um", "theory", "[SEP]"]) == [
        "[CLS]",
        "quant",
        "um",
        "theory",
        "[SEP]",
    ]
    assert display_labels(["▁Hello", "▁world"]) == ["·Hello", "·world"]
    mine = ["a", "b", "a", "x_y"]
    assert display_labels(mine) == mine  # labels without tokenizer markers are drawn as given
    n = len(RAW)
    W = np.tril(np.random.default_rng(0).dirichlet(np.full(n, 0.5), size=(1, 1, n)))
    W /= W.sum(-1, keepdims=True)
    att = at.Attention.from_weights(W, RAW, model="causal-like")
    D = at.analyze(att, n_jobs=1).distance_matrix(0, 0)
    figs = [
        plots.plot_distance_matrix(D, labels=att.tokens),
        plots.plot_attention(att.weights[0, 0], labels=att.tokens),
        plots.plot_threshold_graph(D, 0.5, labels=att.tokens),
    ]
    for fig in figs:
        texts = _all_texts(fig)
        assert not [t for t in texts if _RAW_MARK.search(t)], texts
        assert any("↵" in t for t in texts) and any("·cat" in t for t in texts)
    # the tokens a Timeline and a hardmax simulation draw
    tl = at.timeline(att, layers=0, heads=0, n_jobs=1)
    texts = _all_texts(plots.plot_coherence(tl)) + _all_texts(plots.plot_timeline_diagrams(tl))
    assert not [t for t in texts if _RAW_MARK.search(t)], texts
    from attntopo.hardmax import simulate

    sim = simulate(
        np.random.default_rng(1).normal(size=(n, 2)), A=None, alpha=1.0, steps=3, tokens=RAW
    )
    texts = _all_texts(plots.plot_trajectories(sim, annotate=True))
    assert not [t for t in texts if _RAW_MARK.search(t)] and "·cat" in texts


# ---------------------------------------------------------------- layer colour key
def _space(L: int, H: int):
    rng = np.random.default_rng(L)

    def att(k):
        n = 8 + k
        return at.Attention.from_weights(
            rng.dirichlet(np.full(n, 0.3), size=(L, H, n)),
            [f"t{i}" for i in range(n)],
            model=f"{L}x{H}",
            text=str(k),
        )

    return head_space([att(k) for k in range(2)])


def test_head_distances_of_30_layers_have_a_layer_colour_bar():
    hs = _space(30, 9)  # SmolLM2's shape
    fig = plots.plot_head_distances(hs)
    r = drawn(fig)
    ax = fig.axes[0]
    bars = [a for a in ax.child_axes if a.get_ylabel().startswith("layer")]
    assert len(bars) == 1  # before: 30 band colours and no key at all (the legend stopped at 12)
    lb = bars[0]
    mesh = next((col for col in lb.collections if type(col).__name__ == "QuadMesh"), None)
    assert mesh is not None and mesh.cmap.N == 30
    ticks = [int(t.get_text()) for t in lb.get_yticklabels() if t.get_text()]
    assert ticks[0] == 0 and len(ticks) <= 10 and set(ticks) <= set(range(30))
    # the layer colours of the bands are the colour bar's colours
    band_colors = {tuple(np.round(p.get_facecolor(), 6)) for p in ax.patches}
    bar_colors = {tuple(np.round(mesh.cmap(k), 6)) for k in range(30)}
    assert band_colors == bar_colors
    dist = [a for a in ax.child_axes if a is not lb][0]
    a, d, lbox = ax.get_window_extent(r), dist.get_window_extent(r), lb.get_window_extent(r)
    assert (
        d.height == pytest.approx(a.height, rel=0.02) and lbox.x0 > d.x1
    )  # side by side, not overlapping
    # 6 layers (MiniLM) keep their legend
    fig6 = plots.plot_head_distances(_space(6, 12))
    leg = fig6.axes[0].get_legend()
    assert leg is not None and len(leg.get_texts()) == 6


# ---------------------------------------------- every figure: formats and global style
def _every_figure():
    from attntopo.compress import Compression
    from attntopo.hardmax import simulate

    att = real_like(
        "Quantum information theory allows us to study attention using entanglement.",
        L=2,
        H=2,
        seed=2,
        sink=2.0,
    )
    a = at.analyze(att, n_jobs=1)
    D, dgm = a.distance_matrix(0, 1), a.diagram(0, 1)
    c = compare(
        att,
        real_like(
            "Classical information theory studies attention with entropy.",
            L=2,
            H=2,
            seed=3,
            sink=2.0,
        ),
    )
    p = phrase_topology("information theory", [att, c.b.attention])
    tl = at.timeline(
        _causal("the cat sat on the mat and then it ran far away", 0, 0.5),
        layers=0,
        heads=0,
        n_jobs=1,
    )
    hs = _space(3, 4)
    hs2 = _space(2, 5)
    mc = at.compare_models(None, model_a=hs, model_b=hs2, n_boot=5, seed=0, n_jobs=1)
    sim = simulate(
        np.random.default_rng(0).normal(size=(12, 2)),
        A=None,
        alpha=1.0,
        steps=6,
        tokens=[f"w{i}" for i in range(12)],
    )
    comp = Compression(
        model="fake",
        text="t",
        tokens=["a"] * 8,
        causal=False,
        method="h0",
        representative="medoid",
        scale=0.2,
        heads=np.array([[0, 0], [1, 1]]),
        n_tokens=8,
        clusters=np.array([3, 5]),
        scales=np.array([0.2, 0.2]),
        effect={"cosine": 0.98},
    )
    figs = {
        "diagram": lambda: plots.plot_diagram(dgm),
        "barcode": lambda: plots.plot_barcode(dgm),
        "distance_matrix": lambda: plots.plot_distance_matrix(D, labels=att.labels),
        "attention": lambda: plots.plot_attention(att.weights[0, 1], labels=att.labels),
        "head_grid": lambda: plots.plot_head_grid(a),
        "head_stat": lambda: plots.plot_head_stat(a),
        "threshold_graph": lambda: plots.plot_threshold_graph(
            D, plots.suggest_scale(dgm, D), labels=att.labels
        ),
        "head_overview": lambda: plots.plot_head_overview(a, 0, 1),
        "compare_graphs": lambda: plots.plot_compare_graphs(
            c, layer=0, head=0, highlight="information"
        ),
        "compare_diagrams": lambda: plots.plot_compare_diagrams(c, layer=0, head=0),
        "compare_heads": lambda: plots.plot_compare_heads(c),
        "phrase_distances": lambda: plots.plot_phrase_distances(p, layer=0, head=0),
        "timeline_diagrams": lambda: plots.plot_timeline_diagrams(tl, max_panels=6),
        "coherence": lambda: plots.plot_coherence(tl),
        "betti": lambda: plots.plot_betti_heatmap(tl),
        "vineyard": lambda: plots.plot_vineyard(tl),
        "timeline_overview": lambda: plots.plot_timeline_overview(tl),
        "head_distances": lambda: plots.plot_head_distances(hs),
        "head_mds": lambda: plots.plot_head_mds(hs),
        "head_barcode": lambda: plots.plot_head_barcode(hs),
        "trajectories": lambda: plots.plot_trajectories(sim),
        "cluster_counts": lambda: plots.plot_cluster_counts(sim),
        "h0_by_step": lambda: plots.plot_h0_by_step(sim),
        "hardmax_overview": lambda: plots.plot_hardmax_overview(sim),
        "compression_heads": lambda: plots.plot_compression_heads(comp),
    }
    figs["model_diagrams"] = lambda: plots.plot_model_diagrams(mc)
    return figs


@pytest.fixture(scope="module")
def every_figure():
    return _every_figure()


def test_every_figure_exports_to_png_svg_pdf_keeps_rcparams_and_writes_counts_right(every_figure):
    before = dict(matplotlib.rcParams)
    assert len(every_figure) >= 25
    for name, make in every_figure.items():
        fig = make()
        assert dict(matplotlib.rcParams) == before, f"{name} changed matplotlib.rcParams"
        png, svg, pdf = (figure_to_bytes(fig, f) for f in ("png", "svg", "pdf"))
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000, name
        assert b"<svg" in svg[:2000], name
        assert pdf.startswith(b"%PDF"), name
        assert dict(matplotlib.rcParams) == before, (
            f"{name} changed matplotlib.rcParams while saving"
        )
        texts = _all_texts(fig) + [fig.get_suptitle()]
        bad = [t for t in texts if _BAD_PLURAL.search(t)]
        assert not bad, (name, bad)
        raw = [t for t in texts if re.search(r"\b[a-z]+_[a-z]+_h\d\b", t)]
        assert not raw, (name, raw)  # no raw column names such as max_persistence_h1
        assert not _clipped(fig), name


def _clipped(fig) -> list[str]:
    """Titles, axis labels, legends and texts that run off the figure's edge."""
    r = drawn(fig)
    fb = fig.bbox
    out = []
    candidates = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes + [c for a in fig.axes for c in a.child_axes]:
        candidates += [
            ax.title,
            ax._left_title,
            ax._right_title,
            ax.xaxis.label,
            ax.yaxis.label,
            *ax.texts,
        ]
        if ax.get_legend() is not None:
            candidates += ax.get_legend().get_texts()
    for leg in fig.legends:
        candidates += leg.get_texts()
    for t in candidates:
        if t.get_visible() and t.get_text().strip():
            e = t.get_window_extent(r)
            if e.x0 < fb.x0 - 1 or e.x1 > fb.x1 + 1 or e.y0 < fb.y0 - 1 or e.y1 > fb.y1 + 1:
                out.append(t.get_text())
    return out
