"""The stacked kernel ``engines.compute_many``: vectorized ranks, radii and thresholds for many
same-size matrices, the engine once per matrix, outputs mapped back together.

Checked against an independent reference per matrix (``np.unique`` ranks, giotto-ph's public
``ripser_parallel`` on the rank matrix, each bar mapped back by hand) and against
``np.unique`` for the ranks themselves."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attntopo.topology import engines, persistence, persistence_batch

INF = math.inf


def _reference(D: np.ndarray, maxdim: int, threshold: float) -> list[np.ndarray]:
    """Diagrams of one matrix through giotto-ph's public API on its ranks, mapped back."""
    from gph import ripser_parallel

    n = D.shape[0]
    i, j = np.triu_indices(n, 1)
    values, inv = np.unique(np.concatenate([[0.0], D[i, j]]), return_inverse=True)
    R = np.zeros((n, n), dtype=np.float32)
    R[i, j] = inv[1:]
    R[j, i] = inv[1:]
    thr = (
        INF
        if not np.isfinite(threshold)
        else float(np.searchsorted(values, threshold, "right") - 1)
    )
    raw = ripser_parallel(R, metric="precomputed", maxdim=maxdim, thresh=thr)["dgms"]
    out = []
    for d in range(maxdim + 1):
        a = np.asarray(raw[d], dtype=np.float64).reshape(-1, 2)
        b = np.where(
            np.isfinite(a),
            values[np.clip(np.rint(np.nan_to_num(a, posinf=0)).astype(int), 0, None)],
            INF,
        )
        b = b[b[:, 1] > b[:, 0]]
        out.append(b[np.lexsort((b[:, 1], b[:, 0]))])
    return out


