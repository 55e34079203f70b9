"""features(progress=) and head_scores(progress=): the progress convention of the analyses
(attntopo._progress), counted in layers of each text (and its row) and in heads."""

from __future__ import annotations

import numpy as np
import pytest

from _synthetic import text_attention
from attntopo.errors import InvalidInputError
from attntopo.features import column_name, features, head_scores

TEXTS = [f"word {k} and then a few more words, here." for k in range(5)]


def _recorder():
    calls: list[tuple[int, int, str]] = []
    return calls, lambda done, total, stage: calls.append((done, total, stage))


@pytest.mark.parametrize("batch_size", [1, 2, 16])
def test_features_reports_every_layer_and_every_row_once(batch_size):
    L = 3
    atts = [text_attention(t, L=L, H=2, seed=k) for k, t in enumerate(TEXTS)]
    calls, cb = _recorder()
    table = features(atts, sets=("template", "js"), batch_size=batch_size, n_jobs=1, progress=cb)
    assert len(table) == 5
    done = [c[0] for c in calls]
    total = 5 * (L + 1)  # per text: each layer's features, then its row
    assert done == sorted(done) and calls[-1][:2] == (total, total)
    # the whole plan is known from the start (0 before it, at the stage's start)
    assert {c[2] for c in calls} == {"texts"} and {c[1] for c in calls} - {0} == {total}
    # every unit reported: each layer one step, each chunk's rows one step of its size
    steps = [b - a for a, b in zip(done, done[1:]) if b > a]
    assert steps.count(1) >= 5 * L and sum(steps) == total - done[0]


def test_one_long_text_moves_layer_by_layer_before_its_row_is_done():
    # issue 33: one text sat at 0/1 until its row was done; now each of its layers counts
    att = text_attention(" ".join(["word"] * 40), L=4, H=2, seed=7)
    calls, cb = _recorder()
    features(att, sets=("js", "graph"), n_jobs=1, progress=cb)
    assert [c[0] for c in calls if c[0] > 0] == [1, 2, 3, 4, 5]
    assert {c[1] for c in calls} - {0} == {5}


def test_features_refuses_a_bad_progress_before_any_work():
    with pytest.raises(InvalidInputError, match="progress"):
        features([text_attention("a b c", L=1, H=1)], sets=("template",), progress="yes")


def test_head_scores_reports_each_head():
    rng = np.random.default_rng(0)
    heads = [(0, 0), (0, 1), (1, 0)]
    cols = [column_name(a, b, "js", q) for a, b in heads for q in ("x", "y")]
    X = rng.normal(size=(30, len(cols)))
    y = np.repeat([0, 1], 15)
    calls, cb = _recorder()
    scores = head_scores(X, y, columns=cols, progress=cb)
    assert set(scores) == set(heads)
    assert calls[-1] == (3, 3, "scoring heads")
