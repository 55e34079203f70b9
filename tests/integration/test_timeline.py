"""Topology in time on the real packaged models: slices equal separate runs, the 2-parameter
view agrees with the slices, coherence, vines and the save/load round trip."""

from __future__ import annotations

import time

import numpy as np
import pytest

import attntopo as at
from _tolerances import for_model
from attntopo.analyses import _timeline as tlmod
from attntopo.errors import EmptyTextError, InvalidInputError, OutOfRangeError
from attntopo.topology import persistence
from attntopo.topology.diagram_distances import bottleneck, wasserstein
from attntopo.topology.multiparameter import multipers_available

pytestmark = pytest.mark.slow

TEXT = "Quantum information theory allows us to study attention using entanglement."
LONG = (
    "The founding paper asks how the simplicial complex of a sentence changes as new tokens "
    "arrive. We read attention as a metric space: every token is a point, and two tokens are "
    "close when they attend to the same places. As the sentence grows, points appear, loops "
    "are born and filled, and clusters merge. A causal model never revises the past, so the "
    "distances between earlier tokens never change when a new token arrives, and the whole "
    "history is one two-parameter filtration of the plane."
)


def _betti(dgm, d, eps):
    bars = np.asarray(dgm[d])
    return int(np.sum((bars[:, 0] <= eps) & (bars[:, 1] > eps)))


# ------------------------------------------------------------------ shared checks
def _check_slices_match_separate_runs(model, tl, layer, head, which=None):
    """Slices equal a forward pass of that prefix alone (same special-token template)."""
    ids = model.tokenize(tl.text).ids
    n = len(ids)
    lead, trail = ids[: tl.n_lead], ids[n - tl.n_trail :]
    content = ids[tl.n_lead : n - tl.n_trail]
    slices = tl.slices if which is None else [tl.slices[k] for k in which]
    tol = for_model(model)
    for s in slices:
        k = s.t - tl.n_lead - tl.n_trail
        prefix = lead + content[:k] + trail
        assert len(prefix) == s.t
        alone = model._forward([prefix])[0][layer, head]
        np.testing.assert_allclose(s.attention.weights[0, 0], alone, atol=tol.weights_atol, rtol=0)
        np.testing.assert_allclose(
            s.distances, at.token_distances(alone), atol=tol.distance_atol, rtol=0
        )
        assert s.tokens == model.tokenizer.convert_ids_to_tokens(prefix)
        assert s.attention.layers == (layer,) and s.attention.heads == (head,)
        # the diagram is the slice's own persistence
        assert s.diagram.allclose(persistence(s.distances, maxdim=tl.maxdim), atol=1e-12)


