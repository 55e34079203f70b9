"""The corpus store without a model: settings and their comparison, atomic parts named by
batch, corrupt and foreign files reported by name, SQL checked against pandas, diagrams."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.corpus import (
    MANIFEST,
    CorpusSettings,
    StoreReader,
    StoreWriter,
    check_same_settings,
    check_store_path,
    feature_columns,
    first_difference,
    open_input,
    open_store,
    output_schema,
    part_name,
)
from attntopo.errors import DamagedPartError, InvalidInputError, ResultFormatError
from attntopo.features import SETTING_NAMES, FeatureSettings
from tests.unit.features.test_features_settings_end_to_end import SAMPLE

SETTINGS = CorpusSettings(
    model="toy",
    model_hash="sha256:" + "0" * 64,
    revision=None,
    attntopo_version="0.0",
    features=FeatureSettings(
        sets=("js",), layers=(0,), heads=(0, 1), thresholds=(0.1,), scales=(0.5,), quantiles=(0.5,)
    ),
    keep_diagrams=True,
    batch_size=2,
)
TEXTS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def _rows(table: pa.Table, seed: int) -> pa.Table:
    """Synthetic store rows for an input batch: features from a seeded generator, one failed
    row when the batch holds 'delta', diagrams of two heads."""
    rng = np.random.default_rng(seed)
    n = table.num_rows
    cols = feature_columns(SETTINGS)
    schema = output_schema(SETTINGS, table.schema)
    status = ["failed" if t == "delta" else "ok" for t in table["text"].to_pylist()]
    ok = np.array([s == "ok" for s in status])
    data = {
        "id": table["id"].combine_chunks(),
        "row": table["row"].combine_chunks(),
        "text_sha256": pa.array(["h"] * n),
        "text": table["text"].combine_chunks(),
        "n_tokens": pa.array([5] * n, pa.int32()),
        "n_unknown": pa.array([0] * n, pa.int32()),
        "truncated": pa.array([False] * n),
        "status": pa.array(status),
        "error": pa.array([None if s == "ok" else "Boom: x" for s in status]),
    }
    vals = rng.random((n, len(cols)))
    for k, c in enumerate(cols):
        data[c] = pa.array(vals[:, k], pa.float64(), mask=~ok)
    births = [[[0.0, 0.0, 0.2], [0.0, 0.1]] if s == "ok" else None for s in status]
    deaths = [[[0.3, np.inf, 0.4], [np.inf, 0.5]] if s == "ok" else None for s in status]
    dims = [[[0, 0, 1], [0, 0]] if s == "ok" else None for s in status]
    for name, v in zip(
        ("diagram_births", "diagram_deaths", "diagram_dims"), (births, deaths, dims)
    ):
        data[name] = pa.array(v, schema.field(name).type)
    return pa.Table.from_arrays([data[f.name] for f in schema], schema=schema)


def _writer(tmp_path, write=True) -> StoreWriter:
    inp = open_input(TEXTS)
    schema = output_schema(SETTINGS, inp.schema)
    info = {"fingerprint": inp.fingerprint, "total": inp.total, "n_empty": 3}
    writer = StoreWriter.create(tmp_path / "s", SETTINGS, schema, info, feature_columns(SETTINGS))
    if write:
        for k, t in inp.batches(SETTINGS.batch_size):
            writer.write_part(k, _rows(t, k))
    return writer


def _store(tmp_path, write=True) -> StoreReader:
    """The reader of :func:`_writer`'s store (the one its writes told what they wrote)."""
    return _writer(tmp_path, write).store


#: The one line of every read of a part of another store put in a part's place.
_ANOTHERS = re.escape(
    f"{part_name(1)}: corrupt part file (its tag (the store and batch it was written for) is "
    "another's): StoreReader.verify() names the damaged parts; a run of the same command "
    "recomputes them"
)


def _footer_start(data: bytes) -> int:
    """Where a Parquet file's footer starts (its length is the 4 bytes before the trailing
    magic)."""
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


# ------------------------------------------------------------------ settings
def test_manifest_round_trip_and_columns():
    assert CorpusSettings.from_manifest(json.loads(json.dumps(SETTINGS.to_manifest()))) == SETTINGS
    cols = feature_columns(SETTINGS)
    assert cols[0] == "L0H0.js.h0.n_bars" and len(cols) == 2 * (2 * (5 + 1) + 1)
    doc = SETTINGS.to_manifest()
    with pytest.raises(ResultFormatError, match="unknown feature settings tau"):
        CorpusSettings.from_manifest({**doc, "features": {**doc["features"], "tau": 1}})


@pytest.mark.parametrize(
    "drop",
    [
        ("settings", "model"),
        ("settings", "dtype"),
        ("settings", "pairs"),
        ("settings", "keep_text"),
        ("settings", "features"),
        ("settings", "features", "spectral_k"),
        ("settings", "features", "engine"),
        ("store_id",),
        ("settings",),
        ("schema",),
        ("feature_columns",),
        ("input",),
        ("input", "total"),
        ("input", "n_empty"),
        ("input", "fingerprint"),
    ],
)
def test_a_manifest_without_a_key_is_refused_in_one_line_naming_it(tmp_path, drop):
    """A store is of format version 3 and its manifest holds every key (nothing reads an older
    form: no default stands in for a missing setting, nor for a flat settings object): a
    missing one is one line naming the manifest, the key and ``--new-store``, for a reader
    and a run alike."""
    from attntopo import corpus

    store = _store(tmp_path)
    mf = store.path / MANIFEST
    doc = json.loads(mf.read_text())
    inner = doc
    for k in drop[:-1]:
        inner = inner[k]
    del inner[drop[-1]]
    mf.write_text(json.dumps(doc))
    line = (
        f"{mf}: {'.'.join(drop)!r} is missing, which every store of its format version has "
        "(the manifest was changed since it was written); --new-store (new_store=True) starts "
        "the store over (its parts are removed), or give another STORE"
    )
    with pytest.raises(ResultFormatError) as e:
        open_store(store.path)
    assert str(e.value) == line
    with pytest.raises(ResultFormatError) as e:
        corpus.run(TEXTS, out=store.path, progress=False)
    assert str(e.value) == line


def test_a_manifest_record_of_its_inputs_is_complete_and_typed(tmp_path):
    """The counts of a store (``total``, ``skipped_empty``, ``remaining``) and an append's part
    numbers come from the manifest's records of its inputs: a record without one of those
    keys, or with a value of another type, is one line naming the key, not a count that a
    default of 0 made up; the ``inputs`` an append writes are checked entry by entry."""
    store = _store(tmp_path)
    mf = store.path / MANIFEST
    doc = json.loads(mf.read_text())
    every = " as in every store of its format version"
    tail = (
        " (the manifest was changed since it was written); --new-store (new_store=True) starts "
        "the store over (its parts are removed), or give another STORE"
    )
    first = {**doc["input"], "first_part": 0, "already": 0, "status": "done"}
    second = {**first, "fingerprint": "f" * 16, "first_part": 3, "already": 1}
    counts = open_store(store.path).counts()
    mf.write_text(json.dumps({**doc, "inputs": [first]}))
    assert open_store(store.path).counts() == counts  # one input, listed or not: the same
    mf.write_text(json.dumps({**doc, "inputs": [first, second]}))
    two = open_store(store.path).counts()
    assert two["total"] == 2 * counts["total"] - 1
    assert two["skipped_empty"] == 2 * counts["skipped_empty"]
    cases = {
        "'input.total' is a string, not a whole number of at least 0": {
            "input": {**doc["input"], "total": "5"}
        },
        "'input.total' is a boolean, not a whole number of at least 0": {
            "input": {**doc["input"], "total": True}
        },
        "'input.n_empty' is a number, not a whole number of at least 0": {
            "input": {**doc["input"], "n_empty": -1}
        },
        "'input.fingerprint' is null, not a string": {
            "input": {**doc["input"], "fingerprint": None}
        },
        "'inputs' is a list, not a list of objects": {"inputs": []},
        "'inputs' is an object, not a list of objects": {"inputs": {}},
        "'inputs[1]' is a number, not an object": {"inputs": [first, 3]},
        "'inputs[1].already' is missing, which every store of its format version has": {
            "inputs": [first, {k: v for k, v in second.items() if k != "already"}]
        },
        "'inputs[0].first_part', 'inputs[0].status' are missing, which every store of its "
        "format version has": {
            "inputs": [{k: v for k, v in first.items() if k not in ("first_part", "status")}]
        },
        "'inputs[1].already' is null, not a whole number of at least 0": {
            "inputs": [first, {**second, "already": None}]
        },
    }
    for words, change in cases.items():
        mf.write_text(json.dumps({**doc, **change}))
        with pytest.raises(ResultFormatError) as e:
            open_store(store.path)
        words += "" if "missing" in words else every
        assert str(e.value) == f"{mf}: {words}{tail}"


def test_a_manifest_of_flat_settings_is_refused_naming_what_it_lacks():
    """The settings of a manifest are nested (``features``): a flat object (feature settings
    beside the others, the engine as ``persistence_engine``) is refused, naming the missing
    ``settings.features``; several missing keys are named together."""
    flat = {k: v for k, v in SETTINGS.to_manifest().items() if k != "features"}
    flat.update(dataclasses.replace(SETTINGS.features, engine="ripser").to_dict())
    flat["persistence_engine"] = flat.pop("engine")
    with pytest.raises(ResultFormatError) as e:
        CorpusSettings.from_manifest(flat)
    assert str(e.value) == (
        "manifest.json: 'settings.features' is missing, which every store of its format "
        "version has (the manifest was changed since it was written)"
    )
    doc = SETTINGS.to_manifest()
    del doc["dtype"], doc["features"]["metric"]
    with pytest.raises(ResultFormatError) as e:
        CorpusSettings.from_manifest(doc)
    assert str(e.value).startswith(
        "manifest.json: 'settings.dtype', 'settings.features.metric' are missing, "
    )


