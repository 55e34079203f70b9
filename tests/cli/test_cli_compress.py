"""attntopo compress as a subprocess (moved from tests/integration/test_compress.py): --json
matches the saved result; bad input is one error line and exit 2."""

from __future__ import annotations

import json

import pytest

import attntopo as at
from _cli import assert_one_line_error, run

TEXT = "The cat sat on the mat because it was tired, and the dog slept by the door."


@pytest.mark.model
def test_cli_json_matches_the_library(tmp_path):
    r = run(
        "compress",
        TEXT,
        "--layer",
        "1",
        "--head",
        "0,5",
        "--scale",
        "0.3",
        "--json",
        "--out",
        str(tmp_path / "c"),
        "--plots",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    lib = at.load_result(tmp_path / "c")
    assert [h["clusters"] for h in doc["heads"]] == lib.clusters.tolist()
    assert [(h["layer"], h["head"]) for h in doc["heads"]] == [(1, 0), (1, 5)]
    assert doc["figures"] == ["figures/heads.png"] and 0 < doc["effect"]["cosine"] <= 1


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["a text", "--scale", "abc"], ["--scale must be a JS distance"]),
        (
            ["a text", "--method", "foo"],
            ["unknown --method 'foo'; allowed: 'persistence', 'random', 'kmeans', 'tome'"],
        ),
        (
            ["a text", "--representative", "x"],
            ["unknown --representative 'x'; allowed: 'barycenter', 'medoid'"],
        ),
        (["a text", "--plot-format", "html"], ["static"]),
        (["a text", "--seed", "-1"], ["--seed", "greater than or equal to 0"]),
        ([], ["no text given"]),
    ],
)
def test_cli_bad_input(args, fragments):
    assert_one_line_error(run("compress", *args), *fragments)
