"""``attntopo query``: SQL (DuckDB) over a corpus store, printed as a table, JSON or CSV.

The result is read a batch at a time (:meth:`~attntopo.corpus.StoreReader.sql_batches`) and
never held whole: the table shows the first ``--rows`` rows and counts the rest; ``--csv`` and
``--json`` write the rows as they come, on stdout or atomically into ``--output FILE``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Iterator

import typer

from .. import __version__
from ..errors import InvalidInputError
from ._common import check_writable_parent
from ._options import command, nonblank_path
from ._output import plural, print_table
from ._table import data_table

_QUERY_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo query store "SELECT status, count(*) FROM corpus GROUP BY status"\n'
    '  attntopo query store \'SELECT id, "L0H0.js.h1.total_persistence" AS h1 FROM corpus ORDER '
    'BY h1 DESC LIMIT 5\'\n  attntopo query store "SELECT * FROM corpus" --csv --output '
    "rows.csv\n\nThe store's rows are the view [bold]corpus[/bold]; feature columns have dots in "
    "their names, so quote them in double quotes. docs/corpus.md lists the columns. A query sees "
    "the store only: read_csv of other files, COPY … TO and ATTACH are refused unless "
    "--allow-external is given. Results are streamed: the table shows the first --rows rows and "
    "counts the rest; --csv and --json print every row as it comes."
)
DEFAULT_ROWS = 100


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:.6g}"
    return str(v)


_HELPS = {  # the shared options in this command's words
    "json_out": 'Print JSON on stdout: the rows as a list of objects under "rows", written as '
    "they come.",
}


@command("query", epilog=_QUERY_EPILOG, helps=_HELPS)
def query_cmd(
    store: Annotated[
        str, typer.Argument(metavar="STORE", show_default=False, help="A corpus store folder.")
    ],
    sql: Annotated[
        str,
        typer.Argument(
            metavar="SQL",
            show_default=False,
            help="A DuckDB query over the view 'corpus'.",
        ),
    ],
    csv_out: Annotated[
        bool,
        typer.Option(
            "--csv",
            help="Print CSV on stdout (a header line, then every row, written as they come).",
        ),
    ] = False,
    json_out=False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            parser=nonblank_path,
            metavar="FILE",
            show_default=False,
            help="Write the --csv or --json output into FILE instead of stdout, atomically: FILE "
            "appears whole once every row is written, never half-written.",
        ),
    ] = None,
    rows: Annotated[
        int,
        typer.Option(
            "--rows",
            metavar="N",
            min=0,
            help="Rows shown in the table; the rest are counted. --csv and --json hold every row.",
        ),
    ] = DEFAULT_ROWS,
    memory_limit: Annotated[
        str,
        typer.Option(
            "--memory-limit",
            metavar="SIZE",
            help="DuckDB's memory limit (e.g. 512MB, 4GB): sorts, joins and aggregates beyond it "
            "spill to a temporary folder; a query that still needs more stops and says so.",
        ),
    ] = "1GB",
    allow_external: Annotated[
        bool,
        typer.Option(
            "--allow-external",
            help="Let the query read and write files outside the store (read_csv, COPY … TO, "
            "ATTACH) with your rights; by default it sees the store's rows only.",
        ),
    ] = False,
) -> None:
    """Run SQL over a corpus store (DuckDB) and print the result.

    The query sees the view corpus and nothing else: reading or writing other files, URLs
    and extensions are refused unless --allow-external is given.
    """
    from ..corpus import check_memory_limit, open_store

    t0 = time.perf_counter()
    if csv_out and json_out:
        raise InvalidInputError("--csv and --json exclude each other: choose one")
    if output is not None:
        if not (csv_out or json_out):
            raise InvalidInputError("--output writes the --csv or --json form: add one of them")
        if output.is_dir():
            raise InvalidInputError(f"--output {str(output)!r} is a folder: give a file path")
        check_writable_parent(output, "--output")
    limit = check_memory_limit(memory_limit, name="--memory-limit")
    opened = open_store(store)
    reader = opened.sql_batches(
        sql, allow_external=allow_external, memory_limit=limit, json_rows=json_out
    )
    if not (csv_out or json_out):
        _print_table(reader, rows)
        return
    first = _first(reader)  # an error in the query is one line before anything is written
    with _destination(output) as out:
        if csv_out:
            n = _write_csv(first, reader, out)
        else:
            head = {
                "attntopo": __version__,
                "store": str(opened.path),
                "sql": sql,
                "columns": json.loads(reader.schema.metadata[b"columns"]),
            }
            n = _write_json(first, reader, out, head, t0)
    if output is not None:
        typer.echo(f"{plural(n, 'row')} → {output}", err=True)


def _first(reader: Any) -> Any:
    """The reader's first batch (None for no rows)."""
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None


