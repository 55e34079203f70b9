"""Tests of attntopo.topology.persistence / engines / _pool."""

from __future__ import annotations

import importlib
import math
import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

from attntopo.errors import InvalidInputError, InvalidMatrixError, MissingDependencyError
from attntopo.topology import (
    ENGINES,
    Diagram,
    _pool,
    available_engines,
    engines,
    persistence,
    persistence_batch,
    pool_shutdown,
)

# the package attribute `persistence` is the function; the module is in sys.modules
persistence_module = importlib.import_module("attntopo.topology.persistence")

ALL_ENGINES = [e for e in ("auto", "giotto", "ripser", "gudhi") if e in available_engines()]
INF = math.inf
SQ2 = math.sqrt(2.0)


# ----------------------------------------------------------------- helpers
def euclid(n: int, dim: int = 2, seed: int = 0) -> np.ndarray:
    X = np.random.default_rng(seed).normal(size=(n, dim))
    return squareform(pdist(X))


def js(n: int, seed: int = 0, alpha: float = 0.3) -> np.ndarray:
    """JS distances (base 2) between n random Dirichlet rows over n keys."""
    P = np.random.default_rng(seed).dirichlet(np.full(n, alpha), size=n)
    return squareform(pdist(P, "jensenshannon") / np.sqrt(np.log(2)))


def lattice(n: int, seed: int = 0) -> np.ndarray:
    """Taxicab distances between random integer points: many ties and duplicates."""
    X = np.random.default_rng(seed).integers(0, 4, size=(n, 2))
    return squareform(pdist(X, "cityblock"))


def square() -> np.ndarray:
    return np.array(
        [[0, 1, SQ2, 1], [1, 0, 1, SQ2], [SQ2, 1, 0, 1], [1, SQ2, 1, 0]], dtype=np.float64
    )


def all_engines(D, **kw) -> list[Diagram]:
    return [persistence(D, engine=e, **kw) for e in ALL_ENGINES]


def mst_lengths(D: np.ndarray) -> np.ndarray:
    """Edge lengths of a minimum spanning tree.

    scipy reads 0 (and tiny values) as "no edge", so the tree is computed on
    the order-preserving weights 1 + rank(D) (an MST only depends on the order
    of the weights) and its lengths are read back from D.
    """
    _, inv = np.unique(D, return_inverse=True)
    W = 1.0 + inv.reshape(D.shape).astype(np.float64)
    np.fill_diagonal(W, 0.0)
    T = minimum_spanning_tree(W).tocoo()
    return np.sort(D[T.row, T.col])


def test_engines_registry():
    assert list(ENGINES) == ["auto", "giotto", "ripser", "gudhi"]
    assert available_engines()[0] == "auto"
    assert ENGINES["ripser"].pip == "ripser"
    assert persistence(square()).engine == "auto"


# ------------------------------------------------------------ engines agree
@pytest.mark.parametrize("kind", ["euclid", "js", "lattice"])
@pytest.mark.parametrize("n", [2, 7, 24])
@pytest.mark.parametrize("maxdim", [0, 1, 2])
@pytest.mark.parametrize("cut", [False, True])
def test_engines_agree_bit_for_bit(kind, n, maxdim, cut):
    D = {"euclid": euclid, "js": js, "lattice": lattice}[kind](n, seed=n + maxdim)
    threshold = float(np.median(D[np.triu_indices(n, 1)])) if cut else INF
    if threshold <= 0:
        threshold = 1.0
    dgms = all_engines(D, maxdim=maxdim, threshold=threshold)
    assert len(ALL_ENGINES) >= 2
    for other in dgms[1:]:
        assert other == dgms[0], (other, dgms[0])
    for g in dgms:
        assert len(g) == maxdim + 1 and g.threshold == threshold
        assert np.all(g[0][:, 0] == 0.0)
        # every value is an exact entry of D
        vals = np.concatenate([a[np.isfinite(a)] for a in g])
        assert np.isin(vals, np.concatenate([[0.0], D.ravel()])).all()
        for a in g:
            assert np.all(a[:, 1] > a[:, 0])  # zero-length bars dropped


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["euclid", "js"])
def test_engines_agree_larger(kind):
    D = {"euclid": euclid, "js": js}[kind](70, seed=3)
    for threshold in (INF, 0.8 * float(D.max())):
        dgms = all_engines(D, maxdim=2, threshold=threshold)
        assert all(g == dgms[0] for g in dgms)


