"""``attntopo corpus`` and ``attntopo query`` through the CLI's ``main`` (in this process, so
the model loads once; the STORE-is-a-file case also as a subprocess, which loads none)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

import attntopo.cli  # noqa: F401 - the app and its other commands
import attntopo.cli._corpus  # noqa: F401 - registers `corpus` (until cli/__init__ imports it)
import attntopo.cli._query  # noqa: F401 - registers `query`
from attntopo.cli._common import main
from attntopo.corpus import open_store

pytestmark = pytest.mark.model
FAST = ["--layer", "0", "--head", "0,5", "--batch-size", "2"]


def _cli(capsys, *args):
    code = main([*args])
    out, err = capsys.readouterr()
    return code, out, err


def _one_error(code, out, err, *fragments):
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A store of three texts (one empty line skipped),
    made once; returns (folder, stdout, stderr)."""
    d = tmp_path_factory.mktemp("corpus_cli")
    (d / "t.txt").write_text(
        "The cat sat on the mat.\n\nDogs bark at night.\nA third text about people.\n"
    )
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    try:
        code = main(["corpus", str(d / "t.txt"), "--out", str(d / "st"), *FAST, "--log-every", "1"])
        out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
    finally:
        sys.stdout, sys.stderr = old_out, old_err
    assert code == 0, (out, err)
    return d, out, err


def test_corpus_prints_counts_and_logs_progress_off_a_terminal(made, capsys):
    d, out, err = made
    assert out.startswith(
        "corpus: 3 done, 1 skipped (empty), 0 skipped (too long), 0 truncated, 0 failed → "
    )
    assert str(d / "st") in out
    progress = err.strip().splitlines()
    assert [x.split(" texts")[0] for x in progress] == ["corpus: 2/3", "corpus: 3/3"]
    # the same command again: nothing left to do, the same counts, and --quiet is silent
    code, out2, err2 = _cli(
        capsys, "corpus", str(d / "t.txt"), "--out", str(d / "st"), *FAST, "--quiet"
    )
    assert code == 0 and out2.split(" · ")[0] == out.split(" · ")[0] and err2 == ""


def test_corpus_json(made, capsys):
    d, _, _ = made
    code, out, err = _cli(
        capsys, "corpus", str(d / "t.txt"), "--out", str(d / "st"), *FAST, "--json"
    )
    doc = json.loads(out)
    assert code == 0 and err == ""
    assert (
        doc["counts"]["ok"] == 3
        and doc["settings"]["features"]["heads"] == [0, 5]
        and doc["store"] == str(d / "st")
    )


def test_query_table_json_and_csv_agree_with_the_library(made, capsys):
    d, _, _ = made
    sql = 'SELECT id, n_tokens, "L0H5.js.h0.total_persistence" AS p FROM corpus ORDER BY row'
    want = open_store(d / "st").sql(sql)
    code, out, err = _cli(capsys, "query", str(d / "st"), sql)
    assert code == 0 and err.strip() == "3 rows"
    for rid in want["id"]:
        assert rid in out
    code, out, _ = _cli(capsys, "query", str(d / "st"), sql, "--json")
    doc = json.loads(out)
    assert (doc["store"], doc["sql"], doc["columns"]) == (
        str(d / "st"),
        sql,
        ["id", "n_tokens", "p"],
    )
    rows = doc["rows"]
    assert [r["id"] for r in rows] == list(want["id"])
    assert [r["p"] for r in rows] == pytest.approx(list(want["p"]), rel=1e-15)
    code, out, _ = _cli(capsys, "query", str(d / "st"), sql, "--csv")
    got = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["n_tokens"]) for r in got] == list(want["n_tokens"])
    assert [float(r["p"]) for r in got] == list(want["p"])  # repr of a float round-trips


def test_one_line_errors(made, tmp_path, capsys):
    d, _, _ = made
    _one_error(
        *_cli(
            capsys, "corpus", str(d / "t.txt"), "--out", str(d / "st"), *FAST, "--sets", "js,graph"
        ),
        "made with sets=js, this run has sets=js,graph",
        "--new-store",
    )
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\ncaf\xe9\n")
    _one_error(
        *_cli(capsys, "corpus", str(bad), "--out", str(tmp_path / "s1")), "line 2", "--encoding"
    )
    assert not (tmp_path / "s1").exists()
    c = tmp_path / "d.csv"
    c.write_text("review,label\ngood,1\n")
    _one_error(
        *_cli(capsys, "corpus", str(c), "--out", str(tmp_path / "s2")),
        "no column 'text'",
        "'review', 'label'",
    )
    _one_error(*_cli(capsys, "query", str(d / "st"), "SELEKT 1"), "SQL:")
    _one_error(
        *_cli(capsys, "query", str(d / "st"), "SELECT 1", "--csv", "--json"), "exclude each other"
    )
    _one_error(
        *_cli(
            capsys, "corpus", str(d / "t.txt"), "--out", str(tmp_path / "s3"), "--on-long", "maybe"
        ),
        "on_long value 'maybe'",
    )


