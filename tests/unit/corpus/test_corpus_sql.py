"""SQL over a store without a model: results read a batch at a time, DuckDB's memory limit,
and DuckDB's errors as one line that says what can be done (issue 33: the expression-depth
error said to ``SET max_expression_depth``, which is locked; ``SELECT L0H0.js.h0.total_persistence``
got a hint naming another column)."""

from __future__ import annotations

import json

import duckdb
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from _stores import small_store
from attntopo.corpus._sql import ROWS_PER_BATCH, json_safe_rows
from attntopo.errors import InvalidInputError
from attntopo.io import json_safe


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("sql") / "s", [f"text {i}" for i in range(9)])


def _error(store, sql: str) -> str:
    with pytest.raises(InvalidInputError) as e:
        store.sql(sql)
    line = str(e.value)
    assert "\n" not in line and line.startswith("SQL: ")
    return line


def test_batches_are_bounded_and_hold_the_whole_result(store):
    reader = store.sql_batches("SELECT i FROM range(10000) t(i)")
    sizes = [b.num_rows for b in reader]
    assert sum(sizes) == 10000 and max(sizes) <= ROWS_PER_BATCH
    whole = store.sql("SELECT * FROM corpus ORDER BY row", arrow=True)
    assert store.sql_batches("SELECT * FROM corpus ORDER BY row").read_all().equals(whole)


def test_json_rows_are_json_safe_of_the_values(store):
    sql = "SELECT * EXCLUDE (text_sha256), 'inf'::DOUBLE AS x FROM corpus ORDER BY row"
    reader = store.sql_batches(sql, json_rows=True)
    assert json.loads(reader.schema.metadata[b"columns"]) == store.sql(sql).columns.tolist()
    got = [json.loads(t) for b in reader for t in b.column(0).to_pylist()]
    assert got == json_safe(store.sql(sql, arrow=True).to_pylist())


_values = st.one_of(
    st.floats(),
    # text a store can hold: UTF-8, so no lone surrogates (category Cs), and no NUL
    st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))),
    st.lists(st.floats(), max_size=3),
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
)
# column names: a few that collide (also but for case), and any text DuckDB takes as a name
_names = st.one_of(
    st.sampled_from(["a", "A", "id", "ID", "É", "é", "k", "\u212a", "ß", "SS"]),
    st.text(
        alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)),
        min_size=1,
        max_size=6,
    ),
)


def _literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, float):
        return f"'{v!r}'::DOUBLE"
    if isinstance(v, list):
        return "[" + ", ".join(_literal(x) for x in v) + "]::DOUBLE[]"
    # parenthesized: SQL reads -9223372036854775808::BIGINT as -(9223372036854775808::BIGINT),
    # which overflows; the literal itself is a valid BIGINT
    return f"({v})::BIGINT"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_names, _values), min_size=1, max_size=4))
@example([("c0", -(2**63))])  # the smallest BIGINT: was written as a literal that overflows
@example([("a", 1), ("a", 2)])  # JSON rows held {"a": 1, "a_1": 2}; DataFrames a, a_1
@example([("a", 1), ("A", 2)])  # DuckDB takes them as one name: the same
@example([("É", 1.5), ("é", None), ("\u212a", 2), ("k", 3)])  # distinct to DuckDB: kept
def test_every_value_comes_back_under_its_own_name(store, columns):
    """Each value as an SQL literal under a drawn name: where the names are distinct (as
    DuckDB compares them: ASCII case folded), DuckDB's to_json through json_safe_rows reads
    back as json_safe(value) under its name (NaN and infinities, in lists too, as strings, text
    unchanged), and so do sql()'s DataFrame and Arrow table; where two share a name, every
    form is refused with one line naming them."""
    names = [n for n, _ in columns]
    sql = "SELECT " + ", ".join(
        f'{_literal(v)} AS "{n.replace(chr(34), chr(34) * 2)}"' for n, v in columns
    )
    reads = {
        "json": lambda: store.sql_batches(sql, json_rows=True).read_all(),
        "batches": lambda: store.sql_batches(sql).read_all(),
        "pandas": lambda: store.sql(sql),
        "arrow": lambda: store.sql(sql, arrow=True),
    }
    ascii_folded = {"".join(c.lower() if c.isascii() else c for c in n) for n in names}
    if len(ascii_folded) < len(names):
        # DuckDB itself takes two of them as one name: it renames the later one
        assert duckdb.connect().sql(sql).df().columns.tolist() != names
        for read in reads.values():
            with pytest.raises(InvalidInputError) as e:
                read()
            line = str(e.value)
            assert "\n" not in line
            assert line.startswith("SQL: columns of the result share a name (")
            assert "name them apart with AS" in line
        return
    want = json_safe(dict(columns))
    [text] = reads["json"]().column(0).to_pylist()
    assert json.loads(text) == want and list(json.loads(text)) == names
    for form in ("batches", "arrow"):
        [row] = reads[form]().to_pylist()
        assert list(row) == names and json_safe(row) == want
    df = reads["pandas"]()
    assert list(df.columns) == names