def test_matches_public_giotto_api():
    """The direct core call + ranks equals gph.ripser_parallel on raw distances."""
    from gph import ripser_parallel

    for D, thr in [(js(40, seed=1), INF), (euclid(30, seed=2), 1.0), (lattice(20), 2.0)]:
        ours = persistence(D, maxdim=2, threshold=thr)
        raw = ripser_parallel(D, metric="precomputed", maxdim=2, thresh=thr)["dgms"]
        ref = Diagram([d[d[:, 1] > d[:, 0]] for d in raw], maxdim=2, threshold=thr)
        assert ours.allclose(ref, atol=1e-6)


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_float32_fallback_path_snaps_to_exact(engine, monkeypatch):
    """Beyond 2**24 distinct distances the engines get float32 distances and snap."""
    D = euclid(20, seed=9)
    ref = persistence(D, maxdim=2, engine=engine)
    cut = persistence(D, maxdim=1, threshold=1.0, engine=engine)
    monkeypatch.setattr(engines, "_MAX_EXACT_RANKS", 4)
    assert persistence(D, maxdim=2, engine=engine) == ref
    assert persistence(D, maxdim=1, threshold=1.0, engine=engine) == cut


def test_matches_raw_ripser_within_float32():
    ripser = pytest.importorskip("ripser")
    D = euclid(30, seed=5)
    ours = persistence(D, maxdim=1, engine="ripser")
    ref = Diagram.from_ripser(ripser.ripser(D, distance_matrix=True, maxdim=1)["dgms"])
    assert ours.allclose(ref, atol=1e-6)


# --------------------------------------------------------- known examples
@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_square_cycle(engine):
    g = persistence(square(), maxdim=1, engine=engine)
    np.testing.assert_array_equal(g[0], [[0, 1], [0, 1], [0, 1], [0, INF]])
    np.testing.assert_array_equal(g[1], [[1, SQ2]])
    cut = persistence(square(), maxdim=1, threshold=1.2, engine=engine)
    np.testing.assert_array_equal(cut[1], [[1, INF]])
    np.testing.assert_array_equal(cut[0], g[0])
    # cut exactly at the diagonal: the edge is in (<= threshold), the cycle dies
    at = persistence(square(), maxdim=1, threshold=SQ2, engine=engine)
    np.testing.assert_array_equal(at[1], [[1, SQ2]])
    below = persistence(square(), maxdim=1, threshold=0.5, engine=engine)
    np.testing.assert_array_equal(below[0], [[0, INF]] * 4)
    assert below.counts().tolist() == [4, 0]


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_hexagon_gives_h2(engine):
    """Regular hexagon: H1 [1, sqrt 3]; at sqrt 3 the complex is an octahedron (H2 until 2)."""
    ang = np.arange(6) * np.pi / 3
    D = squareform(pdist(np.column_stack([np.cos(ang), np.sin(ang)])))
    D = np.round(D, 12)  # exact ties between equal side lengths
    g = persistence(D, maxdim=2, engine=engine)
    assert g.counts().tolist() == [6, 1, 1]
    np.testing.assert_allclose(g[1], [[1, math.sqrt(3)]], rtol=1e-9)
    np.testing.assert_allclose(g[2], [[math.sqrt(3), 2]], rtol=1e-9)


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_two_clusters(engine):
    x = np.array([0.0, 0.1, 0.25, 10.0, 10.5])
    D = np.abs(x[:, None] - x[None, :])
    g = persistence(D, maxdim=1, engine=engine)
    np.testing.assert_array_equal(g[0][:, 1], [D[0, 1], D[1, 2], D[3, 4], D[2, 3], INF])
    assert g[1].shape == (0, 2)
    assert g.betti(1.0).tolist() == [2, 0]


