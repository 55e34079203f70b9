"""attntopo approx as a subprocess (moved from tests/integration/test_approx.py, which ran the
command in-process through a runner of its own): --json, --out and --plots read back as the saved
result; bad input is one error line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attntopo as at
from _cli import assert_one_line_error, run
from attntopo.theory import Approximability

TEXT = "The cat sat on the mat because it was tired, and the dog slept by the door."


@pytest.mark.model
def test_cli_json_out_and_figure(tmp_path):
    r = run(
        "approx",
        TEXT,
        "--json",
        "--budget",
        "4,8",
        "--layer",
        "0,5",
        "--out",
        str(tmp_path / "o"),
        "--plots",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (
        doc["kind"] == "approximability"
        and doc["budgets"] == [4, 8]
        and doc["figures"] == ["figures/approximability.png"]
    )
    assert len(doc["summary"]) == 2 * 12 * 2 and {"winner", "top_k", "low_rank_js"} <= set(
        doc["summary"][0]
    )
    assert (tmp_path / "o" / "figures" / "approximability.png").stat().st_size > 10_000
    saved = at.load_result(tmp_path / "o")
    assert isinstance(saved, Approximability) and list(saved.budgets) == [4, 8]
    # the JSON document and the saved folder are the same computation: the same numbers
    table = saved.summary()
    for col in ("top_k", "low_rank_js", "winner"):
        got = [row[col] for row in doc["summary"]]
        want = np.asarray(table[col]).tolist()
        assert got == want, col


@pytest.mark.model
@pytest.mark.parametrize(
    "args, fragment",
    [
        (("--budget", "500"), "larger than the text's"),
        (("--family", "band"), "families must name"),
        (("--budget", "4", "--show", "8"), "--show 8 is not one of the budgets"),
        (("--scale", "2"), "--scale must be a JS distance"),
        (("--seed", "-1"), "'--seed': Input should be greater than or equal to 0"),
    ],
)
def test_cli_bad_input_is_one_error_line(args, fragment):
    assert_one_line_error(run("approx", TEXT, *args), fragment)
