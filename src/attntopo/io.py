"""Result folders: atomic, versioned storage of JSON metadata, NumPy arrays and extra files.

This module is storage only: it imports no analysis.  Reading a folder back into a result object is
:func:`attntopo.load_result` (:mod:`attntopo.analyses`, with the table of result kinds).

Layout (format version 2)
-------------------------
::

    result/
        attntopo.json                  metadata, and the record of which files make up the result
        arrays-0123456789abcdef.npz    the arrays (no pickles), named by the first 16 hex digits
                                       of the SHA-256 of the file's bytes
        figures/overview.png, ...      extra files, under the names the caller gave

``attntopo.json`` holds the caller's metadata, ``"format_version": 2`` and
``"storage": {"arrays": <array file name>, "extra_files": {<name>: <SHA-256 hex of its bytes>}}``.
:func:`load_payload` reads the JSON and then the array file it names, so a reader only ever sees
the result through the JSON last committed.  Format 1 folders (a fixed ``arrays.npz``, no
``storage``, written before the first release) are refused in one line.

Saving
------
The commit point of a save is one ``os.replace`` of ``attntopo.json``:

1. *stage*: in a hidden folder ``.attntopo-<hex>.tmp/`` inside the result folder, write the npz
   and each extra file, fsync each; fsync the staging folders; rename the npz to its content name
   beside ``attntopo.json`` and fsync the result folder.  Nothing a reader looks at has changed.
2. *commit*: write the new JSON to a temporary file, fsync it, ``os.replace`` it over
   ``attntopo.json``, fsync the folder.
3. *publish*: rename each staged extra file to its fixed name (one atomic rename each), fsync.
4. *sweep*: remove every other entry of the folder: the previous array file, extra files that the
   new result does not have, leftovers of interrupted saves, anything else.  An overwrite leaves
   the folder holding exactly the new result.

A save into a folder that does not exist yet (or is empty) runs the same steps in a hidden sibling
``.<name>.<hex>.new/`` and then renames that folder to the target in one step: the target is
absent until it is complete.

What holds when a save dies at any step (the process killed, or the power lost: every file and
folder is fsynced before a step that depends on it):

* :func:`load_payload` returns exactly the previous payload (before the commit point) or exactly
  the new one (after it); a new folder is absent or complete.
* Extra files are never partial: each one at its fixed name is the complete file of the previous
  save or of this one.  Up to the commit point none of them changes.  Between the commit and the
  end of step 3 the new result can sit beside extra files of the previous save; the SHA-256 values
  in ``storage.extra_files`` tell which files belong to the result.
* The next save into the same target removes what an interrupted save left: staging folders,
  temporary files and unreferenced array files inside, and ``.<name>.<hex>.new`` folders beside
  it.

Saves into one folder are serialized by an exclusive ``flock`` on it (POSIX; the kernel drops
the lock when the process dies); a reader that races a save retries when the array file named by
the JSON it read has just been swept away.

Test hook
---------
If the environment variable ``ATTNTOPO_TEST_CRASH_AT`` holds a positive integer k when this
module is imported, the k-th filesystem step taken by this process's writes (each file creation,
write, fsync, rename, unlink, mkdir, rmdir) ends the process with ``os._exit(86)``; a crash at a
write step leaves only half of the data in the file.  tests/unit/test_io_crash.py crashes saves
this way at every step.  Unset, the hook costs one truth test per step.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

import numpy as np

from .errors import InvalidInputError, ResultFormatError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: saves into one folder are not serialized
    fcntl = None

__all__ = [
    "lock_folder",
    "unlock_folder",
    "FORMAT_VERSION",
    "META_FILE",
    "ARRAYS_FILE",
    "save_payload",
    "load_payload",
    "atomic_write_text",
    "atomic_write_bytes",
    "atomic_file",
    "new_folders_removed_on_error",
    "json_safe",
    "json_float",
]

FORMAT_VERSION = 2
META_FILE = "attntopo.json"
#: Name of the array file while a save stages it; the result names it ``arrays-<hash>.npz``.
ARRAYS_FILE = "arrays.npz"
_ARRAYS_NAME = re.compile(r"arrays-[0-9a-f]{16}\.npz")
_OWN_PREFIX = ".attntopo-"


def json_safe(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-finite floats into JSON-safe values.

    ``inf``/``-inf``/``nan`` become the strings ``"inf"``, ``"-inf"``, ``"nan"``
    (standard JSON has no such numbers); :func:`json_float` reverses this for one field.
    """
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    return obj


