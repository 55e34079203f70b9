"""The command line, run as a subprocess: exit codes, stdout, one-line errors, saved results."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import attntopo as at
from _cli import ROOT, assert_one_line_error, run  # noqa: E402

QUANTUM = ROOT / "examples" / "quantum.txt"


# ----------------------------------------------------------------------- basics
def test_version():
    r = run("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"attntopo {at.__version__}"


@pytest.mark.parametrize("args", [["--help"], ["analyze", "--help"]])
def test_help_shows_examples(args):
    r = run(*args)
    assert r.returncode == 0, r.stderr
    assert "Examples" in r.stdout
    assert "attntopo analyze" in r.stdout
    if "analyze" in args:
        for opt in (
            "--file",
            "--model",
            "--layer",
            "--head",
            "--metric",
            "--maxdim",
            "--threshold",
            "--engine",
            "--drop-special",
            "--paper",
            "--truncate",
            "--out",
            "--plots",
            "--json",
            "--top",
            "--debug",
        ):
            assert opt in r.stdout, opt


def test_models_json_lists_packaged_aliases():
    r = run("models", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["default"] == "minilm" and doc["out"] is None and doc["figures"] == []
    rows = {row["alias"]: row for row in doc["models"]}
    assert set(at.packaged_aliases()) <= {a for a, row in rows.items() if row["installed"]}
    m = rows["minilm"]
    assert (m["n_layers"], m["n_heads"], m["causal"]) == (6, 12, False)
    assert Path(m["source"], "config.json").is_file()
    if rows["smollm2"]["installed"]:
        s = rows["smollm2"]
        assert (s["n_layers"], s["n_heads"], s["causal"]) == (30, 9, True)


def test_models_table():
    r = run("models")
    assert r.returncode == 0, r.stderr
    assert "minilm" in r.stdout and "6 × 12" in r.stdout and "bidirectional" in r.stdout


# --------------------------------------------------------------------- analyze
@pytest.mark.model
def test_analyze_demo_prints_summary():
    """What `make demo` runs: all 72 heads, a readable (limited) table."""
    r = run("analyze", "--file", str(QUANTUM), "--model", "minilm")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "model minilm" in out and "29 tokens" in out and "jensen_shannon" in out
    assert "top 20 of 72" in out and "52 more heads hidden" in out
    table_rows = [
        ln for ln in out.splitlines() if ln.split()[:2] and all(t.isdigit() for t in ln.split()[:2])
    ]
    assert len(table_rows) == 20
    assert r.stderr == ""


@pytest.mark.model
def test_analyze_short_text_orders_by_h0():
    """'The cat sat.' on MiniLM: 69 of 72 heads have no H1 bar (max_persistence_h1 = 0), so the
    table's default order is the longest H0 bar, and the title says so."""
    r = run("analyze", "The cat sat.", "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "top 3 of 72 by max_persistence_h0" in " ".join(r.stdout.split())


@pytest.mark.model
def test_analyze_json_is_the_only_stdout():
    r = run(
        "analyze",
        "Quantum information theory allows us to study attention",
        "--layer",
        "1",
        "--head",
        "2",
        "--head",
        "3",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["settings"]["metric"] == "jensen_shannon"
    assert doc["settings"]["threshold"] == "inf"  # JSON has no inf: written as a string
    assert doc["settings"]["layers"] == [1] and doc["settings"]["heads"] == [2, 3]
    assert doc["model"]["name"] == "minilm" and doc["model"]["n_layers"] == 6
    assert doc["tokens"][0] == "[CLS]" and len(doc["tokens"]) == doc["n_tokens"]
    assert [(s["layer"], s["head"]) for s in doc["summary"]] == [(1, 2), (1, 3)]
    assert doc["summary"][0]["n_bars_h0"] == doc["n_tokens"]
    assert doc["out"] is None


@pytest.mark.model
def test_out_with_plots_round_trips(tmp_path):
    out = tmp_path / "res"
    r = run(
        "analyze",
        "--file",
        str(QUANTUM),
        "--layer",
        "1",
        "--head",
        "2",
        "--plots",
        "--plot-format",
        "png",
        "--plot-format",
        "html",
        "--out",
        str(out),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert Path(doc["out"]) == out
    res = at.load_result(out)
    assert isinstance(res, at.Analysis)
    assert res.layers == (1,) and res.heads == (2,)
    assert res.attention.tokens == doc["tokens"]
    row = res.summary_rows()[0]
    for k, v in doc["summary"][0].items():
        assert np.isclose(float(v), float(row[k])), k
    figs = sorted(p.relative_to(out).as_posix() for p in (out / "figures").iterdir())
    assert figs == sorted(doc["figures"])
    assert "figures/L01_H02_diagram.png" in figs and "figures/L01_H02_graph.png" in figs
    assert "figures/report.html" in figs
    import matplotlib.image

    for f in figs:
        if f.endswith(".png"):
            assert matplotlib.image.imread(out / f).shape[0] > 100
    html = (out / "figures" / "report.html").read_text(encoding="utf-8")
    assert "<script src=" not in html and "Plotly.newPlot" in html
    # nothing else beside the result in the parent: the folder appeared in one rename
    assert [p.name for p in tmp_path.iterdir()] == ["res"]


# ----------------------------------------------------------------------- errors
ERRORS = {
    "empty text": (["analyze", "   "], ["empty"]),
    "missing file": (["analyze", "--file", "no/such/file.txt"], ["--file", "does not exist"]),
    "text and file": (["analyze", "hello", "--file", str(QUANTUM)], ["not both"]),
    "no text": (["analyze"], ["no text given"]),
    "unknown model": (
        ["analyze", "hello", "--model", "./no/such/model"],
        ["no such model", "minilm"],
    ),
    "bad metric": (["analyze", "hello", "--metric", "cosine"], ["--metric", "jensen_shannon"]),
    "maxdim 3": (["analyze", "hello", "--maxdim", "3"], ["--maxdim", "0, 1 or 2"]),
    "head out of range": (
        ["analyze", "hello", "--head", "12"],
        ["head 12 is out of range", "0..11"],
    ),
    "unknown option": (["analyze", "hello", "--bogus"], ["--bogus"]),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_is_one_line_exit_2(case):
    args, fragments = ERRORS[case]
    assert_one_line_error(run(*args), *fragments)


def test_layer_out_of_range_leaves_no_output(tmp_path):
    out = tmp_path / "new"
    r = run("analyze", "hello world", "--layer", "7", "--out", str(out), "--plots")
    assert_one_line_error(r, "layer 7 is out of range", "0..5")
    assert list(tmp_path.iterdir()) == []  # no partial folder, no temporary left behind


def test_out_refuses_non_result_folder_and_files(tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    assert_one_line_error(
        run("analyze", "hello", "--out", str(busy)), "not empty", "no attntopo result"
    )
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    assert_one_line_error(run("analyze", "hello", "--out", str(blocker / "sub")), "not a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "file.txt"]


def test_out_names_the_file_system_refuses_are_one_line_and_leave_nothing(tmp_path):
    """A name longer than a file system allows: refused before any work when it is --out
    itself; when it is below a new folder, the saving fails and removes the folder it made."""
    long = "x" * 300
    assert_one_line_error(
        run("analyze", "hello", "--out", str(tmp_path / long)), "cannot use --out", long[:40]
    )
    r = run(
        "analyze", "hello", "--layer", "0", "--head", "0", "--out", str(tmp_path / "new" / long)
    )
    assert_one_line_error(r, "cannot write --out", long[:40])
    assert list(tmp_path.iterdir()) == []


def test_debug_shows_the_traceback():
    r = run("analyze", "hello", "--layer", "7", "--debug")
    assert r.returncode == 2
    assert "Traceback" in r.stderr
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith("error: --layer 7 is out of range: minilm has 6 layers")
    )


@pytest.mark.slow
@pytest.mark.smollm2
def test_smollm2_one_head():
    if "smollm2" not in at.packaged_aliases():
        pytest.skip("the packaged SmolLM2 is not installed")
    r = run(
        "analyze",
        "--file",
        str(QUANTUM),
        "--model",
        "smollm2",
        "--layer",
        "0",
        "--head",
        "0",
        "--json",
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["model"]["causal"] is True and doc["model"]["n_layers"] == 30
    assert len(doc["summary"]) == 1 and doc["summary"][0]["n_bars_h0"] == doc["n_tokens"]
