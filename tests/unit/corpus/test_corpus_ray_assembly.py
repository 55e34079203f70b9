"""The Ray engine's driver side without Ray: output blocks regrouped into whole batches,
each handed out once, whatever blocks Ray delivers (no model, no Ray)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.corpus._ray import _BATCH, RayRunStats, _Assembler, _joined


def _batches(sizes: list[int]) -> dict[int, pa.Table]:
    """Batch k: rows numbered consecutively across batches, a value column, the batch column."""
    out, row = {}, 0
    for k, n in enumerate(sizes):
        rows = list(range(row, row + n))
        out[k] = pa.table(
            {
                "row": pa.array(rows, pa.int64()),
                "value": pa.array([r * 0.5 for r in rows], pa.float64()),
                "lists": pa.array([[float(r)] * (r % 3) for r in rows], pa.list_(pa.float64())),
                _BATCH: pa.array([k] * n, pa.int64()),
            }
        )
        row += n
    return out


def _assemble(parts: _Assembler, blocks: list[pa.Table]) -> dict[int, pa.Table]:
    got: dict[int, pa.Table] = {}
    for b in blocks:
        for k, pieces in parts.add(b):
            assert k not in got, f"batch {k} handed out twice"
            got[k] = _joined(pieces)
    return got


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=6),
    seed=st.integers(0, 2**32 - 1),
    dup=st.floats(0, 0.5),
    merge=st.floats(0, 1),
    drop=st.booleans(),
)
def test_every_batch_once_in_input_order(sizes, seed, dup, merge, drop):
    """Blocks split at random, shuffled, some delivered twice, neighbours merged across
    batches: every complete batch comes out exactly once, equal to what was sent (rows in
    input order); a batch missing a row never comes out and is reported missing."""
    rng = random.Random(seed)
    batches = _batches(sizes)
    pieces = []
    for k, t in batches.items():
        cuts = (
            sorted(rng.sample(range(1, t.num_rows), rng.randint(0, t.num_rows - 1)))
            if t.num_rows > 1
            else []
        )
        bounds = [0, *cuts, t.num_rows]
        pieces += [t.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    lost = None
    if drop:
        i = rng.randrange(len(pieces))
        lost = pieces.pop(i)[_BATCH][0].as_py()
    pieces += [p for p in pieces if rng.random() < dup]  # delivered twice
    rng.shuffle(pieces)
    blocks: list[pa.Table] = []
    for p in pieces:  # merge neighbours into one block (different batches mixed)
        if blocks and rng.random() < merge:
            blocks[-1] = pa.concat_tables([blocks[-1], p])
        else:
            blocks.append(p)
    parts = _Assembler({k: t.num_rows for k, t in batches.items()})
    got = _assemble(parts, blocks)
    want = {k: t for k, t in batches.items() if k != lost}
    assert set(got) == set(want)
    for k, t in want.items():
        assert got[k].equals(t), k
    assert parts.missing() == ([] if lost is None else [lost])


def test_rows_of_a_batch_never_sent_are_an_error():
    parts = _Assembler({0: 2})
    with pytest.raises(RuntimeError, match="batch 5"):
        parts.add(_batches([1, 1, 1, 1, 1, 2])[5])


def test_stats_from_the_batch_log():
    """The overhead numbers are plain arithmetic on the per-batch log: gaps between one
    actor's consecutive calls, delivery after a call's end, steady throughput."""
    s = RayRunStats(n_actors=2, texts=10, batches=4)
    # (batch, actor, start, end, received, texts)
    s.log = [
        (0, "a", 0.0, 1.0, 1.5, 2),
        (1, "b", 0.0, 2.0, 2.25, 3),
        (2, "a", 1.25, 2.0, 3.0, 2),
        (3, "b", 2.75, 4.0, 4.5, 3),
    ]
    assert s.gap_s == pytest.approx((0.25 + 0.75) / 2)
    assert s.delivery_s == pytest.approx((0.5 + 0.25 + 1.0 + 0.5) / 4)
    assert s.steady_texts_per_s == pytest.approx((10 - 2) / (4.5 - 1.5))
