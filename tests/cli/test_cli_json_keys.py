"""Every command that computes a result or lists rows (``words``, ``models``, ``query``) prints the
same ``--json`` frame: the shared top-level keys of :func:`attntopo.cli._common.finish_result` —
``attntopo`` (the version), ``timing`` (seconds per stage and ``total_s``), ``out`` (the saved
folder or null) and ``figures`` (the figure files written) — whatever else the result holds.  Real
MiniLM runs on short texts, one subprocess per command."""

from __future__ import annotations

import json
import math

import pytest

import attntopo
from _cli import run

TEXT = "The cat sat on the mat."
SHARED = ("attntopo", "timing", "out", "figures")

COMMANDS = {
    "analyze": ["analyze", TEXT, "--layer", "0", "--head", "0"],
    "compare": ["compare", TEXT, "The dog sat on the rug.", "--layer", "0", "--head", "0"],
    "phrase": ["phrase", "cat", "-c", TEXT, "-c", "A cat ran home.", "--layer", "0", "--head", "0"],
    "timeline": ["timeline", TEXT],
    "heads": ["heads", TEXT],
    "compress": ["compress", TEXT, "--layer", "0", "--head", "0"],
    "depth": ["depth", TEXT, "A dog slept by the door.", "--k", "2"],
    "approx": ["approx", TEXT, "--budget", "4", "--layer", "0", "--head", "0"],
    "context": [
        "context",
        TEXT,
        "A dog slept by the door.",
        "Rain fell on the town.",
        "--permutations",
        "1",
    ],
    "hardmax simulate": ["hardmax", "simulate", "--n", "6", "--steps", "5"],
    # the listing commands (bare JSON lists before issue 29): the list beside the shared keys
    "words": ["words", TEXT],
    "models": ["models"],
}
#: the whole document of the listing commands, in order
LISTING_KEYS = {
    "words": ["attntopo", "model", "source", "words", "timing", "out", "figures"],
    "models": ["attntopo", "default", "models", "timing", "out", "figures"],
}


def _check_frame(doc: dict, out: str | None = None) -> None:
    assert all(k in doc for k in SHARED), sorted(doc)
    assert doc["attntopo"] == attntopo.__version__
    assert doc["out"] == out
    assert isinstance(doc["figures"], list)
    t = doc["timing"]
    assert (
        isinstance(t, dict)
        and t
        and all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in t.values())
    ), t
    assert t["total_s"] >= max(
        v for k, v in t.items() if k != "total_s"
    )  # every stage is part of the total


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_result_command_prints_the_shared_json_keys(name):
    r = run(*COMMANDS[name], "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    _check_frame(doc)
    if name in LISTING_KEYS:
        assert list(doc) == LISTING_KEYS[name]


@pytest.mark.model
def test_query_prints_the_shared_json_keys(tmp_path):
    """``query --json`` printed a bare list of rows;
    now the shared document, the rows under ``rows``."""
    (tmp_path / "t.txt").write_text("The cat sat on the mat.\nDogs bark.\n")
    store = tmp_path / "store"
    c = run(
        "corpus",
        str(tmp_path / "t.txt"),
        "--out",
        str(store),
        "--layer",
        "0",
        "--head",
        "0",
        "--json",
    )
    assert c.returncode == 0, c.stderr
    # corpus too: its own keys, then the shared ones, "out" the store it wrote
    made = json.loads(c.stdout)
    _check_frame(made, out=str(store))
    assert list(made) == [
        "attntopo",
        "store",
        "counts",
        "already_stored",
        "settings",
        "errors",
        "timing",
        "out",
        "figures",
    ]
    assert made["counts"]["ok"] == 2 and made["figures"] == []
    sql = "SELECT row, n_tokens FROM corpus ORDER BY row"
    q = run("query", str(store), sql, "--json")
    assert q.returncode == 0, q.stderr
    doc = json.loads(q.stdout)
    _check_frame(doc)
    assert list(doc) == ["attntopo", "store", "sql", "columns", "rows", "timing", "out", "figures"]
    assert (doc["store"], doc["sql"], doc["columns"]) == (str(store), sql, ["row", "n_tokens"])
    assert [r["row"] for r in doc["rows"]] == [0, 1] and "query_s" in doc["timing"]


@pytest.mark.model
def test_hardmax_train_and_explain_print_the_shared_json_keys(tmp_path):
    """``hardmax train`` had no ``figures`` key, ``hardmax explain`` no ``timing``."""
    data = tmp_path / "d.csv"
    rows = [
        ("the cat sat on the mat", "pets"),
        ("a dog ran in the park", "pets"),
        ("my cat likes fish", "pets"),
        ("the dog barks at night", "pets"),
        ("stocks fell sharply today", "money"),
        ("the bank raised its rates", "money"),
        ("bonds and stocks rallied", "money"),
        ("the market closed lower", "money"),
    ] * 3
    data.write_text("text,label\n" + "".join(f"{t},{lab}\n" for t, lab in rows), encoding="utf-8")
    clf = tmp_path / "clf"
    r = run("hardmax", "train", str(data), "--epochs", "2", "--out", str(clf), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    _check_frame(doc, str(clf))
    assert doc["figures"] == [] and "train_s" in doc["timing"]
    e = run("hardmax", "explain", str(clf), "the cat sat", "--json")
    assert e.returncode == 0, e.stderr
    ex = json.loads(e.stdout)
    _check_frame(ex)
    assert "explain_s" in ex["timing"] and ex["prediction"] in ("pets", "money")
