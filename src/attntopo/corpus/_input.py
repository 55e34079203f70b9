"""Reading a corpus: files, stdin or in-memory data as a stream of Arrow tables.

:func:`open_input` reads the whole input once before any work (the *scan*): it checks every
record (encoding, the text column, ids), counts the empty texts, proves the ids unique,
settles the type of each carried column and computes the input's fingerprint.  Then
:meth:`CorpusInput.batches` streams it again as ``(batch index, pyarrow.Table)`` pairs of at
most ``batch_size`` non-empty texts; only one batch is in memory at a time.

Sources
-------
* a text file, one text per line (``.txt`` and anything not named below);
* JSONL (``.jsonl``, ``.ndjson``): one JSON object per line, the text under ``text_column``;
* CSV (``.csv``; ``.tsv``: tab-separated) with a header line;
* Parquet (``.parquet``, ``.pq``);
* ``"-"``: standard input (copied to a temporary file first, so that it can be read twice;
  its format is ``input_format``, text lines by default);
* a list of strings, a :class:`pandas.DataFrame` or a :class:`pyarrow.Table`.

Every batch table has the columns ``id`` (string), ``row`` (int64: the record's 0-based
position in the input, empty records included; for a text file, the line number minus 1),
``text`` (string) and the *carried* columns (every input column but the text and id columns,
typed: Arrow's types for JSONL, Parquet and DataFrames; int64, float64 or string, whichever
holds every value, for CSV).

Ids: the ``id_column``'s values as strings, else ``"<row>-<first 12 hex digits of the
SHA-256 of the text>"``.  Empty texts (empty, whitespace only, or null) are skipped and
counted; they get no id.

Pairs: with ``answer_column`` (JSONL, CSV/TSV, Parquet, DataFrame and Arrow inputs) every record
is a (prompt, answer) pair: the text column is the prompt, the answer column its answer (a
batch table's ``answer`` column, right after ``text``; never carried).  A record whose prompt is
empty is an empty record (skipped, counted); a non-empty prompt without an answer (missing,
null or blank) is an error naming its line.  The default id then holds both hashes,
``"<row>-<12 hex digits of the prompt's SHA-256>-<12 of the answer's>"``, and the fingerprint
covers the answer: a changed answer is another record.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import InvalidInputError, MissingDependencyError

__all__ = [
    "INPUT_FORMATS",
    "PAIR_COLUMNS",
    "record_sha256",
    "RESERVED_COLUMNS",
    "CorpusInput",
    "open_input",
    "text_sha256",
]

#: What ``input_format=`` accepts (``"auto"``: from the file name's suffix).
INPUT_FORMATS: tuple[str, ...] = ("auto", "text", "jsonl", "csv", "tsv", "parquet")
#: Columns the store writes itself: an input column of one of these names is refused.
RESERVED_COLUMNS: tuple[str, ...] = (
    "id",
    "row",
    "text",
    "text_sha256",
    "n_tokens",
    "n_unknown",
    "truncated",
    "status",
    "error",
)
#: Columns a store of (prompt, answer) pairs writes besides :data:`RESERVED_COLUMNS`.
PAIR_COLUMNS: tuple[str, ...] = ("answer", "answer_sha256")
_SUFFIX = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_CHUNK = 4096
_FEATURE_NAME = re.compile(r"^L(\d+|\*)H(\d+|\*)\.")


def _pa():
    try:
        import pyarrow as pa
    except ImportError:
        raise MissingDependencyError(
            "attntopo.corpus needs pyarrow and duckdb: pip install 'attntopo[corpus]'"
        ) from None
    return pa


def text_sha256(text: str) -> str:
    """SHA-256 (hex) of a text's UTF-8 bytes: the store's ``text_sha256`` column."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _default_id(row: int, text: str, answer: str | None = None) -> str:
    if answer is None:
        return f"{row}-{text_sha256(text)[:12]}"
    return f"{row}-{text_sha256(text)[:12]}-{text_sha256(answer)[:12]}"


