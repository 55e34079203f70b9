"""``attntopo timeline`` as a subprocess: table, JSON,
saved result with figures, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attntopo as at

# every test starts a Python that imports torch: seconds each
pytestmark = pytest.mark.slow

from _cli import assert_one_line_error, run  # noqa: E402
from _tolerances import for_model  # noqa: E402

TEXT = "The cat sat on the mat because it was tired."


def test_help():
    r = run("timeline", "--help")
    assert r.returncode == 0, r.stderr
    assert "Examples" in r.stdout and "attntopo timeline" in r.stdout
    for opt in ("--model", "--layer", "--head", "--t0", "--out", "--json", "--plots"):
        assert opt in r.stdout, opt


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["timeline"], "no text given"),
        (["timeline", "   "], "at least one word"),
        (["timeline", TEXT, "--layer", "1,2"], "one head: give one --layer"),
        (["timeline", TEXT, "--head", "x"], "--head expects integers"),
        (["timeline", TEXT, "--maxdim", "3"], "--maxdim"),
        (["timeline", TEXT, "--plots"], "--plots needs --out"),
        (
            ["timeline", TEXT, "--plot-format", "svg"],
            "--plot-format needs --out",
        ),  # it implies --plots
    ],
)
def test_errors_before_any_work(args, fragment):
    assert_one_line_error(run(*args), fragment)


def test_errors_after_loading(tmp_path):
    assert_one_line_error(
        run("timeline", TEXT, "--t0", "1", "--out", str(tmp_path / "x")), "t0 must be an int in 3"
    )
    assert not (tmp_path / "x").exists()
    assert_one_line_error(run("timeline", TEXT, "--head", "12"), "head 12 is out of range")


@pytest.mark.model
def test_table_on_minilm():
    r = run("timeline", TEXT, "--layer", "2", "--head", "3", "--top", "4")
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())  # rich wraps long lines
    assert "layer 2 head 3" in out and "11 slices, t = 3…13" in out
    assert "prefix runs" in out and "Tokens whose arrival changed the topology most" in out
    assert "H1:" in out and "only the slice view applies" in out


@pytest.mark.forward_compare
def test_json_matches_library(minilm):
    r = run("timeline", TEXT, "--layer", "1", "--head", "4", "--json", "--top", "0")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    tl = at.timeline(TEXT, minilm, layers=1, heads=4)
    assert doc["construction"] == "prefix_runs" and doc["two_parameter"] is False
    assert (
        doc["settings"]["layer"] == 1
        and doc["settings"]["head"] == 4
        and doc["settings"]["t0"] == 3
    )
    assert [s["t"] for s in doc["summary"]] == tl.times.tolist()
    np.testing.assert_allclose(  # the CLI's forward passes are another computation
        [s["bottleneck_h1"] for s in doc["summary"][1:]],
        tl.bottleneck[:, 1],
        atol=for_model(minilm).bottleneck_atol,
        rtol=0,
    )
    assert [c["t"] for c in doc["top_changes"]] == [
        c.t for c in tl.top_changes(k=len(tl.slices) - 1)
    ]
    assert doc["vines"]["h1"]["count"] == len(tl.vines(dim=1))
    assert doc["tokens"] == tl.tokens


@pytest.mark.xdist_group("smollm2")
def test_smollm2_out_plots_and_load(tmp_path):
    out = tmp_path / "tl"
    r = run(
        "timeline",
        TEXT,
        "-m",
        "smollm2",
        "--layer",
        "-1",
        "--head",
        "2",
        "--plots",
        "--plot-format",
        "png",
        "--plot-format",
        "html",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    out_text = " ".join(r.stdout.split())
    assert "one forward pass" in out_text and "bifiltration" in out_text
    tl = at.load_result(out)
    assert isinstance(tl, at.Timeline) and (tl.layer, tl.head) == (29, 2) and tl.causal
    figs = sorted(p.name for p in (out / "figures").iterdir())
    for name in (
        "timeline_overview.png",
        "timeline_diagrams.png",
        "coherence_bottleneck.png",
        "vineyard_h1.png",
        "betti_h1.png",
        "timeline.html",
    ):
        assert name in figs, figs
    html = (out / "figures" / "timeline.html").read_text(encoding="utf-8")
    assert '<script src="http' not in html
