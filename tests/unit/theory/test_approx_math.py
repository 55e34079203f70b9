"""The efficient-attention families (attntopo.theory._approx_families)
and the result, without a model.

Every claim is checked against an independent computation: NumPy's SVD and sorting, SciPy's
Jensen–Shannon distance, brute force over supports, head types' own band/vertical fit, and a
Monte Carlo estimate for the random features.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

import attntopo as at
from attntopo.attention import Attention
from attntopo.errors import InvalidInputError, OutOfRangeError
from attntopo.io import load_payload
from attntopo.models._qk import attention_from_qk
from attntopo.theory import Approximability, approximability
from attntopo.theory._approx_families import (
    band_mask,
    band_sparse,
    band_sparse_search,
    clustered,
    family_sizes,
    js_error,
    js_error_support,
    kernel_estimate,
    low_rank,
    performer,
    random_features,
    relative_error,
    top_k,
)


def _stochastic(seed: int, n: int, conc: float = 0.3, causal: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.dirichlet(np.full(n, conc), size=n)
    if causal:
        A = np.tril(A)
        A /= A.sum(1, keepdims=True)
    return A


matrices = st.builds(
    _stochastic,
    st.integers(0, 2**32 - 1),
    st.integers(2, 24),
    st.sampled_from([0.05, 0.3, 3.0]),
    st.booleans(),
)


# ------------------------------------------------------------------- low rank
@settings(max_examples=60, deadline=None)
@given(matrices, st.data())
def test_rank_r_error_is_the_singular_value_tail(A, data):
    n = A.shape[0]
    r = data.draw(st.integers(1, n))
    approx, s = low_rank(A, r)
    np.testing.assert_allclose(s, np.linalg.svd(A, compute_uv=False), rtol=0, atol=1e-12)
    direct = np.linalg.norm(A - approx)  # Frobenius
    tail = math.sqrt(float(np.sum(s[r:] ** 2)))
    assert abs(direct - tail) <= 1e-12 * max(1.0, np.linalg.norm(A))
    assert relative_error(A, approx) == pytest.approx(tail / np.linalg.norm(A), abs=1e-12)
    assert np.linalg.matrix_rank(approx, tol=1e-9) <= r


def test_rank_n_is_exact():
    A = _stochastic(1, 9)
    assert relative_error(A, low_rank(A, 9)[0]) < 1e-13


# ------------------------------------------------------------------- top k
@settings(max_examples=60, deadline=None)
@given(matrices)
def test_top_k_is_monotone_and_optimal(A):
    n = A.shape[0]
    errs = [float(relative_error(A, top_k(A, k))) for k in range(1, n + 1)]
    assert all(b <= a + 1e-15 for a, b in zip(errs, errs[1:]))
    assert errs[-1] == 0.0
    for k in range(1, n + 1):
        # independent: the error of keeping the k largest = the n - k smallest squares of each row
        small = np.sort(A * A, axis=1)[:, : n - k].sum()
        assert errs[k - 1] == pytest.approx(math.sqrt(small) / np.linalg.norm(A), abs=1e-12)
        assert np.all((top_k(A, k) != 0).sum(1) <= k)


def test_top_k_n_returns_a():
    A = _stochastic(2, 7)
    np.testing.assert_array_equal(top_k(A, 7), A)


# -------------------------------------------------------------- band + sparse
@settings(max_examples=40, deadline=None)
@given(matrices)
def test_full_band_is_exact(A):
    n = A.shape[0]
    for w in (n - 1, n):
        np.testing.assert_array_equal(band_sparse(A, w, causal=False), A)
    causal_A = np.tril(A)
    np.testing.assert_array_equal(band_sparse(causal_A, n, causal=True), causal_A)


def test_band_sparse_keeps_exactly_its_support():
    A = _stochastic(3, 12)
    B = band_sparse(A, 1, columns=2, corrections=1)
    support = B != 0
    band = band_mask(12, 1)
    assert np.all(support[band])
    col_mass = np.where(band, 0, A).mean(0)
    heavy = np.argsort(-col_mass)[:2]
    assert np.all(support[:, heavy])
    assert np.all(support.sum(1) <= band.sum(1) + 2 + 1)
    np.testing.assert_array_equal(B[support], A[support])


def test_band_fit_matches_head_types_band_and_vertical_errors():
    # head types' band_error is 1 - the band's mass (mean over rows); vertical_error the same for
    # the k heaviest columns: the band+sparse family contains both fits
    from attntopo.analyses._head_types import head_features

    W = np.stack([np.stack([_stochastic(s, 15), _stochastic(s + 50, 15)]) for s in (5, 6)])
    att = Attention.from_weights(W, [f"t{i}" for i in range(15)], causal=False)
    f = head_features(att, band_width=2, vertical_k=4)
    for li in range(2):
        for h in range(2):
            A = att.weights[li, h].astype(np.float64)  # the float32 weights head types see
            kept_band = band_sparse(A, 2).sum(1)
            assert f["band_error"][li, h] == pytest.approx(1 - kept_band.mean(), abs=1e-12)
            col = np.argsort(-A.mean(0))[:4]
            assert f["vertical_error"][li, h] == pytest.approx(
                1 - A[:, col].sum(1).mean(), abs=1e-12
            )


@settings(max_examples=25, deadline=None)
@given(matrices)
def test_band_sparse_search_equals_brute_force(A):
    from attntopo.theory._approx_families import _grid, band_entries

    n = A.shape[0]
    causal = bool(np.all(np.triu(A, 1) == 0))
    budgets = [b for b in (2, 3, 5, 8, 13) if b <= n]
    err2, params = band_sparse_search(A, budgets, causal=causal)
    for j, p in enumerate(budgets):
        best = min(
            float(
                np.sum(
                    (
                        A
                        - band_sparse(
                            A, w, c, min((p - band_entries(w, causal) - c) // 2, n), causal=causal
                        )
                    )
                    ** 2
                )
            )
            for w in _grid(n)
            if band_entries(w, causal) <= p
            for c in _grid(min(p - band_entries(w, causal), n))
        )
        assert err2[j] == pytest.approx(best, abs=1e-12)
        w, c, s = params[j]
        assert band_entries(w, causal) + c + 2 * s <= p
        direct = float(np.sum((A - band_sparse(A, int(w), int(c), int(s), causal=causal)) ** 2))
        assert direct == pytest.approx(err2[j], abs=1e-12)


# ------------------------------------------------------------------ budgets
def test_budgets_larger_than_n_are_refused():
    A = _stochastic(4, 6)
    for call in (
        lambda: top_k(A, 7),
        lambda: low_rank(A, 7),
        lambda: band_sparse(A, 7),
        lambda: band_sparse(A, 1, columns=7),
        lambda: family_sizes(7, 6),
        lambda: band_sparse_search(A, [7]),
    ):
        with pytest.raises(OutOfRangeError, match="at most n = 6"):
            call()
    with pytest.raises(InvalidInputError):
        top_k(A, 0)
    with pytest.raises(InvalidInputError):
        family_sizes(1, 6)


def test_family_sizes_match_the_stated_costs():
    z = family_sizes(16, 100)
    assert z == {"top_k": 8, "low_rank": 8, "kernel": 8, "clusters": 15}
    assert family_sizes(5, 5)["clusters"] == 4


# ---------------------------------------------------------------- random features
@pytest.mark.parametrize("orthogonal", [True, False])
def test_positive_random_features_are_unbiased(orthogonal):
    rng = np.random.default_rng(20261125)
    d, m, draws = 8, 4, 6000
    q = rng.standard_normal(d) * 0.35
    k = rng.standard_normal(d) * 0.35
    est = np.array(
        [
            kernel_estimate(q, k, random_features(m, d, rng, orthogonal=orthogonal))
            for _ in range(draws)
        ]
    )
    exact = math.exp(float(q @ k))
    se = est.std(ddof=1) / math.sqrt(draws)
    assert abs(est.mean() - exact) < 4 * se, (est.mean(), exact, se)
    # and a biased estimator would be caught: the estimate of exp(q·k) is not exp of another value
    assert abs(est.mean() - math.exp(float(q @ k) + 0.05)) > 4 * se


def test_orthogonal_features_are_orthogonal_gaussian_rows():
    rng = np.random.default_rng(0)
    W = random_features(5, 5, rng, orthogonal=True)
    U = W / np.linalg.norm(W, axis=1, keepdims=True)
    np.testing.assert_allclose(U @ U.T, np.eye(5), atol=1e-12)
    norms2 = np.array(
        [np.sum(random_features(3, 6, rng) ** 2, axis=1) for _ in range(4000)]
    ).ravel()
    assert norms2.mean() == pytest.approx(
        6.0, abs=4 * norms2.std() / math.sqrt(norms2.size)
    )  # chi^2(6)


@pytest.mark.parametrize("causal", [False, True])
def test_performer_converges_to_softmax(causal):
    rng = np.random.default_rng(1)
    n, d = 10, 4
    Q, K = rng.standard_normal((n, d)) * 0.7, rng.standard_normal((n, d)) * 0.7
    exact = attention_from_qk(Q, K, d**-0.5, causal)
    approx = performer(Q, K, d**-0.5, random_features(200_000, d, rng), causal=causal)
    np.testing.assert_allclose(approx.sum(1), 1.0, atol=1e-12)
    if causal:
        assert np.all(np.triu(approx, 1) == 0)
    assert relative_error(exact, approx) < 0.02
    few = performer(Q, K, d**-0.5, random_features(2, d, rng), causal=causal)
    assert relative_error(exact, few) > relative_error(exact, approx)


def test_performer_survives_large_logits():
    rng = np.random.default_rng(2)
    Q, K = rng.standard_normal((6, 8)) * 30, rng.standard_normal((6, 8)) * 30
    out = performer(Q, K, 8**-0.5, random_features(4, 8, rng), causal=True)
    assert np.all(np.isfinite(out)) and np.allclose(out.sum(1), 1.0)


# ----------------------------------------------------------------------- clusters
def test_clustered_rows_are_cluster_means():
    A = _stochastic(7, 8)
    np.testing.assert_array_equal(clustered(A, np.arange(8)), A)
    one = clustered(A, np.zeros(8, dtype=int))
    np.testing.assert_allclose(one, np.broadcast_to(A.mean(0), A.shape), atol=1e-15)
    labels = np.array([0, 0, 1, 1, 1, 2, 2, 0])
    C = clustered(A, labels)
    # the mean is the Frobenius optimum for the grouping: any member row as the shared row is worse
    for c in range(3):
        idx = labels == c
        for i in np.flatnonzero(idx):
            assert np.sum((A[idx] - C[idx]) ** 2) <= np.sum((A[idx] - A[i]) ** 2) + 1e-15


# ------------------------------------------------------------------------ JS error
@settings(max_examples=40, deadline=None)
@given(matrices, st.data())
def test_js_error_against_scipy(A, data):
    n = A.shape[0]
    k = data.draw(st.integers(1, n))
    approx, _ = low_rank(A, max(1, k // 2))
    P = np.clip(approx, 0, None)
    ref = []
    for i in range(n):
        if P[i].sum() <= 0:
            ref.append(1.0)
        else:
            ref.append(jensenshannon(A[i], P[i] / P[i].sum(), base=2))
    assert float(js_error(A, approx)) == pytest.approx(float(np.mean(ref)), abs=2e-7)
    # the closed form for support approximations agrees with the general one
    T = top_k(A, k)
    assert float(js_error_support(T.sum(1), A.sum(1))) == pytest.approx(
        float(js_error(A, T)), abs=2e-7
    )
    assert float(js_error_support(A.sum(1), A.sum(1))) == 0.0


# --------------------------------------------------------------------- the result
def _attention(n: int = 16, causal: bool = False) -> Attention:
    rng = np.random.default_rng(11)
    W = np.empty((2, 3, n, n))
    for li in range(2):
        for h in range(3):
            W[li, h] = _stochastic(
                int(rng.integers(2**31)), n, conc=[0.05, 0.5, 5.0][h], causal=causal
            )
    return Attention.from_weights(W, [f"w{i}" for i in range(n)], causal=causal, text="synthetic")


NO_KERNEL = ["band_sparse", "top_k", "low_rank", "cluster_kmeans", "cluster_h0"]


def test_result_round_trip_and_tables(tmp_path):
    r = approximability(_attention(), families=NO_KERNEL, budgets=[4, 8])
    assert r.kind == "approximability" and r.families == tuple(NO_KERNEL) and r.budgets == (4, 8)
    cols = r.summary()
    assert cols.n_rows == 2 * 3 * 2
    assert list(cols)[:3] == ["layer", "head", "budget"]
    assert {"top_k", "top_k_js", "winner", "winner_js", "entropy_norm", "label", "rank"} <= set(
        cols
    )
    r.save(tmp_path / "r")
    meta, arrays = load_payload(tmp_path / "r")
    assert meta["kind"] == "approximability"
    assert Approximability._from_payload(meta, arrays) == r
    back = at.load_result(tmp_path / "r")
    assert isinstance(back, Approximability) and back == r and back.provenance == r.provenance
    other = approximability(_attention(), families=NO_KERNEL, budgets=[4])
    assert other != r
    assert r.scale_summary().n_rows == 6
    assert list(r.scale_summary())[:3] == ["layer", "head", "scale"]
    d = r.to_dict()
    assert set(d["win_counts"]) == {"4", "8"} and len(d["summary"]) == 12


def test_result_numbers_are_the_families():
    att = _attention()
    r = approximability(att, families=NO_KERNEL, budgets=[6])
    A = att.weights[1, 2].astype(np.float64)
    assert r.error("top_k", 6)[1, 2] == pytest.approx(
        float(relative_error(A, top_k(A, 3))), abs=1e-12
    )
    assert r.error("low_rank", 6)[1, 2] == pytest.approx(
        float(relative_error(A, low_rank(A, 3)[0])), abs=1e-12
    )
    assert r.error("low_rank", 6)[1, 2] == pytest.approx(
        math.sqrt(np.sum(r.singular_values[1, 2, 3:] ** 2)) / np.linalg.norm(A), abs=1e-12
    )
    assert (
        r.error("band_sparse", 6)[1, 2] <= r.error("top_k", 6)[1, 2] + 0.5
    )  # sane, both in [0, 1]
    assert np.all(r.sizes["h0_clusters"] <= 5) and np.all(r.sizes["kmeans_clusters"] <= 5)
    win = r.winners(6)
    errs = np.stack([r.error(f, 6) for f in r.families])
    np.testing.assert_array_equal(
        errs.min(0), np.take_along_axis(errs, np.argmin(errs, 0)[None], 0)[0]
    )
    assert set(win.ravel()) <= set(r.families)


def test_bad_input():
    att = _attention(8)
    with pytest.raises(OutOfRangeError, match="larger than the text's 8 tokens"):
        approximability(att, families=NO_KERNEL, budgets=[9])
    with pytest.raises(InvalidInputError, match="families"):
        approximability(att, families=["band"])
    with pytest.raises(InvalidInputError, match="kernel family needs the text"):
        approximability(Attention.from_weights(att.weights, att.tokens), families=["kernel"])
    with pytest.raises(InvalidInputError):
        approximability(att, families=NO_KERNEL, draws=0)
    with pytest.raises(InvalidInputError, match="scale must be a JS distance"):
        approximability(att, families=["cluster_h0"], scale=1.5)
    with pytest.raises(InvalidInputError):
        approximability(np.eye(3))
    r = approximability(att, families=["top_k"])  # default budgets: those up to n
    assert r.budgets == (4, 8)


def test_scatterbrain_check_on_planted_heads():
    # low-entropy heads: one-hot-like rows (sparse wins); high-entropy heads: rank-1 near-uniform
    # plus a small rank-2 perturbation (low rank wins): the check must say it holds
    rng = np.random.default_rng(3)
    n, heads = 24, []
    for _ in range(8):
        A = np.full((n, n), 1e-4)
        A[np.arange(n), rng.integers(0, n, n)] = 1.0
        heads.append(A / A.sum(1, keepdims=True))
    for _ in range(8):
        u, v = rng.random(n), rng.random(n)
        A = 1.0 + 0.3 * np.outer(u - 0.5, v - 0.5)
        heads.append(A / A.sum(1, keepdims=True))
    att = Attention.from_weights(np.stack(heads)[None], [f"t{i}" for i in range(n)])
    r = approximability(att, families=["top_k", "low_rank"], budgets=[4])
    sb = r.scatterbrain()[4]["low_rank"]
    assert (
        sb["holds"]
        and sb["spearman"] > 0.5
        and sb["sparse_wins_low"] == 1.0
        and sb["other_wins_high"] == 1.0
    )


def test_result_protocol(tmp_path):
    import dataclasses
    import json

    from attntopo.errors import ResultFormatError
    from attntopo.io import save_payload

    r = approximability(_attention(10), families=NO_KERNEL, budgets=[4])
    # equality sees every compared field and ignores provenance
    changes = {
        "model": "x",
        "text": "x",
        "tokens": ["x"] * 10,
        "causal": True,
        "layers": (0, 9),
        "heads": (0, 1, 9),
        "families": tuple(reversed(NO_KERNEL)),
        "budgets": (5,),
        "scale": 0.3,
        "settings": {"draws": 9},
    }
    for name in r._compared_fields():
        value = getattr(r, name)
        if name in changes:
            new = changes[name]
        elif name == "sizes":
            new = {**value, "rank": value["rank"] + 1}
        elif name == "labels":
            new = np.where(value == value.flat[0], "changed", value)
        else:
            new = np.asarray(value).copy()
            new.reshape(-1)[0] = 0.123 if new.dtype.kind == "f" else new.reshape(-1)[0] + 1
        assert dataclasses.replace(r, **{name: new}) != r, name
    assert dataclasses.replace(r, provenance={}) == r
    json.dumps(r.to_dict(), allow_nan=False)
    assert len(r.to_pandas()) == r.summary().n_rows
    # a saved result with an array of the wrong shape is refused in one line
    meta, arrays = r._payload()
    arrays["errors"] = arrays["errors"][:, :, :1]
    save_payload(tmp_path / "bad", {"kind": r.kind, **meta}, arrays)
    with pytest.raises(ResultFormatError, match="'errors' must have shape"):
        at.load_result(tmp_path / "bad")
    # a result saved before the first release (the per-head scales under 'scale_eps'): refused
    # in one line naming the rewrite
    meta, arrays = r._payload()
    arrays["scale_eps"] = arrays.pop("scales")
    save_payload(tmp_path / "old", {"kind": r.kind, **meta}, arrays)
    with pytest.raises(ResultFormatError) as info:
        at.load_result(tmp_path / "old")
    msg = str(info.value)
    assert "saved before the first release" in msg and "'scale_eps', now 'scales'" in msg
    assert msg.endswith("compute it again and save it") and "\n" not in msg
