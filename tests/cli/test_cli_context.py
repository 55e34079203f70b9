"""attntopo context as a subprocess: bad input is one error line and exit 2, before a model loads;
a run with --json, --out and --plots reads back with load_result in this process."""

from __future__ import annotations

import json

import pytest

from _cli import assert_one_line_error, run


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["--fortunes"], ["--fortunes", "--word"]),
        (["--word", "zebra"], ["no built-in contexts for 'zebra'", "bank, light, play"]),
        (["--word", "two words"], ["single word"]),
        (["a b", "--word", "  "], ["--word is empty or only whitespace"]),
        ([], ["no text given"]),
        (["a b", "--plot-format", "html"], ["static"]),
        (["a b", "c d", "--contexts", "2"], ["--contexts"]),
    ],
)
def test_bad_input_is_one_line(args, fragments):
    assert_one_line_error(run("context", *args), *fragments)


@pytest.mark.model
def test_cross_needs_three_texts_and_json(tmp_path):
    r = run(
        "context",
        "The cat sat on the mat.",
        "A dog slept by the door.",
        "Rain fell on the town.",
        "--permutations",
        "1",
        "--json",
        "--out",
        str(tmp_path / "c"),
        "--plots",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (
        doc["kind"] == "context" and doc["n_cross_pairs"] == 3 and doc["out"] == str(tmp_path / "c")
    )
    assert (
        doc["figures"] == ["figures/context.png"]
        and (tmp_path / "c" / "figures" / "context.png").is_file()
    )
    assert len(doc["summary"]) == 7 and doc["timing"]["context_s"] > 0
    import attntopo as at

    back = at.load_result(tmp_path / "c")
    assert type(back).__name__ == "Context" and back.texts == doc["texts"]
