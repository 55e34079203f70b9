"""Tests of attntopo.topology.diagram."""

from __future__ import annotations

import io
import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import pdist, squareform

from attntopo.constants import SUMMARY_STATS
from attntopo.errors import InvalidInputError
from attntopo.topology import Diagram, persistence, summary_table

INF = math.inf


def example() -> Diagram:
    return Diagram(
        [
            [[0, 0.5], [0, INF], [0, 0.2], [0, 0.5]],
            [[0.4, 0.9], [0.3, 0.35], [0.6, INF]],
        ],
        maxdim=1,
        threshold=2.0,
        engine="ripser",
    )


# ------------------------------------------------------------ construction
def test_canonical_order_and_read_only():
    g = example()
    np.testing.assert_array_equal(g[0], [[0, 0.2], [0, 0.5], [0, 0.5], [0, INF]])
    np.testing.assert_array_equal(g[1], [[0.3, 0.35], [0.4, 0.9], [0.6, INF]])
    for a in g:
        assert a.dtype == np.float64 and a.shape[1] == 2
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0, 0] = 1.0
    with pytest.raises(AttributeError):
        g.maxdim = 3
    with pytest.raises(AttributeError):
        g._dgms = ()


def test_source_arrays_are_copied():
    src = np.array([[0.0, 1.0]])
    g = Diagram([src])
    src[0, 1] = 5.0
    assert g[0][0, 1] == 1.0 and src.flags.writeable


def test_access():
    g = example()
    assert len(g) == 2 and g.maxdim == 1
    assert g.threshold == 2.0 and g.engine == "ripser" and g.filtration == "vietoris_rips"
    assert [a.shape[0] for a in g] == [4, 3]
    assert g[-1] is g[1] and g.dgms[0] is g[0]
    np.testing.assert_array_equal(g.finite(1), [[0.3, 0.35], [0.4, 0.9]])
    np.testing.assert_array_equal(g.infinite(1), [[0.6, INF]])
    np.testing.assert_allclose(g.lifetimes(0), [0.2, 0.5, 0.5])
    assert g.counts().tolist() == [4, 3]
    for bad in (2, -3, 1.0, "1"):
        with pytest.raises(InvalidInputError, match="homology dimension"):
            g[bad]


def test_empty_dimensions_and_defaults():
    g = Diagram([[[0, INF]], [], np.empty((0, 2))])
    assert g.maxdim == 2 and g.counts().tolist() == [1, 0, 0]
    assert g[1].shape == (0, 2)
    assert g.threshold == INF and g.engine == "giotto"
    assert g.summary()[2] == {
        "n_bars": 0,
        "n_infinite": 0,
        "total_persistence": 0.0,
        "max_persistence": 0.0,
        "persistence_entropy": 0.0,
    }


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(dgms=[[[0, 1, 2]]]), r"shape \(k, 2\)"),
        (dict(dgms=[[[INF, INF]]]), r"births of H0 must be finite"),
        (dict(dgms=[[[1, 0.5]]]), r"deaths of H0 must be >= births"),
        (dict(dgms=[[[0, np.nan]]]), r"not NaN"),
        (dict(dgms=[[[0, "x"]]]), r"must be numbers"),
        (dict(dgms=[[[0, 1]]], maxdim=1), r"maxdim \+ 1 = 2 arrays"),
        (dict(dgms=[[[0, 1]]], maxdim=-1), r"maxdim must be an int >= 0"),
        (dict(dgms=[]), r"at least one dimension"),
        (dict(dgms=np.zeros((3, 3))), r"from_giotto"),
        (dict(dgms=5), r"sequence of \(k, 2\) arrays"),
        (dict(dgms=[[]], threshold=0), r"threshold must be a positive number"),
        (dict(dgms=[[]], threshold="x"), r"threshold must be a positive number"),
        (dict(dgms=[[]], engine=3), r"must be strings"),
    ],
)
def test_construction_errors(kwargs, match):
    dgms = kwargs.pop("dgms")
    with pytest.raises(InvalidInputError, match=match) as info:
        Diagram(dgms, **kwargs)
    assert "\n" not in str(info.value)


