"""The capped simple-cycle count of the graph set against networkx.simple_cycles."""

from __future__ import annotations

from itertools import islice

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.features import GRAPH_QUANTITIES
from attntopo.features._graph import (
    _components,
    _count_cycles,
    _edges,
    graph_features,
    simple_cycles_capped,
)

CYCLES = GRAPH_QUANTITIES.index("cycles")


def _networkx_count(M: np.ndarray, cap: int) -> int:
    g = nx.DiGraph()
    g.add_nodes_from(range(M.shape[0]))
    g.add_edges_from(zip(*np.nonzero(M)))  # self-loops included: nx counts them as cycles
    return sum(1 for _ in islice(nx.simple_cycles(g), cap))


def _masks(M: np.ndarray) -> list[int]:
    return [sum(1 << int(j) for j in np.flatnonzero(row)) for row in M]


@st.composite
def digraphs(draw, max_n=9):
    n = draw(st.integers(1, max_n))
    seed = draw(st.integers(0, 2**31 - 1))
    density = draw(st.sampled_from([0.05, 0.15, 0.3, 0.5, 0.8]))
    loops = draw(st.sampled_from([0.0, 0.3, 1.0]))
    rng = np.random.default_rng(seed)
    M = rng.random((n, n)) < density
    M[np.arange(n), np.arange(n)] = rng.random(n) < loops
    return M


@settings(max_examples=300, deadline=None)
@given(digraphs(), st.sampled_from([1, 2, 3, 7, 20, 50, 1000]))
def test_simple_cycles_capped_equals_networkx(M, cap):
    assert simple_cycles_capped(_masks(M), cap) == _networkx_count(M, cap)


@settings(max_examples=150, deadline=None)
@given(st.lists(digraphs(max_n=10), min_size=1, max_size=6), st.sampled_from([1, 3, 12, 50]))
def test_count_cycles_equals_networkx(graphs, cap):
    # the whole path: loops, rings and the rank bound, then enumeration
    n = max(M.shape[0] for M in graphs)
    stack = np.zeros((len(graphs), n, n), dtype=bool)
    for k, M in enumerate(graphs):
        stack[k, : M.shape[0], : M.shape[0]] = M
    E = _edges(stack)
    _, labels, n_labels = _components(E, len(graphs), n, "strong")
    got = _count_cycles(stack, E, labels, n_labels, cap)
    assert got.tolist() == [float(_networkx_count(M, cap)) for M in stack]


def test_count_of_large_sparse_components():
    # two disjoint rings joined by chords on 40 vertices: few cycles, long ones (no bound settles)
    rng = np.random.default_rng(3)
    n = 40
    M = np.zeros((n, n), dtype=bool)
    M[np.arange(n), (np.arange(n) + 1) % n] = True
    for a, b in rng.integers(0, n, size=(4, 2)):
        M[a, b] = True
    for cap in (5, 50, 10**6):
        assert simple_cycles_capped(_masks(M), cap) == _networkx_count(M, cap)


def test_cycle_counts_of_thresholded_attention():
    # the graph set's column on softmax rows equals networkx, caps 1..60
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(6, 16, 16)) * 2.5
    A = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    for cap in (1, 4, 17, 50, 60):
        got = graph_features(A, thresholds=(0.05, 0.1, 0.2), cycle_cap=cap).reshape(6, 3, -1)[
            ..., CYCLES
        ]
        for b in range(6):
            for t, tau in enumerate((0.05, 0.1, 0.2)):
                assert got[b, t] == _networkx_count(A[b] >= tau, cap)