def test_a_store_made_with_drop_special_continues_only_with_the_option(made, tmp_path, capsys):
    """corpus dropped special tokens by default until issue 29 (now kept, as everywhere): a store
    made that way (--drop-special now) continued without the option is one line naming the
    setting and the option; with it, the run continues."""
    d, _, _ = made
    st = tmp_path / "old"
    args = ["corpus", str(d / "t.txt"), "--out", str(st), *FAST, "--quiet"]
    code, _, err = _cli(capsys, *args, "--drop-special")
    assert code == 0, err
    assert open_store(st).settings.features.drop_special is True
    assert open_store(d / "st").settings.features.drop_special is False
    _one_error(
        *_cli(capsys, *args),
        "was made with drop_special=True, this run has drop_special=False",
        "(drop_special=True; --drop-special)",
        "--new-store",
    )
    code, out, err = _cli(capsys, *args, "--drop-special")
    assert code == 0 and out.startswith("corpus: 3 done"), (out, err)
    # the option changes the numbers: [CLS] and [SEP] are two of the JS space's points or not
    sql = 'SELECT "L0H0.js.h0.n_bars" AS b, n_tokens FROM corpus ORDER BY row'
    kept, dropped = open_store(d / "st").sql(sql), open_store(st).sql(sql)
    assert list(kept["b"]) == list(kept["n_tokens"]) == list(dropped["n_tokens"])
    assert list(dropped["b"]) == [n - 2 for n in kept["n_tokens"]]


def test_store_names_the_file_system_refuses_are_one_line(tmp_path, capsys):
    (tmp_path / "t.txt").write_text("one text\n")
    long = "s" * 300
    _one_error(
        *_cli(capsys, "corpus", str(tmp_path / "t.txt"), "--out", str(tmp_path / long)),
        "cannot be used",
        long[:40],
    )
    _one_error(
        *_cli(capsys, "corpus", str(tmp_path / "t.txt"), "--out", str(tmp_path / "a\0b")),
        "--out",
        "null byte",
    )  # the command line's own check
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_store_that_is_a_file_writes_nothing_as_a_subprocess(tmp_path):
    f = tmp_path / "store"
    f.write_text("not a folder")
    (tmp_path / "t.txt").write_text("one text\n")
    code = (
        "import sys, attntopo.cli, attntopo.cli._corpus; from attntopo.cli._common import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "corpus", str(tmp_path / "t.txt"), "--out", str(f)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        f"error: STORE '{f}' is a file: give a folder (new, empty, or a corpus store)"
    ]
    assert (
        sorted(p.name for p in tmp_path.iterdir()) == ["store", "t.txt"]
        and f.read_text() == "not a folder"
    )


@pytest.mark.parametrize("content", ["", "\n  \n\n"])
def test_an_input_without_texts_is_one_line_and_makes_no_store(tmp_path, content):
    """An empty input gave `corpus: 0 done …`, exit 0, and a 343 KB manifest (issue 28 item 8):
    now one line, exit 2, no store; as a subprocess, which loads no model."""
    import os

    from _cli import assert_one_line_error, run

    f = tmp_path / "empty.txt"
    f.write_text(content)
    line = assert_one_line_error(
        run("corpus", str(f), "--out", str(tmp_path / "store")),
        "no texts to compute",
        "no store was made",
    )
    assert ("empty record" in line) == bool(content)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt"]


def test_layers_and_heads_out_of_order_keep_every_value_under_its_head(tmp_path, capsys):
    # issue 33: `--layer 4,1 --head 3,0` named layer 1's values L4H3; each column now holds
    # the values of the head it names (equal to that head alone), in the order given
    import numpy as np

    from attntopo.features import features

    (tmp_path / "t.txt").write_text("The cat sat on the mat.\nDogs bark at night.\n")
    code, out, err = _cli(
        capsys,
        "corpus",
        str(tmp_path / "t.txt"),
        "--out",
        str(tmp_path / "st"),
        "--layer",
        "4,1",
        "--head",
        "3,0",
        "--sets",
        "js,graph",
    )
    assert code == 0, (out, err)
    df = open_store(tmp_path / "st").to_pandas()
    cols = [c for c in df.columns if c.startswith("L")]
    assert list(dict.fromkeys(c.split(".")[0] for c in cols if ".js." in c)) == [
        "L4H3",
        "L4H0",
        "L1H3",
        "L1H0",
    ]
    for layer, head in ((4, 3), (1, 0)):
        ref = features(
            list(df["text"]), sets=("js", "graph"), layers=[layer], heads=[head], n_jobs=1
        )
        for k, c in enumerate(ref.columns):
            assert np.array_equal(df[c].to_numpy(), ref.values[:, k], equal_nan=True), c
