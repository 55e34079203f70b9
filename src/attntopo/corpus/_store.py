"""The corpus store and its reader: a folder of Parquet part files, a manifest, an error log;
read back with pyarrow, pandas or SQL (DuckDB) through :class:`StoreReader` (:func:`open_store`).

Layout
------
::

    STORE/
        manifest.json               format, settings, input fingerprint, row schema, counts
        parts/                      the Parquet parts alone: any Parquet reader takes the folder
            part-00000000.parquet   the rows of batch 0 (input texts 0 … batch_size − 1)
            part-00000001.parquet   batch 1, …
        parts.sha256                the SHA-256 of every part as written (sha256sum format,
                                    names relative to STORE: ``sha256sum -c`` there checks it),
                                    appended after each part, compacted at the end of a run
        errors.jsonl                one JSON object per skipped or failed row (id, row,
                                    status, error), rewritten from the part files at the end
                                    of every run

Every store is of format version 3: its parts all carry page checksums, and its feature
columns hold each head's values under that head's name.  Stores of format versions 1 and 2,
made before the first release by an attntopo that could name values under another head (layers
or heads given out of order) and wrote parts without page checksums, are refused in one line
naming their manifest: ``--new-store`` makes them again.

Reading and writing are two classes.  :class:`StoreReader` (this module) reads: it has no
method that changes the folder, and this module imports nothing that does.
:class:`~attntopo.corpus.StoreWriter` (``_writer``) is what a run writes with: it holds a
reader of the same folder for everything it reads, and the store's lock
(:func:`~attntopo.corpus.lock_store`: an exclusive ``flock`` on the folder, taken before the
manifest is read).  Readers take no lock and see whole parts only.  A run checks every part
against its recorded SHA-256 before trusting it (:meth:`StoreReader.verify`).

Each part file is written atomically (:func:`attntopo.io.atomic_write_bytes`: a temporary
file beside it, fsync, rename, fsync of the folder) under the name of its batch, so a part is
either absent or complete, and writing batch ``k`` again can only replace it, never add a
second copy.  Every part carries, in its Parquet key-value metadata ``attntopo.corpus``, the
store's random id and its batch number: a part file from another store, or one that cannot
be read, is reported by name (:class:`~attntopo.errors.ResultFormatError`), never skipped.

SQL
---
:meth:`StoreReader.sql` runs DuckDB over the part files, which it sees as one view named
``corpus`` (:data:`TABLE`); the SQL methods are
:class:`~attntopo.corpus._query.StoreSQL`'s.  Feature columns have dots in their names: quote
them, ``SELECT id, "L0H0.js.h1.total_persistence" FROM corpus``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

from ..errors import (
    DamagedPartError,
    InvalidInputError,
    MissingDependencyError,
    ResultFormatError,
    StoreReplacedError,
)
from ._input import _pa
from ._query import _RECOMPUTE, TABLE, StoreSQL, _first_line, _same_store
from ._settings import CorpusSettings
from ._work import DIAGRAM_COLUMNS, STATUS_FAILED, STATUS_OK, STATUS_SKIPPED

__all__ = [
    "StoreReader",
    "open_store",
    "TABLE",
    "MANIFEST",
    "ERRORS",
    "FORMAT",
    "FORMAT_VERSION",
    "CHECKSUMS",
    "PARTS",
    "part_name",
]

FORMAT = "attntopo-corpus"
FORMAT_VERSION = 3
#: The sub-folder of the Parquet parts.
PARTS = "parts"
MANIFEST = "manifest.json"
ERRORS = "errors.jsonl"
#: The SHA-256 of every part as written, in ``sha256sum`` format (``sha256sum -c`` checks it).
CHECKSUMS = "parts.sha256"
_CHECKSUM_LINE = re.compile(r"^([0-9a-f]{64})  ((?:parts/)?part-\d{8}\.parquet)$")
#: The codec of every part's column chunks (checked in a part without a recorded SHA-256).
CODEC = "snappy"
_META_KEY = b"attntopo.corpus"
#: A manifest's store id (its first keys, as written by :meth:`StoreWriter.create`).
_STORE_ID = re.compile(rb'"store_id":\s*"([^"\\]*)"')
#: Why a part without page checksums is damaged (every part of a store is written with them).
_UNCHECKED = (
    "it was written without page checksums ({}), which every part of a store has: a changed "
    "value in it could not be seen"
)
#: What a manifest that cannot be used leaves a user to do.
_START_OVER = (
    "; --new-store (new_store=True) starts the store over (its parts are removed), "
    "or give another STORE"
)
_PART = re.compile(r"^part-(\d{8})\.parquet$")
_TMP = re.compile(r"^\.part-\d{8}\.parquet\.[0-9a-f]{16}\.tmp$")


#: The keys every manifest has (:meth:`StoreWriter.create`); the settings' own are checked by
#: :meth:`CorpusSettings.from_manifest`.
_MANIFEST_KEYS = ("store_id", "settings", "input", "feature_columns", "schema")
#: What each of them holds, in words (``settings``: :meth:`CorpusSettings.from_manifest`).
_COUNT = "a whole number of at least 0"
_MANIFEST_TYPES = {
    "store_id": (str, "a string"),
    "input": (dict, "an object"),
    "feature_columns": (list, "a list of column names"),
    "schema": (str, "a string"),
}
#: The names of the files a store writes (in its folder, and in ``parts/``).
OWN_FILE = re.compile(
    r"^(manifest\.json|errors\.jsonl|parts\.sha256|part-\d{8}\.parquet|\..*\.tmp)$"
)


def part_name(batch: int) -> str:
    """File name of batch ``batch``'s part: ``part-00000042.parquet``."""
    return f"part-{batch:08d}.parquet"