def test_two_columns_of_one_name_are_refused_naming_them(store):
    """``SELECT 1 AS a, 2 AS a`` gave JSON rows {"a": 1, "a_1": 2} under columns [a, a], and
    a DataFrame with columns a, a_1: refused before any row is read, in every form."""
    cases = {
        "SELECT 1 AS a, 2 AS a": '2 named "a"',
        "SELECT 1 AS a, 2 AS A, 3 AS b": '2 named "a" ("a", "A": equal but for case)',
        "SELECT 1, 1": '2 named "1"',
    }
    for sql, named in cases.items():
        first = named.split('"')[1]
        want = (
            f"SQL: columns of the result share a name ({named}): name them apart with AS, "
            f'e.g. SELECT … AS "{first}", … AS "{first}_2"; JSON rows, DataFrames and CSV '
            "headers hold one value per name"
        )
        for read in (
            lambda: store.sql(sql),
            lambda: store.sql(sql, arrow=True),
            lambda: store.sql_batches(sql),
            lambda: store.sql_batches(sql, json_rows=True),
        ):
            with pytest.raises(InvalidInputError) as e:
                read()
            assert str(e.value) == want
    with pytest.raises(InvalidInputError) as e:
        store.sql("SELECT * FROM corpus c1, corpus c2")
    assert str(e.value).startswith(
        'SQL: columns of the result share a name (2 named "id"; 2 named "row"; 2 named '
        '"text_sha256"; 2 named "text"; 2 named "n_tokens"; and 30 more names): name them '
        'apart with AS, e.g. SELECT … AS "id", … AS "id_2";'
    )
    # what the line says to do works
    got = store.sql("SELECT c1.id, c2.id AS id_2 FROM corpus c1, corpus c2 LIMIT 1")
    assert list(got.columns) == ["id", "id_2"]


def test_json_safe_rows_leaves_strings_alone():
    rows = ['{"a":NaN,"b":"NaN","c":[-Infinity,Infinity],"d":"x\\"NaN\\"Infinity"}']
    assert json.loads(json_safe_rows(rows)[0]) == {
        "a": "nan",
        "b": "NaN",
        "c": ["-inf", "inf"],
        "d": 'x"NaN"Infinity',
    }


def test_the_expression_depth_error_says_what_to_do_instead_of_set(store):
    for sql in (
        "SELECT " + "(" * 1200 + "1" + ")" * 1200,
        "SELECT " + " + ".join(["1"] * 1200),
        "SELECT " + " + ".join(['"L0H0.js.h0.entropy"'] * 1200) + " FROM corpus",
    ):
        line = _error(store, sql)
        assert "Max expression depth limit of 1000 exceeded" in line
        assert "SET" not in line and "max_expression_depth" not in line
        assert line.endswith(
            "(the limit is fixed: nest less, e.g. list_sum([a, b, c, …]) for a "
            "long chain of +, or split the query)"
        )
    # what the line says to do works
    got = store.sql(
        "SELECT list_sum([" + ", ".join(['"L0H0.js.h0.entropy"'] * 1200) + "]) AS x, "
        '"L0H0.js.h0.entropy" AS e FROM corpus'
    )
    assert list(got["x"]) == pytest.approx(list(1200 * got["e"]), rel=1e-12)


