"""The zigzag set (HalluZig): the union zigzag of per-layer attention graphs, its barcode from
dionysus 2, and persistence images; against a filtration checked by hand, dionysus's own run
of that filtration, gudhi's standard persistence where the zigzag only grows, and networkx's
homology of a single graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _feature_refs import synthetic_attention

pytest.importorskip("dionysus")

from attntopo.features import (  # noqa: E402
    FeatureSettings,
    FeatureTable,
    layer_graph,
    parse_column,
    zigzag_diagrams,
    zigzag_features,
)
from attntopo.features._compute import chunk_rows, set_columns  # noqa: E402
from attntopo.features._zigzag import ZIGZAG_PIXEL, zigzag_names, zigzag_times  # noqa: E402

# three layers on the tokens 0, 1, 2: the edge 01, then the triangle, then the edge 12
HAND = [np.array([[0, 1]]), np.array([[0, 1], [1, 2], [0, 2]]), np.array([[1, 2]])]
# steps: K0 = {01}, K1 = K2 = K3 = triangle, K4 = {12}
# H0: vertex 2 alone until step 1: [0, 1); one component throughout: [0, 5) (alive at the end:
#     2L − 1 = 5); removing 01 and 02 at step 4 splits off vertex 0: [4, 5)
# H1: the triangle's cycle from step 1 until its edges 01 and 02 leave at step 4: [1, 4)
HAND_H0 = [[0, 1], [0, 5], [4, 5]]
HAND_H1 = [[1, 4]]


def test_zigzag_times_of_the_hand_built_layers():
    edges, times = zigzag_times(HAND, 3)
    assert edges.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert times == [[0.0, 4.0], [1.0, 4.0], [1.0]]


def test_zigzag_barcode_of_the_hand_built_layers():
    h0, h1 = zigzag_diagrams(HAND, 3)
    assert h0.tolist() == HAND_H0
    assert h1.tolist() == HAND_H1


def test_zigzag_barcode_is_dionysus_own_result_on_the_hand_written_filtration():
    import dionysus as d

    f = d.Filtration([[0], [1], [2], [0, 1], [0, 2], [1, 2]])
    times = [[0], [0], [0], [0, 4], [1, 4], [1]]
    _, dgms, _ = d.zigzag_homology_persistence(f, times)
    theirs = [sorted((p.birth, min(p.death, 5.0)) for p in dgm) for dgm in dgms[:2]]
    ours = [sorted(map(tuple, dg.tolist())) for dg in zigzag_diagrams(HAND, 3)]
    assert ours == theirs


def _random_graphs(draw, n: int, L: int) -> list[np.ndarray]:
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    out = []
    for _ in range(L):
        pick = (
            draw(st.lists(st.sampled_from(pairs), max_size=len(pairs), unique=True))
            if pairs
            else []
        )
        out.append(np.array(sorted(pick), dtype=np.int64).reshape(-1, 2))
    return out


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 7), st.data())
def test_one_layer_is_the_homology_of_its_graph(n, data):
    """A single graph: every bar is [0, 1); H0 counts its components, H1 its cycle rank."""
    (g,) = _random_graphs(data.draw, n, 1)
    h0, h1 = zigzag_diagrams([g], n)
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from(map(tuple, g.tolist()))
    c = nx.number_connected_components(G)
    assert h0.tolist() == [[0.0, 1.0]] * c
    assert h1.tolist() == [[0.0, 1.0]] * (G.number_of_edges() - n + c)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.data())
def test_growing_graphs_give_gudhis_standard_persistence(n, L, data):
    """When every graph holds the one before, the zigzag is a filtration: an edge first there in
    layer l ≥ 1 enters at step 2l − 1 (the union before it); nothing ever leaves.  Its barcode
    is gudhi's persistence of that filtration, infinite bars ending at 2L − 1."""
    gudhi = pytest.importorskip("gudhi")
    steps = _random_graphs(data.draw, n, L)
    graphs, acc = [], set()
    for g in steps:
        acc |= set(map(tuple, g.tolist()))
        graphs.append(np.array(sorted(acc), dtype=np.int64).reshape(-1, 2))
    st_ = gudhi.SimplexTree()
    for v in range(n):
        st_.insert([v], 0.0)
    for layer, g in enumerate(graphs):
        for e in map(tuple, g.tolist()):
            if not st_.find(list(e)):
                st_.insert(list(e), float(max(0, 2 * layer - 1)))
    st_.persistence(homology_coeff_field=2, persistence_dim_max=True)
    end = 2 * L - 1
    for dim, ours in enumerate(zigzag_diagrams(graphs, n)):
        want = sorted(
            (b, end if np.isinf(d) else d)
            for b, d in st_.persistence_intervals_in_dimension(dim)
            if d > b
        )
        assert sorted(map(tuple, ours.tolist())) == want


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(2, 4), st.data())
def test_bars_alive_at_each_step_count_that_complexs_components_and_cycles(n, L, data):
    """Any layers, edges coming and going: the bars [b, d) with b <= s < d at step s are the
    homology of K_s (networkx: components; edges − vertices + components independent
    cycles), for every complex K_0 … K_{2L−2} of the union zigzag."""
    graphs = _random_graphs(data.draw, n, L)
    h0, h1 = zigzag_diagrams(graphs, n)
    edges = [set(map(tuple, g.tolist())) for g in graphs]
    for s in range(2 * L - 1):
        E = edges[s // 2] | (edges[s // 2 + 1] if s % 2 else set())
        G = nx.Graph()
        G.add_nodes_from(range(n))
        G.add_edges_from(E)
        c = nx.number_connected_components(G)
        alive = [int(np.sum((h[:, 0] <= s) & (s < h[:, 1]))) for h in (h0, h1)]
        assert alive == [c, len(E) - n + c], s


def test_layer_graph_keeps_the_heaviest_pairs_of_the_head_mean():
    # two heads of 4 tokens; mean: pairs (1,0)=0.5, (2,1)=0.35, (3,0)=0.3, (3,2)=0.2, ...
    A = np.zeros((2, 4, 4))
    A[0] = [[1, 0, 0, 0], [0.6, 0.4, 0, 0], [0.1, 0.3, 0.6, 0], [0.3, 0.1, 0.2, 0.4]]
    A[1] = [[1, 0, 0, 0], [0.4, 0.6, 0, 0], [0.1, 0.4, 0.5, 0], [0.3, 0.1, 0.2, 0.4]]
    # symmetrized mean weights: 01: .5, 02: .1, 03: .3, 12: .35, 13: .1, 23: .2
    assert layer_graph(A, edges_per_token=0.5).tolist() == [[0, 1], [1, 2]]  # k = 2
    assert layer_graph(A, edges_per_token=1).tolist() == [[0, 1], [0, 3], [1, 2], [2, 3]]
    # ties at the cut are all kept: k = 5 reaches 0.1 (02 and 13)
    assert len(layer_graph(A, edges_per_token=1.25)) == 6
    # never a pair of weight 0
    assert layer_graph(np.eye(3), edges_per_token=2).tolist() == []
    # keep: tokens 1, 2, 3 renormalized per head, numbered 0, 1, 2
    sub = layer_graph(A, keep=np.array([1, 2, 3]), edges_per_token=1 / 3)
    assert sub.tolist() == [[0, 1]]


def test_zigzag_features_rescale_the_bars_and_image_them():
    v = zigzag_features(HAND, 3)
    names = zigzag_names()
    assert v.shape == (len(names),)
    got = dict(zip(names, v))
    assert got["h0.n_bars"] == 3 and got["h1.n_bars"] == 1
    assert got["h0.total_persistence"] == pytest.approx((1 + 5 + 1) / 5)
    assert got["h1.total_persistence"] == pytest.approx(3 / 5)
    k = int(round(1 / ZIGZAG_PIXEL))
    img1 = np.array([got[f"h1.image_{i}_{j}"] for i in range(k) for j in range(k)]).reshape(k, k)
    # H1's one bar: birth 0.2, persistence 0.6 -> its mass sits in that pixel
    assert np.unravel_index(img1.argmax(), img1.shape) == (
        int(0.2 / ZIGZAG_PIXEL),
        int(0.6 / ZIGZAG_PIXEL),
    )
    assert np.all(v >= -1e-15)  # persim's differences of Gaussian CDFs: round-off below 0


def test_zigzag_columns_belong_to_no_head():
    st_ = FeatureSettings(sets=("template", "zigzag")).st()
    cols = set_columns([0, 1], [0], st_)
    assert cols[-len(zigzag_names()) :][0] == "L*H*.zigzag.h0.n_bars"
    assert parse_column("L*H*.zigzag.h1.image_0_3") == (None, None, "zigzag", "h1.image_0_3")
    with pytest.raises(Exception, match="not a feature column"):
        parse_column("L*H3.zigzag.h0.n_bars")
    table = FeatureTable(np.zeros((1, len(cols))), cols, np.arange(1), ["t"])
    assert table.heads() == [(0, 0), (1, 0)]
    assert table.select(sets="zigzag").shape == (1, len(zigzag_names()))
    assert table.select(heads=[(0, 0)]).columns == tuple(c for c in cols if c.startswith("L0H0."))


def _random_attention(seed: int, n: int, L: int, H: int):
    W = np.random.default_rng(seed).gamma(0.5, size=(L, H, n, n))
    return synthetic_attention(W / W.sum(-1, keepdims=True))


def test_zigzag_through_the_feature_pipeline_equals_the_functions():
    n, L = 9, 3
    att = _random_attention(0, n, L, 2)
    row = chunk_rows([att], [None], FeatureSettings(sets=("zigzag",)).st(), False, None, 1)[0]
    graphs = [layer_graph(att.weights[layer]) for layer in range(L)]
    np.testing.assert_array_equal(row, zigzag_features(graphs, n))


def test_zigzag_runs_through_the_layers_in_model_order_whatever_order_they_come():
    """Layers given (or handed over) in another order: the zigzag still goes 0, 1, 2."""
    from dataclasses import replace

    n = 8
    att = _random_attention(1, n, 3, 2)
    shuffled = replace(att, weights=att.weights[::-1].copy(), layers=(2, 1, 0))
    st_ = FeatureSettings(sets=("zigzag",)).st()
    a = chunk_rows([att], [None], st_, False, None, 1)[0]
    b = chunk_rows([shuffled], [None], st_, False, None, 1)[0]
    np.testing.assert_array_equal(a, b)
    backwards = [layer_graph(att.weights[layer]) for layer in (2, 1, 0)]
    assert not np.array_equal(a, zigzag_features(backwards, n))  # the order matters


def test_zigzag_with_drop_special_reads_the_real_tokens():
    """drop_special: each head's rows renormalized over the real tokens, which are the
    vertices (the special ones are not in the graphs at all)."""
    from dataclasses import replace

    n = 9
    att = _random_attention(2, n, 2, 3)
    special = np.zeros(n, dtype=bool)
    special[[0, n - 1]] = True
    att = replace(att, special=special)
    row = chunk_rows([att], [None], FeatureSettings(sets=("zigzag",)).st(), True, None, 1)[0]
    keep = np.flatnonzero(~special)
    graphs = [layer_graph(att.weights[layer], keep=keep) for layer in range(2)]
    assert max(int(g.max()) for g in graphs) < n - 2
    np.testing.assert_array_equal(row, zigzag_features(graphs, n - 2))