#: The way to give a corpus (prompt, answer) pairs that arrived as a list of pairs, as
#: :func:`attntopo.features.features` takes them.
_PAIRS_AS_TABLE = (
    "; (prompt, answer) pairs go in as a table: pandas.DataFrame(pairs, columns=['prompt', "
    "'answer']) with text_column='prompt', answer_column='answer'"
)


def record_sha256(text: str, *, answer: str | None = None) -> str:
    """What identifies a record's content: its text's SHA-256, and for a pair the answer's
    after a ``+`` (``StoreReader.stored_hashes`` reads the same from a store's columns)."""
    return text_sha256(text) if answer is None else f"{text_sha256(text)}+{text_sha256(answer)}"


_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def _universal_lines(f: Any) -> Iterator[bytes]:
    """The lines of a binary file, ends included, split as Python's universal newlines split
    them: after ``\\n``, ``\\r\\n`` and a ``\\r`` alone.  A file's own lines (split after
    ``\\n``) are split again only where a ``\\r`` is not the end of their ``\\r\\n``."""
    for raw in f:
        cr = raw.find(b"\r")
        if cr == -1 or (cr == len(raw) - 2 and raw.endswith(b"\r\n")):
            yield raw
        else:
            yield from _LINE.findall(raw)


def _frame_problem(df: Any, name: str, exc: Exception) -> str:
    """Why pyarrow could not take a DataFrame: the first column whose values it cannot hold
    in one Arrow column (a number among strings), named with the types it mixes."""
    pa = _pa()
    for k, column in enumerate(df.columns):
        values = df.iloc[:, k]
        try:
            pa.array(values, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            kinds = sorted({type(v).__name__ for v in values.tolist() if v is not None and v == v})
            return (
                f"{name}: column {str(column)!r} mixes {', '.join(kinds)} values, which one "
                "Arrow column cannot hold: give the column one type (e.g. .astype(str))"
            )
    return f"{name}: pyarrow cannot store it ({str(exc).splitlines()[0]})"


def _is_empty(text: Any) -> bool:
    return text is None or (isinstance(text, str) and not text.strip())


# ------------------------------------------------------------------ carried column types
class _CsvType:
    """The narrowest of int64, float64, string that holds every value of a CSV column."""

    def __init__(self) -> None:
        self.kind = "int"

    def see(self, value: str) -> None:
        if value == "" or self.kind == "string":
            return
        if self.kind == "int":
            try:
                int(value)
                return
            except ValueError:
                self.kind = "float"
        try:
            float(value)
        except ValueError:
            self.kind = "string"

    def arrow(self):
        pa = _pa()
        return {"int": pa.int64(), "float": pa.float64(), "string": pa.string()}[self.kind]

    def convert(self, value: str) -> Any:
        if self.kind == "string":
            return value
        if value == "":
            return None
        return int(value) if self.kind == "int" else float(value)


class _ArrowType:
    """The Arrow type of a column's values, unified over chunks."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.type = None
        self._buf: list[Any] = []

    def see(self, value: Any) -> None:
        self._buf.append(value)
        if len(self._buf) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if not self._buf:
            return
        pa = _pa()
        try:
            t = pa.array(self._buf).type
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise InvalidInputError(
                f"column {self.name!r} holds values of several types ({str(e).splitlines()[0]}): "
                "make them one type"
            ) from None
        self._buf = []
        if self.type is None or pa.types.is_null(self.type):
            self.type = t
        elif not pa.types.is_null(t) and t != self.type:
            try:
                self.type = (
                    pa.unify_schemas(
                        [pa.schema([("x", self.type)]), pa.schema([("x", t)])],
                        promote_options="permissive",
                    )
                    .field("x")
                    .type
                )
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                raise InvalidInputError(
                    f"column {self.name!r} holds both {self.type} "
                    f"and {t} values: make them one type"
                ) from None

    def arrow(self):
        self.flush()
        return self.type if self.type is not None else _pa().null()

    def convert(self, value: Any) -> Any:
        return value


# ------------------------------------------------------------------ the input
class CorpusInput:
    """A scanned corpus input (module docstring); make one with :func:`open_input`.

    Attributes
    ----------
    name : str
        What the input is, for messages (a path, ``"stdin"``, ``"a list of 3 texts"``).
    format : str
        ``"text"``, ``"jsonl"``, ``"csv"``, ``"tsv"``, ``"parquet"``, ``"list"`` or ``"arrow"``.
    total : int
        Non-empty texts: the rows a finished store holds.
    n_empty : int
        Empty texts skipped.
    n_records : int
        Records read (empty ones included).
    fingerprint : str
        ``sha256:<hex>`` over every non-empty record's row, id, text (and answer) and carried
        values.
    answer_column : str or None
        The answer's column of (prompt, answer) pairs (module docstring), or None: texts.
    carried : tuple of str
        Carried column names, in input order.
    schema : pyarrow.Schema
        Schema of every batch table: ``id``, ``row``, ``text``, (``answer``,) then the carried
        columns.
    """

    def __init__(
        self,
        source: Any,
        *,
        text_column: str = "text",
        id_column: str | None = None,
        input_format: str = "auto",
        encoding: str = "utf-8",
        answer_column: str | None = None,
    ) -> None:
        self._tmp: str | None = None
        self.text_column = text_column
        self.id_column = id_column
        if answer_column is not None and (not isinstance(answer_column, str) or not answer_column):
            raise InvalidInputError(f"answer_column must be a column name, got {answer_column!r}")
        if answer_column is not None and answer_column in (text_column, id_column):
            raise InvalidInputError(
                f"answer_column {answer_column!r} is also the "
                f"{'text' if answer_column == text_column else 'id'} "
                "column: name the answer's own column"
            )
        self.answer_column = answer_column
        self.encoding = encoding
        self._data: Any = None
        self._path: Path | None = None
        self._setup(source, input_format)
        try:
            self._scan()
        except BaseException:
            self.close()
            raise

    # -------------------------------------------------------------- source kinds
    def _setup(self, source: Any, input_format: str) -> None:
        if input_format not in INPUT_FORMATS:
            raise InvalidInputError(
                f"unknown input format {input_format!r}; allowed: {', '.join(INPUT_FORMATS)}"
            )
        try:
            "".encode(self.encoding)
        except (LookupError, TypeError):
            raise InvalidInputError(
                f"unknown encoding {self.encoding!r} (e.g. utf-8, latin-1, cp1252)"
            ) from None
        pa = _pa()
        if isinstance(source, (str, os.PathLike)) and not (
            isinstance(source, str) and "\n" in source
        ):
            if str(source) == "-":
                self.name = "stdin"
                fd, self._tmp = tempfile.mkstemp(prefix="attntopo-stdin-", suffix=".tmp")
                with os.fdopen(fd, "wb") as f:
                    shutil.copyfileobj(sys.stdin.buffer, f)
                self._path = Path(self._tmp)
                self.format = "text" if input_format == "auto" else input_format
                return
            p = Path(source)
            if not p.is_file():
                what = "a folder" if p.is_dir() else "not found"
                raise InvalidInputError(
                    f"input {str(p)!r}: {what}; give a text, "
                    "JSONL, CSV or Parquet file, or '-' for stdin"
                )
            self.name = str(p)
            self._path = p
            self.format = (
                _SUFFIX.get(p.suffix.lower(), "text") if input_format == "auto" else input_format
            )
            return
        if isinstance(source, (list, tuple)):
            for k, t in enumerate(source):
                if not (t is None or isinstance(t, str)):
                    raise InvalidInputError(
                        f"texts[{k}] is a {type(t).__name__}: each text must be a string"
                        + (_PAIRS_AS_TABLE if isinstance(t, (list, tuple)) and len(t) == 2 else "")
                    )
            self.name = f"a list of {len(source)} texts"
            self.format = "list"
            self._data = source
            return
        pd = sys.modules.get("pandas")
        if pd is not None and isinstance(source, pd.DataFrame):
            self.name = f"a DataFrame of {len(source)} rows"
            self.format = "arrow"
            try:
                self._data = pa.Table.from_pandas(source, preserve_index=False)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise InvalidInputError(_frame_problem(source, self.name, exc)) from None
            return
        if isinstance(source, pa.Table):
            self.name = f"an Arrow table of {source.num_rows} rows"
            self.format = "arrow"
            self._data = source
            return
        raise InvalidInputError(
            "the input must be a file path, '-' (stdin), a list of strings, a pandas DataFrame or "
            f"a pyarrow Table, got {type(source).__name__}"
        )

    # -------------------------------------------------------------- raw records
    def _lines(self, keep_ends: bool = False) -> Iterator[tuple[int, str]]:
        """(line number, decoded line without its end; with ``keep_ends``, as in the file:
        ``\\r\\n``, ``\\n`` or ``\\r`` included) of the file.  Lines end as in Python's
        universal newlines: ``\\n``, ``\\r\\n``, or ``\\r`` alone (old Mac files, where
        a file of CR line ends had been one line)."""
        utf8 = self.encoding.lower().replace("_", "-") in ("utf-8", "utf8")
        with open(self._path, "rb") as f:  # type: ignore[arg-type]
            for lineno, raw in enumerate(_universal_lines(f), 1):
                try:
                    line = raw.decode(self.encoding)
                except UnicodeDecodeError as e:
                    raise InvalidInputError(
                        f"{self.name}: line {lineno} is not valid {self.encoding} (byte "
                        f"0x{raw[e.start]:02x} at column {e.start + 1}): give the file's encoding "
                        "with --encoding (encoding= in Python), e.g. latin-1"
                    ) from None
                if lineno == 1 and utf8 and line.startswith("\ufeff"):
                    line = line[1:]
                if keep_ends:
                    yield lineno, line
                else:
                    end = 2 if line.endswith("\r\n") else 1 if line.endswith(("\n", "\r")) else 0
                    yield lineno, line[: len(line) - end]

    def _header(self) -> tuple[str, ...]:
        """Input column names, in order (text first for plain text and lists)."""
        if self.format in ("text", "list"):
            return (self.text_column,)
        if self.format in ("csv", "tsv"):
            for _, line in self._lines():
                return tuple(next(csv.reader([line], delimiter=self._delim())))
            raise InvalidInputError(f"{self.name}: the CSV file is empty (no header line)")
        if self.format == "parquet":
            return tuple(self._parquet().schema_arrow.names)
        if self.format == "arrow":
            return tuple(self._data.schema.names)
        return ()  # jsonl: keys are found while scanning

    def _delim(self) -> str:
        return "\t" if self.format == "tsv" else ","

    def _parquet(self):
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(self._path)
        except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds
            raise InvalidInputError(
                f"{self.name}: not a readable Parquet file ({str(e).splitlines()[0]})"
            ) from None

    def _raw(self) -> Iterator[tuple[int, int | None, Any, Any, dict]]:
        """(row, line number or None, text, id value, carried values by name) of every record."""
        fmt = self.format
        tc, ic = self.text_column, self.id_column
        if fmt == "list":
            for row, t in enumerate(self._data):
                yield row, None, t, None, {}
        elif fmt == "text":
            for lineno, line in self._lines():
                yield lineno - 1, lineno, line, None, {}
        elif fmt == "jsonl":
            for lineno, line in self._lines():
                if not line.strip():
                    yield lineno - 1, lineno, None, None, {}
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InvalidInputError(
                        f"{self.name}: line {lineno} is not JSON ({e.msg})"
                    ) from None
                if not isinstance(obj, dict):
                    raise InvalidInputError(
                        f"{self.name}: line {lineno} is a JSON {type(obj).__name__}, not an object"
                    )
                if tc not in obj:
                    keys = ", ".join(obj) or "none"
                    raise InvalidInputError(
                        f"{self.name}: line {lineno} has no key {tc!r} (its keys: {keys}); choose "
                        "the text's key with --text-column"
                    )
                text = obj.pop(tc)
                if text is not None and not isinstance(text, str):
                    raise InvalidInputError(
                        f"{self.name}: line {lineno}: {tc!r} is a "
                        f"JSON {type(text).__name__}, not a string"
                    )
                yield lineno - 1, lineno, text, (obj.pop(ic, None) if ic else None), obj
        elif fmt in ("csv", "tsv"):
            # the lines as written, ends included (what open(newline="") gives the csv module):
            # a quoted \r\n inside a field stays \r\n, so text_sha256 is the field's own hash.
            # strict: a quote never closed (the rest of the file would become one field) or
            # text after a closing quote is an error, not rows silently merged
            where = {"n": 0, "start": 1}
            reader = csv.reader(
                (line for _, line in self._lines(keep_ends=True)),
                delimiter=self._delim(),
                strict=True,
            )
            try:
                yield from self._csv_rows(reader, where)
            except csv.Error as e:
                if "unexpected end of data" in str(e):
                    raise InvalidInputError(
                        f"{self.name}: line {where['start']}: a quote opened there is never closed "
                        "(the rest of the file would become one field): close it, or double a "
                        'quote inside a quoted field ("")'
                    ) from None
                raise InvalidInputError(
                    f"{self.name}: line {where['start']}: malformed CSV ({e})"
                ) from None
        else:  # parquet, arrow
            batches = (
                self._parquet().iter_batches(batch_size=_CHUNK)
                if fmt == "parquet"
                else self._data.to_batches(max_chunksize=_CHUNK)
            )
            row = 0
            for b in batches:
                cols = b.to_pydict()
                texts = cols.pop(tc)
                ids = cols.pop(ic) if ic else None
                names = list(cols)
                for k in range(len(texts)):
                    yield (
                        row,
                        None,
                        texts[k],
                        (ids[k] if ids is not None else None),
                        {c: cols[c][k] for c in names},
                    )
                    row += 1

    def _csv_rows(
        self, reader: Any, where: dict
    ) -> Iterator[tuple[int, int | None, Any, Any, dict]]:
        """Records of ``reader``; ``where["start"]`` is the line the record being read starts
        on (a record spans several lines where a quoted field holds line breaks)."""
        tc, ic = self.text_column, self.id_column
        header = next(reader, None)
        if header is None:
            raise InvalidInputError(f"{self.name}: the CSV file is empty (no header line)")
        row = 0
        while True:
            where["start"] = reader.line_num + 1
            values = next(reader, None)
            if values is None:
                return
            line = where["start"]
            if not values:
                yield row, line, None, None, {}
                row += 1
                continue
            if len(values) != len(header):
                raise InvalidInputError(
                    f"{self.name}: line {line} has {len(values)} "
                    f"fields, the header has {len(header)}"
                )
            rec = dict(zip(header, values))
            text = rec.pop(tc)
            yield row, line, text, (rec.pop(ic) if ic else None), rec
            row += 1

    def _records(self) -> Iterator[tuple[int, int | None, Any, Any, Any, dict]]:
        """:meth:`_raw`'s records with the answer taken out of the carried values: (row, line
        number or None, text, id value, answer or None, carried values).  A non-empty text
        without an answer is an error naming its line."""
        ac = self.answer_column
        for row, lineno, text, id_value, rec in self._raw():
            if ac is None:
                yield row, lineno, text, id_value, None, rec
                continue
            answer = rec.pop(ac, None)
            if not _is_empty(text) and (not isinstance(answer, str) or not answer.strip()):
                where = f"line {lineno}" if lineno is not None else f"row {row}"
                what = (
                    "has no answer"
                    if answer is None or isinstance(answer, str)
                    else f"has a {type(answer).__name__}, not a string, as its answer"
                )
                raise InvalidInputError(
                    f"{self.name}: {where} {what} in column {ac!r}: every prompt needs its "
                    "answer (fill it in or remove the row)"
                )
            yield row, lineno, text, id_value, answer, rec

    # -------------------------------------------------------------- the scan
    def _check_columns(self, header: Sequence[str]) -> None:
        tc, ic, ac = self.text_column, self.id_column, self.answer_column
        if self.format in ("text", "list"):
            if ic is not None:
                raise InvalidInputError(
                    f"{self.name} has no columns: id_column "
                    "applies to JSONL, CSV, Parquet and tables"
                )
            if ac is not None:
                raise InvalidInputError(
                    f"{self.name} has no columns: answer_column (pairs) applies to JSONL, CSV, "
                    "Parquet and tables (e.g. a DataFrame with a prompt and an answer column)"
                )
            return
        if self.format == "jsonl":
            return
        cols = ", ".join(repr(c) for c in header) or "none"
        if tc not in header:
            raise InvalidInputError(
                f"{self.name} has no column {tc!r}; its columns: {cols} (choose with --text-column)"
            )
        if ic is not None and ic not in header:
            raise InvalidInputError(
                f"{self.name} has no column {ic!r}; its columns: {cols} (choose with --id-column)"
            )
        if ac is not None and ac not in header:
            raise InvalidInputError(
                f"{self.name} has no column {ac!r}; its "
                f"columns: {cols} (choose with --answer-column)"
            )
        if self.format in ("parquet", "arrow"):
            pa = _pa()
            schema = self._parquet().schema_arrow if self.format == "parquet" else self._data.schema
            for c in (tc,) if ac is None else (tc, ac):
                t = schema.field(c).type
                if not (
                    pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)
                ):
                    raise InvalidInputError(f"{self.name}: column {c!r} holds {t}, not strings")

    def _carry(self, name: str) -> None:
        if self.answer_column is not None and name in PAIR_COLUMNS:
            raise InvalidInputError(
                f"{self.name}: column {name!r} clashes with a column a store of pairs writes "
                f"({', '.join(PAIR_COLUMNS)}): rename it"
            )
        if name == "id" and self.id_column is None:  # the input's own ids: say how to use them
            raise InvalidInputError(
                f"{self.name}: column 'id' clashes with the ids the store writes: pass --id-column "
                "id (id_column='id' in Python) to make it the ids, or rename it"
            )
        if name in RESERVED_COLUMNS or name.startswith("diagram_") or name == "":
            raise InvalidInputError(
                f"{self.name}: column {name!r} clashes with a column the store writes "
                f"({', '.join(RESERVED_COLUMNS)}, diagram_*, feature columns): rename it"
            )
        if _FEATURE_NAME.match(name):  # attntopo.features' L{layer}H{head}.{set}.{quantity}
            raise InvalidInputError(
                f"{self.name}: column {name!r} looks like a feature column: rename it"
            )

    def _scan(self) -> None:
        header = self._header()
        self._check_columns(header)
        csv_like = self.format in ("csv", "tsv")
        carried = [
            c for c in header if c not in (self.text_column, self.id_column, self.answer_column)
        ]
        types: dict[str, Any] = {}
        for c in carried:
            self._carry(c)
            types[c] = _CsvType() if csv_like else _ArrowType(c)
        seen: dict[str, int] = {}
        h = hashlib.sha256()
        total = n_empty = n_records = 0
        for row, lineno, text, id_value, answer, rec in self._records():
            n_records += 1
            if _is_empty(text):
                n_empty += 1
                continue
            if self.format == "jsonl":
                for c in rec:
                    if c not in types:
                        self._carry(c)
                        if c == self.id_column:
                            continue
                        carried.append(c)
                        types[c] = _ArrowType(c)
            where = f"line {lineno}" if lineno is not None else f"row {row}"
            if self.id_column is not None:
                if id_value is None or (isinstance(id_value, str) and not id_value.strip()):
                    raise InvalidInputError(
                        f"{self.name}: {where} has no id in column {self.id_column!r}"
                    )
                rid = str(id_value)
            else:
                rid = _default_id(row, text, answer)
            first = seen.setdefault(rid, row)
            if first != row:
                raise InvalidInputError(
                    f"{self.name}: id {rid!r} occurs twice (rows {first} and {row}); ids must be "
                    "unique (check --id-column)"
                )
            values = [rec.get(c) for c in carried]
            for c, v in zip(carried, values):
                types[c].see(v)
            record = (
                [row, rid, text, values] if answer is None else [row, rid, text, answer, values]
            )
            h.update(json.dumps(record, ensure_ascii=False, default=str).encode("utf-8"))
            h.update(b"\x1e")
            total += 1
        self.total, self.n_empty, self.n_records = total, n_empty, n_records
        self.carried = tuple(carried)
        self._types = types
        self.fingerprint = "sha256:" + h.hexdigest()
        pa = _pa()
        self.schema = pa.schema(
            [("id", pa.string()), ("row", pa.int64()), ("text", pa.string())]
            + ([("answer", pa.string())] if self.answer_column is not None else [])
            + [(c, types[c].arrow()) for c in carried]
        )

    # -------------------------------------------------------------- streaming
    def batch_count(self, batch_size: int) -> int:
        """Number of batches of ``batch_size`` non-empty texts."""
        return -(-self.total // batch_size)

    def batches(
        self, batch_size: int, *, skip: frozenset[int] | set[int] = frozenset()
    ) -> Iterator[tuple[int, Any]]:
        """``(batch index, pyarrow.Table)`` for every batch not in ``skip``, in input order.

        Batch ``k`` holds the non-empty texts number ``k * batch_size`` … ``(k + 1) *
        batch_size - 1`` (counted in input order): the same texts on every run, so a batch's
        numbers never depend on where an earlier run stopped.
        """
        pa = _pa()
        ids: list[str] = []
        rows: list[int] = []
        texts: list[str] = []
        answers: list[str] = []
        vals: dict[str, list[Any]] = {c: [] for c in self.carried}
        k = 0
        n = 0

        def table():
            cols = {"id": ids, "row": rows, "text": texts, "answer": answers, **vals}
            arrays = [
                pa.array(cols[f.name], type=f.type)
                if f.name not in self._types
                else pa.array([self._types[f.name].convert(v) for v in cols[f.name]], type=f.type)
                for f in self.schema
            ]
            return pa.Table.from_arrays(arrays, schema=self.schema)

        for row, _, text, id_value, answer, rec in self._records():
            if _is_empty(text):
                continue
            if k not in skip:
                ids.append(
                    str(id_value) if self.id_column is not None else _default_id(row, text, answer)
                )
                rows.append(row)
                texts.append(text)
                answers.append(answer)
                for c in self.carried:
                    vals[c].append(rec.get(c))
            n += 1
            if n == batch_size:
                if k not in skip:
                    yield k, table()
                k, n = k + 1, 0
                ids, rows, texts, answers = [], [], [], []
                vals = {c: [] for c in self.carried}
        if n and k not in skip:
            yield k, table()

    # -------------------------------------------------------------- cleanup
    def close(self) -> None:
        """Remove the copy of stdin (nothing else to release)."""
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None

    def __enter__(self) -> "CorpusInput":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        pairs = f", answer_column={self.answer_column!r}" if self.answer_column is not None else ""
        return (
            f"CorpusInput({self.name!r}, format={self.format!r}, texts={self.total}, "
            f"empty={self.n_empty}, carried={list(self.carried)}{pairs})"
        )


def open_input(
    source: Any,
    *,
    text_column: str = "text",
    id_column: str | None = None,
    input_format: str = "auto",
    encoding: str = "utf-8",
    answer_column: str | None = None,
) -> CorpusInput:
    """Scan a corpus input (module docstring) and return it ready to stream.

    Parameters
    ----------
    source : str, path, list of str, pandas.DataFrame or pyarrow.Table
        A file, ``"-"`` for stdin, or in-memory texts.
    text_column : str
        The text's column (JSONL key, CSV header, Parquet/DataFrame column).
    id_column : str, optional
        Column holding each text's id; default: row number and text hash.
    input_format : {"auto", "text", "jsonl", "csv", "tsv", "parquet"}
        ``"auto"`` decides by suffix (stdin: text lines).
    encoding : str
        Encoding of text, JSONL and CSV files.
    answer_column : str, optional
        Read (prompt, answer) pairs: the text column is the prompt, this column its answer
        (JSONL, CSV/TSV, Parquet, DataFrame, Arrow; module docstring).

    Raises
    ------
    InvalidInputError
        One line naming the file and line: bytes not valid in ``encoding`` (with the
        ``--encoding`` hint), a missing text or id column (listing the columns there are), a
        duplicate or missing id, a line that is not JSON, a CSV line with a wrong field count,
        a column clashing with the store's own, a prompt without its answer.
    """
    return CorpusInput(
        source,
        text_column=text_column,
        id_column=id_column,
        input_format=input_format,
        encoding=encoding,
        answer_column=answer_column,
    )
