"""phrase_topology computes the phrase's tokens' distances alone (issue 36: a selection of
tokens needs k² pairs, not the context's n²): the full matrix's block, no full matrix made."""

from __future__ import annotations

import numpy as np
import pytest

from _synthetic import text_attention
from attntopo import _native
from attntopo.analyses._phrase import phrase_topology
from attntopo.distances import token_distances

CONTEXTS = [
    "the quantum information theory of attention heads today",
    "classical information theory of entropy",
    "noise: information theory in a channel",
]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_phrase_distances_are_the_full_matrix_block(monkeypatch, distance_shapes, native, causal):
    if not native:
        monkeypatch.setenv("ATTNTOPO_NATIVE", "0")
    elif not _native.available():
        pytest.skip("the C kernel is not built here")
    atts = [text_attention(c, seed=k, L=2, H=3, causal=causal) for k, c in enumerate(CONTEXTS)]
    for metric in ("jensen_shannon", "hellinger"):
        distance_shapes.clear()
        pt = phrase_topology("information theory", atts, metric=metric, progress=False, n_jobs=1)
        for att, idx, sub in zip(atts, pt.token_indices, pt.sub_distances):
            ii = np.array(idx)
            want = token_distances(att, metric=metric)[:, :, ii][:, :, :, ii]
            if native and metric == "jensen_shannon":  # one per-pair routine: the same bits
                np.testing.assert_array_equal(sub, want)
            else:  # other tiles or sums over other keys: float64 round-off
                np.testing.assert_allclose(sub, want, rtol=1e-11, atol=1e-14)
        # the phrase's k x k blocks only, never a context's n x n matrices
        assert distance_shapes[: len(atts)] == [(2, 3, len(i), len(i)) for i in pt.token_indices]
