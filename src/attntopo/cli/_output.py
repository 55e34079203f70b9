"""What the commands print: the two consoles (stdout carries results, tables or JSON;
stderr carries progress, warnings and errors), number formats, tables, the ``--json``
document and its diagram points, and where a result was saved.  Nothing here imports torch.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from .. import __version__
from ..io import json_safe
from ._table import render_table

# stdout carries results (tables or JSON); stderr carries progress, warnings and errors
console = Console(highlight=False, soft_wrap=False, emoji=False)  # ':x:' in a text is not an emoji
err_console = Console(stderr=True, highlight=False, emoji=False)


def one_line(msg: str) -> str:
    return re.sub(r"\s*\n\s*", " ", str(msg)).strip()


def fmt(x: Any, digits: int = 3) -> str:
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return str(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isinf(f):
        return "∞" if f > 0 else "-∞"
    if math.isnan(f):
        return "nan"
    if float(f).is_integer() and abs(f) < 1e6 and digits == 0:
        return str(int(f))
    return f"{f:.{digits}f}"


def num(x: Any) -> str:
    """A table number in 5 characters: 0.318, 8.111, 12.60, 123.4."""
    f = float(x)
    if not math.isfinite(f):
        return fmt(f)
    a = abs(f)
    return (
        f"{f:.3f}" if a < 10 else f"{f:.2f}" if a < 100 else f"{f:.1f}" if a < 1000 else f"{f:.3g}"
    )


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def print_table(table: Any) -> None:
    """Print a table of values (built with :func:`~attntopo.cli._table.data_table`) on stdout:
    every title, header and cell as it is (never markup or emoji), never cut, at least one space
    between columns; a table too wide for the terminal (``COLUMNS``; 80 in a pipe) loses its
    padding, then wraps its word columns, then is printed one ``name  value`` line per column
    (:mod:`._table`)."""
    render_table(table, console)


def esc(s: str) -> str:
    """Escape rich markup in user data ([CLS] would otherwise vanish as a style tag)."""
    from rich.markup import escape

    return escape(str(s))


def print_json(doc: Any) -> None:
    """The whole stdout of ``--json``: one JSON document (NaN/inf made JSON-safe)."""
    sys.stdout.write(json.dumps(json_safe(doc), ensure_ascii=False, indent=1) + "\n")
    sys.stdout.flush()


def diagram_points(dgm: Any, **where: Any) -> dict:
    """One persistence diagram in ``--json``: where it comes from (``layer``, ``head``, ``t``, …),
    then :meth:`Diagram.to_dict` with its points — ``points[d]`` is the list of ``[birth, death]``
    of dimension ``d``, ``death`` null for a class that never dies (``threshold`` is the string
    ``"inf"`` when the filtration was not cut).  :meth:`Diagram.from_dict` reads it back."""
    return {**where, **dgm.to_dict(include_points=True)}


def grid_points(grid: Any, layers: Any, heads: Any, **where: Any) -> list[dict]:
    """Every diagram of a ``grid[i][j]``
    (layer position ``i``, head position ``j``), layer by layer."""
    return [
        diagram_points(grid[i][j], **where, layer=int(lay), head=int(hd))
        for i, lay in enumerate(layers)
        for j, hd in enumerate(heads)
    ]


def json_doc(
    doc: dict,
    *,
    source: str | None = None,
    saved: Path | None = None,
    figures: dict[str, bytes] | None = None,
    **tail: Any,
) -> dict:
    """What ``--json`` prints: a result's ``to_dict()`` with the command's additions — where
    the text came from (after the settings), then ``tail`` (timing, …), the saved folder and
    the figure files written."""
    out: dict = {}
    for k, v in doc.items():
        out[k] = v
        if k == "settings" and source is not None:
            out["source"] = source
    out.update(tail)
    out["out"] = None if saved is None else str(saved)
    if figures is not None:
        out["figures"] = sorted(figures)
    return out


def model_line(m: Any, extra: str = "") -> str:
    """``attntopo 0.1.0 · model minilm (6 layers × 12 heads, bidirectional)`` + ``extra``."""
    kind = "causal" if m.causal else "bidirectional"
    return (
        f"[bold]attntopo {__version__}[/bold] · model [bold]{esc(m.name)}[/bold] "
        f"({m.n_layers} layers × {m.n_heads} heads, {kind}{where_line(m)}){extra}"
    )


def where_line(m: Any) -> str:
    """``", bfloat16 on cuda:0"`` for a model not in float32 on the CPU, else ``""``."""
    dev, dt = str(getattr(m, "device", "cpu")), str(getattr(m, "dtype", "float32"))
    return "" if (dev, dt) == ("cpu", "float32") else f", {dt} on {dev}"


def print_saved(saved: Path | None, figures: dict[str, bytes] | None = None) -> None:
    """Where the result went and how to load it back (nothing when not saved)."""
    if saved is None:
        return
    n = len(figures or {})
    extra = f" with {n} figure file{'s' if n != 1 else ''} in figures/" if n else ""
    console.print(
        f"saved to [bold]{esc(saved)}[/bold]{extra}; load with "
        f"attntopo.load_result({esc(repr(str(saved)))})"
    )
