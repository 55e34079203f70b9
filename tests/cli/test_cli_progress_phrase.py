"""`attntopo phrase` draws the progress bar of phrase_topology on a terminal, down to its last
stage, with its counts reaching the total (issue 15 item 2)."""

from __future__ import annotations

import pytest

from test_cli_progress import _counts, run_on_terminal

pytestmark = [pytest.mark.slow, pytest.mark.model]


def test_phrase_on_a_terminal_shows_a_bar_with_counts():
    code, out, err = run_on_terminal(
        "phrase",
        "information theory",
        "-c",
        "Quantum information theory studies entanglement",
        "-c",
        "Classical information theory studies entropy",
        "--layer",
        "0",
    )
    assert code == 0, err
    assert "diagram distances" in err, err  # the last stage
    # 2 forward passes of 6 layers, 12 heads' distances and diagrams per context, 12 heads'
    # diagram distances
    total = 2 * 6 + 2 * 2 * 12 + 12
    assert (total, total) in _counts(err), sorted(_counts(err))
    assert out.strip() and "━" not in out  # results on stdout, the bar on stderr only
