"""The hardmax classifier: its forward passes against simulate,
training on a synthetic task, splits, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import attntopo as at
from attntopo.errors import InvalidInputError
from attntopo.hardmax import (
    HardmaxClassifier,
    simulate,
    stratified_split,
    tokenize,
    train_classifier,
)
from attntopo.hardmax._classifier import encode, hardmax_forward, softmax_forward

torch = pytest.importorskip("torch")


def synthetic(n_per_class=60, seed=0):
    """Two classes told apart by a few cue words among shared filler words."""
    rng = np.random.default_rng(seed)
    cues = {"pos": ["great", "lovely", "superb"], "neg": ["awful", "boring", "dreadful"]}
    filler = ["the", "a", "film", "was", "and", "it", "plot", "actor", "scene", "really", "."]
    texts, labels = [], []
    for label, words in cues.items():
        for _ in range(n_per_class):
            toks = list(rng.choice(filler, size=rng.integers(5, 15))) + list(
                rng.choice(words, size=2)
            )
            rng.shuffle(toks)
            texts.append(" ".join(toks))
            labels.append(label)
    return texts, labels


@pytest.fixture(scope="module")
def model():
    texts, labels = synthetic()
    return (
        train_classifier(texts, labels, d=2, layers=4, epochs=30, lr=0.05, seed=1, top_words=3),
        texts,
        labels,
    )


def test_tokenize():
    assert tokenize("Don't PANIC -- 42 times!") == ["don't", "panic", "-", "-", "42", "times", "!"]


def test_hardmax_forward_is_simulate_with_identity(model):
    m, texts, _ = model
    ids, mask = encode(texts[:20], m.index, m.max_len)
    E = torch.from_numpy(m.embedding)
    Z = hardmax_forward(E[torch.from_numpy(ids)], torch.from_numpy(mask), m.alpha, m.layers).numpy()
    for b in range(20):
        n = int(mask[b].sum())
        sim = simulate(m.embedding[ids[b, :n]], A=None, alpha=m.alpha, steps=m.layers)
        np.testing.assert_allclose(Z[b, :n], sim.final, rtol=0, atol=1e-12)
        assert np.array_equal(Z[b, n:], m.embedding[ids[b, n:]])  # padding untouched


def test_hardmax_forward_with_ties_and_padding():
    # repeated words are identical points (exact ties); a random padded batch against simulate
    rng = np.random.default_rng(3)
    E = rng.normal(size=(6, 3))
    ids = np.array([[1, 2, 2, 3, 0, 0], [4, 4, 4, 5, 1, 2]])
    mask = ids > 0
    Z = hardmax_forward(torch.from_numpy(E[ids]), torch.from_numpy(mask), 0.7, 6).numpy()
    for b in range(2):
        n = int(mask[b].sum())
        np.testing.assert_allclose(
            Z[b, :n], simulate(E[ids[b, :n]], A=None, alpha=0.7, steps=6).final, rtol=0, atol=1e-12
        )


def test_softmax_at_low_temperature_approaches_hardmax():
    rng = np.random.default_rng(4)
    Z0 = torch.from_numpy(rng.normal(size=(3, 9, 2)))
    mask = torch.ones(3, 9, dtype=torch.bool)
    hard = hardmax_forward(Z0, mask, 1.0, 3)
    soft = softmax_forward(Z0, mask, 1.0, 3, 1e-4)
    warm = softmax_forward(Z0, mask, 1.0, 3, 1.0)
    assert float((soft - hard).abs().max()) < 1e-6
    assert float((warm - hard).abs().max()) > 1e-2


def test_training_learns_the_cue_words(model):
    m, texts, labels = model
    assert isinstance(m, HardmaxClassifier) and m.classes == ["neg", "pos"]
    assert m.accuracy(texts, labels) > 0.9
    met = m.metrics
    assert met["n_train"] + met["n_val"] + met["n_test"] == len(texts)
    # the model holds the first epoch with the best validation accuracy
    val = m.history["val_accuracy"]
    assert met["best_epoch"] == int(np.argmax(val)) + 1 and met["val_accuracy_best"] == max(val)
    assert met["test_accuracy_model"] == met["test_accuracy_early"]
    assert set(met["baseline"]) >= {"C", "val_accuracy", "test_accuracy"}
    assert set(met["leader_words"]) == {"neg", "pos"} and all(
        len(v) <= 3 for v in met["leader_words"].values()
    )


def test_explain_is_the_prediction(model):
    m, texts, _ = model
    sim, p = m.explain(texts[0] + " unseenword")
    assert sim.tokens[-1] == "unseenword→<unk>" and sim.steps == m.layers
    assert p == pytest.approx(float(m.predict_proba([texts[0] + " unseenword"])[0]), abs=1e-12)
    assert sim.leader_indices.size >= 1


def test_save_load_and_fresh_process(model, tmp_path):
    m, texts, _ = model
    m.save(tmp_path / "clf")
    back = at.load_result(tmp_path / "clf")
    assert back == m and back.predict(texts[:5]) == m.predict(texts[:5])
    json.dumps(m.to_dict())
    assert list(m.summary()) == ["epoch", "train_loss", "train_accuracy", "val_accuracy"]
    code = "import attntopo as at, sys; print(type(at.load_result(sys.argv[1])).__name__)"
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "clf")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "HardmaxClassifier"


def test_stratified_split():
    labels = ["a"] * 40 + ["b"] * 21
    tr, va, te = stratified_split(labels, 0.15, 0.2, seed=5)
    allidx = np.concatenate([tr, va, te])
    assert sorted(allidx.tolist()) == list(range(61))
    lab = np.array(labels)
    assert (lab[va] == "a").sum() == 6 and (lab[va] == "b").sum() == 3
    assert (lab[te] == "a").sum() == 8 and (lab[te] == "b").sum() == 4
    assert np.array_equal(stratified_split(labels, 0.15, 0.2, seed=5)[0], tr)


def _one_line(e):
    assert "\n" not in str(e.value)
    return str(e.value)


@pytest.mark.parametrize(
    "texts,labels,fragment",
    [
        ([], [], "the dataset is empty"),
        (["a b", "c d", "e f"], ["x", "x", "x"], "exactly 2 classes, got 1"),
        (["a", "b", "c"], ["x", "y", "z"], "exactly 2 classes, got 3"),
        (["a", "b"], ["x"], "differ in length"),
        (["a", "   "], ["x", "y"], "text 1 is not a string with at least one word"),
        (["a", "b", "c", "d"], ["x", "x", "y", "y"], "class 'x' has 2 text(s)"),
    ],
)
def test_bad_datasets(texts, labels, fragment):
    with pytest.raises(InvalidInputError) as e:
        train_classifier(texts, labels, epochs=1)
    assert fragment in _one_line(e)


@pytest.mark.parametrize(
    "kw,fragment",
    [
        ({"d": 0}, "d must be an int >= 1"),
        ({"alpha": 0}, "alpha must be"),
        ({"val": 0.5}, "val must be a share below 0.5"),
        ({"layers": 1.5}, "layers must be"),
    ],
)
def test_bad_settings(kw, fragment):
    texts, labels = synthetic(10)
    with pytest.raises(InvalidInputError) as e:
        train_classifier(texts, labels, epochs=1, **kw)
    assert fragment in _one_line(e)


def test_predict_refuses_texts_without_words(model):
    with pytest.raises(InvalidInputError, match=r"texts\[1\] has no words"):
        model[0].predict(["great film", " "])


def test_a_seed_below_0_is_refused_in_one_line():
    texts = [f"good text {i}" for i in range(6)] + [f"bad text {i}" for i in range(6)]
    labels = [1] * 6 + [0] * 6
    with pytest.raises(InvalidInputError, match="seed must be an int >= 0, got -1"):
        at.hardmax.train_classifier(texts, labels, seed=-1, baseline=False)
