"""``attntopo query`` streams its result within a documented memory bound (issue 33, item 4):
``SELECT * FROM generate_series(1, 10000000)`` grew past 10.5 GB as a table, 8.2 GB with
``--json`` and 2.6 GB with ``--csv``.  Now the table shows the first ``--rows`` rows and counts
the rest, ``--csv`` and ``--json`` write rows as they come (into ``--output FILE`` atomically),
and DuckDB runs under ``--memory-limit`` (default 1GB).  The bound (docs/corpus.md §4): the
process's peak resident memory stays within the memory limit plus 500 MB.

Peak memory is the query process's own ``VmHWM`` (``/proc/self/status``), read as it exits.
Not the child's ``ru_maxrss`` from ``os.wait4``: on Linux a child starts from its parent's
peak (``exec`` carries the old address space's high-water mark over, fork and vfork alike), so
under a pytest worker that had loaded models it read 850 MB for a query whose own peak was
480 MB."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from _cli import ROOT, assert_one_line_error, run
from _stores import small_store
from attntopo._validation import check_byte_size

# documented: Python, pyarrow, DuckDB's code, its buffers outside the limit, a batch in flight
OVERHEAD = 500 * 1000**2
TEN_MILLION = "SELECT * FROM generate_series(1, 10000000)"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("q") / "store", ["a b", "c d", "e", "f", "g"]).path


# ``python -m attntopo`` that writes its own peak resident size (VmHWM, bytes) as it exits
_MEASURED = """\
import atexit, os, runpy, sys

from attntopo._memory import peak_rss, peak_rss_source


def _peak():
    assert peak_rss_source() == "VmHWM", peak_rss_source()
    with open(os.environ["ATTNTOPO_TEST_PEAK"], "w") as f:
        f.write(str(peak_rss()))


atexit.register(_peak)
sys.argv[0] = "attntopo"
runpy.run_module("attntopo", run_name="__main__", alter_sys=True)
"""


def _peak(args: list[str], out_path) -> tuple[int, int | None, str]:
    """``(exit code, peak resident bytes, stderr)`` of ``attntopo query ARGS``, its stdout
    written to ``out_path``; the peak is the query process's own (module docstring)."""
    peak_file = out_path.with_name(out_path.name + ".peak")
    env = dict(os.environ, COLUMNS="80", ATTNTOPO_TEST_PEAK=str(peak_file))
    with open(out_path, "wb") as out:
        p = subprocess.run(
            [sys.executable, "-c", _MEASURED, "query", *args],
            stdout=out,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
    peak = int(peak_file.read_text()) if peak_file.exists() else None
    return p.returncode, peak, p.stderr.decode()


def _tail(path, n: int = 200) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - n))
        return f.read().decode()


@pytest.mark.parametrize("form", ["table", "--json", "--csv"])
def test_ten_million_rows_stay_within_the_documented_bound(store, tmp_path, form):
    args = [str(store), TEN_MILLION] + ([] if form == "table" else [form])
    code, peak, err = _peak(args, tmp_path / "out")
    assert code == 0, err
    assert peak < check_byte_size("1GB", "default") + OVERHEAD, peak
    if form == "table":
        assert err.strip() == (
            "10000000 rows, the first 100 shown (--rows N shows more; "
            "--csv and --json hold every row)"
        )
        shown = (tmp_path / "out").read_text().split()
        assert shown == ["generate_series", "─" * 15, *map(str, range(1, 101))]
    elif form == "--csv":
        assert _tail(tmp_path / "out").splitlines()[-2:] == ["9999999", "10000000"]
        assert (tmp_path / "out").read_text()[:20].splitlines()[:2] == ["generate_series", "1"]
    else:
        tail = _tail(tmp_path / "out")
        assert '{"generate_series":10000000}\n ],\n "timing": {' in tail
        assert tail.endswith('"figures": []\n}\n')


def test_a_sort_larger_than_the_limit_spills_and_stays_within_the_bound(store, tmp_path):
    """3 million rows of 100-character text (~300 MB) sorted under a 256MB limit."""
    sql = "SELECT i, repeat('x', 100) AS s FROM generate_series(1, 3000000) t(i) ORDER BY i DESC"
    args = [str(store), sql, "--memory-limit", "256MB", "--rows", "2"]
    code, peak, err = _peak(args, tmp_path / "out")
    assert code == 0, err
    assert peak < 256 * 1000**2 + OVERHEAD, peak
    shown = (tmp_path / "out").read_text().split()
    assert "3000000" in shown and "2999999" in shown and "2999998" not in shown
    assert err.startswith("3000000 rows, the first 2 shown")


def test_a_query_that_needs_more_than_the_limit_says_how_to_raise_it(store):
    r = run(
        "query",
        str(store),
        "SELECT list(i) FROM generate_series(1, 20000000) t(i)",
        "--memory-limit",
        "64MB",
    )
    line = assert_one_line_error(
        r, "Out of Memory", "needs more than memory_limit 64MB", "--memory-limit 4GB"
    )
    assert "SET " not in line and "Possible solutions" not in line
    assert_one_line_error(
        run("query", str(store), "SELECT 1", "--memory-limit", "lots"),
        "--memory-limit must be a size such as 512MB, 2GB or 1.5GiB, got 'lots'",
    )
    assert_one_line_error(
        run("query", str(store), "SELECT 1", "--memory-limit", "1MB"),
        "--memory-limit must be at least 32MB",
    )


