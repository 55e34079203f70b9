"""The suite must not fail by chance (issue 33 item 11): ``make test`` and ``.ci/run`` load the
``ci`` hypothesis profile, which draws the same examples in every run; ``dev`` (plain pytest)
draws new ones; an ``@example`` (a counterexample kept from a local run) runs under both."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


def _draws(profile: str) -> list[int]:
    seen: list[int] = []

    @settings(settings.get_profile(profile), max_examples=25, database=None)
    @given(st.integers(0, 2**62))
    @example(7)
    def probe(x: int) -> None:
        seen.append(x)

    probe()
    return seen


def test_ci_profile_is_deterministic_and_dev_explores():
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None and ci.deadline is None
    first, second = _draws("ci"), _draws("ci")
    assert first == second and len(set(first)) > 10
    a, b = _draws("dev"), _draws("dev")
    assert a[0] == b[0] == 7  # the kept counterexample, first in every profile
    assert first[0] == 7
    assert set(a[1:]) != set(b[1:])  # 24 draws of 2**62 values: equal only by a 2**-62 chance


def test_make_test_and_ci_select_the_ci_profile():
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^HYPOTHESIS \?= ci$", make, re.M)
    for target in ("test", "test-fast"):
        recipe = re.search(rf"^{target}:.*\n\t(.*)$", make, re.M).group(1)
        assert recipe.startswith("ATTNTOPO_HYPOTHESIS=$(HYPOTHESIS) "), recipe
    run = (ROOT / ".ci" / "run").read_text()
    assert "export ATTNTOPO_HYPOTHESIS=ci\n" in run
    assert run.index("export ATTNTOPO_HYPOTHESIS=ci") < run.index("make test")