# ----------------------------------------------------- equality, hash, repr
def test_equality_ignores_engine_and_input_order():
    g = example()
    h = Diagram([g[0][::-1], g[1][[2, 0, 1]]], maxdim=1, threshold=2.0, engine="gudhi")
    assert g == h and hash(g) == hash(h)
    assert g != h.replace(threshold=3.0)
    assert g != h.replace(filtration="other")
    assert g != Diagram([g[0], g[1], []])
    assert g != Diagram([g[0], g[1][:2]], threshold=2.0)
    assert g != "not a diagram"
    assert len({g, h}) == 1


def test_replace():
    g = example()
    h = g.replace(engine="gudhi")
    assert h.engine == "gudhi" and h == g
    k = g.replace(dgms=[g[0]])
    assert k.maxdim == 0
    with pytest.raises(InvalidInputError, match="cannot replace"):
        g.replace(colour="red")


def test_allclose():
    g = example()
    shifted = Diagram([g[0] + [0, 1e-9], g[1] + 1e-9], threshold=2.0)
    assert g.allclose(shifted, atol=1e-6)
    assert not g.allclose(shifted, atol=1e-12)
    assert not g.allclose(Diagram([g[0], g[1][:2]]))
    assert not g.allclose(Diagram([g[0]]))
    finite = Diagram([g[0], np.where(np.isinf(g[1]), 5.0, g[1])])
    assert not g.allclose(finite, atol=10)
    # near-equal births that sort differently still pair up
    a = Diagram([[[0, INF]], [[0.5, 0.9], [0.5 + 1e-9, 0.6]]])
    b = Diagram([[[0, INF]], [[0.5, 0.6], [0.5 + 1e-9, 0.9]]])
    assert a.allclose(b, atol=1e-6) and a != b
    with pytest.raises(InvalidInputError):
        g.allclose(np.zeros((2, 2)))


def test_repr_is_short():
    r = repr(example())
    assert r == "Diagram(H0=4, H1=3, engine='ripser', threshold=2)"
    assert repr(Diagram([[[0, INF]]])) == "Diagram(H0=1, engine='giotto')"


def test_pickle_round_trip():
    g = example()
    h = pickle.loads(pickle.dumps(g))
    assert h == g and h.engine == g.engine and not h[0].flags.writeable


# -------------------------------------------------------- betti and summary
def test_betti_by_hand():
    g = example()
    # H0 born 0, deaths 0.2, 0.5, 0.5, inf ; H1 [0.3,0.35) [0.4,0.9) [0.6,inf)
    expected = {
        0.0: [4, 0],
        0.1: [4, 0],
        0.2: [3, 0],
        0.3: [3, 1],
        0.35: [3, 0],
        0.45: [3, 1],
        0.5: [1, 1],
        0.7: [1, 2],
        0.9: [1, 1],
        10.0: [1, 1],
    }
    for eps, b in expected.items():
        assert g.betti(eps).tolist() == b, eps


def test_betti_square_from_persistence():
    s2 = math.sqrt(2)
    D = np.array([[0, 1, s2, 1], [1, 0, 1, s2], [s2, 1, 0, 1], [1, s2, 1, 0]])
    g = persistence(D)
    assert g.betti(0.5).tolist() == [4, 0]
    assert g.betti(1.0).tolist() == [1, 1]
    assert g.betti(1.2).tolist() == [1, 1]
    assert g.betti(1.5).tolist() == [1, 0]


def entropy_by_hand(lifetimes) -> float:
    L = [x for x in lifetimes if x > 0]
    total = sum(L)
    return -sum((x / total) * math.log(x / total, 2) for x in L) if L else 0.0