def test_output_is_written_whole_or_not_at_all(store, tmp_path):
    sql = "SELECT id, row FROM corpus ORDER BY row"
    target = tmp_path / "rows.csv"
    r = run("query", str(store), sql, "--csv", "--output", str(target))
    assert r.returncode == 0 and r.stdout == "" and r.stderr.strip() == f"5 rows → {target}"
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [int(x["row"]) for x in rows] == [0, 1, 2, 3, 4]
    # an error after the first batches were written: the old file stays, no temporary is left
    failing = (
        "SELECT CASE WHEN i > 5000 THEN error('boom at ' || i) ELSE i END AS v "
        "FROM range(10000) t(i)"
    )
    for form in ("--csv", "--json"):
        assert_one_line_error(
            run("query", str(store), failing, form, "--output", str(target)),
            "SQL: Invalid Input Error: boom at 5001",
        )
        assert list(csv.DictReader(io.StringIO(target.read_text()))) == rows
        assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]
    r = run("query", str(store), sql, "--json", "--output", str(tmp_path / "rows.json"))
    doc = json.loads((tmp_path / "rows.json").read_text())
    assert r.returncode == 0 and [x["row"] for x in doc["rows"]] == [0, 1, 2, 3, 4]
    assert_one_line_error(
        run("query", str(store), sql, "--output", str(target)),
        "--output writes the --csv or --json form: add one of them",
    )
    assert_one_line_error(
        run("query", str(store), sql, "--csv", "--output", str(tmp_path)),
        "is a folder: give a file path",
    )


def test_json_rows_are_the_values_attntopo_writes_everywhere(store):
    """DuckDB writes the JSON rows now; they hold what json_safe made of each value before
    (NaN and infinities as "nan", "inf", "-inf", also in lists; text left as it is)."""
    sql = (
        "SELECT id, \"L0H3.js.h1.total_persistence\" AS p, 'nan'::DOUBLE AS a, "
        "['-inf'::DOUBLE, 1.5] AS l, 'NaN \"Infinity\" 漢\t' AS s, NULL AS z "
        "FROM corpus ORDER BY row"
    )
    r = run("query", str(store), sql, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    from attntopo.corpus import open_store
    from attntopo.io import json_safe

    want = json_safe(open_store(store).sql(sql, arrow=True).to_pylist())
    assert doc["rows"] == want and doc["columns"] == ["id", "p", "a", "l", "s", "z"]
    assert want[0]["a"] == "nan" and want[0]["l"] == ["-inf", 1.5]


def test_two_columns_of_one_name_are_refused_before_any_output(store, tmp_path):
    """``SELECT 1 AS a, 2 AS a, 3 AS A --json`` wrote ``"columns": ["a", "a", "A"]`` over rows
    ``{"a":1,"a_1":2,"A_2":3}``, and the table and CSV had two columns ``a`` (issue 33:
    every value under its own name). Now one line, exit 2, in every form, and no file."""
    want = (
        'error: SQL: columns of the result share a name (3 named "a" ("a", "a", "A": equal but '
        'for case)): name them apart with AS, e.g. SELECT … AS "a", … AS "a_2"; JSON rows, '
        "DataFrames and CSV headers hold one value per name"
    )
    sql = "SELECT 1 AS a, 2 AS a, 3 AS A"
    kept = tmp_path / "kept.json"
    kept.write_text("old\n")
    for form in ([], ["--csv"], ["--json"]):
        for output in ([], ["--output", str(tmp_path / "new.out")], ["--output", str(kept)]):
            if output and not form:
                continue
            line = assert_one_line_error(run("query", str(store), sql, *form, *output))
            assert line == want
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json"]
    assert kept.read_text() == "old\n"
    # what the line says to do works: every value under its own name
    r = run("query", str(store), "SELECT 1 AS a, 2 AS a_2, 3 AS A_3", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["columns"] == ["a", "a_2", "A_3"] and doc["rows"] == [{"a": 1, "a_2": 2, "A_3": 3}]


def test_a_part_rewritten_without_page_checksums_is_refused(tmp_path):
    """A part rewritten by another program without page checksums (the same values, its tag
    kept: pyarrow's defaults) could hold a changed value without a word: ``attntopo query``
    refuses it, exit 2, with the line reads give for a damaged part; a good store answers."""
    import pyarrow.parquet as pq

    path = small_store(tmp_path / "store", ["a b", "c d", "e"]).path
    r = run("query", str(path), "SELECT count(*) AS n FROM corpus", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["rows"] == [{"n": 3}], r.stderr
    part = path / "parts" / "part-00000000.parquet"
    rows = pq.read_table(part)
    pq.write_table(rows, part, compression="snappy")
    assert pq.read_table(part).equals(rows)
    line = (
        f"error: {part}: corrupt part file (it was written without page checksums (column 'id', "
        "page 0: it has no CRC), which every part of a store has: a changed value in it could "
        "not be seen): StoreReader.verify() names the damaged parts; a run of the same command "
        "recomputes them"
    )
    for form in ([], ["--json"], ["--csv"]):
        r = run("query", str(path), "SELECT count(*) FROM corpus", *form)
        assert assert_one_line_error(r) == line
