"""The ``attntopo`` command line: parse, call the library, print.

Commands (one module each)
--------------------------
``attntopo analyze``   one text through the pipeline; a per-head summary table, JSON, a saved
                       result folder and figures (``_analyze``).
``attntopo models``    the packaged model aliases usable offline, without loading weights
                       (``_models``).
``attntopo compare``   two texts head by head: shared tokens, connection scales, shared simplices,
                       diagram distances (``_compare``); ``attntopo phrase``: one phrase across
                       contexts (``_phrase``).
``attntopo words``     a text's words numbered as ``compare --align`` counts them, with their
                       tokens (``_words``).
``attntopo timeline``  topology in time: one head's diagram for every prefix, coherence, vines
                       (``_timeline``).
``attntopo heads``     head space: distances between all heads, clusters, types, model vs model
                       (``_heads``).
``attntopo serve``     the explorer web page and its JSON API, 127.0.0.1 by default (``_serve``).
``attntopo report``    one self-contained HTML report of a text, or two (``_report``).
``attntopo corpus``    many texts streamed into a resumable Parquet store of feature rows, locally
                       or on Ray (``_corpus``); ``attntopo query``: SQL over a store via DuckDB
                       (``_query``).
``attntopo depth``     the theory measured: per-layer geometry and rank collapse (``_depth``);
                       ``attntopo approx``: every head against efficient-attention families
                       (``_approx``); ``attntopo context``: equivariance and contextual mappings
                       (``_context``).
``attntopo --version``

What the commands share: the typer ``app``, the shared options and ``@command`` in ``_options``;
the consoles, tables and ``--json`` output in ``_output``; input checks, model loading, saving and
:func:`main` in ``_common``.  Figures come from :mod:`attntopo.plots.bundles`.

Exit codes: 0 success; 2 bad input (one ``error: …`` line on stderr, no traceback unless
``--debug``, nothing written); 1 an unexpected failure; 130 interrupted.
Everything computed here comes from the library (:func:`attntopo.analyze`,
:mod:`attntopo.plots`); this package only parses, calls and prints.  Nothing imports torch
before a command needs a model: ``attntopo --help`` and ``attntopo models`` start fast.
"""

from __future__ import annotations

from ._common import app, main

# each module registers its command on ``app`` when imported (hence F401: imported for that
# alone); this order is the order of ``attntopo --help``, so isort leaves it as it is
# isort: off
from ._analyze import analyze  # noqa: F401
from ._models import models  # noqa: F401
from ._compare import compare_cmd  # noqa: F401
from ._phrase import phrase_cmd  # noqa: F401
from ._words import words_cmd  # noqa: F401
from ._timeline import timeline_cmd  # noqa: F401
from ._heads import heads_cmd  # noqa: F401
from ._serve import serve_cmd  # noqa: F401
from ._report import report_cmd  # noqa: F401
from ._hardmax import hardmax_app  # noqa: F401
from ._compress import compress_cmd  # noqa: F401
from ._corpus import corpus_cmd  # noqa: F401
from ._query import query_cmd  # noqa: F401
from ._depth import depth_cmd  # noqa: F401
from ._approx import approx_cmd  # noqa: F401
from ._context import context_cmd  # noqa: F401
# isort: on

__all__ = ["app", "main"]
