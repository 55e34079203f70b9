"""A blank path option as a subprocess (``--out "$OUT"`` with OUT unset): typer made it
``Path("")``, the current folder, and ``analyze`` saved its result there, renaming its staging
folder over the (empty) current folder.  Every ``--out``/``--output`` refuses it in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from _cli import assert_one_line_error, run


@pytest.mark.parametrize(
    "command",
    [
        ["analyze", "a b", "-m", "minilm", "--layer", "0", "--head", "0", "--out"],
        ["timeline", "a b", "-m", "minilm", "--out"],
        ["heads", "a b", "-m", "minilm", "--out"],
        ["hardmax", "simulate", "--n", "3", "--out"],
        ["report", "a b", "-m", "minilm", "--out"],
        ["corpus", "texts.txt", "-m", "minilm", "--out"],
        ["query", "store", "SELECT 1", "--csv", "--output"],
    ],
    ids=lambda c: " ".join(c[:2]) if c[0] == "hardmax" else c[0],
)
@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_out_is_one_line_and_writes_nothing(tmp_path, command, blank):
    r = run(*command, blank, cwd=tmp_path)
    flag = command[-1]
    assert_one_line_error(r, f"Invalid value for '{flag}'", f"{blank!r} is empty: give a path")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", [".", "./", "../{name}"])
def test_the_current_folder_as_out_is_one_line_and_left_as_it_was(tmp_path, out):
    """``--out .`` in an empty folder: a new result replaces an empty folder in one rename,
    which would have swapped the shell's working folder for the result's; it is refused before
    any work, the folder left as it was (its inode too)."""
    here = tmp_path / "here"
    here.mkdir()
    inode = here.stat().st_ino
    out = out.format(name=here.name)
    r = run("analyze", "a b", "-m", "minilm", "--layer", "0", "--head", "0", "--out", out, cwd=here)
    shown = str(Path(out))  # as the option's Path type spells it ('./' is '.')
    assert_one_line_error(
        r, f"--out {shown!r} is the current folder, which saving would replace: give a new folder"
    )
    assert here.stat().st_ino == inode and list(here.iterdir()) == []
