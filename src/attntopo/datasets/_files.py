"""A user's own labelled texts from CSV or JSON Lines, with errors that name file and line."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ._types import TextDataset

__all__ = ["read_texts", "read_columns", "check_classes"]


def _decode(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{path}: is a folder, expected a .csv or .jsonl file") from None
    except OSError as e:
        raise InvalidInputError(f"{path}: cannot be read ({e.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InvalidInputError(
            f"{path}: line {line}: bytes that are not UTF-8 "
            f"({data[e.start : e.start + 1]!r} at byte {e.start}); save the file as UTF-8"
        ) from None


def read_columns(
    path: str | os.PathLike, columns: tuple[str, ...], *, fmt: str | None = None
) -> list[dict]:
    """Rows of a CSV or JSONL file, each a dict of the requested columns (all required).

    ``fmt`` is ``"csv"`` or ``"jsonl"``; by default taken from the suffix (``.jsonl``/``.json``
    → JSON Lines, anything else CSV).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(f"path must be a file path, got {type(path).__name__}")
    p = Path(path)
    kind = fmt or ("jsonl" if p.suffix.lower() in (".jsonl", ".json", ".ndjson") else "csv")
    if kind not in ("csv", "jsonl"):
        raise InvalidInputError(f"fmt must be 'csv' or 'jsonl', got {fmt!r}")
    text = _decode(p)
    rows: list[dict] = []
    if kind == "csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise InvalidInputError(
                f"{p}: line 1: no column {', '.join(repr(c) for c in missing)}; the header has "
                f"{', '.join(repr(h) for h in header) or 'no columns'}"
            )
        try:
            for row in reader:
                line = reader.line_num
                if any(row.get(c) is None for c in columns):
                    raise InvalidInputError(
                        f"{p}: line {line}: the row has fewer fields than the header"
                    )
                rows.append({c: row[c] for c in columns} | {"_line": line})
        except csv.Error as e:
            raise InvalidInputError(f"{p}: line {reader.line_num}: malformed CSV ({e})") from None
        return rows
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"{p}: line {line}: not valid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise InvalidInputError(
                f"{p}: line {line}: expected a JSON object, got {type(obj).__name__}"
            )
        missing = [c for c in columns if c not in obj]
        if missing:
            raise InvalidInputError(
                f"{p}: line {line}: no key {', '.join(repr(c) for c in missing)}; the object has "
                f"{', '.join(repr(k) for k in obj) or 'no keys'}"
            )
        rows.append({c: obj[c] for c in columns} | {"_line": line})
    return rows


def check_classes(labels: list[Any], where: str, min_classes: int = 2) -> None:
    """Refuse a label column with fewer than ``min_classes`` distinct values."""
    distinct = {str(v) for v in labels}
    if len(distinct) < min_classes:
        shown = ", ".join(sorted(repr(v) for v in distinct)) or "none"
        raise InvalidInputError(
            f"{where}: the labels hold {len(distinct)} class(es) ({shown}); a classifier needs at "
            f"least {min_classes}"
        )


def read_texts(
    path: str | os.PathLike,
    *,
    text: str = "text",
    label: str = "label",
    fmt: str | None = None,
    min_classes: int = 2,
) -> TextDataset:
    """Labelled texts from a CSV (header row) or JSON Lines file (one object per line).

    Parameters
    ----------
    path : path
        The file, UTF-8 (a byte-order mark is fine).
    text, label : str
        Column (CSV) or key (JSONL) names.
    fmt : {"csv", "jsonl"}, optional
        Format; by default from the suffix.
    min_classes : int
        Fewest distinct labels accepted (2: what a classifier needs; 1 to accept any).

    Raises
    ------
    InvalidInputError
        A missing column or key, bytes that are not UTF-8, malformed CSV/JSON, a text that is
        not a string or is empty, too few classes: the message names the file and line.
    """
    rows = read_columns(path, (text, label), fmt=fmt)
    texts, labels = [], []
    for r in rows:
        t = r[text]
        if not isinstance(t, str) or not t.strip():
            what = "empty" if isinstance(t, str) else f"a {type(t).__name__}, not a string"
            raise InvalidInputError(f"{path}: line {r['_line']}: the {text!r} value is {what}")
        if r[label] is None or (isinstance(r[label], str) and not r[label].strip()):
            raise InvalidInputError(f"{path}: line {r['_line']}: the {label!r} value is empty")
        texts.append(t)
        labels.append(r[label])
    if not texts:
        raise InvalidInputError(f"{path}: holds no rows")
    check_classes(labels, str(path), min_classes)
    return TextDataset(
        texts, labels, None, "file", {"path": str(path), "text": text, "label": label}
    )
