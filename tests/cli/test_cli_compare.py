"""``attntopo compare`` and ``attntopo phrase`` as subprocesses: output, JSON, saved results,
figures, one-line errors with exit code 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attntopo as at
from _cli import assert_one_line_error, run  # noqa: E402
from _tolerances import for_model  # noqa: E402

A = "Quantum information theory allows us to study attention using entanglement"
B = "Classical information theory studies entropy and coding of messages"
C = "Shannon founded information theory in 1948."

# every test starts a Python process that imports torch (~2 s CPU each, more on a busy machine)
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("cmd", ["compare", "phrase"])
def test_help(cmd):
    r = run(cmd, "--help")
    assert r.returncode == 0, r.stderr
    assert "Examples" in r.stdout and f"attntopo {cmd}" in r.stdout
    opts = (
        (
            "--model",
            "--layer",
            "--head",
            "--scale",
            "--highlight",
            "--align",
            "--out",
            "--json",
            "--plots",
        )
        if cmd == "compare"
        else ("--context", "--model", "--layer", "--head", "--json", "--out")
    )
    for opt in opts:
        assert opt in r.stdout, opt


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["compare", A, " "], "at least one word"),
        (["compare", A, B, "--scale", "-1"], "--scale must be"),
        (["compare", A, B, "--maxdim", "3"], "--maxdim"),
        (["compare", A, B, "--align", "0-5"], "--align expects pairs"),
        (["compare", A, B, "--align-tokens"], "--align-tokens needs --align"),
        (["compare", A, B, "--plots"], "--plots needs --out"),
        (["compare", A, B, "--layer", "x"], "--layer expects integers"),
        (
            ["compare", A, B, "--include-special", "--drop-special"],
            "--include-special matches special tokens ([CLS] with [CLS], …) that --drop-special",
        ),
        (["phrase", "information theory"], "--context"),
        (["phrase", "  ", "-c", A], "PHRASE is empty or only whitespace"),
        (["compare", A, B, "--highlight", " "], "--highlight ' ' names no word"),
        (["phrase", "information theory", "-c", A, "--dim", "2"], "--dim"),
    ],
)
def test_errors_before_any_work(args, fragment):
    assert_one_line_error(run(*args), fragment)


@pytest.mark.model
def test_compare_table_and_highlight():
    r = run("compare", A, B, "--highlight", "information theory", "--top", "5")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "shared tokens (2): information, theory" in out
    assert "Heads from most similar to most different" in out and "top 5 of 72" in out
    assert "information – theory" in out


@pytest.mark.model
def test_compare_short_texts_rank_by_h0_and_mark_ties():
    """Two six-token texts: most heads' H1 distance is exactly 0 (68 of 72 on MiniLM), so the
    default ranking uses H0 and says so; with --dim 1 the JSON marks the tie at rank 1."""
    r = run("compare", "The cat sat.", "A cat sat.", "--top", "3")
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())  # the table wraps at the terminal's width
    assert "by bottleneck H0 (the highest dimension without a majority tie)" in out
    assert "#: rank, '1=' tied with other heads" in out
    r = run("compare", "The cat sat.", "A cat sat.", "--dim", "1", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ranking"]["dim"] == 1 and doc["ranking"]["default"] is False
    h1 = np.asarray([row["bottleneck_h1"] for row in doc["summary"]])
    n_zero = int((h1 == 0).sum())
    assert n_zero > 36  # the situation the default avoids
    assert [e[3:] for e in doc["most_similar_heads"]] == [[1, n_zero]] * 5
    assert {row["rank_by"] for row in doc["summary"]} == {
        "bottleneck_h0"
    }  # the table's default rank


@pytest.mark.forward_compare
def test_compare_json_single_head_matches_library(minilm):
    r = run(
        "compare",
        A,
        B,
        "--layer",
        "2",
        "--head",
        "0",
        "--scale",
        "0.2",
        "--include-special",
        "--highlight",
        "information",
        "--highlight",
        "theory",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    c = at.compare(A, B, minilm, layers=2, heads=0, scale=0.2, include_special=True)
    tol = for_model(minilm)  # the CLI's forward pass is another computation
    assert (
        [s["key"] for s in doc["shared_tokens"]]
        == c.keys
        == ["[CLS]", "[SEP]", "information", "theory"]
    )
    assert doc["layers"] == [2] and doc["heads"] == [0]
    p = doc["highlight_pairs"][0]
    ref = c.pair("information", "theory")
    for k in (
        "edge_birth_a",
        "edge_birth_b",
        "connection_a",
        "connection_b",
    ):  # distances, merge heights
        assert p[k] == pytest.approx(ref[k], rel=0, abs=tol.distance_atol)
    rep = doc["head_report"]
    assert rep["counts"]["shared_triangles"] == int(c.counts["shared_triangles"][0, 0])
    assert [tuple(s["tokens"]) for s in rep["shared_simplices"]] == [
        s["tokens"] for s in c.shared_simplices()
    ]
    np.testing.assert_allclose(
        [r["bottleneck_h0"] for r in doc["summary"]],
        c.grid(name="bottleneck", dim=0).ravel(),
        atol=tol.bottleneck_atol,
        rtol=0,
    )


@pytest.mark.model
def test_compare_out_plots_and_errors_after_loading(tmp_path):
    out = tmp_path / "cmp"
    r = run(
        "compare",
        A,
        B,
        "--layer",
        "1,2",
        "--head",
        "3",
        "--plots",
        "--plot-format",
        "png",
        "--plot-format",
        "html",
        "--plot-heads",
        "1",
        "--highlight",
        "information theory",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    c = at.load_result(out)
    assert isinstance(c, at.Comparison) and c.layers == (1, 2) and c.heads == (3,)
    figs = sorted(p.name for p in (out / "figures").iterdir())
    assert "report.html" in figs and any(f.endswith("_graphs.png") for f in figs)
    assert any(f.startswith("heads_bottleneck_h0") for f in figs)
    html = (out / "figures" / "report.html").read_text(encoding="utf-8")
    assert "<script src=" not in html
    # a word that is not shared: one line, exit 2, nothing saved
    r = run(
        "compare",
        A,
        B,
        "--layer",
        "0",
        "--head",
        "0",
        "--highlight",
        "entropy",
        "--out",
        str(tmp_path / "x"),
    )
    assert_one_line_error(r, "'entropy' is not a shared token", "information, theory")
    assert not (tmp_path / "x").exists()


@pytest.mark.model
def test_compare_alignment_translation():
    r = run(
        "compare",
        "Information theory studies entropy",
        "La théorie de l'information étudie l'entropie",
        "--align",
        "0:5,1:1",
        "--align",
        "2:6",
        "--layer",
        "0",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [s["key"] for s in doc["shared_tokens"]] == [
        "information",
        "theory/théorie",
        "studies/étudie",
    ]
    r = run("compare", "a b", "c d", "--align", "7:0", "--layer", "0")
    assert_one_line_error(r, "word 7 is out of range")


@pytest.mark.model
def test_phrase_command(tmp_path):
    r = run("phrase", "Information Theory", "-c", A, "-c", B, "-c", C, "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "→ tokens information theory" in r.stdout and "top 3 of 72" in r.stdout
    r = run(
        "phrase",
        "information theory",
        "-c",
        A,
        "-c",
        C,
        "--layer",
        "2",
        "--head",
        "4",
        "--json",
        "--out",
        str(tmp_path / "ph"),
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [c["tokens"] for c in doc["contexts"]] == [["information", "theory"]] * 2
    M = np.array(doc["matrices"]["bottleneck"])
    p = at.load_result(tmp_path / "ph")
    np.testing.assert_allclose(M, p.matrix(dim=0))
    r = run("phrase", "information theory", "-c", A, "-c", "nothing to see")
    assert_one_line_error(r, "context 1", "does not occur")
