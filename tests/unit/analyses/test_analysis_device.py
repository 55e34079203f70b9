"""analyze's path for a model on a GPU (distances and H0 where the model is), run here on CPU
tensors: the same distances as token_distances and the same H0 diagrams as the engines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from _synthetic import text_attention
from attntopo._progress import NO_PROGRESS
from attntopo.analyses._analysis import _on_device
from attntopo.distances import token_distances
from attntopo.topology import persistence
from attntopo.topology.persistence import persistence_batch_valid


@pytest.mark.parametrize("threshold", [math.inf, 0.6])
@pytest.mark.parametrize("causal", [False, True])
def test_device_path_equals_the_cpu_path(threshold, causal):
    atts = [
        text_attention("the cat sat on the mat and the dog slept", L=2, H=3, seed=s, causal=causal)
        for s in (0, 1)
    ]
    dists, dgms = _on_device(atts, "cpu", 0, threshold, NO_PROGRESS)
    k = 0
    for a, d in zip(atts, dists):
        np.testing.assert_array_equal(d, token_distances(a))
        for M in d.reshape(-1, *d.shape[-2:]):
            assert dgms[k] == persistence(M, maxdim=0, threshold=threshold)
            k += 1
    assert k == len(dgms)


@pytest.mark.parametrize("maxdim", [1, 2])
def test_overlapped_h1_equals_the_whole_batch(maxdim):
    """H1 and above: each layer's matrices go to the engines while the next layer's distances are
    computed; the diagrams are exactly those of one persistence batch of every matrix, in the
    same order (text-major, layer, head)."""
    atts = [
        text_attention("the cat sat on the mat and the dog slept by the door", L=3, H=2, seed=s)
        for s in (0, 1)
    ]
    dists, dgms = _on_device(atts, "cpu", maxdim, math.inf, NO_PROGRESS)
    mats = [M for d in dists for M in d.reshape(-1, *d.shape[-2:])]
    for a, d in zip(atts, dists):
        np.testing.assert_array_equal(d, token_distances(a))
    want = persistence_batch_valid(mats, maxdim=maxdim)
    assert len(dgms) == len(want) == 12
    assert all(g == w for g, w in zip(dgms, want))
    assert all(g.maxdim == maxdim for g in dgms)


def test_overlap_keeps_at_most_the_bound_of_layers_waiting(monkeypatch):
    """With slow engines, the device runs ahead by at most MAX_WAITING_LAYERS layers (counted
    from outside: distance computations started minus persistence calls finished), and it does
    run ahead (the engines' work overlaps the next layers' distances)."""
    import threading
    import time

    from attntopo import distances as distances_module
    from attntopo.analyses import _analysis

    lock = threading.Lock()
    real_tdt, real_pbv = distances_module.token_distances_tensor, _analysis.persistence_batch_valid
    state = {"computed": 0, "finished": 0, "ahead": [], "overlapped": False, "busy": 0}

    def tdt(x):
        with lock:
            state["computed"] += 1
            state["ahead"].append(state["computed"] - state["finished"])
            state["overlapped"] |= state["busy"] > 0
        return real_tdt(x)

    def pbv(*args, **kw):
        with lock:
            state["busy"] += 1
        time.sleep(0.25)
        out = real_pbv(*args, **kw)
        with lock:
            state["busy"] -= 1
            state["finished"] += 1
        return out

    monkeypatch.setattr(distances_module, "token_distances_tensor", tdt)
    monkeypatch.setattr(_analysis, "persistence_batch_valid", pbv)
    att = text_attention("the cat sat on the mat and the dog slept", L=8, H=2, seed=2)
    dists, dgms = _on_device([att], "cpu", 1, math.inf, NO_PROGRESS)
    assert len(dgms) == 16 and state["computed"] == state["finished"] == 8
    # the layer being computed plus the waiting ones
    assert max(state["ahead"]) == _analysis.MAX_WAITING_LAYERS + 1, state["ahead"]
    assert state["overlapped"]
    want = real_pbv(list(dists[0].reshape(-1, *dists[0].shape[-2:])), maxdim=1)
    assert all(g == w for g, w in zip(dgms, want))


def test_analyze_takes_the_device_route_when_selected(monkeypatch):
    """analyze itself through the device route (selected here for CPU tensors): the same
    Analysis as the CPU route, for maxdim 0 (H0 by the tree) and 1 (overlapped engines)."""
    import attntopo as at
    from attntopo.analyses import _analysis

    att = text_attention("the cat sat on the mat and the dog slept", L=2, H=3, seed=5)
    for maxdim in (0, 1):
        want = at.analyze(att, maxdim=maxdim, progress=False)
        calls = []

        def route(m, metric, paper_compat, engine):
            calls.append(metric)
            return "cpu"

        monkeypatch.setattr(_analysis, "_device_route", route)
        got = at.analyze(att, maxdim=maxdim, progress=False)
        monkeypatch.undo()
        assert calls == ["jensen_shannon"]
        np.testing.assert_array_equal(got.distances, want.distances)
        for layer in range(2):
            for head in range(3):
                g, w = got.diagram(layer, head), want.diagram(layer, head)
                for d in range(maxdim + 1):
                    np.testing.assert_array_equal(np.sort(g[d], axis=0), np.sort(w[d], axis=0))
        assert got.engine == ("mst" if maxdim == 0 else want.engine)


def test_compare_device_route_equals_the_cpu_route():
    """compare's path for a model on a GPU, on CPU tensors: the distances of device_distances are
    token_distances', and the shared tokens' connection scales from the batched single linkage
    (all heads' trees at once) are SciPy's head by head, exactly (merge heights are entries of
    D)."""
    import torch

    from attntopo.analyses._comparison_heads import device_distances, shared_connection_scales

    for causal in (False, True):
        a = text_attention(
            "the cat sat on the mat and the dog slept", L=2, H=3, seed=4, causal=causal
        )
        T = device_distances(a, "cpu")
        assert isinstance(T, torch.Tensor) and T.dtype == torch.float64
        D = token_distances(a)
        np.testing.assert_array_equal(T.numpy(), D)
        idx = np.array([0, 2, 3, 7])
        got = shared_connection_scales(T, idx)
        want = shared_connection_scales(D, idx)
        assert got.shape == (2, 3, 4, 4)
        np.testing.assert_array_equal(got, want)
        assert np.all(got <= D[:, :, idx][:, :, :, idx])  # a connection scale is at most the edge
