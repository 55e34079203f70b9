"""``--seed`` below 0, as a subprocess: numpy's generators refuse it with a bare ValueError, which
reached the user as "unexpected ValueError", exit 1 (compress after loading the model, hardmax
simulate and train at once, heads with a bootstrap after both models).  Every command with a
``--seed`` refuses it in one line, exit 2, before any work."""

from __future__ import annotations

import pytest

from _cli import assert_one_line_error, run

SEED_BELOW_0 = "Invalid value for '--seed': Input should be greater than or equal to 0"


@pytest.mark.parametrize(
    "command",
    [
        # compress and approx: in test_cli_compress.py and test_cli_approx.py
        ["context", "a b", "-m", "minilm"],
        ["heads", "a b", "c d", "-m", "minilm", "--compare-model", "minilm", "--n-boot", "2"],
        ["hardmax", "simulate", "--n", "5"],
        ["hardmax", "train", "--fortunes", "food,law"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_seed_below_0_is_one_line_exit_2(command):
    assert_one_line_error(run(*command, "--seed", "-1"), SEED_BELOW_0)
