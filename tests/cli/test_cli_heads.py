"""``attntopo heads`` as a subprocess: output, JSON, saved results, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attntopo as at
from _cli import ROOT, assert_one_line_error
from _cli import run as _run
from attntopo import HeadSpace, ModelComparison


def run(*args: str, timeout: float = 600, stdin: str | None = None):
    """``attntopo heads ARGS``."""
    return _run("heads", *args, timeout=timeout, stdin=stdin)


QUANTUM = ROOT / "examples" / "quantum.txt"
T1 = "The cat sat on the mat, and the dog slept by the door."
T2 = "In 1905, Einstein published four papers that changed physics."

# every case starts a Python process that imports torch (seconds each)
pytestmark = pytest.mark.slow


def test_help_lists_the_options():
    r = run("--help")
    assert r.returncode == 0, r.stderr
    assert "Examples" in r.stdout and "attntopo heads" in r.stdout
    for opt in (
        "--file",
        "--model",
        "--compare-model",
        "--out",
        "--json",
        "--plots",
        "--n-boot",
        "--seed",
        "--scale",
        "--maxdim",
        "--sum",
    ):
        assert opt in r.stdout, opt


ERRORS = {
    "no text": ([], "no text given"),
    "empty text": (["   "], "empty"),
    "missing file": (["--file", "/nonexistent/x.txt"], "does not exist"),
    "bad maxdim": ([T1, "--maxdim", "4"], "--maxdim"),
    "negative scale": ([T1, "--scale", "-1"], "--scale must be"),
    "n-boot without compare": ([T1, "--n-boot", "5"], "--n-boot needs --compare-model"),
    "bootstrap on one text": (
        [T1, "--compare-model", "minilm", "--n-boot", "5"],
        "at least 2 texts",
    ),
    "sum with compare": ([T1, T2, "--compare-model", "minilm", "--sum"], "--sum"),
    "plots without out": ([T1, "--plots"], "--plots needs --out"),
    "unknown model": ([T1, "--model", "no-such-model-xyz"], ""),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_is_one_line_exit_2(case):
    args, fragment = ERRORS[case]
    assert_one_line_error(run(*args), fragment)


@pytest.mark.model
def test_table_output_two_texts():
    r = run(T1, T2)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "minilm: 6 layers × 12 heads = 72 points" in out
    assert "head types:" in out and "redundant" in out and "head-space diagram: H0 72 bars" in out
    assert "Traceback" not in r.stderr


@pytest.mark.model
def test_json_out_and_plots_round_trip(tmp_path):
    out = tmp_path / "hs"
    r = run(
        T1,
        "--file",
        str(QUANTUM),
        "--json",
        "--out",
        str(out),
        "--plots",
        "--plot-format",
        "png",
        "--plot-format",
        "html",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # JSON is the only thing on stdout
    assert doc["sources"] == ["argument 1", str(QUANTUM)]
    m = doc["models"][0]
    assert m["model"] == "minilm" and m["summary"]["n_points"] == 72
    assert len(m["type_labels"]) == 6 and len(m["types"]) == 72
    assert doc["comparison"] is None
    hs = at.load_result(out)
    assert isinstance(hs, HeadSpace) and hs.n_texts == 2
    np.testing.assert_allclose(m["summary"]["distance_median"], hs.overview()["distance_median"])
    figs = set(doc["figures"])
    assert {
        "figures/head_distances.png",
        "figures/head_mds_type.png",
        "figures/head_types.png",
        "figures/head_mds.html",
    } <= figs
    assert all((out / f).is_file() for f in figs)
    html = (out / "figures" / "head_mds.html").read_text(encoding="utf-8")
    assert "Plotly.newPlot" in html and len(html) > 1_000_000


@pytest.mark.model
def test_stdin_and_sum(tmp_path):
    r = run("--file", "-", "--sum", "--json", stdin=T1)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["settings"]["normalize"] is False
    assert doc["models"][0]["summary"]["distance_max"] > 1  # a sum over tokens


@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_compare_model_smollm2(tmp_path):
    out = tmp_path / "cmp"
    r = run(T1, T2, "--compare-model", "smollm2", "--n-boot", "8", "--json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [m["summary"]["n_points"] for m in doc["models"]] == [72, 270]
    cmp = doc["comparison"]
    assert cmp["n_boot"] == 8 and [d["dim"] for d in cmp["dims"]] == [0, 1]
    assert 0 < cmp["dims"][0]["bottleneck_p"] <= 1
    c = at.load_result(out)
    assert isinstance(c, ModelComparison)
    np.testing.assert_allclose([d["bottleneck"] for d in cmp["dims"]], c.bottleneck)