def test_summary_against_hand_formulas():
    g = example()
    s = g.summary()
    assert set(s) == {0, 1}
    assert set(s[0]) == set(SUMMARY_STATS)
    assert s[0]["n_bars"] == 4 and s[0]["n_infinite"] == 1
    assert s[0]["total_persistence"] == pytest.approx(1.2)
    assert s[0]["max_persistence"] == pytest.approx(0.5)
    assert s[0]["persistence_entropy"] == pytest.approx(entropy_by_hand([0.2, 0.5, 0.5]))
    p = np.array([0.2, 0.5, 0.5]) / 1.2
    assert s[0]["persistence_entropy"] == pytest.approx(-(p * np.log2(p)).sum())
    assert s[1]["n_bars"] == 3 and s[1]["n_infinite"] == 1
    assert s[1]["total_persistence"] == pytest.approx(0.55)
    assert s[1]["max_persistence"] == pytest.approx(0.5)
    assert s[1]["persistence_entropy"] == pytest.approx(entropy_by_hand([0.05, 0.5]))
    assert isinstance(s[0]["n_bars"], int) and isinstance(s[0]["max_persistence"], float)
    json.dumps(s)


def test_summary_edge_cases():
    only_inf = Diagram([[[0, INF]]]).summary()[0]
    assert only_inf["total_persistence"] == 0 and only_inf["persistence_entropy"] == 0
    assert only_inf["max_persistence"] == 0 and only_inf["n_infinite"] == 1
    one = Diagram([[[0, 2.0], [0, INF]]]).summary()[0]
    assert one["persistence_entropy"] == 0.0 and one["max_persistence"] == 2.0
    assert math.copysign(1, one["persistence_entropy"]) == 1  # not -0.0
    zero = Diagram([[[0, 0.0], [0, INF]]]).summary()[0]
    assert zero["persistence_entropy"] == 0.0 and zero["n_bars"] == 2
    uniform = Diagram([[[0, 1.0]] * 8]).summary()[0]
    assert uniform["persistence_entropy"] == pytest.approx(3.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3), st.sampled_from([0.0, 5e-324, 1e-300, 0.01, 0.2, 0.5, 1.0, 7.0])
        ),
        max_size=12,
    ),
    st.sampled_from([2.0, math.e, 10.0]),
)
def test_lifetime_entropy_equals_a_loop_per_group(bars, base):
    """The one entropy behind summary_table and the features' Bars: per group, a loop over its
    lifetimes (scipy.stats.entropy normalises and skips zeros the same way)."""
    from scipy.stats import entropy

    from attntopo.topology.diagram import lifetime_entropy

    owner = np.array([o for o, _ in bars], dtype=np.int64)
    life = np.array([x for _, x in bars], dtype=np.float64)
    got = lifetime_entropy(life, owner, 4, base)
    for g in range(4):
        mine = life[owner == g]
        want = entropy(mine, base=base) if mine.sum() > 0 else 0.0
        assert got[g] == pytest.approx(want, abs=1e-12)
        assert got[g] >= 0 and math.copysign(1, got[g]) == 1


def _random_diagrams(k: int, seed: int = 0) -> list[Diagram]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        dgms = []
        for d in range(3):
            m = int(rng.integers(0, 6))
            b = rng.uniform(0, 1, m)
            e = b + rng.uniform(0, 1, m)
            e[rng.uniform(size=m) < 0.2] = INF
            dgms.append(np.column_stack([b, e]))
        out.append(Diagram(dgms))
    return out


