"""attntopo.corpus with one long text among short fortunes (issue 28 item 5): the batch's texts
are computed in length chunks (the long text never shares a forward pass and its matrices with
the short ones), the progress callback moves within the batch, and a resumed store equals an
uninterrupted one exactly."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attntopo import corpus
from attntopo.datasets import fortunes

LAYERS, HEADS = [0], [0, 5]


@given(st.lists(st.integers(1, 600), max_size=40), st.integers(1, 2 * 512**2))
def test_length_chunks_partition_within_bound(n_tokens, bound):
    from attntopo.corpus._work import length_chunks

    chunks = length_chunks(n_tokens, bound)
    flat = [i for c in chunks for i in c]
    assert sorted(flat) == list(range(len(n_tokens)))  # every text once
    assert [n_tokens[i] for i in flat] == sorted(n_tokens)  # by length
    for c in chunks:  # within the bound, or one text alone
        assert len(c) == 1 or len(c) * max(n_tokens[i] for i in c) ** 2 <= bound
    for a, b in zip(chunks, chunks[1:]):  # greedy: the next text did not fit
        assert (len(a) + 1) * n_tokens[b[0]] ** 2 > bound
    assert length_chunks(n_tokens, bound) == chunks  # a function of the lengths


@pytest.fixture(scope="module")
def texts() -> list[str]:
    ds = fortunes(categories=["science"], min_words=4, max_words=14, n_per_category=15, seed=5)
    short = [" ".join(t.split()) for t in ds.texts]
    long = " ".join(
        " ".join(t.split())
        for t in fortunes(categories=["science"], min_words=4, n_per_category=400, seed=6).texts
    )
    return short[:11] + [long] + short[11:15]  # the long text is in the second batch of 8


def _spy(monkeypatch, model):
    calls: list[list[int]] = []
    real = model.attention

    def attention(texts, **kw):
        out = real(texts, **kw)
        calls.append([a.n_tokens for a in (out if isinstance(out, list) else [out])])
        return out

    real_stream = model.stream

    def stream(texts, fn, **kw):  # features() runs the model layer by layer through stream()
        encs = real_stream(texts, fn, **kw)
        calls.append([len(e.ids) for e in encs])
        return encs

    monkeypatch.setattr(model, "attention", attention)
    monkeypatch.setattr(model, "stream", stream)
    return calls


def test_long_text_is_computed_alone_and_the_bar_moves_within_its_batch(
    minilm, texts, tmp_path, monkeypatch
):
    from attntopo.corpus._work import CHUNK_ELEMENTS

    calls = _spy(monkeypatch, minilm)
    seen: list[int] = []
    store = corpus.run(
        texts,
        out=tmp_path / "s",
        model=minilm,
        layers=LAYERS,
        heads=HEADS,
        batch_size=8,
        progress=lambda done, total, stage: seen.append(done),
    )
    df = store.to_pandas()
    assert df["truncated"].sum() == 1 and df["n_tokens"].max() == 512
    # the padded attention of every forward pass within the bound, the long text alone
    for lengths in calls:
        assert len(lengths) == 1 or len(lengths) * max(lengths) ** 2 <= CHUNK_ELEMENTS
    assert [1 for lengths in calls if 512 in lengths] == [1] and [512] in calls
    assert sorted(sum(calls, [])) == sorted(df["n_tokens"])  # every text computed once
    # the second batch's 7 short texts are counted before its long one is done
    assert 8 + 7 in seen and seen[-1] == 16 and seen == sorted(seen)


def test_resumed_store_equals_an_uninterrupted_one(minilm, texts, tmp_path):
    def run(folder):
        return corpus.run(
            texts,
            out=tmp_path / folder,
            model=minilm,
            layers=LAYERS,
            heads=HEADS,
            batch_size=8,
            progress=False,
        )

    whole = run("a").to_pandas()
    os.unlink(run("b").part_path(1))  # the batch holding the long text is lost
    again = run("b").to_pandas()
    assert list(again.columns) == list(whole.columns)
    cols = [c for c in whole.columns if c.startswith("L")]
    assert np.array_equal(again[cols].to_numpy(), whole[cols].to_numpy(), equal_nan=True)
    assert again.drop(columns=cols).equals(whole.drop(columns=cols))