def _check_coherence_and_vines(tl):
    S = len(tl.slices)
    assert tl.bottleneck.shape == tl.wasserstein.shape == (S - 1, tl.maxdim + 1)
    for k in (0, S // 2, S - 2):
        a, b = tl.slices[k].diagram, tl.slices[k + 1].diagram
        np.testing.assert_allclose(tl.bottleneck[k], bottleneck(a, b), atol=1e-12)
        np.testing.assert_allclose(tl.wasserstein[k], wasserstein(a, b, p=tl.p), atol=1e-9)
    assert np.all(tl.wasserstein + 1e-12 >= tl.bottleneck)
    np.testing.assert_allclose(tl.change(metric="bottleneck"), tl.bottleneck.max(axis=1))
    top = tl.top_changes(k=3)
    assert len(top) == 3 and top[0].score >= top[1].score >= top[2].score
    assert top[0].score == pytest.approx(tl.change().max())
    assert tl.slice(top[0].t).token == top[0].position
    assert top[0].token == tl.tokens[top[0].position]
    for d in range(tl.maxdim + 1):
        vines = tl.vines(dim=d)
        # the vines partition the points of all diagrams
        seen = {(int(t), int(r)) for v in vines for t, r in zip(v.times, v.rows)}
        total = sum(len(s.diagram[d]) for s in tl.slices)
        assert len(seen) == total == sum(v.length for v in vines)
        for v in vines:
            assert np.all(np.diff(v.times) == 1)
            for t, r, pt in zip(v.times, v.rows, v.points):
                np.testing.assert_array_equal(tl.slice(int(t)).diagram[d][r], pt)
            assert (v.born_token is None) == (v.start == tl.t0)
            assert (v.died_token is None) == (v.end == tl.slices[-1].t)
    # H0: exactly one essential class per slice, one vine that lives throughout
    ess = [v for v in tl.vines(dim=0) if np.isinf(v.points[:, 1]).all()]
    assert len(ess) == 1 and ess[0].length == S


# --------------------------------------------------------------------- minilm
@pytest.fixture(scope="module")
def tl_minilm(minilm):
    return at.timeline(TEXT, minilm, layers=2, heads=5)


def test_minilm_prefix_template(tl_minilm, minilm):
    tl = tl_minilm
    n = len(minilm.tokenize(TEXT).ids)
    assert (tl.n_lead, tl.n_trail, tl.causal, tl.one_pass, tl.growing) == (
        1,
        1,
        False,
        False,
        False,
    )
    assert tl.times.tolist() == list(range(3, n + 1))
    first, last = tl.slices[0], tl.slices[-1]
    assert first.tokens[0] == "[CLS]" and first.tokens[-1] == "[SEP]" and len(first.tokens) == 3
    assert last.tokens == tl.tokens
    # slice t: [CLS] + first t-2 content tokens + [SEP]; the arriving token is the last content one
    s = tl.slice(7)
    assert s.tokens == [tl.tokens[0]] + tl.tokens[1:6] + [tl.tokens[-1]]
    assert s.token == 5 and s.positions.tolist() == [0, 1, 2, 3, 4, 5, n - 1]
    np.testing.assert_allclose(s.attention.weights.sum(-1), 1.0, atol=1e-5)


@pytest.mark.forward_compare
def test_minilm_batched_prefixes_equal_separate_runs(tl_minilm, minilm):
    _check_slices_match_separate_runs(minilm, tl_minilm, 2, 5)


def test_minilm_coherence_and_vines(tl_minilm):
    _check_coherence_and_vines(tl_minilm)


def test_minilm_two_parameter_is_refused(tl_minilm):
    for call in (tl_minilm.hilbert, tl_minilm.signed_barcode, tl_minilm.bifiltration_data):
        with pytest.raises(InvalidInputError, match="bidirectional.*slice view"):
            call()
    # the slice view is there
    bc = tl_minilm.betti_curves()
    s = tl_minilm.slices[-1]
    for eps in (0.05, 0.2, 0.5):
        assert bc.at(eps, s.t, dim=0) == _betti(s.diagram, 0, eps)


def test_minilm_drop_special_and_t0(minilm):
    tl = at.timeline(TEXT, minilm, layers=0, heads=0, drop_special=True, t0=5)
    assert tl.times[0] == 5
    for s in tl.slices:
        assert not s.attention.special.any() and s.n_points == s.t - 2
        assert s.attention.special_dropped
        np.testing.assert_allclose(s.attention.weights.sum(-1), 1.0, atol=1e-5)
    with pytest.raises(OutOfRangeError, match="t0 must be an int in 3"):
        at.timeline(TEXT, minilm, layers=0, heads=0, t0=2)
    with pytest.raises(OutOfRangeError, match="head"):
        at.timeline(TEXT, minilm, heads=12)
    with pytest.raises(EmptyTextError):
        at.timeline("   ", minilm, layers=0, heads=0)
    with pytest.raises(InvalidInputError, match="bidirectional"):
        at.timeline(minilm.attention(TEXT), minilm, layers=0, heads=0)


def test_several_heads_share_the_work(minilm, monkeypatch):
    calls = {"pb": 0}
    real = tlmod.persistence_batch

    def counting(*a, **k):
        calls["pb"] += 1
        return real(*a, **k)

    monkeypatch.setattr(tlmod, "persistence_batch", counting)
    tls = at.timeline("Attention is all you need.", minilm, layers=[1, 3], heads=[0, 7])
    assert calls["pb"] == 1
    assert [(t.layer, t.head) for t in tls] == [(1, 0), (1, 7), (3, 0), (3, 7)]
    one = at.timeline("Attention is all you need.", minilm, layers=3, heads=7)
    for a, b in zip(tls[3].slices, one.slices):
        np.testing.assert_allclose(a.distances, b.distances, atol=1e-9)


def test_save_load_round_trip(tl_minilm, tmp_path):
    out = tl_minilm.save(tmp_path / "tl")
    back = at.load_result(out)
    assert isinstance(back, at.Timeline)
    assert back == tl_minilm
    assert [len(v.times) for v in back.vines(dim=1)] == [
        len(v.times) for v in tl_minilm.vines(dim=1)
    ]
    assert back.top_changes(k=2) == tl_minilm.top_changes(k=2)


# -------------------------------------------------------------------- smollm2
@pytest.fixture(scope="module")
def tl_smollm2(smollm2):
    return at.timeline(TEXT, smollm2, layers=4, heads=3)


@pytest.mark.forward_compare
@pytest.mark.xdist_group("smollm2")
def test_smollm2_one_pass_equals_separate_runs(tl_smollm2, smollm2, monkeypatch):
    tl = tl_smollm2
    n = len(smollm2.tokenize(TEXT).ids)
    assert (tl.n_lead, tl.n_trail, tl.causal, tl.one_pass, tl.growing) == (0, 0, True, True, True)
    assert tl.times.tolist() == list(range(1, n + 1))
    S = len(tl.slices)
    _check_slices_match_separate_runs(
        smollm2, tl, 4, 3, which=sorted({0, 1, 2, S // 2, S - 2, S - 1})
    )
    # distances never change: every slice's matrix is a block of the last one
    D = tl.slices[-1].distances
    for s in tl.slices:
        np.testing.assert_array_equal(s.distances, D[: s.t, : s.t])
    # and it took one forward pass
    calls = []
    real = smollm2._forward_layers  # every forward pass, layer by layer since the streaming work

    def spy(batch_ids, *args, **kw):
        calls.append(len(batch_ids))
        return real(batch_ids, *args, **kw)

    monkeypatch.setattr(smollm2, "_forward_layers", spy)
    at.timeline(TEXT, smollm2, layers=[0, 4], heads=3)
    assert calls == [1]


@pytest.mark.xdist_group("smollm2")
def test_smollm2_coherence_and_vines(tl_smollm2):
    _check_coherence_and_vines(tl_smollm2)


@pytest.mark.xdist_group("smollm2")
def test_smollm2_hilbert_function_agrees_with_the_slices(tl_smollm2):
    tl = tl_smollm2
    hf = tl.hilbert()  # from the slices
    D, times = tl.bifiltration_data()
    np.testing.assert_array_equal(times, np.arange(1, len(tl.tokens) + 1))
    rng = np.random.default_rng(0)
    probes = np.concatenate([rng.choice(hf.scales, 20), rng.uniform(0, D.max(), 20), [0.0, 1.0]])
    for s in tl.slices:
        for eps in probes:
            for d in (0, 1):
                assert hf.at(eps, s.t, dim=d) == _betti(s.diagram, d, eps)
    if multipers_available():
        mp = tl.hilbert(backend="multipers")
        assert mp.backend == "multipers"
        np.testing.assert_array_equal(mp.values, hf.values)
        rank = tl.signed_barcode(degree=1, invariant="rank", resolution=16)
        g = rank.scale_grid
        last = tl.slices[-1]
        for i in range(0, 16, 3):
            for j in range(i, 16, 2):
                bars = np.asarray(last.diagram[1])
                ref = int(np.sum((bars[:, 0] <= g[i]) & (bars[:, 1] > g[j])))
                assert rank.rank((g[i], last.t), (g[j], last.t)) == ref


@pytest.mark.xdist_group("smollm2")
def test_smollm2_from_an_attention_without_the_model(tl_smollm2, smollm2):
    att = smollm2.attention(TEXT)
    tl = at.timeline(att, layers=4, heads=3)
    assert tl.times.tolist() == tl_smollm2.times.tolist()
    for a, b in zip(tl.slices, tl_smollm2.slices):
        assert a.attention.weights.tobytes() == b.attention.weights.tobytes()
        assert np.array_equal(a.distances, b.distances) and a.diagram == b.diagram
    with pytest.raises(OutOfRangeError, match="layer 2 is not in this Attention"):
        at.timeline(att.select(layers=[4]), layers=2, heads=3)


@pytest.mark.xdist_group("smollm2")
def test_smollm2_hundred_tokens_in_seconds(smollm2):
    n = len(smollm2.tokenize(LONG).ids)
    assert 90 <= n <= 110
    at.timeline("warm up", smollm2, layers=0, heads=0)
    start = time.perf_counter()
    tl = at.timeline(LONG, smollm2, layers=10, heads=4)
    elapsed = time.perf_counter() - start
    assert len(tl.slices) == n
    assert elapsed < 30, f"timeline of {n} tokens took {elapsed:.1f} s"
