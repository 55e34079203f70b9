"""Tables of values that never garble: every value whole, as it is, at any terminal width.

Every table of the CLI is built with :func:`data_table` and printed with :func:`render_table`
(``_output.print_table``).  The printer

- shows each title, header and cell **literally**: a ``str`` becomes a :class:`rich.text.Text`,
  never rich markup or an emoji code (``[bold]`` and ``:x:`` stay what they are), and a control
  character in a value is shown as its escape (``\\t``, ``\\n``, ``\\x1b``) instead of moving the
  cursor;
- never cuts a value (no ``…``) and always keeps at least one space between columns, choosing
  the first layout that fits the console's width (the terminal's, ``COLUMNS``, or 80 for a pipe):

  1. the table as built;
  2. the same with one space between columns (the cell padding dropped);
  3. that, with the columns built wrappable (``no_wrap=False``: words, labels) wrapped at spaces,
     never inside a word: such a row takes several lines, the other columns stay on its first;
  4. a vertical layout: for each row a line ``── row 1 of N ──``, then one ``name  value`` line
     per column (the names padded to one width); a value longer than the line is printed whole
     and the terminal wraps it.

``--csv`` and ``--json`` remain the exact, machine-readable forms.
"""

from __future__ import annotations

import re
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

#: no frame; under the headers one rule per column, the columns' gaps left open, so that where a
#: column starts and ends stays visible (``box.SIMPLE_HEAD`` with an open cross)
RULED = box.Box("    \n    \n ─  \n    \n    \n    \n    \n    \n")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def data_table(title: str | None = None, **options: Any) -> Table:
    """The CLI's table: a left-aligned title, bold headers, a rule under each column's header
    (:data:`RULED`), no frame, one space of padding either side of a column; ``options`` go to
    :class:`rich.table.Table`."""
    style: dict[str, Any] = dict(
        title_justify="left",
        caption_justify="left",
        header_style="bold",
        box=RULED,
        pad_edge=False,
        show_edge=False,
    )
    return Table(title=title, **{**style, **options})


def literal(value: Any, *, newlines: bool = False) -> Text:
    """``value`` as plain text: a :class:`Text` stays as it is; anything else is ``str(value)``
    with no markup or emoji parsing, control characters shown as escapes (line breaks kept
    when ``newlines``: a header may take two lines)."""
    if isinstance(value, Text):
        return value
    s = "" if value is None else str(value)
    keep = "\n" if newlines else ""
    return Text(
        _CONTROL.sub(
            lambda m: (
                m.group()
                if m.group() in keep
                else _ESCAPES.get(m.group(), f"\\x{ord(m.group()):02x}")
            ),
            s,
        )
    )


def render_table(table: Table, console: Console) -> None:
    """Print ``table`` on ``console`` in the first layout of the module's list that fits."""
    _make_literal(table)
    width = console.width
    columns = table.columns
    natural = [
        max([_natural(c.header)] + [_natural(x) for x in c._cells] + [c.min_width or 0])
        for c in columns
    ]
    least = [
        n
        if c.no_wrap
        else max(
            [_longest_word(c.header)] + [_longest_word(x) for x in c._cells] + [c.min_width or 0]
        )
        for n, c in zip(natural, columns)
    ]
    title, caption = table.title, table.caption  # printed at the console's width, not the table's
    table.title = table.caption = None
    if title:
        console.print(title, style="table.title")
    for compact in (False, True):
        if compact:
            table.padding = (
                (0, 0) if table.box is not None else (0, 1, 0, 0)
            )  # one space: the box's or the pad
            table.pad_edge = False
        extra = _extra_width(table, console)
        if sum(natural) + extra <= width:
            _print_fixed(table, console, natural)
            break
    else:
        if sum(least) + extra <= width:
            _print_fixed(table, console, _fill(least, natural, width - extra))
        else:
            _print_vertical(table, console)
    if caption:
        console.print(caption, style="table.caption")


# ----------------------------------------------------------------------------- layouts
def _print_fixed(table: Table, console: Console, widths: list[int]) -> None:
    for c, w in zip(table.columns, widths):
        c.width = w
        # rich strips the space that ends a wrapped line only beyond ``w`` *characters*
        # (``Text.rstrip_end``), not cells: next to a wide character (漢字) a line keeps a space
        # one cell too many, and rich's default overflow, "ellipsis", then cuts the value's last
        # character to make room for "…".  "fold" crops that space instead; no word is wider
        # than its column (``least``), so it never folds inside one.
        c.overflow = "fold"
    console.print(table)


def _print_vertical(table: Table, console: Console) -> None:
    names = [" ".join(c.header.plain.split()) for c in table.columns]
    pad = max((cell_len(n) for n in names), default=0)
    header_style = table.header_style or ""
    for r in range(table.row_count):
        console.print(Text(f"── row {r + 1} of {table.row_count} ──", style="dim"), soft_wrap=True)
        for name, c in zip(names, table.columns):
            value = c._cells[r]
            line = Text.assemble(
                Text(name + " " * (pad - cell_len(name)), style=header_style),
                "  ",
                value if isinstance(value, Text) else Text(str(value)),
            )
            console.print(
                line, soft_wrap=True
            )  # whole: the terminal wraps a long line, nothing is cut


# ----------------------------------------------------------------------------- widths
def _make_literal(table: Table) -> None:
    if table.title is not None:
        table.title = literal(table.title)
    if table.caption is not None:
        table.caption = literal(table.caption)
    for c in table.columns:
        c.header = literal(c.header, newlines=True)
        c._cells = [literal(x) for x in c._cells]


def _natural(t: Any) -> int:
    plain = t.plain if isinstance(t, Text) else str(t)
    return max(cell_len(line) for line in plain.split("\n"))


def _longest_word(t: Any) -> int:
    plain = t.plain if isinstance(t, Text) else str(t)
    return max((cell_len(w) for w in plain.split()), default=0)


def _extra_width(table: Table, console: Console) -> int:
    """The characters a table adds to its columns' widths: padding, column separators, edges."""
    saved = [c.width for c in table.columns]
    try:
        for c in table.columns:
            c.width = 1
        total = Measurement.get(console, console.options.update_width(1 << 16), table).maximum
    finally:
        for c, w in zip(table.columns, saved):
            c.width = w
    return total - len(table.columns)


def _fill(least: list[int], natural: list[int], room: int) -> list[int]:
    """Column widths from ``least`` towards ``natural`` that sum to at most ``room``: the spare
    characters go one by one to the column furthest below its natural width."""
    widths = list(least)
    spare = room - sum(widths)
    while spare > 0:
        short = [(natural[i] - widths[i], -i) for i in range(len(widths)) if widths[i] < natural[i]]
        if not short:
            break
        widths[-max(short)[1]] += 1
        spare -= 1
    return widths
