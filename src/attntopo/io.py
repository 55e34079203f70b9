"""Saving and loading results: a folder with ``attntopo.json`` (metadata) and ``arrays.npz``.

Writes are atomic: everything is written to a temporary sibling folder that replaces the
target only when complete, so a crash never leaves a half-written result.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .errors import InvalidInputError, ResultFormatError

__all__ = [
    "FORMAT_VERSION",
    "META_FILE",
    "ARRAYS_FILE",
    "save_payload",
    "load_payload",
    "load_result",
    "register_result_kind",
    "atomic_write_text",
    "atomic_write_bytes",
    "json_safe",
]

FORMAT_VERSION = 1
META_FILE = "attntopo.json"
ARRAYS_FILE = "arrays.npz"
_KINDS: dict[str, Callable[[dict, dict], Any]] = {}


def register_result_kind(kind: str, loader: Callable[[dict, dict], Any]) -> None:
    """Register ``loader(meta, arrays)`` that rebuilds results whose metadata has ``kind``."""
    _KINDS[kind] = loader


def json_safe(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-finite floats into JSON-safe values.

    ``inf``/``-inf``/``nan`` become the strings ``"inf"``, ``"-inf"``, ``"nan"``
    (standard JSON has no such numbers); :func:`json_restore` reverses this for known keys.
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
    """Inverse of :func:`json_safe` for one float field."""
    if isinstance(value, str):
        return float(value)
    return float(value)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _apply_umask(path: Path, *, directory: bool) -> None:
    """Give files made by mkstemp/mkdtemp (0600/0700) the usual permissions under the umask."""
    try:
        os.chmod(path, (0o777 if directory else 0o666) & ~_umask())
    except OSError:
        pass


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _apply_umask(Path(tmp), directory=False)
        os.replace(tmp, path)
    except BaseException:
        with_suppress_unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def with_suppress_unlink(p: str | os.PathLike) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


def _is_result_dir(path: Path) -> bool:
    return (path / META_FILE).is_file()


def save_payload(
    path: str | os.PathLike,
    meta: dict,
    arrays: dict[str, np.ndarray],
    *,
    overwrite: bool = True,
    compress: bool = False,
    extra_files: dict[str, bytes] | None = None,
) -> Path:
    """Write a result folder atomically.

    Parameters
    ----------
    path : path
        Target folder.  An existing attntopo result there is replaced (if ``overwrite``);
        an existing non-empty folder that is not a result is refused.
    meta : dict
        JSON metadata; must contain ``"kind"``.  ``format_version`` is added.
    arrays : dict of str to ndarray
        Stored in ``arrays.npz`` (no pickles).
    extra_files : dict of str to bytes, optional
        Further files (figures, …) written into the same folder, atomically with the rest.
    """
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise InvalidInputError(f"output path {str(target)!r} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()):
        if not _is_result_dir(target):
            raise InvalidInputError(
                f"output folder {str(target)!r} is not empty and holds no attntopo result: "
                f"choose a new or empty folder"
            )
        if not overwrite:
            raise InvalidInputError(
                f"output folder {str(target)!r} already holds a result (pass overwrite=True)"
            )
    if "kind" not in meta:
        raise ValueError("meta must name the result kind")
    meta = dict(meta)
    meta["format_version"] = FORMAT_VERSION
    for name, arr in arrays.items():
        if np.asarray(arr).dtype == object:
            raise ValueError(f"array {name!r} has dtype object; results store no pickles")
    parent = target.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent))
    try:
        with open(tmp / ARRAYS_FILE, "wb") as f:
            (np.savez_compressed if compress else np.savez)(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        for name, data in (extra_files or {}).items():
            dest = tmp / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        # the metadata file is written last: its presence marks a complete result
        with open(tmp / META_FILE, "w", encoding="utf-8") as f:
            json.dump(json_safe(meta), f, indent=1, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        _apply_umask(tmp, directory=True)
        for sub in tmp.rglob("*"):
            _apply_umask(sub, directory=sub.is_dir())
        _fsync_dir(tmp)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=parent))
            os.rmdir(old)
            os.replace(target, old)
            try:
                os.replace(tmp, target)
            except BaseException:
                os.replace(old, target)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
        _fsync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def load_payload(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """Read ``(meta, arrays)`` from a result folder, checking the format version."""
    if not isinstance(path, (str, os.PathLike)):
        raise ResultFormatError(f"a result folder path is expected, got {type(path).__name__}")
    p = Path(path)
    if not p.is_dir():
        raise ResultFormatError(f"no result folder at {str(p)!r}")
    if not (p / META_FILE).is_file():
        raise ResultFormatError(f"{str(p)!r} holds no {META_FILE}: not an attntopo result folder")
    try:
        meta = json.loads((p / META_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ResultFormatError(f"{META_FILE} in {str(p)!r} is corrupt: {e}") from None
    version = meta.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ResultFormatError(
            f"result format version {version!r} is not supported (this attntopo reads 1..{FORMAT_VERSION})"
        )
    try:
        with np.load(p / ARRAYS_FILE, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ResultFormatError(f"{ARRAYS_FILE} in {str(p)!r} is missing or corrupt: {e}") from None
    return meta, arrays


def load_result(path: str | os.PathLike):
    """Load any saved attntopo result (an :class:`~attntopo.analyses.text.Analysis`, …)."""
    meta, arrays = load_payload(path)
    kind = meta.get("kind")
    if kind not in _KINDS:
        # importing the analyses registers their loaders
        from .analyses import _kinds  # noqa: F401
    if kind not in _KINDS:
        raise ResultFormatError(f"unknown result kind {kind!r} in {str(path)!r}")
    try:
        return _KINDS[kind](meta, arrays)
    except (KeyError, ValueError, TypeError, IndexError) as e:
        raise ResultFormatError(f"result in {str(path)!r} is incomplete or corrupt: {e}") from None
