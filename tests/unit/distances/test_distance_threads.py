"""The distance threads: one process-wide pool per thread count, reused by every call."""

from __future__ import annotations

import threading

import numpy as np
import torch
from scipy.spatial.distance import jensenshannon

from attntopo.distances import _workers, token_distances


def test_one_pool_per_thread_count_reused_across_calls():
    assert _workers._shared_executor(2) is _workers._shared_executor(2)
    assert _workers._shared_executor(3) is not _workers._shared_executor(2)
    rng = np.random.default_rng(0)
    before = threading.active_count()
    for _ in range(5):  # each call ran on the same threads: no new ones per call
        P = rng.dirichlet(np.ones(12), size=(6, 12))
        D = np.asarray(token_distances(torch.from_numpy(P), n_jobs=2))
        ref = np.array(
            [[jensenshannon(P[5, i], P[5, j], base=2) for j in range(12)] for i in range(12)]
        )
        np.testing.assert_allclose(D[5], ref, atol=1e-12)
    assert threading.active_count() <= before + 2


def test_a_forked_child_makes_its_own_pool(monkeypatch):
    pool = _workers._shared_executor(2)
    monkeypatch.setattr(_workers, "_EXECUTORS_PID", -1)  # as seen from another process
    fresh = _workers._shared_executor(2)
    assert fresh is not pool
    assert _workers._shared_executor(2) is fresh
