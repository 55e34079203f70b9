"""The graph set against networkx, graph by graph, as la-tda computes it."""

from __future__ import annotations

from itertools import islice

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from _feature_refs import attention_matrices, graph_reference, random_attention
from attntopo.features import DEFAULT_THRESHOLDS, GRAPH_QUANTITIES, graph_features
from attntopo.features._graph import _chordal, graph_names

Q = len(GRAPH_QUANTITIES)


@settings(max_examples=150, deadline=None)
@given(
    attention_matrices(max_n=9),
    st.lists(
        st.sampled_from([0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0]), min_size=1, max_size=3, unique=True
    ),
)
def test_graph_features_equal_networkx(A, thresholds):
    got = graph_features(A, thresholds=thresholds)
    for b in range(A.shape[0]):
        np.testing.assert_array_equal(got[b], graph_reference(A[b], thresholds))


@pytest.mark.parametrize("n", [12, 24])
def test_graph_features_equal_networkx_on_softmax_rows(n):
    # larger, denser graphs: the cycle count must go through its bounds and networkx alike
    rng = np.random.default_rng(n)
    A = random_attention(rng, 4, n, sharpness=2.0)
    got = graph_features(A)
    for b in range(4):
        np.testing.assert_array_equal(got[b], graph_reference(A[b], DEFAULT_THRESHOLDS))


@settings(max_examples=100, deadline=None)
@given(attention_matrices(max_n=10))
def test_betti_invariants(A):
    F = graph_features(A).reshape(A.shape[0], -1, Q)
    col = {q: F[..., k] for k, q in enumerate(GRAPH_QUANTITIES)}
    n = A.shape[-1]
    assert np.all(col["b1"] >= 0)
    assert np.all((col["b0"] >= 1) & (col["b0"] <= n))
    # weak components never outnumber strong ones; edges/degree agree
    assert np.all(col["b0"] <= col["scc"])
    np.testing.assert_allclose(col["degree"], 2 * col["edges"] / n)
    assert np.all(col["matching"] <= n // 2)
    # thresholds rise: the graphs shrink
    assert np.all(np.diff(col["edges"], axis=1) <= 0)
    assert np.all(np.diff(col["b0"], axis=1) >= 0)


def test_matching_is_latda_count_on_the_minimal_example():
    # edges 0 -> 2, 1 -> 0, 2 -> 3 and the loop 3 -> 3 at 0.5: la-tda's graph lists 0's
    # neighbours as [2, 1], so maximal_matching takes {0, 2} and nothing else fits; taking
    # {0, 1} first (row-major order) would leave {2, 3}: 2, the matching number
    A = np.array(
        [[0.3, 0.1, 0.6, 0.0], [0.6, 0.4, 0.0, 0.0], [0.2, 0.0, 0.2, 0.6], [0.0, 0.0, 0.3, 0.7]]
    )
    u = nx.Graph(
        nx.from_numpy_array(
            (A >= 0.5).astype(np.int8), create_using=nx.MultiDiGraph()
        ).to_undirected()
    )
    assert len(nx.maximal_matching(u)) == 1
    assert len(nx.max_weight_matching(u, maxcardinality=True)) == 2
    got = graph_features(A[None], thresholds=(0.5,))[0]
    assert got[GRAPH_QUANTITIES.index("matching")] == 1


@settings(max_examples=300, deadline=None)
@given(
    st.integers(2, 12).flatmap(
        lambda n: arrays(
            np.float64, (n, n), elements=st.floats(0, 1, allow_nan=False, allow_subnormal=False)
        )
    ),
    st.sampled_from([0.025, 0.05, 0.1, 0.25, 0.5, 0.75]),
)
def test_matching_equals_latda_on_random_attention(W, tau):
    # random row-stochastic matrices (rows of zeros become uniform): the matching alone,
    # against networkx's maximal_matching of la-tda's MultiDiGraph -> to_undirected() -> Graph
    W = W.copy()
    W[W.sum(-1) == 0] = 1.0
    A = W / W.sum(-1, keepdims=True)
    g = nx.from_numpy_array((A >= tau).astype(np.int8), create_using=nx.MultiDiGraph())
    want = len(nx.maximal_matching(nx.Graph(g.to_undirected())))
    assert graph_features(A[None], thresholds=(tau,))[0][GRAPH_QUANTITIES.index("matching")] == want


def test_cycle_count_is_capped():
    A = np.full((1, 8, 8), 1 / 8)  # complete digraph with loops: far more than 50 cycles
    F = graph_features(A, thresholds=(0.1,))[0]
    assert F[GRAPH_QUANTITIES.index("cycles")] == 50
    assert (
        graph_features(A, thresholds=(0.1,), cycle_cap=7)[0][GRAPH_QUANTITIES.index("cycles")] == 7
    )


def test_chordality_on_known_graphs():
    def adj(n, edges):
        U = np.zeros((1, n, n), dtype=bool)
        for i, j in edges:
            U[0, i, j] = U[0, j, i] = True
        return U

    square = [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert _chordal(adj(4, square))[0] == 0
    assert _chordal(adj(4, square + [(0, 2)]))[0] == 1
    assert _chordal(adj(5, [(0, 1), (1, 2), (2, 3), (3, 4)]))[0] == 1  # a path
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        U = np.triu(rng.random((n, n)) < rng.uniform(0.2, 0.8), 1)
        U = U | U.T
        g = nx.from_numpy_array(U.astype(int))
        assert _chordal(U[None])[0] == int(nx.is_chordal(g))


def test_names_follow_thresholds_and_quantities():
    names = graph_names((0.1, 0.25))
    assert names[0] == "t0.1.scc" and names[-1] == "t0.25.matching" and len(names) == 2 * Q


def test_cycles_of_a_causal_matrix_are_its_loops():
    rng = np.random.default_rng(3)
    A = np.tril(rng.random((2, 7, 7)))
    A /= A.sum(-1, keepdims=True)
    F = graph_features(A).reshape(2, -1, Q)
    loops = np.stack(
        [(np.diagonal(A, axis1=1, axis2=2) >= t).sum(-1) for t in DEFAULT_THRESHOLDS], -1
    )
    np.testing.assert_array_equal(F[..., GRAPH_QUANTITIES.index("cycles")], loops)
    g = nx.DiGraph(nx.from_numpy_array((A[0] >= 0.05).astype(int), create_using=nx.DiGraph))
    assert sum(1 for _ in islice(nx.simple_cycles(g), 100)) == loops[0, 1]


def test_graph_set_of_the_full_matrix_is_latdas_pipeline():
    # la-tda keeps [CLS] and [SEP] (it cuts the padded matrix to the text's tokens, special ones
    # included) and divides each row of the cut float32 matrix by its sum before thresholding:
    # features(drop_special=False) gives its numbers (the rows already sum to 1, so the division
    # moves no weight across a threshold here)
    from _synthetic import text_attention
    from attntopo.features import features

    att = text_attention("Tokens, commas, and a few more words here!", L=2, H=3, seed=4)
    table = features([att], sets=("graph",), drop_special=False).to_pandas()
    L, H, n, _ = att.weights.shape
    for layer in range(L):
        for head in range(H):
            W = att.weights[layer, head].copy()  # float32, as la-tda loads it
            W /= W.sum(axis=1, keepdims=True)
            cols = [c for c in table.columns if c.startswith(f"L{layer}H{head}.graph.")]
            np.testing.assert_array_equal(
                table.loc[0, cols].to_numpy(),
                graph_reference(W.astype(np.float64), DEFAULT_THRESHOLDS),
            )
