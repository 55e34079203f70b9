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


@pytest.mark.parametrize("threshold", [math.inf, 0.6])
@pytest.mark.parametrize("causal", [False, True])
def test_device_path_equals_the_cpu_path(threshold, causal):
    atts = [text_attention("the cat sat on the mat and the dog slept", L=2, H=3, seed=s, causal=causal)
            for s in (0, 1)]
    dists, dgms = _on_device(atts, "cpu", 0, threshold, NO_PROGRESS)
    k = 0
    for a, d in zip(atts, dists):
        np.testing.assert_array_equal(d, token_distances(a))
        for M in d.reshape(-1, *d.shape[-2:]):
            assert dgms[k] == persistence(M, maxdim=0, threshold=threshold)
            k += 1
    assert k == len(dgms)
    # H1 and above: no diagrams from the device path (the engines compute them on the CPU)
    assert _on_device(atts, "cpu", 1, threshold, NO_PROGRESS)[1] is None


def test_compare_device_route_equals_the_cpu_route():
    """compare's path for a model on a GPU, on CPU tensors: the distances of device_distances are
    token_distances', and the shared tokens' connection scales from the batched single linkage
    (all heads' trees at once) are SciPy's head by head, exactly (merge heights are entries of D)."""
    import torch

    from attntopo.analyses._comparison import device_distances, shared_connection_scales

    for causal in (False, True):
        a = text_attention("the cat sat on the mat and the dog slept", L=2, H=3, seed=4, causal=causal)
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
