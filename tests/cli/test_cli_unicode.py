"""Bytes that are not UTF-8 in a text, as a subprocess: Python reads them from the command line
and stdin as lone surrogates, which the tokenizer refused with a TypeError that reached the user
as "unexpected TypeError", exit 1, after the model had loaded.  Now one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from _cli import ROOT, assert_one_line_error, run

BAD = "a b\udcffc"  # the argument b"a b\xffc": subprocess encodes it with surrogateescape


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["analyze", BAD], ["the text is not valid Unicode", "character 3", "byte 0xff"]),
        (["words", BAD], ["the text is not valid Unicode", "byte 0xff, not UTF-8"]),
        (["heads", "a b", BAD], ["the text is not valid Unicode", "byte 0xff"]),
        # its texts are checked by the library, after the model loads
        (["compare", BAD, "c d"], ["text is not valid Unicode", "character 3", "byte 0xff"]),
    ],
    ids=lambda a: a[0] if isinstance(a[0], str) and " " not in a[0] else None,
)
def test_a_text_argument_that_is_not_utf8_is_one_line(args, fragments):
    assert_one_line_error(run(*args, "-m", "minilm"), *fragments)


@pytest.mark.parametrize("command", ["analyze", "timeline"])
def test_stdin_that_is_not_utf8_is_one_line(command):
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("ATTNTOPO_DEBUG", None)
    r = subprocess.run(
        [sys.executable, "-m", "attntopo", command, "-f", "-", "-m", "minilm"],
        input=b"the cat \xff\xfe sat",
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    done = subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode())
    assert_one_line_error(done, "--file '-' (stdin) is not UTF-8 text")
