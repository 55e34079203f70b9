"""attntopo.corpus on (prompt, answer) pairs with the sets for hallucination detection
(``prompt``, ``lookback``, ``zigzag``, ``spectral``) on MiniLM, layers and heads given out of
order: every column holds the value of the head it names (``attntopo.features`` on the same
padded batch, and on the heads in sorted order), a resumed store is the clean one, and an
append keeps the rows stored before it.

Comparisons are of kind 1 (tests/README.md): the same float32 forward pass of the same padded
batch (pairs of different lengths: padding inside each batch), so the numbers are equal, not
close.  The Ray engine on pairs: ``test_corpus_ray.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attntopo import corpus
from attntopo.corpus import open_store, text_sha256
from attntopo.errors import InvalidInputError
from attntopo.features import features

SETS = ("prompt", "lookback", "zigzag", "spectral")
LAYERS, HEADS = [3, 0, 5], [5, 1]  # out of order: the user's order is a display order
PAIRS = [
    ("What is the capital of France?", "Paris is the capital of France."),
    ("Who wrote Hamlet?", "Dickens, in 1950."),
    ("What is 2 + 2?", "It is 4."),
    ("Which planet is the largest one?", "Jupiter is the largest planet."),
    ("What colour is the sky?", "The sky is green at noon."),
]


def _frame(pairs):
    return pd.DataFrame({"q": [p for p, _ in pairs], "a": [a for _, a in pairs]})


def _run(pairs, out, model, **kw):
    kw = {"progress": False, **kw}
    return corpus.run(
        _frame(pairs),
        out,
        model=model,
        text_column="q",
        answer_column="a",
        sets=SETS,
        layers=LAYERS,
        heads=HEADS,
        batch_size=2,
        **kw,
    )


@pytest.fixture(scope="module")
def clean(minilm, tmp_path_factory):
    return _run(PAIRS, tmp_path_factory.mktemp("pairs") / "clean", minilm)


def test_every_column_of_a_store_of_pairs_holds_its_heads_value(minilm, clean):
    df = clean.to_pandas()
    cols = clean.feature_columns
    assert (df["status"] == "ok").all() and list(df["answer"]) == [a for _, a in PAIRS]
    assert cols[:2] == ["L3H5.prompt.js", "L3H5.prompt.attention"]
    assert {c.split(".")[1] for c in cols} == set(SETS)
    assert "L*H*.zigzag.h0.n_bars" in cols and "L5H1.lookback.ratio" in cols
    for start in range(0, len(PAIRS), 2):
        batch = PAIRS[start : start + 2]
        got = df[cols].iloc[start : start + 2]
        want = features(batch, minilm, sets=SETS, layers=LAYERS, heads=HEADS, batch_size=2)
        assert list(want.columns) == cols
        np.testing.assert_array_equal(got.to_numpy(), want.values)
        # the heads in sorted order: other columns' order, the same value under each name
        ordered = features(
            batch, minilm, sets=SETS, layers=sorted(LAYERS), heads=sorted(HEADS), batch_size=2
        ).to_pandas()
        assert list(ordered.columns) != cols and sorted(ordered.columns) == sorted(cols)
        np.testing.assert_array_equal(got[list(ordered.columns)].to_numpy(), ordered.to_numpy())
    # a sql read is keyed by name as well
    by_sql = clean.sql('SELECT "L0H5.lookback.ratio", "L*H*.zigzag.h1.n_bars" FROM corpus')
    assert by_sql.to_numpy().tolist() == df[list(by_sql.columns)].to_numpy().tolist()


def test_a_stopped_store_of_pairs_resumes_to_the_clean_one(minilm, clean, tmp_path):
    def stop(done, total, stage):
        if stage == "features" and done >= 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(PAIRS, tmp_path / "s", minilm, progress=stop)
    assert 0 < open_store(tmp_path / "s").counts()["done"] < len(PAIRS)
    assert _run(PAIRS, tmp_path / "s", minilm).to_arrow().equals(clean.to_arrow())


def test_an_append_of_pairs_keeps_the_stored_rows(minilm, clean, tmp_path):
    first = _run(PAIRS[:4], tmp_path / "s", minilm).to_arrow()
    grown = _run(PAIRS, tmp_path / "s", minilm, append=True)
    assert grown.counts()["done"] == len(PAIRS)
    got = grown.to_arrow()
    assert got.slice(0, 4).equals(first)
    # the stored rows cover whole batches: the grown store is the union's, value for value
    assert got.equals(clean.to_arrow())


def test_an_id_stored_with_another_answer_is_refused_naming_what_differs(minilm, tmp_path):
    """With an id column, an append whose pair under a stored id has another answer is
    refused; the line said "another prompt or answer" and showed the prompts' hashes, equal
    when only the answer changed.  It names what differs and shows that part's hashes."""
    kw = dict(
        model=minilm,
        text_column="q",
        answer_column="a",
        id_column="key",
        sets=("lookback",),
        layers=[1],
        heads=[2],
        progress=False,
    )
    corpus.run(_frame(PAIRS[:2]).assign(key=["a", "b"]), tmp_path / "k", **kw)
    (p, a), h = PAIRS[1], text_sha256
    for prompt, answer, what, old, new in [
        (p, "Shakespeare.", "answer", h(a), h("Shakespeare.")),
        ("Who wrote Macbeth?", a, "prompt", h(p), h("Who wrote Macbeth?")),
        ("Who wrote it?", "Marlowe.", "prompt and answer", h(p), h("Who wrote it?")),
    ]:
        changed = pd.DataFrame({"key": ["b", "c"], "q": [prompt, "Why?"], "a": [answer, "No."]})
        with pytest.raises(InvalidInputError) as e:
            corpus.run(changed, tmp_path / "k", append=True, **kw)
        assert str(e.value).endswith(
            f"id 'b' is stored with another {what} (SHA-256 {old[:12]}…, this input's "
            f"{new[:12]}…): nothing was changed"
        ), str(e.value)
    assert open_store(tmp_path / "k").counts()["done"] == 2
