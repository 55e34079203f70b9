"""attntopo analyze --min-persistence P: bars of round-off length no longer count as bars.
Checked against the library's diagrams without the option, filtered here with numpy."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attntopo as at
from _cli import assert_one_line_error, run

pytestmark = [pytest.mark.slow, pytest.mark.model]
TEXT = (
    "Quantum information theory allows us to study attention, and attention allows us to study it."
)
P = 0.01


def test_analyze_min_persistence_drops_short_bars_from_the_summary():
    r = run("analyze", TEXT, "--layer", "0", "--json", "--no-diagrams", "--min-persistence", str(P))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["settings"]["min_persistence"] == P
    full = at.analyze(TEXT, "minilm", layers=0, progress=False)
    short = 0
    for row in doc["summary"]:
        g = full.diagram(row["layer"], row["head"])
        for d in (0, 1):
            fin = g.finite(d)
            life = fin[:, 1] - fin[:, 0]
            kept = life[life > P]
            short += int(np.sum(life <= P))
            assert row[f"n_bars_h{d}"] == kept.size + len(g.infinite(d))
            assert row[f"total_persistence_h{d}"] == pytest.approx(kept.sum(), abs=1e-9)
    assert short > 0  # the option did drop something on this text
    pruned = at.analyze(TEXT, "minilm", layers=0, min_persistence=P, progress=False)
    assert pruned.provenance["settings"]["min_persistence"] == P
    for (layer, head), g in zip(
        [(0, h) for h in range(12)], [pruned.diagram(0, h) for h in range(12)]
    ):
        ref = full.diagram(layer, head)
        for d in (0, 1):
            life = ref[d][:, 1] - ref[d][:, 0]
            np.testing.assert_array_equal(g[d], ref[d][~(life <= P)])


def test_negative_min_persistence_is_one_line_before_the_model_loads():
    r = run("analyze", TEXT, "--min-persistence", "-0.5")
    assert_one_line_error(r, "--min-persistence")
