"""SQL over a corpus store: DuckDB's memory limit, results read batch by batch, and DuckDB's
errors as one line that says what to do (the confined connection's configuration is locked,
so DuckDB's own advice, ``SET …``, cannot be followed)."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from .._validation import check_byte_size, format_bytes

#: DuckDB's ``memory_limit`` for :meth:`StoreReader.sql` and ``attntopo query`` unless the caller
#: gives one: joins, sorts and aggregates beyond it spill to a private temporary folder or stop
#: with one line that says how to raise it.
QUERY_MEMORY_LIMIT = "1GB"
#: the least ``memory_limit`` accepted: DuckDB cannot run a query in much less
MIN_MEMORY_LIMIT = 32 * 1000**2
#: rows per batch of a streamed result (DuckDB's vector size): a batch of wide rows (texts,
#: diagrams) stays small
ROWS_PER_BATCH = 2048
#: the one column of :meth:`StoreReader.sql_batches` with ``json_rows=True``
JSON_COLUMN = "json"
_ROW = "__attntopo_row__"  # the alias of the query under its JSON rows


def check_memory_limit(value: Any, *, name: str = "memory_limit") -> int:
    """``value`` (``"2GB"``, ``"512MB"``, an int of bytes) in bytes, at least 32MB; else one
    line."""
    return check_byte_size(value, name, lo=MIN_MEMORY_LIMIT)


def sql_message(
    error: Exception, query: str, columns: list[str], *, allow_external: bool, memory_limit: int
) -> str:
    """DuckDB's ``error`` as one line with what to do instead of what DuckDB suggests."""
    msg = " ".join(str(error).split())
    if "Out of Memory" in msg:
        msg = msg.split(" Possible solutions:")[0]
        msg += (
            f" (the query needs more than memory_limit {format_bytes(memory_limit)}: raise it, "
            f'e.g. --memory-limit 4GB, memory_limit="4GB" in Python, or read fewer rows or '
            "columns)"
        )
    depth = re.search(r"\s*Use \"SET max_expression_depth TO x\"[^.]*\.", msg)
    if depth:  # the parser stops before any SET could run, and the setting is locked
        msg = (
            msg[: depth.start()] + " (the limit is fixed: nest less, e.g. "
            "list_sum([a, b, c, …]) for a long chain of +, or split the query)" + msg[depth.end() :]
        )
    msg += _dotted_hint(msg, query, columns)
    if not allow_external and ("Permission Error" in msg or "configuration has been locked" in msg):
        msg += (
            " (a query reads the store's rows only, the view corpus: --allow-external, "
            "allow_external=True in Python, lets it reach other files)"
        )
    return f"SQL: {msg}"


