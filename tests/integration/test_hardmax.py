"""attntopo.hardmax on MiniLM's tokens and the ``attntopo hardmax simulate`` command line."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

import attntopo as at  # noqa: E402
from attntopo import hardmax as hm  # noqa: E402
from attntopo.errors import OutOfRangeError  # noqa: E402
from _tolerances import for_model  # noqa: E402
from _cli import assert_one_line_error, run  # noqa: E402

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Quantum information theory allows us to study attention using entanglement.",
    "I loved this movie, but the ending was terrible.",
]


def test_a_is_the_heads_symmetric_score_shifted(minilm):
    A, info = hm.key_query_matrix(minilm, 2, 7, margin=0.05)
    sa = minilm.hf_model.encoder.layer[2].attention.self
    Wq = sa.query.weight.detach().double().numpy()[7 * 32:8 * 32]
    Wk = sa.key.weight.detach().double().numpy()[7 * 32:8 * 32]
    M = Wq.T @ Wk
    S = (M + M.T) / 2
    lam = np.linalg.eigvalsh(S)
    assert A.shape == (384, 384) and np.array_equal(A, A.T)
    np.testing.assert_allclose(A - S, info["shift"] * np.eye(384), rtol=0, atol=1e-12 * abs(info["shift"]))
    np.testing.assert_allclose(np.linalg.eigvalsh(A)[0], 0.05 * np.abs(lam).max(), rtol=1e-9)
    assert info["head_dim"] == 32 and info["kv_head"] == 7 and (info["layer"], info["head"]) == (2, 7)
    np.testing.assert_allclose(info["antisymmetric_share"], np.linalg.norm(M - M.T) / np.linalg.norm(M + M.T), rtol=1e-12)


@pytest.mark.forward_compare
@pytest.mark.parametrize("layer,head", [(0, 0), (3, 5), (5, 11)])
def test_token_states_are_what_the_head_attends_with(minilm, layer, head):
    # softmax(q·k/sqrt(32)) recomputed from the tokens and the head's projections is the
    # model's own attention: Z0 is the input of that layer and the head's rows are the right ones
    text = SENTENCES[1]
    Z, labels = hm.token_states(minilm, text, layer)
    att = minilm.attention(text)
    assert labels == att.labels and Z.shape == (len(att.tokens), 384)
    sa = minilm.hf_model.encoder.layer[layer].attention.self
    sl = slice(head * 32, (head + 1) * 32)
    q = Z @ sa.query.weight.detach().double().numpy()[sl].T + sa.query.bias.detach().double().numpy()[sl]
    k = Z @ sa.key.weight.detach().double().numpy()[sl].T + sa.key.bias.detach().double().numpy()[sl]
    logits = q @ k.T / math.sqrt(32)
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    tol = for_model(minilm)
    np.testing.assert_allclose(P, att.weights[layer, head], rtol=0, atol=tol.weights_atol)


@pytest.mark.parametrize("text", SENTENCES)
@pytest.mark.parametrize("layer,head", [(0, 3), (5, 0)])
def test_theorem_on_minilm_tokens(minilm, text, layer, head):
    r = hm.simulate_text(text, minilm, layer, head, alpha=1.0, steps=80)
    assert r.tokens == minilm.attention(text).labels
    assert r.converged
    L = r.leaders
    assert not (L[:-1] & ~L[1:]).any()  # leaders stay leaders
    pos = r.polytope()
    assert pos.inside.all() and pos.on_boundary.all()
    assert r.n_clusters[-1] <= r.leader_points.shape[0]
    assert r.source["model"] == "minilm" and r.source["z0"] == f"hidden_states[{layer}]"


def test_simulate_text_bad_input(minilm):
    with pytest.raises(OutOfRangeError, match="layer must be an int in -6..5"):
        hm.simulate_text("a b c", minilm, layer=6)
    with pytest.raises(OutOfRangeError, match="head must be an int in -12..11"):
        hm.simulate_text("a b c", minilm, head=12)
    with pytest.raises(at.InvalidInputError, match="alpha must be a positive"):
        hm.simulate_text("a b c", minilm, alpha=-1)
    with pytest.raises(at.InvalidInputError, match="margin must be a positive"):
        hm.key_query_matrix(minilm, margin=0)
    with pytest.raises(at.EmptyTextError):
        hm.simulate_text("   ", minilm)


# ------------------------------------------------------------------------ CLI
def test_cli_random_json_matches_the_library():
    r = run("hardmax", "simulate", "--n", "20", "--dim", "3", "--seed", "4", "--random-a", "--alpha", "0.8",
            "--steps", "70", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rng = np.random.default_rng(4)
    Z0 = rng.normal(size=(20, 3))
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    A = (Q * np.exp(rng.uniform(0.0, np.log(10.0), size=3))) @ Q.T
    lib = hm.simulate(Z0, A, 0.8, 70)
    assert doc["leaders"] == lib.leader_indices.tolist()
    assert [c["members"] for c in doc["clusters"]] == [c["members"] for c in lib.clusters()]
    assert doc["polytope"]["limit_points_on_boundary"] is True and doc["converged"] is True
    assert doc["source"] == {"kind": "random", "n": 20, "dim": 3, "seed": 4, "A": "random SPD"}


def test_cli_z0_file_out_and_figures(tmp_path):
    Z0 = np.random.default_rng(0).normal(size=(12, 2))
    np.save(tmp_path / "z.npy", Z0)
    np.savetxt(tmp_path / "a.csv", np.array([[2.0, 0.5], [0.5, 1.0]]), delimiter=",")
    r = run("hardmax", "simulate", "--z0", str(tmp_path / "z.npy"), "--a", str(tmp_path / "a.csv"),
            "--steps", "40", "--out", str(tmp_path / "out"), "--plots")
    assert r.returncode == 0, r.stderr
    assert "Clusters at the last step" in r.stdout and "limit points on the boundary" in r.stdout
    back = at.load_result(tmp_path / "out")
    lib = hm.simulate(Z0, np.array([[2.0, 0.5], [0.5, 1.0]]), 1.0, 40)
    assert back.source == {"kind": "array", "z0": str(tmp_path / "z.npy"), "A": str(tmp_path / "a.csv")}
    assert back == dataclasses.replace(lib, source=back.source)
    assert sorted(p.name for p in (tmp_path / "out" / "figures").iterdir()) == [
        "clusters.png", "h0.png", "trajectories.png"]


@pytest.mark.model
def test_cli_text(tmp_path):
    r = run("hardmax", "simulate", SENTENCES[0], "--layer", "5", "--head", "0", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["tokens"][0] == "[CLS]" and doc["source"]["layer"] == 5 and doc["dim"] == 384
    assert sorted(i for c in doc["clusters"] for i in c["members"]) == list(range(doc["n_tokens"]))


@pytest.mark.parametrize("args,fragments", [
    (["--alpha", "0"], ["alpha must be a positive finite number", "got 0.0"]),
    (["--alpha", "-2"], ["alpha must be a positive finite number"]),
    (["--steps", "-1"], ["steps must be an int >= 0"]),
    (["--n", "0"], ["--n and --dim must be >= 1"]),
    (["--a", "x.npy"], ["--a needs --z0"]),
    (["some text", "--z0", "x.npy"], ["either a text", "or --z0"]),
    (["--z0", "missing.npy"], ["--z0 'missing.npy' is not a file"]),
    (["--plots"], ["--plots needs --out"]),
    (["--plot-format", "html"], ["figures are static"]),
])
def test_cli_bad_input_is_one_line(args, fragments):
    assert_one_line_error(run("hardmax", "simulate", *args), *fragments)


@pytest.mark.parametrize("A,fragments", [
    ([[1.0, 2.0], [0.0, 1.0]], ["A must be symmetric"]),
    ([[1.0, 0.0], [0.0, -1.0]], ["A must be positive definite", "smallest eigenvalue is -1"]),
    ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], ["A must be a (2, 2) matrix for tokens in R^2"]),
])
def test_cli_bad_matrix_is_one_line(tmp_path, A, fragments):
    np.save(tmp_path / "z.npy", np.eye(2))
    np.save(tmp_path / "a.npy", np.array(A))
    assert_one_line_error(run("hardmax", "simulate", "--z0", str(tmp_path / "z.npy"), "--a", str(tmp_path / "a.npy")),
                          *fragments)


# ------------------------------------------------------------ the classifier
from attntopo.datasets import FORTUNES_DIR  # noqa: E402

needs_fortunes = pytest.mark.skipif(not Path(FORTUNES_DIR).is_dir(), reason=(
    f"Debian's fortunes are not installed at {FORTUNES_DIR}: run 'make fortunes' (sudo apt-get install fortunes)"))


@needs_fortunes
def test_cli_train_and_explain_on_fortunes(tmp_path):
    r = run("hardmax", "train", "--fortunes", "politics,science", "--epochs", "6", "--top-words", "3",
            "--out", str(tmp_path / "clf"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    m = doc["metrics"]
    assert doc["classes"] == ["politics", "science"] and doc["dim"] == 2 and doc["layers"] == 8
    assert m["n_train"] + m["n_val"] + m["n_test"] == sum(m["class_counts"].values())
    assert 1 <= m["best_epoch"] <= 6 and len(doc["history"]) == 6
    assert m["test_accuracy_model"] == m["test_accuracy_early"]
    assert m["baseline"]["test_accuracy"] > m["majority_test_accuracy"]
    model = at.load_result(tmp_path / "clf")
    text = "The government raised taxes again, and the senator voted against the people."
    e = run("hardmax", "explain", str(tmp_path / "clf"), text, "--json", "--out", str(tmp_path / "why"), "--plots")
    assert e.returncode == 0, e.stderr
    ex = json.loads(e.stdout)
    sim, prob = model.explain(text)
    assert ex["prediction"] == model.predict([text])[0]
    assert ex["probability"]["science"] == pytest.approx(prob, abs=1e-12)
    assert sorted(i for g in ex["clusters"] for i in g["members"]) == list(range(len(ex["tokens"])))
    assert at.load_result(tmp_path / "why") == dataclasses.replace(sim, provenance={})
    assert sorted(p.name for p in (tmp_path / "why" / "figures").iterdir()) == ["clusters.png", "h0.png",
                                                                              "trajectories.png"]


@needs_fortunes
def test_hardmax_classifier_learns_fortunes_categories():
    from attntopo.datasets import fortunes

    ds = fortunes(["politics", "science"])
    m = hm.train_classifier(ds.texts, ds.labels, d=2, layers=8, epochs=20, seed=0, top_words=5)
    met = m.metrics
    # better than the majority class on validation (what selection saw) and on test
    assert met["val_accuracy_best"] > met["majority_test_accuracy"] + 0.05
    assert met["test_accuracy_early"] > met["majority_test_accuracy"]
    assert met["train_seconds"] < 600


@pytest.mark.parametrize("args,fragments", [
    ([], ["give either DATA", "--fortunes"]),
    (["--fortunes", "politics"], ["--fortunes takes exactly two categories"]),
    (["missing.csv"], ["DATA 'missing.csv' is not a file"]),
])
def test_cli_train_bad_input(args, fragments):
    assert_one_line_error(run("hardmax", "train", *args), *fragments)


@pytest.mark.parametrize("content,fragments", [
    ("text,label\n", ["holds no rows"]),
    ("text,label\nhello world,a\nfoo bar,a\n", ["1 class(es)", "needs at least 2"]),
    ("text,label\na b,x\nc d,y\ne f,z\n", ["exactly 2 classes, got 3"]),
])
def test_cli_train_bad_datasets(tmp_path, content, fragments):
    (tmp_path / "d.csv").write_text(content)
    assert_one_line_error(run("hardmax", "train", str(tmp_path / "d.csv")), *fragments)


def test_cli_explain_refuses_other_results(tmp_path):
    hm.simulate(np.eye(2), steps=1).save(tmp_path / "sim")
    assert_one_line_error(run("hardmax", "explain", str(tmp_path / "sim"), "a text"),
                          "holds a hardmax_simulation result, not a model")
    assert_one_line_error(run("hardmax", "explain", str(tmp_path / "nothing"), "a text"), "MODEL")


def test_cli_explain_prints_the_probability_of_the_predicted_class(tmp_path):
    """``hardmax explain`` in a terminal: ``LABEL (P(LABEL) = p)`` with p >= 0.5 for either predicted
    class (it printed P(classes[1]) = 0.012 beside a prediction of classes[0]); --json gives both."""
    rng = np.random.default_rng(0)
    cues = {"neg": ["awful", "boring", "dreadful"], "pos": ["great", "lovely", "superb"]}
    filler = ["the", "a", "film", "was", "and", "it", "plot", "scene", "really"]
    texts, labels = [], []
    for label, words in cues.items():
        for _ in range(60):
            texts.append(" ".join([*rng.choice(filler, size=6), *rng.choice(words, size=2)]))
            labels.append(label)
    model = hm.train_classifier(texts, labels, d=2, layers=4, epochs=30, lr=0.05, seed=1)
    model.save(tmp_path / "clf")
    for text in ("the film was awful and boring", "the film was great and lovely"):
        _, p1 = model.explain(text)
        label = model.predict([text])[0]
        p_label = p1 if label == model.classes[1] else 1 - p1
        r = run("hardmax", "explain", str(tmp_path / "clf"), text)
        assert r.returncode == 0, r.stderr
        first = r.stdout.splitlines()[0]
        assert first.startswith(f"{label} (P({label}) = {p_label:.3f}) ·"), (first, p1)
        assert p_label >= 0.5
        doc = json.loads(run("hardmax", "explain", str(tmp_path / "clf"), text, "--json").stdout)
        assert doc["prediction"] == label
        assert doc["probability"] == pytest.approx({model.classes[0]: 1 - p1, model.classes[1]: p1}, abs=1e-12)
    assert {model.predict([t])[0] for t in ("the film was awful and boring", "the film was great and lovely")} \
        == {"neg", "pos"}
