"""verbose= on the scikit-learn estimators: a progress bar on a terminal's stderr from 1 on,
nothing at 0 (scikit-learn's default). Run as a user runs a script, in a subprocess whose
stderr rich treats as a terminal (FORCE_COLOR)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.model]

SCRIPT = """
import numpy as np
from attntopo.sklearn import AttentionFeatures, SelectHeads
from attntopo.features import column_name
X = AttentionFeatures(sets=("template",), layers=[0], verbose={v}).fit_transform(
    ["The first text.", "A second one, longer.", "Third."])
cols = [column_name(0, h, "js", "x") for h in range(3)]
Z = np.random.default_rng(0).normal(size=(12, 3))
SelectHeads(k=1, cv=2, feature_names=cols, verbose={v}).fit(Z, [0, 1] * 6)
print(X.shape)
"""


def _run(verbose: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "FORCE_COLOR": "1", "ATTNTOPO_PROGRESS": ""}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(v=verbose)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_verbose_shows_a_bar_and_zero_is_quiet():
    loud = _run(1)
    assert loud.returncode == 0, loud.stderr
    assert loud.stdout.strip() == "(3, 72)"
    assert "texts" in loud.stderr and "3/3" in loud.stderr  # features: 3 texts
    assert "scoring heads" in loud.stderr  # SelectHeads: 3 heads
    quiet = _run(0)
    assert quiet.returncode == 0 and quiet.stdout.strip() == "(3, 72)"
    assert quiet.stderr == ""


def test_verbose_must_be_a_count():
    from attntopo.errors import InvalidInputError
    from attntopo.sklearn import AttentionFeatures

    with pytest.raises(InvalidInputError, match="verbose must be an integer >= 0"):
        AttentionFeatures(verbose=-1).fit(["a text", "another"])
