"""attntopo hardmax simulate | train | explain as a subprocess (moved from
tests/integration/test_hardmax.py): JSON and saved results against the library; bad input is one
error line and exit 2."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import attntopo as at
from _cli import assert_one_line_error, run
from attntopo import hardmax as hm
from attntopo.datasets import FORTUNES_DIR

SENTENCES = [
    "The cat sat on the mat because it was tired.",
]


def test_cli_random_json_matches_the_library():
    r = run(
        "hardmax",
        "simulate",
        "--n",
        "20",
        "--dim",
        "3",
        "--seed",
        "4",
        "--random-a",
        "--alpha",
        "0.8",
        "--steps",
        "70",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rng = np.random.default_rng(4)
    Z0 = rng.normal(size=(20, 3))
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    A = (Q * np.exp(rng.uniform(0.0, np.log(10.0), size=3))) @ Q.T
    lib = hm.simulate(Z0, A=A, alpha=0.8, steps=70)
    assert doc["leaders"] == lib.leader_indices.tolist()
    assert [c["members"] for c in doc["clusters"]] == [c["members"] for c in lib.clusters()]
    assert doc["polytope"]["limit_points_on_boundary"] is True and doc["converged"] is True
    assert doc["source"] == {"kind": "random", "n": 20, "dim": 3, "seed": 4, "A": "random SPD"}


def test_cli_z0_file_out_and_figures(tmp_path):
    Z0 = np.random.default_rng(0).normal(size=(12, 2))
    np.save(tmp_path / "z.npy", Z0)
    np.savetxt(tmp_path / "a.csv", np.array([[2.0, 0.5], [0.5, 1.0]]), delimiter=",")
    r = run(
        "hardmax",
        "simulate",
        "--z0",
        str(tmp_path / "z.npy"),
        "--a",
        str(tmp_path / "a.csv"),
        "--steps",
        "40",
        "--out",
        str(tmp_path / "out"),
        "--plots",
    )
    assert r.returncode == 0, r.stderr
    assert "Clusters at the last step" in r.stdout and "limit points on the boundary" in r.stdout
    back = at.load_result(tmp_path / "out")
    lib = hm.simulate(Z0, A=np.array([[2.0, 0.5], [0.5, 1.0]]), alpha=1.0, steps=40)
    assert back.source == {
        "kind": "array",
        "z0": str(tmp_path / "z.npy"),
        "A": str(tmp_path / "a.csv"),
    }
    assert back == dataclasses.replace(lib, source=back.source)
    assert sorted(p.name for p in (tmp_path / "out" / "figures").iterdir()) == [
        "clusters.png",
        "h0.png",
        "trajectories.png",
    ]


@pytest.mark.model
def test_cli_text(tmp_path):
    r = run("hardmax", "simulate", SENTENCES[0], "--layer", "5", "--head", "0", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["tokens"][0] == "[CLS]" and doc["source"]["layer"] == 5 and doc["dim"] == 384
    assert sorted(i for c in doc["clusters"] for i in c["members"]) == list(range(doc["n_tokens"]))


@pytest.mark.parametrize(
    "args,fragments",
    [
        (["--alpha", "0"], ["alpha must be a positive finite number", "got 0.0"]),
        (["--alpha", "-2"], ["alpha must be a positive finite number"]),
        (["--steps", "-1"], ["steps must be an int >= 0"]),
        (["--n", "0"], ["--n and --dim must be >= 1"]),
        (["--a", "x.npy"], ["--a needs --z0"]),
        (["some text", "--z0", "x.npy"], ["either a text", "or --z0"]),
        (["--z0", "missing.npy"], ["--z0 'missing.npy' is not a file"]),
        (["--plots"], ["--plots needs --out"]),
        (["--plot-format", "html"], ["figures are static"]),
    ],
)
def test_cli_bad_input_is_one_line(args, fragments):
    assert_one_line_error(run("hardmax", "simulate", *args), *fragments)


@pytest.mark.parametrize(
    "A,fragments",
    [
        ([[1.0, 2.0], [0.0, 1.0]], ["A must be symmetric"]),
        ([[1.0, 0.0], [0.0, -1.0]], ["A must be positive definite", "smallest eigenvalue is -1"]),
        (
            [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            ["A must be a (2, 2) matrix for tokens in R^2"],
        ),
    ],
)
def test_cli_bad_matrix_is_one_line(tmp_path, A, fragments):
    np.save(tmp_path / "z.npy", np.eye(2))
    np.save(tmp_path / "a.npy", np.array(A))
    assert_one_line_error(
        run("hardmax", "simulate", "--z0", str(tmp_path / "z.npy"), "--a", str(tmp_path / "a.npy")),
        *fragments,
    )


# ------------------------------------------------------------ the classifier

needs_fortunes = pytest.mark.skipif(
    not Path(FORTUNES_DIR).is_dir(),
    reason=(
        f"Debian's fortunes are not installed at {FORTUNES_DIR}: "
        "run 'make fortunes' (sudo apt-get install fortunes)"
    ),
)


@needs_fortunes
def test_cli_train_and_explain_on_fortunes(tmp_path):
    r = run(
        "hardmax",
        "train",
        "--fortunes",
        "politics,science",
        "--epochs",
        "6",
        "--top-words",
        "3",
        "--out",
        str(tmp_path / "clf"),
        "--json",
    )
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
    e = run(
        "hardmax",
        "explain",
        str(tmp_path / "clf"),
        text,
        "--json",
        "--out",
        str(tmp_path / "why"),
        "--plots",
    )
    assert e.returncode == 0, e.stderr
    ex = json.loads(e.stdout)
    sim, prob = model.explain(text)
    assert ex["prediction"] == model.predict([text])[0]
    assert ex["probability"]["science"] == pytest.approx(prob, abs=1e-12)
    assert sorted(i for g in ex["clusters"] for i in g["members"]) == list(range(len(ex["tokens"])))
    assert at.load_result(tmp_path / "why") == dataclasses.replace(sim, provenance={})
    assert sorted(p.name for p in (tmp_path / "why" / "figures").iterdir()) == [
        "clusters.png",
        "h0.png",
        "trajectories.png",
    ]


@pytest.mark.parametrize(
    "args,fragments",
    [
        ([], ["give either DATA", "--fortunes"]),
        (["--fortunes", "politics"], ["--fortunes takes exactly two categories"]),
        (["missing.csv"], ["DATA 'missing.csv' is not a file"]),
    ],
)
def test_cli_train_bad_input(args, fragments):
    assert_one_line_error(run("hardmax", "train", *args), *fragments)


@pytest.mark.parametrize(
    "content,fragments",
    [
        ("text,label\n", ["holds no rows"]),
        ("text,label\nhello world,a\nfoo bar,a\n", ["1 class(es)", "needs at least 2"]),
        ("text,label\na b,x\nc d,y\ne f,z\n", ["exactly 2 classes, got 3"]),
    ],
)
def test_cli_train_bad_datasets(tmp_path, content, fragments):
    (tmp_path / "d.csv").write_text(content)
    assert_one_line_error(run("hardmax", "train", str(tmp_path / "d.csv")), *fragments)


def test_cli_explain_refuses_other_results(tmp_path):
    hm.simulate(np.eye(2), steps=1).save(tmp_path / "sim")
    assert_one_line_error(
        run("hardmax", "explain", str(tmp_path / "sim"), "a text"),
        "holds a hardmax_simulation result, not a model",
    )
    assert_one_line_error(run("hardmax", "explain", str(tmp_path / "nothing"), "a text"), "MODEL")


def test_cli_explain_prints_the_probability_of_the_predicted_class(tmp_path):
    """``hardmax explain`` in a terminal: ``LABEL (P(LABEL) = p)`` with p >= 0.5 for either
    predicted class (it printed P(classes[1]) = 0.012 beside a prediction of classes[0]); --json
    gives both."""
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
        assert doc["probability"] == pytest.approx(
            {model.classes[0]: 1 - p1, model.classes[1]: p1}, abs=1e-12
        )
    assert {
        model.predict([t])[0]
        for t in ("the film was awful and boring", "the film was great and lovely")
    } == {"neg", "pos"}
