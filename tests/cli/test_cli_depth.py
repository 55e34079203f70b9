"""attntopo depth as a subprocess (moved from tests/integration/test_depth.py): --json, --out
and a figure read back as the saved result; bad input is one error line and exit 2."""

from __future__ import annotations

import json

import pytest

from _cli import assert_one_line_error, run
from attntopo.io import load_payload
from attntopo.theory import Depth

TEXTS = [
    "The cat sat on the mat because it was tired, and the dog slept by the door.",
    "Attention is all you need, said the paper, and everybody believed it for a while.",
]


@pytest.mark.model
@pytest.mark.slow
def test_cli_json_and_saved_result(tmp_path):
    f = tmp_path / "texts.txt"
    f.write_text("\n".join(TEXTS[:2]) + "\n\n", encoding="utf-8")
    r = run(
        "depth",
        "-f",
        str(f),
        "--k",
        "4",
        "--json",
        "--out",
        str(tmp_path / "d"),
        "--plot-format",
        "svg",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    meta, arrays = load_payload(tmp_path / "d")
    saved = Depth._from_payload(meta, arrays)
    assert (
        doc["kind"] == "depth" and doc["n_texts"] == 2 and doc["k"] == 4 and doc["source"] == str(f)
    )
    assert saved.texts == TEXTS[:2] and doc["figures"] == ["figures/depth.svg"]
    assert [row["res_hidden"] for row in doc["summary"]] == saved.summary()["res_hidden"].tolist()
    assert len(doc["heads"]) == 72 and (tmp_path / "d" / "figures" / "depth.svg").is_file()


@pytest.mark.parametrize(
    "args,fragments",
    [
        ([], ["no text given"]),
        (["a text", "--k", "0"], ["--k must be an int >= 1"]),
        (["a text", "--plot-format", "html"], ["static"]),
        (["a text", "-f", "x.txt"], ["not both"]),
        (["-f", "/nonexistent/texts.txt"], ["does not exist"]),
        (["a text", "  "], ["text 2 is empty"]),
    ],
)
def test_cli_bad_input(args, fragments):
    assert_one_line_error(run("depth", *args), *fragments)
