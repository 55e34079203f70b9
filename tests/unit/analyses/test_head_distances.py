"""Head distances, head space and model comparison on synthetic attention (no model)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import linkage as sc_linkage
from scipy.spatial.distance import jensenshannon, pdist, squareform

import attntopo as at
from attntopo._mds import classical_mds
from attntopo.analyses import HeadSpace, ModelComparison, compare_models, head_distances, head_space
from attntopo.analyses._head_space import head_labels
from attntopo.attention import Attention
from attntopo.distances import pairwise_distance, row_distances
from attntopo.errors import InvalidInputError, InvalidMatrixError, OutOfRangeError


def _weights(rng, L, H, n, conc=0.4, causal=False, zeros=False):
    W = rng.dirichlet(np.full(n, conc), size=(L, H, n))
    if causal:
        W = np.tril(W)
        W /= W.sum(-1, keepdims=True)
    if zeros:  # exact zeros in some rows (each row keeps its largest entry)
        keep = W == W.max(-1, keepdims=True)
        W[(W < 0.05) & ~keep] = 0.0
        W /= W.sum(-1, keepdims=True)
    return W


def _att(W, model="synthetic", causal=None, text=""):
    L, H, n, _ = W.shape
    if causal is None:
        causal = bool(np.all(np.triu(W[0, 0], 1) == 0))
    return Attention(
        weights=W,
        tokens=[f"t{i}" for i in range(n)],
        offsets=[(0, 0)] * n,
        special=np.zeros(n, bool),
        causal=causal,
        model=model,
        text=text,
    )


def _scipy_head_distances(W):
    """The paper's definition as a plain double loop of scipy calls."""
    L, H, n, _ = W.shape
    F = W.reshape(L * H, n, n).astype(np.float64)
    N = L * H
    D = np.zeros((N, N))
    for a in range(N):
        for b in range(a + 1, N):
            D[a, b] = D[b, a] = sum(jensenshannon(F[a, i], F[b, i], base=2) for i in range(n))
    return D


