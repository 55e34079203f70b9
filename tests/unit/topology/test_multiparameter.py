"""Two-parameter (distance × time) persistence: multipers against the slice reference."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

from attntopo.errors import InvalidInputError, MissingDependencyError
from attntopo.topology import multiparameter as mpm
from attntopo.topology import persistence
from attntopo.topology.multiparameter import (
    HilbertFunction,
    arrival_times,
    hilbert_from_diagrams,
    hilbert_function,
    signed_measure,
)

needs_multipers = pytest.mark.skipif(
    not mpm.multipers_available(), reason="multipers not installed"
)


def _metric(n: int, seed: int) -> np.ndarray:
    """Distances between random points in the plane: plenty of H0 and H1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X[: n // 2] += [3.0, 0.0]
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    return (D + D.T) / 2


def _betti(dgm, d: int, eps: float) -> int:
    bars = np.asarray(dgm[d])
    return int(np.sum((bars[:, 0] <= eps) & (bars[:, 1] > eps)))


SQUARE = np.array(
    [[0, 1, 2**0.5, 1], [1, 0, 1, 2**0.5], [2**0.5, 1, 0, 1], [1, 2**0.5, 1, 0]], dtype=float
)


# ------------------------------------------------------------------ slices (reference)
def test_arrival_times():
    np.testing.assert_array_equal(arrival_times(3), [1.0, 2.0, 3.0])


def test_square_by_hand():
    hf = hilbert_function(SQUARE, backend="slices")
    np.testing.assert_array_equal(hf.times, [1, 2, 3, 4])
    np.testing.assert_array_equal(hf.scales, [0.0, 1.0, 2**0.5])
    # H1: the loop exists only when all four points are there, for 1 <= eps < sqrt 2
    np.testing.assert_array_equal(hf.betti(1), [[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]])
    # H0 at eps = 0: one component per point present
    np.testing.assert_array_equal(hf.betti(0)[0], [1, 2, 3, 4])
    assert hf.at(1.2, 4, dim=1) == 1 and hf.at(1.2, 3.5, dim=1) == 0
    assert hf.at(-1.0, 4, dim=0) == 0 and hf.at(0.5, 0.5, dim=0) == 0  # nothing yet


def test_slices_agree_with_each_prefix_diagram():
    D = _metric(24, 0)
    hf = hilbert_function(D, backend="slices")
    rng = np.random.default_rng(1)
    probes = np.concatenate([rng.choice(hf.scales, 15), rng.uniform(0, D.max(), 15)])
    for t in range(1, 25):
        dgm = persistence(D[:t, :t], maxdim=1)
        for eps in probes:
            for d in (0, 1):
                assert hf.at(eps, t, dim=d) == _betti(dgm, d, eps)


def test_grid_choices():
    D = _metric(10, 2)
    reg = hilbert_function(D, backend="slices", scales=5)
    np.testing.assert_allclose(reg.scales, np.linspace(0, D.max(), 5))
    exact = hilbert_function(D, backend="slices")
    for i, e in enumerate(reg.scales):
        for d in (0, 1):
            np.testing.assert_array_equal(reg.betti(d)[i], exact.at(e, exact.times, dim=d))
    sub = hilbert_function(D, backend="slices", t=[3, 7])
    np.testing.assert_array_equal(sub.values, exact.values[:, :, [2, 6]])


def test_hilbert_from_diagrams_checks():
    d = persistence(SQUARE)
    with pytest.raises(InvalidInputError, match="one time per diagram"):
        hilbert_from_diagrams([d, d], [1.0], [0.0, 1.0])
    with pytest.raises(InvalidInputError, match="increasing"):
        hilbert_from_diagrams([d, d], [2.0, 1.0], [0.0, 1.0])


def test_bad_arguments():
    with pytest.raises(InvalidInputError, match="backend"):
        hilbert_function(SQUARE, backend="nope")
    with pytest.raises(InvalidInputError, match="shape \\(4,\\)"):
        hilbert_function(SQUARE, times=[1, 2, 3], backend="slices")
    with pytest.raises(InvalidInputError, match="finite"):
        hilbert_function(SQUARE, times=[1, 2, np.nan, 4], backend="slices")
    with pytest.raises(InvalidInputError, match="resolution"):
        hilbert_function(SQUARE, scales=1, backend="slices")
    with pytest.raises(InvalidInputError, match="invariant"):
        signed_measure(SQUARE, invariant="euler")
    hf = hilbert_function(SQUARE, backend="slices")
    with pytest.raises(InvalidInputError, match="dim"):
        hf.betti(2)


def test_missing_multipers_is_explained(monkeypatch):
    monkeypatch.setitem(sys.modules, "multipers", None)  # import fails
    assert not mpm.multipers_available()
    with pytest.raises(MissingDependencyError, match=r"attntopo\[multiparameter\]"):
        hilbert_function(SQUARE, backend="multipers")
    with pytest.raises(MissingDependencyError, match="multipers==2.3.2"):
        signed_measure(SQUARE)
    # auto falls back to the slices
    assert hilbert_function(SQUARE, backend="auto").backend == "slices"


# ------------------------------------------------------------------------ multipers
@needs_multipers
def test_multipers_equals_slices_exactly():
    D = _metric(30, 3)
    a = hilbert_function(D, backend="slices")
    b = hilbert_function(D, backend="multipers")
    assert b.backend == "multipers"
    np.testing.assert_array_equal(a.scales, b.scales)
    np.testing.assert_array_equal(a.values, b.values)
    assert a == b


@needs_multipers
def test_multipers_with_ties_and_arbitrary_times():
    # several points arriving together, out of index order; repeated distances
    D = np.round(_metric(16, 4), 1)
    np.fill_diagonal(D, 0.0)
    times = np.array([3, 1, 1, 2, 5, 5, 4, 2, 6, 3, 1, 7, 7, 2, 4, 6], dtype=float)
    a = hilbert_function(D, times=times, backend="slices")
    b = hilbert_function(D, times=times, backend="multipers")
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.times, np.arange(1, 8))


