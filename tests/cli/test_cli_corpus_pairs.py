"""``attntopo corpus --answer-column``: a corpus of (prompt, answer) pairs on the real MiniLM.
The stored prompt scores are ``attntopo.features``' numbers on the same pairs, a stopped run
resumes to the same store, and bad pairs are one line, exit 2 (the CLI's ``main`` in this
process, so the model loads once)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attntopo.cli  # noqa: F401 - the app and its other commands
import attntopo.cli._corpus  # noqa: F401 - registers `corpus`
from attntopo import corpus
from attntopo.cli._common import main
from attntopo.corpus import open_store
from attntopo.features import features

pytestmark = pytest.mark.model
LAYERS, HEADS = [0, 3], [0, 5]
FAST = ["--layer", "0,3", "--head", "0,5", "--batch-size", "2"]
PAIRS = [
    ("What is the capital of France?", "Paris is the capital of France."),
    ("Who wrote Hamlet?", "Hamlet was written by Shakespeare."),
    ("What is 2 + 2?", "It is 7, as everyone knows."),
    ("Which planet is largest?", "Jupiter is the largest planet."),
    ("What colour is the sky?", "The sky is green at noon."),
]
PAIR_ARGS = ["--text-column", "prompt", "--answer-column", "answer", "--sets", "prompt,js"]


def _write(path, pairs, extra=None):
    rows = [{"prompt": p, "answer": a, "label": k % 2} for k, (p, a) in enumerate(pairs)]
    rows.insert(2, {"prompt": "", "answer": None, "label": 9})  # an empty record: skipped, counted
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + (extra or [])))
    return path


def _one_error(capsys, code, *fragments):
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def test_a_corpus_of_pairs_stores_the_features_of_the_pairs(minilm, tmp_path, capsys):
    src = _write(tmp_path / "pairs.jsonl", PAIRS)
    code = main(["corpus", str(src), "--out", str(tmp_path / "st"), *PAIR_ARGS, *FAST])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert out.startswith(
        "corpus: 5 done, 1 skipped (empty), 0 skipped (too long), 0 truncated, 0 failed"
    )
    store = open_store(tmp_path / "st")
    df = store.to_pandas()
    assert list(zip(df["text"], df["answer"])) == PAIRS and list(df["label"]) == [0, 1, 0, 1, 0]
    assert list(df["row"]) == [0, 1, 3, 4, 5] and (df["status"] == "ok").all()
    assert store.settings.pairs and store.feature_columns[0] == "L0H0.prompt.js"
    X = df[store.feature_columns].to_numpy()
    # every batch: attntopo.features on the same pairs (the same padded batch: the same numbers)
    for start in range(0, len(PAIRS), 2):
        batch = PAIRS[start : start + 2]
        ft = features(
            batch, minilm, sets=("prompt", "js"), layers=LAYERS, heads=HEADS, batch_size=len(batch)
        )
        assert list(ft.columns) == store.feature_columns
        np.testing.assert_array_equal(X[start : start + 2], ft.values)
    assert np.all(X[:, [k for k, c in enumerate(store.feature_columns) if ".prompt." in c]] > 0)

    # a stopped run (Ctrl-C after its first batch) continues to the same store
    def stop(done, total, stage):
        if stage == "features" and done >= 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        corpus.run(
            src,
            out=tmp_path / "resumed",
            model=minilm,
            sets=("prompt", "js"),
            layers=LAYERS,
            heads=HEADS,
            batch_size=2,
            text_column="prompt",
            answer_column="answer",
            progress=stop,
        )
    assert 0 < open_store(tmp_path / "resumed").counts()["done"] < 5
    code = main(["corpus", str(src), "--out", str(tmp_path / "resumed"), *PAIR_ARGS, *FAST])
    assert code == 0, capsys.readouterr()
    capsys.readouterr()
    assert open_store(tmp_path / "resumed").to_arrow().equals(store.to_arrow())

    # the same input without --answer-column: the prompt set is refused in one line; so is a
    # column of numbers named as the answers
    code = main(
        [
            "corpus",
            str(src),
            "--out",
            str(tmp_path / "st"),
            "--text-column",
            "prompt",
            "--sets",
            "prompt,js",
            *FAST,
        ]
    )
    _one_error(capsys, code, "the prompt set needs (prompt, answer) pairs", "--answer-column")
    code = main(
        [
            "corpus",
            str(src),
            "--out",
            str(tmp_path / "st"),
            "--text-column",
            "prompt",
            "--sets",
            "prompt,js",
            "--answer-column",
            "label",
            *FAST,
        ]
    )
    _one_error(capsys, code, "line 1 has a int, not a string, as its answer in column 'label'")
    # a changed answer is another record: another input for the store
    changed = list(PAIRS)
    changed[1] = (PAIRS[1][0], "Hamlet was written by Marlowe.")
    _write(tmp_path / "changed.jsonl", changed)
    code = main(
        [
            "corpus",
            str(tmp_path / "changed.jsonl"),
            "--out",
            str(tmp_path / "st"),
            *PAIR_ARGS,
            *FAST,
        ]
    )
    _one_error(capsys, code, "was made from another input")
    # appended, the changed pair is a new record (its id holds the answer's hash), the others stored
    code = main(
        [
            "corpus",
            str(tmp_path / "changed.jsonl"),
            "--out",
            str(tmp_path / "st"),
            *PAIR_ARGS,
            *FAST,
            "--append",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert out.startswith("corpus: 6 done") and "4 already in the store (skipped)" in out
    grown = open_store(tmp_path / "st").to_pandas()
    assert list(grown["answer"])[-1] == "Hamlet was written by Marlowe." and len(grown) == 6


def test_a_missing_answer_is_one_line_exit_2(tmp_path, capsys):
    src = _write(
        tmp_path / "pairs.jsonl", PAIRS[:2], extra=[{"prompt": "And this one?", "label": 1}]
    )
    code = main(["corpus", str(src), "--out", str(tmp_path / "st"), *PAIR_ARGS, *FAST])
    _one_error(capsys, code, "pairs.jsonl: line 4 has no answer in column 'answer'")
    assert not (tmp_path / "st").exists()
    code = main(["corpus", str(src), "--out", str(tmp_path / "st"), "--sets", "prompt", *FAST])
    _one_error(capsys, code, "the prompt set needs (prompt, answer) pairs")
