"""features() computes a chunk's diagrams in the background while the next chunk goes on:
the rows must be those of the synchronous path, chunk by chunk, in input order."""

from __future__ import annotations

import numpy as np
import pytest
from _synthetic import text_attention

from attntopo.errors import InvalidInputError
from attntopo.features import features
from attntopo._threads import torch_threads
from attntopo.features._compute import chunk_rows, threads_beside_workers
from attntopo.features._settings import check_settings

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
    st = check_settings(SETS, (0.025, 0.05, 0.1, 0.25, 0.5, 0.75), (0.1, 0.3, 0.5), (0.25, 0.5), 50)
    expected = np.concatenate(
        [chunk_rows([a], [None], st, False, None, 1) for a in atts], axis=0  # drop_special=False: features' default
    )  # one text at a time, serially, in this thread
    got = features(atts, sets=SETS, scales=(0.1, 0.3, 0.5), quantiles=(0.25, 0.5),
                   batch_size=batch_size)
    np.testing.assert_array_equal(got.values, expected)
    assert got.texts == TEXTS
    serial = features(atts, sets=SETS, scales=(0.1, 0.3, 0.5), quantiles=(0.25, 0.5),
                      batch_size=batch_size, n_jobs=1)
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
