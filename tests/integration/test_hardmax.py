"""attntopo.hardmax on MiniLM's tokens and on Debian's fortunes
(the command line: tests/cli/test_cli_hardmax.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attntopo as at  # noqa: E402
from _tolerances import for_model  # noqa: E402
from attntopo import hardmax as hm  # noqa: E402
from attntopo.errors import OutOfRangeError  # noqa: E402

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Quantum information theory allows us to study attention using entanglement.",
    "I loved this movie, but the ending was terrible.",
]


def test_a_is_the_heads_symmetric_score_shifted(minilm):
    A, info = hm.key_query_matrix(minilm, layer=2, head=7, margin=0.05)
    sa = minilm.hf_model.encoder.layer[2].attention.self
    Wq = sa.query.weight.detach().double().numpy()[7 * 32 : 8 * 32]
    Wk = sa.key.weight.detach().double().numpy()[7 * 32 : 8 * 32]
    M = Wq.T @ Wk
    S = (M + M.T) / 2
    lam = np.linalg.eigvalsh(S)
    assert A.shape == (384, 384) and np.array_equal(A, A.T)
    np.testing.assert_allclose(
        A - S, info["shift"] * np.eye(384), rtol=0, atol=1e-12 * abs(info["shift"])
    )
    np.testing.assert_allclose(np.linalg.eigvalsh(A)[0], 0.05 * np.abs(lam).max(), rtol=1e-9)
    assert (
        info["head_dim"] == 32 and info["kv_head"] == 7 and (info["layer"], info["head"]) == (2, 7)
    )
    np.testing.assert_allclose(
        info["antisymmetric_share"], np.linalg.norm(M - M.T) / np.linalg.norm(M + M.T), rtol=1e-12
    )


@pytest.mark.forward_compare
@pytest.mark.parametrize("layer,head", [(0, 0), (3, 5), (5, 11)])
def test_token_states_are_what_the_head_attends_with(minilm, layer, head):
    # softmax(q·k/sqrt(32)) recomputed from the tokens and the head's projections is the
    # model's own attention: Z0 is the input of that layer and the head's rows are the right ones
    text = SENTENCES[1]
    Z, labels = hm.token_states(minilm, text, layer=layer)
    att = minilm.attention(text)
    assert labels == att.labels and Z.shape == (len(att.tokens), 384)
    sa = minilm.hf_model.encoder.layer[layer].attention.self
    sl = slice(head * 32, (head + 1) * 32)
    q = (
        Z @ sa.query.weight.detach().double().numpy()[sl].T
        + sa.query.bias.detach().double().numpy()[sl]
    )
    k = (
        Z @ sa.key.weight.detach().double().numpy()[sl].T
        + sa.key.bias.detach().double().numpy()[sl]
    )
    logits = q @ k.T / math.sqrt(32)
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    tol = for_model(minilm)
    np.testing.assert_allclose(P, att.weights[layer, head], rtol=0, atol=tol.weights_atol)


@pytest.mark.parametrize("text", SENTENCES)
@pytest.mark.parametrize("layer,head", [(0, 3), (5, 0)])
def test_theorem_on_minilm_tokens(minilm, text, layer, head):
    r = hm.simulate_text(text, minilm, layer=layer, head=head, alpha=1.0, steps=80)
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
        hm.simulate_text("a b c", minilm, layer=6, head=0)
    with pytest.raises(OutOfRangeError, match="head must be an int in -12..11"):
        hm.simulate_text("a b c", minilm, layer=0, head=12)
    with pytest.raises(at.InvalidInputError, match="alpha must be a positive"):
        hm.simulate_text("a b c", minilm, layer=0, head=0, alpha=-1)
    with pytest.raises(at.InvalidInputError, match="margin must be a positive"):
        hm.key_query_matrix(minilm, layer=0, head=0, margin=0)
    with pytest.raises(at.EmptyTextError):
        hm.simulate_text("   ", minilm, layer=0, head=0)


# ------------------------------------------------------------ the classifier
from attntopo.datasets import FORTUNES_DIR  # noqa: E402

needs_fortunes = pytest.mark.skipif(
    not Path(FORTUNES_DIR).is_dir(),
    reason=(
        f"Debian's fortunes are not installed at {FORTUNES_DIR}: "
        "run 'make fortunes' (sudo apt-get install fortunes)"
    ),
)


@needs_fortunes
def test_hardmax_classifier_learns_fortunes_categories():
    from attntopo.datasets import fortunes

    ds = fortunes(categories=["politics", "science"])
    m = hm.train_classifier(ds.texts, ds.labels, d=2, layers=8, epochs=20, seed=0, top_words=5)
    met = m.metrics
    # better than the majority class on validation (what selection saw) and on test
    assert met["val_accuracy_best"] > met["majority_test_accuracy"] + 0.05
    assert met["test_accuracy_early"] > met["majority_test_accuracy"]
    assert met["train_seconds"] < 600
