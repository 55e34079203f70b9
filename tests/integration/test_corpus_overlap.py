"""The local corpus engine overlaps a batch's persistence (worker processes fed from a
background thread) with the next batch's forward pass on one torch thread: the rows are those
of the synchronous BatchWorker, parts are still written in batch order, and torch's thread
count is restored."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from attntopo import corpus
from attntopo._threads import torch_threads
from attntopo.corpus._work import BatchWorker
from attntopo.datasets import fortunes

LAYERS, HEADS = [0, 4], [2, 9]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    ds = fortunes(categories=["computers"], min_words=4, max_words=20, n_per_category=14, seed=5)
    return [" ".join(t.split()) for t in ds.texts]


def test_started_batches_give_the_synchronous_rows(minilm, texts, tmp_path):
    """Every set with persistence (js, its image, barcode) and without (graph), diagrams kept,
    a row that fails at tokenization: three batches started before any is finished (their
    persistence queued in the background) give the rows of one synchronous call each."""
    batch = 5
    rows = texts[:13]
    rows[6] = "\u0301"  # no token but special ones: a failed row
    inp = corpus.open_input(rows)
    tables = [t for _, t in inp.batches(batch)]
    inp.close()
    settings = corpus.make_settings(
        minilm,
        sets=("js", "barcode", "graph", "js_image"),
        layers=LAYERS,
        heads=HEADS,
        keep_diagrams=True,
        batch_size=batch,
    )
    worker = BatchWorker(settings, model=minilm)
    with torch_threads(1):  # the overlapped forward pass's thread count: the same float32 kernels
        sync = [worker(t) for t in tables]
    with ThreadPoolExecutor(1) as ex:
        finishes = [worker.start(t, submit=ex.submit, forward_threads=1) for t in tables]
        got = [f() for f in finishes]
    for a, b in zip(got, sync):
        assert a.equals(b)
    status = sync[1].column("status").to_pylist()
    assert status == ["ok", "failed", "ok", "ok", "ok"]


def test_local_run_writes_parts_in_order_and_restores_torch_threads(minilm, texts, tmp_path):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    seen_threads: list[int] = []
    hook = minilm.hf_model.register_forward_pre_hook(
        lambda *_: seen_threads.append(torch.get_num_threads())
    )
    done: list[int] = []
    try:
        store = corpus.run(
            texts[:12],
            out=tmp_path / "s",
            model=minilm,
            layers=LAYERS,
            heads=HEADS,
            batch_size=3,
            n_jobs=2,
            progress=lambda d, t, s: done.append(d),
        )
    finally:
        hook.remove()
    assert torch.get_num_threads() == before
    assert seen_threads and set(seen_threads) == {max(1, (os.cpu_count() or 1) - 2)}
    assert [d for d in done if d] == [3, 6, 9, 12]
    assert [p.name for p in sorted(store.parts_dir.glob("part-*.parquet"))] == [
        corpus.part_name(k) for k in range(4)
    ]
    assert store.to_pandas()["row"].tolist() == list(range(12))


def test_packed_rows_unpack_to_the_unpacked_rows(minilm, texts):
    """What a Ray actor sends (BatchWorker(packed=True): the feature values in one fixed-size
    list column) is, after unpack_features, the table the unpacked worker makes: the same
    values, nulls where a row is not ok (a failed row here), the same schema, the same
    carried and diagram columns."""
    from attntopo.corpus._work import PACKED_FEATURES, packed_schema, unpack_features

    rows = texts[:6]
    rows[2] = "\u0301"  # no token but special ones: a failed row, its features null
    inp = corpus.open_input(rows)
    ((_, table),) = inp.batches(6)
    inp.close()
    settings = corpus.make_settings(
        minilm, sets=("js", "graph"), layers=LAYERS, heads=HEADS, keep_diagrams=True, batch_size=6
    )
    plain = BatchWorker(settings, model=minilm)
    packed = BatchWorker(settings, model=minilm, packed=True)
    with torch_threads(1):
        want, sent = plain(table), packed(table)
    assert sent.num_columns == want.num_columns - len(plain.columns) + 1
    assert sent.schema.equals(packed_schema(want.schema, plain.columns))
    assert sent.column(PACKED_FEATURES).null_count == 0
    got = unpack_features(sent, plain.columns, want.schema)
    assert got.equals(want)
    assert (
        got.column(plain.columns[0]).null_count == 1
        and want.column("status")[2].as_py() == "failed"
    )
    # a table without the packed column (an unpacked worker's) passes through
    assert unpack_features(want, plain.columns, want.schema).equals(want)