def json_float(value: Any) -> float:
    """Inverse of :func:`json_safe` for one float field
    (``"inf"``, ``"-inf"``, ``"nan"`` or a number)."""
    return float(value)


# -- filesystem steps (each one counted by the test hook) ------------------------------------

_CRASH_EXIT = 86
try:
    _CRASH_AT = int(os.environ.get("ATTNTOPO_TEST_CRASH_AT") or 0)
except ValueError:
    _CRASH_AT = 0
_steps_taken = 0


def _crash_due() -> bool:
    """Count one filesystem step (test hook, see the module docstring);
    True at the step to die at."""
    global _steps_taken
    if not _CRASH_AT:
        return False
    _steps_taken += 1
    return _steps_taken == _CRASH_AT


def _step() -> None:
    if _crash_due():
        os._exit(_CRASH_EXIT)


@contextlib.contextmanager
def _created(path: Path) -> Iterator[Any]:
    """The new binary file ``path`` (mode 0666 less the umask), fsynced when the block ends."""
    _step()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    with os.fdopen(fd, "wb") as f:
        yield f
        f.flush()
        if _crash_due():  # a torn write: half of the data reached the file
            os.ftruncate(fd, os.fstat(fd).st_size // 2)
            os._exit(_CRASH_EXIT)
        _step()
        os.fsync(fd)


def _create(path: Path, write: Callable[[Any], Any]) -> None:
    """Create the new file ``path`` holding what ``write(f)`` writes,
    fsynced; mode 0666 less the umask."""
    with _created(path) as f:
        write(f)


def _rename(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    _step()
    os.replace(src, dst)


def _unlink(path: str | os.PathLike) -> None:
    _step()
    os.unlink(path)


def _mkdir(path: Path) -> None:
    _step()
    os.mkdir(path, 0o777)


def _makedirs(path: Path) -> None:
    if not path.is_dir():
        _step()
        os.makedirs(path, 0o777, exist_ok=True)


@contextlib.contextmanager
def new_folders_removed_on_error(path: str | os.PathLike) -> Iterator[None]:
    """The folders that do not exist yet on the way to ``path`` (``path`` included) are
    removed again, deepest first and only while empty, when the block raises: a refused
    output leaves no empty folders behind."""
    p = Path(path).absolute()
    made = []
    for q in (p, *p.parents):
        try:
            if q.exists():
                break
        except (OSError, ValueError):  # a name the file system refuses: nothing made there
            continue
        made.append(q)
    try:
        yield
    except BaseException:
        for q in made:
            try:
                os.rmdir(q)
            except OSError:
                pass
        raise


def _rmdir(path: str | os.PathLike) -> None:
    _step()
    os.rmdir(path)


def _fsync_dir(path: Path) -> None:
    _step()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms that cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _remove_tree(path: Path) -> None:
    """Remove ``path`` (a file, link or folder with everything in it) one counted step at a time."""
    if path.is_symlink() or not path.is_dir():
        _unlink(path)
        return
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            _unlink(os.path.join(root, name))
        for name in dirs:
            sub = os.path.join(root, name)
            (_unlink if os.path.islink(sub) else _rmdir)(sub)
    _rmdir(path)


def _unlink_quietly(path: str | os.PathLike) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def lock_folder(path: str | os.PathLike, *, wait: bool = True) -> int | None:
    """Hold an exclusive ``flock`` on the folder ``path`` (None where there is no ``fcntl``).

    Raises BlockingIOError when ``wait`` is False and another process holds it.
    """
    if fcntl is None:  # pragma: no cover
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BaseException:
        os.close(fd)
        raise
    return fd


def unlock_folder(fd: int | None) -> None:
    """Release a lock taken by :func:`lock_folder` (None: nothing to release)."""
    if fd is not None:
        os.close(fd)


# -- single files ------------------------------------------------------------------------------


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[Any]:
    """A binary file to write in the block; it appears under ``path`` whole when the block
    ends (fsynced temporary file in the same folder, then rename), and nothing appears (an
    older file stays) when the block raises."""
    path = Path(path)
    _makedirs(path.parent)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    try:
        with _created(tmp) as f:
            yield f
        _rename(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically
    (fsynced temporary file in the same folder, then rename)."""
    with atomic_file(path) as f:
        f.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


# -- result folders: saving --------------------------------------------------------------------


def _is_result_dir(path: Path) -> bool:
    return (path / META_FILE).is_file()


def _encode(doc: dict) -> bytes:
    return json.dumps(doc, indent=1, ensure_ascii=False).encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _extra_name(name: Any) -> str:
    """The normalized relative POSIX path of an extra file, or InvalidInputError."""
    p = PurePosixPath(str(name))
    parts = p.parts
    if (
        not parts
        or p.is_absolute()
        or ".." in parts
        or "\\" in str(name)
        or parts[0] in (META_FILE, ARRAYS_FILE)
        or _ARRAYS_NAME.fullmatch(parts[0])
        or parts[0].startswith(_OWN_PREFIX)
    ):
        raise InvalidInputError(
            f"extra file name {str(name)!r} is not allowed: give a relative path inside the result "
            f"folder (no '..'), other than {META_FILE} and the array files"
        )
    return p.as_posix()


def _ancestors(names) -> set[str]:
    """Every folder (relative POSIX path) that holds one of ``names``."""
    parts = [PurePosixPath(n).parts for n in names]
    return {"/".join(p[:i]) for p in parts for i in range(1, len(p))}


def _prepare(meta: dict, arrays: dict, extra_files: dict | None) -> tuple[dict, dict[str, bytes]]:
    """Check the payload before anything touches the disk; the JSON document and the extra files."""
    if "kind" not in meta:
        raise ValueError("meta must name the result kind")
    if "storage" in meta:
        raise ValueError("the meta key 'storage' is reserved for the folder layout")
    for name, arr in arrays.items():
        if np.asarray(arr).dtype == object:
            raise ValueError(f"array {name!r} has dtype object; results store no pickles")
    extras = {_extra_name(name): bytes(data) for name, data in (extra_files or {}).items()}
    clash = sorted(_ancestors(extras) & set(extras))
    if clash:
        raise InvalidInputError(f"extra file {clash[0]!r} is also the folder of another extra file")
    doc = json_safe(dict(meta))
    doc["format_version"] = FORMAT_VERSION
    _encode(doc)  # not JSON-serializable: fail here, before any file is written
    return doc, extras


def _committed_arrays(folder: Path) -> str | None:
    """The array file the committed ``attntopo.json`` of ``folder`` names, if it can be read."""
    try:
        return _parse_meta(_read_meta(folder), folder)[1]
    except (OSError, ResultFormatError):
        return None


def _sweep(folder: Path, keep: set[str]) -> None:
    """Remove every entry of ``folder`` but the files ``keep``
    (relative POSIX paths) and their folders."""
    keep_dirs = _ancestors(keep)
    for root, dirs, files in os.walk(folder, topdown=False):
        rel_root = Path(root).relative_to(folder)
        for name in files + dirs:
            path = os.path.join(root, name)
            rel = (rel_root / name).as_posix()
            try:
                if os.path.islink(path) or not os.path.isdir(path):
                    if rel not in keep:
                        _unlink(path)
                elif rel not in keep_dirs:
                    _rmdir(path)  # emptied already: os.walk goes bottom-up
            except OSError:  # the result is committed; the next save sweeps again
                pass


def _write_result(
    folder: Path, doc: dict, arrays: dict, extras: dict[str, bytes], compress: bool
) -> None:
    """Stage, commit, publish and sweep (module docstring) in the existing folder ``folder``."""
    stage = folder / f"{_OWN_PREFIX}{secrets.token_hex(8)}.tmp"
    name = None
    committed = False
    try:
        _mkdir(stage)
        npz = stage / ARRAYS_FILE
        _create(npz, lambda f: (np.savez_compressed if compress else np.savez)(f, **arrays))
        name = f"arrays-{_sha256_file(npz)[:16]}.npz"
        staged_dirs = {stage}
        for rel, data in extras.items():
            dest = stage / rel
            _makedirs(dest.parent)
            staged_dirs.add(dest.parent)
            _create(dest, lambda f, data=data: f.write(data))
        for d in sorted(staged_dirs, key=lambda d: len(d.parts), reverse=True):
            _fsync_dir(d)
        _rename(npz, folder / name)
        _fsync_dir(folder)
        hashes = {k: _sha256(v) for k, v in extras.items()}
        doc = dict(doc, storage={"arrays": name, "extra_files": hashes})
        meta_tmp = folder / f"{_OWN_PREFIX}{secrets.token_hex(8)}.tmp"
        _create(meta_tmp, lambda f: f.write(_encode(doc)))
        _rename(meta_tmp, folder / META_FILE)  # the commit point
        committed = True
        _fsync_dir(folder)
    except BaseException:
        if not committed:
            shutil.rmtree(stage, ignore_errors=True)
            if name is not None and name != _committed_arrays(folder):
                _unlink_quietly(folder / name)
        raise
    published_dirs = {folder} if extras else set()  # folders made for them are entries of folder
    for rel in extras:
        final = folder / rel
        for up in reversed(final.relative_to(folder).parents[:-1]):
            if (folder / up).is_symlink() or (folder / up).exists() and not (folder / up).is_dir():
                _unlink(folder / up)  # a file of the previous result where a folder must go
        if final.is_dir() and not final.is_symlink():
            _remove_tree(final)  # a folder of the previous result where a file must go
        _makedirs(final.parent)
        _rename(stage / rel, final)
        published_dirs.add(final.parent)
    for d in sorted(published_dirs, key=lambda d: len(d.parts), reverse=True):
        _fsync_dir(d)
    _sweep(folder, {META_FILE, name, *extras})


def _remove_leftovers_beside(target: Path) -> None:
    """Remove what interrupted saves left beside ``target`` (``.<name>.<16 hex>.new`` folders)."""
    name = re.escape(target.name)
    pattern = re.compile(rf"\.{name}\.[0-9a-f]{{16}}\.new")
    try:
        entries = sorted(os.scandir(target.parent), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if not pattern.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        try:
            fd = lock_folder(path, wait=False)
        except OSError:  # BlockingIOError: a live save is building it
            continue
        try:
            _remove_tree(path)
        except OSError:
            pass
        finally:
            unlock_folder(fd)


def _new_locked_dir(parent: Path, prefix: str, suffix: str) -> tuple[Path, int | None]:
    """Make a fresh folder in ``parent`` and lock it before anyone may take it for a leftover."""
    while True:
        path = parent / f"{prefix}{secrets.token_hex(8)}{suffix}"
        _mkdir(path)
        try:
            fd = lock_folder(path)
        except FileNotFoundError:  # another save swept it between mkdir and flock
            continue
        try:
            if fd is None or os.path.samestat(os.fstat(fd), os.stat(path)):
                return path, fd
        except FileNotFoundError:  # ... or while this one waited for the lock
            pass
        unlock_folder(fd)


def _save_in_place(target: Path, doc: dict, arrays: dict, extras: dict, compress: bool) -> None:
    fd = lock_folder(target)
    try:
        if not _is_result_dir(target):
            raise InvalidInputError(
                f"output folder {str(target)!r} changed while saving: try again"
            )
        _write_result(target, doc, arrays, extras, compress)
    finally:
        unlock_folder(fd)


def _save_new(target: Path, doc: dict, arrays: dict, extras: dict, compress: bool) -> bool:
    """Build the result beside ``target`` and rename it into place;
    False if ``target`` appeared meanwhile."""
    parent = target.parent
    with new_folders_removed_on_error(parent):
        return _save_new_in(parent, target, doc, arrays, extras, compress)


def _save_new_in(
    parent: Path, target: Path, doc: dict, arrays: dict, extras: dict, compress: bool
) -> bool:
    _makedirs(parent)
    tmp, fd = _new_locked_dir(parent, f".{target.name}.", ".new")
    try:
        _write_result(tmp, doc, arrays, extras, compress)
        try:
            _rename(tmp, target)  # the commit point of a new folder
        except OSError as e:
            appeared = e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR)
            if appeared and os.path.lexists(target):
                shutil.rmtree(tmp, ignore_errors=True)
                return False
            raise
        _fsync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        unlock_folder(fd)
    return True


def save_payload(
    path: str | os.PathLike,
    meta: dict,
    arrays: dict[str, np.ndarray],
    *,
    overwrite: bool = True,
    compress: bool = False,
    extra_files: dict[str, bytes] | None = None,
) -> Path:
    """Write a result folder; the commit is one atomic step (see the module docstring).

    Parameters
    ----------
    path : path
        Target folder.  An existing attntopo result there is replaced (if ``overwrite``): the
        folder then holds exactly the new result.  An existing non-empty folder that is not a
        result is refused.
    meta : dict
        JSON metadata; must contain ``"kind"``; the key ``"storage"`` is reserved.
        ``format_version`` is added.
    arrays : dict of str to ndarray
        Stored in one npz file (no pickles).
    overwrite : bool
        Replace an existing result (default); if False, refuse with InvalidInputError.
    compress : bool
        Deflate the npz file.
    extra_files : dict of str to bytes, optional
        Further files (figures, ...) under relative names such as ``"figures/overview.png"``,
        written with the result; each is never partial (module docstring).

    Returns
    -------
    Path
        ``path``.
    """
    target = Path(path)
    doc, extras = _prepare(meta, arrays, extra_files)
    real = target.resolve()
    _remove_leftovers_beside(real)
    for _ in range(2):
        if real.exists() and not real.is_dir():
            raise InvalidInputError(f"output path {str(target)!r} exists and is not a folder")
        if real.is_dir() and _is_result_dir(real):
            if not overwrite:
                raise InvalidInputError(
                    f"output folder {str(target)!r} already holds a result (pass overwrite=True)"
                )
            _save_in_place(real, doc, arrays, extras, compress)
            return target
        if real.is_dir() and any(real.iterdir()):
            raise InvalidInputError(
                f"output folder {str(target)!r} is not empty and holds no attntopo result: "
                f"choose a new or empty folder"
            )
        if real.is_dir() and real == Path.cwd().resolve():
            # a new result replaces an empty folder (one rename); this process's own working
            # folder would be gone from under it (and from under the shell that started it)
            raise InvalidInputError(
                f"output folder {str(target)!r} is the current folder, which saving would "
                "replace: give a new folder's name (e.g. out/)"
            )
        if _save_new(real, doc, arrays, extras, compress):
            return target
    raise InvalidInputError(f"output folder {str(target)!r} changed while saving: try again")


# -- result folders: loading -------------------------------------------------------------------

_MAX_META_BYTES = 64 << 20


def _read_meta(p: Path) -> bytes:
    try:
        with open(p / META_FILE, "rb") as f:
            raw = f.read(_MAX_META_BYTES + 1)
    except OSError as e:
        if not (p / META_FILE).is_file():
            raise ResultFormatError(
                f"{str(p)!r} holds no {META_FILE}: not an attntopo result folder"
            ) from None
        raise ResultFormatError(
            f"{META_FILE} in {str(p)!r} cannot be read: {e.strerror or e}"
        ) from None
    if len(raw) > _MAX_META_BYTES:
        raise ResultFormatError(
            f"{META_FILE} in {str(p)!r} is larger than "
            f"{_MAX_META_BYTES / 2**20:g} MiB: not attntopo metadata"
        )
    return raw


def _json_type(value: Any) -> str:
    """How JSON calls the type of a parsed value ("a list", "null", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    names = ((dict, "an object"), (list, "a list"), (str, "a string"), ((int, float), "a number"))
    for types, name in names:
        if isinstance(value, types):
            return name
    return type(value).__name__  # pragma: no cover - json.loads makes nothing else


def _parse_meta(raw: bytes, p: Path) -> tuple[dict, str]:
    """The metadata (without ``storage``) and the name of the array file it belongs to."""
    where = f"{META_FILE} in {str(p)!r}"
    try:
        meta = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ResultFormatError(f"{where} is nested too deeply to be attntopo metadata") from None
    except ValueError as e:  # not UTF-8, not JSON, an integer with too many digits
        raise ResultFormatError(f"{where} is corrupt: {e}") from None
    if not isinstance(meta, dict):
        raise ResultFormatError(
            f"{where} holds {_json_type(meta)}, not an object: not attntopo metadata"
        )
    version = meta.get("format_version")
    if type(version) is int and version == 1:
        raise ResultFormatError(
            f"{where} is format 1 (written before the first release, with a fixed arrays.npz), "
            f"which this attntopo does not read: compute the result again and save it"
        )
    if type(version) is not int or version != FORMAT_VERSION:
        short = isinstance(version, (int, float, str)) and len(repr(version)) < 30
        shown = repr(version) if short else _json_type(version)
        raise ResultFormatError(
            f"{where}: format_version must be {FORMAT_VERSION} (the version this attntopo "
            f"reads), got {shown}"
        )
    kind = meta.get("kind")
    if not isinstance(kind, str):
        raise ResultFormatError(
            f"{where} names no result kind"
            if "kind" not in meta
            else f"{where}: the result kind must be a string, got {_json_type(kind)}"
        )
    storage = meta.pop("storage", None)
    name = storage.get("arrays") if isinstance(storage, dict) else None
    if not isinstance(name, str) or not _ARRAYS_NAME.fullmatch(name):
        raise ResultFormatError(
            f"{where} names no array file (storage.arrays must be 'arrays-<16 hex digits>.npz')"
        )
    return meta, name


def _read_arrays(file: Path, p: Path) -> dict[str, np.ndarray]:
    """The arrays of the npz ``file``; FileNotFoundError if it is not there."""
    where = f"{file.name} in {str(p)!r}"
    try:
        archive = np.load(file, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ResultFormatError(f"{where} is corrupt: {e}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ResultFormatError(f"{where} is not an npz archive")
    with archive:
        try:
            arrays = {k: archive[k] for k in archive.files}
        except (
            OSError,
            ValueError,
            EOFError,
            KeyError,
            NotImplementedError,
            zipfile.BadZipFile,
            zlib.error,
        ) as e:
            raise ResultFormatError(f"{where} is corrupt: {e}") from None
    for k, v in arrays.items():
        if not isinstance(v, np.ndarray):
            raise ResultFormatError(f"{where} holds {k!r}, which is not a NumPy array (.npy)")
    return arrays


def load_payload(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """Read ``(meta, arrays)`` from a result folder, checking the format version.

    ``meta`` is the metadata as saved plus ``format_version``; ``arrays`` maps names to arrays.
    Raises :class:`~attntopo.errors.ResultFormatError` (one line) for anything that is not a
    complete result of a supported format version.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ResultFormatError(f"a result folder path is expected, got {type(path).__name__}")
    p = Path(path)
    if not p.is_dir():
        raise ResultFormatError(f"no result folder at {str(p)!r}")
    for _ in range(3):
        raw = _read_meta(p)
        meta, name = _parse_meta(raw, p)
        try:
            return meta, _read_arrays(p / name, p)
        except FileNotFoundError:
            if _read_meta(p) == raw:  # no save replaced the result meanwhile: the file is missing
                break
    raise ResultFormatError(
        f"{name}, the array file named by {META_FILE} in {str(p)!r}, is missing"
    )
