"""attntopo.compress grouping: persistence clusters against
scipy's single linkage, baselines, representatives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.compress import baseline_labels, gap_scale, persistence_labels, replace_rows
from attntopo.distances import row_distances
from attntopo.errors import InvalidInputError


def rows(rng, n, causal=False, groups=None):
    """Attention-like rows; with ``groups``, rows of one group are near one another."""
    if groups is None:
        P = rng.dirichlet(np.full(n, 0.3), size=n)
    else:
        centres = rng.dirichlet(np.full(n, 0.3), size=groups)
        P = centres[np.arange(n) % groups] + 0.01 * rng.dirichlet(np.ones(n), size=n)
    if causal:
        P = np.tril(P)
    return P / P.sum(1, keepdims=True)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 25), eps=st.floats(0.0, 1.0))
def test_persistence_clusters_are_single_linkage(seed, n, eps):
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    D = row_distances(rows(np.random.default_rng(seed), n))
    labels, used = persistence_labels(D, eps)
    assert used == eps
    ref = fcluster(linkage(squareform(D, checks=False), "single"), t=eps, criterion="distance")
    # the same partition (cluster ids may differ)
    same = labels[:, None] == labels[None, :]
    assert np.array_equal(same, ref[:, None] == ref[None, :])


def test_gap_scale_separates_groups():
    rng = np.random.default_rng(1)
    P = rows(rng, 18, groups=3)
    D = row_distances(P)
    eps = gap_scale(D)
    labels, used = persistence_labels(D, "gap")
    assert used == eps and labels.max() + 1 == 3
    assert np.array_equal(labels, np.arange(18) % 3)
    assert gap_scale(np.zeros((1, 1))) == 0.0
    assert gap_scale(np.array([[0.0, 0.4], [0.4, 0.0]])) == 0.0  # one death: no gap between deaths


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 30))
def test_gap_scale_is_the_largest_gap_between_spanning_tree_deaths(seed, n):
    """Against networkx's minimum spanning tree (its edge lengths are the finite H0 deaths): the
    middle of the widest gap between consecutive deaths, never below the first one, so the gap
    scale merges at least one pair and leaves between 2 and n - 1 clusters."""
    import networkx as nx

    D = row_distances(rows(np.random.default_rng(seed), n))
    G = nx.Graph()
    G.add_weighted_edges_from((i, j, D[i, j]) for i in range(n) for j in range(i + 1, n))
    heights = np.sort([d["weight"] for _, _, d in nx.minimum_spanning_edges(G, data=True)])
    i = int(np.argmax(np.diff(heights)))
    eps = gap_scale(D)
    assert eps == pytest.approx(0.5 * (heights[i] + heights[i + 1]), abs=1e-12)
    labels, _ = persistence_labels(D, "gap")
    k = labels.max() + 1
    if np.ptp(heights) > 0:
        assert 2 <= k <= n - 1
        assert k == n - (i + 1)  # every death at or below eps has merged two clusters


def test_gap_scale_merges_on_real_like_heads_where_the_old_rule_merged_nothing():
    """A head whose first death is far from 0 (all rows distinct) but has structure above it:
    counting 0 -> d_1 as a gap chose ε < d_1 and compressed nothing."""
    D = np.array(
        [
            [0.0, 0.50, 0.55, 0.90],
            [0.50, 0.0, 0.52, 0.91],
            [0.55, 0.52, 0.0, 0.92],
            [0.90, 0.91, 0.92, 0.0],
        ]
    )
    # deaths 0.50, 0.52, 0.90: widest gap 0.52 -> 0.90
    assert gap_scale(D) == pytest.approx(0.71)
    labels, _ = persistence_labels(D, "gap")
    assert labels.tolist() == [0, 0, 0, 1]


@pytest.mark.parametrize("method", ["random", "tome", "kmeans"])
@pytest.mark.parametrize("k", [1, 3, 7, 12])
def test_baselines_give_k_groups(method, k):
    rng = np.random.default_rng(k)
    P = rows(rng, 12)
    K = rng.normal(size=(12, 8))
    labels = baseline_labels(method, k, P=P, K=K, rng=rng, seed=0)
    assert labels.shape == (12,) and labels[0] == 0
    assert labels.max() + 1 == k if method != "kmeans" else labels.max() + 1 <= k


def test_tome_merges_the_most_similar_keys_first():
    K = np.array([[1.0, 0], [0, 1.0], [1.0, 0.01], [0.7, 0.7], [-1.0, 0], [0.01, 1.0]])
    labels = baseline_labels("tome", 4, P=np.eye(6), K=K, rng=np.random.default_rng(0), seed=0)
    # A = {0, 2, 4}, B = {1, 3, 5}: 0 and 2 go to 3 (their best B), the two best matches merge
    assert labels[0] == labels[3] == labels[2]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("rep", ["barycenter", "medoid"])
def test_replaced_rows(causal, rep):
    rng = np.random.default_rng(5)
    P = rows(rng, 10, causal=causal)
    D = row_distances(P)
    labels = np.array([0, 1, 0, 2, 1, 0, 3, 3, 2, 0])
    Q = replace_rows(P, labels, D, rep, causal)
    np.testing.assert_allclose(Q.sum(1), 1.0, atol=1e-12)
    assert (Q >= 0).all()
    if causal:
        assert np.all(np.triu(Q, 1) == 0)
    else:
        for c in range(4):
            idx = np.flatnonzero(labels == c)
            assert np.all(Q[idx] == Q[idx[0]])  # one distinct row per group
            if rep == "barycenter":
                np.testing.assert_allclose(Q[idx[0]], P[idx].mean(0), atol=1e-15)
            else:
                assert any(np.array_equal(Q[idx[0]], P[i]) for i in idx)
        assert len({tuple(r) for r in Q}) == 4


def test_bad_method_or_representative():
    P = np.eye(3)
    with pytest.raises(
        InvalidInputError,
        match="unknown baseline method 'nope'; allowed: 'random', 'kmeans', 'tome'",
    ):
        baseline_labels("nope", 2, P=P, K=None, rng=np.random.default_rng(0), seed=0)
    with pytest.raises(InvalidInputError, match="needs the head's key vectors"):
        baseline_labels("tome", 2, P=P, K=None, rng=np.random.default_rng(0), seed=0)
    with pytest.raises(
        InvalidInputError, match="unknown representative 'mode'; allowed: 'barycenter', 'medoid'"
    ):
        replace_rows(P, np.array([0, 0, 1]), np.zeros((3, 3)), "mode", False)


def test_heads_figure():
    import matplotlib
    from matplotlib.figure import Figure

    from attntopo.compress import Compression
    from attntopo.plots.compress import compression_bundle, plot_compression_heads

    before = dict(matplotlib.rcParams)
    c = Compression(
        model="m",
        text="a b c",
        tokens=["a", "b", "c"],
        causal=False,
        method="persistence",
        representative="barycenter",
        scale="gap",
        heads=np.array([[0, 0], [0, 1], [1, 1]]),
        n_tokens=3,
        clusters=np.array([1, 2, 3]),
        scales=np.array([0.1, 0.2, 0.3]),
        effect={"cosine": 0.99},
    )
    fig = plot_compression_heads(c)
    assert isinstance(fig, Figure) and dict(matplotlib.rcParams) == before
    grid = fig.axes[0].images[0].get_array()
    np.testing.assert_allclose(grid.filled(np.nan), [[1 / 3, 2 / 3], [np.nan, 1.0]])
    assert list(compression_bundle(c).files(formats=["png"])) == ["figures/heads.png"]
    with pytest.raises(InvalidInputError, match="expected a Compression"):
        plot_compression_heads(object())


@pytest.mark.parametrize(
    "heads",
    [
        [[0, 0], [0, 1], [1, 1]],  # 2 layers x 2 heads: matplotlib's own ticks were 0, 0.5, 1
        [[0, 0]],  # one cell
        [[0, 2], [2, 0]],  # 3 x 3
        [[li, h] for li in range(30) for h in (0, 8)],  # SmolLM2's 30 layers x 9 heads
    ],
)
def test_heads_figure_ticks_are_whole_layers_and_heads(heads):
    """compress --plots heads.png: every tick names a layer or
    a head that exists (issue 28 item 9: "layer 0.5")."""
    from attntopo.compress import Compression
    from attntopo.plots.compress import plot_compression_heads

    h = np.array(heads)
    c = Compression(
        model="m",
        text="a b c",
        tokens=["a", "b", "c"],
        causal=False,
        method="persistence",
        representative="barycenter",
        scale="gap",
        heads=h,
        n_tokens=3,
        clusters=np.ones(len(h), int),
        scales=np.full(len(h), 0.1),
        effect={"cosine": 0.99},
    )
    fig = plot_compression_heads(c)
    ax = fig.axes[0]
    fig.draw_without_rendering()  # sets the tick labels
    for axis, n in ((ax.xaxis, h[:, 1].max() + 1), (ax.yaxis, h[:, 0].max() + 1)):
        lo, hi = sorted(axis.get_view_interval())
        shown = [t for t in axis.get_major_ticks() if lo <= t.get_loc() <= hi]
        labels = [t.label1.get_text().replace("\u2212", "-") for t in shown]
        assert shown and all(lab.lstrip("-").isdigit() for lab in labels), labels
        assert {int(lab) for lab in labels} <= set(range(n)), (labels, n)
        assert [int(lab) for lab in labels] == [t.get_loc() for t in shown]


@pytest.mark.parametrize("seed", [-1, 1.5, True])
def test_a_seed_numpy_refuses_is_refused_before_the_model_loads(seed):
    from attntopo.compress import compress

    # "no-such-model" is never loaded: the seed is checked first (numpy raised a bare ValueError)
    with pytest.raises(InvalidInputError, match="seed must be an int >= 0, got"):
        compress("a b", "no-such-model", seed=seed)