@needs_multipers
@pytest.mark.parametrize("n", [1, 2])
def test_multipers_tiny(n):
    D = SQUARE[:n, :n]
    np.testing.assert_array_equal(
        hilbert_function(D, backend="multipers").values,
        hilbert_function(D, backend="slices").values,
    )


@needs_multipers
def test_hilbert_signed_measure_evaluates_to_the_betti_numbers():
    D = _metric(20, 5)
    ref = hilbert_function(D, backend="slices")
    for d in (0, 1):
        sm = signed_measure(D, degree=d, invariant="hilbert")
        assert sm.points.shape[1] == 2 and len(sm) == sm.weights.size
        E, T = np.meshgrid(ref.scales, ref.times, indexing="ij")
        np.testing.assert_array_equal(sm.hilbert(E, T), ref.betti(d))


@needs_multipers
def test_rank_invariant_on_its_grid():
    D = _metric(18, 6)
    sm0 = signed_measure(D, degree=0, invariant="rank", resolution=12)
    sm1 = signed_measure(D, degree=1, invariant="rank", resolution=12)
    g = sm1.scale_grid
    np.testing.assert_allclose(g, np.linspace(0, D.max(), 12))
    assert sm1.points.shape[1] == 4
    for t in (5, 12, 18):
        dgm = persistence(D[:t, :t], maxdim=1)
        for i in range(12):
            for j in range(i, 12):
                for d, sm in ((0, sm0), (1, sm1)):
                    bars = np.asarray(dgm[d])
                    ref = int(np.sum((bars[:, 0] <= g[i]) & (bars[:, 1] > g[j])))
                    assert sm.rank((g[i], t), (g[j], t)) == ref
    # across time, H0: components at (eps, t1) that stay distinct at (eps, t2)
    for eps in g[1::3]:
        for t1, t2 in ((4, 9), (6, 18), (10, 11)):
            A = (D[:t2, :t2] <= eps).astype(int)
            _, lab = connected_components(A, directed=False)
            ref = len(set(lab[:t1].tolist()))
            assert sm0.rank((eps, t1), (eps, t2)) == ref


@needs_multipers
def test_bifiltration_grid_push_is_exact():
    D = _metric(15, 7)
    grid = np.linspace(0, D.max() * 0.8, 7)
    st = mpm.bifiltration(D, scale_grid=grid)
    filt = np.array([f for _, f in st.get_simplices()])
    assert set(np.unique(filt[:, 0])) <= set(grid.tolist())
    assert st.num_parameters == 2


def test_hilbert_function_repr_and_eq():
    hf = hilbert_function(SQUARE, backend="slices")
    assert "HilbertFunction(maxdim=1" in repr(hf)
    assert hf == HilbertFunction(hf.scales.copy(), hf.times.copy(), hf.values.copy())


def test_default_grid_is_exact_unless_huge(monkeypatch):
    D = _metric(12, 8)
    exact = mpm.default_scale_grid(D[np.triu_indices(12, 1)], 12, 2)
    assert exact.size == 1 + np.unique(D[np.triu_indices(12, 1)]).size
    monkeypatch.setattr(mpm, "MAX_EXACT_CELLS", 1000)
    reg = mpm.default_scale_grid(D[np.triu_indices(12, 1)], 12, 2)
    np.testing.assert_allclose(reg, np.linspace(0, D.max(), 256))
