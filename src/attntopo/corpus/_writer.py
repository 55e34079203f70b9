"""The writer of a corpus store (:class:`StoreWriter`), its lock and the checks of a STORE
path: everything that changes a store's folder, and nothing a reader needs.

A :class:`StoreWriter` holds a :class:`~attntopo.corpus.StoreReader` of the same folder
(:attr:`StoreWriter.store`) for everything it reads, and tells it what it wrote, so a run's
counts and error log read nothing it has just written.  The reader holds no writer: what
:func:`~attntopo.corpus.open_store` returns cannot write.  The layout, the atomic writes and
the checks are the module docstring of ``_store``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any, Iterator

from .._validation import refused_path
from ..errors import InvalidInputError
from ..io import (
    atomic_write_bytes,
    atomic_write_text,
    json_safe,
    lock_folder,
    new_folders_removed_on_error,
    unlock_folder,
)
from ._input import _pa
from ._settings import CorpusSettings
from ._store import (
    _META_KEY,
    _PART,
    _TMP,
    CHECKSUMS,
    CODEC,
    ERRORS,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    OWN_FILE,
    PARTS,
    TABLE,
    StoreReader,
    _schema_b64,
    checksum_name,
    part_name,
)

__all__ = ["StoreWriter", "StoreLock", "lock_store", "check_store_path", "can_start_over"]


def can_start_over(path: Path) -> bool:
    """Whether ``--new-store`` may clear the folder ``path`` although its manifest cannot be
    used (unreadable, without settings, another format version): its manifest is not another
    program's (JSON naming another format), the folder shows it is a store (the manifest
    names the corpus format, or it has ``parts/`` or :data:`CHECKSUMS`), and it holds only
    the files a store writes."""
    try:
        raw = (path / MANIFEST).read_bytes()
    except OSError:
        return False
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None  # torn or overwritten: a damaged manifest
        store_like = (path / PARTS).is_dir() or (path / CHECKSUMS).is_file()
        if FORMAT.encode() not in raw and not store_like:
            return False
    if doc is not None and (not isinstance(doc, dict) or doc.get("format") != FORMAT):
        return False
    try:
        for entry in os.listdir(path):
            if entry == PARTS and (path / PARTS).is_dir():
                if not all(OWN_FILE.match(e) for e in os.listdir(path / PARTS)):
                    return False
            elif not OWN_FILE.match(entry):
                return False
    except OSError:
        return False
    return True


def _manifest_tmp(entry: str) -> bool:
    """A temporary file of an interrupted manifest write (removed by the next creation)."""
    return entry.startswith(f".{MANIFEST}.") and entry.endswith(".tmp")


def _own_temporary(entry: str) -> bool:
    """A temporary file of a store's own atomic writes (manifest or part)."""
    return _manifest_tmp(entry) or _TMP.match(entry) is not None


def check_store_path(path: Any) -> Path:
    """``path`` as a Path if a store can be written there; else one line, nothing written.

    Allowed: a folder that does not exist yet under a writable folder, an empty writable
    folder, or a writable corpus store (a folder with ``manifest.json``).
    """
    try:
        p = Path(path)
    except TypeError:
        raise InvalidInputError(f"out must be a folder path, got {type(path).__name__}") from None
    if "://" in str(path):
        # s3://bucket/store would otherwise become a local folder named 's3:'
        raise InvalidInputError(
            f"STORE {str(path)!r} is a URL: stores are local (or mounted) folders for now; "
            "docs/corpus.md says what object storage would need"
        )
    if "\0" in str(path):  # pathlib answers "does not exist" for it; creating it would fail
        raise InvalidInputError(f"STORE {str(path)!r} holds a null byte: give a folder path")
    with refused_path(f"STORE {str(path)!r} cannot be used"):
        return _check_store_folder(p)


def _check_store_folder(p: Path) -> Path:
    if p.exists() and not p.is_dir():
        raise InvalidInputError(
            f"STORE {str(p)!r} is a file: give a folder (new, empty, or a corpus store)"
        )
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise InvalidInputError(f"STORE {str(p)!r} is not writable")
        # a creating run's (or a killed one's) temporary files are not "other files"; nor is a
        # store another run made between the two looks (its manifest is its first file): the
        # lock then says so
        if not (p / MANIFEST).is_file():
            others = [e.name for e in p.iterdir() if not _own_temporary(e.name)]
            if others and MANIFEST not in others and not (p / MANIFEST).is_file():
                raise InvalidInputError(
                    f"STORE {str(p)!r} is a folder that holds other files and no {MANIFEST}: "
                    "give a new or empty folder, or an existing corpus store"
                )
        return p
    parent = p.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InvalidInputError(f"STORE {str(p)!r} cannot be created: {str(parent)!r} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidInputError(
            f"STORE {str(p)!r} cannot be created: {str(parent)!r} is not writable"
        )
    return p


