"""``attntopo report``: one self-contained HTML report
of a text (or two) — see :mod:`attntopo.report`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from .._validation import check_maxdim
from ..constants import DEFAULT_MODEL
from ..errors import EmptyTextError, InvalidInputError
from ._common import check_writable_parent, opening, progress_bar, read_text, status
from ._options import Metric, command, nonblank_path, parse_indices
from ._output import err_console, esc

_REPORT_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo report "Quantum information theory allows us to study attention" -o report.html\n'
    "  attntopo report -f examples/quantum.txt --layer 1 --head 2 --layer 4 --head 11 -o q.html\n"
    '  attntopo report "Information theory studies entropy" --compare "Quantum information theory" '
    "-m smollm2 -o cmp.html\n\n"
    "One self-contained HTML file: summary tables, the all-heads grid and interactive figures "
    "(persistence diagrams, distance matrices, threshold graphs with a slider over ε); with "
    "--compare also the comparison. plotly.js is inlined (about 5 MB): the file opens offline and "
    "loads nothing. --layer/--head pairs are matched in order "
    "(one --layer with several --head: that layer's heads)."
)


_HELPS = {  # the shared options in this command's words
    "layer": "Layer of a head drawn in full; pairs with --head.",
    "head": "Head drawn in full (default: the most persistent heads).",
}


@command("report", epilog=_REPORT_EPILOG, no_args_is_help=True, helps=_HELPS)
def report_cmd(
    text=None,
    file=None,
    compare_text: Annotated[
        Optional[str],
        typer.Option(
            "--compare",
            metavar="TEXT_B",
            help="A second text: the report also compares the two.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            parser=nonblank_path,
            metavar="FILE",
            help="The HTML file to write (atomically).",
            show_default=False,
        ),
    ] = ...,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    layer=None,
    head=None,
    plot_heads: Annotated[
        int,
        typer.Option(
            "--plot-heads",
            min=0,
            max=20,
            metavar="N",
            help="Without --layer/--head: draw the N most persistent "
            "heads (and, with --compare, the N most similar).",
        ),
    ] = 3,
    metric="jensen_shannon",
    maxdim=1,
    drop_special=False,
    truncate=False,
    title: Annotated[
        Optional[str],
        typer.Option(
            "--title",
            metavar="TITLE",
            help="Title of the report.",
            show_default=False,
        ),
    ] = None,
    n_jobs=None,
) -> None:
    """Write one self-contained HTML report of a text (and, with --compare, of two texts): summary tables, the all-heads grid and interactive figures of chosen heads, to send to a colleague.

    Progress goes to stderr; stdout gets the path written, and nothing else.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    t_start = time.perf_counter()
    metric = Metric(metric).value
    body, source = read_text(text, file)
    if compare_text is not None and not compare_text.strip():
        raise EmptyTextError("--compare TEXT_B is empty or only whitespace: give at least one word")
    check_maxdim(maxdim, name="--maxdim")
    chosen = _report_heads(parse_indices(layer, "--layer"), parse_indices(head, "--head"))
    _check_report_out(out)
    try:
        import plotly  # noqa: F401

        from .. import plots as _plots  # noqa: F401
    except ImportError as e:
        raise InvalidInputError(
            f"reports need matplotlib and plotly: pip install 'attntopo[plots]' ({e})"
        ) from None
    from ..report import report_html, write_report

    m = opening(
        t_start=t_start,
        model=model,
        device=device,
        dtype=dtype,
        show=True,
        **(
            {}
            if chosen is None
            else {  # each layer and head once, as they pair up
                "layers": list(dict.fromkeys(a for a, _ in chosen)),
                "heads": list(dict.fromkeys(b for _, b in chosen)),
            }
        ),
    ).model
    comparison = None
    if compare_text is None:
        with progress_bar("analysing every head", True) as progress:
            analysis = at.analyze(
                body,
                m,
                metric=metric,
                maxdim=maxdim,
                drop_special=drop_special,
                truncate=truncate,
                n_jobs=n_jobs,
                progress=progress,
            )
    else:
        with progress_bar("comparing the two texts on every head", True) as progress:
            comparison = at.compare(
                body,
                compare_text,
                m,
                metric=metric,
                maxdim=maxdim,
                drop_special=drop_special,
                truncate=truncate,
                n_jobs=n_jobs,
                progress=progress,
            )
        analysis = comparison.a
    with status("drawing the report …", True):
        html = report_html(
            analysis, comparison=comparison, heads=chosen, n_heads=plot_heads, title=title
        )
    try:
        saved = write_report(out, html)
    except OSError as e:
        raise InvalidInputError(f"cannot write --out {str(out)!r}: {e.strerror or e}") from None
    # stdout: the path written, only (as the help promises: `open "$(attntopo report …)"`);
    # what was written goes to stderr, on a terminal, like the progress lines
    sys.stdout.write(f"{saved}\n")
    sys.stdout.flush()
    if err_console.is_terminal:
        size = len(html.encode("utf-8"))
        kind = "comparison report" if comparison is not None else "report"
        err_console.print(
            f"wrote {kind} ({size / 2**20:.1f} MB, self-contained) from {esc(source)} · "
            f"model {esc(m.name)} · {time.perf_counter() - t_start:.1f} s",
            soft_wrap=True,
        )


def _report_heads(
    layers: list[int] | None, heads: list[int] | None
) -> list[tuple[int, int]] | None:
    if layers is None and heads is None:
        return None
    if layers is None or heads is None:
        raise InvalidInputError(
            "give --layer and --head together (e.g. --layer 1 --head 2), or neither"
        )
    if len(layers) == len(heads):
        return list(zip(layers, heads))
    if len(layers) == 1:
        return [(layers[0], h) for h in heads]
    if len(heads) == 1:
        return [(lay, heads[0]) for lay in layers]
    raise InvalidInputError(
        f"--layer and --head pair up in order: got {len(layers)} layers and {len(heads)} heads"
    )


def _check_report_out(out: Path) -> None:
    p = out.expanduser()
    if p.is_dir():
        raise InvalidInputError(
            f"--out {str(out)!r} is a folder: give a file name such as report.html"
        )
    if p.suffix.lower() not in (".html", ".htm"):
        raise InvalidInputError(f"--out {str(out)!r} must be an .html file")
    check_writable_parent(out)