# ------------------------------------------------------------------ accuracy
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("zeros", [False, True])
def test_matches_scipy_double_loop(causal, zeros):
    rng = np.random.default_rng(3 + causal + 2 * zeros)
    W = _weights(rng, 2, 3, 11, causal=causal, zeros=zeros)
    ref = _scipy_head_distances(W)  # float64 array input
    np.testing.assert_allclose(head_distances(W), ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(head_distances(W, normalize=True), ref / 11, rtol=0, atol=1e-10)
    att = _att(W)  # Attention holds float32 weights: scipy sees the same float32 rows
    D = head_distances(att)
    assert D.shape == (6, 6) and D.dtype == np.float64
    np.testing.assert_allclose(D, _scipy_head_distances(att.weights), rtol=0, atol=1e-9)


def test_float32_attention_and_more_tokens_than_a_chunk():
    rng = np.random.default_rng(5)
    W = _weights(rng, 2, 2, 37).astype(np.float32)  # 37 tokens: three token chunks
    np.testing.assert_allclose(head_distances(_att(W)), _scipy_head_distances(W), rtol=0, atol=1e-9)


def test_identical_heads_are_at_distance_exactly_zero():
    rng = np.random.default_rng(0)
    W = _weights(rng, 1, 3, 8)
    W[0, 2] = W[0, 0]
    D = head_distances(W)
    assert D[0, 2] == 0.0 and D[2, 0] == 0.0
    assert np.all(np.diag(D) == 0.0)
    assert D[0, 1] > 0


def test_other_metrics_match_pairwise_reference():
    rng = np.random.default_rng(1)
    W = _weights(rng, 1, 3, 6)
    F = W.reshape(3, 6, 6)
    for metric in ("hellinger", "total_variation", "fisher_rao"):
        D = head_distances(W, metric=metric)
        ref = np.array(
            [
                [
                    sum(pairwise_distance(F[a, i], F[b, i], metric=metric) for i in range(6))
                    for b in range(3)
                ]
                for a in range(3)
            ]
        )
        np.testing.assert_allclose(D, ref, atol=1e-12)


def test_row_distances_rectangular_matches_pairwise():
    rng = np.random.default_rng(2)
    X = rng.dirichlet(np.full(7, 0.5), size=(2, 4, 5))  # (..., m=5, k=7)
    for metric in at.METRICS:
        D = row_distances(X, metric=metric)
        assert D.shape == (2, 4, 5, 5)
        ref = np.array(
            [
                [
                    [
                        [pairwise_distance(X[a, b, i], X[a, b, j], metric=metric) for j in range(5)]
                        for i in range(5)
                    ]
                    for b in range(4)
                ]
                for a in range(2)
            ]
        )
        np.testing.assert_allclose(D, ref, atol=1e-12)
    with pytest.raises(InvalidMatrixError):
        row_distances(np.ones((3, 4)))  # rows sum to 4
    with pytest.raises(InvalidInputError):
        row_distances(X, metric="cosine")


# -------------------------------------------------------------- many texts
def test_many_texts_sum_mean_none_and_normalize():
    rng = np.random.default_rng(4)
    Ws = [_att(_weights(rng, 2, 2, n)).weights for n in (5, 9, 7)]  # float32, as models give
    per = [head_distances(W) for W in Ws]
    stack = head_distances([_att(W) for W in Ws], reduce="none")
    assert stack.shape == (3, 4, 4)
    np.testing.assert_array_equal(stack, np.stack(per))
    np.testing.assert_allclose(head_distances(Ws), sum(per))
    np.testing.assert_allclose(head_distances(Ws, reduce="mean"), sum(per) / 3)
    norm = head_distances(Ws, normalize=True, reduce="mean")
    np.testing.assert_allclose(norm, sum(p / W.shape[-1] for p, W in zip(per, Ws)) / 3)


def test_validation_errors():
    rng = np.random.default_rng(0)
    W = _weights(rng, 2, 2, 5)
    with pytest.raises(InvalidInputError, match="reduce"):
        head_distances([W, W], reduce="max")
    with pytest.raises(InvalidInputError, match="metric"):
        head_distances(W, metric="cosine")
    with pytest.raises(InvalidInputError, match="layers × heads"):
        head_distances([W, _weights(rng, 1, 2, 5)])
    with pytest.raises(InvalidInputError, match="shape"):
        head_distances(np.ones((2, 3, 4)))
    with pytest.raises(InvalidInputError):
        head_distances([])
    with pytest.raises(InvalidInputError, match="normalize"):
        head_distances(W, normalize="yes")
    bad = W.copy()
    bad[0, 0, 0] *= 2
    with pytest.raises(InvalidMatrixError):
        head_distances(bad)


# ----------------------------------------------------- metric properties
@st.composite
def attention_stacks(draw):
    L = draw(st.integers(1, 2))
    H = draw(st.integers(2, 3))
    n = draw(st.integers(2, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    conc = draw(st.sampled_from([0.05, 0.3, 1.0, 5.0]))
    causal = draw(st.booleans())
    rng = np.random.default_rng(seed)
    W = _weights(rng, L, H, n, conc=conc, causal=causal)
    if draw(st.booleans()):  # duplicate a head: distance 0 must come out exactly
        W[0, 1] = W[0, 0]
    return W


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attention_stacks(), st.booleans())
def test_head_distance_is_a_metric(W, normalize):
    D = head_distances(W, normalize=normalize)
    N = W.shape[0] * W.shape[1]
    assert D.shape == (N, N)
    assert np.all(np.isfinite(D)) and np.all(D >= 0)
    assert np.array_equal(D, D.T)
    assert np.all(np.diag(D) == 0)
    bound = 1.0 if normalize else W.shape[-1]
    assert D.max() <= bound + 1e-12
    # triangle inequality for every triple
    viol = D[:, None, :] - (D[:, :, None] + D[None, :, :])
    assert viol.max() <= 1e-12


# ---------------------------------------------------------------------- MDS
def test_classical_mds_reconstructs_euclidean_distances():
    rng = np.random.default_rng(7)
    P = rng.normal(size=(15, 2)) * [3.0, 1.0]
    D = squareform(pdist(P))
    X, vals = classical_mds(D, 2)
    np.testing.assert_allclose(squareform(pdist(X)), D, atol=1e-9)
    assert vals[0] >= vals[1] >= vals[2] - 1e-9
    np.testing.assert_allclose(vals[2:], 0, atol=1e-8)
    # deterministic: largest-magnitude coordinate of each axis is positive
    for c in range(2):
        assert X[np.argmax(np.abs(X[:, c])), c] > 0
    X2, _ = classical_mds(D[::-1, ::-1], 2)
    np.testing.assert_allclose(np.abs(X2[::-1]), np.abs(X), atol=1e-9)
    # 3-D points in 3 dims, and a larger dim than points
    P3 = rng.normal(size=(6, 3))
    X3, _ = classical_mds(squareform(pdist(P3)), 3)
    np.testing.assert_allclose(squareform(pdist(X3)), squareform(pdist(P3)), atol=1e-9)
    assert classical_mds(np.zeros((2, 2)), 3)[0].shape == (2, 3)
    with pytest.raises(InvalidInputError):
        classical_mds(np.zeros((2, 3)))


# --------------------------------------------------------------- head space
@pytest.fixture(scope="module")
def synth_space():
    rng = np.random.default_rng(11)
    atts = [_att(_weights(rng, 3, 4, n), text=f"text {n}") for n in (8, 10, 9)]
    return atts, head_space(atts, maxdim=1)


def test_head_space_contents(synth_space):
    atts, hs = synth_space
    assert isinstance(hs, HeadSpace)
    assert hs.n_points == 12 and hs.labels[:5] == ["L0H0", "L0H1", "L0H2", "L0H3", "L1H0"]
    assert head_labels((0, 2), (1,)) == ["L0H1", "L2H1"]
    np.testing.assert_allclose(hs.distances, head_distances(atts, normalize=True, reduce="mean"))
    assert hs.per_text.shape == (3, 12, 12) and hs.n_tokens == (8, 10, 9)
    assert hs.texts == ["text 8", "text 10", "text 9"]
    # persistence of the head space; H0 deaths = single-linkage heights (scipy)
    Z = sc_linkage(squareform(hs.distances, checks=False), method="single")
    np.testing.assert_allclose(hs.linkage, Z)
    deaths = np.sort(hs.diagram.finite(0)[:, 1])
    np.testing.assert_allclose(deaths, np.sort(Z[:, 2]), atol=1e-12)
    assert hs.embedding.shape == (12, 2)
    assert 0 < hs.mds_explained() <= 1
    assert hs.types is not None and hs.types.labels.shape == (3, 4)
    assert sorted(hs.leaf_order().tolist()) == list(range(12))
    assert hs.dendrogram()["ivl"][0] in hs.labels
    ld = hs.layer_distances()
    assert ld.shape == (3, 3) and np.allclose(ld, ld.T)
    s = hs.overview()
    assert s["n_points"] == 12 and s["diagram"][0]["n_bars"] == 12
    cols = hs.summary()  # one row per head
    assert list(cols["label"]) == hs.labels and list(cols["layer"]) == hs.layer_of.tolist()
    assert list(cols["type"]) == hs.types.labels.reshape(-1).tolist()
    i = 5
    j = hs.labels.index(cols["nearest"][i])
    assert (
        j != i
        and cols["nearest_distance"][i] == np.delete(hs.distances[i], i).min() == hs.distances[i, j]
    )
    assert "n_points" not in cols  # the overview's keys are overview()'s, not the table's


def test_clusters_and_redundancy(synth_space):
    _, hs = synth_space
    D = hs.distances
    for eps in (0.0, np.median(D), D.max()):
        lab = hs.clusters(eps)
        assert len(np.unique(lab)) == hs.diagram.betti(eps)[0]
    assert len(np.unique(hs.clusters(D.max()))) == 1
    eps = float(np.quantile(D[np.triu_indices(12, 1)], 0.3))
    for method in ("complete", "single"):
        groups = hs.redundancy(scale=eps, method=method)
        for g in groups:
            sub = D[np.ix_(g["indices"], g["indices"])]
            iu = np.triu_indices(g["size"], 1)
            assert g["size"] >= 2 and g["heads"] == [hs.labels[i] for i in g["indices"]]
            np.testing.assert_allclose(g["mean_distance"], sub[iu].mean())
            if method == "complete":
                assert g["max_distance"] <= eps + 1e-12
    assert hs.redundancy() == hs.redundancy(scale=hs.default_scale())
    with pytest.raises(InvalidInputError):
        hs.clusters(-1)
    with pytest.raises(InvalidInputError):
        hs.redundancy(scale=0.1, method="average")


def test_redundancy_finds_duplicated_heads():
    rng = np.random.default_rng(2)
    W = _weights(rng, 2, 3, 12)
    W[1, 2] = W[0, 1]  # L1H2 duplicates L0H1
    hs = head_space(_att(W), types=False)
    groups = hs.redundancy(scale=1e-9)
    assert [g["heads"] for g in groups] == [["L0H1", "L1H2"]]
    assert groups[0]["mean_distance"] == 0.0 and groups[0]["layers"] == [0, 1]
    assert hs.nearest(1, 2, k=1) == [("L0H1", 0.0)]
    assert hs.distance((0, 1), (1, -1)) == 0.0
    assert hs.index(1, 2) == 5
    with pytest.raises(OutOfRangeError):
        hs.index(2, 0)


def test_head_space_save_load(synth_space, tmp_path):
    _, hs = synth_space
    hs.save(tmp_path / "hs", extra_files={"figures/x.txt": b"x"})
    back = at.load_result(tmp_path / "hs")
    assert isinstance(back, HeadSpace) and back == hs
    assert back.types == hs.types
    assert (tmp_path / "hs" / "figures" / "x.txt").read_bytes() == b"x"


def test_head_space_input_errors():
    with pytest.raises(InvalidInputError):
        head_space([])
    with pytest.raises(InvalidInputError):
        head_space(42)
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidInputError, match="maxdim"):
        head_space(_att(_weights(rng, 1, 2, 4)), maxdim=3)
    with pytest.raises(InvalidInputError, match="reduce"):
        head_space(_att(_weights(rng, 1, 2, 4)), reduce="none")
    with pytest.raises(InvalidInputError, match="mix"):
        head_space([_att(_weights(rng, 1, 2, 4)), "text"])


# ---------------------------------------------------------- model to model
@pytest.fixture(scope="module")
def two_spaces():
    rng = np.random.default_rng(21)
    A = [_att(_weights(rng, 2, 4, 8 + k, conc=0.2), model="a", text=str(k)) for k in range(5)]
    B = [_att(_weights(rng, 3, 3, 8 + k, conc=2.0), model="b", text=str(k)) for k in range(5)]
    return head_space(A, types=False), head_space(B, types=False)


def test_compare_models_observed_and_bootstrap(two_spaces):
    ha, hb = two_spaces
    c = compare_models(None, model_a=ha, model_b=hb, n_boot=30, seed=5, n_jobs=1)
    assert isinstance(c, ModelComparison)
    np.testing.assert_allclose(c.bottleneck, at.topology.bottleneck(ha.diagram, hb.diagram))
    np.testing.assert_allclose(c.wasserstein, at.topology.wasserstein(ha.diagram, hb.diagram))
    assert c.null["bottleneck"].shape == (2, 30, 2) and c.boot["wasserstein"].shape == (30, 2)
    # p-value and z-score exactly as documented
    null = c.null["bottleneck"].reshape(-1, 2)
    p = (1 + (null >= c.bottleneck - 1e-12).sum(0)) / (1 + 60)  # ties within 1e-12 count
    np.testing.assert_allclose(c.p_values(name="bottleneck"), p)
    np.testing.assert_allclose(
        c.z_scores(name="bottleneck"), (c.bottleneck - null.mean(0)) / null.std(0, ddof=1)
    )
    # very different models: the H0 difference is far outside the within-model noise
    assert c.p_values(name="bottleneck")[0] == 1 / 61
    assert c.interval(name="wasserstein").shape == (2, 2)
    rows = c.summary_rows()
    assert [r["dim"] for r in rows] == [0, 1] and "wasserstein_p" in rows[0]
    cols = c.summary()
    assert cols["dim"].tolist() == [0, 1] and cols["wasserstein_p"].tolist() == [
        r["wasserstein_p"] for r in rows
    ]
    # seeded: same numbers again; the replicate diagrams are independent recomputations
    c2 = compare_models(None, model_a=ha, model_b=hb, n_boot=30, seed=5, n_jobs=1)
    for k in c.null:
        np.testing.assert_array_equal(c.null[k], c2.null[k])
    # a replicate equals the head space of the resampled texts, computed from scratch
    rng = np.random.default_rng(5)
    draws = rng.integers(0, 5, size=(30, 2, 5))
    Ds = [np.mean([ha.per_text[t] for t in draws[0, s]], axis=0) for s in range(2)]
    d0 = at.persistence(Ds[0], maxdim=1)
    d1 = at.persistence(Ds[1], maxdim=1)
    np.testing.assert_allclose(
        c.null["bottleneck"][0, 0], at.topology.bottleneck(d0, d1), atol=1e-12
    )


def test_compare_identical_models_is_zero_and_not_significant(two_spaces):
    ha, _ = two_spaces
    c = compare_models(None, model_a=ha, model_b=ha, n_boot=20, seed=0, n_jobs=1)
    assert np.all(c.bottleneck == 0) and np.all(c.wasserstein == 0)
    assert np.all(c.p_values() == 1.0)
    assert np.all(c.boot["bottleneck"] == 0)


def test_compare_models_save_load_and_no_bootstrap(two_spaces, tmp_path):
    ha, hb = two_spaces
    c = compare_models(None, model_a=ha, model_b=hb, n_boot=0)
    assert c.n_boot == 0 and c.summary_rows()[0].keys() == {"dim", "bottleneck", "wasserstein"}
    assert set(c.summary()) == {"dim", "bottleneck", "wasserstein"}
    with pytest.raises(InvalidInputError, match="n_boot"):
        c.p_values()
    with pytest.raises(
        InvalidInputError, match=r"seed must be an int >= 0 \(or None for fresh entropy\), got -1"
    ):
        compare_models(None, model_a=ha, model_b=hb, n_boot=5, seed=-1, n_jobs=1)
    c = compare_models(None, model_a=ha, model_b=hb, n_boot=5, seed=1, n_jobs=1)
    c.save(tmp_path / "cmp")
    back = at.load_result(tmp_path / "cmp")
    assert isinstance(back, ModelComparison) and back == c
    assert "ModelComparison" in repr(back)


def test_compare_models_errors(two_spaces):
    ha, hb = two_spaces
    with pytest.raises(InvalidInputError, match="n_boot"):
        compare_models(None, model_a=ha, model_b=hb, n_boot=-1)
    with pytest.raises(InvalidInputError, match="texts"):
        compare_models(None, model_a=ha, model_b="minilm")
    with pytest.raises(InvalidInputError, match="p must"):
        compare_models(None, ha, hb, p=0.5)
    with pytest.raises(InvalidInputError, match=r"model_a has maxdim 1 < 2"):
        compare_models(None, ha, hb, maxdim=2)
    rng = np.random.default_rng(0)
    one = head_space(_att(_weights(rng, 1, 3, 5)), types=False)
    with pytest.raises(InvalidInputError, match="same texts"):
        compare_models(None, model_a=ha, model_b=one, n_boot=0)
    summed = head_space([_att(_weights(rng, 1, 3, 5))] * 5, reduce="sum", types=False)
    with pytest.raises(InvalidInputError, match="reduce"):
        compare_models(None, model_a=ha, model_b=summed)
    nopt = head_space(
        [_att(_weights(rng, 1, 3, 5), text=str(k)) for k in range(5)],
        keep_per_text=False,
        types=False,
    )
    with pytest.raises(InvalidInputError, match="keep_per_text"):
        compare_models(None, model_a=ha, model_b=nopt, n_boot=3)
