"""Reading the CLI's tables back from its stdout, the way a user's eye (or a script) would.

:func:`parse_table` finds a table by its headers and returns its cells, whichever layout the
printer chose (``attntopo.cli._table``):

- ``"table"``: headers, a rule of ``─`` runs (one run per column, runs apart by at least one
  space), then the rows; a column's cell is the text under its run.  A line whose first column
  is empty continues the row above (a wrapped word column); its words are appended with a space.
  Every character outside the runs must be a space: a value that spills into the gap between two
  columns (two values glued) fails the parse.
- ``"vertical"``: ``── row i of N ──``, then one ``name  value`` line per column, the names padded
  to one width.

It knows nothing of rich: positions are terminal cells (a wide character takes two).
"""

from __future__ import annotations

import math
import re
import unicodedata

RULE = re.compile(r"^[─ ]*─[─ ]*$")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def cells(line: str) -> list[str]:
    """One entry per terminal cell: a wide character, then an empty string for its second cell."""
    out: list[str] = []
    for ch in line:
        out.append(ch)
        if unicodedata.east_asian_width(ch) in ("W", "F"):
            out.append("")
    return out


def width(s: str) -> int:
    return len(cells(s))


def _cut(line: str, a: int, b: int) -> str:
    return "".join(cells(line)[a:b])


def _name(header: str) -> str:
    return " ".join(header.split())


class NotFound(AssertionError):
    pass


def parse_table(text: str, headers: list[str], n_rows: int) -> tuple[str, list[list[str]]]:
    """``(layout, rows)`` of the first table in ``text`` with these ``headers`` (a header that
    takes two lines written with ``\\n``) and ``n_rows`` rows; cells stripped of the spaces
    around them.  Raises :class:`NotFound` (an AssertionError) when no such table is there."""
    lines = ANSI.sub("", text).split("\n")
    names = [_name(h) for h in headers]
    if n_rows and any(ln == f"── row 1 of {n_rows} ──" for ln in lines):
        return "vertical", _vertical(lines, names, n_rows)
    for i, line in enumerate(lines):
        if not RULE.match(line):
            continue
        c = cells(line)
        spans = [
            (m.start(), m.end()) for m in re.finditer("─+", "".join(x if x else "\0" for x in c))
        ]
        if len(spans) != len(headers) or not _headers_above(lines, i, spans, names):
            continue
        return "table", _rows(lines[i + 1 :], spans, n_rows)
    raise NotFound(f"no table with headers {names} in:\n{text}")


def _headers_above(lines: list[str], i: int, spans, names: list[str]) -> bool:
    for k in range(1, min(i, 6) + 1):
        block = lines[i - k : i]
        got = [
            " ".join(_cut(ln, a, b).strip() for ln in block if _cut(ln, a, b).strip())
            for a, b in spans
        ]
        if got == names and all(_outside_blank(ln, spans) for ln in block):
            return True
    return False


def _outside_blank(line: str, spans) -> bool:
    c = cells(line)
    inside = set()
    for a, b in spans:
        inside.update(range(a, b))
    return all(not x.strip() for j, x in enumerate(c) if j not in inside)


def _rows(lines: list[str], spans, n_rows: int) -> list[list[str]]:
    rows: list[list[str]] = []
    for line in lines:
        got = [_cut(line, a, b).strip() for a, b in spans]
        if got[0]:
            if len(rows) == n_rows:
                break
            rows.append(got)
        elif not line.strip() or not rows:
            break
        else:  # a wrapped word column: the row goes on
            rows[-1] = [f"{old} {new}" if new else old for old, new in zip(rows[-1], got)]
        assert _outside_blank(line, spans), (
            f"a value spills out of its column (glued to the next):\n{line!r}"
        )
    assert len(rows) == n_rows, (len(rows), n_rows, rows)
    return rows


def _vertical(lines: list[str], names: list[str], n_rows: int) -> list[list[str]]:
    pad = max(width(n) for n in names)
    start = lines.index(f"── row 1 of {n_rows} ──")
    rows = []
    for r in range(n_rows):
        at = start + r * (len(names) + 1)
        assert lines[at] == f"── row {r + 1} of {n_rows} ──", (lines[at], r)
        row = []
        for name, line in zip(names, lines[at + 1 : at + 1 + len(names)]):
            c = cells(line)
            assert (
                "".join(c[: pad + 2]).rstrip() == name
                and "".join(c[width(name) : pad + 2]).strip() == ""
            ), (name, line)
            row.append("".join(c[pad + 2 :]).strip())
        rows.append(row)
    return rows


def printed(s: str, x, *, nan: str = "–") -> bool:
    """Whether ``s`` is the number ``x`` as printed with the digits ``s`` shows (``0.318``,
    ``2.1e-03``, ``12``; ``nan`` stands for NaN): within half a unit of its last digit."""
    if x is None or (isinstance(x, str) and x == "nan") or (isinstance(x, float) and math.isnan(x)):
        return s == nan
    x = float(x)
    if s in ("∞", "-∞"):
        return math.isinf(x) and (x > 0) == (s == "∞")
    v = float(s)
    mant, _, exp = s.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    unit = 10.0 ** (-decimals + (int(exp) if exp else 0))
    return abs(v - x) <= 0.5 * unit * (1 + 1e-9) + 1e-12