@pytest.mark.parametrize("engine", ALL_ENGINES)
@pytest.mark.parametrize("maxdim", [0, 1, 2, 3])
def test_single_point(engine, maxdim):
    g = persistence(np.zeros((1, 1)), maxdim=maxdim, engine=engine)
    np.testing.assert_array_equal(g[0], [[0, INF]])
    assert g.counts().tolist() == [1] + [0] * maxdim


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_two_points_and_duplicates(engine):
    g = persistence([[0, 0.3], [0.3, 0]], engine=engine)
    np.testing.assert_array_equal(g[0], [[0, 0.3], [0, INF]])
    dup = persistence(np.zeros((3, 3)), engine=engine)  # three copies of one point
    np.testing.assert_array_equal(dup[0], [[0, INF]])  # zero-length bars dropped


def test_torch_and_list_inputs():
    torch = pytest.importorskip("torch")
    D = js(12, seed=4)
    ref = persistence(D)
    assert persistence(torch.tensor(D)) == ref
    assert persistence(torch.tensor(D, dtype=torch.float32)).allclose(ref, atol=1e-6)
    assert persistence(D.tolist()) == ref


def test_nearly_symmetric_is_symmetrized():
    D = js(15, seed=6)
    E = D.copy()
    E[0, 1] += 1e-12
    g = persistence(E)
    sym = (E + E.T) / 2
    assert g == persistence(sym)


def test_maxdim3_small():
    g = persistence(euclid(9, dim=4, seed=1), maxdim=3)
    assert len(g) == 4
    assert all(h == g for h in all_engines(euclid(9, dim=4, seed=1), maxdim=3))


# ------------------------------------------------------------ property: MST
@st.composite
def point_clouds(draw):
    n = draw(st.integers(2, 14))
    dim = draw(st.integers(1, 3))
    X = draw(
        arrays(
            np.float64,
            (n, dim),
            elements=st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=32),
        )
    )
    return squareform(pdist(X))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(point_clouds())
def test_h0_deaths_are_mst_edges(D):
    g = persistence(D, maxdim=0)
    edges = mst_lengths(D)
    np.testing.assert_allclose(np.sort(g.finite(0)[:, 1]), edges[edges > 0], rtol=0, atol=1e-12)
    assert len(g.infinite(0)) == 1
    assert np.all(g[0][:, 0] == 0)


@settings(max_examples=40, deadline=None)
@given(point_clouds(), st.floats(0.01, 5.0))
def test_h0_with_threshold_counts_components(D, t):
    g = persistence(D, maxdim=1, threshold=t)
    edges = mst_lengths(D)
    np.testing.assert_allclose(
        np.sort(g.finite(0)[:, 1]), edges[(edges > 0) & (edges <= t)], rtol=0, atol=1e-12
    )
    n_comp, _ = connected_components((D <= t).astype(np.int8), directed=False)
    assert len(g.infinite(0)) == n_comp
    assert np.all(g.finite(1)[:, 1] <= t)


# --------------------------------------------------------------- validation
def _raises(exc, match, fn, *args, **kw):
    with pytest.raises(exc, match=match) as info:
        fn(*args, **kw)
    msg = str(info.value)
    assert "\n" not in msg and msg
    return msg


@pytest.mark.parametrize(
    "D, match",
    [
        (np.zeros((3, 4)), r"expected a square \(n, n\) distance matrix, got shape \(3, 4\)"),
        (np.zeros(3), r"got shape \(3,\)"),
        (np.zeros((2, 3, 3)), r"got shape \(2, 3, 3\)"),
        (np.zeros((0, 0)), r"at least one point"),
        (np.array([[0, np.nan], [np.nan, 0]]), r"must be finite.*NaN/inf"),
        (np.array([[0, np.inf], [np.inf, 0]]), r"must be finite.*threshold="),
        (np.array([[0, -1.0], [-1.0, 0]]), r"non-negative"),
        (np.array([[0, 1.0], [2.0, 0]]), r"symmetric.*\(D \+ D\.T\) / 2"),
        (np.array([[0.1, 1.0], [1.0, 0]]), r"zero diagonal.*1e-12"),
        ([["a", "b"], ["c", "d"]], r"matrix of real numbers"),
        (np.array([[0, 1j], [1j, 0]]), r"matrix of real numbers"),
    ],
)
def test_matrix_validation(D, match):
    _raises(InvalidMatrixError, match, persistence, D)


