"""min_persistence=: bars of length <= min_persistence leave the js and barcode statistics (the
H0 death quantiles, the MST's edges, stay), as a user calls features(); checked against gudhi's
own persistence(min_persistence=) and SciPy's Jensen–Shannon distance, one head at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

from _feature_refs import bar_stats, random_attention, synthetic_attention
from attntopo.errors import InvalidInputError
from attntopo.features import DEFAULT_QUANTILES, DEFAULT_SCALES, features
from attntopo.topology import Diagram

gudhi = pytest.importorskip("gudhi")


def _gudhi_bars(D: np.ndarray, dim: int, mp: float) -> np.ndarray:
    """Finite bars of the full Rips filtration of D longer than mp, by gudhi itself."""
    st_ = gudhi.RipsComplex(distance_matrix=D).create_simplex_tree(max_dimension=2)
    st_.persistence(min_persistence=mp)
    dgm = np.asarray(st_.persistence_intervals_in_dimension(dim), dtype=np.float64).reshape(-1, 2)
    dgm = dgm[np.isfinite(dgm[:, 1])]
    return dgm[dgm[:, 1] - dgm[:, 0] > max(mp, 0.0)]


def _js_reference(A: np.ndarray, mp: float) -> np.ndarray:
    n = A.shape[0]
    D = squareform(pdist(A, "jensenshannon") / np.sqrt(np.log(2)), checks=False)
    out = []
    for d in (0, 1):
        fin = _gudhi_bars(D, d, mp)
        s = bar_stats(fin)
        n_inf = 1 if d == 0 else 0
        out += [s["n"] + n_inf, s["sum"], s["max"], s["mean"], s["entropy_2"]]
        out += [np.sum((fin[:, 0] <= e) & (e < fin[:, 1])) + n_inf for e in DEFAULT_SCALES]
    deaths = np.sort(minimum_spanning_tree(D + 1.0 - np.eye(n)).data - 1.0)  # every MST edge
    out += list(np.quantile(deaths, DEFAULT_QUANTILES))
    return np.array(out, dtype=np.float64)


def _barcode_reference(A: np.ndarray, mp: float) -> np.ndarray:
    W = np.where(A > 1e-3, A, 0.0)
    D = 1.0 - W
    np.fill_diagonal(D, 0.0)
    D = np.minimum(D, D.T)
    h0, h1 = _gudhi_bars(D, 0, mp), _gudhi_bars(D, 1, mp)
    s0, s1 = bar_stats(h0), bar_stats(h1)
    return np.array(
        [
            s0["sum"],
            s0["entropy_e"],
            s0["longest_death"],
            np.sum(h0[:, 1] >= 0.75),
            np.sum(h0[:, 1] >= 0.5),
            np.sum(h0[:, 1] <= 0.25),
            s1["longest_birth"],
            np.sum(h1[:, 0] >= 0.25),
            np.sum(h1[:, 0] <= 0.95),
            np.sum(h1[:, 0] <= 0.70),
            s1["sum"],
            s1["entropy_e"],
            s1["std"],
            s1["n"],
        ],
        dtype=np.float64,
    )


@settings(max_examples=30, deadline=None)
@given(st.integers(4, 9), st.sampled_from([0.0, 0.01, 0.05, 0.15, 0.4]), st.integers(0, 2**32 - 1))
def test_features_min_persistence_equals_gudhi(n, mp, seed):
    rng = np.random.default_rng(seed)
    W = random_attention(rng, 2, n, sharpness=rng.uniform(0.5, 6)).reshape(1, 2, n, n)
    table = features([synthetic_attention(W)], sets=("js", "barcode"), min_persistence=mp, n_jobs=1)
    row = table.values[0]
    k_js = len(_js_reference(W[0, 0], mp))
    js = row[: 2 * k_js].reshape(2, k_js)
    bc = row[2 * k_js :].reshape(2, -1)
    for h in range(2):
        A = W[0, h].astype(np.float32).astype(np.float64)  # the weights an Attention holds
        P = A / A.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(js[h], _js_reference(P, mp), rtol=1e-9, atol=1e-9)
        # the barcode set's engine keeps filtration values in float32 (u * max D <= 6e-8 per
        # bar, at most n - 1 + n^2 bars summed: 1e-6 covers n <= 9)
        np.testing.assert_allclose(bc[h], _barcode_reference(A, mp), rtol=0, atol=1e-6)
    assert table.settings["min_persistence"] == mp


def test_min_persistence_drops_the_tiny_bars_a_user_sees():
    rng = np.random.default_rng(3)
    W = random_attention(rng, 1, 12, sharpness=4.0).reshape(1, 1, 12, 12)
    att = synthetic_attention(W)
    cols = list(features([att], sets=("js",), n_jobs=1).columns)
    full = features([att], sets=("js",), n_jobs=1).values[0]
    cut = features([att], sets=("js",), n_jobs=1, min_persistence=0.05).values[0]
    i = cols.index("L0H0.js.h1.n_bars")
    assert cut[i] <= full[i]
    q = [k for k, c in enumerate(cols) if ".death_q" in c]
    np.testing.assert_array_equal(cut[q], full[q])  # the MST's edges all stay


def test_diagram_prune_equals_gudhi_min_persistence():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 2))
    D = squareform(pdist(X))
    st_ = gudhi.RipsComplex(distance_matrix=D).create_simplex_tree(max_dimension=2)
    st_.persistence()
    full = Diagram.from_gudhi(st_.persistence(), maxdim=1)
    for mp in (0.0, 0.05, 0.2, 0.5):
        st_.persistence(min_persistence=mp)
        want = [
            np.asarray(st_.persistence_intervals_in_dimension(d)).reshape(-1, 2) for d in (0, 1)
        ]
        got = full.prune(mp)
        for d in (0, 1):
            np.testing.assert_allclose(
                np.sort(got[d], axis=0), np.sort(want[d], axis=0), rtol=0, atol=0
            )
        assert got.infinite(0).shape == (1, 2)
    with pytest.raises(InvalidInputError, match="min_persistence"):
        full.prune(-1)
    with pytest.raises(InvalidInputError, match="min_persistence"):
        features(
            [synthetic_attention(np.full((1, 1, 3, 3), 1 / 3))], sets=("js",), min_persistence=-0.1
        )


@pytest.mark.parametrize("mp", [0.0, 0.02, 0.1])
def test_per_token_counts_leave_out_the_same_bars(mp):
    """js_per_token divides the js statistics, min_persistence applied, by the token count:
    its H1 bar count is gudhi's count of bars longer than mp, over n."""
    rng = np.random.default_rng(7)
    n = 11
    W = random_attention(rng, 1, n, sharpness=4.0).reshape(1, 1, n, n)
    table = features([synthetic_attention(W)], sets=("js_per_token",), min_persistence=mp, n_jobs=1)
    got = table.values[0, list(table.columns).index("L0H0.js_per_token.h1.n_bars_per_token")]
    A = W[0, 0].astype(np.float32).astype(np.float64)
    P = A / A.sum(axis=1, keepdims=True)
    D = squareform(pdist(P, "jensenshannon") / np.sqrt(np.log(2)), checks=False)
    assert got == len(_gudhi_bars(D, 1, mp)) / n
