"""The store's Parquet parts in their own folder (issue 28 item 9): ``STORE/parts`` holds the
parts and nothing else, so pandas, pyarrow.dataset and DuckDB take the folder (the docs'
``pd.read_parquet("store")`` failed on ``errors.jsonl``); a store of format version 1 (parts
beside the manifest, made before the first release) is refused in one line, and --new-store
makes it again in the new layout; so is a store of format version 2, by ``corpus`` and
``query``, and --new-store makes it again as format version 3.  Through the CLI's ``main``, in
this process (the model loads once), as test_cli_corpus.py does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

import attntopo.cli  # noqa: F401 - the app and its other commands
import attntopo.cli._corpus  # noqa: F401 - registers `corpus`
import attntopo.cli._query  # noqa: F401 - registers `query`
from attntopo.cli._common import main
from attntopo.corpus import CHECKSUMS, MANIFEST, open_store, part_name
from attntopo.datasets import fortunes

pytestmark = pytest.mark.model
FAST = ["--layer", "0", "--head", "0,5", "--batch-size", "2", "--id-column", "id", "--quiet"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("layout")
    texts = [
        " ".join(t.split())
        for t in fortunes(
            categories=["science"], min_words=4, max_words=12, n_per_category=10, seed=3
        ).texts
    ]

    def jsonl(name, idx):
        (d / name).write_text(
            "".join(json.dumps({"id": f"f{i}", "text": texts[i]}) + "\n" for i in idx)
        )
        return str(d / name)

    return d, jsonl("a.jsonl", range(6)), jsonl("b.jsonl", range(6, 10))


def _corpus(capsys, *args):
    code = main(["corpus", *args, *FAST])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)


def _count(capsys, store) -> int:
    code = main(["query", str(store), "SELECT count(*) AS n FROM corpus", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)["rows"][0]["n"]


def _sha256sum_ok(store) -> None:
    if shutil.which("sha256sum"):
        r = subprocess.run(
            ["sha256sum", "--quiet", "-c", CHECKSUMS], cwd=store, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stdout + r.stderr


def test_any_parquet_reader_takes_the_parts_folder(inputs, capsys):
    import duckdb
    import pandas as pd
    import pyarrow.dataset as ds

    d, a, _ = inputs
    st = d / "new"
    _corpus(capsys, a, "--out", str(st))
    assert sorted(os.listdir(st / "parts")) == [part_name(k) for k in range(3)]
    assert not [e for e in os.listdir(st) if e.endswith(".parquet")]
    ids = open_store(st).to_pandas()["id"].tolist()
    assert ids == [f"f{i}" for i in range(6)]
    raw = pd.read_parquet(st / "parts")
    assert raw["id"].tolist() == ids  # the part names sort in batch order
    assert ds.dataset(st / "parts").to_table().num_rows == len(ids)
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{st}/parts/*.parquet')").fetchall() == [
        (6,)
    ]
    assert _count(capsys, st) == 6
    _sha256sum_ok(st)


def _as_version_1(store) -> None:
    """The store as attntopo wrote it before ``parts/`` (format version 1): the same manifest
    with version 1, the parts beside it, their checksums under their bare names."""
    mf = store / MANIFEST
    doc = json.loads(mf.read_text())
    doc["format_version"] = 1
    mf.write_text(json.dumps(doc, indent=1) + "\n")
    for p in sorted((store / "parts").iterdir()):
        os.replace(p, store / p.name)
    os.rmdir(store / "parts")
    sums = store / CHECKSUMS
    sums.write_text(sums.read_text().replace("  parts/", "  "))


def test_a_version_1_store_is_refused_in_one_line_and_made_again_by_new_store(inputs, capsys):
    from attntopo.errors import ResultFormatError

    d, a, _ = inputs
    old = d / "old"
    _corpus(capsys, a, "--out", str(old))
    _as_version_1(old)
    with pytest.raises(
        ResultFormatError,
        match=r"a store of corpus format version 1, made before the first release .* does not "
        r"read: make it again; --new-store",
    ):
        open_store(old)
    code = main(
        ["corpus", a, "--out", str(old), *FAST]
    )  # resuming it: the same line, nothing changed
    out, err = capsys.readouterr()
    assert code != 0 and "corpus format version 1" in err and len(err.strip().splitlines()) == 1, (
        err
    )
    assert (
        not (old / "parts").exists()
        and len([e for e in os.listdir(old) if e.endswith(".parquet")]) == 3
    )
    # --new-store starts it over in the new layout, nothing of the old one left
    code = main(["corpus", a, "--out", str(old), *FAST, "--new-store"])
    capsys.readouterr()
    assert code == 0
    assert sorted(os.listdir(old / "parts")) == [part_name(k) for k in range(3)]
    assert not [e for e in os.listdir(old) if e.endswith(".parquet")]


def test_a_version_2_store_is_refused_by_corpus_and_query_in_one_line(inputs, capsys):
    """A store of format version 2 (made before the first release: values possibly under
    another head's name, parts possibly without page checksums): a resume, an append and a
    query exit 2 with one line naming its manifest, why, and --new-store, nothing changed;
    --new-store makes it again as format version 3."""
    d, a, b = inputs
    old = d / "old2"
    _corpus(capsys, a, "--out", str(old))
    mf = old / MANIFEST
    doc = json.loads(mf.read_text())
    assert doc["format_version"] == 3
    mf.write_text(json.dumps({**doc, "format_version": 2}, indent=1) + "\n")
    before = sorted((p.name, p.read_bytes()) for p in old.rglob("*") if p.is_file())
    line = (
        f"error: {mf}: a store of corpus format version 2, made before the first release by an "
        "attntopo that could name values under another head's name (layers or heads given out "
        "of order) and wrote parts without page checksums, which this attntopo does not read: "
        "make it again; --new-store (new_store=True) starts the store over (its parts are "
        "removed), or give another STORE"
    )
    for argv in (
        ["corpus", a, "--out", str(old), *FAST],
        ["corpus", b, "--out", str(old), "--append", *FAST],
        ["query", str(old), "SELECT count(*) FROM corpus"],
        ["query", str(old), "SELECT count(*) FROM corpus", "--json"],
    ):
        code = main(argv)
        out, err = capsys.readouterr()
        assert (code, out, err.strip().splitlines()) == (2, "", [line]), (argv, out, err)
    assert sorted((p.name, p.read_bytes()) for p in old.rglob("*") if p.is_file()) == before
    code = main(["corpus", a, "--out", str(old), *FAST, "--new-store"])
    capsys.readouterr()
    assert code == 0 and json.loads(mf.read_text())["format_version"] == 3
    assert _count(capsys, old) == 6


def test_a_part_rewritten_without_page_checksums_is_refused_then_recomputed(inputs, capsys):
    """A part rewritten without page checksums (the same values, its tag kept): ``query``
    and an append of another input stop with one line (the append's says to run the store's
    input again first: an append does not recompute parts); that resume recomputes the part
    (one warning), and the append then runs."""
    import pyarrow.parquet as pq

    d, a, b = inputs
    store = d / "nocrc"
    _corpus(capsys, a, "--out", str(store))
    part = store / "parts" / part_name(1)
    rows = pq.read_table(part)
    pq.write_table(rows, part, compression="snappy")
    why = (
        f"{part}: corrupt part file (it was written without page checksums (column 'id', page "
        "0: it has no CRC), which every part of a store has: a changed value in it could not be "
        "seen)"
    )
    code = main(["query", str(store), "SELECT count(*) FROM corpus"])
    out, err = capsys.readouterr()
    assert (code, out, err.strip().splitlines()) == (
        2,
        "",
        [
            f"error: {why}: StoreReader.verify() names the damaged parts; a run of the same "
            "command recomputes them"
        ],
    )
    code = main(["corpus", b, "--out", str(store), "--append", *FAST])
    out, err = capsys.readouterr()
    assert (code, err.strip().splitlines()) == (
        2,
        [
            f"error: {why}: run it again with {a} (without --append) to recompute batch 1 "
            f"before appending {b}"
        ],
    )
    code = main(["corpus", a, "--out", str(store), *FAST])
    out, err = capsys.readouterr()
    assert code == 0 and f"{part_name(1)} was damaged (it was written without page" in err, err
    assert pq.read_table(part).equals(rows) and _count(capsys, store) == 6
    _corpus(capsys, b, "--out", str(store), "--append")
    assert _count(capsys, store) == 10
    _sha256sum_ok(store)


def test_an_append_refused_for_damage_says_what_a_resume_does(inputs, capsys, monkeypatch):
    """An append of another input to a store with a damaged part (its footer's row count
    changed) says to run the store's own input again (which recomputes it); a store replaced
    while the append reads it (another program, not holding the lock, started it over) is
    named as replaced, its words unchanged (they had been reworded as damage to recompute)."""
    import pyarrow.parquet as pq

    from attntopo.corpus._store import StoreReader

    d, a, b = inputs
    store = d / "footer"
    _corpus(capsys, a, "--out", str(store))
    os.unlink(store / CHECKSUMS)
    part = store / "parts" / part_name(1)
    rows = pq.read_table(part)
    tag = json.loads(rows.schema.metadata[b"attntopo.corpus"])
    meta = {b"attntopo.corpus": json.dumps({**tag, "rows": 7}).encode()}
    pq.write_table(
        rows.replace_schema_metadata(meta), part, compression="snappy", write_page_checksum=True
    )
    code = main(["corpus", b, "--out", str(store), "--append", *FAST])
    out, err = capsys.readouterr()
    assert (code, err.strip().splitlines()) == (
        2,
        [
            f"error: {part}: corrupt part file (its footer says {rows.num_rows} rows, its tag "
            f"says 7): run it again with {a} (without --append) to recompute batch 1 before "
            f"appending {b}"
        ],
    )
    code = main(["corpus", a, "--out", str(store), *FAST])
    out, err = capsys.readouterr()
    assert code == 0 and f"{part_name(1)} was damaged (its footer says" in err, err
    counts = StoreReader.counts

    def replaced_then_counts(self):
        mf = self.path / MANIFEST
        mf.write_text(json.dumps({**json.loads(mf.read_text()), "store_id": "f" * 32}))
        return counts(self)

    monkeypatch.setattr(StoreReader, "counts", replaced_then_counts)
    code = main(["corpus", b, "--out", str(store), "--append", *FAST])
    out, err = capsys.readouterr()
    assert (code, err.strip().splitlines()) == (
        2,
        [
            f"error: STORE {str(store)!r} was replaced by a new store (a run with --new-store) "
            "since this reader opened it: these are no longer its rows; open it again "
            "(open_store, or run the command again)"
        ],
    )