@st.composite
def stacks(draw):
    n = draw(st.integers(2, 12))
    m = draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["random", "ties", "zeros"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    mats = []
    for _ in range(m):
        X = rng.random((n, n))
        if kind == "ties":
            X = np.round(X * 3) / 3
        elif kind == "zeros":
            X = rng.integers(0, 2, (n, n)).astype(float)
        D = np.triu(X, 1)
        mats.append(D + D.T)
    threshold = draw(st.sampled_from([INF, 0.0, 0.4, 0.7]))
    return np.stack(mats), draw(st.integers(0, 2)), threshold


STACK_ENGINES = [e for e in ("giotto", "ripser", "auto") if e in engines.available_engines()]


@pytest.mark.parametrize("engine", STACK_ENGINES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=stacks())
def test_compute_many_matches_an_independent_reference(engine, case):
    X, maxdim, threshold = case
    out = engines.compute_many(engines.condense(X), X.shape[1], maxdim, threshold, engine)
    assert len(out) == X.shape[0]
    for D, got in zip(X, out):
        ref = _reference(D, maxdim, threshold)
        assert len(got) == maxdim + 1
        for g, r in zip(got, ref):
            assert g.dtype == np.float64 and g.flags.c_contiguous
            np.testing.assert_array_equal(g, r)


@settings(max_examples=60, deadline=None)
@given(stacks())
def test_ranks_equal_numpy_unique_per_row(case):
    X = case[0]
    C = engines.condense(X)
    units, V, nvals = engines._rank_stack(C)
    for k, row in enumerate(C):
        values, inv = np.unique(np.concatenate([[0.0], row]), return_inverse=True)
        np.testing.assert_array_equal(units[k], inv[1:].astype(np.float32))
        assert nvals[k] == values.size
        np.testing.assert_array_equal(V[k, : values.size], values)
        assert np.all(np.isinf(V[k, values.size :]))


@settings(max_examples=40, deadline=None)
@given(stacks())
def test_radius_is_the_enclosing_radius_in_ranks(case):
    X = case[0]
    n = X.shape[1]
    prepared, V, _ = engines._prepare_exact(engines.condense(X), n, INF)
    for D, P, v in zip(X, prepared, V):
        r = D.max(axis=1).min()  # min_i max_j D[i, j], the diagonal being 0
        assert v[0] == 0.0 and v[int(P.radius)] == r


def test_condense_symmetrizes_only_skewed_matrices():
    rng = np.random.default_rng(4)
    A = rng.random((5, 5))
    S = np.triu(A, 1) + np.triu(A, 1).T
    skew = S.copy()
    skew[0, 3] += 1e-12
    C = engines.condense(np.stack([S, skew]))
    i, j = np.triu_indices(5, 1)
    np.testing.assert_array_equal(C[0], S[i, j])
    np.testing.assert_array_equal(C[1], ((skew + skew.T) / 2)[i, j])
    # a list of matrices is the same as their stack
    np.testing.assert_array_equal(engines.condense([S, skew]), C)


@pytest.mark.parametrize(
    "engine", [e for e in ("auto", "giotto", "ripser", "gudhi") if e in engines.available_engines()]
)
def test_every_engine_through_the_stack(engine):
    rng = np.random.default_rng(7)
    X = rng.random((4, 9, 9))
    X = np.triu(X, 1) + np.transpose(np.triu(X, 1), (0, 2, 1))
    out = engines.compute_many(engines.condense(X), 9, 1, INF, engine)
    for D, got in zip(X, out):
        assert persistence(D, maxdim=1, engine="giotto") == persistence(D, maxdim=1, engine=engine)
        for g, r in zip(got, _reference(D, 1, INF)):
            np.testing.assert_array_equal(g, r)


def test_single_points_and_mixed_sizes_in_one_batch():
    rng = np.random.default_rng(2)
    sizes = [1, 5, 3, 5, 1, 8, 3]
    mats = []
    for n in sizes:
        A = np.triu(rng.random((n, n)), 1)
        mats.append(A + A.T)
    got = persistence_batch(mats, maxdim=1, n_jobs=1)
    for D, g in zip(mats, got):
        assert g == persistence(D, maxdim=1)
        if D.shape[0] > 1:
            for a, r in zip(g, _reference(D, 1, INF)):
                np.testing.assert_array_equal(a, r)


def test_serial_batch_reports_every_matrix():
    rng = np.random.default_rng(3)
    mats = []
    for n in [4] * 30 + [6] * 7:
        A = np.triu(rng.random((n, n)), 1)
        mats.append(A + A.T)
    seen = []
    persistence_batch(
        mats, n_jobs=1, progress=lambda done, total, stage: seen.append((done, total))
    )
    assert seen and seen[-1] == (37, 37)
    assert all(b[0] >= a[0] for a, b in zip(seen, seen[1:]))


# ------------------------------------------------------------------ the "auto" engine
def _count_calls(monkeypatch) -> dict[str, int]:
    calls = {"ripser": 0, "giotto": 0}
    for name in calls:
        real = getattr(engines, f"_{name}")

        def counted(*a, _real=real, _name=name, **kw):
            calls[_name] += 1
            return _real(*a, **kw)

        monkeypatch.setattr(engines, f"_{name}", counted)
    return calls


def _js_stack(n: int, m: int = 3, seed: int = 0) -> np.ndarray:
    from attntopo.distances import token_distances

    P = np.random.default_rng(seed).dirichlet(np.full(n, 0.3), size=(m, n))
    return token_distances(P)


@pytest.mark.skipif(engines._ripser_core() is None, reason="ripser.py is not installed")
def test_auto_gives_small_one_thread_matrices_to_ripser_core_and_the_rest_to_giotto(monkeypatch):
    calls = _count_calls(monkeypatch)
    limit = engines.AUTO_RIPSER_MAX_N
    for n, threads, expect in ((limit, 1, "ripser"), (limit + 1, 1, "giotto"), (12, 2, "giotto")):
        X = _js_stack(n)
        before = dict(calls)
        out = engines.compute_many(engines.condense(X), n, 1, INF, "auto", threads)
        assert calls[expect] - before[expect] == len(X), (n, threads, calls)
        other = "giotto" if expect == "ripser" else "ripser"
        assert calls[other] == before[other]
        ref = engines.compute_many(engines.condense(X), n, 1, INF, "giotto", threads)
        for got, want in zip(out, ref):
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
    # without ripser.py the default is giotto-ph everywhere
    monkeypatch.setattr(engines, "_RIPSER_CORE", False)
    before = dict(calls)
    engines.compute_many(engines.condense(_js_stack(10)), 10, 1, INF, "auto")
    assert calls["ripser"] == before["ripser"] and calls["giotto"] == before["giotto"] + 3


@pytest.mark.skipif(engines._ripser_core() is None, reason="ripser.py is not installed")
@pytest.mark.parametrize("threshold", [INF, 0.35])
def test_ripser_core_path_agrees_with_ripser_public_api(threshold):
    """The core call (condensed ranks, the enclosing radius as the cut) against ripser.py's
    own wrapper on the float64 distances themselves, which rounds them to float32: equal within
    float32's rounding (2**-24 relative) on matrices without ties."""
    from ripser import ripser

    for seed in range(4):
        X = _js_stack(20, m=4, seed=seed)
        out = engines.compute_many(engines.condense(X), 20, 2, threshold, "ripser")
        for D, got in zip(X, out):
            ref = ripser(D, maxdim=2, distance_matrix=True, thresh=threshold)["dgms"]
            for d in range(3):
                r = ref[d][ref[d][:, 1] > ref[d][:, 0]]
                r = r[np.lexsort((r[:, 1], r[:, 0]))]
                assert got[d].shape == r.shape, (seed, d)
                np.testing.assert_allclose(got[d], r, rtol=2**-22, atol=0)