def same_name_key(name: str) -> str:
    """What DuckDB compares when it matches column names: the name with ASCII letters lowered
    (``a`` and ``A`` are one name to it; ``É`` and ``é``, ``k`` and ``\u212a`` are two)."""
    return name.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def duplicate_names_message(names: list[str]) -> str | None:
    """One line for a result whose columns share a name (as DuckDB compares names:
    :func:`same_name_key`), or None where every name is its own.  Rows keyed by name would keep
    one value under another's name (DuckDB's JSON rows and pandas rename the later ones
    ``a_1``; ``dict`` and ``to_pylist`` keep the last), and a table or CSV header cannot say
    which column is which."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(same_name_key(name), []).append(name)
    shared = [g for g in groups.values() if len(g) > 1]
    if not shared:
        return None

    def said(group: list[str]) -> str:
        named = f"{len(group)} named {_shown(group[0])}"
        if len(set(group)) == 1:
            return named
        return f"{named} ({', '.join(map(_shown, group))}: equal but for case)"

    listed = "; ".join(said(g) for g in shared[:5])
    if len(shared) > 5:
        listed += f"; and {len(shared) - 5} more names"
    first = shared[0][0] if shared[0][0].isprintable() else "x"
    return (
        f"SQL: columns of the result share a name ({listed}): name them apart with AS, e.g. "
        f"SELECT … AS {_identifier(first)}, … AS {_identifier(first + '_2')}; JSON rows, "
        "DataFrames and CSV headers hold one value per name"
    )


def _shown(name: str) -> str:
    """A column name in a message: in double quotes, on one line."""
    return json.dumps(name, ensure_ascii=False)


def _identifier(name: str) -> str:
    """``name`` as an SQL identifier (in double quotes: keywords and dots are names too)."""
    return '"' + name.replace('"', '""') + '"'


def _dotted_hint(msg: str, query: str, columns: list[str]) -> str:
    """DuckDB read ``L0H0.js.h1.total_persistence`` as the column ``total_persistence`` of a
    table ``L0H0.js.h1`` (``…betti_0.5`` as a syntax error): the hint names the feature column
    the query wrote, quoted, or says that there is none of that name."""
    if "Binder Error" not in msg and "Parser Error" not in msg:
        return ""
    tip = " (feature column names hold dots: write them in double quotes"
    # the names the query wrote unquoted: quoted names and strings blanked out
    query = re.sub(r'"(?:[^"]|"")*"|\'(?:[^\']|\'\')*\'', lambda q: " " * len(q.group(0)), query)
    # a head's columns (L3H7.…) and a text's (L*H*.zigzag.…, where * multiplies unquoted)
    names = re.findall(r"(?<![\w.])L(?:\d+|\*)H(?:\d+|\*)\.[\w.]+", query, re.IGNORECASE)
    written = [w.rstrip(".") for w in names]
    exact = {c.lower(): c for c in columns}
    for w in written:
        if w.lower() in exact:
            return f'{tip}: "{exact[w.lower()]}")'
    table = re.search(r'Referenced table "(L\d+H\d+(?:\.[^".]+)*)" not found', msg, re.IGNORECASE)
    if not table or not written:
        return ""
    prefix = table.group(1)
    said = next((w for w in written if w.lower().startswith(prefix.lower())), written[0])
    starts = [c for c in columns if c.lower().startswith(prefix.lower() + ".")]
    per_text = exact.get("l*h*." + said.split(".", 1)[1].lower())
    if not starts and per_text is not None:  # a set with one value per text, named for a head
        set_name = per_text.split(".")[1]
        return (
            f'{tip}; the store has no column "{said}": the {set_name} set has one value per '
            f'text, not per head: "{per_text}")'
        )
    if not starts:
        heads = sorted({c.split(".")[0] for c in columns})
        return (
            f'{tip}; the store has no column "{said}": its columns start with {", ".join(heads)})'
        )
    ends = ", ".join(c[len(prefix) + 1 :] for c in starts[:8]) + (", …" if len(starts) > 8 else "")
    return (
        f'{tip}; the store has no column "{said}": those of {starts[0][: len(prefix)]} '
        f"end in {ends})"
    )


def json_rows_of(relation: Any) -> Any:
    """``relation``'s rows as JSON objects (one VARCHAR column, :data:`JSON_COLUMN`), written
    by DuckDB (NaN and infinities as DuckDB writes them: :func:`json_safe_rows` fixes them)."""
    return relation.query(_ROW, f'SELECT to_json("{_ROW}")::VARCHAR AS {JSON_COLUMN} FROM "{_ROW}"')


_NONFINITE = re.compile(r'("(?:[^"\\]|\\.)*")|-?Infinity|NaN')
_SAFE = {"NaN": '"nan"', "Infinity": '"inf"', "-Infinity": '"-inf"'}


def json_safe_rows(rows: list[str]) -> list[str]:
    """JSON texts from DuckDB with ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON) written
    as attntopo writes them everywhere: the strings ``"nan"``, ``"inf"``, ``"-inf"``
    (:func:`attntopo.io.json_safe`); text inside strings is left alone."""

    def fix(text: str) -> str:
        return _NONFINITE.sub(lambda m: m.group(1) or _SAFE[m.group(0)], text)

    return [fix(r) if "NaN" in r or "Infinity" in r else r for r in rows]


def batches(
    cursor: Any,
    relation: Any,
    error: Any,
    *,
    json_rows: bool = False,
    rows_per_batch: int = ROWS_PER_BATCH,
) -> Any:
    """``relation``'s result as a :class:`pyarrow.RecordBatchReader` read from DuckDB as it
    goes (``rows_per_batch`` rows at a time); a DuckDB error while reading is ``error(e)``
    (raised); ``cursor`` is closed once the reader is done.  ``json_rows``: the query's
    relation, read as :func:`json_rows_of` (through :func:`json_safe_rows`), its column names
    kept as a JSON list in the schema's metadata ``columns``."""
    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    def safe(batch: Any) -> Any:
        col = batch.column(0)
        if not pc.any(pc.match_substring_regex(col, "NaN|Infinity")).as_py():
            return batch
        fixed = pa.array(json_safe_rows(col.to_pylist()), col.type)
        return pa.RecordBatch.from_arrays([fixed], names=[JSON_COLUMN])

    try:
        columns = relation.columns
        if json_rows:
            relation = json_rows_of(relation)
        reader = relation.to_arrow_reader(rows_per_batch)
    except duckdb.Error as e:
        cursor.close()
        raise error(e) from None

    def read() -> Iterator[Any]:
        try:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except (duckdb.Error, pa.ArrowException, OSError) as e:
                    # DuckDB's error, met while reading, reaches the Arrow reader as an OSError
                    raise error(e) from None
                yield safe(batch) if json_rows else batch
        finally:
            cursor.close()

    schema = reader.schema
    if json_rows:
        schema = schema.with_metadata({"columns": json.dumps(columns, ensure_ascii=False)})
    return pa.RecordBatchReader.from_batches(schema, read())