def test_matrix_validation_tolerances():
    D = np.array([[0, 1.0], [1.0 + 1e-10, 0]])  # within 1e-9 relative
    persistence(D)
    D = np.array([[1e-13, 1.0], [1.0, 0]])
    persistence(D)


@pytest.mark.parametrize("maxdim", [-1, 4, 1.5, True, "1", None])
def test_maxdim_validation(maxdim):
    _raises(
        InvalidInputError, r"maxdim must be an int in 0\.\.3", persistence, square(), maxdim=maxdim
    )


@pytest.mark.parametrize("threshold", [0, -1.0, float("nan"), "a", None, True])
def test_threshold_validation(threshold):
    _raises(
        InvalidInputError,
        r"threshold must be a positive number",
        persistence,
        square(),
        maxdim=1,
        threshold=threshold,
    )


def test_engine_and_threads_validation(monkeypatch):
    D = square()
    _raises(
        InvalidInputError,
        r"unknown persistence engine 'foo'; allowed: 'auto', 'giotto'",
        persistence,
        D,
        engine="foo",
    )
    _raises(InvalidInputError, r"n_jobs must be None or an int >= 1", persistence, D, n_jobs=0)
    monkeypatch.setitem(engines._AVAILABLE_CACHE, "ripser", False)
    msg = _raises(MissingDependencyError, r"pip install ripser", persistence, D, engine="ripser")
    assert "'ripser'" in msg
    assert "ripser" not in available_engines()
    monkeypatch.setitem(engines._AVAILABLE_CACHE, "gph", False)
    assert persistence(square()).engine == "gudhi"  # default falls back
    monkeypatch.setitem(engines._AVAILABLE_CACHE, "gudhi", False)
    _raises(MissingDependencyError, r"no persistence engine is installed", persistence, D)


def test_batch_validation():
    good = square()
    bad = np.array([[0, 1.0], [2.0, 0]])
    _raises(
        InvalidMatrixError,
        r"^Ds\[2\]: distance matrix must be symmetric",
        persistence_batch,
        [good, good, bad],
    )
    _raises(
        InvalidMatrixError,
        r"^Ds\[1\]: expected a square",
        persistence_batch,
        [good, np.zeros((2, 3))],
    )
    _raises(InvalidMatrixError, r"for one matrix use persistence\(D\)", persistence_batch, good)
    _raises(InvalidMatrixError, r"shape \(\.\.\., n, n\)", persistence_batch, np.zeros((2, 3, 4)))
    _raises(InvalidMatrixError, r"sequence of \(n, n\) matrices", persistence_batch, 3)
    arr = np.stack([good, good])
    arr[1, 0, 0] = 1
    _raises(
        InvalidMatrixError,
        r"^Ds\[1\]: distance matrix must have a zero diagonal",
        persistence_batch,
        arr,
    )
    for n_jobs in (0, -2, 1.5, True):
        _raises(InvalidInputError, r"n_jobs must be None", persistence_batch, [good], n_jobs=n_jobs)
    _raises(InvalidInputError, r"maxdim", persistence_batch, [good], maxdim=7)


# -------------------------------------------------------------------- batch
def _mixed(k: int = 20) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(k):
        n = int(rng.integers(1, 40))
        out.append(js(n, seed=i) if i % 2 else euclid(n, seed=i))
    return out


@pytest.fixture
def force_pool(monkeypatch):
    monkeypatch.setattr(persistence_module, "_WARM_MIN_MS", 0.0)
    monkeypatch.setattr(persistence_module, "_COLD_MIN_MS", 0.0)
    yield
    pool_shutdown()


