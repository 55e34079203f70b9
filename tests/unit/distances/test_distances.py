"""Tests of attntopo.distances: row-to-row distances of attention matrices."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from attntopo.distances import DISTANCES, pairwise_distance, token_distances
from attntopo.errors import InvalidInputError, InvalidMatrixError


@pytest.fixture(scope="module", autouse=True, params=["c-kernel", "pure-torch"])
def js_path(request):
    """Every test of this module runs twice: with the C kernel and with the pure-torch path."""
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "pure-torch":
            mp.setenv("ATTNTOPO_NATIVE", "0")
        yield request.param


#: Every registered distance, as the tests iterate them (a new one is tested with no edit here
#: but its independent formula in DIRECT below).
METRICS = tuple(DISTANCES)


# ----------------------------------------------------------------------------------
# helpers (independent of the module under test)
# ----------------------------------------------------------------------------------


def dirichlet_rows(rng, lead, n, *, zeros=False, causal=False, alpha=0.5):
    """Random attention-like matrices of shape lead + (n, n); rows sum to 1."""
    a = rng.dirichlet(np.full(n, alpha), size=tuple(lead) + (n,))
    if zeros:
        a = np.where(rng.random(a.shape) < 0.3, 0.0, a)
        a[..., 0] += 1e-3  # no row entirely zero
    if causal:
        a = np.tril(a)
        a[..., 0] += 1e-3
    return a / a.sum(-1, keepdims=True)


def scipy_js(a, base=2.0):
    """Loop of scipy calls over all row pairs of every matrix in a (..., n, n)."""
    flat = a.reshape(-1, a.shape[-2], a.shape[-1])
    n = a.shape[-1]
    out = np.zeros(flat.shape)
    for b, m in enumerate(flat):
        for i in range(n):
            for j in range(n):
                if i != j:
                    out[b, i, j] = jensenshannon(m[i], m[j], base=base)
    return out.reshape(a.shape)


def _pairs(a):
    return a[..., :, None, :], a[..., None, :, :]


def _bc(a):
    p, q = _pairs(a)
    return np.sqrt(p * q).sum(-1)


#: The textbook formulas, vectorized over the row pairs of a stack (off-diagonal entries are
#: meaningful), one per registered distance: independent of the module under test.
DIRECT = {
    "jensen_shannon": lambda a: scipy_js(a),
    "hellinger": lambda a: np.sqrt(np.clip(1.0 - _bc(a), 0.0, None)),
    "fisher_rao": lambda a: 2.0 * np.arccos(np.clip(_bc(a), 0.0, 1.0)),
    "total_variation": lambda a: 0.5 * np.abs(np.subtract(*_pairs(a))).sum(-1),
}


def numpy_direct(a, metric):
    return DIRECT[metric](a)


def test_every_registered_distance_has_an_independent_formula():
    assert set(DIRECT) == set(DISTANCES)


def test_names_and_labels_come_from_the_registry():
    from attntopo.constants import METRICS as LITERAL
    from attntopo.plots._style import metric_name

    assert LITERAL == tuple(DISTANCES)  # the torch-free Literal of annotations and the CLI
    for name, d in DISTANCES.items():
        assert d.name == name and metric_name(name) == d.label
    assert len({d.column for d in DISTANCES.values()}) == len(DISTANCES)


@pytest.mark.parametrize("metric", METRICS)
def test_disjoint_rows_are_at_the_registered_range(metric):
    # two one-hot rows on different keys are as far apart as the distance goes
    d = token_distances(np.eye(3), metric=metric)
    assert d[0, 1] == pytest.approx(DISTANCES[metric].upper, abs=1e-15)
    assert pairwise_distance([1, 0], [0, 1], metric=metric) == pytest.approx(
        DISTANCES[metric].upper, abs=1e-15
    )


def offdiag(n):
    return ~np.eye(n, dtype=bool)


def listing_recipe(p, q):
    """The paper's printed Listing 1: softmax again, scipy's JS distance (natural log)."""
    sp = np.exp(p) / np.exp(p).sum()
    sq = np.exp(q) / np.exp(q).sum()
    return float(jensenshannon(sp, sq))


def paper_recipe(p, q):
    """The founding paper's notebooks: Listing 1's distance, then np.sqrt again."""
    return math.sqrt(listing_recipe(p, q))


PAPER_RECIPES = {"notebook": paper_recipe, "listing": listing_recipe}
PAPER_BOUND = {"notebook": math.log(2) ** 0.25, "listing": math.log(2) ** 0.5}


# ----------------------------------------------------------------------------------
# Jensen–Shannon against scipy
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lead", [(), (3,), (2, 3)])
@pytest.mark.parametrize("kind", ["dense", "zeros", "causal"])
def test_js_matches_scipy(lead, kind):
    rng = np.random.default_rng([len(lead), sum(lead), ["dense", "zeros", "causal"].index(kind)])
    a = dirichlet_rows(rng, lead, 9, zeros=kind == "zeros", causal=kind == "causal")
    d = token_distances(a)
    assert d.shape == a.shape and d.dtype == np.float64
    np.testing.assert_allclose(d, scipy_js(a), rtol=0, atol=1e-12)


@pytest.mark.parametrize("base", [math.e, 10.0, 3.5])
def test_js_base_matches_scipy(base):
    a = dirichlet_rows(np.random.default_rng(1), (2,), 8, zeros=True)
    expected = scipy_js(a, base=base)
    np.testing.assert_allclose(token_distances(a, base=base), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", [17, 40])
def test_js_causal_several_row_groups(n):
    # causal rows span several internal row groups (restricted key ranges)
    a = dirichlet_rows(np.random.default_rng(n), (2,), n, causal=True)
    np.testing.assert_allclose(token_distances(a), scipy_js(a), rtol=0, atol=1e-12)


def test_js_identical_rows_are_equally_far_from_a_third():
    """Two identical rows are exactly as far from any third row, also for nearly identical rows
    (recomputed with the cancellation-free form, which must be symmetric in its two rows: it
    was not on the pure-torch path, and the triangle inequality broke by ~1e-12)."""
    near = np.array([9.5e-08, 1.0 - 9.5e-08 - 1.25e-07, 0.0, 1.25e-07])
    A = np.array([near, [1.0, 0.0, 0.0, 0.0], [2.0**-52, 1.0 - 2.0**-52, 0.0, 0.0], near])
    d = token_distances(A)
    assert d[0, 2] == d[3, 2] == d[2, 0] == d[2, 3] and d[0, 1] == d[3, 1] and d[0, 3] == 0.0
    ref = jensenshannon(A[0], A[2], base=2)
    assert abs(d[0, 2] - ref) <= 1e-9 * ref
    rng = np.random.default_rng(11)
    for _ in range(20):  # random rows and their tiny perturbations, in both orders
        p = rng.dirichlet(np.full(3, 0.5))  # three rows over three keys: a square attention matrix
        q = np.abs(p + rng.normal(0, 1e-6, 3))
        q /= q.sum()
        d = token_distances(np.stack([p, q, p]))
        assert d[0, 1] == d[2, 1] == d[1, 0] == d[1, 2]


def test_js_keys_never_attended():
    # keys 3 and 10 get no weight anywhere: the skipped key set is not contiguous
    rng = np.random.default_rng(7)
    a = dirichlet_rows(rng, (2,), 24)
    a[..., [3, 10]] = 0.0
    a[..., 20:] = 0.0
    a /= a.sum(-1, keepdims=True)
    np.testing.assert_allclose(token_distances(a), scipy_js(a), rtol=0, atol=1e-12)


def test_input_kinds_agree():
    rng = np.random.default_rng(2)
    a = dirichlet_rows(rng, (2, 2), 6)
    ref = token_distances(a)

    class FakeAttention:  # duck-typed Attention container
        weights = a.astype(np.float32)

    f32 = a.astype(np.float32)
    np.testing.assert_allclose(token_distances(f32), ref, atol=2e-6)
    np.testing.assert_array_equal(token_distances(FakeAttention()), token_distances(f32))
    np.testing.assert_array_equal(token_distances(torch.from_numpy(a)), ref)
    with_grad = torch.from_numpy(f32).requires_grad_()
    np.testing.assert_array_equal(token_distances(with_grad), token_distances(f32))
    np.testing.assert_array_equal(token_distances(a[0, 0].tolist()), ref[0, 0])


def test_input_not_modified():
    a = dirichlet_rows(np.random.default_rng(3), (2,), 5).astype(np.float32)
    a[0, 0, 0] -= 1e-7  # tiny negative round-off is clipped internally, not in place
    keep = a.copy()
    t = torch.from_numpy(a.copy())
    for metric in METRICS:
        token_distances(a, metric=metric)
        token_distances(t, metric=metric)
    np.testing.assert_array_equal(a, keep)
    np.testing.assert_array_equal(t.numpy(), keep)


def test_float32_compute_dtype():
    a = dirichlet_rows(np.random.default_rng(4), (3,), 20, zeros=True)
    a[0, 5] = a[0, 6]
    for metric in METRICS:
        d32 = token_distances(a, metric=metric, dtype=torch.float32)
        np.testing.assert_allclose(d32, token_distances(a, metric=metric), atol=1e-5)
        assert d32[0, 5, 6] == 0.0 and np.all(np.diagonal(d32, axis1=-2, axis2=-1) == 0.0)


def test_edge_sizes():
    assert token_distances([[1.0]]).tolist() == [[0.0]]
    assert token_distances(np.zeros((0, 4, 4))).shape == (0, 4, 4)
    assert token_distances(np.zeros((2, 0, 0))).shape == (2, 0, 0)
    np.testing.assert_array_equal(token_distances([[1, 0], [0, 1]]), [[0.0, 1.0], [1.0, 0.0]])


# ----------------------------------------------------------------------------------
# the other metrics against independent formulas
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("lead", [(), (3,), (2, 3)])
def test_metrics_match_direct_formulas(metric, lead):
    rng = np.random.default_rng(len(lead))
    for kind in ("dense", "zeros", "causal"):
        a = dirichlet_rows(rng, lead, 10, zeros=kind == "zeros", causal=kind == "causal")
        d = token_distances(a, metric=metric)
        ref = numpy_direct(a, metric)
        mask = offdiag(10)
        np.testing.assert_allclose(d[..., mask], ref[..., mask], rtol=0, atol=1e-10)


def test_hellinger_convention():
    # normalized Hellinger: sqrt(1 - BC) = ||sqrt p - sqrt q|| / sqrt 2; disjoint rows -> 1
    a = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.25, 0.25, 0.5]])
    d = token_distances(a, metric="hellinger")
    assert d[0, 1] == 1.0
    expected = np.linalg.norm(np.sqrt(a[1]) - np.sqrt(a[2])) / math.sqrt(2)
    assert d[1, 2] == pytest.approx(expected, abs=1e-15)
    assert token_distances(a, metric="fisher_rao")[0, 1] == pytest.approx(math.pi, abs=1e-15)
    assert token_distances(a, metric="total_variation")[0, 1] == 1.0


@pytest.mark.parametrize("metric", METRICS)
def test_pairwise_distance_agrees(metric):
    a = dirichlet_rows(np.random.default_rng(5), (), 12, zeros=True)
    d = token_distances(a, metric=metric)
    for i, j in [(0, 1), (2, 7), (11, 3), (4, 4)]:
        assert pairwise_distance(a[i], a[j], metric=metric) == pytest.approx(d[i, j], abs=1e-12)
    if metric == "jensen_shannon":
        assert pairwise_distance(a[0], a[1], metric=metric, base=math.e) == pytest.approx(
            jensenshannon(a[0], a[1]), abs=1e-12
        )


# ----------------------------------------------------------------------------------
# metric properties (hypothesis)
# ----------------------------------------------------------------------------------


@st.composite
def attention_batches(draw):
    """(batch, n, n) row-stochastic matrices with exact zeros and duplicated rows."""
    n = draw(st.integers(2, 7))
    batch = draw(st.integers(1, 2))
    vals = draw(
        st.lists(
            st.one_of(st.just(0.0), st.floats(1e-9, 1.0), st.floats(1e-300, 1e-9)),
            min_size=batch * n * n,
            max_size=batch * n * n,
        )
    )
    a = np.array(vals).reshape(batch, n, n)
    a[:, :, 0] = np.where(a.sum(-1) == 0, 1.0, a[:, :, 0])
    a /= a.sum(-1, keepdims=True)
    dup = draw(st.integers(0, n - 1))
    a[:, dup] = a[:, 0]  # identical rows
    return a


@pytest.mark.parametrize("metric", METRICS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=attention_batches())
def test_metric_properties(metric, a):
    d = token_distances(a, metric=metric)
    n = a.shape[-1]
    assert not np.isnan(d).any()
    np.testing.assert_array_equal(d, np.swapaxes(d, -1, -2))  # exactly symmetric
    assert np.all(np.diagonal(d, axis1=-2, axis2=-1) == 0.0)
    assert np.all(d >= 0.0) and np.all(d <= DISTANCES[metric].upper)
    same = (a[:, :, None, :] == a[:, None, :, :]).all(-1)
    assert np.all(d[same] == 0.0)  # identity of indiscernibles, exactly
    assert np.all(d[~same] > 0.0)
    # triangle inequality on every triple
    lhs = d[:, :, None, :]  # d(i, k)
    rhs = d[:, :, :, None] + d[:, None, :, :]  # d(i, j) + d(j, k)
    assert np.all(lhs <= rhs + 1e-12), n
    # same numbers as the one-pair reference
    for i, j in [(0, n - 1), (n // 2, 0), (1, n - 1)]:
        ref = pairwise_distance(a[-1, i], a[-1, j], metric=metric)
        assert d[-1, i, j] == pytest.approx(ref, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(a=attention_batches(), mode=st.sampled_from(["notebook", "listing"]))
def test_paper_compat_properties(a, mode):
    d = token_distances(a, paper_compat=mode)
    assert not np.isnan(d).any()
    np.testing.assert_array_equal(d, np.swapaxes(d, -1, -2))
    assert np.all(np.diagonal(d, axis1=-2, axis2=-1) == 0.0)
    assert np.all(d >= 0.0) and np.all(d <= PAPER_BOUND[mode])
    # the notebook's distance is the square root of the listing's, entry by entry
    np.testing.assert_allclose(
        d**2 if mode == "notebook" else d,
        token_distances(a, paper_compat="listing"),
        rtol=1e-12,
        atol=1e-15,
    )


# ----------------------------------------------------------------------------------
# accuracy for nearly identical rows
# ----------------------------------------------------------------------------------


def _mp_reference(p, q, metric):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    ps = [mpmath.mpf(float(x)) for x in p]
    qs = [mpmath.mpf(float(x)) for x in q]
    if metric == "jensen_shannon":
        s = mpmath.mpf(0)
        for x, y in zip(ps, qs):
            m = (x + y) / 2
            if x > 0:
                s += x * mpmath.log(x / m) / 2
            if y > 0:
                s += y * mpmath.log(y / m) / 2
        return float(mpmath.sqrt(s / mpmath.log(2)))
    h = mpmath.sqrt(sum((mpmath.sqrt(x) - mpmath.sqrt(y)) ** 2 for x, y in zip(ps, qs)) / 2)
    if metric == "hellinger":
        return float(h)
    return float(4 * mpmath.asin(h / mpmath.sqrt(2)))


@pytest.mark.parametrize("metric", ["jensen_shannon", "hellinger", "fisher_rao"])
@pytest.mark.parametrize("eps", [1e-13, 1e-10, 1e-7, 1e-4, 1e-2, 1e-1])
def test_near_identical_rows_are_accurate(metric, eps):
    rng = np.random.default_rng(11)
    n = 48
    p = rng.dirichlet(np.ones(n))
    p[5] = 0.0
    q = p * (1.0 + eps * rng.normal(size=n))
    p, q = p / p.sum(), q / q.sum()
    a = np.tile(p, (n, 1))
    a[1] = q
    ref = _mp_reference(p, q, metric)
    assert ref > 0
    got = token_distances(a, metric=metric)
    assert got[0, 1] == pytest.approx(ref, rel=1e-10, abs=0)
    assert got[0, 2] == 0.0  # identical rows
    assert pairwise_distance(p, q, metric=metric) == pytest.approx(ref, rel=1e-13, abs=0)


def test_near_identical_beats_naive_formula():
    # the naive H(m) - (H(p)+H(q))/2 loses ~1e-8 absolute here; we must not
    rng = np.random.default_rng(12)
    p = rng.dirichlet(np.ones(64))
    q = p * (1.0 + 1e-9 * rng.normal(size=64))
    p, q = p / p.sum(), q / q.sum()
    a = np.tile(p, (64, 1))
    a[1] = q
    ref = _mp_reference(p, q, "jensen_shannon")
    assert ref < 1e-8
    assert abs(token_distances(a)[0, 1] - ref) < 1e-20


# ----------------------------------------------------------------------------------
# chunking, threads
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", METRICS)
def test_chunking_does_not_change_results(metric):
    rng = np.random.default_rng(13)
    a = np.concatenate(
        [
            dirichlet_rows(rng, (2,), 20),
            dirichlet_rows(rng, (2,), 20, zeros=True),
            dirichlet_rows(rng, (2,), 20, causal=True),
        ]
    )
    a[0, 3] = a[0, 4]
    a[1, 7] = a[1, 7] * (1 + 1e-9) / (a[1, 7] * (1 + 1e-9)).sum()
    ref = token_distances(a, metric=metric)
    for chunk in (1, 37, 500, 10_000):
        np.testing.assert_array_equal(token_distances(a, metric=metric, chunk_elements=chunk), ref)


@pytest.mark.parametrize("metric", METRICS)
def test_worker_threads_give_identical_results(metric):
    before = torch.get_num_threads()
    rng = np.random.default_rng(14)
    a = np.concatenate([dirichlet_rows(rng, (3,), 40), dirichlet_rows(rng, (3,), 40, causal=True)])
    a[0, 5] = a[0, 9]  # a refined pair
    one = token_distances(a, metric=metric, n_jobs=1)
    np.testing.assert_array_equal(token_distances(a, metric=metric, n_jobs=3), one)
    np.testing.assert_array_equal(
        token_distances(a, metric=metric, n_jobs=2, chunk_elements=3000), one
    )
    assert torch.get_num_threads() == before


# ----------------------------------------------------------------------------------
# paper_compat
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "before_sqrt"), [(7, 0.218), (40, 0.099), (120, 0.058)])
def test_paper_compat_one_hot_example(n, before_sqrt):
    eye = np.eye(n)
    expected = paper_recipe(eye[0], eye[1])
    # facts.md: natural-log JS distance 0.833 of two one-hot rows becomes 0.218 (n=7)
    # after the extra softmax; the paper then takes one more square root
    assert jensenshannon(eye[0], eye[1]) == pytest.approx(0.833, abs=5e-4)
    assert expected**2 == pytest.approx(before_sqrt, abs=5e-4)
    d = token_distances(eye, paper_compat="notebook")
    assert d[0, 1] == pytest.approx(expected, abs=1e-12)
    # the printed Listing 1 stops at scipy's distance: no extra root
    assert token_distances(eye, paper_compat="listing")[0, 1] == pytest.approx(
        before_sqrt, abs=5e-4
    )
    if n == 7:
        assert d[0, 1] == pytest.approx(0.4664, abs=1e-4)


@pytest.mark.parametrize("mode", ["notebook", "listing"])
def test_paper_compat_matches_recipe_on_causal_rows(mode):
    a = dirichlet_rows(np.random.default_rng(15), (2,), 8, causal=True)
    d = token_distances(a, paper_compat=mode)
    recipe = PAPER_RECIPES[mode]
    for b in range(2):
        for i in range(8):
            for j in range(8):
                if i != j:
                    assert d[b, i, j] == pytest.approx(recipe(a[b, i], a[b, j]), abs=1e-12)


@pytest.mark.parametrize("mode", ["notebook", "listing"])
def test_paper_compat_accepts_any_finite_rows(mode):
    x = np.random.default_rng(16).normal(size=(5, 5))  # negative, not normalized
    d = token_distances(x, paper_compat=mode)
    assert d[1, 3] == pytest.approx(PAPER_RECIPES[mode](x[1], x[3]), abs=1e-12)


def test_paper_compat_true_is_refused():
    a = dirichlet_rows(np.random.default_rng(17), (2,), 6)
    with pytest.raises(InvalidInputError, match="'notebook' or 'listing'.*got True"):
        token_distances(a, paper_compat=True)
    for off in (False, None, np.False_):
        np.testing.assert_array_equal(token_distances(a, paper_compat=off), token_distances(a))


# ----------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------

_GOOD = np.full((3, 3), 1.0 / 3.0)


def _with(cells):
    a = _GOOD.copy()
    for (i, j), v in cells.items():
        a[i, j] = v
    return a


def _bad(name, call, exc, fragment):
    return pytest.param(call, exc, fragment, id=name)


BAD_CALLS = [
    _bad("0-d", lambda: token_distances(1.0), InvalidMatrixError, "at least 2-D"),
    _bad("1-d", lambda: token_distances([0.5, 0.5]), InvalidMatrixError, "at least 2-D"),
    _bad("not square", lambda: token_distances(np.ones((2, 3)) / 3), InvalidMatrixError, "square"),
    _bad("nan", lambda: token_distances(_with({(0, 0): np.nan})), InvalidMatrixError, "NaN"),
    _bad("inf", lambda: token_distances(_with({(1, 1): np.inf})), InvalidMatrixError, "inf"),
    _bad(
        "nan paper",
        lambda: token_distances(_with({(1, 1): np.nan}), paper_compat="notebook"),
        InvalidMatrixError,
        "NaN",
    ),
    _bad(
        "negative",
        lambda: token_distances(_with({(0, 0): -0.1, (0, 1): 0.7})),
        InvalidMatrixError,
        ">= 0",
    ),
    _bad(
        "row sum",
        lambda: token_distances(_with({(2, 2): 0.2})),
        InvalidMatrixError,
        "row 2 sums to 0.866667, not 1 within 0.001",
    ),
    _bad(
        "zero row",
        lambda: token_distances(np.array([[1.0, 0.0], [0.0, 0.0]])),
        InvalidMatrixError,
        "renormalize",
    ),
    _bad(
        "metric",
        lambda: token_distances(_GOOD, metric="euclidean"),
        InvalidInputError,
        "'hellinger'",
    ),
    _bad("metric type", lambda: token_distances(_GOOD, metric=None), InvalidInputError, "allowed"),
    _bad("base 0", lambda: token_distances(_GOOD, base=0), InvalidInputError, "> 1"),
    _bad("base -2", lambda: token_distances(_GOOD, base=-2.0), InvalidInputError, "> 1"),
    _bad("base 1", lambda: token_distances(_GOOD, base=1), InvalidInputError, "> 1"),
    _bad("base 0.5", lambda: token_distances(_GOOD, base=0.5), InvalidInputError, "> 1"),
    _bad("base inf", lambda: token_distances(_GOOD, base=math.inf), InvalidInputError, "finite"),
    _bad("base str", lambda: token_distances(_GOOD, base="two"), InvalidInputError, "base"),
    _bad(
        "paper+hellinger",
        lambda: token_distances(_GOOD, metric="hellinger", paper_compat="listing"),
        InvalidInputError,
        "jensen_shannon",
    ),
    _bad(
        "paper type",
        lambda: token_distances(_GOOD, paper_compat="yes"),
        InvalidInputError,
        "paper_compat",
    ),
    _bad(
        "paper mode name",
        lambda: token_distances(_GOOD, paper_compat="Notebook"),
        InvalidInputError,
        "'notebook' or 'listing'",
    ),
    _bad(
        "paper mode int",
        lambda: token_distances(_GOOD, paper_compat=1),
        InvalidInputError,
        "paper_compat",
    ),
    _bad(
        "chunk 0",
        lambda: token_distances(_GOOD, chunk_elements=0),
        InvalidInputError,
        "chunk_elements",
    ),
    _bad(
        "chunk float",
        lambda: token_distances(_GOOD, chunk_elements=1.5),
        InvalidInputError,
        "chunk_elements",
    ),
    _bad("threads", lambda: token_distances(_GOOD, n_jobs=0), InvalidInputError, "n_jobs"),
    _bad("dtype", lambda: token_distances(_GOOD, dtype=torch.half), InvalidInputError, "float64"),
    _bad("ragged", lambda: token_distances([[1.0, 0.0], [1.0]]), InvalidInputError, "ragged"),
    _bad("strings", lambda: token_distances([["a", "b"]] * 2), InvalidInputError, "real numbers"),
    _bad("complex", lambda: token_distances(np.eye(2, dtype=complex)), InvalidInputError, "real"),
    _bad(
        "torch complex",
        lambda: token_distances(torch.eye(2, dtype=torch.complex64)),
        InvalidInputError,
        "real numbers",
    ),
    _bad(
        "pair length",
        lambda: pairwise_distance([1.0, 0.0], [1.0, 0.0, 0.0]),
        InvalidInputError,
        "same length",
    ),
    _bad("pair 2-d", lambda: pairwise_distance(_GOOD, _GOOD), InvalidInputError, "1-D"),
    _bad(
        "pair negative",
        lambda: pairwise_distance([1.1, -0.1], [0.5, 0.5]),
        InvalidMatrixError,
        ">= 0",
    ),
    _bad(
        "pair sum",
        lambda: pairwise_distance([0.5, 0.4], [0.5, 0.5]),
        InvalidMatrixError,
        "renormalize",
    ),
    _bad(
        "pair metric",
        lambda: pairwise_distance([1.0], [1.0], metric="kl"),
        InvalidInputError,
        "allow",
    ),
    _bad("pair base", lambda: pairwise_distance([1.0], [1.0], base=1.0), InvalidInputError, "base"),
]


@pytest.mark.parametrize(("call", "exc", "fragment"), BAD_CALLS)
def test_validation_errors(call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and message.strip()
    assert fragment in message


def test_row_sum_error_names_the_matrix_and_row():
    a = np.full((2, 3, 4, 4), 0.25)
    a[1, 2, 3] = [0.5, 0.5, 0.5, 0.5]
    with pytest.raises(InvalidMatrixError, match=r"matrix \(1, 2\), row 3 sums to 2"):
        token_distances(a)


def test_round_off_is_tolerated():
    a = _GOOD.copy()
    a[0] = [1.0 + 5e-7, -5e-7, 0.0]  # tiny negative: clipped
    a[1] = [0.5, 0.5 + 5e-4, 0.0]  # sum within 1e-3: rescaled
    d = token_distances(a)
    expected = jensenshannon([1.0, 0.0, 0.0], [0.5, 0.5 + 5e-4, 0.0], base=2)
    assert d[0, 1] == pytest.approx(expected, abs=1e-12)


# ----------------------------------------------------------------------------------
# larger inputs
# ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_n512_against_scipy_samples():
    rng = np.random.default_rng(17)
    x = rng.normal(size=(2, 512, 512)) * 2
    x = np.exp(x - x.max(-1, keepdims=True))
    a = (x / x.sum(-1, keepdims=True)).astype(np.float32)
    a[1] = np.tril(a[1])
    a[1] /= a[1].sum(-1, keepdims=True)
    d = token_distances(a, chunk_elements=1 << 22)
    p = a.astype(np.float64)
    for b, i, j in [(0, 0, 511), (0, 100, 101), (1, 3, 400), (1, 510, 511), (1, 0, 1)]:
        assert d[b, i, j] == pytest.approx(jensenshannon(p[b, i], p[b, j], base=2), abs=1e-12)
    np.testing.assert_array_equal(d, np.swapaxes(d, -1, -2))


def test_fast_paths_of_preparation_match_general_path():
    """Rows without zeros, exactly normalized rows and signed zeros take shortcuts
    (no support pass, no clamp, no division); the numbers are those of the general path."""
    rng = np.random.default_rng(11)
    a = dirichlet_rows(rng, (3,), 9)  # no zeros: support is every key
    ref = np.array([[[pairwise_distance(p, q) for q in m] for p in m] for m in a])
    np.testing.assert_allclose(token_distances(a), ref, atol=1e-12, rtol=0)
    z = dirichlet_rows(rng, (2,), 7, zeros=True)
    neg = z.copy()
    neg[neg == 0.0] = -0.0  # signed zeros: no clamp is needed, same numbers
    np.testing.assert_array_equal(token_distances(neg), token_distances(z))
    off = z.copy()
    off[0, 0, 0] -= 1e-8  # one negative round-off entry and one row off by 1e-8: general path
    clean = np.clip(off, 0.0, None)
    clean[0, 0] /= clean[0, 0].sum()
    np.testing.assert_allclose(token_distances(off), token_distances(clean), atol=1e-12, rtol=0)
    for d in (token_distances(a), token_distances(z), token_distances(off)):
        np.testing.assert_array_equal(d, np.swapaxes(d, -1, -2))
        assert np.all(np.diagonal(d, axis1=-2, axis2=-1) == 0.0)
