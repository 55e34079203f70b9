"""Provenance: how a result was made, carried the same way by every result.

Every result has a ``provenance`` dict with four keys:

``model``
    The model's description (:meth:`AttentionModel.info`: name, architecture, layers, heads,
    causal, …), or ``{"name": ...}`` when the input was an :class:`Attention`.  A comparison
    of two models holds ``{"a": ..., "b": ...}``.
``versions``
    Versions of attntopo and of the packages that decide its numbers (:func:`package_versions`).
``created``
    UTC time of creation, ISO 8601 to the second.
``settings``
    The settings that shaped the numbers: ``metric`` and ``engine`` where they apply, the
    attention settings (``drop_special``, ``truncate``, …) of the analysis, and
    ``paper_compat`` where the analysis has a founding-paper mode: ``False`` (attntopo's own
    numbers), ``"notebook"`` or ``"listing"`` (:func:`stored_paper_mode`).

Provenance is saved and loaded with the result but is not part of its equality (two runs of
the same analysis are equal results made at different times).
"""

from __future__ import annotations

import datetime as _dt
from functools import lru_cache
from typing import Any, Mapping

from ..constants import PAPER_MODES
from ..errors import ResultFormatError

__all__ = ["package_versions", "make_provenance", "model_info", "stored_paper_mode"]

#: Packages whose versions are recorded (the ones that decide attntopo's numbers).
_PACKAGES = ("attntopo", "torch", "transformers", "numpy", "giotto-ph", "gudhi")


def package_versions() -> dict[str, str]:
    """Versions of attntopo and the packages that decide its numbers (the installed ones).

    Read once per process (a new dict each call): the versions of the modules a process has
    imported do not change while it runs, and reading the packages' metadata from disk cost
    every result ~3 ms (a 128-token ``analyze`` takes ~300 ms), far more on a busy disk.
    """
    return dict(_versions())


@lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str], ...]:
    import importlib.metadata as md

    out = []
    for pkg in _PACKAGES:
        try:
            out.append((pkg, md.version(pkg)))
        except md.PackageNotFoundError:
            pass
    return tuple(out)


def model_info(model: Any = None, name: str = "") -> dict:
    """The ``model`` entry: ``model.info()`` of a loaded model, else ``{"name": name}``."""
    if model is not None and hasattr(model, "info"):
        return dict(model.info())
    return {"name": name}


def stored_paper_mode(value: Any) -> str | bool:
    """How results store a founding-paper mode: ``False`` when off, else ``"notebook"`` or
    ``"listing"``.

    ``value`` is a checked mode (or ``None``) or what a saved result holds; anything else
    (``True``, written before the paper had two recipes) is a :class:`ResultFormatError`.
    """
    if value is None or value is False:
        return False
    if isinstance(value, str) and value in PAPER_MODES:
        return value
    raise ResultFormatError(
        f"paper_compat={value!r} in a saved result: it must be 'notebook', 'listing' or false "
        f"(a result saved with true meant 'notebook': rewrite the key or compute it again)"
    )


def make_provenance(
    model: Mapping[str, Any] | None, *, settings: Mapping[str, Any] | None = None, **extra: Any
) -> dict:
    """A provenance dict (module docstring): ``model``, ``versions``, ``created``, ``settings``.

    ``extra`` keys are added after those four (e.g. a statistical test's description).
    """
    return {
        "model": dict(model or {}),
        "versions": package_versions(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "settings": dict(settings or {}),
        **extra,
    }
