"""``attntopo query``: SQL (DuckDB) over a corpus store, printed as a table, JSON or CSV."""

from __future__ import annotations

import csv
import math
import sys
import time
from typing import Annotated

import typer

from ..errors import InvalidInputError
from ._common import command, data_table, finish_listing, print_table

_QUERY_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo query store \"SELECT status, count(*) FROM corpus GROUP BY status\"\n"
    "  attntopo query store 'SELECT id, \"L0H0.js.h1.total_persistence\" AS h1 FROM corpus ORDER BY h1 DESC LIMIT 5'\n"
    "  attntopo query store \"SELECT * FROM corpus\" --csv > rows.csv\n\n"
    "The store's rows are the view [bold]corpus[/bold]; feature columns have dots in their names, so quote "
    "them in double quotes. docs/corpus.md lists the columns. A query sees the store only: "
    "read_csv of other files, COPY … TO and ATTACH are refused unless --allow-external is given."
)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:.6g}"
    return str(v)


_HELPS = {  # the shared options in this command's words
    "json_out": "Print JSON on stdout: the rows as a list of objects under \"rows\".",
}


@command("query", epilog=_QUERY_EPILOG, helps=_HELPS)
def query_cmd(
    store: Annotated[str, typer.Argument(metavar="STORE", show_default=False, help="A corpus store folder.")],
    sql: Annotated[str, typer.Argument(
        metavar="SQL", show_default=False, help="A DuckDB query over the view 'corpus'.",
    )],
    csv_out: Annotated[bool, typer.Option("--csv", help="Print CSV on stdout (a header line, then the rows).")] = False,
    json_out=False,
    allow_external: Annotated[bool, typer.Option(
        "--allow-external",
        help="Let the query read and write files outside the store (read_csv, COPY … TO, ATTACH) "
             "with your rights; by default it sees the store's rows only.",
    )] = False,
) -> None:
    """Run SQL over a corpus store (DuckDB) and print the result.

    The query sees the view corpus and nothing else: reading or writing other files, URLs
    and extensions are refused unless --allow-external is given.
    """
    from ..corpus import open_store

    t0 = time.perf_counter()
    if csv_out and json_out:
        raise InvalidInputError("--csv and --json exclude each other: choose one")
    opened = open_store(store)
    table = opened.sql(sql, arrow=True, allow_external=allow_external)
    names = table.column_names
    rows = table.to_pylist()
    if json_out:
        finish_listing("rows", rows, json_out=True, timing={"query_s": round(time.perf_counter() - t0, 3)},
                       t_start=t0, summary=lambda _: None,
                       head={"store": str(opened.path), "sql": sql, "columns": names})
        return
    if csv_out:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(names)
        for r in rows:
            w.writerow(["" if r[n] is None else r[n] for n in names])
        sys.stdout.flush()
        return
    import pyarrow as pa

    t = data_table()
    for n, field in zip(names, table.schema):  # text may wrap at its spaces; any other value stays on one line
        t.add_column(n, no_wrap=not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)),
                     justify="right" if pa.types.is_integer(field.type) or pa.types.is_floating(field.type) else "left")
    for r in rows:
        t.add_row(*(_cell(r[n]) for n in names))
    print_table(t)
    typer.echo(f"{len(rows)} row{'s' if len(rows) != 1 else ''}", err=True)