class StoreLock:
    """The lock of one store folder, held by this process (:func:`lock_store`).

    Attributes
    ----------
    path : Path
        The store folder.
    fd : int or None
        The open folder whose ``flock`` is held (None where there is no ``fcntl``).
    made : bool
        Whether :func:`lock_store` created the folder (it is removed again by :meth:`release`
        with ``remove_if_empty=True`` while still empty).
    """

    def __init__(self, path: Path, fd: int | None, made: bool) -> None:
        self.path, self.fd, self.made = path, fd, made

    def check(self, path: Path) -> None:
        """Raise unless this lock is held and is the lock of the folder ``path``."""
        if self.fd is None and _no_flock():  # pragma: no cover
            return
        try:
            same = self.fd is not None and os.path.samestat(os.fstat(self.fd), os.stat(path))
        except OSError:
            same = False
        if not same:
            raise InvalidInputError(
                f"STORE {str(path)!r}: this run does not hold its lock (released or another folder)"
            )

    def release(self, *, remove_if_empty: bool = False) -> None:
        """Release the lock (once); with ``remove_if_empty``, first remove the folder if this
        lock made it and nothing was written into it (a refused run leaves no folder)."""
        if self.fd is None:
            return
        if remove_if_empty and self.made:
            try:
                os.rmdir(self.path)  # only while empty; still under the lock
            except OSError:
                pass
        fd, self.fd = self.fd, None
        unlock_folder(fd)

    def __enter__(self) -> "StoreLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release(remove_if_empty=exc[0] is not None)


def _no_flock() -> bool:
    from .. import io as _io

    return _io.fcntl is None


def lock_store(path: Any) -> StoreLock:
    """Take the lock of the store folder ``path`` (created if missing) before touching it.

    The protocol (docs/corpus.md, "Who writes when"): every run that creates, clears, resumes
    or writes a store holds an exclusive ``flock`` on the store folder from before it reads
    the manifest until its last write; the kernel drops it when the process dies, however it
    dies.  A folder that does not exist yet is created first (``mkdir``; two runs may both
    try, one of them makes it) and then locked; after the lock is held, the folder at
    ``path`` must still be the folder locked (another run may have removed an empty folder it
    had made between the two steps): if not, the steps are repeated.

    Raises
    ------
    InvalidInputError
        Another process holds the lock (one line, nothing changed), or the folder cannot be
        created.
    """
    p = Path(path)
    for _ in range(20):
        made = False
        try:
            if not p.is_dir():
                with new_folders_removed_on_error(p.parent):
                    os.makedirs(p.parent, exist_ok=True)
                    try:
                        os.mkdir(p)
                        made = True
                    except FileExistsError:
                        pass
        except OSError as e:
            raise InvalidInputError(
                f"STORE {str(p)!r} cannot be created: {e.strerror or e}"
            ) from None
        try:
            fd = lock_folder(p, wait=False)
        except BlockingIOError:
            raise InvalidInputError(
                f"STORE {str(p)!r} is being written by another run: nothing was changed; run "
                "the command again once that run has ended (it continues the store)"
            ) from None
        except FileNotFoundError:  # removed between mkdir and open: again
            continue
        except OSError as e:
            raise InvalidInputError(
                f"STORE {str(p)!r} cannot be created: {e.strerror or e}"
            ) from None
        if fd is None:  # pragma: no cover - no fcntl: no lock
            return StoreLock(p, None, made)
        try:
            if os.path.samestat(os.fstat(fd), os.stat(p)):
                return StoreLock(p, fd, made)
        except FileNotFoundError:
            pass
        unlock_folder(fd)  # the folder locked is no longer the one at p: again
    raise InvalidInputError(
        f"STORE {str(p)!r} keeps changing while this run tries to lock it: try again"
    )