def test_batch_serial_equals_single():
    Ds = _mixed()
    ref = [persistence(D, maxdim=1) for D in Ds]
    out = persistence_batch(Ds, maxdim=1, n_jobs=1)
    assert out == ref
    assert persistence_batch([], n_jobs=1) == []


def test_batch_pool_equals_single(force_pool):
    Ds = _mixed()
    ref = [persistence(D, maxdim=1, threshold=0.5) for D in Ds]
    pool_shutdown()
    out = persistence_batch(Ds, maxdim=1, threshold=0.5, n_jobs=2)
    assert out == ref
    assert _pool.pool_size() == 2
    # the pool is reused
    pids = [w.proc.pid for w in _pool._POOL.workers]
    assert persistence_batch(Ds, maxdim=1, threshold=0.5, n_jobs=2) == ref
    assert [w.proc.pid for w in _pool._POOL.workers] == pids
    # another engine through the pool
    assert persistence_batch(Ds[:6], engine="gudhi", n_jobs=2) == [persistence(D) for D in Ds[:6]]


def test_batch_diagrams_are_like_constructed_ones():
    # the batch wraps engine output without Diagram's checks: same arrays, same guarantees
    Ds = _mixed()
    for g, D in zip(persistence_batch(Ds, maxdim=1, n_jobs=1), Ds):
        ref = persistence(D, maxdim=1)
        assert g == ref and hash(g) == hash(ref) and g.maxdim == 1
        rebuilt = Diagram(list(g), maxdim=g.maxdim, threshold=g.threshold, engine=g.engine)
        assert rebuilt == g
        for a in g:
            assert a.dtype == np.float64 and a.flags.c_contiguous and not a.flags.writeable
            order = np.lexsort((a[:, 1], a[:, 0]))
            assert np.array_equal(order, np.arange(a.shape[0]))


def test_batch_array_input_order(force_pool):
    A = np.stack([np.stack([js(10, seed=3 * li + h) for h in range(3)]) for li in range(2)])
    out = persistence_batch(A, n_jobs=2)
    assert len(out) == 6
    for k, g in enumerate(out):
        assert g == persistence(A[k // 3, k % 3])


def test_batch_after_torch_in_parent(force_pool):
    torch = pytest.importorskip("torch")
    x = torch.ones(100, 100) @ torch.ones(100, 100)
    assert float(x[0, 0]) == 100.0
    pool_shutdown()
    Ds = _mixed()
    assert persistence_batch(Ds, n_jobs=2) == [persistence(D) for D in Ds]


def test_batch_recovers_from_dead_worker(force_pool, monkeypatch):
    Ds = _mixed(8)
    ref = [persistence(D) for D in Ds]
    assert persistence_batch(Ds, n_jobs=2) == ref
    victim = _pool._POOL.workers[0].proc
    os.kill(victim.pid, signal.SIGKILL)  # a worker this test session started
    victim.wait(timeout=10)
    assert persistence_batch(Ds, n_jobs=2) == ref  # ensure() replaces the dead worker
    assert _pool.pool_size() == 2
    # a worker dying while it is in use: restarted once, the chunk is retried
    for w in _pool._POOL.workers:  # kill both: whichever gets a chunk finds it dead
        os.kill(w.proc.pid, signal.SIGKILL)
        w.proc.wait(timeout=10)
    monkeypatch.setattr(_pool._Pool, "ensure", lambda self, n: None)
    assert persistence_batch(Ds, n_jobs=2) == ref
    assert _pool.pool_size() >= 1


def test_batch_falls_back_to_serial_when_pool_fails(force_pool, monkeypatch):
    pool_shutdown()

    def boom(self, preload):
        raise _pool.PoolStartError("no processes here")

    monkeypatch.setattr(_pool._Worker, "__init__", boom)
    Ds = _mixed(5)
    with pytest.warns(RuntimeWarning, match="running serially"):
        out = persistence_batch(Ds, n_jobs=2)
    assert out == [persistence(D) for D in Ds]


def test_small_batch_stays_serial():
    pool_shutdown()
    out = persistence_batch([square()] * 3)
    assert _pool.pool_size() == 0
    assert all(g == persistence(square()) for g in out)
