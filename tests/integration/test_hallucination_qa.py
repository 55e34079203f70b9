"""The hallucination benchmark with the packaged SmolLM2: a tiny run generates, labels from
the answers, caches, resumes and reads back the same pairs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attntopo.datasets import HallucinationQA, hallucination_qa
from attntopo.datasets._facts import label_answer

pytest.importorskip("countryinfo")

TINY = {"seed": 0, "lengths": (1, 2), "batch_size": 1, "max_new_tokens": 40}


@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_a_tiny_benchmark_is_generated_labelled_and_cached(tmp_path):
    d = hallucination_qa(n=3, memory=tmp_path, progress=False, **TINY)
    assert isinstance(d, HallucinationQA) and len(d) == 3
    c = d.columns
    assert list(c["n_entities"]) == [1, 2, 1]
    assert list(c["question"]) == ["capital", "capital", "currency"]
    for k in range(3):
        prompt, answer = d.pairs()[k]
        assert prompt.startswith("<|im_start|>system")
        assert prompt.endswith("<|im_start|>assistant\n")
        assert "Question: What is the" in prompt and c["entity"][k] in prompt
        assert answer and "<|im_end|>" not in answer
        # labels recomputed from the text alone agree
        assert (d.labels[k], c["outcome"][k]) == label_answer(
            answer,
            context_value=c["context_value"][k],
            world_value=c["world_value"][k],
            entity=c["entity"][k],
            question=c["question"][k],
        )
        lp, ent = d.token_logprobs[k], d.token_entropies[k]
        assert len(lp) == len(ent) == c["answer_tokens"][k] > 0
        assert np.all(lp <= 0) and np.all(ent >= -1e-9)
        assert c["min_logprob"][k] <= c["mean_logprob"][k] <= 0
        assert np.isclose(c["mean_logprob"][k], lp.mean())
        assert 50 < c["prompt_tokens"][k] < 200 and c["seconds"][k] > 0
    assert d.y.tolist() == [
        {"faithful": 0, "hallucinated": 1, "ambiguous": -1}[v] for v in d.labels
    ]
    assert set(d.binary().labels) <= {"faithful", "hallucinated"}
    df = d.to_pandas()
    assert list(df["answer"]) == d.answers and len(df) == 3

    (folder,) = tmp_path.glob("hallucination_qa-*")
    lines = (folder / "chunk-00000.jsonl").read_text().splitlines()
    assert [json.loads(line)["i"] for line in lines] == [0, 1, 2]
    # fewer pairs come from the cache, without the model's answers changing
    first = hallucination_qa(n=2, memory=tmp_path, generate=False, **TINY)
    assert first.answers == d.answers[:2] and first.prompts == d.prompts[:2]
    # a run cut short resumes: drop pair 1, ask again, only it is regenerated
    (folder / "chunk-00000.jsonl").write_text("\n".join([lines[0], lines[2]]) + "\n")
    assert hallucination_qa(n=3, memory=tmp_path, generate=False, **TINY).answers == d.answers[:1]
    calls = []
    again = hallucination_qa(n=3, memory=tmp_path, progress=lambda *a: calls.append(a), **TINY)
    assert again.answers == d.answers and again.labels == d.labels
    assert calls[-1][:2] == (1, 1)
    # another setting, another cache
    hallucination_qa(n=1, memory=tmp_path, **{**TINY, "counterfactual_share": 1.0})
    assert len(list(tmp_path.glob("hallucination_qa-*"))) == 2


@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_the_packaged_copy_is_read_without_the_model(tmp_path, monkeypatch):
    from attntopo.datasets import _hallucination as h

    monkeypatch.setenv("ATTNTOPO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(h, "_PACKAGED", tmp_path / "data")
    d = hallucination_qa(n=2, progress=False, **TINY)
    packed = h._pack(2, **TINY)
    assert packed.parent == tmp_path / "data" and packed.name.endswith(".jsonl.gz")
    assert packed.read_bytes() == h._pack(2, **TINY).read_bytes()  # reproducible bytes
    for part in (tmp_path / "cache").rglob("chunk-*.jsonl"):
        part.unlink()

    def no_tokenizer(model):
        raise AssertionError("the packaged copy needs no tokenizer")

    monkeypatch.setattr(h._LM, "tokenizer", no_tokenizer)
    again = hallucination_qa(n=2, progress=False, generate=False, **TINY)
    assert again.pairs() == d.pairs() and again.labels == d.labels
    assert again.info["cache"][0] == str(packed)
    with pytest.raises(h.InvalidInputError, match="only 2 of 3 pairs are cached"):
        h._pack(3, **TINY)


@pytest.mark.slow
@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_the_packaged_answers_are_what_the_model_gives(tmp_path):
    from attntopo.datasets import _hallucination as h

    (packed,) = h._PACKAGED.glob("hallucination_qa-*.jsonl.gz")
    stored = h._read_rows(packed, h.gzip.open)
    # the first batch of the default settings: the 8 one-country prompts 0, 6, ..., 42
    fresh = hallucination_qa(n=1, memory=tmp_path, progress=False)
    (folder,) = tmp_path.glob("hallucination_qa-*")
    assert folder.name == packed.name.removesuffix(".jsonl.gz")  # the same settings' key
    rows = h._read_rows(folder / "chunk-00000.jsonl")
    assert sorted(rows) == list(range(0, 48, 6))
    for i, row in rows.items():
        assert row["tokens"] == stored[i]["tokens"] and row["answer"] == stored[i]["answer"]
        assert row["prompt_sha"] == stored[i]["prompt_sha"]
        # float32 forward passes on another CPU differ by ~1e-6 relative (tests/README.md);
        # the stored values are rounded to 1e-5
        np.testing.assert_allclose(row["logprobs"], stored[i]["logprobs"], atol=1e-3)
        np.testing.assert_allclose(row["entropies"], stored[i]["entropies"], atol=1e-3)
    assert fresh.answers[0] == stored[0]["answer"]
