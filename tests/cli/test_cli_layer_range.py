"""``--layer``/``--head`` out of range: one line and exit 2 before the model's weights load
(issue 33, item 8).  The model is a folder with MiniLM's config.json alone: a selection in
range reaches the load and fails there (no weights), one out of range is refused first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import attntopo.cli  # noqa: F401 - registers every command
import attntopo.cli._corpus  # noqa: F401 - registers `corpus`
from attntopo.cli._common import main
from attntopo.models import resolve_spec

RANGE = "valid are 0..5 (or -6..-1)"

COMMANDS = {
    "analyze": ["analyze", "A cat sat."],
    "compare": ["compare", "A cat sat.", "A dog lay."],
    "timeline": ["timeline", "A cat sat."],
    "phrase": ["phrase", "cat", "--context", "A cat sat."],
    "compress": ["compress", "A cat sat."],
    "approx": ["approx", "A cat sat."],
    "report": ["report", "A cat sat.", "--out", "{tmp}/r.html"],
    "corpus": ["corpus", "{tmp}/t.txt", "--out", "{tmp}/store"],
}


@pytest.fixture(scope="module")
def config_only(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("config_only")
    shutil.copy(Path(resolve_spec("minilm").path) / "config.json", d / "config.json")
    return d


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_out_of_range_is_one_line_before_the_model_loads(name, config_only, tmp_path, capsys):
    (tmp_path / "t.txt").write_text("A cat sat.\n")
    args = [a.format(tmp=tmp_path) for a in COMMANDS[name]] + ["--model", str(config_only)]
    # timeline follows one head; report pairs --layer with --head
    code = main([*args, "--layer", "6", "--head", "0"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert lines == [f"error: --layer 6 is out of range: {config_only} has 6 layers, {RANGE}"]
    code = main([*args, "--layer", "0", "--head", "-13"])
    out, err = capsys.readouterr()
    assert code == 2 and err.strip().splitlines() == [
        f"error: --head -13 is out of range: {config_only} has 12 heads, valid are 0..11 "
        "(or -12..-1)"
    ], err
    assert not (tmp_path / "store").exists() and not (tmp_path / "r.html").exists()
    code = main([*args, "--layer", "0", "--head", "0"])  # in range: the load fails, later
    out, err = capsys.readouterr()
    assert code != 0 and "out of range" not in err and "safetensors" in err, err
