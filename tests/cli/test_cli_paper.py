"""The founding paper's recipes on the command line: --paper notebook|listing, --paper-compat."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attntopo as at
from _cli import assert_one_line_error, run  # noqa: E402

TEXT = "Quantum information theory allows us to study attention"


@pytest.mark.model
@pytest.mark.parametrize("mode", ["notebook", "listing"])
def test_paper_mode_reaches_the_analysis(mode, tmp_path):
    r = run(
        "analyze",
        TEXT,
        "--layer",
        "0",
        "--head",
        "1",
        "--paper",
        mode,
        "--json",
        "--out",
        str(tmp_path / "r"),
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["settings"]["paper_compat"] == mode
    saved = at.load_result(tmp_path / "r")
    direct = at.token_distances(saved.attention, paper_compat=mode)
    assert saved.paper_compat == mode and np.array_equal(saved.distances, direct)


def test_paper_compat_flag_is_gone():
    """``--paper-compat`` was renamed ``--paper notebook`` before the first release."""
    r = run("analyze", TEXT, "--paper-compat")
    assert r.returncode == 2 and "No such option: --paper-compat" in r.stderr, r.stderr


def test_unknown_paper_mode_is_a_usage_error():
    r = run("analyze", TEXT, "--paper", "fourth-root")
    assert r.returncode == 2
    assert_one_line_error(r, "'notebook', 'listing'")
