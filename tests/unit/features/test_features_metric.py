"""Features on every registered distance (``metric=``): columns named by the metric, numbers
checked against the registry's NumPy reference and SciPy's minimum spanning tree."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree

import attntopo.features as F
from _feature_refs import texts_attention
from attntopo.distances import DISTANCES, pairwise_distance
from attntopo.errors import InvalidInputError
from attntopo.features.pipeline import set_columns
from attntopo.sklearn import AttentionFeatures

SETS = ("js", "js_per_token", "graph")


@pytest.fixture(scope="module")
def atts():
    return texts_attention(np.random.default_rng(7), [6, 9], L=1, H=2)


def _reference(W):
    """The distances of one head's rows from the registry's plain NumPy formula (float64)."""
    n = W.shape[0]
    return lambda metric: np.array(
        [
            [pairwise_distance(W[i], W[j], metric=metric) if i != j else 0.0 for j in range(n)]
            for i in range(n)
        ]
    )


@pytest.mark.parametrize("metric", list(DISTANCES))
def test_every_registered_distance_works_in_features(atts, metric):
    table = F.features(atts, sets=SETS, metric=metric, n_jobs=1)
    name = DISTANCES[metric].column
    assert table.columns[0] == f"L0H0.{name}.h0.n_bars"
    assert f"L0H1.{name}_per_token.h1.n_bars_per_token" in table.columns
    assert "L0H0.graph.t0.1.scc" in table.columns  # sets on the attention keep their names
    assert table.settings["metric"] == metric
    # feature_names' columns (model-free here: the pipeline's own list) are the table's
    st = F.FeatureSettings(sets=SETS, metric=metric).st()
    assert list(table.columns) == set_columns((0,), (0, 1), st)
    for k, a in enumerate(atts):
        for h in range(2):
            W = a.weights[0, h].astype(np.float64)
            D = _reference(W)(metric)
            # H0's finite bars are the minimum spanning tree's edges (SciPy's, independent)
            got = table.values[k, table.columns.index(f"L0H{h}.{name}.h0.total_persistence")]
            assert got == pytest.approx(minimum_spanning_tree(D).sum(), rel=1e-9, abs=1e-12)
            n_bars = table.values[k, table.columns.index(f"L0H{h}.{name}.h0.n_bars")]
            assert n_bars == a.n_tokens
    if metric != "jensen_shannon":
        js = F.features(atts, sets=SETS, n_jobs=1)
        assert not np.allclose(js.values, table.values)


def test_scales_are_checked_against_the_metric_range():
    assert F.FeatureSettings(metric="fisher_rao", scales=(0.5, 3.0)).scales == (0.5, 3.0)
    with pytest.raises(InvalidInputError, match=r"scales must be .* in \[0, 1\]"):
        F.FeatureSettings(metric="hellinger", scales=(1.5,))
    with pytest.raises(
        InvalidInputError, match="unknown metric 'cosine'; allowed: 'jensen_shannon'"
    ):
        F.FeatureSettings(metric="cosine")


def test_metric_travels_through_settings_and_the_estimator():
    fs = F.FeatureSettings(metric="hellinger")
    assert fs.st()["metric"] == "hellinger"
    assert dataclasses.replace(fs, metric="total_variation").metric == "total_variation"
    est = AttentionFeatures(metric="fisher_rao")
    assert est.get_params()["metric"] == "fisher_rao"
    assert est.feature_settings().metric == "fisher_rao"
    with pytest.raises(InvalidInputError, match="metric='hellinger' disagrees with"):
        F.FeatureSettings.resolve(F.FeatureSettings(metric="fisher_rao"), metric="hellinger")


def test_a_new_distance_is_one_record(monkeypatch, atts):
    """A distance registered for the test only (the steps of docs/architecture.md): its kernel,
    finisher and reference; token_distances, pairwise_distance and features take it with no
    other change."""
    import torch

    from attntopo.distances import _registry, token_distances

    def block(P, dtype, budget, support, workers):
        return torch.cdist(P.to(dtype), P.to(dtype), p=float("inf")).to(torch.float64)

    monkeypatch.setitem(
        _registry._DISTANCES,
        "chebyshev",
        _registry.Distance(
            "chebyshev",
            "Chebyshev",
            "cheb",
            "max |p − q|",
            1.0,
            block,
            _registry._final,
            lambda p, q, base: float(np.max(np.abs(p - q))),
        ),
    )
    W = atts[1].weights[0].astype(np.float64)
    W /= W.sum(-1, keepdims=True)  # rows rescaled to sum to 1 in float64, as the kernels do
    want = np.abs(W[:, :, None, :] - W[:, None, :, :]).max(-1)
    np.testing.assert_allclose(token_distances(W, metric="chebyshev"), want, rtol=0, atol=1e-15)
    assert pairwise_distance(W[0, 0], W[0, 1], metric="chebyshev") == want[0, 0, 1]
    table = F.features(atts, sets=("js",), metric="chebyshev", n_jobs=1)
    assert table.columns[0] == "L0H0.cheb.h0.n_bars"
    got = table.values[1, table.columns.index("L0H1.cheb.h0.total_persistence")]
    assert got == pytest.approx(minimum_spanning_tree(want[1]).sum(), rel=1e-12)


@pytest.mark.parametrize("metric", list(DISTANCES))
def test_chosen_rows_are_the_full_matrix_rows(atts, metric):
    """token_distances_tensor(rows=) (the prompt score's response rows) on every distance:
    a kernel for chosen rows (Jensen–Shannon) or the full matrices' rows, the same numbers."""
    from attntopo.distances import token_distances, token_distances_tensor

    W = atts[1].weights[0]
    full = token_distances(W, metric=metric)
    got = token_distances_tensor(W, metric=metric, rows=[4, 1, 7]).numpy()
    np.testing.assert_allclose(got, full[:, [4, 1, 7]], rtol=0, atol=1e-14)


def test_prompt_score_on_another_metric():
    """The prompt set's distance score on Hellinger (named ``prompt.hellinger``): SciPy's
    minimum spanning tree of the contracted graph of the Hellinger distances, per response
    token (drop_special=True: the content tokens, rows renormalized)."""
    from attntopo.distances import token_distances
    from attntopo.features import _layers
    from tests.unit.features.test_features_template_prompt import _causal_pair, _contracted_mst

    att, boundary = _causal_pair(5, 1, 2, 12)  # content tokens 1..5 the prompt, 6..10 the answer
    st = F.FeatureSettings(sets=("prompt",), metric="hellinger", prompt_quantities=("js",)).st()
    assert set_columns((0,), (0, 1), st) == ["L0H0.prompt.hellinger", "L0H1.prompt.hellinger"]
    chunk = _layers.ChunkFeatures(1, [boundary], st, True, None, 1)
    chunk.add_attention(0, att)
    chunk.start()
    got = chunk.finish()[0].reshape(2)
    real = att.drop_special().weights[0].astype(np.float64)
    prompt = np.arange(10) < 5
    for h in range(2):
        D = token_distances(real[h], metric="hellinger")
        assert got[h] == pytest.approx(_contracted_mst(D, prompt) / 5, rel=1e-9)