_CHANGES = {
    "model": "other",
    "model_hash": "sha256:" + "1" * 64,
    "revision": "main",
    "attntopo_version": "9.9",
    "maxdim": 2,
    "keep_diagrams": False,
    "on_long": "skip",
    "batch_size": 64,
    "keep_text": False,
    "dtype": "bfloat16",
    "pairs": True,
}
#: Every feature setting changed (the store holds them in ``features``, each named alike): the
#: end-to-end test's sample values, so that a new setting needs its sample in one place only.
_FEATURE_CHANGES = {name: value for name, (value, _) in SAMPLE.items()}


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted({**_CHANGES, **_FEATURE_CHANGES})))
def test_a_changed_setting_is_named_in_one_line(name):
    assert {f.name for f in dataclasses.fields(CorpusSettings)} == set(_CHANGES) | {"features"}
    assert set(SETTING_NAMES) == set(_FEATURE_CHANGES)
    for field, value in _FEATURE_CHANGES.items():  # each a change of SETTINGS' own value
        assert getattr(SETTINGS.features, field) != value, field
    if name in _CHANGES:
        other = dataclasses.replace(SETTINGS, **{name: _CHANGES[name]})
    else:
        other = dataclasses.replace(
            SETTINGS,
            features=dataclasses.replace(SETTINGS.features, **{name: _FEATURE_CHANGES[name]}),
        )
    assert first_difference(SETTINGS, other)[0] == name
    assert first_difference(SETTINGS, dataclasses.replace(SETTINGS)) is None
    with pytest.raises(InvalidInputError) as e:
        check_same_settings(SETTINGS, other, "STORE 's'")
    assert f"with {name}=" in str(e.value) and "\n" not in str(e.value)


