"""progress= on the analyses with the real packaged models: a callback sees done counts that
never decrease and end at the total, in the stages each analysis names; results do not depend
on it; a first GGUF load reports its conversion stages (SmolLM2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import attntopo as at

pytestmark = pytest.mark.slow

TEXT_A = "Quantum information theory allows us to study attention using entanglement."
TEXT_B = "Classical information theory studies entropy and the capacity of noisy channels."


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []

    def __call__(self, done: int, total: int, stage: str) -> None:
        self.calls.append((done, total, stage))

    def check(self) -> list[str]:
        """Monotone done and total, done <= total, ending at done == total; the stages in order."""
        assert self.calls, "no progress reported"
        dones = [c[0] for c in self.calls]
        totals = [c[1] for c in self.calls]
        assert dones == sorted(dones) and totals == sorted(totals), self.calls
        assert all(d <= t for d, t in zip(dones, totals)), self.calls
        assert dones[-1] == totals[-1] > 0, self.calls[-1]
        return list(dict.fromkeys(c[2] for c in self.calls if c[2]))


def test_analyze_reports_one_bar_over_attention_distances_persistence(minilm):
    rec = Recorder()
    a = at.analyze(TEXT_A, minilm, layers=[0, 5], progress=rec)
    assert rec.check() == ["attention", "distances", "persistence"]
    # one text: its forward pass through MiniLM's 6 layers, 24 heads' distances and diagrams
    assert rec.calls[-1][1] == 6 + 2 * 2 * 12
    assert a == at.analyze(TEXT_A, minilm, layers=[0, 5], progress=False)


def test_analyze_of_several_texts_and_of_an_attention(minilm):
    rec = Recorder()
    at.analyze([TEXT_A, TEXT_B, "Short."], minilm, heads=[1], progress=rec)
    rec.check()
    assert rec.calls[-1][1] == 3 * (6 + 2 * 6)
    rec = Recorder()
    at.analyze(minilm.attention(TEXT_B, layers=[2]), progress=rec)
    assert rec.check() == ["distances", "persistence"]
    assert rec.calls[-1][1] == 2 * 12


def test_compare_reports_every_stage(minilm):
    rec = Recorder()
    c = at.compare(TEXT_A, TEXT_B, minilm, layers=[0, 1], progress=rec)
    assert c.keys  # shared words: their diagrams and connection scales are computed too
    assert rec.check() == [
        "attention",
        "distances",
        "persistence",
        "diagram distances",
        "connection scales",
    ]
    assert rec.calls[-1][1] == 2 * 6 + 24 * (2 + 4 + 1 + 1)


def test_head_space_reports_texts_tokens_and_the_space(minilm):
    rec = Recorder()
    hs = at.head_space([TEXT_A, TEXT_B], minilm, progress=rec)
    assert rec.check() == ["attention", "head distances", "head types", "head space"]
    assert rec.calls[-1][1] == 2 * 6 + sum(hs.n_tokens) + 2 + 1


def test_head_distances_reports_query_tokens(minilm):
    att = minilm.attention(TEXT_A)
    rec = Recorder()
    at.head_distances([att, att], progress=rec)
    assert rec.check() == ["head distances"]
    assert rec.calls[-1][1] == 2 * att.n_tokens


def test_timeline_reports_prefixes_slices_and_vines(minilm):
    rec = Recorder()
    tls = at.timeline("The cat sat on the mat.", minilm, layers=[0, 1], heads=3, progress=rec)
    assert rec.check() == ["attention", "distances", "persistence", "vines"]
    S = len(tls[0].slices)
    assert rec.calls[-1][1] == S + 2 * S * 2 + 2 * (S - 1)  # bidirectional: a pass per prefix


@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_timeline_of_a_causal_model_reports_one_pass(smollm2):
    rec = Recorder()
    tl = at.timeline("The cat sat on the mat.", smollm2, layers=3, heads=[0, 1], progress=rec)
    assert rec.check() == ["attention", "distances", "persistence", "vines"]
    S = len(tl[0].slices)
    # one forward pass, the distances of the full text only, then every slice's diagrams
    assert rec.calls[-1][1] == 1 + 2 + S * 2 + 2 * (S - 1)


def test_progress_is_checked_before_any_work(minilm):
    with pytest.raises(at.errors.InvalidInputError, match="progress must be None"):
        at.analyze(TEXT_A, minilm, progress="yes")


_GGUF_LOAD = """
import json, sys
import attntopo as at
calls = []
m = at.load_model("smollm2", progress=lambda d, t, s: calls.append((d, t, s)))
assert m.causal
json.dump(calls, sys.stdout)
"""


@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_first_gguf_load_reports_its_conversion_stages(tmp_path):
    # a fresh cache folder: this process converts the GGUF file again (~30 s or more)
    env = dict(os.environ, ATTNTOPO_CACHE_DIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", _GGUF_LOAD], capture_output=True, text=True, env=env, timeout=900
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rec = Recorder()
    rec.calls = [tuple(c) for c in json.loads(out.stdout)]
    assert rec.check() == [
        "reading GGUF tokenizer",
        "reading GGUF model",
        "dequantizing GGUF",
        "building model",
        "saving converted model",
        "loading model",
        "checking attention",
    ]
    dequantized = [c for c in rec.calls if c[2] == "dequantizing GGUF"]
    assert dequantized[-1][0] - dequantized[0][0] >= 100  # one unit per tensor (272 in this file)
    assert "de-quantizing" not in out.stderr  # transformers' own tqdm bar stays silent


def test_a_forward_pass_reports_each_layer_as_it_is_computed(minilm):
    # issue 33: one long text showed no movement ("attention 0/13" during the forward pass,
    # features at 0/1); a forward pass now advances as each of the model's layers is done
    events: list[tuple[str, int]] = []
    minilm.stream(
        TEXT_A,
        lambda i, layer, w: events.append(("layer", layer)),
        heads=[0],
        progress=lambda done, total, stage: events.append(("done", done)),
    )
    after = [e for e in events if e != ("done", 0)]
    assert after == [x for k in range(6) for x in (("layer", k), ("done", k + 1))]
    rec = Recorder()
    minilm.attention(TEXT_A, layers=[4], progress=rec)
    rec.check()
    assert [c[0] for c in rec.calls if c[0]] == [1, 2, 3, 4, 5, 6]  # every layer runs
    rec = Recorder()
    at.analyze(TEXT_A, minilm, layers=[1], heads=[0], progress=rec)
    rec.check()
    assert [c[0] for c in rec.calls if c[2] == "attention" and c[0]] == [1, 2, 3, 4, 5, 6]


def test_features_of_one_text_advance_layer_by_layer(minilm):
    rec = Recorder()
    at.features(TEXT_A, minilm, sets=("js",), layers=[5, 0, 2], heads=[1], n_jobs=1, progress=rec)
    assert rec.check() == ["texts"]
    # its three layers' features as the forward pass hands them over, then its row
    assert [c[0] for c in rec.calls if c[2] == "texts" and c[0]] == [1, 2, 3, 4]
    assert rec.calls[-1][1] == 4