_SHA_DIFFERS = "its SHA-256 differs from the one recorded when it was written"


def checksum_name(name: str) -> str:
    """A part's name in :data:`CHECKSUMS`: relative to the store folder."""
    return f"{PARTS}/{name}"


def _schema_b64(schema: Any) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def _schema_from_b64(text: str) -> Any:
    pa = _pa()
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


class StoreReader(StoreSQL):
    """A corpus store folder, read (module docstring): its manifest, its rows, SQL over them.

    Open one with :func:`open_store` (or get it from :func:`attntopo.corpus.run`).  It has no
    method that writes: a run writes through a :class:`~attntopo.corpus.StoreWriter`, which
    holds a reader, never the other way round.

    Attributes
    ----------
    path : Path
        The folder.
    manifest : dict
        ``manifest.json`` as read.
    settings : CorpusSettings
        How the rows were computed.
    schema : pyarrow.Schema
        Schema of every part file.
    feature_columns : list of str
        Feature column names (``L{layer}H{head}.{set}.{quantity}``).
    """

    def __init__(self, path: Any) -> None:
        self.path = Path(path)
        doc = self._read_manifest()
        self.manifest = doc
        #: the folder of the part files, ``STORE/parts``
        self.parts_dir = self.path / PARTS
        #: the store's random id as this object opened it (its parts carry it): a reader
        #: stops when the manifest on disk holds another (:meth:`check_unchanged`)
        self.generation = doc["store_id"]
        mf = self.path / MANIFEST
        try:
            self.settings = CorpusSettings.from_manifest(doc.get("settings"))
        except ResultFormatError as e:
            why = str(e).removeprefix(MANIFEST + ": ")
            raise ResultFormatError(f"{mf}: {why}{_START_OVER}") from None
        try:
            self.schema = _schema_from_b64(doc["schema"])
        except Exception:  # noqa: BLE001 - any decoding failure is a corrupt manifest
            raise ResultFormatError(f"{mf}: the row schema cannot be read{_START_OVER}") from None
        self.feature_columns = list(doc["feature_columns"])
        self._parts: dict[int, Path] | None = None
        self._rows: dict[int, int] = {}
        # per part: its file's (size, mtime_ns) when it was checked or written here (a part
        # never changes after its atomic write, so it is not checked again while these hold)
        # and its bookkeeping summary (_summary), None until read: see _summaries
        self._known: dict[int, tuple[tuple[int, ...], dict | None]] = {}
        # parts.sha256 as last read (_recorded): a part whose bytes have their recorded
        # SHA-256 is as written, and a read checks only its tag and columns
        self._sums: dict[str, str] = {}
        self._cons: dict[
            tuple, Any
        ] = {}  # DuckDB: {(allow_external, memory_limit): (connection, rows)}
        #: the manifest entry of the input the run that returned this store appended (or None)
        self.appended: dict | None = None

    def _read_manifest(self) -> dict:
        """``manifest.json`` of :attr:`path`, checked (format and version); one line naming
        the file and the way on when it cannot be used."""
        mf = self.path / MANIFEST
        if not self.path.is_dir():
            raise InvalidInputError(f"{str(self.path)!r} is not a corpus store (no such folder)")
        if not mf.is_file():
            if (self.path / PARTS).is_dir() or (self.path / CHECKSUMS).is_file():
                raise InvalidInputError(
                    f"STORE {str(self.path)!r} holds parts but no {MANIFEST}: another run may be "
                    "starting it over (--new-store): open it again once that run has made it; if "
                    "no run is writing it, `attntopo corpus INPUT --out STORE --new-store` makes "
                    "it again"
                )
            try:
                made = all(OWN_FILE.match(e) for e in os.listdir(self.path))
            except OSError:
                made = False
            if made:  # empty, or a store's own temporary files: a run may be making it
                raise InvalidInputError(
                    f"{str(self.path)!r} is not a corpus store (no {MANIFEST}), or not yet: a run "
                    "making it (a new store, or --new-store starting it over) has not written its "
                    "manifest; open it again once that run has made it"
                )
            raise InvalidInputError(f"{str(self.path)!r} is not a corpus store (no {MANIFEST})")
        try:
            doc = json.loads(mf.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ResultFormatError(f"{mf}: unreadable ({_first_line(e)}){_START_OVER}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ResultFormatError(f"{mf}: not an attntopo corpus manifest")
        if doc.get("format_version") in (1, 2):
            raise ResultFormatError(
                f"{mf}: a store of corpus format version {doc['format_version']}, made before "
                "the first release by an attntopo that could name values under another head's "
                "name (layers or heads given out of order) and wrote parts without page "
                f"checksums, which this attntopo does not read: make it again{_START_OVER}"
            )
        if doc.get("format_version") != FORMAT_VERSION:
            raise ResultFormatError(
                f"{mf}: corpus format version {doc.get('format_version')!r}; this attntopo reads "
                f"{FORMAT_VERSION}"
            )
        missing = [repr(k) for k in _MANIFEST_KEYS if k not in doc]
        if missing:
            raise ResultFormatError(
                f"{mf}: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing, "
                "which every store of its format version has (the manifest was changed since "
                f"it was written){_START_OVER}"
            )
        for key, (kind, what) in _MANIFEST_TYPES.items():
            value = doc[key]
            if not isinstance(value, kind) or (
                kind is list and not all(isinstance(c, str) for c in value)
            ):
                raise ResultFormatError(
                    f"{mf}: {key!r} is {_json_kind(value)}, not {what} as in every store of its "
                    f"format version (the manifest was changed since it was written){_START_OVER}"
                )
        problem = _inputs_problem(doc)
        if problem:
            raise ResultFormatError(
                f"{mf}: {problem} (the manifest was changed since it was written){_START_OVER}"
            )
        return doc

    def _generation_on_disk(self) -> str | None:
        """The store id of the manifest now on disk (None: no manifest).  The id is among
        the first keys of every manifest written here, so the first 4 KB are read, not the
        whole file (hundreds of kB with ~2,000 columns)."""
        try:
            with open(self.path / MANIFEST, "rb") as f:
                head = f.read(4096)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            mf = self.path / MANIFEST
            raise ResultFormatError(f"{mf}: unreadable ({e.strerror or e})") from None
        m = _STORE_ID.search(head)
        if m:
            return m.group(1).decode("ascii", "replace")
        try:
            doc = json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return "unreadable"
        if not isinstance(doc, dict):
            return "unreadable"
        return doc.get("store_id") or "unreadable"

    def check_unchanged(self) -> None:
        """Raise :class:`~attntopo.errors.StoreReplacedError` if the store this object
        opened is no longer the one at :attr:`path`: another run started it over
        (``--new-store``: the manifest removed, then a new one with a new store id) or
        removed it.  Every read of this object checks this before and after it reads (and
        on any error), so it never returns rows of another store."""
        now = self._generation_on_disk()
        if now != self.generation:
            raise self._replaced(now)

    def _replaced(self, now: str | None) -> StoreReplacedError:
        if now is None:
            return StoreReplacedError(
                f"STORE {str(self.path)!r} was removed or is being started over (a run with "
                "--new-store) since this reader opened it: its rows are gone; open it again "
                "(open_store, or run the command again) once that run has made it"
            )
        return StoreReplacedError(
            f"STORE {str(self.path)!r} was replaced by a new store (a run with --new-store) "
            "since this reader opened it: these are no longer its rows; open it again "
            "(open_store, or run the command again)"
        )

    def _removed(self, path: Path) -> ResultFormatError:
        """A part listed by this reader and gone when read, in a store not replaced (a run
        removed it to recompute it); the listing is forgotten, so the next read lists again."""
        self._forget_parts()
        return ResultFormatError(
            f"{path}: removed since this reader listed the store's parts (a run recomputes a "
            "damaged part): run the command again"
        )

    # -------------------------------------------------------------- inputs (appends)
    def inputs(self) -> list[dict]:
        """The inputs the store was made from, in order: the manifest's ``inputs`` (written by
        the first append), else the one ``input`` it was made from.  Each entry: ``name``,
        ``fingerprint``, ``total`` and ``n_empty`` texts, ``first_part`` (its batch ``k`` is
        part ``first_part + k``), ``already`` (its texts whose id the store held before it:
        skipped) and, for an append, ``status`` (``"appending"`` until it is complete),
        ``added`` (UTC time), ``size`` and ``sha256`` of the file."""
        listed = self.manifest.get("inputs")
        if isinstance(listed, list) and listed:
            return [dict(e) for e in listed]
        first = dict(self.manifest.get("input", {}))
        first.update(first_part=0, already=0, status="done")
        return [first]

    @_same_store
    def stored_hashes(self, *, before: int | None = None) -> dict[str, str]:
        """``{id: text_sha256}`` of the rows of every part numbered below ``before`` (all); for
        a store of pairs ``text_sha256 + "+" + answer_sha256``
        (:func:`attntopo.corpus.record_sha256`)."""
        out: dict[str, str] = {}
        pairs = "answer_sha256" in self.schema.names
        for k, p in sorted(self.parts().items()):
            if before is None or k < before:
                t = self._read(p, ["id", "text_sha256"] + (["answer_sha256"] if pairs else []))
                hashes = t["text_sha256"].to_pylist()
                if pairs:
                    hashes = [f"{a}+{b}" for a, b in zip(hashes, t["answer_sha256"].to_pylist())]
                out.update(zip(t["id"].to_pylist(), hashes))
        return out

    # -------------------------------------------------------------- parts
    def _scan_parts(self) -> dict[int, Path]:
        parts: dict[int, Path] = {}
        rows: dict[int, int] = {}
        for entry in self._part_entries():
            p = self.parts_dir / entry
            m = _PART.match(entry)
            if m is None:
                if entry.endswith(".parquet"):
                    raise ResultFormatError(
                        f"{p}: a Parquet file that is not a part of this store (parts are named "
                        "part-NNNNNNNN.parquet): move it out of the store"
                    )
                continue
            k = int(m.group(1))
            try:
                key = _stat_key(p)
            except FileNotFoundError:  # listed, then removed
                raise self._removed(p) from None
            known = self._known.get(k)
            if known is None or known[0] != key or k not in self._rows:
                self._check_part(k, p, key)
            parts[k] = p  # checked (or written here), unchanged since
            rows[k] = self._rows[k]
        for k in [k for k in self._known if k not in parts]:
            del self._known[k]
        self._parts, self._rows = parts, rows
        return parts

    def _check_part(self, k: int, p: Path, key: tuple[int, ...]) -> bytes:
        """Check part ``k`` at ``p`` (its file's state ``key``, taken before it is read) once
        for that state (:meth:`_part_problem`): known then (:attr:`_known`, :attr:`_rows`);
        else :class:`~attntopo.errors.DamagedPartError`, one line naming it, :meth:`verify`
        and a run.  Returns the bytes checked: a read takes its rows from them, not from the
        path again (a file put there since would be read unchecked)."""

        try:
            data = p.read_bytes()
        except FileNotFoundError:  # listed, then removed
            raise self._removed(p) from None
        except OSError as e:
            raise damaged_part(p, k, f"unreadable: {e.strerror or e}") from None
        digest = hashlib.sha256(data).hexdigest()
        why, num_rows = self._damage(data, k, digest, self._recorded(p.name, digest))
        if why is not None:
            raise damaged_part(p, k, why)
        self._known[k] = (key, None)
        self._rows[k] = num_rows
        return data

    def _damage(
        self, data: bytes, batch: int, digest: str, recorded: str | None
    ) -> tuple[str | None, int]:
        """Why the bytes ``data`` of batch ``batch``'s part (their SHA-256 ``digest``; the one
        recorded when it was written: ``recorded``, or None) are damaged, in words, or None;
        and its rows.  The one check of every read (:meth:`_check_part`) and of
        :meth:`verify`.  Bytes as written (``digest == recorded``): its tag and columns
        (:meth:`_part_problem`).  Else every check, then every page of every column read,
        each page's CRC checked; bytes that pass them all but differ from their record are
        damaged too, named by the record."""
        import pyarrow.parquet as pq

        full = digest != recorded
        try:
            # Not read_metadata(p).schema.to_arrow_schema(): FileMetaData.schema makes a
            # reference cycle (the ParquetSchema points back at its FileMetaData), so each
            # parsed footer (~2,000 column chunks) would wait for the garbage collector,
            # and over hundreds of parts the heap grew with their number.  ParquetFile
            # gives the same Arrow schema and key-value metadata, freed at once.
            with pq.ParquetFile(_pa().BufferReader(data), page_checksum_verification=full) as pf:
                why = self._part_problem(data, pf, batch, as_written=not full)
                rows = pf.metadata.num_rows
                if why is None and full:
                    pf.read()  # every page of every column: each page's CRC is checked
        except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds
            return _unreadable(e), 0
        if why is None and recorded is not None and full:
            why = _SHA_DIFFERS
        return why, rows

    def _recorded(self, name: str, digest: str) -> str | None:
        """The SHA-256 recorded for the part file ``name`` (:data:`CHECKSUMS`), or None; the
        record is read again when it does not have the name or has another digest than
        ``digest`` (a part written, or recomputed by a resume, since it was read)."""
        entry = checksum_name(name)
        if self._sums.get(entry) != digest:
            self._sums = self.checksums()
        return self._sums.get(entry)

    def _part_problem(
        self, data: bytes, pf: Any, batch: int, *, as_written: bool = False
    ) -> str | None:
        """Why the bytes ``data`` of batch ``batch``'s part (opened as ``pf``, a
        :class:`pyarrow.parquet.ParquetFile`) are damaged, in words, or None: the checks of
        every read (:meth:`_check_part`) and of :meth:`verify` (which then reads every page).
        Its tag, the same in the footer's key-value pairs and in the Arrow schema kept there
        (readers take one or the other), names this store and batch and says its pages have
        checksums; its columns are the store's; its footer maps its bytes as they are written
        (:func:`_layout_error`: checked before any offset of it is used, so a flipped bit
        there never reads another column's pages under this column's name); every page header
        holds a CRC (:func:`~attntopo.corpus._pages.pages_all_checked`, where in words:
        :func:`~attntopo.corpus._pages.page_without_checksum`); its rows are its tag's.
        ``as_written``: its bytes have the SHA-256 recorded when it was written, so its footer
        and pages are as written (~2 ms to hash a part of 2,100 columns against ~45 ms for
        those checks): its tag and columns only."""
        from ._pages import page_without_checksum, pages_all_checked

        md = pf.metadata
        tag = _tag_doc(md.metadata)
        if _tag_doc(pf.schema_arrow.metadata) != tag:
            return "its tag is not the same in the two places it is written"
        if _tag(md.metadata) != (self.generation, batch):
            return "its tag (the store and batch it was written for) is another's"
        if pf.schema_arrow.remove_metadata() != self.schema.remove_metadata():
            return "its columns differ from the store's"
        if not tag.get("page_checksums"):
            return _UNCHECKED.format("its tag says so")
        if as_written:
            return None
        layout, chunks, rows = _layout_error(data)
        if layout is not None:
            return f"its footer is inconsistent ({layout})"
        if not pages_all_checked(data):
            page = page_without_checksum(data, chunks)  # their offsets checked above
            if page is not None:
                return _UNCHECKED.format(page)
            return (
                "its page headers, each with its CRC, cannot be walked one after the other from "
                "byte 4 up to its footer, as every part is written"
            )
        if tag.get("rows") != rows:
            return f"its footer says {rows} rows, its tag says {tag.get('rows')}"
        return None

    def _check_state(self, k: int, p: Path) -> tuple[bytes | None, tuple[int, ...]]:
        """:meth:`_check_part` of part ``k`` at ``p`` unless it was checked (or written here)
        in the state its file has now: a stat, not a read, for a part unchanged.  Returns the
        bytes checked now (None: checked before) and the file's state."""
        try:
            key = _stat_key(p)
        except FileNotFoundError:  # listed, then removed
            raise self._removed(p) from None
        known = self._known.get(k)
        if known is None or known[0] != key:
            return self._check_part(k, p, key), key
        return None, key

    def _check_parts_unchanged(self) -> None:
        """:meth:`_check_state` of every part listed (before a query reads them); one removed
        since is left to the query, which names it."""
        for k, p in sorted((self._parts or {}).items()):
            if p.exists():
                self._check_state(k, p)

    def _part_entries(self) -> list[str]:
        """The names in :attr:`parts_dir`, sorted (none while it does not exist)."""
        try:
            return sorted(os.listdir(self.parts_dir))
        except FileNotFoundError:
            return []

    def part_path(self, batch: int) -> Path:
        """Where batch ``batch``'s part file is (or would be)."""
        return self.parts_dir / part_name(batch)

    @_same_store
    def parts(self) -> dict[int, Path]:
        """``{batch: path}`` of every part file, each checked (footer readable, written by this
        store for that batch, the store's columns)."""
        return dict(self._parts if self._parts is not None else self._scan_parts())

    def refresh(self) -> "StoreReader":
        """Read the folder again (after another process added parts, or appended an input:
        the manifest is read again too).

        Raises
        ------
        StoreReplacedError
            The store was replaced (``--new-store``) or removed since it was opened.
        """
        self.check_unchanged()
        try:
            doc = self._read_manifest()
        except (InvalidInputError, ResultFormatError):
            self.check_unchanged()
            raise
        now = doc["store_id"]
        if now != self.generation:
            raise self._replaced(now)
        self.manifest = doc
        self._parts = None
        self._cons = {}
        return self

    def done_batches(self) -> set[int]:
        """Batches whose part file exists."""
        return set(self.parts())

    def n_rows(self) -> int:
        """Rows in the part files (every status)."""
        self.parts()
        return sum(self._rows.values())

    @_same_store
    def done_ids(self) -> set[str]:
        """Ids of every row in the part files (every status)."""
        out: set[str] = set()
        for p in self.parts().values():
            out.update(self._read(p, ["id"])["id"].to_pylist())
        return out

    # -------------------------------------------------------------- what a writer tells it
    def _wrote_part(self, batch: int, path: Path, table: Any) -> None:
        """The writer holding this reader wrote ``table`` as batch ``batch``'s part at
        ``path``: it is known (its footer was checked by its writing, its summary is the
        table's), so counts and the error log read nothing of it again."""
        self._known[batch] = (_stat_key(path), _summary(table.select(list(_SUMMARY_COLUMNS))))
        self._rows[batch] = table.num_rows
        if self._parts is not None:
            self._parts[batch] = path
        self._cons = {}

    def _forget_parts(self) -> None:
        """A part was removed (by the writer holding this reader, or another run): the next
        read lists them again."""
        self._parts, self._cons = None, {}

    # -------------------------------------------------------------- checksums
    def checksums(self) -> dict[str, str]:
        """``{part file name: SHA-256 hex}`` recorded when each part was written (names
        relative to the store folder, ``parts/part-00000000.parquet``; the last record of a
        name wins; lines that do not parse are ignored)."""
        try:
            text = (self.path / CHECKSUMS).read_text(encoding="ascii", errors="replace")
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise ResultFormatError(
                f"{self.path / CHECKSUMS}: unreadable ({e.strerror or e})"
            ) from None
        out = {}
        for line in text.splitlines():
            m = _CHECKSUM_LINE.match(line)
            if m:
                out[m.group(2)] = m.group(1)
        return out

    def verify(self) -> dict[int, str]:
        """Check every part file's bytes; returns ``{batch: why}`` of the damaged ones.

        A part whose SHA-256 was recorded when it was written (:data:`CHECKSUMS`) must still
        have it.  A part without a record (the record lost, or a run killed between a part's
        rename and its record) is trusted only when its own checksums hold: the CRC of every
        page (written with each part), its footer's layout (column chunks one after the
        other up to the footer, the rows its tag names) and its tag (this store, this batch);
        a flipped bit in a page is then an error, never another value (a resumed run,
        :meth:`StoreWriter.verify`, then records its SHA-256, of the very bytes checked).  A
        part without a record whose pages lack their checksums (rewritten by another program:
        every part of a store is written with them) is damaged: a changed value in it could
        not be seen.  A resumed run checks every part so before it trusts any
        (:func:`~attntopo.corpus.prepare`).
        """
        return self._verify()[0]

    @_same_store
    def _verify(self) -> tuple[dict[int, str], dict[str, str]]:
        """:meth:`verify`'s ``{batch: why}`` and ``{name: SHA-256}`` of the parts without a
        record whose own checksums hold (what :meth:`StoreWriter.verify` records)."""
        known = self.checksums()
        damaged: dict[int, str] = {}
        certified: dict[str, str] = {}
        for entry in self._part_entries():
            m = _PART.match(entry)
            if m is None:
                continue
            k, p = int(m.group(1)), self.parts_dir / entry
            entry = checksum_name(entry)
            try:
                data = p.read_bytes()  # ~1 MB: hashed and checked as the same bytes
            except OSError as e:
                damaged[k] = f"unreadable: {e.strerror or e}"
                continue
            digest = hashlib.sha256(data).hexdigest()
            if known.get(entry) == digest:
                continue  # as written
            why, _ = self._damage(data, k, digest, known.get(entry))
            if why is not None:
                damaged[k] = why
            else:
                certified[entry] = digest
        return damaged, certified

    # -------------------------------------------------------------- reading
    def _read(self, path: Path, columns: list[str] | None = None) -> Any:
        """A part's rows (``columns``: a subset), its page checksums verified: from the bytes
        :meth:`_check_part` checked, or, for a part checked before, from the file, its state
        after the read the one checked (else it is checked again and read from the bytes
        checked).  A part replaced or changed since it was checked is never read unchecked."""
        m = _PART.match(path.name)
        if m is None:  # every caller reads the parts it listed
            raise ValueError(f"{path}: not a part file name")
        k = int(m.group(1))
        data, key = self._check_state(k, path)
        table = self._read_table(path, k, data, columns)
        if data is None:
            try:
                now = _stat_key(path)
            except FileNotFoundError:
                raise self._removed(path) from None
            if now != key:  # changed while it was read: check it, and read what was checked
                table = self._read_table(path, k, self._check_part(k, path, now), columns)
        return table

    def _read_table(self, path: Path, k: int, data: bytes | None, columns: Any) -> Any:
        """Part ``k``'s rows from ``data`` (the bytes checked), else from ``path``."""
        import pyarrow.parquet as pq

        source = path if data is None else _pa().BufferReader(data)
        try:
            return pq.read_table(source, columns=columns, page_checksum_verification=True)
        except FileNotFoundError:
            raise self._removed(path) from None
        except Exception as e:  # noqa: BLE001
            raise damaged_part(path, k, _unreadable(e)) from None

    @_same_store
    def to_arrow(self, *, columns: list[str] | None = None) -> Any:
        """Every row, in input order, as a :class:`pyarrow.Table` (``columns``: a subset)."""
        pa = _pa()
        parts = self.parts()
        tables = [self._read(parts[k], columns) for k in sorted(parts)]
        if not tables:
            schema = (
                self.schema
                if columns is None
                else pa.schema([self.schema.field(c) for c in columns])
            )
            return schema.empty_table()
        return pa.concat_tables(tables).replace_schema_metadata(None)

    def to_pandas(self, *, columns: list[str] | None = None) -> Any:
        """Every row, in input order, as a :class:`pandas.DataFrame` (``status`` says which
        rows have features: ``ok``)."""
        try:
            import pandas  # noqa: F401
        except ImportError:
            raise MissingDependencyError("to_pandas needs pandas: pip install pandas") from None
        return self.to_arrow(columns=columns).to_pandas()

    @_same_store
    def diagrams(self, id: str) -> dict[tuple[int, int], Any]:
        """The JS persistence diagram of every head of the text ``id``.

        Returns
        -------
        dict
            ``{(layer, head): Diagram}``
            (layer-major; H0 and H1, ``inf`` for the bar that never dies).

        Raises
        ------
        InvalidInputError
            The store keeps no diagrams (made without ``keep_diagrams``), or no row has that
            id, or the row has none (skipped or failed).
        """
        from ..topology import Diagram

        st = self.settings
        if not st.keep_diagrams:
            raise InvalidInputError(
                f"{self.path} keeps no diagrams: make it with keep_diagrams=True (--keep-diagrams)"
            )
        sel = ", ".join(DIAGRAM_COLUMNS)
        got = self._fetch(f"SELECT status, {sel} FROM {TABLE} WHERE id = ?", [str(id)])
        if not got:
            raise InvalidInputError(f"no row with id {id!r} in {self.path}")
        status, births, deaths, dims = got[0]
        if status != STATUS_OK or births is None:
            raise InvalidInputError(f"row {id!r} has no diagrams (status {status})")
        import numpy as np

        heads = [(a, b) for a in st.features.layers for b in st.features.heads]
        out = {}
        for (layer, head), b, d, k in zip(heads, births, deaths, dims):
            b, d, k = np.asarray(b, float), np.asarray(d, float), np.asarray(k, int)
            out[(layer, head)] = Diagram(
                [np.stack([b[k == dim], d[k == dim]], axis=1) for dim in range(st.maxdim + 1)],
                maxdim=st.maxdim,
            )
        return out

    # -------------------------------------------------------------- counts, errors
    @_same_store
    def counts(self) -> dict[str, int]:
        """``{"total", "done", "ok", "truncated", "skipped_empty", "skipped_long", "failed",
        "remaining"}``: ``total`` non-empty input texts, ``done`` rows in the store (any
        status), ``ok`` rows with features (``truncated`` of them cut), ``skipped_empty``
        empty input texts, ``skipped_long`` too-long texts skipped, ``failed`` failed rows,
        ``remaining`` texts not yet in the store."""
        inputs = self.inputs()  # an appended store: every input's texts not stored before it
        total = sum(e["total"] - e["already"] for e in inputs)
        out = {
            "total": total,
            "done": 0,
            "ok": 0,
            "truncated": 0,
            "skipped_empty": sum(e["n_empty"] for e in inputs),
            "skipped_long": 0,
            "failed": 0,
        }
        for summary in self._summaries():
            for key in ("done", "ok", "truncated", "skipped_long", "failed"):
                out[key] += summary[key]
        out["remaining"] = max(0, total - out["done"])
        return out

    def _summaries(self) -> Iterator[dict]:
        """Each part's :func:`_summary`, in batch order: kept from its write in this process,
        else read once (its few bookkeeping columns) and kept while the file is unchanged.

        Counts and the error log need a handful of columns of every part; reading them means
        parsing each part's footer (~15 ms: metadata for ~2,000 feature columns), which had
        made the end of a run cost ~50 ms a part (the error log, then the final counts).
        """
        for k, path in sorted(self.parts().items()):
            known = self._known.get(k)
            try:
                key = _stat_key(path)
            except FileNotFoundError:
                raise self._removed(path) from None
            if known is None or known[0] != key or known[1] is None:
                known = self._known[k] = (key, _summary(self._read(path, list(_SUMMARY_COLUMNS))))
            yield known[1]

    @_same_store
    def errors(self) -> list[dict]:
        """The entries of ``errors.jsonl`` (skipped and failed rows)."""
        p = self.path / ERRORS
        if not p.is_file():
            return []
        return [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]

    def __len__(self) -> int:
        return self.n_rows()

    def __repr__(self) -> str:
        c = self.counts()
        return (
            f"StoreReader({str(self.path)!r}, rows={c['done']}/{c['total']}, ok={c['ok']}, "
            f"failed={c['failed']}, model={self.settings.model!r}, "
            f"sets={list(self.settings.features.sets)})"
        )


#: The bookkeeping columns a part's summary is made of.
_SUMMARY_COLUMNS = ("id", "row", "status", "error", "n_tokens", "truncated", "n_unknown")


def _stat_key(path: Path) -> tuple[int, ...]:
    """What tells a part file's changes here: size, times and inode (a part is only ever
    replaced as a whole, by a rename)."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _tag_doc(kv: Any) -> dict:
    """A part's tag in its Parquet key-value metadata (:meth:`StoreWriter.write_part`): ``store``
    (id), ``batch``, ``rows`` and ``page_checksums``; ``{}`` if it has none."""
    try:
        tag = json.loads((kv or {})[_META_KEY])
    except (KeyError, ValueError, TypeError):
        return {}
    return tag if isinstance(tag, dict) else {}


def _tag(kv: Any) -> tuple[Any, Any]:
    """``(store id, batch)`` of a part's tag (Nones if it has none)."""
    tag = _tag_doc(kv)
    return tag.get("store"), tag.get("batch")


def damaged_part(path: Path, batch: int, why: str, then: str = _RECOMPUTE) -> DamagedPartError:
    """The one line of a damaged part (``why``: :meth:`StoreReader._part_problem`'s words),
    the same on every path; ``then`` says what to do (a run of the same command recomputes
    it)."""
    return DamagedPartError(
        f"{path}: corrupt part file ({why}){then}", path=path, batch=batch, why=why
    )


def _unreadable(e: BaseException) -> str:
    return f"it cannot be read in full: {_first_line(e)}"


#: The keys of the manifest's record of an input that counts and appends read (``input``;
#: each of ``inputs``, which an append writes, has those of :data:`_APPENDED` too), with
#: their types in words: :meth:`StoreReader.counts` and an append's part numbers use them.
_INPUT = {"fingerprint": "a string", "total": _COUNT, "n_empty": _COUNT}
_APPENDED = {"first_part": _COUNT, "already": _COUNT, "status": "a string"}
_AS_EVERY = " as in every store of its format version"


def _inputs_problem(doc: dict) -> str | None:
    """What is wrong with the manifest's records of its inputs, in words (the caller adds
    what changed it and the way out); None when nothing is."""
    entries = [("input", doc["input"], _INPUT)]
    if "inputs" in doc:
        listed = doc["inputs"]
        if not isinstance(listed, list) or not listed:
            return f"'inputs' is {_json_kind(listed)}, not a list of objects{_AS_EVERY}"
        entries += [(f"inputs[{i}]", e, {**_INPUT, **_APPENDED}) for i, e in enumerate(listed)]
    for where, entry, keys in entries:
        if not isinstance(entry, dict):
            return f"{where!r} is {_json_kind(entry)}, not an object{_AS_EVERY}"
        missing = [repr(f"{where}.{k}") for k in keys if k not in entry]
        if missing:
            are = "is" if len(missing) == 1 else "are"
            return (
                f"{', '.join(missing)} {are} missing, which every store of its format version has"
            )
        for key, what in keys.items():
            value = entry[key]
            fits = (
                isinstance(value, int) and not isinstance(value, bool) and value >= 0
                if what == _COUNT
                else isinstance(value, str)
            )
            if not fits:
                return f"'{where}.{key}' is {_json_kind(value)}, not {what}{_AS_EVERY}"
    return None


def _json_kind(value: Any) -> str:
    """What a manifest value is, in JSON's words (a list: what it holds that is not a string)."""
    if isinstance(value, list):
        odd = [v for v in value if not isinstance(v, str)]
        return f"a list holding {_json_kind(odd[0])}" if odd else "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", dict: "an object"}.get(type(value), type(value).__name__)


def _layout_error(data: bytes) -> tuple[str | None, list, int]:
    """What is wrong with a part's footer as a map of its bytes (or None), its column chunks
    (:func:`~attntopo.corpus._pages.footer_chunks`) and its rows: its column chunks follow
    each other from byte 4 up to the footer, each compressed with :data:`CODEC`, as every
    part is written, and its row groups hold its rows.  The page checksums cover the pages,
    not the footer: one bit flipped in a chunk's offset or size would read another column's
    pages (whose checksums hold) under this column's name, and one in its codec would read
    its compressed bytes as values."""
    from ._pages import CODECS, footer_chunks

    footer_start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    try:
        chunks, group_rows, rows = footer_chunks(data)
    except ValueError as e:
        return f"it cannot be read: {e}", [], -1
    end = 4
    for path, start, size, codec in chunks:
        if start != end:
            return f"column {path!r} starts at byte {start}, not {end}", chunks, rows
        if CODECS.get(codec, "").lower() != CODEC:
            what = CODECS.get(codec, f"codec number {codec}")
            return f"column {path!r} says it is {what}, not {CODEC.upper()}", chunks, rows
        end = start + size
    if end != footer_start:
        why = f"its column chunks end at byte {end}, its footer starts at {footer_start}"
        return why, chunks, rows
    if group_rows != rows:
        return f"its row groups hold {group_rows} rows, its footer says {rows}", chunks, rows
    return None, chunks, rows


def _summary(t: Any) -> dict:
    """Counts of a part's rows (``done``, ``ok``, ``truncated`` among ok, ``skipped_long``,
    ``failed``, ``unknown``: rows holding unknown tokens) and its skipped or failed rows as
    ``errors.jsonl`` entries, from a table of :data:`_SUMMARY_COLUMNS`."""
    import pyarrow.compute as pc

    status = t["status"].to_numpy(zero_copy_only=False)
    ok = status == STATUS_OK
    truncated = t["truncated"].fill_null(False).to_numpy(zero_copy_only=False)
    bad = t.filter(pc.not_equal(t["status"], STATUS_OK)).to_pylist() if not ok.all() else []
    return {
        "done": int(status.size),
        "ok": int(ok.sum()),
        "truncated": int((ok & truncated).sum()),
        "skipped_long": int((status == STATUS_SKIPPED).sum()),
        "failed": int((status == STATUS_FAILED).sum()),
        "unknown": int((t["n_unknown"].fill_null(0).to_numpy(zero_copy_only=False) > 0).sum()),
        "errors": [{k: r[k] for k in ("id", "row", "status", "error", "n_tokens")} for r in bad],
    }


def open_store(path: Any) -> StoreReader:
    """Open a corpus store folder for reading (:class:`StoreReader`).

    >>> store = open_store("my_store")                                  # doctest: +SKIP
    >>> store.sql('SELECT id, "L0H0.js.h1.total_persistence" FROM corpus LIMIT 3')  # doctest: +SKIP
    """
    store = StoreReader(path)
    store.parts()  # a corrupt or foreign part file is reported now, by name
    return store