def test_summary_table_matches_per_diagram():
    gs = _random_diagrams(30)
    t = summary_table(gs)
    assert set(t) == set(SUMMARY_STATS)
    for k in SUMMARY_STATS:
        assert t[k].shape == (30, 3)
    assert t["n_bars"].dtype == np.int64
    for i, g in enumerate(gs):
        for d in range(3):
            life = g.lifetimes(d)
            assert t["n_bars"][i, d] == len(g[d])
            assert t["n_infinite"][i, d] == len(g.infinite(d))
            assert t["total_persistence"][i, d] == pytest.approx(life.sum())
            assert t["max_persistence"][i, d] == pytest.approx(life.max() if life.size else 0)
            assert t["persistence_entropy"][i, d] == pytest.approx(entropy_by_hand(life))
            assert g.summary()[d]["total_persistence"] == pytest.approx(life.sum())
    sub = summary_table(gs, dims=[1])
    np.testing.assert_array_equal(sub["n_bars"][:, 0], t["n_bars"][:, 1])
    mixed = summary_table([gs[0], Diagram([[[0, 1]]])])
    assert mixed["n_bars"].shape == (2, 1)
    with pytest.raises(InvalidInputError, match="not held by every diagram"):
        summary_table([gs[0], Diagram([[[0, 1]]])], dims=[1])
    with pytest.raises(InvalidInputError, match=r"diagrams\[1\] is a list"):
        summary_table([gs[0], []])
    assert summary_table([])["n_bars"].shape == (0, 0)


# --------------------------------------------------------------- converters
def test_gudhi_round_trip_and_real_gudhi():
    gudhi = pytest.importorskip("gudhi")
    g = example()
    pairs = g.to_gudhi()
    assert pairs[0] == (0, (0.0, 0.2)) and all(isinstance(p[1][1], float) for p in pairs)
    assert Diagram.from_gudhi(pairs, threshold=2.0) == g
    assert Diagram.from_gudhi(pairs).engine == "gudhi"
    assert Diagram.from_gudhi(pairs, maxdim=0, threshold=2.0) == Diagram([g[0]], threshold=2.0)
    assert Diagram.from_gudhi([]).counts().tolist() == [0]
    with pytest.raises(InvalidInputError, match="gudhi pairs"):
        Diagram.from_gudhi([(0, 1)])
    # real gudhi output (zero-length bars removed by min_persistence=0 as well)
    X = np.random.default_rng(1).normal(size=(15, 2))
    D = squareform(pdist(X))
    st_ = gudhi.RipsComplex(distance_matrix=D).create_simplex_tree(max_dimension=2)
    ours = persistence(D, maxdim=1, engine="gudhi")
    assert Diagram.from_gudhi(st_.persistence(min_persistence=0), maxdim=1) == ours


def test_ripser_round_trip_and_real_ripser():
    g = example()
    r = g.to_ripser()
    assert isinstance(r, list) and len(r) == 2 and r[0].flags.writeable
    r[0][0, 0] = 99  # a copy: the diagram is untouched
    assert g[0][0, 0] == 0
    assert Diagram.from_ripser(g.to_ripser(), threshold=2.0) == g
    assert Diagram.from_ripser(g.to_ripser(), maxdim=0).maxdim == 0
    with pytest.raises(InvalidInputError, match="fewer than maxdim"):
        Diagram.from_ripser(g.to_ripser(), maxdim=3)
    ripser = pytest.importorskip("ripser")
    D = squareform(pdist(np.random.default_rng(2).normal(size=(20, 2))))
    raw = Diagram.from_ripser(ripser.ripser(D, distance_matrix=True)["dgms"])
    assert raw.allclose(persistence(D), atol=1e-6)


def test_giotto_round_trip():
    g = example()
    a = g.to_giotto()
    assert a.shape == (7, 3) and np.isinf(a[:, 1]).sum() == 2
    np.testing.assert_array_equal(a[:, 2], [0, 0, 0, 0, 1, 1, 1])
    assert Diagram.from_giotto(a, threshold=2.0) == g
    assert Diagram.from_giotto(a[None], threshold=2.0) == g
    padded = np.vstack([a, [[0, 0, 1], [0.0, 0.0, 2]]])  # giotto-tda padding points
    h = Diagram.from_giotto(padded, threshold=2.0)
    assert h.maxdim == 2 and h[2].shape == (0, 2) and Diagram(list(h)[:2], threshold=2.0) == g
    assert Diagram.from_giotto(np.empty((0, 3))).maxdim == 0
    with pytest.raises(InvalidInputError, match=r"shape \(k, 3\)"):
        Diagram.from_giotto(np.zeros((2, 2)))
    with pytest.raises(InvalidInputError, match="int dims"):
        Diagram.from_giotto([[0, 1, 0.5]])