class StoreWriter:
    """What a run writes into a corpus store: its parts, manifest, checksums and error log.

    ``StoreWriter(store, lock=lock)`` writes the store that ``store`` (a
    :class:`~attntopo.corpus.StoreReader`, or its folder) reads, under ``lock`` (the folder's
    :class:`StoreLock`, held by the caller for the whole run); without a lock every write
    takes the lock for itself alone (one line if another run holds it).  Every write checks,
    under the lock, that the store on disk is still the one :attr:`store` opened
    (:class:`~attntopo.errors.StoreReplacedError` otherwise).  :meth:`create` makes a new store.

    Attributes
    ----------
    store : StoreReader
        The reader of the same folder: everything the writer reads, and what a run returns.
    lock : StoreLock or None
        The store's lock while a run holds it.
    """

    def __init__(self, store: Any, *, lock: StoreLock | None = None) -> None:
        self.store = store if isinstance(store, StoreReader) else StoreReader(store)
        self.lock = lock

    @property
    def path(self) -> Path:
        """The store folder."""
        return self.store.path

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """The block changes the folder: under the lock this writer holds (checked), else
        under the lock taken for the block alone (one line if another run holds it); the
        store on disk must still be the one :attr:`store` opened."""
        if self.lock is not None:
            self.lock.check(self.path)
            self.store.check_unchanged()
            yield
            return
        with lock_store(self.path):
            self.store.check_unchanged()
            yield

    # -------------------------------------------------------------- creation
    @classmethod
    def create(
        cls,
        path: Path,
        settings: CorpusSettings,
        schema: Any,
        input_info: dict,
        feature_columns: list[str],
        *,
        extra: dict | None = None,
        lock: StoreLock | None = None,
    ) -> StoreWriter:
        """Write a new store's manifest (the folder is created; it must be new or empty) and
        return its writer.

        Under ``lock`` (the folder's :class:`StoreLock`, held by the caller, who then keeps
        it on the returned writer), else under the lock taken here for the creation alone.
        A folder that holds a manifest by then (another run made a store there first) or
        other files is refused, unchanged.
        """
        if lock is None:
            with lock_store(path) as held:
                writer = cls.create(
                    path, settings, schema, input_info, feature_columns, extra=extra, lock=held
                )
                writer.lock = None
                return writer
        lock.check(path)
        if (path / MANIFEST).is_file():
            raise InvalidInputError(
                f"STORE {str(path)!r} is a corpus store already (another run made it first)"
            )
        entries = os.listdir(path)
        others = [e for e in entries if not _own_temporary(e)]
        if others:
            raise InvalidInputError(
                f"STORE {str(path)!r} is a folder that holds other files and no {MANIFEST}: give "
                "a new or empty folder, or an existing corpus store"
            )
        for e in entries:  # what a run killed while it created the store left
            if _own_temporary(e):
                os.unlink(path / e)
        from .._version import __version__

        doc = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "store_id": secrets.token_hex(8),
            "table": TABLE,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "attntopo": __version__,
            "settings": settings.to_manifest(),
            "input": dict(input_info),
            "feature_columns": list(feature_columns),
            "columns": [[f.name, str(f.type)] for f in schema],
            "schema": _schema_b64(schema),
            **(extra or {}),
        }
        try:
            atomic_write_text(
                path / MANIFEST, json.dumps(json_safe(doc), indent=1, ensure_ascii=False) + "\n"
            )
        except OSError as e:
            # check_store_path looks at permissions; a read-only or full file system, or a
            # folder where nothing can be created (/proc, also for root), shows only here
            raise InvalidInputError(
                f"STORE {str(path)!r} cannot be created: {e.strerror or e}"
            ) from None
        writer = cls(path, lock=lock)
        writer.store.parts_dir.mkdir(exist_ok=True)
        return writer

    def update_manifest(self, **changes: Any) -> None:
        """Rewrite ``manifest.json`` atomically with ``changes`` (under the store's lock): a
        reader sees the old manifest or the new one, never a torn one."""
        doc = {**self.store.manifest, **changes}
        with self._writing():
            atomic_write_text(
                self.path / MANIFEST,
                json.dumps(json_safe(doc), indent=1, ensure_ascii=False) + "\n",
            )
        self.store.manifest = doc

    def write_part(self, batch: int, table: Any) -> Path:
        """Write one batch's rows atomically as
        ``parts/part-<batch>.parquet`` (module docstring)."""
        import pyarrow.parquet as pq

        pa = _pa()
        if table.schema.remove_metadata() != self.store.schema.remove_metadata():
            raise InvalidInputError(
                f"batch {batch}: its rows' columns differ from the store's schema"
            )
        tag = json.dumps(
            {
                "store": self.store.manifest["store_id"],
                "batch": int(batch),
                "rows": table.num_rows,
                "page_checksums": True,
            }
        ).encode()
        table = table.replace_schema_metadata({_META_KEY: tag})
        sink = pa.BufferOutputStream()
        # thousands of float64 feature columns of one batch each: dictionaries and min/max
        # statistics on them cost a third of the write and make the file larger; the
        # bookkeeping and carried columns keep both.  Snappy, not zstd: on a real part (32
        # texts, ~2,100 columns) zstd took 73 ms and 729 KB, snappy 37 ms and 719 KB (the
        # per-column cost dominates), and every Parquet reader has snappy.
        plain = set(self.store.feature_columns) | {
            "diagram_births",
            "diagram_deaths",
            "diagram_dims",
        }
        rest = [c for c in table.column_names if c not in plain]
        # a CRC in every page: a part whose SHA-256 record is lost is still checked, page by
        # page, on every read (a flipped bit is an error, never another value)
        pq.write_table(
            table,
            sink,
            compression=CODEC,
            use_dictionary=rest,
            write_statistics=rest,
            write_page_checksum=True,
        )
        data = sink.getvalue().to_pybytes()
        with self._writing():
            self.store.parts_dir.mkdir(exist_ok=True)  # a creation killed before it made it
            path = atomic_write_bytes(self.store.part_path(batch), data)
            self._record_checksum(checksum_name(part_name(batch)), hashlib.sha256(data).hexdigest())
        self.store._wrote_part(batch, path, table)
        return path

    def remove_part(self, batch: int) -> None:
        """Remove batch ``batch``'s part (a damaged one: the run computes it again)."""
        with self._writing():
            os.unlink(self.store.part_path(batch))
        self.store._forget_parts()

    def clean_temporary(self) -> int:
        """Remove temporary files of part writes that a killed run left; returns how many.

        Only under the store's lock held for the run (:attr:`lock`): without it the files may
        be another run's writes in progress."""
        if self.lock is None:
            return 0
        self.lock.check(self.path)
        n = 0
        found = [(self.path, e) for e in os.listdir(self.path)]
        found += [(self.store.parts_dir, e) for e in self.store._part_entries()]
        for folder, entry in found:
            if _TMP.match(entry) or (
                entry.startswith(".") and entry.endswith(".tmp") and "manifest" in entry
            ):
                try:
                    os.unlink(folder / entry)
                    n += 1
                except OSError:
                    pass
        return n

    # -------------------------------------------------------------- checksums
    def _record_checksum(self, name: str, digest: str) -> None:
        """Append ``digest  name`` to :data:`CHECKSUMS` (fsynced; a line torn by a crash is
        ignored when read, which leaves that part unrecorded: it is then read in full)."""
        line = f"{digest}  {name}\n".encode("ascii")
        fd = os.open(self.path / CHECKSUMS, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # after a line torn by a full disk: start a new one
            if os.write(fd, line) != len(line):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path / CHECKSUMS))
            os.fsync(fd)
        finally:
            os.close(fd)

    def verify(self) -> dict[int, str]:
        """:meth:`StoreReader.verify` (``{batch: why}`` of the damaged parts), and the
        SHA-256 of every part without a record whose own checksums hold is recorded, of the
        very bytes checked."""
        damaged, certified = self.store._verify()
        if certified:
            with self._writing():
                for name, digest in certified.items():
                    self._record_checksum(name, digest)
        return damaged

    def write_checksums(self) -> Path:
        """Rewrite :data:`CHECKSUMS` with one line per part file present (the appends of a run
        compacted: rewritten parts once, removed parts gone)."""
        with self._writing():
            known = self.store.checksums()
            entries = self.store._part_entries()
            names = [n for n in (checksum_name(e) for e in entries if _PART.match(e)) if n in known]
            return atomic_write_text(
                self.path / CHECKSUMS, "".join(f"{known[n]}  {n}\n" for n in names)
            )

    # -------------------------------------------------------------- the error log
    def write_errors(self) -> Path:
        """Rewrite ``errors.jsonl`` from the part files (one line per skipped or failed row)."""
        with self._writing():  # the summaries are read of the store the lock holds
            rows = [r for summary in self.store._summaries() for r in summary["errors"]]
            rows.sort(key=lambda r: r["row"])
            lines = [json.dumps(r, ensure_ascii=False) for r in rows]
            return atomic_write_text(self.path / ERRORS, "".join(x + "\n" for x in lines))
