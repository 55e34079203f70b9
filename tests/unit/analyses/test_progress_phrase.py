"""progress= of phrase_topology and compare_models (issue 15 item 2): a callback sees every
stage with monotone done counts that end at the total (synthetic attention: no model)."""

from __future__ import annotations

import pytest

import attntopo as at
from _synthetic import text_attention
from attntopo.analyses._model_comparison import compare_models
from attntopo.analyses._phrase import phrase_topology


class Recorder:
    def __init__(self):
        self.calls: list[tuple[int, int, str]] = []

    def __call__(self, done: int, total: int, stage: str) -> None:
        self.calls.append((done, total, stage))

    def check(self, stages: list[str]) -> dict[str, list[int]]:
        """Monotone counts, done <= total, ending at done == total; the stages in this order.
        Returns the done counts seen in each stage."""
        assert self.calls, "the callback was never called"
        done = [d for d, _, _ in self.calls]
        total = [t for _, t, _ in self.calls]
        assert done == sorted(done) and total == sorted(total)
        assert all(d <= t for d, t, _ in self.calls), self.calls
        assert done[-1] == total[-1] > 0
        order = []
        named = [c for c in self.calls if c[2]]
        assert all(c[0] == 0 for c in self.calls[: len(self.calls) - len(named)]), (
            "only the plan comes unnamed"
        )
        assert self.calls[len(self.calls) - len(named) :] == named
        for _, _, s in named:
            if not order or order[-1] != s:
                order.append(s)
        assert order == stages, order
        per: dict[str, list[int]] = {}
        for d, _, s in named:
            per.setdefault(s, []).append(d)
        return per


CONTEXTS = [
    "the quantum information theory of attention",
    "classical information theory of entropy",
    "information theory in a noisy channel",
]


def test_phrase_topology_reports_each_stage():
    atts = [text_attention(c, seed=k, L=2, H=3) for k, c in enumerate(CONTEXTS)]
    rec = Recorder()
    pt = phrase_topology("information theory", atts, progress=rec, n_jobs=1)
    per = rec.check(["distances", "persistence", "diagram distances"])
    L, H, C = 2, 3, len(CONTEXTS)
    # one unit per context and head (distances, persistence), per pair of contexts and head
    assert per["distances"][-1] - per["distances"][0] <= C * L * H
    assert per["persistence"][-1] - per["distances"][-1] == C * L * H
    assert per["diagram distances"][-1] - per["persistence"][-1] == L * H * C * (C - 1) // 2
    assert rec.calls[-1][:2] == (2 * C * L * H + L * H * 3, 2 * C * L * H + L * H * 3)
    # the result does not depend on progress=
    assert pt == phrase_topology("information theory", atts, progress=False, n_jobs=1)


def test_compare_models_reports_each_stage():
    texts = [
        "the cat sat on the mat today",
        "a dog ran in the park at night",
        "birds sing in the early morning",
    ]
    a = at.head_space(
        [text_attention(t, seed=k, L=2, H=3) for k, t in enumerate(texts)],
        normalize=True,
        progress=False,
    )
    b = at.head_space(
        [text_attention(t, seed=10 + k, L=3, H=2) for k, t in enumerate(texts)],
        normalize=True,
        progress=False,
    )
    rec = Recorder()
    mc = compare_models(None, model_a=a, model_b=b, n_boot=4, n_jobs=1, progress=rec)
    per = rec.check(["diagram distances", "persistence", "bootstrap distances"])
    assert per["diagram distances"] == [0, 1]
    assert per["persistence"][-1] == 1 + 4 * 4 and per["bootstrap distances"][-1] == 1 + 5 * 4
    assert rec.calls[-1][:2] == (21, 21)
    assert mc == compare_models(None, model_a=a, model_b=b, n_boot=4, n_jobs=1, progress=False)


@pytest.mark.parametrize("bad", ["yes", 3])
def test_bad_progress_is_refused(bad):
    atts = [text_attention(c, seed=k) for k, c in enumerate(CONTEXTS[:2])]
    with pytest.raises(at.errors.InvalidInputError, match="progress"):
        phrase_topology("information theory", atts, progress=bad)