def test_dict_and_arrays_round_trip():
    g = example()
    meta = g.to_dict()
    assert meta["threshold"] == 2.0 and meta["counts"] == [4, 3] and "points" not in meta
    text = json.dumps(g.to_dict(include_points=True), allow_nan=False)  # strict JSON
    assert Diagram.from_dict(json.loads(text)) == g
    inf_meta = json.dumps(Diagram([[[0, INF]]]).to_dict(), allow_nan=False)
    assert json.loads(inf_meta)["threshold"] == "inf"
    # arrays to NPZ and back: inf survives
    buf = io.BytesIO()
    np.savez(buf, **g.arrays(prefix="x_"), **Diagram([[[0, 1.0]]]).arrays(prefix="y_"))
    buf.seek(0)
    with np.load(buf) as npz:
        h = Diagram.from_dict(json.loads(json.dumps(meta)), arrays=npz, prefix="x_")
        assert h == g and h.engine == "ripser" and np.isinf(h[0][-1, 1])
        assert Diagram.from_arrays(npz, prefix="y_").counts().tolist() == [1]
        assert Diagram.from_arrays(npz, prefix="x_", threshold=2.0) == g
    assert set(g.arrays()) == {"h0", "h1"}
    with pytest.raises(InvalidInputError, match="no diagram arrays"):
        Diagram.from_arrays({}, prefix="z_")
    with pytest.raises(InvalidInputError, match="missing keys"):
        Diagram.from_arrays({"h0": g[0]}, maxdim=1)
    with pytest.raises(InvalidInputError, match="pass arrays="):
        Diagram.from_dict(meta)
    with pytest.raises(InvalidInputError, match="format"):
        Diagram.from_dict({"format": "other"})
    with pytest.raises(InvalidInputError, match="version"):
        Diagram.from_dict({**meta, "version": 99})


# ----------------------------------------------------------- property tests
finite_pair = st.tuples(st.floats(0, 10), st.floats(0, 10)).map(lambda p: (min(p), max(p)))
any_pair = st.one_of(finite_pair, st.floats(0, 10).map(lambda b: (b, INF)))
diagrams = st.lists(st.lists(any_pair, max_size=8), min_size=1, max_size=3).map(
    lambda ds: Diagram([np.array(d, dtype=float).reshape(-1, 2) for d in ds])
)


@settings(max_examples=60, deadline=None)
@given(diagrams)
def test_round_trips_property(g):
    assert Diagram.from_arrays(g.arrays()) == g
    assert Diagram.from_dict(json.loads(json.dumps(g.to_dict(include_points=True)))) == g
    assert Diagram.from_ripser(g.to_ripser()) == g
    assert Diagram.from_gudhi(g.to_gudhi(), maxdim=g.maxdim) == g
    nonzero = Diagram([a[a[:, 1] > a[:, 0]] for a in g])
    assert Diagram.from_giotto(nonzero.to_giotto(), maxdim=g.maxdim) == nonzero
    assert pickle.loads(pickle.dumps(g)) == g


@settings(max_examples=60, deadline=None)
@given(diagrams, st.floats(0, 12))
def test_betti_property(g, eps):
    by_hand = [sum(1 for b, d in a.tolist() if b <= eps < d) for a in g]
    assert g.betti(eps).tolist() == by_hand


def test_entropy_is_finite_when_a_lifetime_divides_to_zero():
    """5e-324 / 2 rounds to 0: -p log p must be 0 there, not 0 * inf = nan."""
    g = Diagram([np.array([[0.0, 5e-324], [0.0, 1.0], [0.0, 1.0]])], maxdim=0)
    assert g.summary()[0]["persistence_entropy"] == pytest.approx(1.0)  # two equal halves: 1 bit
