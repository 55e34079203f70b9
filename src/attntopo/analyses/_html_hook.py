"""Where a result's ``_repr_html_`` finds its renderer (the rendering layer plugs in here).

The analyses never import the rendering layer (:mod:`attntopo.report`, :mod:`attntopo.plots`):
computation must not depend on presentation.  Instead the rendering function is registered
from above — :mod:`attntopo` (the package namespace) installs one at import time that
imports the report module only when a notebook first asks for HTML.  This module imports
nothing, so installing the hook costs nothing at start-up.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

__all__ = ["set_html_renderer", "get_html_renderer", "render_html"]

_renderer: Optional[Callable[[Any], Optional[str]]] = None


def set_html_renderer(fn: Optional[Callable[[Any], Optional[str]]]) -> None:
    """Install ``fn(result) -> str | None`` as the HTML view of results (``None`` removes it).

    ``fn`` returns ``None`` for a result it has no view of; notebooks then show ``repr``.
    """
    global _renderer
    if fn is not None and not callable(fn):
        raise TypeError(f"the HTML renderer must be callable, got {type(fn).__name__}")
    _renderer = fn


def get_html_renderer() -> Optional[Callable[[Any], Optional[str]]]:
    """The installed renderer, or ``None``."""
    return _renderer


def render_html(result: Any) -> Optional[str]:
    """HTML of ``result`` from the installed renderer (``None`` without one)."""
    return None if _renderer is None else _renderer(result)
