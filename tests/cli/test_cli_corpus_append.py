"""``attntopo corpus --append`` as a user runs it (subprocesses, MiniLM, Debian fortunes): a
store grows by a second input (ids it holds skipped and counted), equals a store made from the
union in one run, refuses other settings or a reused id with another text in one line, and an
append killed with SIGKILL continues when the same command runs again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from attntopo.corpus import open_store, part_name
from attntopo.datasets import fortunes

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[2]
# batch size 2 with overlaps on whole batches: every text of the grown store sits in the same
# padded batch as in the union store, so the features must be equal, not merely close
FAST = [
    "--layer",
    "0",
    "--head",
    "1",
    "--batch-size",
    "2",
    "--id-column",
    "id",
    "--jobs",
    "1",
    "--quiet",
]
_MAIN = (
    "import sys, attntopo.cli, attntopo.cli._corpus, attntopo.cli._query; "
    "from attntopo.cli._common import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    ds = fortunes(categories=["science"], min_words=4, max_words=14, n_per_category=40, seed=5)
    return [" ".join(t.split()) for t in ds.texts]


def _jsonl(path: Path, texts: list[str], idx) -> Path:
    path.write_text("".join(json.dumps({"id": f"f{i}", "text": texts[i]}) + "\n" for i in idx))
    return path


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", _MAIN, *args]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ATTNTOPO_PROGRESS="0")
    return subprocess.run(
        _cmd(*args), capture_output=True, text=True, timeout=300, cwd=ROOT, env=env
    )


def _by_id(store):
    df = store.to_pandas().set_index("id").sort_index()
    return df, df[store.feature_columns].to_numpy()


def _same_rows(store, ref):
    a, xa = _by_id(store)
    b, xb = _by_id(ref)
    assert list(a.index) == list(b.index)
    assert list(a["text_sha256"]) == list(b["text_sha256"])
    np.testing.assert_array_equal(xa, xb)


def test_append_adds_new_ids_skips_stored_ones_and_equals_the_union(texts, tmp_path):
    a = _jsonl(tmp_path / "a.jsonl", texts, range(6))
    b = _jsonl(tmp_path / "b.jsonl", texts, [4, 5, 6, 7])  # f4, f5 are stored already
    u = _jsonl(tmp_path / "u.jsonl", texts, range(8))
    s, ref = tmp_path / "s", tmp_path / "ref"
    r = _run("corpus", str(a), "--out", str(s), *FAST)
    assert r.returncode == 0, r.stderr
    # without --append another input is refused, and the message says how to add it
    r = _run("corpus", str(b), "--out", str(s), *FAST)
    assert (
        r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--append" in r.stderr
    ), r.stderr
    r = _run("corpus", str(b), "--out", str(s), "--append", *FAST)
    assert r.returncode == 0, r.stderr
    assert "2 already in the store (skipped)" in r.stdout and "6 done" not in r.stdout, r.stdout
    store = open_store(s)
    assert store.counts()["done"] == store.counts()["total"] == 8
    ins = store.inputs()
    assert [e["name"] for e in ins] == [str(a), str(b)]
    assert (
        ins[1]["already"] == 2 and ins[1]["status"] == "done" and ins[1]["size"] == b.stat().st_size
    )
    assert len(ins[1]["sha256"]) == 64 and ins[1]["added"]
    assert store.verify() == {}  # every part's checksum recorded, the new ones too
    # queryable from the command line
    q = _run("query", str(s), "SELECT count(*) AS n, count(DISTINCT id) AS d FROM corpus", "--json")
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout)["rows"] == [{"n": 8, "d": 8}], q.stdout
    r = _run("corpus", str(u), "--out", str(ref), *FAST)
    assert r.returncode == 0, r.stderr
    _same_rows(store, open_store(ref))
    # the same append again: nothing new, the store unchanged
    before = sorted(os.listdir(s)) + sorted(os.listdir(s / "parts"))
    r = _run("corpus", str(b), "--out", str(s), "--append", *FAST)
    assert r.returncode == 0 and "2 already in the store" in r.stdout, (r.stdout, r.stderr)
    assert (
        sorted(os.listdir(s)) + sorted(os.listdir(s / "parts")) == before
        and open_store(s).counts()["done"] == 8
    )


def test_append_refuses_other_settings_and_an_id_with_another_text(texts, tmp_path):
    a = _jsonl(tmp_path / "a.jsonl", texts, range(4))
    s = tmp_path / "s"
    assert _run("corpus", str(a), "--out", str(s), *FAST).returncode == 0
    files = {p.relative_to(s): p.read_bytes() for p in s.rglob("*") if p.is_file()}
    b = _jsonl(tmp_path / "b.jsonl", texts, [8, 9])
    r = _run("corpus", str(b), "--out", str(s), "--append", *FAST[:2], "--head", "2", *FAST[4:])
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "heads" in lines[0], r.stderr
    c = tmp_path / "c.jsonl"
    c.write_text(
        json.dumps({"id": "f9", "text": texts[9]})
        + "\n"
        + json.dumps({"id": "f2", "text": texts[12]})
        + "\n"
    )
    r = _run("corpus", str(c), "--out", str(s), "--append", *FAST)
    lines = r.stderr.strip().splitlines()
    assert (
        r.returncode == 2
        and len(lines) == 1
        and "id 'f2'" in lines[0]
        and "another text" in lines[0]
    ), r.stderr
    assert {
        p.relative_to(s): p.read_bytes() for p in s.rglob("*") if p.is_file()
    } == files  # nothing changed


def test_killed_append_continues_with_the_same_command(texts, tmp_path):
    a = _jsonl(tmp_path / "a.jsonl", texts, range(6))
    b = _jsonl(tmp_path / "b.jsonl", texts, range(4, 24))  # f4, f5 stored; 18 new in 9 parts
    u = _jsonl(tmp_path / "u.jsonl", texts, range(24))
    s, ref = tmp_path / "s", tmp_path / "ref"
    assert _run("corpus", str(a), "--out", str(s), *FAST).returncode == 0
    first_new = part_name(4)  # b's batch 0 (f4, f5) is stored: no part; batch 1 is part 4
    p = subprocess.Popen(
        _cmd("corpus", str(b), "--out", str(s), "--append", *FAST),
        cwd=ROOT,
        env=dict(os.environ, ATTNTOPO_PROGRESS="0"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 240
    while (
        p.poll() is None and time.monotonic() < deadline and not (s / "parts" / first_new).exists()
    ):
        time.sleep(0.005)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    assert p.returncode == -9, p.stderr.read()[-2000:]
    mid = open_store(s)
    assert mid.inputs()[-1]["status"] == "appending" and mid.counts()["remaining"] > 0
    # another input cannot be appended before this one is finished
    c = _jsonl(tmp_path / "c.jsonl", texts, [30])
    r = _run("corpus", str(c), "--out", str(s), "--append", *FAST)
    assert r.returncode == 2 and "unfinished" in r.stderr and str(b) in r.stderr, r.stderr
    r = _run("corpus", str(b), "--out", str(s), "--append", *FAST)
    assert r.returncode == 0 and "2 already in the store (skipped)" in r.stdout, (
        r.stdout,
        r.stderr,
    )
    store = open_store(s)
    ids = store.to_arrow(columns=["id"])["id"].to_pylist()
    assert len(ids) == len(set(ids)) == 24 and store.counts()["remaining"] == 0
    assert store.inputs()[-1]["status"] == "done" and store.verify() == {}
    assert not [e for e in s.rglob("*.tmp")]
    assert _run("corpus", str(u), "--out", str(ref), *FAST).returncode == 0
    _same_rows(store, open_store(ref))
