"""attntopo.corpus input: every format, the scan's checks, and batches that never depend on
where a run stopped (no model)."""

from __future__ import annotations

import hashlib
import io
import json
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.corpus import open_input
from attntopo.errors import InvalidInputError


def _rows(inp, batch_size=3, skip=frozenset()):
    out = []
    for k, t in inp.batches(batch_size, skip=skip):
        out.append((k, t.to_pylist()))
    return out


def _flat(inp, batch_size=3):
    return [r for _, rows in _rows(inp, batch_size) for r in rows]


def test_text_file_skips_and_counts_empty_lines(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes(b"first text\n\n   \nsecond text\r\nthird")
    inp = open_input(p)
    assert (inp.total, inp.n_empty, inp.n_records) == (3, 2, 5)
    rows = _flat(inp)
    assert [r["text"] for r in rows] == ["first text", "second text", "third"]
    assert [r["row"] for r in rows] == [0, 3, 4]  # line number − 1
    sha = hashlib.sha256(b"second text").hexdigest()
    assert rows[1]["id"] == f"3-{sha[:12]}"
    assert inp.schema.names == ["id", "row", "text"]


def test_utf8_bom_is_not_part_of_the_first_text(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes("\ufeffhello\n".encode("utf-8"))
    assert _flat(open_input(p))[0]["text"] == "hello"


def test_non_utf8_names_the_line_and_the_encoding_option(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes(b"ok line\nanother\ncaf\xe9 au lait\n")
    with pytest.raises(InvalidInputError) as e:
        open_input(p)
    msg = str(e.value)
    assert "line 3" in msg and "--encoding" in msg and "0xe9" in msg and "\n" not in msg
    # the hint works: latin-1 reads it
    assert _flat(open_input(p, encoding="latin-1"))[2]["text"] == "café au lait"


def test_csv_without_the_text_column_lists_the_columns(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("review,label\ngood,1\n")
    with pytest.raises(
        InvalidInputError, match=r"no column 'text'; its columns: 'review', 'label'"
    ):
        open_input(p)


def test_csv_carries_typed_columns_and_ids(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text('id,text,label,score,note\na1,"first, quoted",1,0.5,x\na2,,2,1,y\na3,third,3,,\n')
    inp = open_input(p, id_column="id")
    assert (inp.total, inp.n_empty) == (2, 1)
    assert inp.carried == ("label", "score", "note")
    assert [str(f.type) for f in inp.schema][3:] == ["int64", "double", "string"]
    rows = _flat(inp)
    assert rows == [
        {"id": "a1", "row": 0, "text": "first, quoted", "label": 1, "score": 0.5, "note": "x"},
        {"id": "a3", "row": 2, "text": "third", "label": 3, "score": None, "note": ""},
    ]


def test_tsv_and_wrong_field_count(tmp_path):
    p = tmp_path / "d.tsv"
    p.write_text("text\tlabel\nhello\t1\nbad line\n")
    with pytest.raises(InvalidInputError, match="line 3 has 1 fields, the header has 2"):
        open_input(p)


def _cli(*args):
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]  # PYTHONPATH=src names this checkout's source
    return subprocess.run(
        [sys.executable, "-m", "attntopo", *args],
        capture_output=True,
        text=True,
        cwd=root,
        env=dict(os.environ, ATTNTOPO_PROGRESS="0"),
        timeout=120,
    )


def test_an_unterminated_csv_quote_is_refused_with_its_line(tmp_path):
    """The issue's file: the csv module read row c into b's text ("2 done", exit 0); now the
    line where the quote opens is named, one line, exit 2, and no store is made."""
    p = tmp_path / "bq.csv"
    p.write_bytes(b'id,text\na,"fine"\nb,"never closed\nc,third\n')
    with pytest.raises(
        InvalidInputError, match=r"bq\.csv: line 3: a quote opened there is never closed"
    ) as e:
        open_input(p, id_column="id")
    assert "\n" not in str(e.value)
    r = _cli("corpus", str(p), "--id-column", "id", "--out", str(tmp_path / "Q"))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "line 3" in r.stderr, r.stderr
    assert not (tmp_path / "Q").exists()
    # text after a closing quote is ambiguous too: named by the line of its record
    p.write_bytes(b'id,text\na,"fine"\nb,"x"y\n')
    with pytest.raises(InvalidInputError, match=r"line 3: malformed CSV"):
        open_input(p, id_column="id")


def test_a_quoted_line_break_is_kept_as_written(tmp_path):
    """A quoted \\r\\n inside a field stays \\r\\n (it was stored as \\n, so the stored
    text_sha256 no longer matched the source field); the file's own line ends (\\r\\n or
    \\n) are not part of any field, and records after it keep their line numbers."""
    p = tmp_path / "crlf.csv"
    p.write_bytes(b'id,text\r\na,"one\r\ntwo"\r\nb,"three\nfour"\r\nc,five\r\nd,"x,\r\n\r\ny"\n')
    rows = _flat(open_input(p, id_column="id"))
    assert [r["text"] for r in rows] == ["one\r\ntwo", "three\nfour", "five", "x,\r\n\r\ny"]
    assert [r["row"] for r in rows] == [0, 1, 2, 3]
    assert hashlib.sha256("one\r\ntwo".encode()).hexdigest() == corpus_text_sha256(rows[0]["text"])
    p.write_bytes(b'id,text\na,"never\r\nclosed\nb,x\n')
    with pytest.raises(InvalidInputError, match="line 2: a quote opened there is never closed"):
        open_input(p, id_column="id")


def corpus_text_sha256(text):
    from attntopo.corpus import text_sha256

    return text_sha256(text)


def test_duplicate_ids_fail_before_any_work(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text(
        "\n".join(
            json.dumps(o)
            for o in [{"id": 7, "text": "a"}, {"id": 8, "text": "b"}, {"id": 7, "text": "c"}]
        )
    )
    with pytest.raises(InvalidInputError, match=r"id '7' occurs twice \(rows 0 and 2\)"):
        open_input(p, id_column="id")


def test_jsonl_errors_name_the_line(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"text": "a"}\n{"body": "b", "label": 1}\n')
    with pytest.raises(
        InvalidInputError, match=r"line 2 has no key 'text' \(its keys: body, label\)"
    ):
        open_input(p)
    p.write_text('{"text": "a"}\nnot json\n')
    with pytest.raises(InvalidInputError, match="line 2 is not JSON"):
        open_input(p)
    p.write_text('{"text": 5}\n')
    with pytest.raises(InvalidInputError, match="not a string"):
        open_input(p)


def test_jsonl_carries_keys_found_on_any_line(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"text": "a", "label": 1}\n\n{"text": "b", "extra": "x", "label": 2}\n')
    inp = open_input(p)
    assert inp.carried == ("label", "extra") and inp.n_empty == 1
    assert [(r["label"], r["extra"]) for r in _flat(inp)] == [(1, None), (2, "x")]


def test_mixed_types_in_a_column_are_refused(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"text": "a", "label": 1}\n{"text": "b", "label": "x"}\n')
    with pytest.raises(InvalidInputError, match="label"):
        open_input(p)


def test_reserved_column_is_refused(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("text,status\na,b\n")
    with pytest.raises(InvalidInputError, match="'status' clashes"):
        open_input(p)


def test_an_id_column_without_id_column_is_told_to_pass_it(tmp_path):
    """A CSV (or JSONL) with an ``id`` column and no ``--id-column`` had been told to rename
    the column; what its user wants is to pass ``--id-column id`` (issue 33)."""
    want = (
        "column 'id' clashes with the ids the store writes: pass --id-column id "
        "(id_column='id' in Python) to make it the ids, or rename it"
    )
    p = tmp_path / "d.csv"
    p.write_text("id,text\nf1,a first text\nf2,a second\n")
    with pytest.raises(InvalidInputError) as e:
        open_input(p)
    assert str(e.value) == f"{p}: {want}"
    assert [r["id"] for r in _flat(open_input(p, id_column="id"))] == ["f1", "f2"]  # as it says
    j = tmp_path / "d.jsonl"
    j.write_text('{"id": "f1", "text": "a"}\n')
    with pytest.raises(InvalidInputError, match="pass --id-column id"):
        open_input(j)


@pytest.mark.parametrize("end", [b"\r", b"\n", b"\r\n"])
def test_old_mac_line_ends_split_like_universal_newlines(tmp_path, end):
    """A file of CR-only line ends (old Mac) had become one text with no warning; lines now
    end as in Python's universal newlines (``\\n``, ``\\r\\n``, ``\\r``), so the three
    conventions give the same texts, rows and fingerprint, in every line-based format."""
    lines = [b"first text", b"", b"second text", b"third"]
    t = tmp_path / "t.txt"
    t.write_bytes(end.join(lines) + end)
    inp = open_input(t)
    assert [(r["row"], r["text"]) for r in _flat(inp)] == [
        (0, "first text"),
        (2, "second text"),
        (3, "third"),
    ]
    assert (inp.total, inp.n_empty) == (3, 1)
    ref = tmp_path / "ref.txt"
    ref.write_bytes(b"\n".join(lines) + b"\n")
    assert inp.fingerprint == open_input(ref).fingerprint
    j = tmp_path / "t.jsonl"
    j.write_bytes(end.join([b'{"text": "a"}', b'{"text": "b"}']) + end)
    assert [r["text"] for r in _flat(open_input(j))] == ["a", "b"]
    c = tmp_path / "t.csv"
    c.write_bytes(end.join([b"text,n", b'"one' + end + b'two",1', b"three,2"]) + end)
    assert [(r["text"], r["n"]) for r in _flat(open_input(c))] == [
        ("one" + end.decode() + "two", 1),
        ("three", 2),
    ]


def test_a_lone_cr_inside_a_line_ends_it(tmp_path):
    """Within a file of \\n lines a lone \\r ends a line too (as ``open()`` reads it); the
    \\r of a \\r\\n does not."""
    t = tmp_path / "t.txt"
    t.write_bytes(b"a\rb\r\nc\n\rd")
    assert [(r["row"], r["text"]) for r in _flat(open_input(t))] == [
        (0, "a"),
        (1, "b"),
        (2, "c"),
        (4, "d"),
    ]


def test_parquet_dataframe_and_arrow_give_the_same_rows(tmp_path):
    df = pd.DataFrame({"text": ["one", None, "three", ""], "label": [1, 2, 3, 4]})
    p = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), p)
    a, b, c = (
        open_input(p),
        open_input(df),
        open_input(pa.Table.from_pandas(df, preserve_index=False)),
    )
    assert _flat(a) == _flat(b) == _flat(c)
    assert a.fingerprint == b.fingerprint == c.fingerprint
    assert (a.total, a.n_empty) == (2, 2)
    pq.write_table(pa.table({"text": [1, 2]}), p)
    with pytest.raises(InvalidInputError, match="holds int64, not strings"):
        open_input(p)


def test_stdin_is_read_once_and_streamed_twice(monkeypatch):
    fake = io.TextIOWrapper(io.BytesIO(b"alpha\n\nbeta\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", fake)
    with open_input("-") as inp:
        assert inp.name == "stdin" and inp.total == 2
        assert [r["text"] for r in _flat(inp)] == ["alpha", "beta"]
        tmp = inp._tmp
    assert tmp is None or not __import__("os").path.exists(tmp)


def test_bad_sources():
    with pytest.raises(InvalidInputError, match="texts\\[1\\] is a int"):
        open_input(["a", 3])
    with pytest.raises(InvalidInputError, match="not found"):
        open_input("/no/such/file.txt")
    with pytest.raises(InvalidInputError, match="unknown input format"):
        open_input(["a"], input_format="xml")
    with pytest.raises(InvalidInputError, match="unknown encoding"):
        open_input(["a"], encoding="klingon")


def test_fingerprint_follows_the_content():
    a = open_input(["x", "y"]).fingerprint
    assert a == open_input(["x", "y"]).fingerprint
    assert a != open_input(["x", "z"]).fingerprint
    assert a != open_input(["y", "x"]).fingerprint


texts_st = st.lists(
    st.one_of(st.sampled_from(["", "  ", None]), st.text(min_size=1, max_size=8)), max_size=40
)


@settings(max_examples=60, deadline=None)
@given(texts=texts_st, batch_size=st.integers(1, 7), data=st.data())
def test_batches_partition_the_non_empty_texts_in_order(texts, batch_size, data):
    """Batch k holds non-empty texts k·b … (k+1)·b − 1; skipping batches changes no other batch."""
    inp = open_input(texts)
    keep = [(i, t) for i, t in enumerate(texts) if t is not None and t.strip()]
    assert inp.total == len(keep) and inp.n_empty == len(texts) - len(keep)
    full = _rows(inp, batch_size)
    assert [k for k, _ in full] == list(range(inp.batch_count(batch_size)))
    flat = [r for _, rows in full for r in rows]
    assert [(r["row"], r["text"]) for r in flat] == keep
    assert all(len(rows) == batch_size for _, rows in full[:-1])
    assert len({r["id"] for r in flat}) == len(flat)
    skip = set(data.draw(st.lists(st.integers(0, max(0, len(full) - 1)), max_size=4)))
    assert _rows(inp, batch_size, skip=skip) == [b for b in full if b[0] not in skip]


# ------------------------------------------------------------------ (prompt, answer) pairs
def _pair_frames():
    return pd.DataFrame(
        {
            "q": ["What is 2 + 2?", "", "Who wrote Hamlet?"],
            "a": ["It is 4.", None, "Shakespeare."],
            "label": [0, 1, 1],
        }
    )


def test_pairs_from_every_format_give_the_same_rows(tmp_path):
    """answer_column: the text column is the prompt, the answer its own batch column (never
    carried), from CSV, TSV, JSONL, Parquet, a DataFrame and an Arrow table alike; an empty
    prompt is an empty record; default ids hold both hashes."""
    df = _pair_frames()
    (tmp_path / "p.csv").write_text(
        'q,a,label\n"What is 2 + 2?",It is 4.,0\n,,1\nWho wrote Hamlet?,Shakespeare.,1\n'
    )
    (tmp_path / "p.tsv").write_text(
        "q\ta\tlabel\nWhat is 2 + 2?\tIt is 4.\t0\n\t\t1\nWho wrote Hamlet?\tShakespeare.\t1\n"
    )
    (tmp_path / "p.jsonl").write_text(
        "\n".join(json.dumps(r) for r in df.to_dict("records")) + "\n"
    )
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "p.parquet")
    sources = [
        tmp_path / "p.csv",
        tmp_path / "p.tsv",
        tmp_path / "p.jsonl",
        tmp_path / "p.parquet",
        df,
        pa.Table.from_pandas(df, preserve_index=False),
    ]
    h = lambda s: hashlib.sha256(s.encode()).hexdigest()[:12]  # noqa: E731
    for src in sources:
        inp = open_input(src, text_column="q", answer_column="a")
        assert (inp.total, inp.n_empty) == (2, 1), src
        assert inp.schema.names[:4] == ["id", "row", "text", "answer"] and inp.carried == ("label",)
        rows = _flat(inp)
        assert [(r["text"], r["answer"], r["label"]) for r in rows] == [
            ("What is 2 + 2?", "It is 4.", 0),
            ("Who wrote Hamlet?", "Shakespeare.", 1),
        ]
        assert [r["id"] for r in rows] == [
            f"0-{h('What is 2 + 2?')}-{h('It is 4.')}",
            f"2-{h('Who wrote Hamlet?')}-{h('Shakespeare.')}",
        ]


def test_a_changed_answer_is_another_record():
    df = _pair_frames()
    a = open_input(df, text_column="q", answer_column="a")
    changed = df.copy()
    changed.loc[2, "a"] = "Marlowe."
    b = open_input(changed, text_column="q", answer_column="a")
    assert a.fingerprint != b.fingerprint
    assert _flat(a)[0]["id"] == _flat(b)[0]["id"] and _flat(a)[1]["id"] != _flat(b)[1]["id"]
    # the same data read as texts (the answer carried) is another input too
    assert open_input(df, text_column="q").fingerprint != a.fingerprint


@pytest.mark.parametrize(
    "answer, what",
    [
        (None, "has no answer"),
        ("  ", "has no answer"),
        (7, "has a int, not a string, as its answer"),
    ],
)
def test_a_prompt_without_its_answer_names_the_line(tmp_path, answer, what):
    p = tmp_path / "p.jsonl"
    p.write_text(
        json.dumps({"q": "Fine?", "a": "Yes."})
        + "\n"
        + json.dumps({"q": "And this?", "a": answer})
        + "\n"
    )
    with pytest.raises(InvalidInputError, match=rf"p.jsonl: line 2 {what} in column 'a'"):
        open_input(p, text_column="q", answer_column="a")
    p.write_text(
        json.dumps({"q": "Fine?", "a": "Yes."}) + "\n" + json.dumps({"q": "And this?"}) + "\n"
    )
    with pytest.raises(InvalidInputError, match=r"line 2 has no answer in column 'a'"):
        open_input(p, text_column="q", answer_column="a")


@pytest.mark.parametrize("column", ["a", "q", "source"])
def test_a_dataframe_column_of_mixed_types_is_one_line(column):
    """A column with a number among strings (an answer, a prompt or a carried column) was
    pyarrow's ArrowTypeError from the conversion, before any record was read."""
    df = pd.DataFrame({"q": ["x?", "y?"], "a": ["Paris.", "Lima."], "source": ["web", "book"]})
    df[column] = df[column].astype(object)
    df.loc[1, column] = 5
    with pytest.raises(InvalidInputError) as e:
        open_input(df, text_column="q", answer_column="a")
    assert f"a DataFrame of 2 rows: column '{column}' mixes int, str values" in str(e.value)
    assert "\n" not in str(e.value)


def test_bad_answer_columns_are_one_line(tmp_path):
    df = _pair_frames()
    with pytest.raises(InvalidInputError, match=r"has no column 'answer'.*--answer-column"):
        open_input(df, text_column="q", answer_column="answer")
    with pytest.raises(InvalidInputError, match="applies to JSONL, CSV, Parquet and tables"):
        open_input(["a text"], answer_column="a")
    with pytest.raises(InvalidInputError, match="is also the text column"):
        open_input(df, text_column="q", answer_column="q")
    with pytest.raises(InvalidInputError, match=r"column 'a' holds int64, not strings"):
        open_input(pd.DataFrame({"q": ["x"], "a": [1]}), text_column="q", answer_column="a")
    with pytest.raises(
        InvalidInputError, match=r"column 'answer_sha256' clashes with a column a store of pairs"
    ):
        open_input(df.assign(answer_sha256="x"), text_column="q", answer_column="a")
    # without pairs, a column named "answer" is an ordinary carried column
    assert "answer" in open_input(df.rename(columns={"a": "answer"}), text_column="q").carried


def test_a_list_of_pairs_is_told_how_a_corpus_takes_pairs():
    """attntopo.features takes a list of (prompt, answer) pairs; a corpus took it for texts and
    said only "each text must be a string".  The line now says how to give the pairs, and that
    way works."""
    pairs = [("What is 2 + 2?", "It is 4."), ("Who wrote Hamlet?", "Shakespeare.")]
    for listed in (pairs, [list(p) for p in pairs]):
        with pytest.raises(InvalidInputError) as e:
            open_input(listed)
        kind = type(listed[0]).__name__
        assert str(e.value) == (
            f"texts[0] is a {kind}: each text must be a string; (prompt, answer) pairs go in "
            "as a table: pandas.DataFrame(pairs, columns=['prompt', 'answer']) with "
            "text_column='prompt', answer_column='answer'"
        )
    inp = open_input(
        pd.DataFrame(pairs, columns=["prompt", "answer"]),
        text_column="prompt",
        answer_column="answer",
    )
    rows = [r for _, t in inp.batches(4) for r in t.to_pylist()]
    assert [(r["text"], r["answer"]) for r in rows] == pairs
    # anything else is a text of the wrong type, as before
    with pytest.raises(
        InvalidInputError, match=r"^texts\[1\] is a tuple: each text must be a string$"
    ):
        open_input(["a text", ("a", "b", "c")])