# ------------------------------------------------------------------ paths
def test_store_path_checks_write_nothing(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(InvalidInputError, match="is a file"):
        check_store_path(f)
    with pytest.raises(InvalidInputError, match="is a file"):
        check_store_path(f / "sub")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(InvalidInputError, match="holds other files"):
        check_store_path(busy)
    assert sorted(os.listdir(tmp_path)) == ["busy", "file"]
    assert check_store_path(tmp_path / "new" / "store") == tmp_path / "new" / "store"
    assert not (tmp_path / "new").exists()


def test_a_store_the_file_system_refuses_is_one_line_and_leaves_no_folder(tmp_path):
    """check_store_path reads permissions; what only creating shows (a read-only or full
    file system; /proc, where nothing can be made, also for root) is one line from
    StoreWriter.create, and the folders it had made are gone again."""
    inp = open_input(TEXTS)
    schema = output_schema(SETTINGS, inp.schema)
    info = {"fingerprint": inp.fingerprint, "total": inp.total, "n_empty": 3}
    target = Path("/proc") / f"attntopo-test-{os.getpid()}" / "store"
    with pytest.raises(InvalidInputError, match="cannot be created") as e:
        StoreWriter.create(
            check_store_path(target), SETTINGS, schema, info, feature_columns(SETTINGS)
        )
    assert "\n" not in str(e.value) and str(target) in str(e.value)
    assert not target.parent.exists()
    # parents made, then the store's own name refused (longer than any file system allows):
    # one line, and the parents made on the way are removed again
    made = tmp_path / "made" / "here" / ("x" * 300)
    with pytest.raises(InvalidInputError, match="cannot be created") as e:
        StoreWriter.create(
            check_store_path(made), SETTINGS, schema, info, feature_columns(SETTINGS)
        )
    assert "\n" not in str(e.value)
    assert not (tmp_path / "made").exists()
    # names refused before anything is made: too long for the file system, a NUL byte
    for bad, why in (
        (tmp_path / ("y" * 300), "cannot be used"),
        (str(tmp_path / "a\0b"), "null byte"),
    ):
        with pytest.raises(InvalidInputError, match=why) as e:
            check_store_path(bad)
        assert "\n" not in str(e.value)
    # a manifest's name taken by a folder: refused under the lock before any write, one
    # line, and the folders that existed before stay as they were (no temporary file left)
    (tmp_path / "old").mkdir()
    blocked = tmp_path / "old" / "new" / "s"
    (blocked / MANIFEST).mkdir(parents=True)
    with pytest.raises(InvalidInputError, match="holds other files"):
        StoreWriter.create(blocked, SETTINGS, schema, info, feature_columns(SETTINGS))
    assert os.listdir(blocked) == [MANIFEST] and not list((blocked / MANIFEST).iterdir())


def test_a_url_store_is_refused_not_made_a_local_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for url in ("s3://bucket/store", "gs://b/s", "file:///tmp/x"):
        with pytest.raises(InvalidInputError, match="is a URL") as e:
            check_store_path(url)
        assert "\n" not in str(e.value)
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------ parts
def test_parts_are_named_by_batch_and_rewriting_never_duplicates(tmp_path):
    writer = _writer(tmp_path)
    store = writer.store
    assert sorted(os.listdir(store.path)) == ["manifest.json", "parts", "parts.sha256"]
    assert sorted(os.listdir(store.path / "parts")) == [part_name(0), part_name(1), part_name(2)]
    before = store.to_arrow()
    inp = open_input(TEXTS)
    k, t = next(iter(inp.batches(2)))
    writer.write_part(k, _rows(t, k))  # the same batch again: replaced, not added
    again = open_store(store.path)
    assert again.to_arrow().equals(before)
    assert again.n_rows() == len(TEXTS) and len(again.done_ids()) == len(TEXTS)
    assert again.done_batches() == {0, 1, 2}
    assert not [e for e in os.listdir(store.path / "parts") if e.endswith(".tmp")]


def test_sql_agrees_with_pandas(tmp_path):
    store = _store(tmp_path)
    df = store.to_pandas()
    assert list(df["id"]) == [
        r["id"] for _, t in open_input(TEXTS).batches(2) for r in t.to_pylist()
    ]
    col = store.feature_columns[3]
    got = store.sql(
        f'SELECT status, count(*) AS n, avg("{col}") AS '
        "m FROM corpus GROUP BY status ORDER BY status"
    )
    ok = df[df.status == "ok"]
    assert list(got["status"]) == ["failed", "ok"] and list(got["n"]) == [1, 4]
    assert got["m"][1] == pytest.approx(ok[col].mean(), rel=1e-12)
    assert np.isnan(got["m"][0])  # a failed row has no features
    assert store.sql("SELECT count(*) AS n FROM corpus", arrow=True).column("n").to_pylist() == [5]
    with pytest.raises(InvalidInputError, match="^SQL: "):
        store.sql("SELEKT 1")


def test_counts_and_errors_log(tmp_path):
    writer = _writer(tmp_path)
    store = writer.store
    writer.write_errors()
    c = store.counts()
    assert c == {
        "total": 5,
        "done": 5,
        "ok": 4,
        "truncated": 0,
        "skipped_empty": 3,
        "skipped_long": 0,
        "failed": 1,
        "remaining": 0,
    }
    errs = store.errors()
    assert errs == [
        {"id": errs[0]["id"], "row": 3, "status": "failed", "error": "Boom: x", "n_tokens": 5}
    ]


def _counted_reads(monkeypatch) -> list:
    reads: list = []
    real = StoreReader._read

    def counted(self, path, columns=None):
        reads.append((path.name, tuple(columns) if columns else None))
        return real(self, path, columns)

    monkeypatch.setattr(StoreReader, "_read", counted)
    return reads


def _direct_counts(store: StoreReader) -> tuple[dict, list]:
    """Counts and error rows straight from every row (pandas), the independent reference."""
    df = store.to_pandas()
    ok = df.status == "ok"
    counts = {
        "done": len(df),
        "ok": int(ok.sum()),
        "truncated": int((ok & df.truncated).sum()),
        "failed": int((df.status == "failed").sum()),
        "skipped_long": int((df.status == "skipped").sum()),
    }
    bad = df[~ok].sort_values("row")
    errors = [
        {
            "id": r.id,
            "row": int(r.row),
            "status": r.status,
            "error": r.error,
            "n_tokens": int(r.n_tokens),
        }
        for r in bad.itertuples()
    ]
    return counts, errors


def test_counts_and_errors_come_from_part_summaries_read_once(tmp_path, monkeypatch):
    """The end of a run (error log, counts, the unknown-token warning) reads no part it wrote
    (its summary is kept from the write); a store opened afresh reads each part's bookkeeping
    columns once; a part rewritten since is read again.  Checked against every row."""
    writer = _writer(tmp_path)
    store = writer.store
    reads = _counted_reads(monkeypatch)
    store.refresh()
    writer.write_errors()
    c = store.counts()
    assert reads == []  # nothing read: summaries from the writes, footers checked at the write
    want, errors = _direct_counts(store)
    assert {k: c[k] for k in want} == want and store.errors() == errors
    reads.clear()

    fresh = open_store(store.path)
    StoreWriter(fresh).write_errors()
    fresh.counts()
    fresh.refresh()
    assert fresh.counts() == c
    assert sorted(name for name, _ in reads) == [part_name(0), part_name(1), part_name(2)]
    reads.clear()

    # another process rewrites batch 1 (the same batch computed again): read again, once
    other = StoreWriter(store.path)
    inp = open_input(TEXTS)
    k, t = list(inp.batches(2))[1]
    rows = _rows(t, 7)
    rows = rows.set_column(
        rows.schema.get_field_index("truncated"), "truncated", pa.array([True] * rows.num_rows)
    )
    other.write_part(k, rows)
    os.utime(store.part_path(1), ns=(1, 1))  # a stat that differs even on a coarse clock
    fresh.refresh()
    c2 = fresh.counts()
    assert [name for name, _ in reads] == [part_name(1)]
    want, _ = _direct_counts(fresh)
    assert {k: c2[k] for k in want} == want and c2["truncated"] == c["truncated"] + 2 - 1


def _live_footers() -> int:
    """Parsed Parquet footers (FileMetaData) still alive in this process."""
    import gc

    return sum(type(o) is pq.FileMetaData for o in gc.get_objects())


def test_end_of_run_bookkeeping_leaves_no_footer_per_part(tmp_path):
    """Scanning the parts, the counts and the error log free each part's footer when done
    with it: none is left for the garbage collector (a footer left in a reference cycle per
    part made the end of a 10,000-text run's memory grow with the number of parts)."""
    import gc

    writer = _writer(tmp_path)
    store = writer.store
    part = store.part_path(0)
    gc.collect()
    gc.disable()  # only what reference counting frees is freed from here on
    try:
        base = _live_footers()
        md = pq.read_metadata(part)
        md.schema  # the cycle (FileMetaData <-> ParquetSchema) this test guards against
        del md
        assert _live_footers() == base + 1  # the count sees a footer left in a cycle
        gc.collect()
        base = _live_footers()
        store.refresh()
        assert len(store.parts()) == 3
        writer.write_errors()
        assert store.counts()["done"] == 5
        assert _live_footers() == base
    finally:
        gc.enable()


def test_empty_store_answers_sql(tmp_path):
    store = _store(tmp_path, write=False)
    assert store.sql("SELECT count(*) AS n FROM corpus")["n"][0] == 0
    assert store.to_arrow().num_rows == 0
    assert store.counts()["remaining"] == 5


def test_diagrams_read_back_per_head(tmp_path):
    store = _store(tmp_path)
    rid = store.to_pandas()["id"][0]
    d = store.diagrams(rid)
    assert list(d) == [(0, 0), (0, 1)]
    np.testing.assert_array_equal(d[(0, 0)][0], [[0.0, 0.3], [0.0, np.inf]])
    np.testing.assert_array_equal(d[(0, 0)][1], [[0.2, 0.4]])
    np.testing.assert_array_equal(d[(0, 1)][0], [[0.0, np.inf], [0.1, 0.5]])
    with pytest.raises(InvalidInputError, match="no row with id"):
        store.diagrams("nope")
    failed = store.sql("SELECT id FROM corpus WHERE status = 'failed'")["id"][0]
    with pytest.raises(InvalidInputError, match="has no diagrams"):
        store.diagrams(failed)


def test_corrupt_part_is_reported_by_name(tmp_path):
    store = _store(tmp_path)
    p = store.part_path(1)
    p.write_bytes(p.read_bytes()[:100])
    with pytest.raises(ResultFormatError, match=f"{part_name(1)}: corrupt part file"):
        open_store(store.path)


def test_foreign_files_are_reported_by_name(tmp_path):
    store = _store(tmp_path)
    other = _store(tmp_path / "other")
    os.replace(other.part_path(1), store.part_path(1))  # same name, another store
    with pytest.raises(ResultFormatError, match=_ANOTHERS):
        open_store(store.path)
    os.unlink(store.part_path(1))
    pq.write_table(pa.table({"x": [1]}), store.parts_dir / "mine.parquet")
    with pytest.raises(ResultFormatError, match="mine.parquet: a Parquet file that is not a part"):
        open_store(store.path)
    os.unlink(store.parts_dir / "mine.parquet")
    pq.write_table(pa.table({"x": [1]}), store.part_path(1))
    with pytest.raises(ResultFormatError, match=part_name(1)):
        open_store(store.path)


def test_not_a_store(tmp_path):
    with pytest.raises(InvalidInputError, match="not a corpus store"):
        open_store(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(ResultFormatError, match="not an attntopo corpus manifest"):
        open_store(tmp_path)


def test_verify_finds_a_changed_byte_by_the_recorded_checksum(tmp_path):
    """Every part's SHA-256 is recorded as it is written (sha256sum's format); one changed
    byte in the middle of a part, which its footer cannot show, is found; a part of a store
    without records (the file lost) must read in full."""
    import hashlib
    import shutil
    import subprocess

    from attntopo.corpus import CHECKSUMS

    store = _store(tmp_path)
    assert store.verify() == {}
    recorded = store.checksums()
    assert recorded == {
        f"parts/{n}": hashlib.sha256((store.path / "parts" / n).read_bytes()).hexdigest()
        for n in map(part_name, range(3))
    }
    if shutil.which("sha256sum"):
        assert (
            subprocess.run(["sha256sum", "--quiet", "-c", CHECKSUMS], cwd=store.path).returncode
            == 0
        )
    p = store.part_path(1)
    data = bytearray(p.read_bytes())
    data[_footer_start(data) // 2] ^= 0x01  # in the column data: the footer stays intact
    p.write_bytes(bytes(data))
    # the footer reads: the recorded SHA-256 tells, on every read (a part's bytes are hashed
    # when it is first checked) and in verify, which then read every page to say what is
    # wrong (here a page that cannot be read), in the same words
    why = store.verify()
    assert list(why) == [1]
    with pytest.raises(DamagedPartError) as e:
        open_store(store.path)
    assert f"{part_name(1)}: corrupt part file ({why[1]}): " in str(e.value)
    # no records: a part is trusted only if it reads in full (a truncated one does not)
    os.unlink(store.path / CHECKSUMS)
    p.write_bytes(p.read_bytes()[:100] + p.read_bytes()[-2000:])
    why = store.verify()
    assert list(why) == [1] and "cannot be read in full" in why[1]


def _snapshot(folder: Path) -> dict:
    """Every file under ``folder``: its bytes and modification time."""
    return {
        str(f.relative_to(folder)): (f.read_bytes(), f.stat().st_mtime_ns)
        for f in sorted(folder.rglob("*"))
        if f.is_file()
    }


def test_a_reader_cannot_write_and_reading_changes_nothing(tmp_path):
    """What ``open_store`` returns reads only: none of the writer's methods, no lock, nothing
    of the writing module imported where the reader lives; every public method of it, called,
    leaves every file of the store as it was, also where a writer's ``verify`` would record
    checksums (``parts.sha256`` deleted).  The list of methods called is checked to be every
    public name of the class, so a method added to the reader is added here."""
    import attntopo.corpus._store as reader_module
    from attntopo.corpus import CHECKSUMS

    writing = {n for n in dir(StoreWriter) if not n.startswith("_")}
    assert writing == {
        "create",
        "write_part",
        "remove_part",
        "write_errors",
        "write_checksums",
        "update_manifest",
        "clean_temporary",
        "verify",
        "path",
    }
    assert writing & set(dir(StoreReader)) == {"verify"}  # the reader's records nothing
    for name in (
        "StoreWriter",
        "lock_store",
        "atomic_write_bytes",
        "atomic_write_text",
        "lock_folder",
    ):
        assert not hasattr(reader_module, name), name
    store = _store(tmp_path)
    rid = store.to_pandas()["id"][0]
    os.unlink(store.path / CHECKSUMS)
    reader = open_store(store.path)
    assert not hasattr(reader, "lock") and not hasattr(reader, "writer")
    with pytest.raises(TypeError):
        reader.verify(record=True)
    before = _snapshot(store.path)
    calls = {
        "check_unchanged": lambda r: r.check_unchanged(),
        "checksums": lambda r: r.checksums(),
        "counts": lambda r: r.counts(),
        "diagrams": lambda r: r.diagrams(rid),
        "done_batches": lambda r: r.done_batches(),
        "done_ids": lambda r: r.done_ids(),
        "errors": lambda r: r.errors(),
        "inputs": lambda r: r.inputs(),
        "n_rows": lambda r: r.n_rows(),
        "part_path": lambda r: r.part_path(0),
        "parts": lambda r: r.parts(),
        "refresh": lambda r: r.refresh(),
        "sql": lambda r: r.sql("SELECT count(*) FROM corpus"),
        "sql_batches": lambda r: r.sql_batches("SELECT * FROM corpus").read_all(),
        "stored_hashes": lambda r: r.stored_hashes(),
        "to_arrow": lambda r: r.to_arrow(),
        "to_pandas": lambda r: r.to_pandas(),
        "verify": lambda r: r.verify(),
    }
    data = {
        "appended",
        "feature_columns",
        "generation",
        "manifest",
        "parts_dir",
        "path",
        "schema",
        "settings",
    }
    public = {n for n in dir(reader) if not n.startswith("_")}
    assert public == set(calls) | data
    for name, call in calls.items():
        call(reader)
    assert reader.verify() == {} and reader.checksums() == {}  # nothing recorded by a reader
    len(reader), repr(reader)
    assert _snapshot(store.path) == before
    # the writer of the same folder records what the reader's verify certified
    assert StoreWriter(store.path).verify() == {} and len(reader.checksums()) == 3


def test_a_writer_of_a_replaced_store_writes_nothing(tmp_path):
    """A writer checks, under the lock, that the store on disk is still the one its reader
    opened before every write: one line, nothing written into the new store."""
    from attntopo.errors import StoreReplacedError

    writer = _writer(tmp_path)
    k, t = next(iter(open_input(TEXTS).batches(2)))
    _replace(writer.path)
    before = _snapshot(writer.path)
    for write in (
        lambda: writer.write_part(k, _rows(t, k)),
        writer.write_errors,
        writer.write_checksums,
        lambda: writer.update_manifest(note="x"),
    ):
        with pytest.raises(StoreReplacedError, match=re.escape(REPLACED)):
            write()
    assert _snapshot(writer.path) == before


def test_query_is_confined_to_the_store_unless_allowed(tmp_path):
    """`attntopo query` ran any SQL with the user's rights: read_csv of the password file,
    COPY ... TO any path, ATTACH creating a database file.  Now each is refused in one line
    (exit 2) naming --allow-external, nothing is written, and the store's own rows still
    answer; --allow-external (allow_external=True) opts out."""
    import subprocess
    import sys

    store = _store(tmp_path)
    root = Path(__file__).resolve().parents[3]

    def query(sql, *flags):
        return subprocess.run(
            [sys.executable, "-m", "attntopo", "query", str(store.path), sql, *flags],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=120,
        )

    secret = tmp_path / "secret.csv"
    secret.write_text("user,pw\nroot,hunter2\n")
    attempts = {
        f"SELECT * FROM read_csv('{secret}')": None,
        f"COPY (SELECT * FROM corpus) TO '{tmp_path / 'out.csv'}'": tmp_path / "out.csv",
        f"ATTACH '{tmp_path / 'x.db'}' AS x": tmp_path / "x.db",
        f"COPY (SELECT 1) TO '{store.path / part_name(0)}' (USE_TMP_FILE false)": None,
        "SET enable_external_access = true": None,
    }
    for sql, made in attempts.items():
        r = query(sql)
        assert r.returncode == 2 and r.stdout == "", (sql, r.returncode, r.stdout)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "--allow-external" in lines[0] and "hunter2" not in r.stderr, (
            sql,
            r.stderr,
        )
        assert made is None or not made.exists(), sql
        with pytest.raises(InvalidInputError, match="allow_external=True"):
            store.sql(sql)
    assert open_store(store.path).verify() == {}  # the part COPY aimed at is untouched
    r = query("SELECT count(*) AS n FROM corpus", "--csv")
    assert r.returncode == 0 and r.stdout.splitlines() == ["n", str(len(TEXTS))], r.stderr
    r = query(f"SELECT pw FROM read_csv('{secret}')", "--csv", "--allow-external")
    assert r.returncode == 0 and r.stdout.splitlines() == ["pw", "hunter2"], r.stderr
    assert list(store.sql(f"SELECT pw FROM read_csv('{secret}')", allow_external=True)["pw"]) == [
        "hunter2"
    ]


def test_an_unquoted_dotted_column_gets_the_double_quote_hint(tmp_path):
    """DuckDB reads L0H0.js.h1.total_persistence as table.column: its message named a table
    'L0H0.js.h1' that does not exist; the line now says to double-quote the column."""
    store = _store(tmp_path)
    col = feature_columns(SETTINGS)[0]
    with pytest.raises(InvalidInputError, match=rf'double quotes: "{col}"') as e:
        store.sql(f"SELECT max({col}) FROM corpus")
    assert "\n" not in str(e.value)
    assert store.sql(f'SELECT max("{col}") AS m FROM corpus')["m"][0] > 0


def test_a_settings_mismatch_is_found_before_the_model_loads(tmp_path, monkeypatch):
    """A run with other settings on a store: the line naming the setting came only after a
    5 s model load; now it comes from the manifest alone (the model is never loaded)."""
    import attntopo.models
    from attntopo import __version__, corpus

    here = dataclasses.replace(SETTINGS, attntopo_version=__version__)
    inp = open_input(TEXTS)
    schema = output_schema(here, inp.schema)
    info = {"fingerprint": inp.fingerprint, "total": inp.total, "n_empty": 0}
    StoreWriter.create(
        tmp_path / "s",
        here,
        schema,
        info,
        feature_columns(here),
        extra={"model": {"name": "toy", "n_layers": 2, "n_heads": 2}},
    )

    def no_loading(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(attntopo.models, "load_model", no_loading)
    kw = dict(
        model="toy",
        layers=[0],
        heads=[0, 1],
        thresholds=(0.1,),
        scales=(0.5,),
        quantiles=(0.5,),
        keep_diagrams=True,
        batch_size=2,
        progress=False,
    )
    with pytest.raises(
        InvalidInputError, match="was made with sets=js, this run has sets=js,graph"
    ):
        corpus.run(TEXTS, out=tmp_path / "s", **{**kw, "sets": ("js", "graph")})
    with pytest.raises(InvalidInputError, match="made with layers=0, this run has layers=0,1:"):
        corpus.run(TEXTS, out=tmp_path / "s", **{**kw, "layers": None})  # all: the manifest's 2
    with pytest.raises(
        InvalidInputError, match="made with batch_size=2, this run has batch_size=3"
    ):
        corpus.run(TEXTS, out=tmp_path / "s", **{**kw, "batch_size": 3})


def test_a_store_of_the_old_drop_special_default_names_the_option_to_pass(tmp_path, monkeypatch):
    """Features, corpus and sklearn dropped special tokens by default until issue 29: a store made
    then records drop_special=True.  Continued without the option it stops with the one line of a
    settings mismatch, naming the setting and how to ask for it; with it, the run goes on."""
    import attntopo.models
    from attntopo import __version__, corpus

    old = dataclasses.replace(
        SETTINGS,
        attntopo_version=__version__,
        features=dataclasses.replace(SETTINGS.features, drop_special=True),
    )
    assert old.to_manifest()["features"]["drop_special"] is True
    inp = open_input(TEXTS)
    StoreWriter.create(
        tmp_path / "s",
        old,
        output_schema(old, inp.schema),
        {"fingerprint": inp.fingerprint, "total": inp.total, "n_empty": 0},
        feature_columns(old),
        extra={"model": {"name": "toy", "n_layers": 2, "n_heads": 2}},
    )

    def no_loading(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(attntopo.models, "load_model", no_loading)
    kw = dict(
        model="toy",
        sets=("js",),
        layers=[0],
        heads=[0, 1],
        thresholds=(0.1,),
        scales=(0.5,),
        quantiles=(0.5,),
        keep_diagrams=True,
        batch_size=2,
        progress=False,
    )
    with pytest.raises(InvalidInputError) as e:
        corpus.run(TEXTS, out=tmp_path / "s", **kw)
    line = str(e.value)
    assert "\n" not in line
    assert "was made with drop_special=True, this run has drop_special=False" in line
    assert "(drop_special=True; --drop-special)" in line and "--new-store" in line
    # asked for, the settings agree and the run goes on to load the model
    with pytest.raises(AssertionError, match="the model was loaded"):
        corpus.run(TEXTS, out=tmp_path / "s", drop_special=True, **kw)


def test_the_mismatch_line_names_the_keyword_and_the_option():
    # (setting, the store's value, this run's value, how the line says to ask for the store's)
    for name, stored, wanted, ask in [
        ("drop_special", False, True, "(drop_special=False; without --drop-special)"),
        ("keep_text", False, True, "(keep_text=False; --no-keep-text)"),
        ("sets", ("js", "graph"), ("js",), "(sets=['js', 'graph']; --sets js,graph)"),
        ("batch_size", 7, 2, "(batch_size=7; --batch-size 7)"),
        ("cycle_cap", 3, 50, "(cycle_cap=3; --cycle-cap 3)"),
        ("metric", "hellinger", "jensen_shannon", "(metric='hellinger'; --metric hellinger)"),
    ]:

        def with_(value):
            if name in SETTING_NAMES:
                return dataclasses.replace(
                    SETTINGS, features=dataclasses.replace(SETTINGS.features, **{name: value})
                )
            return dataclasses.replace(SETTINGS, **{name: value})

        with pytest.raises(InvalidInputError) as e:
            check_same_settings(with_(stored), with_(wanted), "STORE 's'")
        assert ask in str(e.value), (ask, str(e.value))


def test_an_empty_input_is_refused_and_makes_no_store(tmp_path):
    """An empty file gave "corpus: 0 done", exit 0, and a 343 KB manifest; now one line, exit 2,
    no store folder."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    for content in ("", "\n  \n\n"):
        src = tmp_path / "empty.txt"
        src.write_text(content)
        r = subprocess.run(
            [sys.executable, "-m", "attntopo", "corpus", str(src), "--out", str(tmp_path / "S")],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=120,
        )
        assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "no texts" in r.stderr, r.stderr
        assert not (tmp_path / "S").exists()


# ------------------------------------------------------------------ append (no model)
@settings(max_examples=60, deadline=None)
@given(
    n_new=st.integers(1, 12),
    stored=st.sets(st.integers(0, 15)),
    batch=st.integers(1, 5),
    first=st.integers(0, 7),
    done=st.sets(st.integers(0, 15)),
)
def test_an_appended_input_streams_its_unstored_ids_once_as_parts_after_the_first(
    n_new, stored, batch, first, done
):
    """corpus._prepare._AppendInput: input batch k is part first + k, without the stored ids; a
    batch left empty is no part; the parts done already (skip) are not streamed again, and the
    parts streamed plus the parts done hold every unstored id exactly once."""
    from attntopo.corpus._prepare import _AppendInput

    ids = [f"t{i}" for i in range(n_new)]
    inp = open_input(
        pa.table({"id": ids, "text": [f"text {i}" for i in range(n_new)]}), id_column="id"
    )
    app = _AppendInput(inp, first, {f"t{i}": "h" for i in stored})
    every = {k: t["id"].to_pylist() for k, t in app.batches(batch)}
    want = [i for i in ids if int(i[1:]) not in stored]
    assert [i for k in sorted(every) for i in every[k]] == want
    assert all(k >= first and every[k] for k in every)
    for k in every:  # part first + j holds only ids of the input's batch j
        assert all((ids.index(i)) // batch == k - first for i in every[k])
    skip = {first + d for d in done}
    rest = {k: t["id"].to_pylist() for k, t in app.batches(batch, skip=skip)}
    assert set(rest) == set(every) - skip and all(rest[k] == every[k] for k in rest)


def test_append_with_new_store_is_one_line_before_any_work(tmp_path):
    from attntopo import corpus

    with pytest.raises(InvalidInputError, match="exclude each other"):
        corpus.run(["a text"], tmp_path / "s", append=True, new_store=True, progress=False)
    assert not (tmp_path / "s").exists()


# ------------------------------------------------------------------ renames (docs/api.md, Names)
def test_engine_is_a_feature_setting_of_the_manifest():
    """The persistence engine is written with the feature settings (``features.engine``); a
    flat manifest with its first name, ``persistence_engine``, is refused
    (test_a_manifest_of_flat_settings_is_refused_naming_what_it_lacks)."""
    s = dataclasses.replace(
        SETTINGS, features=dataclasses.replace(SETTINGS.features, engine="ripser")
    )
    doc = s.to_manifest()
    assert doc["features"]["engine"] == "ripser" and "persistence_engine" not in doc
    assert CorpusSettings.from_manifest(doc) == s
    assert not hasattr(s, "persistence_engine")


def test_run_takes_backend_and_engine_by_their_names(tmp_path):
    """corpus.run: ``backend=`` is where it runs, ``engine=`` the persistence engine; the old
    spellings (``engine="local"``, ``persistence_engine=``) are refused in one line, before any
    input is read or model loaded."""
    import attntopo.corpus as corpus

    out = tmp_path / "s"
    with pytest.raises(
        InvalidInputError,
        match=r"^engine='local': engine= is the persistence engine; "
        r"where the corpus runs is backend='local'$",
    ):
        corpus.run(["a text"], out, engine="local")
    with pytest.raises(
        TypeError, match=r"corpus.run\(\) got an unexpected keyword argument 'persistence_engine'"
    ):
        corpus.run(["a text"], out, persistence_engine="gudhi")
    with pytest.raises(InvalidInputError, match="unknown persistence engine 'fast'"):
        corpus.run(["a text"], out, engine="fast")  # engine= is the persistence engine
    with pytest.raises(InvalidInputError, match="unknown corpus backend 'spark'"):
        corpus.run(["a text"], out, backend="spark")
    with pytest.raises(TypeError, match="unexpected keyword argument 'persistence_engine'"):
        corpus.make_settings(object(), persistence_engine="fast")
    assert not out.exists()
    assert not hasattr(corpus, "ENGINES")


def test_the_prompt_set_needs_pairs_and_a_store_of_pairs_is_named(tmp_path, monkeypatch):
    """sets=("prompt",) on texts: one line before the input is read or a model loaded; a run
    without answer_column on a store of pairs is refused from the manifest, naming pairs."""
    from types import SimpleNamespace

    import attntopo.models
    from attntopo import __version__, corpus
    from attntopo.corpus import make_settings

    def no_loading(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(attntopo.models, "load_model", no_loading)
    with pytest.raises(
        InvalidInputError,
        match=r"^the prompt set needs \(prompt, answer\) pairs: name the "
        r"input's answer column with --answer-column",
    ):
        corpus.run(
            tmp_path / "does-not-exist.jsonl", out=tmp_path / "s", sets=("prompt",), progress=False
        )
    assert not (tmp_path / "s").exists()
    toy = SimpleNamespace(name="toy", n_layers=1, n_heads=2, dtype="float32", spec=None)
    with pytest.raises(InvalidInputError, match="the prompt set needs"):
        make_settings(toy, sets=("prompt",), _model_hash="sha256:0")
    st = make_settings(
        toy, sets=("prompt",), pairs=True, prompt_quantities=("attention",), _model_hash="sha256:0"
    )
    assert st.pairs and st.features.prompt_quantities == ("attention",)
    assert feature_columns(st) == ["L0H0.prompt.attention", "L0H1.prompt.attention"]

    here = dataclasses.replace(SETTINGS, attntopo_version=__version__, pairs=True)
    df = {"q": ["alpha?", "beta?"], "a": ["one.", "two."]}
    import pandas as pd

    inp = open_input(pd.DataFrame(df), text_column="q", answer_column="a")
    schema = output_schema(here, inp.schema)
    assert schema.names[:6] == ["id", "row", "text_sha256", "text", "answer_sha256", "answer"]
    StoreWriter.create(
        tmp_path / "p",
        here,
        schema,
        {"fingerprint": inp.fingerprint, "total": 2, "n_empty": 0},
        feature_columns(here),
        extra={"model": {"name": "toy", "n_layers": 2, "n_heads": 2}},
    )
    kw = dict(
        model="toy",
        layers=[0],
        heads=[0, 1],
        thresholds=(0.1,),
        scales=(0.5,),
        quantiles=(0.5,),
        keep_diagrams=True,
        batch_size=2,
        progress=False,
        text_column="q",
    )
    with pytest.raises(
        InvalidInputError, match="was made with pairs=True, this run has pairs=False"
    ):
        corpus.run(pd.DataFrame(df), out=tmp_path / "p", **kw)


# ------------------------------------------------------------------ a store replaced (issue 33)
def _replace(path: Path, texts=("x1", "x2", "x3")) -> StoreReader:
    """What ``--new-store`` does to ``path`` (``_clear``, then a new store with other texts),
    in this process: each part of the same size as the old one's, written within the same
    millisecond, so that a reader keyed on (size, mtime) could not tell them apart."""
    from attntopo.corpus._prepare import _clear

    _clear(path)
    inp = open_input(list(texts))
    info = {"fingerprint": inp.fingerprint, "total": inp.total, "n_empty": 0}
    schema = output_schema(SETTINGS, inp.schema)
    new = StoreWriter.create(path, SETTINGS, schema, info, feature_columns(SETTINGS))
    for k, t in inp.batches(SETTINGS.batch_size):
        new.write_part(k, _rows(t, k))
    return new.store


REPLACED = (
    "was replaced by a new store (a run with --new-store) since this reader opened it: "
    "these are no longer its rows; open it again (open_store, or run the command again)"
)


def test_a_reader_of_a_replaced_store_stops_naming_it(tmp_path):
    """A store opened before ``--new-store`` had answered ``counts()``, ``refresh()``,
    ``to_pandas()`` with the new store's rows (its manifest still the old input's) and
    ``verify()`` with ``{}``; ``counts()`` raised a bare FileNotFoundError.  Every read now
    checks the store's id (the manifest's ``store_id``, which its parts carry) before and
    after it reads, and stops with one line."""
    from attntopo.errors import StoreReplacedError

    store = _store(tmp_path)
    reader = open_store(store.path)
    assert reader.counts()["done"] == 5 and len(reader.sql("SELECT id FROM corpus")) == 5
    streaming = reader.sql_batches("SELECT id FROM corpus")  # started, not read yet
    _replace(store.path)
    with pytest.raises(StoreReplacedError) as e:  # attntopo query reads so: no row given out
        streaming.read_next_batch()
    assert str(e.value) == f"STORE {str(store.path)!r} {REPLACED}"
    reads = {
        "counts": reader.counts,
        "refresh": reader.refresh,
        "to_pandas": reader.to_pandas,
        "to_arrow": reader.to_arrow,
        "verify": reader.verify,
        "n_rows": reader.n_rows,
        "done_ids": reader.done_ids,
        "errors": reader.errors,
        "parts": reader.parts,
        "sql": lambda: reader.sql("SELECT id FROM corpus"),
        "sql_batches": lambda: reader.sql_batches("SELECT id FROM corpus").read_all(),
        "diagrams": lambda: reader.diagrams("0-x"),
        "repr": lambda: repr(reader),
    }
    for name, read in reads.items():
        with pytest.raises(StoreReplacedError) as e:
            read()
        assert str(e.value) == f"STORE {str(store.path)!r} {REPLACED}", name
        assert isinstance(e.value, ResultFormatError)  # a ValueError too
    fresh = open_store(store.path)  # opened again: the new store
    assert sorted(fresh.to_pandas()["text"]) == ["x1", "x2", "x3"] and fresh.verify() == {}


def test_a_reader_while_the_store_is_started_over_says_so(tmp_path):
    """While ``--new-store`` runs the old manifest is gone first, then the parts: a reader
    that had opened the store says it is being started over (not "corrupt part file" for a
    part that was removed); a fresh ``open_store`` (``attntopo query``) says the store holds
    parts but no manifest and what to do, not "not a corpus store"."""
    from attntopo.errors import StoreReplacedError

    store = _store(tmp_path)
    reader = open_store(store.path)
    reader.counts()
    os.unlink(store.path / MANIFEST)  # _clear's first step
    gone = (
        f"STORE {str(store.path)!r} was removed or is being started over (a run with "
        "--new-store) since this reader opened it: its rows are gone; open it again "
        "(open_store, or run the command again) once that run has made it"
    )
    for read in (reader.counts, reader.to_arrow, reader.refresh, reader.verify):
        with pytest.raises(StoreReplacedError, match="^" + re.escape(gone) + "$"):
            read()

    def refusal() -> str:
        with pytest.raises(InvalidInputError) as e:
            open_store(store.path)
        return str(e.value)

    assert refusal() == (
        f"STORE {str(store.path)!r} holds parts but no manifest.json: another run may be starting "
        "it over (--new-store): open it again once that run has made it; if no run is writing "
        "it, `attntopo corpus INPUT --out STORE --new-store` makes it again"
    )
    from attntopo.corpus._prepare import _clear

    os.rename(store.path / "parts.sha256", store.path / MANIFEST)  # for _clear to remove
    _clear(store.path)  # the parts gone too, the new manifest not written yet
    assert refusal() == (
        f"{str(store.path)!r} is not a corpus store (no manifest.json), or not yet: a run making "
        "it (a new store, or --new-store starting it over) has not written its manifest; open it "
        "again once that run has made it"
    )


def test_a_part_removed_under_a_reader_is_named_and_the_next_read_lists_again(tmp_path):
    """A resumed run removes a damaged part to recompute it: a reader of the same store
    that had listed it says so in one line (a query: "removed while the query ran"; not a
    bare FileNotFoundError nor "corrupt part file"), and its next read lists the parts again."""
    store = _store(tmp_path)
    reader = open_store(store.path)
    assert reader.counts()["done"] == 5 and len(reader.sql("SELECT id FROM corpus")) == 5
    os.unlink(store.part_path(1))
    with pytest.raises(ResultFormatError) as e:
        reader.sql("SELECT id FROM corpus")
    assert str(e.value).startswith("SQL: a part was removed while the query ran (")
    assert str(e.value).endswith("): a run recomputes a damaged part; run the query again")
    assert len(reader.sql("SELECT id FROM corpus")) == 3  # listed again
    reader = open_store(store.path)
    reader.counts()
    os.unlink(store.part_path(2))
    with pytest.raises(ResultFormatError) as e:
        reader.counts()
    assert str(e.value) == (
        f"{store.part_path(2)}: removed since this reader listed the store's "
        "parts (a run recomputes a damaged part): run the command again"
    )
    assert reader.counts()["done"] == 2


def test_a_part_swapped_after_listing_is_never_read_as_this_stores(tmp_path):
    """A part's tag (store id, batch) is checked on every read, not only when listed: a file
    put in a part's place after the reader listed it (same size and times) is refused."""
    store = _store(tmp_path)
    other = _store(tmp_path / "other")
    reader = open_store(store.path)
    reader.counts()
    data = other.part_path(1).read_bytes()
    st = os.stat(store.part_path(1))
    store.part_path(1).write_bytes(data)
    os.utime(store.part_path(1), ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(ResultFormatError, match=_ANOTHERS):
        reader.to_arrow()


def test_a_manifest_that_cannot_be_used_is_named_with_the_way_out(tmp_path):
    """A manifest without settings had been named "manifest.json" without the store's path,
    and an unreadable one named no way out (issue 33): both name the file and say that
    ``--new-store`` starts the store over; ``--new-store`` on a folder that is not only a
    store's files (or holds another program's manifest) is refused, nothing removed."""
    from attntopo import corpus

    store = _store(tmp_path)
    mf = store.path / MANIFEST
    doc = json.loads(mf.read_text())
    way_out = (
        "; --new-store (new_store=True) starts the store over (its parts are removed), "
        "or give another STORE"
    )
    mf.write_text(json.dumps({k: v for k, v in doc.items() if k != "settings"}))
    with pytest.raises(ResultFormatError) as e:
        open_store(store.path)
    assert str(e.value) == (
        f"{mf}: 'settings' is missing, which every store of its format version has (the "
        f"manifest was changed since it was written){way_out}"
    )
    mf.write_text(json.dumps({**doc, "settings": [1]}))
    with pytest.raises(ResultFormatError) as e:
        open_store(store.path)
    assert str(e.value) == f"{mf}: 'settings' must be an object{way_out}"
    mf.write_text(json.dumps(doc)[:200])  # torn
    with pytest.raises(ResultFormatError) as e:
        open_store(store.path)
    assert str(e.value).startswith(f"{mf}: unreadable (") and str(e.value).endswith(way_out)
    with pytest.raises(ResultFormatError) as e:  # a run without --new-store: the same line
        corpus.run(TEXTS, out=store.path, progress=False)
    assert str(e.value).endswith(way_out)
    (store.path / "notes.txt").write_text("mine")  # not a store's file: --new-store refuses
    with pytest.raises(ResultFormatError) as e:
        corpus.run(TEXTS, out=store.path, new_store=True, progress=False)
    assert str(e.value).startswith(f"{mf}: unreadable (")
    assert str(e.value).endswith(
        ": --new-store starts over only a folder that holds a store's own files (manifest.json, "
        "parts/, parts.sha256, errors.jsonl) and no other program's manifest: give another STORE"
    )
    assert sorted(p.name for p in store.parts_dir.iterdir()) == [part_name(k) for k in range(3)]
    (store.path / "notes.txt").unlink()
    mf.write_text('{"format": "someone-else", "name": "my app"}')  # another program's manifest
    with pytest.raises(
        ResultFormatError, match="not an attntopo corpus manifest: --new-store starts over only"
    ):
        corpus.run(TEXTS, out=store.path, new_store=True, progress=False)
    assert mf.read_text().startswith('{"format": "someone-else"')


# ------------------------------------------------------------------ format version 3
def _old_format_line(mf: Path, version: int) -> str:
    return (
        f"{mf}: a store of corpus format version {version}, made before the first release by an "
        "attntopo that could name values under another head's name (layers or heads given out "
        "of order) and wrote parts without page checksums, which this attntopo does not read: "
        "make it again; --new-store (new_store=True) starts the store over (its parts are "
        "removed), or give another STORE"
    )


@pytest.mark.parametrize("version", [1, 2])
def test_a_store_of_format_version_1_or_2_is_refused_in_one_line(tmp_path, version):
    """Stores written before format version 3 may hold values under another head's name and
    parts without page checksums: opening, resuming and querying one stop with one line
    naming the manifest, why, and ``--new-store``; nothing in the folder changes."""
    from attntopo import corpus
    from attntopo.corpus._store import FORMAT_VERSION
    from attntopo.errors import AttntopoError

    assert FORMAT_VERSION == 3
    store = _store(tmp_path)
    mf = store.path / MANIFEST
    doc = json.loads(mf.read_text())
    assert doc["format_version"] == 3
    mf.write_text(json.dumps({**doc, "format_version": version}, indent=1) + "\n")
    before = _snapshot(store.path)
    line = _old_format_line(mf, version)
    with pytest.raises(ResultFormatError) as e:
        open_store(store.path)
    assert str(e.value) == line and isinstance(e.value, AttntopoError)
    with pytest.raises(ResultFormatError) as e:  # a resume (or an append) of it
        corpus.run(TEXTS, out=store.path, progress=False)
    assert str(e.value) == line
    with pytest.raises(ResultFormatError) as e:
        corpus.run(["zeta", "eta"], out=store.path, append=True, progress=False)
    assert str(e.value) == line
    assert _snapshot(store.path) == before
    # a version this attntopo does not know: named as before
    mf.write_text(json.dumps({**doc, "format_version": 4}))
    with pytest.raises(ResultFormatError) as e:
        open_store(store.path)
    assert str(e.value) == f"{mf}: corpus format version 4; this attntopo reads 3"


# ------------------------------------------------------------------ page checksums (issue 33)
def _flip_in_a_data_page(
    path: Path, column: str = "L0H0.js.h0.total_persistence", bit: int = 2
) -> None:
    """Flip one bit among the last bytes of ``column``'s data page (its values)."""
    with pq.ParquetFile(path) as pf:
        rg = pf.metadata.row_group(0)
        col = next(
            rg.column(c) for c in range(rg.num_columns) if rg.column(c).path_in_schema == column
        )
        pos = col.data_page_offset + col.total_compressed_size - 3
    data = bytearray(path.read_bytes())
    data[pos] ^= 1 << bit
    path.write_bytes(bytes(data))


def test_a_flipped_bit_is_never_certified_without_the_checksum_file(tmp_path, capsys):
    """One bit flipped in a data page and ``parts.sha256`` deleted: the part had read in
    full (one value changed), so resume certified it with a fresh SHA-256 and ``verify()``
    said ``{}``.  Parts carry a CRC in every page now: the part is named, every read of it
    stops, and a resume removes it (to recompute it) without recording it."""
    from attntopo.corpus import CHECKSUMS
    from attntopo.corpus._prepare import _drop_damaged
    from attntopo.errors import DamagedPartWarning

    store = _store(tmp_path)
    p = store.part_path(1)
    before = pq.read_table(p)
    _flip_in_a_data_page(p)
    unchecked = pq.read_table(p)  # what a reader without page checksums would have seen
    assert unchecked.schema == before.schema and not unchecked.equals(before)
    os.unlink(store.path / CHECKSUMS)
    with pytest.raises(DamagedPartError, match=f"{part_name(1)}: corrupt part file .*CRC"):
        open_store(store.path)  # a part without its record: every page read when checked
    reader = StoreReader(store.path)
    why = reader.verify()  # pyarrow's words after the colon
    assert list(why) == [1] and why[1].startswith("it cannot be read in full: ") and "CRC" in why[1]
    with pytest.raises(ResultFormatError, match=f"{part_name(1)}: corrupt part file .*CRC"):
        reader.to_arrow()
    with pytest.raises(ResultFormatError, match=f"{part_name(1)}: corrupt part file .*CRC"):
        reader.sql("SELECT * FROM corpus")  # checked before the query reads it, as every read
    from attntopo.cli import main

    assert main(["query", str(store.path), "SELECT * FROM corpus", "--csv"]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: ") and f"{part_name(1)}: corrupt part file (" in line, line
    assert "CRC" in line, line
    assert line.endswith(
        "StoreReader.verify() names the damaged parts; a run of the same command recomputes them"
    )
    writer = StoreWriter(store.path)
    with pytest.warns(
        DamagedPartWarning, match=f"{part_name(1)} was damaged .*CRC.*batch 1 is recomputed"
    ):
        _drop_damaged(writer)  # what a resumed run does before it trusts a part
    assert not p.exists()
    # never part 1's
    assert sorted(writer.store.checksums()) == [f"parts/{part_name(k)}" for k in (0, 2)]


_FLIP: dict = {}


def _flip_store(tmp_path_factory) -> tuple[StoreReader, bytes, pa.Table]:
    """One store for every example (made once): without ``parts.sha256``; part 1's bytes and
    its rows as written."""
    if not _FLIP:
        from attntopo.corpus import CHECKSUMS

        store = _store(tmp_path_factory.mktemp("flip"))
        os.unlink(store.path / CHECKSUMS)
        p = store.part_path(1)
        rows = pq.read_table(p).replace_schema_metadata(None)
        _FLIP.update(store=store, data=p.read_bytes(), rows=rows)
    return _FLIP["store"], _FLIP["data"], _FLIP["rows"]


@settings(max_examples=100, deadline=None)
@given(where=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_no_flipped_bit_anywhere_gives_other_values_with_a_clean_verify(
    tmp_path_factory, where, bit
):
    """Without ``parts.sha256``, one bit flipped anywhere in a part (pages, page headers,
    footer): ``verify()`` names the part, or the part still reads as the values written
    (docs/corpus.md gives the exhaustive count over every bit of such a part)."""
    store, data, rows = _flip_store(tmp_path_factory)
    flipped = bytearray(data)
    flipped[int(where * len(data))] ^= 1 << bit
    store.part_path(1).write_bytes(bytes(flipped))
    try:
        why = store.verify()
        if why:
            assert list(why) == [1], why
        else:
            assert open_store(store.path).to_arrow().slice(2, 2).equals(rows)
    finally:
        store.part_path(1).write_bytes(data)


def _without_page_checksums(path: Path, *, tag: dict | None = None) -> None:
    """Rewrite a part with the same rows and tag (``tag``: this one instead) and no page
    checksums, as another program would (pyarrow's defaults write none)."""
    rows = pq.read_table(path)
    if tag is not None:
        rows = rows.replace_schema_metadata({b"attntopo.corpus": json.dumps(tag).encode()})
    pq.write_table(rows, path, compression="snappy")
    with pq.ParquetFile(path) as pf:  # the same values, under the same tag
        assert pf.read().equals(rows) and pf.schema_arrow.metadata == rows.schema.metadata


@pytest.mark.parametrize("tag", ["kept", "as before page checksums"])
def test_a_part_without_page_checksums_is_damaged_and_recomputed(tmp_path, tag):
    """Every part of a store (format version 3) is written with page checksums.  A part
    rewritten without them, the same values under the same tag (or the tag of the parts
    written before page checksums), whose record is lost, could be changed without a word:
    ``verify()`` names it damaged, a resumed run removes it to recompute its batch, and no
    SHA-256 is recorded for it."""
    from attntopo.corpus import CHECKSUMS
    from attntopo.corpus._prepare import _drop_damaged
    from attntopo.errors import DamagedPartWarning

    store = _store(tmp_path)
    p = store.part_path(1)
    old = json.loads(pq.read_table(p).schema.metadata[b"attntopo.corpus"])
    assert old["page_checksums"] is True
    if tag == "kept":
        _without_page_checksums(p)
        detail = "column 'id', page 0: it has no CRC"
    else:
        _without_page_checksums(p, tag={"store": old["store"], "batch": old["batch"]})
        detail = "its tag says so"
    os.unlink(store.path / CHECKSUMS)
    with pytest.raises(ResultFormatError) as e:  # every read refuses it (see below)
        open_store(store.path)
    assert str(e.value) == _refused(p, detail)
    reader = StoreReader(store.path)
    assert reader.verify() == {
        1: f"it was written without page checksums ({detail}), which every part of a store "
        "has: a changed value in it could not be seen"
    }
    assert not hasattr(reader, "unchecked")
    writer = StoreWriter(store.path)
    with pytest.warns(DamagedPartWarning) as w:
        _drop_damaged(writer)  # what a resumed run does before it trusts a part
    assert [str(x.message) for x in w] == [
        f"STORE {str(store.path)!r}: {part_name(1)} was damaged (it was written without page "
        f"checksums ({detail}), which every part of a store has: a changed value in it could "
        "not be seen): batch 1 is recomputed"
    ]
    assert not p.exists()
    assert sorted(writer.store.checksums()) == [f"parts/{part_name(k)}" for k in (0, 2)]


def _refused(p: Path, detail: str) -> str:
    """The one line of a read of part ``p`` rewritten without page checksums."""
    return (
        f"{p}: corrupt part file (it was written without page checksums ({detail}), which every "
        "part of a store has: a changed value in it could not be seen): StoreReader.verify() "
        "names the damaged parts; a run of the same command recomputes them"
    )


def test_every_read_refuses_a_part_rewritten_without_page_checksums(tmp_path):
    """Not only verify() and a resume: a part rewritten without page checksums (the same
    values, the tag kept: pyarrow's defaults) is refused by every read, each with the line
    reads give for a damaged part; a reader that checked the part before checks it again
    once its file changed (to_arrow, counts, sql, sql_batches), and reads a good store as
    before.  The SHA-256 record is kept: reads do not hash parts."""
    store = _store(tmp_path)
    good = open_store(store.path)
    expected = good.to_arrow()
    assert good.counts()["done"] == 5 and len(good.sql("SELECT id FROM corpus")) == 5
    p = store.part_path(1)
    data = p.read_bytes()
    _without_page_checksums(p)
    line = _refused(p, "column 'id', page 0: it has no CRC")
    for read in (
        lambda r: r.to_arrow(),
        lambda r: r.to_pandas(columns=["id"]),
        lambda r: r.counts(),
        lambda r: r.sql("SELECT count(*) FROM corpus"),
        lambda r: r.sql_batches("SELECT id FROM corpus").read_all(),
        lambda r: r.done_ids(),
    ):
        with pytest.raises(ResultFormatError) as e:
            read(good)  # opened and read before the rewrite: checked again
        assert str(e.value) == line
        with pytest.raises(ResultFormatError) as e:
            read(StoreReader(store.path))  # a new reader
        assert str(e.value) == line
    with pytest.raises(ResultFormatError) as e:
        open_store(store.path)
    assert str(e.value) == line
    # the part as written (with its page checksums) again: read as before
    p.write_bytes(data)
    assert good.to_arrow().equals(expected) and open_store(store.path).to_arrow().equals(expected)
    assert good.sql("SELECT count(*) AS n FROM corpus")["n"][0] == 5


def test_a_part_with_its_record_rewritten_without_page_checksums_is_damaged(tmp_path):
    """The same rewrite with the part's SHA-256 recorded: its bytes differ from the record,
    and the checks name what is wrong with them (the record's words only when no check
    shows a cause: test_verify_finds_a_changed_byte_by_the_recorded_checksum); reads refuse
    it in the same words (test_every_read_refuses_a_part_rewritten_without_page_checksums)."""
    store = _store(tmp_path)
    _without_page_checksums(store.part_path(1))
    why = StoreReader(store.path).verify()
    assert list(why) == [1] and why[1].startswith("it was written without page checksums (")


@pytest.mark.parametrize("crc", [True, False])
def test_every_page_header_is_read_dictionary_and_many_data_pages(tmp_path, crc):
    """The page walk (``_pages``) reads every page of every column chunk: a dictionary page
    and many small data pages, through nested page statistics; with the CRCs it finds
    nothing, without them it names the first page of the first column."""
    from attntopo.corpus._pages import page_without_checksum, pages_all_checked

    n = 20_000
    t = pa.table({"x": np.arange(n, dtype=np.float64), "s": [f"v{i % 7}" for i in range(n)]})
    p = tmp_path / "t.parquet"
    pq.write_table(t, p, data_page_size=1024, write_page_checksum=crc, use_dictionary=["s"])
    data = p.read_bytes()
    with pq.ParquetFile(p) as pf:
        md = pf.metadata
        assert md.row_group(0).column(1).has_dictionary_page
    assert page_without_checksum(data, md) == (None if crc else "column 'x', page 0: it has no CRC")
    assert pages_all_checked(data) is crc  # the sequential walk of the reads agrees
    if crc:  # a header cut short: the walk stops at the end of its chunk, naming the page
        col = md.row_group(0).column(0)
        assert page_without_checksum(data[: col.data_page_offset + 5], md).startswith(
            "column 'x', page 0: "
        )


def test_the_reads_walk_finds_one_page_without_its_crc_among_many(tmp_path):
    """The reads' walk (``pages_all_checked``) reads every page header, not only the first of
    a chunk: one data page in the middle of a column whose CRC field is cut out is found (the
    part's other bytes and footer as they were); a store's own part passes, its feature
    columns' headers on the fast path (one pattern, no full parse)."""
    from attntopo.corpus._pages import _PLAIN, _header, pages_all_checked

    n = 20_000
    t = pa.table({"x": np.arange(n, dtype=np.float64)})
    p = tmp_path / "t.parquet"
    pq.write_table(t, p, data_page_size=1024, write_page_checksum=True, write_statistics=False)
    data = p.read_bytes()
    assert pages_all_checked(data)
    starts, pos, end = [], 4, _footer_start(data)
    while pos < end:  # every page header's position
        starts.append(pos)
        _, size, body = _header(memoryview(data), pos)
        pos = body + size
    assert len(starts) > 10
    at = starts[len(starts) // 2]
    m = _PLAIN.match(data, at)
    assert m is not None
    head = data[at : m.end()]
    crc_field = re.match(rb"(\x15[\x80-\xff]*[\x00-\x7f]){3}(\x15[\x80-\xff]*[\x00-\x7f])", head)
    cut = head[: crc_field.start(2)] + b"\x2c" + head[crc_field.end(2) + 1 :]  # field 5: delta 2
    assert pages_all_checked(data[:at] + cut + data[at + len(head) :]) is False
    store = _store(tmp_path)
    part = store.part_path(0).read_bytes()
    assert pages_all_checked(part)
    md = pq.ParquetFile(store.part_path(0)).metadata
    col = md.row_group(0).column(md.num_columns - 1)  # a feature column: the fast path
    assert _PLAIN.match(part, col.data_page_offset) is not None


def _recompute(p, why: str) -> str:
    """The one line of every read of the damaged part ``p`` (``why``: verify()'s words)."""
    return (
        f"{p}: corrupt part file ({why}): StoreReader.verify() names the damaged parts; a run "
        "of the same command recomputes them"
    )


def _same_words_by_every_path(store: StoreReader, why: str) -> None:
    """verify() names part 1 with ``why``; every read (a reader opened before, one opened
    after, counts, SQL) refuses it in the one line of :func:`_recompute`."""

    assert store.verify() == {1: why}
    line = _recompute(store.part_path(1), why)
    for read in (
        lambda: open_store(store.path),
        lambda: store.to_arrow(),
        lambda: store.counts(),
        lambda: store.sql("SELECT count(*) AS n FROM corpus"),
    ):
        with pytest.raises(DamagedPartError) as e:
            read()
        assert (str(e.value), e.value.batch, e.value.why) == (line, 1, why)


def test_a_flipped_codec_in_the_footer_is_refused_by_every_read(tmp_path):
    """One bit flipped in a column chunk's codec in the footer (SNAPPY, 2 as a zigzag varint,
    becomes UNCOMPRESSED): the page checksums cover the pages, not the footer, so pyarrow
    would read the compressed bytes as values.  Every read checks the footer's layout before
    it reads (not only verify()), in verify()'s words."""
    from attntopo.corpus import CHECKSUMS

    store = _store(tmp_path)
    os.unlink(store.path / CHECKSUMS)
    p = store.part_path(1)
    data = bytearray(p.read_bytes())
    start = _footer_start(data)
    md = pq.ParquetFile(p).metadata
    name = md.row_group(0).column(3).path_in_schema
    # ColumnMetaData: ... 3 path_in_schema (its last name), 4 codec (0x15, 0x02), 5 num_values
    at = data.index(name.split(".")[-1].encode() + b"\x15\x02\x16", start) + len(name) + 1
    assert data[at] == 0x02
    data[at] ^= 0x02
    p.write_bytes(bytes(data))
    _same_words_by_every_path(
        store, f"its footer is inconsistent (column {name!r} says it is UNCOMPRESSED, not SNAPPY)"
    )


def _rewritten(path: Path, *, tag: dict | None = None, **options: Any) -> None:
    """Rewrite a part with the same rows, page checksums and its tag (``tag``: these keys
    changed), as another program would (``options``: pyarrow's)."""
    rows = pq.read_table(path)
    old = json.loads(rows.schema.metadata[b"attntopo.corpus"])
    meta = {b"attntopo.corpus": json.dumps({**old, **(tag or {})}).encode()}
    pq.write_table(
        rows.replace_schema_metadata(meta),
        path,
        compression="snappy",
        write_page_checksum=True,
        **options,
    )


def test_a_part_whose_tag_names_other_rows_reads_the_same_by_every_path(tmp_path):
    """The row count in a part's tag against its footer: verify() and every read say it in
    one wording (a read had said "its footer says N rows, it was written with M", verify()
    "it holds N rows, its tag says M")."""
    from attntopo.corpus import CHECKSUMS

    store = _store(tmp_path)
    os.unlink(store.path / CHECKSUMS)
    _rewritten(store.part_path(1), tag={"rows": 99})
    rows = pq.ParquetFile(store.part_path(1)).metadata.num_rows
    _same_words_by_every_path(store, f"its footer says {rows} rows, its tag says 99")


def test_a_rewrite_with_checksums_and_a_page_index_is_named_for_what_it_is(tmp_path):
    """A part rewritten with page checksums and a page index (between its column chunks and
    its footer): not "written without page checksums" (a read had said so), but its footer's
    layout, in verify()'s words."""
    from attntopo.corpus import CHECKSUMS

    store = _store(tmp_path)
    os.unlink(store.path / CHECKSUMS)
    p = store.part_path(1)
    _rewritten(p, write_page_index=True)
    md = pq.ParquetFile(p).metadata
    last = md.row_group(0).column(md.num_columns - 1)
    end = last.data_page_offset + last.total_compressed_size
    if last.has_dictionary_page:
        end = last.dictionary_page_offset + last.total_compressed_size
    footer = _footer_start(p.read_bytes())
    assert end < footer  # the page index lies between them
    _same_words_by_every_path(
        store,
        f"its footer is inconsistent (its column chunks end at byte {end}, its footer starts "
        f"at {footer})",
    )


def test_a_part_swapped_between_its_check_and_its_read_is_not_read(tmp_path, monkeypatch):
    """A read takes a part's rows from the bytes it checked, not from the path again: a file
    put in the part's place right after the check (the same tag, other values, page
    checksums) is not what it returns."""
    from attntopo.corpus._store import StoreReader as Reader

    store = _store(tmp_path)
    p = store.part_path(1)
    good = pq.read_table(p)
    reader = open_store(store.path)
    want = reader.to_arrow()
    other = good.set_column(
        good.schema.get_field_index("n_tokens"),
        "n_tokens",
        pa.array([10**6] * good.num_rows, good.schema.field("n_tokens").type),
    )
    check, swapped = Reader._check_part, []

    def check_then_swap(self, k, path, key):
        data = check(self, k, path, key)
        if k == 1 and not swapped:  # once: the file that is there after it is checked
            pq.write_table(other, path, compression="snappy", write_page_checksum=True)
            swapped.append(k)
        return data

    monkeypatch.setattr(Reader, "_check_part", check_then_swap)
    reader._known.clear()  # checked again as it is read
    assert reader.to_arrow().equals(want) and swapped == [1]


@pytest.mark.parametrize(
    "key, value, what",
    [
        ("feature_columns", None, "null, not a list of column names"),
        ("feature_columns", 3, "a number, not a list of column names"),
        ("feature_columns", "L0H0.js.h0.n_bars", "a string, not a list of column names"),
        ("feature_columns", ["a", None], "a list holding null, not a list of column names"),
        ("store_id", 7, "a number, not a string"),
        ("schema", None, "null, not a string"),
        ("input", [], "a list, not an object"),
    ],
)
def test_a_manifest_value_of_another_type_is_one_line(tmp_path, key, value, what):
    """A manifest's required keys hold what a store writes: ``feature_columns`` null or a
    number had raised a bare TypeError, a string had become a list of its characters."""
    store = _store(tmp_path)
    mf = store.path / "manifest.json"
    doc = json.loads(mf.read_text())
    mf.write_text(json.dumps({**doc, key: value}))
    with pytest.raises(ResultFormatError) as e:
        open_store(store.path)
    assert str(e.value) == (
        f"{mf}: {key!r} is {what} as in every store of its format version (the manifest was "
        "changed since it was written); --new-store (new_store=True) starts the store over "
        "(its parts are removed), or give another STORE"
    )


def test_a_part_swapped_while_a_checked_part_is_read_is_checked_again(tmp_path, monkeypatch):
    """A part checked before is read from its file, whose state is compared with the one
    checked after the read: another store's part put in its place while it is read is
    checked again, and refused in verify()'s words."""
    from attntopo.corpus._store import StoreReader as Reader

    store = _store(tmp_path)
    other = _store(tmp_path / "other")
    reader = open_store(store.path)
    reader.to_arrow()  # every part checked: read from the file from now on
    read, swapped = Reader._read_table, []

    def read_then_swap(self, path, k, data, columns):
        table = read(self, path, k, data, columns)
        if k == 1 and data is None and not swapped:
            os.replace(other.part_path(1), path)
            swapped.append(k)
        return table

    monkeypatch.setattr(Reader, "_read_table", read_then_swap)
    with pytest.raises(DamagedPartError) as e:
        reader.to_arrow()
    why = "its tag (the store and batch it was written for) is another's"
    assert swapped == [1] and str(e.value) == _recompute(store.part_path(1), why)
