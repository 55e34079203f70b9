"""The explorer: a local web page and JSON API over attntopo (``attntopo serve``).

Needs the ``web`` extra (``pip install 'attntopo[web]'``: FastAPI, uvicorn, plotly):
importing this package without FastAPI raises
:class:`~attntopo.errors.MissingDependencyError` with that hint.

>>> from attntopo.web import Settings, create_app, uvicorn_options
>>> settings = Settings(model="minilm", max_chars=2000)
>>> app = create_app(settings)                                  # an ASGI app
>>> # uvicorn.run(app, host="127.0.0.1", port=8000, **uvicorn_options(settings))
>>> #                                                  # what `attntopo serve` does

Everything the page needs is served by the app itself (plotly.js from the installed
plotly package, the page's own JS and CSS): it works with no internet connection.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
    import plotly  # noqa: F401
except ImportError as _e:  # pragma: no cover - exercised only without the extra
    from ..errors import MissingDependencyError

    raise MissingDependencyError(
        f"the attntopo explorer needs the web extra ({_e.name} is missing): "
        f"pip install 'attntopo[web]'"
    ) from None

from ._server import uvicorn_options
from .app import Settings, create_app

__all__ = ["Settings", "create_app", "uvicorn_options"]
