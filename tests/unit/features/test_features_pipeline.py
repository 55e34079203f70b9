"""features() computes a chunk's diagrams in the background while the next chunk goes on:
the rows must be those of the synchronous path, chunk by chunk, in input order."""

from __future__ import annotations

import numpy as np
import pytest

from _synthetic import text_attention
from attntopo._threads import torch_threads
from attntopo.errors import InvalidInputError
from attntopo.features import FEATURE_SETS, FeatureSettings, features
from attntopo.features._compute import chunk_rows, threads_beside_workers

SETS = ("js", "graph", "barcode", "template", "js_landscape")
TEXTS = [
    "A short one.",
    "Tokens, commas, and a few more words here!",
    "Three words only",
    "Another sentence; with punctuation: and more words than before, surely.",
    "x y z",
    "The last text of the list, a little longer than most of the others here.",
    "Odd one out?",
]


@pytest.fixture(scope="module")
def atts():
    return [text_attention(t, L=2, H=3, seed=k) for k, t in enumerate(TEXTS)]


@pytest.mark.parametrize("batch_size", [1, 2, 3, 16])
def test_chunked_background_rows_equal_the_synchronous_ones(atts, batch_size):
    st = FeatureSettings(
        sets=SETS,
        thresholds=(0.025, 0.05, 0.1, 0.25, 0.5, 0.75),
        scales=(0.1, 0.3, 0.5),
        quantiles=(0.25, 0.5),
        cycle_cap=50,
    ).st()
    expected = np.concatenate(
        [chunk_rows([a], [None], st, False, None, 1) for a in atts],
        axis=0,  # drop_special=False: features' default
    )  # one text at a time, serially, in this thread
    got = features(
        atts, sets=SETS, scales=(0.1, 0.3, 0.5), quantiles=(0.25, 0.5), batch_size=batch_size
    )
    np.testing.assert_array_equal(got.values, expected)
    assert got.texts == TEXTS
    serial = features(
        atts,
        sets=SETS,
        scales=(0.1, 0.3, 0.5),
        quantiles=(0.25, 0.5),
        batch_size=batch_size,
        n_jobs=1,
    )
    np.testing.assert_array_equal(serial.values, expected)


def test_an_error_in_a_later_chunk_is_raised_while_one_is_pending(atts):
    other = text_attention("Different heads here.", L=2, H=3, seed=9).select(heads=[0, 1])
    with pytest.raises(InvalidInputError, match=r"texts\[3\] holds other layers/heads"):
        features([*atts[:3], other], sets=("js", "barcode"), batch_size=2)
    # and the next call works (no chunk left behind in the background)
    assert features(atts[:2], sets=("js",)).values.shape[0] == 2


def test_forward_threads_leave_the_workers_their_cores():
    import os

    cpus = os.cpu_count() or 1
    assert threads_beside_workers(None) == 1 and threads_beside_workers(-1) == 1
    assert threads_beside_workers(1) == max(1, cpus - 1)


def test_torch_threads_restored():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError):
        with torch_threads(1):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before


def test_torch_threads_exact_at_most_and_none():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with torch_threads(2):  # exact: raised to 2
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 1
        with torch_threads(2, at_most=True):  # a cap never raises the count
            assert torch.get_num_threads() == 1
        torch.set_num_threads(2)
        with torch_threads(1, at_most=True):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with torch_threads(None), torch_threads(None, at_most=True):
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_device_layers_go_to_the_engines_layer_by_layer():
    """A layer given with its weights on the model's device (here CPU tensors, the GPU path's
    code): its JS matrices go to the persistence engines at once, in the background, while the
    next layer comes (at most two batches alive), and the rows equal the host path's exactly."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import torch

    from _feature_refs import synthetic_attention
    from attntopo.features import FeatureSettings, _layers

    rng = np.random.default_rng(3)
    W = rng.random((4, 2, 9, 9)) ** 3
    W /= W.sum(-1, keepdims=True)
    att = synthetic_attention(W.astype(np.float32))
    st_ = FeatureSettings(
        sets=("js", "barcode"), thresholds=(0.1,), scales=(0.5,), quantiles=(0.5,), cycle_cap=50
    ).st()
    waiting, lock = [0], threading.Lock()
    calls, outstanding = [], []

    def slow(fn, *args, **kw):
        time.sleep(0.05)
        try:
            return fn(*args, **kw)
        finally:
            with lock:
                waiting[0] -= 1

    def rows(device):
        with ThreadPoolExecutor(1) as ex:

            def submit(fn, *args, **kw):
                calls.append(len(args[0]))
                with lock:
                    waiting[0] += 1
                    outstanding.append(waiting[0])
                return ex.submit(slow, fn, *args, **kw)

            chunk = _layers.ChunkFeatures(1, [None], st_, False, None, 1, submit=submit)
            for i in range(4):
                one = _layers._one_layer(att, i)
                chunk.add(
                    0, one, device_weights=torch.from_numpy(one.weights[0]) if device else None
                )
            chunk.start()
            return chunk.finish()[0]

    host = rows(False)
    assert calls == [8, 8]  # js and barcode: one batch each, at the end
    calls.clear()
    outstanding.clear()
    dev = rows(True)
    assert calls == [2] * 8  # each layer's two heads, js and barcode, as the layer is done
    np.testing.assert_array_equal(dev, host)
    # the layers ran ahead of the slow engines, by at most two batches of each kind
    assert 2 < max(outstanding) <= 4, outstanding


@pytest.mark.parametrize("drop_special", [False, True])
def test_heads_in_groups_give_the_rows_of_whole_layers(atts, monkeypatch, drop_special):
    """A long text's heads go through the sets in groups bounded by GROUP_BYTES (issue 28: one
    512-token text's 72 distance matrices were all alive at once); every set works head by
    head, so the rows are those of whole layers exactly.  Here the budget is made one head of
    the shortest text's tokens, so that these short texts are grouped as a long one would be."""
    from attntopo.features import _layers

    # every set of single texts that works head by head (a new one is checked with no edit)
    sets = tuple(n for n, s in FEATURE_SETS.items() if s.input == "text" and not s.per_text)
    kw = dict(
        sets=sets,
        scales=(0.1, 0.3, 0.5),
        quantiles=(0.25, 0.5),
        drop_special=drop_special,
        n_jobs=1,
    )
    whole = features(atts, **kw)
    calls: list[int] = []
    real = _layers.token_distances

    def spy(W, *a, **k):
        calls.append(W.shape[0])
        return real(W, *a, **k)

    n = min(a.n_tokens for a in atts)
    monkeypatch.setattr(_layers, "GROUP_BYTES", 8 * n * n)
    monkeypatch.setattr(_layers, "_FLUSH_ELEMENTS", 2 * n * n)
    monkeypatch.setattr(_layers, "token_distances", spy)
    grouped = features(atts, **kw)
    assert max(calls) == 1 < len(calls)  # one head at a time, for every text here
    assert grouped.columns == whole.columns
    np.testing.assert_array_equal(grouped.values, whole.values)
