"""``attntopo report``: the page it writes on the real model, and its one-line errors.

Run in this process through ``attntopo.cli.main`` (not a subprocess like the other CLI tests):
the model stays loaded between the two reports, and the bad-input cases never load it.  The
library side (:mod:`attntopo.report`): tests/unit/test_report.py.
"""

from __future__ import annotations

import pytest

from _pages import check_self_contained
from attntopo.cli import main

pytest.importorskip("plotly")

TEXT_A = "Quantum information theory allows us to study attention using entanglement"
TEXT_B = "Classical information theory studies entropy and communication"


@pytest.mark.model
@pytest.mark.slow
def test_cli_report_one_text(tmp_path):
    out = tmp_path / "sub" / "report.html"
    rc = main(
        [
            "report",
            TEXT_A,
            "-o",
            str(out),
            "--layer",
            "1",
            "--head",
            "2",
            "--layer",
            "4",
            "--head",
            "11",
        ]
    )
    assert rc == 0
    html = out.read_text(encoding="utf-8")
    p = check_self_contained(html)
    assert {"summary", "heads", "L1H2", "L4H11"} <= p.ids
    assert "Quantum information theory" in html
    assert not list(out.parent.glob(".report.html.*")), "no temporary file left behind"


@pytest.mark.model
@pytest.mark.slow
def test_cli_report_with_comparison(tmp_path, capsys):
    out = tmp_path / "cmp.html"
    rc = main(["report", TEXT_A, "--compare", TEXT_B, "-o", str(out), "--plot-heads", "1"])
    assert rc == 0
    assert capsys.readouterr().out == f"{out}\n"  # the path written, only
    html = out.read_text(encoding="utf-8")
    p = check_self_contained(html)
    assert {"summary", "heads", "comparison", "comparison-heads"} <= p.ids
    assert any(i.startswith("cmp-L") for i in p.ids)
    assert "Classical information theory" in html and "shared tokens (" in html


@pytest.mark.parametrize(
    "args, words",
    [
        (["report", "hello"], ["--out"]),
        (["report", "hello", "-o", "x.txt"], [".html"]),
        (["report", "   ", "-o", "x.html"], ["empty"]),
        (["report", "hello", "--compare", " ", "-o", "x.html"], ["--compare", "empty"]),
        (["report", "hello", "-o", "x.html", "--layer", "1"], ["--layer and --head"]),
        (["report", "hello", "-o", "x.html", "--layer", "1,2", "--head", "1,2,3"], ["pair up"]),
        (["report", "hello", "-o", "x.html", "--maxdim", "5"], ["--maxdim"]),
    ],
)
def test_cli_report_bad_input(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    for w in words:
        assert w in err
    assert not list(tmp_path.iterdir()), "nothing is written on bad input"


def test_cli_report_out_is_a_folder(tmp_path, capsys):
    assert main(["report", "hello", "-o", str(tmp_path)]) == 2
    assert "folder" in capsys.readouterr().err