@pytest.mark.parametrize(
    ("written", "hint"),
    [
        ("L0H0.js.h0.total_persistence", ': "L0H0.js.h0.total_persistence")'),
        ("L0H3.js.h1.entropy", ': "L0H3.js.h1.entropy")'),
        ("l0h3.js.h1.max_persistence", ': "L0H3.js.h1.max_persistence")'),
        ("L0H0.js.h1.betti_0.5", ': "L0H0.js.h1.betti_0.5")'),
        ("L0H0.js.h0.death_q0.5", ': "L0H0.js.h0.death_q0.5")'),
    ],
)
def test_an_unquoted_feature_column_gets_a_hint_naming_it(store, written, hint):
    for sql in (
        f"SELECT {written} FROM corpus",
        f"SELECT id, {written} + 1 AS x FROM corpus",
        f'SELECT "L0H0.js.h0.n_bars" FROM corpus WHERE {written} > 0',
    ):
        line = _error(store, sql)
        tip = " (feature column names hold dots: write them in double quotes"
        assert line.endswith(tip + hint), line
    quoted = '"' + hint.split('"')[1] + '"'
    assert len(store.sql(f"SELECT {quoted} FROM corpus")) == 9


def test_an_unquoted_name_that_is_no_column_is_told_so(store):
    line = _error(store, "SELECT L0H0.js.h0.total_persistance FROM corpus")
    assert (
        'the store has no column "L0H0.js.h0.total_persistance": those of L0H0.js.h0 end in '
        "n_bars, total_persistence, max_persistence" in line
    )
    line = _error(store, "SELECT L5H1.js.h0.total_persistence FROM corpus")
    assert 'no column "L5H1.js.h0.total_persistence": its columns start with L0H0, L0H3)' in line


def test_memory_limit(store):
    with pytest.raises(
        InvalidInputError,
        match=r"^memory_limit must be a size such as 512MB, 2GB "
        r"or 1.5GiB, got '2 gigs'$",
    ):
        store.sql("SELECT 1", memory_limit="2 gigs")
    with pytest.raises(InvalidInputError, match="^memory_limit must be at least 32MB, got 1000$"):
        store.sql("SELECT 1", memory_limit=1000)
    setting = "SELECT current_setting('memory_limit') AS m"
    assert store.sql(setting)["m"][0] == "953.6 MiB"  # the default, 1GB
    assert store.sql(setting, memory_limit="2GiB")["m"][0] == "2.0 GiB"
    line = _error(store, "SET memory_limit = '100GB'")
    assert "configuration has been locked" in line and "--allow-external" in line
    with pytest.raises(InvalidInputError) as e:
        store.sql("SELECT list(i) FROM range(20000000) t(i)", memory_limit="64MB")
    line = str(e.value)
    assert "Out of Memory" in line and "SET " not in line and "\n" not in line
    assert (
        "needs more than memory_limit 64MB: raise it, e.g. --memory-limit 4GB, "
        'memory_limit="4GB" in Python'
    ) in line


@pytest.fixture(scope="module")
def zigzag_store(tmp_path_factory):
    """A store with the zigzag set: its columns are the text's (``L*H*.zigzag.…``)."""
    import dataclasses

    from _stores import SETTINGS

    fs = dataclasses.replace(SETTINGS.features, sets=("js", "zigzag"))
    settings = dataclasses.replace(SETTINGS, features=fs)
    return small_store(tmp_path_factory.mktemp("zz") / "s", ["a", "b", "c"], settings=settings)


def test_an_unquoted_per_text_column_gets_the_hint_too(zigzag_store):
    """``L*H*.zigzag.h0.n_bars`` unquoted (a parser error: ``*`` multiplies) got no hint, and
    ``L0H3.zigzag.h0.n_bars`` was told the heads' prefixes, not the text's column."""
    tip = " (feature column names hold dots: write them in double quotes"
    for sql in (
        "SELECT L*H*.zigzag.h0.n_bars FROM corpus",
        "SELECT 2*L*H*.zigzag.h0.n_bars FROM corpus",
        'SELECT "L0H0.js.h0.n_bars" FROM corpus WHERE l*h*.zigzag.h0.n_bars > 0',
    ):
        line = _error(zigzag_store, sql)
        assert line.endswith(tip + ': "L*H*.zigzag.h0.n_bars")'), line
    line = _error(zigzag_store, "SELECT L0H3.zigzag.h1.n_bars FROM corpus")
    assert line.endswith(
        tip + '; the store has no column "L0H3.zigzag.h1.n_bars": the zigzag set has one '
        'value per text, not per head: "L*H*.zigzag.h1.n_bars")'
    ), line
    assert len(zigzag_store.sql('SELECT "L*H*.zigzag.h1.n_bars" FROM corpus')) == 3
