"""Dataset loaders: the fortune filter on files written here, the installed collection when
there, minimal pairs, and the user's CSV/JSONL with errors naming file and line."""

from __future__ import annotations

import os

import pytest

from attntopo.datasets import (
    FORTUNES_DIR,
    PHENOMENA,
    fortune_categories,
    fortunes,
    generated_vs_human,
    minimal_pairs,
    read_texts,
)
from attntopo.errors import InvalidInputError, MissingDependencyError


def _write_collection(folder, cats: dict[str, list[str]]):
    for name, entries in cats.items():
        (folder / name).write_bytes("\n%\n".join(entries).encode("utf-8") + b"\n")
        (folder / f"{name}.dat").write_bytes(b"\0")


def test_fortune_filter_on_a_small_collection(tmp_path):
    _write_collection(
        tmp_path,
        {
            "food": [
                "Bread  and\n\tbutter are the base of every good meal indeed.",
                "Too short.",
                "Bread and butter are the base of every good meal indeed.",  # repeat: kept once
                "Shared text that sits in two category files at once here.",
                "_\bB_\bo_\bl_\bd soup is warm and good for a cold winter night.",
                "+--+--+--+ |  | |  | +--+--+ 12 34 56 78 90",
            ],
            "law": [
                "Shared text that sits in two category files at once here.",
                "A verbal contract is not worth the paper it is written on.",
            ],
        },
    )
    assert fortune_categories(path=tmp_path) == ["food", "law"]
    d = fortunes(path=tmp_path, min_words=4, max_words=20)
    assert d.texts == [
        "Bread and butter are the base of every good meal indeed.",
        "Bold soup is warm and good for a cold winter night.",
        "A verbal contract is not worth the paper it is written on.",
    ]
    assert d.labels == ["food", "food", "law"]
    texts, labels = d  # unpacks
    assert len(texts) == len(labels) == 3
    # the same text in one chosen category only is not ambiguous
    assert (
        "Shared text that sits in two category files at once here."
        in fortunes(categories=["law"], path=tmp_path).texts
    )


def test_fortune_errors(tmp_path):
    _write_collection(
        tmp_path, {"a": ["one two three four five six"], "b": ["seven eight nine ten eleven"]}
    )
    with pytest.raises(InvalidInputError, match="installed: a, b"):
        fortunes(categories=["c"], path=tmp_path)
    with pytest.raises(InvalidInputError, match="fewer than n_per_category=2"):
        fortunes(path=tmp_path, n_per_category=2)
    with pytest.raises(InvalidInputError, match="max_words"):
        fortunes(path=tmp_path, min_words=9, max_words=3)
    with pytest.raises(MissingDependencyError, match="apt-get install fortunes"):
        fortunes(path=tmp_path / "missing")
    (tmp_path / "a").write_bytes(b"good line\n%\nbad \xff byte\n")
    with pytest.raises(InvalidInputError, match=r"a: line 3: bytes that are not UTF-8"):
        fortunes(path=tmp_path)


@pytest.mark.skipif(
    not os.path.isdir(FORTUNES_DIR),
    reason=(
        f"Debian's fortunes are not installed at {FORTUNES_DIR}: run 'make fortunes' "
        "(sudo apt-get install fortunes)"
    ),
)
def test_installed_fortunes():
    cats = fortune_categories()
    assert {"computers", "science", "food", "law", "medicine"} <= set(cats)
    d = fortunes(categories=["science", "food", "law"], n_per_category=40, seed=3)
    assert d.counts() == {"food": 40, "law": 40, "science": 40}
    assert len(set(d.texts)) == 120
    assert all(5 <= len(t.split()) <= 60 and "  " not in t for t in d.texts)
    assert (
        d.texts == fortunes(categories=["science", "food", "law"], n_per_category=40, seed=3).texts
    )
    assert (
        d.texts != fortunes(categories=["science", "food", "law"], n_per_category=40, seed=4).texts
    )


def test_minimal_pairs():
    p = minimal_pairs()
    assert len(PHENOMENA) >= 6 and len(p) >= 1000
    assert set(p.phenomenon) == set(PHENOMENA)
    assert len(set(zip(p.good, p.bad))) == len(p)
    for good, bad, _ in p:
        assert good != bad
        # one place differs: the same words, or the same number of words with few changed
        g, b = good.split(), bad.split()
        assert sorted(g) == sorted(b) or (
            len(g) == len(b) and sum(x != y for x, y in zip(g, b)) == 1
        )
    again = minimal_pairs(seed=0)
    assert again.good == p.good and minimal_pairs(seed=1).good != p.good
    texts = p.as_texts()
    assert texts.labels.count(1) == texts.labels.count(0) == len(p)
    assert texts.groups[: len(p)] == texts.groups[len(p) :]
    with pytest.raises(InvalidInputError, match="available: agreement_relative_clause"):
        minimal_pairs(phenomena=["word_salad"])
    with pytest.raises(InvalidInputError, match="fewer than n_per_phenomenon"):
        minimal_pairs(phenomena=["anaphor"], n_per_phenomenon=10**6)


def test_read_texts_csv_and_jsonl(tmp_path):
    csv_file = tmp_path / "d.csv"
    csv_file.write_bytes('\ufefftext,label\n"Hello, world",a\nBye,b\n'.encode("utf-8"))
    d = read_texts(csv_file)
    assert d.texts == ["Hello, world", "Bye"] and d.labels == ["a", "b"]
    jl = tmp_path / "d.jsonl"
    jl.write_text('{"text": "x y", "label": 1}\n\n{"text": "z", "label": 0}\n', encoding="utf-8")
    assert read_texts(jl).labels == [1, 0]
    assert fortunes(file=jl).texts == ["x y", "z"]  # every loader reads a user's file
    assert generated_vs_human(file=csv_file).labels == ["a", "b"]


@pytest.mark.parametrize(
    "content, fmt, message",
    [
        (
            b"sentence,label\nhi,a\n",
            "csv",
            r"d\.csv: line 1: no column 'text'; the header has 'sentence', 'label'",
        ),
        (
            b"text,label\nfine,a\nbad \xe9 byte,b\n",
            "csv",
            r"d\.csv: line 3: bytes that are not UTF-8",
        ),
        (b"text,label\nonly,a\nalso,a\n", "csv", r"the labels hold 1 class\(es\) \('a'\)"),
        (b"text,label\n,a\nb,c\n", "csv", r"d\.csv: line 2: the 'text' value is empty"),
        (
            b'{"text": "a", "label": 1}\n{"text": "b"}\n',
            "jsonl",
            r"d\.jsonl: line 2: no key 'label'",
        ),
        (b'{"text": "a", "label": 1}\n{oops\n', "jsonl", r"d\.jsonl: line 2: not valid JSON"),
    ],
)
def test_read_texts_errors_name_file_and_line(tmp_path, content, fmt, message):
    f = tmp_path / f"d.{fmt}"
    f.write_bytes(content)
    with pytest.raises(InvalidInputError, match=message):
        read_texts(f)


def test_minimal_pairs_from_a_file(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("good,bad,phenomenon\nShe runs.,She run.,agreement\n", encoding="utf-8")
    p = minimal_pairs(file=f)
    assert p.good == ["She runs."] and p.phenomenon == ["agreement"]
