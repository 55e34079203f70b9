"""SQL over a corpus store (:meth:`StoreReader.sql <attntopo.corpus.StoreReader.sql>`,
``attntopo query``): :class:`StoreSQL`, the methods of
:class:`~attntopo.corpus.StoreReader` that run DuckDB over the part files, seen as the view
``corpus`` (:data:`TABLE`) and confined to them by default; and what the reader module shares
with them: :func:`_same_store` (every read checks the store was not replaced) and the
one-line errors of a part that cannot be read.  Like the reader, nothing here writes.
DuckDB's memory limit, batches and error messages are :mod:`attntopo.corpus._sql`'s."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Iterator

from .._validation import check_bool
from ..errors import (
    InvalidInputError,
    MissingDependencyError,
    ResultFormatError,
    StoreReplacedError,
)
from ._input import _pa
from ._sql import (
    QUERY_MEMORY_LIMIT,
    check_memory_limit,
    duplicate_names_message,
    sql_message,
)
from ._sql import batches as sql_batches

__all__ = ["StoreSQL", "TABLE"]

#: Name of the DuckDB view over the part files in :meth:`StoreReader.sql` and ``attntopo query``.
TABLE = "corpus"
#: What a damaged part leaves a user to do.
_RECOMPUTE = (
    ": StoreReader.verify() names the damaged parts; a run of the same command recomputes them"
)


def _duckdb():
    try:
        import duckdb
    except ImportError:
        raise MissingDependencyError(
            "SQL over a corpus store needs duckdb: pip install 'attntopo[corpus]'"
        ) from None
    return duckdb


def _same_store(method: Any) -> Any:
    """A read of a :class:`StoreReader`: the store on disk is checked to be the one this
    object opened before and after the read, and on any error (a reader never returns rows of
    a store that replaced it, nor names its parts "corrupt" or "not a part of this store"):
    :meth:`StoreReader.check_unchanged`."""

    # self: a StoreReader, typed Any: _store imports this module, not the other way round
    @functools.wraps(method)
    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.check_unchanged()
        try:
            out = method(self, *args, **kwargs)
        except StoreReplacedError:
            raise
        except Exception:
            self.check_unchanged()  # replaced meanwhile: that is the error to report
            raise
        self.check_unchanged()
        return out

    return read


class StoreSQL:
    """The SQL methods of :class:`~attntopo.corpus.StoreReader` (which is one): they use its
    ``parts()``, ``schema``, ``feature_columns``, ``parts_dir``, ``check_unchanged()``,
    ``_check_parts_unchanged()``, ``_forget_parts()`` and its cache of connections ``_cons``."""

    def _connection(self, allow_external: bool = False, memory_limit: int | None = None):
        """``(connection, rows)``: a DuckDB connection and the parts as one dataset (the view
        :data:`TABLE` of :meth:`_cursor`).

        The parts reach DuckDB as a :mod:`pyarrow.dataset` (registered, not named by path),
        so the confined connection (the default) needs no file access at all:
        ``enable_external_access = false`` refuses every file, URL and extension (reading
        ``/etc/passwd``, ``COPY … TO``, ``ATTACH``, and writing over a part, which DuckDB's
        ``allowed_paths`` would have allowed for the files it lists), and
        ``lock_configuration`` keeps a query from turning it back on.  DuckDB may still spill
        to its temporary folder: a private one, removed with the connection.  ``memory_limit``
        (bytes; None: :data:`QUERY_MEMORY_LIMIT`) is DuckDB's ``memory_limit``, set before the lock.
        """
        if memory_limit is None:
            memory_limit = check_memory_limit(QUERY_MEMORY_LIMIT)
        key = (allow_external, memory_limit)
        con = self._cons.get(key)
        if con is None:
            duckdb = _duckdb()
            con = duckdb.connect(":memory:")
            con.execute(f"SET memory_limit = '{int(memory_limit)}B'")
            if not allow_external:
                import shutil
                import tempfile
                import weakref

                spill = tempfile.mkdtemp(prefix="attntopo-duckdb-")
                weakref.finalize(con, shutil.rmtree, spill, True)
                con.execute("SET temp_directory = ?", [spill])
                con.execute("SET enable_external_access = false")
                con.execute("SET lock_configuration = true")
            parts = self.parts()
            if parts:
                import pyarrow.dataset as pads

                # a flipped bit in a page is an error, not another value
                checked = pads.ParquetFileFormat(
                    default_fragment_scan_options=(
                        pads.ParquetFragmentScanOptions(page_checksum_verification=True)
                    )
                )
                rows = pads.dataset(
                    [str(parts[k]) for k in sorted(parts)], schema=self.schema, format=checked
                )
            else:
                rows = self.schema.empty_table()
            con = self._cons[key] = (con, rows)
        return con

    def _cursor(self, allow_external: bool = False, memory_limit: int | None = None):
        """A cursor of :meth:`_connection` (its settings are the database's) that sees the
        parts as :data:`TABLE` (a registered object is local to a cursor)."""
        con, rows = self._connection(allow_external, memory_limit)
        self._check_parts_unchanged()  # a part changed since it was listed is checked again
        cur = con.cursor()
        cur.register(TABLE, rows)
        return cur

    def _fetch(self, query: str, params: list | None = None) -> list[tuple]:
        """All rows of one query, on its own cursor (no result is left open)."""
        cur = self._cursor()
        try:
            return cur.execute(query, params or []).fetchall()
        finally:
            cur.close()

    @_same_store
    def sql(
        self,
        query: str,
        *,
        arrow: bool = False,
        allow_external: bool = False,
        memory_limit: Any = QUERY_MEMORY_LIMIT,
    ) -> Any:
        """Run a DuckDB query over the rows (the view ``corpus``).

        Confined to the store by default: the query sees the view ``corpus`` and nothing
        else; reading or writing any file (``read_csv('/etc/passwd')``, ``COPY … TO``,
        ``ATTACH``), URLs and extensions are refused.  ``allow_external=True`` (``attntopo
        query --allow-external``) runs it with the user's rights, as DuckDB does by default.
        ``memory_limit`` (``"2GB"``, ``"512MB"`` or bytes; default ``"1GB"``) is DuckDB's:
        sorts, joins and aggregates beyond it spill to a private temporary folder; a query
        that still needs more stops with one line that says to raise it.  The result itself
        is held whole: :meth:`sql_batches` reads a large one a batch at a time.  Every column
        of the result needs a name of its own (as DuckDB compares names: ``a`` and ``A`` are
        one): two of one name (``SELECT 1 AS a, 2 AS a``, ``SELECT * FROM corpus c1, corpus
        c2``) are refused in one line before any row is read, naming them; ``AS`` names them
        apart.

        Returns a :class:`pandas.DataFrame` (``arrow=True``: a :class:`pyarrow.Table`).
        A query DuckDB rejects raises :class:`~attntopo.errors.InvalidInputError` with its
        message and what to do.
        """
        rel, error, cur = self._relation(query, allow_external, memory_limit)
        duckdb = _duckdb()
        try:
            return rel.to_arrow_table() if arrow else rel.df()
        except (duckdb.Error, OSError, _pa().ArrowException) as e:
            raise error(e) from None
        finally:
            cur.close()

    def sql_batches(
        self,
        query: str,
        *,
        allow_external: bool = False,
        memory_limit: Any = QUERY_MEMORY_LIMIT,
        json_rows: bool = False,
    ) -> Any:
        """:meth:`sql`'s result as a :class:`pyarrow.RecordBatchReader`: DuckDB computes the
        rows as the reader is read, a batch of at most 2048 rows at a time, so a result of
        any length is never held whole (``attntopo query`` reads it so).  ``json_rows=True``:
        each row as one JSON object (DuckDB's ``to_json``; NaN and infinities as the strings
        ``"nan"``, ``"inf"``, ``"-inf"``), in one string column ``json``, the query's column
        names a JSON list in the schema's metadata ``columns`` (each a key of every row: the
        names are distinct, as in :meth:`sql`).  Errors, also those met while reading, are
        :class:`~attntopo.errors.InvalidInputError` as in :meth:`sql`.
        """
        json_rows = check_bool(json_rows, "json_rows")
        self.check_unchanged()
        rel, error, cur = self._relation(query, allow_external, memory_limit)
        reader = sql_batches(cur, rel, error, json_rows=json_rows)
        pa = _pa()

        def checked() -> Iterator[Any]:
            # each batch is given out only once the store is seen to be the one opened after
            # it was read: a reader never streams a row of a store that replaced it
            for batch in reader:
                self.check_unchanged()
                yield batch
            self.check_unchanged()

        return pa.RecordBatchReader.from_batches(reader.schema, checked())

    def _relation(self, query: str, allow_external: Any, memory_limit: Any) -> tuple:
        """``(relation, error, cursor)`` of a query: ``error(e)`` is a DuckDB error ``e`` as
        the one-line error to raise: :class:`InvalidInputError`, or
        :class:`~attntopo.errors.StoreReplacedError` (the store was started over meanwhile),
        or :class:`ResultFormatError` (a part removed or damaged)."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(
                'query must be a non-empty SQL string, e.g. "SELECT count(*) FROM corpus"'
            )
        allow_external = check_bool(allow_external, "allow_external")
        limit = check_memory_limit(memory_limit)
        duckdb = _duckdb()

        def error(e: Exception) -> Exception:
            try:  # the store replaced meanwhile: that is what to say
                self.check_unchanged()
            except StoreReplacedError as replaced:
                return replaced
            part = _part_failure(e, self.parts_dir)
            if part is not None:  # a part removed (a run recomputes it) or damaged
                self._forget_parts()  # listed again by the next query
                return part
            return InvalidInputError(
                sql_message(
                    e,
                    query,
                    self.feature_columns,
                    allow_external=allow_external,
                    memory_limit=limit,
                )
            )

        cur = self._cursor(allow_external, limit)
        try:
            rel = cur.sql(query)
        except duckdb.Error as e:
            cur.close()
            raise error(e) from None
        if rel is None:
            cur.close()
            raise InvalidInputError("the query returned no rows (use SELECT …)")
        shared = duplicate_names_message(rel.columns)
        if shared is not None:  # before any row is read or written
            cur.close()
            raise InvalidInputError(shared)
        return rel, error, cur


def _part_failure(e: Exception, parts_dir: Path) -> ResultFormatError | None:
    """The one line of a query whose parts could not be read (the store was checked not to
    be replaced), or None for any other error: a part removed while it ran (a run
    recomputing a damaged part), or a damaged one."""
    msg = " ".join(str(e).split())
    scan = re.search(r"reading the stream registered as '\w+' failed: (.*)", msg)
    if scan:
        detail = scan.group(1)
    elif isinstance(e, FileNotFoundError) or (
        isinstance(e, (OSError, _pa().ArrowException)) and str(parts_dir) in msg
    ):
        detail = _first_line(e)
    else:
        return None
    if isinstance(e, FileNotFoundError) or "No such file" in detail or "errno 2]" in detail:
        return ResultFormatError(
            f"SQL: a part was removed while the query ran ({detail}): a run recomputes a damaged "
            "part; run the query again"
        )
    return ResultFormatError(f"SQL: a part cannot be read ({detail}){_RECOMPUTE}")


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__
