"""Human-written short texts from Debian's ``fortunes`` package, read where apt installed them.

Nothing of the collection is copied into attntopo: the files are read at run time from
``/usr/share/games/fortunes`` (or ``$ATTNTOPO_FORTUNES_DIR``, or ``path=``).  Install them with
``sudo apt-get install fortunes`` (``make test`` does it where it can).

The filter, fixed and applied in this order:

1. every category file (a file with a ``.dat`` index beside it) is split at lines holding only
   ``%``; bytes are UTF-8; overstrike sequences (``x\\bx``, ``_\\bx``) keep their last character
   and other control characters go;
2. whitespace is normalized (runs of spaces, tabs and newlines become one space, ends stripped);
3. texts with fewer than ``min_words`` or more than ``max_words`` words (split on whitespace) go,
   and so do texts whose non-space characters are less than 60 % letters (ASCII art, tables);
4. a text found in several of the chosen categories goes from all of them (its label would be
   ambiguous); a repeat inside one category is kept once (the first).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from .._validation import check_nonneg_int, check_positive_int
from ..errors import InvalidInputError, MissingDependencyError
from ._files import read_texts
from ._types import TextDataset

__all__ = ["FORTUNES_DIR", "fortune_categories", "fortunes"]

#: Where Debian installs the collection.
FORTUNES_DIR = "/usr/share/games/fortunes"
_OVERSTRIKE = re.compile(r".\x08")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MIN_LETTERS = 0.6


def _folder(path: str | os.PathLike | None) -> Path:
    p = Path(path or os.environ.get("ATTNTOPO_FORTUNES_DIR") or FORTUNES_DIR)
    if not p.is_dir():
        raise MissingDependencyError(
            f"no fortunes at {str(p)!r}: install Debian's collection (sudo apt-get install "
            "fortunes) or pass path= to a folder of fortune files"
        )
    return p


def fortune_categories(*, path: str | os.PathLike | None = None) -> list[str]:
    """Names of the category files installed (sorted)."""
    folder = _folder(path)
    return sorted(
        f.name
        for f in folder.iterdir()
        if f.is_file() and not f.suffix and (folder / f"{f.name}.dat").exists()
    )


def _read_category(file: Path) -> list[str]:
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InvalidInputError(f"{file}: line {line}: bytes that are not UTF-8") from None
    while True:  # nested overstrikes ("a\b_\b_") need more than one pass
        stripped = _OVERSTRIKE.sub("", text)
        if stripped == text:
            break
        text = stripped
    text = _CONTROL.sub("", text)
    return [" ".join(part.split()) for part in re.split(r"(?m)^%[ \t]*$", text)]


def _letters_ok(text: str) -> bool:
    chars = [c for c in text if not c.isspace()]
    return bool(chars) and sum(c.isalpha() for c in chars) >= _MIN_LETTERS * len(chars)


def fortunes(
    *,
    categories: Sequence[str] | None = None,
    min_words: int = 5,
    max_words: int = 60,
    n_per_category: int | None = None,
    seed: int = 0,
    path: str | os.PathLike | None = None,
    file: str | os.PathLike | None = None,
) -> TextDataset:
    """Fortunes and their category labels (the file each comes from).

    Parameters
    ----------
    categories : sequence of str, optional
        Category files to read (see :func:`fortune_categories`); all by default.
    min_words, max_words : int
        Length filter, in whitespace-separated words.
    n_per_category : int, optional
        Draw this many texts per category at random (``seed``), for balanced classes; every
        category must have that many.  All texts by default.
    seed : int
        Seed of that draw.
    path : path, optional
        Folder of fortune files (default ``$ATTNTOPO_FORTUNES_DIR`` or
        ``/usr/share/games/fortunes``).
    file : path, optional
        Read your own labelled texts instead (CSV or JSONL with ``text`` and ``label``
        columns; see :func:`read_texts`).

    Returns
    -------
    TextDataset
        Texts in category order, then file order; labels are category names.

    Raises
    ------
    MissingDependencyError
        The collection is not installed.
    InvalidInputError
        Unknown category (the message lists the installed ones), bad filter values, too few
        texts for ``n_per_category``.
    """
    if file is not None:
        return read_texts(file)
    min_words = check_nonneg_int(min_words, "min_words")
    max_words = check_positive_int(max_words, "max_words", allow_none=False)
    if max_words < min_words:
        raise InvalidInputError(f"max_words ({max_words}) must be >= min_words ({min_words})")
    folder = _folder(path)
    available = fortune_categories(path=folder)
    if categories is None:
        chosen = available
    else:
        if isinstance(categories, str):
            categories = [categories]
        chosen = list(categories)
        unknown = [c for c in chosen if c not in available]
        if unknown or not chosen or len(set(chosen)) != len(chosen):
            raise InvalidInputError(
                f"unknown or repeated fortune categories {unknown or chosen}; installed: "
                f"{', '.join(available)}"
            )
    per_cat: dict[str, list[str]] = {}
    owners: dict[str, set[str]] = {}
    for cat in chosen:
        seen: set[str] = set()
        kept = []
        for t in _read_category(folder / cat):
            n_words = len(t.split())
            if not (min_words <= n_words <= max_words) or not _letters_ok(t):
                continue
            key = t.lower()
            if key in seen:
                continue
            seen.add(key)
            kept.append(t)
            owners.setdefault(key, set()).add(cat)
        per_cat[cat] = kept
    texts: list[str] = []
    labels: list[str] = []
    rng = np.random.default_rng(check_nonneg_int(seed, "seed"))
    for cat in chosen:
        kept = [t for t in per_cat[cat] if len(owners[t.lower()]) == 1]
        if n_per_category is not None:
            k = check_positive_int(n_per_category, "n_per_category", allow_none=False)
            if len(kept) < k:
                raise InvalidInputError(
                    f"category {cat!r} has {len(kept)} texts after the filter, fewer than "
                    f"n_per_category={k}"
                )
            pick = np.sort(rng.choice(len(kept), size=k, replace=False))
            kept = [kept[i] for i in pick]
        texts.extend(kept)
        labels.extend([cat] * len(kept))
    info = {
        "path": str(folder),
        "categories": chosen,
        "min_words": min_words,
        "max_words": max_words,
        "n_per_category": n_per_category,
        "seed": seed,
    }
    return TextDataset(texts, labels, None, "fortunes", info)
