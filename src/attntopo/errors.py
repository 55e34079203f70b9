"""One small hierarchy of typed exceptions.

Every error raised on purpose by attntopo derives from :class:`AttntopoError` and
carries a one-line message that says what was wrong and what is allowed.  Where a
builtin category fits, the class also derives from it (``ValueError``,
``LookupError``, ``IndexError``, ``ImportError``) so generic handlers keep working.
"""

from __future__ import annotations

__all__ = [
    "AttntopoError",
    "InvalidInputError",
    "EmptyTextError",
    "TextTooLongError",
    "InvalidMatrixError",
    "ModelNotFoundError",
    "ModelLoadError",
    "UnsafeWeightsError",
    "OutOfRangeError",
    "MissingDependencyError",
    "ResultFormatError",
]


class AttntopoError(Exception):
    """Base class of every error attntopo raises on purpose."""


class InvalidInputError(AttntopoError, ValueError):
    """An argument has a value that is not allowed (message says what is)."""


class EmptyTextError(InvalidInputError):
    """A text is empty or only whitespace."""


class TextTooLongError(InvalidInputError):
    """A text has more tokens than the model's context (pass ``truncate=True``)."""


class InvalidMatrixError(InvalidInputError):
    """A matrix is not what was expected (square, symmetric, finite, zero diagonal, …)."""


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
