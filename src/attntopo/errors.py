"""One small hierarchy of typed exceptions.

Every error raised on purpose by attntopo derives from :class:`AttntopoError` and
carries a one-line message that says what was wrong and what is allowed.  Where a
builtin category fits, the class also derives from it (``ValueError``,
``LookupError``, ``IndexError``, ``ImportError``) so generic handlers keep working.
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "AttntopoError",
    "InvalidInputError",
    "EmptyTextError",
    "TextTooLongError",
    "InvalidMatrixError",
    "DeviceError",
    "ModelNotFoundError",
    "ModelLoadError",
    "UnsafeWeightsError",
    "OutOfRangeError",
    "MissingDependencyError",
    "ResultFormatError",
    "StoreReplacedError",
    "DamagedPartError",
    "AttntopoWarning",
    "UnknownTokensWarning",
    "DamagedPartWarning",
    "DiskFullError",
]


class AttntopoError(Exception):
    """Base class of every error attntopo raises on purpose."""


class InvalidInputError(AttntopoError, ValueError):
    """An argument has a value that is not allowed (message says what is)."""


class EmptyTextError(InvalidInputError):
    """A text is empty or only whitespace."""


class TextTooLongError(InvalidInputError):
    """A text has more tokens than the model's context.

    The message names no interface's switch (each interface names its own fix: the Python
    argument ``truncate=True``, the command-line flag ``--truncate``, the explorer's
    checkbox); the numbers are fields, so an interface can word its own line.

    Attributes
    ----------
    n_tokens : int or None
        Tokens of the longest text, special tokens included.
    limit : int or None
        Most tokens the model takes (``AttentionModel.max_length``).
    model : str or None
        The model's name.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        n_tokens: int | None = None,
        limit: int | None = None,
        model: str | None = None,
    ) -> None:
        self.n_tokens = n_tokens
        self.limit = limit
        self.model = model
        if message is None:
            who = model if model else "the model"
            message = (
                f"text has {n_tokens} tokens but {who} takes at most {limit}: shorten it or "
                f"truncate it to {limit} tokens"
            )
        super().__init__(message)

    def __reduce__(self):  # keep the fields through pickling (worker processes)
        return (_text_too_long, (str(self), self.n_tokens, self.limit, self.model))


def _text_too_long(message, n_tokens, limit, model) -> TextTooLongError:
    return TextTooLongError(message, n_tokens=n_tokens, limit=limit, model=model)


class InvalidMatrixError(InvalidInputError):
    """A matrix is not what was expected (square, symmetric, finite, zero diagonal, …)."""


class DeviceError(InvalidInputError):
    """A device or dtype this machine cannot run: an unknown device, ``cuda`` without a CUDA
    GPU, a GPU number that does not exist, a dtype the device has no kernels for."""


class ModelNotFoundError(AttntopoError, LookupError):
    """No model under that name: unknown alias, missing folder, or hub unreachable."""


class ModelLoadError(AttntopoError, RuntimeError):
    """The model was found but could not be loaded."""


class UnsafeWeightsError(AttntopoError, PermissionError):
    """Only pickle weights are available and ``allow_pickle`` was not set."""


class OutOfRangeError(AttntopoError, IndexError):
    """A layer, head or token index is outside the valid range (message states it)."""


class MissingDependencyError(AttntopoError, ImportError):
    """An optional dependency is not installed (message names the extra to install)."""


class ResultFormatError(AttntopoError, ValueError):
    """A saved result is missing, corrupt, or from an unsupported format version."""


class StoreReplacedError(ResultFormatError):
    """A corpus store a reader opened was replaced (another run started it over with
    ``--new-store``) or removed since it was opened: the reader stops instead of returning
    another store's rows; the message names the store and says to open it again."""


class DamagedPartError(ResultFormatError):
    """A part file of a corpus store is damaged (what :meth:`StoreReader.verify` names, and
    what a resumed run removes and recomputes): ``path``, ``batch`` and ``why`` (in words)."""

    def __init__(self, message: str, *, path: object, batch: int, why: str) -> None:
        super().__init__(message)
        self.path, self.batch, self.why = path, batch, why


class DiskFullError(AttntopoError):
    """The file system (or the user's quota) filled up while a corpus store was written; the
    message names the store and says that what was stored is kept and a rerun continues."""


class AttntopoWarning(UserWarning):
    """Base class of the warnings attntopo issues on purpose (filter them by this category)."""


class UnknownTokensWarning(AttntopoWarning):
    """The tokenizer turned parts of the text into its unknown token (``[UNK]``, ``<unk>``).

    The model saw the unknown token there, not the characters: attention to those positions
    says nothing about them.  ``Attention.labels`` shows the unknown token and
    ``Attention.sources`` the text it replaced.

    Attributes
    ----------
    count : int
        Number of unknown tokens (over all texts of the call).
    examples : list of str
        Up to five distinct pieces of text that became unknown tokens, in order of appearance.
    unk_token : str
        The tokenizer's unknown token.
    model : str
        The model's name.
    """

    def __init__(
        self, message: str, *, count: int = 0, examples=(), unk_token: str = "", model: str = ""
    ) -> None:
        super().__init__(message)
        self.count = int(count)
        self.examples = list(examples)
        self.unk_token = unk_token
        self.model = model


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` in the function calling this: the first frame
    outside attntopo, whatever path of attntopo's own calls led there (a fixed number breaks
    as soon as a wrapper is added in between)."""
    frame = sys._getframe(1)  # the function that will call warnings.warn: stacklevel 1
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


class DamagedPartWarning(AttntopoWarning):
    """A corpus run found a part file of its store damaged (its bytes differ from the SHA-256
    recorded when it was written, or it cannot be read in full) and computes that batch again."""