def _batches(first: Any, reader: Any) -> Iterator[Any]:
    if first is not None:
        yield first
        yield from reader


@contextlib.contextmanager
def _destination(output: Path | None) -> Iterator[Any]:
    """stdout, or a text file that appears under ``output`` whole when the block ends."""
    if output is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    from .._validation import refused_path
    from ..io import atomic_file

    with refused_path(f"cannot write --output {str(output)!r}"), atomic_file(output) as f:
        text = io.TextIOWrapper(f, encoding="utf-8", newline="")
        try:
            yield text  # an error in the query (InvalidInputError) passes refused_path unchanged
            text.flush()
        finally:
            text.detach()


def _write_csv(first: Any, reader: Any, out: Any) -> int:
    """A header line, then every row (an empty field for null, ``str`` of every other value)."""
    w = csv.writer(out, lineterminator="\n")
    w.writerow(reader.schema.names)
    n = 0
    for batch in _batches(first, reader):
        w.writerows(zip(*(c.to_pylist() for c in batch.columns)))  # csv writes None as ""
        n += batch.num_rows
    return n


def _write_json(first: Any, reader: Any, out: Any, head: dict, t0: float) -> int:
    """The shared ``--json`` document (``finish_listing``'s keys, in its order), the rows
    written as DuckDB's JSON objects as they come."""

    def key(k: str, v: Any) -> str:
        return f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"

    out.write("{\n" + ",\n".join(key(k, v) for k, v in head.items()) + ',\n "rows": [')
    n = 0
    for batch in _batches(first, reader):
        out.write(("\n  " if n == 0 else ",\n  ") + ",\n  ".join(batch.column(0).to_pylist()))
        n += batch.num_rows
    total = round(time.perf_counter() - t0, 3)
    tail = {"timing": {"query_s": total, "total_s": total}, "out": None, "figures": []}
    out.write(
        ("\n ],\n" if n else "],\n") + ",\n".join(key(k, v) for k, v in tail.items()) + "\n}\n"
    )
    return n


def _print_table(reader: Any, shown: int) -> None:
    """The first ``shown`` rows as a table; the rest read and counted."""
    import pyarrow as pa

    kept: list[list] = []
    n = 0
    for batch in reader:
        if len(kept) < shown:
            part = batch.slice(0, shown - len(kept))
            kept.extend(zip(*(c.to_pylist() for c in part.columns)))
        n += batch.num_rows
    t = data_table()
    for name, field in zip(reader.schema.names, reader.schema):
        # text may wrap at its spaces; any other value stays on one line
        text = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
        number = pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
        t.add_column(name, no_wrap=not text, justify="right" if number else "left")
    for r in kept:
        t.add_row(*(_cell(v) for v in r))
    print_table(t)
    more = (
        ""
        if n <= len(kept)
        else (
            f", the first {len(kept)} shown (--rows N shows more; --csv and --json hold every row)"
        )
    )
    typer.echo(f"{plural(n, 'row')}{more}", err=True)
