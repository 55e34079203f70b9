"""The ``attntopo`` command line: parse, call the library, print.

Commands
--------
``attntopo analyze``   one text through the pipeline; a per-head summary table, JSON, a saved
                       result folder and figures.
``attntopo models``    the packaged model aliases usable offline, without loading weights.
``attntopo timeline``  topology in time: one head's diagram for every prefix, coherence, vines.
``attntopo compare``   two texts head by head: shared tokens, connection scales, shared simplices,
                       diagram distances; ``attntopo phrase``: one phrase across contexts.
``attntopo heads``     head space: distances between all heads, clusters, types, model vs model.
``attntopo serve``     the explorer web page and its JSON API (127.0.0.1 by default).
``attntopo report``    one self-contained HTML report of a text (or two).
``attntopo --version``

Exit codes: 0 success; 2 bad input (one ``error: …`` line on stderr, no traceback unless
``--debug``, nothing written); 1 an unexpected failure; 130 interrupted.
Everything computed here comes from the library (:func:`attntopo.analyze`,
:mod:`attntopo.plots`); this module only parses, calls and prints.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any, Iterator, List, Optional

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import __version__
from .constants import METRICS, SUMMARY_STATS
from .errors import AttntopoError, EmptyTextError, InvalidInputError
from .io import META_FILE, json_safe
from .topology import ENGINES

__all__ = ["app", "main"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_TOP = 20
PLOT_FORMATS = ("png", "svg", "pdf", "html")

# choices shown in --help and checked while parsing (typer turns Enums into choices)
Metric = Enum("Metric", [(m, m) for m in METRICS], type=str)
EngineName = Enum("EngineName", [(e, e) for e in ENGINES], type=str)
PlotFormat = Enum("PlotFormat", [(f, f) for f in PLOT_FORMATS], type=str)

app = typer.Typer(
    name="attntopo",
    help=(
        "The shape of transformer attention: text → attention → Jensen–Shannon distances "
        "between tokens → Vietoris–Rips persistence diagrams."
    ),
    epilog=(
        "[bold]Examples[/bold]\n"
        "  attntopo analyze \"Quantum information theory allows us to study attention\"\n"
        "  attntopo analyze -f examples/quantum.txt --layer 1 --head 2 --plots --out q\n"
        "  attntopo analyze -f examples/quantum.txt -m smollm2 --json > q.json\n"
        "  attntopo models\n\n"
        "Run [bold]attntopo COMMAND --help[/bold] for the options of a command. "
        "Exit codes: 0 ok, 2 bad input, 1 failure."
    ),
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# stdout carries results (tables or JSON); stderr carries progress, warnings and errors
_out = Console(highlight=False, soft_wrap=False)
_err = Console(stderr=True, highlight=False)


# ====================================================================== small helpers
def _one_line(msg: str) -> str:
    return re.sub(r"\s*\n\s*", " ", str(msg)).strip()


def _fmt(x: Any, digits: int = 3) -> str:
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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _esc(s: str) -> str:
    """Escape rich markup in user data ([CLS] would otherwise vanish as a style tag)."""
    from rich.markup import escape

    return escape(str(s))


@contextmanager
def _status(message: str, enabled: bool) -> Iterator[None]:
    """A spinner on stderr while ``message``'s work runs (only on a terminal)."""
    if enabled and _err.is_terminal:
        with _err.status(message, spinner="dots"):
            yield
    else:
        yield


def _parse_indices(values: Optional[List[str]], option: str) -> list[int] | None:
    """``--layer 0 --layer 2,5 --layer -1`` → ``[0, 2, 5, -1]`` (None when not given)."""
    if not values:
        return None
    out: list[int] = []
    for v in values:
        for part in str(v).split(","):
            part = part.strip()
            if not re.fullmatch(r"-?\d+", part):
                raise InvalidInputError(
                    f"{option} expects integers such as 0, -1 or 0,2,5; got {v!r}"
                )
            out.append(int(part))
    return out


def _read_text(text: Optional[str], file: Optional[str]) -> tuple[str, str]:
    """The text to analyse and where it came from."""
    if text is not None and file is not None:
        raise InvalidInputError("give the text either as an argument or with --file, not both")
    if text is None and file is None:
        raise InvalidInputError(
            "no text given: pass TEXT as an argument or --file PATH (see attntopo analyze --help)"
        )
    if file is not None:
        if file == "-":
            data, source = sys.stdin.read(), "stdin"
        else:
            p = Path(file).expanduser()
            if not p.exists():
                raise InvalidInputError(f"--file {file!r} does not exist")
            if p.is_dir():
                raise InvalidInputError(f"--file {file!r} is a folder; give a text file")
            try:
                data = p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise InvalidInputError(f"--file {file!r} is not UTF-8 text") from None
            except OSError as e:
                raise InvalidInputError(f"cannot read --file {file!r}: {e.strerror or e}") from None
            source = str(file)
        if not data.strip():
            raise EmptyTextError(f"--file {source!r} is empty or only whitespace: give at least one word")
        return data, source
    assert text is not None
    if not text.strip():
        raise EmptyTextError("the text is empty or only whitespace: give at least one word")
    return text, "argument"


def _check_out(out: Path) -> None:
    """Refuse an --out that cannot become a result folder before any work is done."""
    p = out.expanduser()
    if p.exists() and not p.is_dir():
        raise InvalidInputError(f"--out {str(out)!r} exists and is a file: give a folder path")
    if p.is_dir():
        try:
            entries = list(p.iterdir())
        except OSError as e:
            raise InvalidInputError(f"cannot read --out folder {str(out)!r}: {e.strerror or e}") from None
        if entries and not (p / META_FILE).is_file():
            raise InvalidInputError(
                f"--out folder {str(out)!r} is not empty and holds no attntopo result: "
                f"choose a new or empty folder"
            )
    anc = p.absolute().parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InvalidInputError(f"cannot create --out {str(out)!r}: {str(anc)!r} is not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InvalidInputError(f"cannot write --out {str(out)!r}: no write permission in {str(anc)!r}")




def _debug_option() -> Any:
    """The ``--debug`` option every command has."""
    return typer.Option(False, "--debug", help="Show tracebacks.")


def _json_option() -> Any:
    """The ``--json`` option of the commands that print results."""
    return typer.Option(
        False, "--json", help="Print machine-readable JSON on stdout (and nothing else)."
    )


def _metric_option() -> Any:
    """The ``--metric`` option of the commands that measure attention rows."""
    return typer.Option("jensen_shannon", "--metric", help="Distance between attention rows.")


def _check_maxdim(maxdim: int) -> None:
    if maxdim not in (0, 1, 2):
        raise InvalidInputError(f"--maxdim must be 0, 1 or 2, got {maxdim}")

def _check_plot_options(plots: bool, plot_format, out: Path | None) -> list[str]:
    """Validate --plots/--plot-format/--out before any work; return the figure formats."""
    formats = list(dict.fromkeys(PlotFormat(f).value for f in (plot_format or ["png"])))
    if plot_format and not plots:
        raise InvalidInputError("--plot-format needs --plots")
    if plots and out is None:
        raise InvalidInputError("--plots needs --out DIR: figures are written into the result folder")
    if plots:
        try:
            from . import plots as _plots  # noqa: F401
        except ImportError as e:
            raise InvalidInputError(
                f"--plots needs matplotlib and plotly: pip install 'attntopo[plots]' ({e})"
            ) from None
    if out is not None:
        _check_out(out)
    return formats


def _load_model_with_status(model: str, show: bool):
    """Load a model behind a status line; returns ``(model, seconds)``."""
    from .models import load_model

    loading = f"loading model {model} …"
    if model.strip().lower() == "smollm2" and show and _err.is_terminal:
        if _describe_alias("smollm2").get("converted") is False:
            loading = "loading smollm2: the first use converts its GGUF file once (about 30 s) …"
    with _status(loading, show):
        t0 = time.perf_counter()
        m = load_model(model)
        return m, time.perf_counter() - t0

def _sort_keys(maxdim: int) -> list[str]:
    return ["layer"] + [f"{s}_h{d}" for d in range(maxdim + 1) for s in SUMMARY_STATS]


def _default_sort(maxdim: int) -> str:
    return f"max_persistence_h{min(1, maxdim)}"


def _check_sort(sort: Optional[str], maxdim: int) -> Optional[str]:
    if sort is None:
        return None
    allowed = _sort_keys(maxdim)
    if sort not in allowed:
        raise InvalidInputError(f"--sort {sort!r} is not a summary column; allowed: {', '.join(allowed)}")
    return sort


def _sorted_rows(rows: list[dict], key: str) -> list[dict]:
    if key == "layer":
        return sorted(rows, key=lambda r: (r["layer"], r["head"]))
    return sorted(rows, key=lambda r: (-float(r[key]), r["layer"], r["head"]))


# model descriptions without weights live in attntopo.models.describe
from .models.describe import describe_alias as _describe_alias  # noqa: E402


# ============================================================================ commands
def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"attntopo {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version_callback, is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    pass


_ANALYZE_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo analyze \"Quantum information theory allows us to study attention\"\n"
    "  attntopo analyze --file examples/quantum.txt --model minilm\n"
    "  attntopo analyze -f examples/quantum.txt --layer 1 --head 2 --plots --out q\n"
    "  attntopo analyze -f examples/quantum.txt --layer 0,1 --top 0 --sort layer\n"
    "  attntopo analyze -f examples/quantum.txt -m smollm2 --maxdim 2 --json > q.json\n"
    "  cat notes.txt | attntopo analyze -f - --drop-special\n\n"
    "Layers and heads are 0-based; negatives count from the end (--layer -1 is the last). "
    "A saved result loads back with [bold]attntopo.load_result(DIR)[/bold]."
)


@app.command(epilog=_ANALYZE_EPILOG, no_args_is_help=False)
def analyze(
    text: Optional[str] = typer.Argument(
        None, metavar="TEXT", help="The text to analyse (or use --file).", show_default=False
    ),
    file: Optional[str] = typer.Option(
        None, "--file", "-f", metavar="PATH", help="Read the text from a UTF-8 file ('-' reads stdin).",
        show_default=False,
    ),
    model: str = typer.Option(
        "minilm", "--model", "-m",
        help="Model: a packaged alias (see [bold]attntopo models[/bold]), a Hugging Face id or a local folder/.gguf.",
    ),
    layer: Optional[List[str]] = typer.Option(
        None, "--layer", "-l", metavar="L",
        help="Layer(s) to analyse, 0-based; repeat or comma-separate (default: all).", show_default=False,
    ),
    head: Optional[List[str]] = typer.Option(
        None, "--head", metavar="H",
        help="Head(s) to analyse in each chosen layer; repeat or comma-separate (default: all).",
        show_default=False,
    ),
    metric: Metric = typer.Option(
        "jensen_shannon", "--metric", help="Distance between two tokens' attention rows.",
    ),
    maxdim: int = typer.Option(1, "--maxdim", metavar="D", help="Highest homology dimension: 0, 1 or 2."),
    threshold: float = typer.Option(
        math.inf, "--threshold", metavar="T",
        help="Largest edge length of the Rips filtration, > 0 (inf: the whole filtration).",
    ),
    engine: Optional[EngineName] = typer.Option(
        None, "--engine", help="Persistence engine (default: the fastest installed).", show_default=False,
    ),
    drop_special: bool = typer.Option(
        False, "--drop-special", help="Remove special tokens (\\[CLS], \\[SEP], …) and renormalize rows."
    ),
    paper_compat: bool = typer.Option(
        False, "--paper-compat",
        help="Reproduce the founding paper's distance (softmax again, natural log, fourth root); a reproduction aid.",
    ),
    truncate: bool = typer.Option(False, "--truncate", help="Cut texts longer than the model's context instead of failing."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", metavar="DIR",
        help="Save the result (and figures) into this folder, atomically; an existing result there is replaced.",
        show_default=False,
    ),
    plots: bool = typer.Option(False, "--plots", help="Also draw figures into DIR/figures (needs --out)."),
    plot_format: Optional[List[PlotFormat]] = typer.Option(
        None, "--plot-format",
        help="Figure format(s): png (default), svg, pdf; html writes one interactive report.html. Repeatable.",
        show_default=False,
    ),
    plot_heads: int = typer.Option(
        3, "--plot-heads", min=0, metavar="N",
        help="Draw per-head figures for at most N heads (the top N by --sort); the head grid shows all.",
    ),
    top: int = typer.Option(
        DEFAULT_TOP, "--top", "-n", min=0, metavar="N",
        help="Show at most N heads in the table (0: all). JSON always holds all.",
    ),
    sort: Optional[str] = typer.Option(
        None, "--sort", metavar="COLUMN",
        help="Order of the table: 'layer' or a summary column such as max_persistence_h1, "
        "total_persistence_h0, persistence_entropy_h1, n_bars_h1 "
        "(default: layer order when every head fits, else max_persistence_h1).",
        show_default=False,
    ),
    json_out: bool = _json_option(),
    n_jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N", help="Worker processes for persistence (default: all cores).",
        show_default=False,
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and library log messages."),
) -> None:
    """Analyse one text: attention of every (or the chosen) head → token distances → persistence diagrams → a per-head summary table.

    The table lists, per head, the number of bars in each homology dimension, the total and the largest finite persistence (in distance units) and the persistence entropy (bits). Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    t_start = time.perf_counter()
    metric = Metric(metric).value
    engine = None if engine is None else EngineName(engine).value
    body, source = _read_text(text, file)
    _check_maxdim(maxdim)
    if math.isnan(threshold) or threshold <= 0:
        raise InvalidInputError(f"--threshold must be a positive number or inf, got {threshold:g}")
    layers = _parse_indices(layer, "--layer")
    heads = _parse_indices(head, "--head")
    sort = _check_sort(sort, maxdim)
    formats = _check_plot_options(plots, plot_format, out)

    show = not json_out
    m, t_model = _load_model_with_status(model, show)
    n_sel = (len(layers) if layers else m.n_layers) * (len(heads) if heads else m.n_heads)
    with _status(
        f"analysing {n_sel} head{'s' if n_sel != 1 else ''}: attention → {metric} distances → persistence …",
        show,
    ):
        t0 = time.perf_counter()
        analysis = at.analyze(
            body, m, layers=layers, heads=heads, metric=metric, maxdim=maxdim, threshold=threshold,
            engine=engine, drop_special=drop_special, paper_compat=paper_compat, truncate=truncate,
            n_jobs=n_jobs,
        )
        t_analysis = time.perf_counter() - t0

    rows = analysis.summary_rows()
    n_heads_total = len(rows)
    sort_key = sort or ("layer" if (top == 0 or n_heads_total <= top) else _default_sort(maxdim))
    figures: dict[str, bytes] = {}
    t_plots = 0.0
    if plots:
        with _status("drawing figures …", show):
            t0 = time.perf_counter()
            figures = _render_figures(analysis, rows, sort or _default_sort(maxdim), plot_heads, formats)
            t_plots = time.perf_counter() - t0
    saved = None
    if out is not None:
        with _status(f"saving to {out} …", show):
            saved = _save(analysis, out, figures)
    timing = {
        "model_s": round(t_model, 3),
        "analysis_s": round(t_analysis, 3),
        "plots_s": round(t_plots, 3),
        "total_s": round(time.perf_counter() - t_start, 3),
    }
    if json_out:
        _print_json(analysis, m, rows, source, timing, saved, sorted(figures))
        return
    _print_header(analysis, m, source, timing)
    _print_table(analysis, rows, sort_key, top)
    if saved is not None:
        extra = f" with {len(figures)} figure file{'s' if len(figures) != 1 else ''} in figures/" if figures else ""
        _out.print(
            f"saved to [bold]{_esc(saved)}[/bold]{extra}; load with "
            f"attntopo.load_result({_esc(repr(str(saved)))})"
        )


def _render_figures(analysis, rows: list[dict], key: str, n_heads: int, formats: list[str]) -> dict[str, bytes]:
    """All figure files of ``--plots`` as ``{relative path: bytes}`` (written with the result)."""
    from . import plots as P

    files: dict[str, bytes] = {}
    static = [f for f in formats if f != "html"]
    chosen = [(r["layer"], r["head"]) for r in _sorted_rows(rows, key)[:n_heads]]
    labels = analysis.attention.labels
    special = analysis.attention.special

    def put(name: str, fig) -> None:
        for fmt in static:
            files[f"figures/{name}.{fmt}"] = P.figure_to_bytes(fig, fmt)

    stat = key if key != "layer" else _default_sort(analysis.maxdim)
    if len(rows) > 1:
        put("head_grid", P.plot_head_grid(analysis))
        put(f"heads_{stat}", P.plot_head_stat(analysis, stat))
    for layer, head in chosen:
        tag = f"L{layer:02d}_H{head:02d}"
        dgm = analysis.diagram(layer, head)
        D = analysis.distance_matrix(layer, head)
        i, j = analysis.layers.index(layer), analysis.heads.index(head)
        title = f"layer {layer}, head {head}"
        eps = P.suggest_scale(dgm, D)
        put(f"{tag}_diagram", P.plot_diagram(dgm, title=f"persistence diagram · {title}"))
        put(f"{tag}_barcode", P.plot_barcode(dgm, title=f"barcode · {title}"))
        put(f"{tag}_distances", P.plot_distance_matrix(D, labels, title=f"{analysis.metric} distance · {title}"))
        put(f"{tag}_attention", P.plot_attention(analysis.attention.weights[i, j], labels, title=f"attention · {title}"))
        put(f"{tag}_graph", P.plot_threshold_graph(D, eps, labels, special=special))
        put(f"{tag}_overview", P.plot_head_overview(analysis, layer, head, eps=eps))
    if "html" in formats:
        figs = []
        if len(rows) > 1:
            figs.append(("Summary over layers × heads", P.iplot_head_grid(analysis, stat)))
        for layer, head in chosen:
            dgm = analysis.diagram(layer, head)
            D = analysis.distance_matrix(layer, head)
            t = f"layer {layer}, head {head}"
            figs.append((f"Persistence diagram · {t}", P.iplot_diagram(dgm)))
            figs.append((f"Distances · {t}", P.iplot_distance_matrix(D, labels)))
            figs.append((f"Threshold graph · {t}", P.iplot_threshold_graph(D, labels=labels, special=special)))
        a = analysis.attention
        files["figures/report.html"] = P.figures_to_html(
            figs, title=f"attntopo · {a.model} · {a.n_tokens} tokens · {analysis.metric}"
        )
    return files


def _save(analysis, out: Path, figures: dict[str, bytes]) -> Path:
    """Write the result and its figures into ``out`` in one atomic step."""
    try:
        return analysis.save(out, extra_files=figures)
    except OSError as e:
        raise InvalidInputError(f"cannot write --out {str(out)!r}: {e.strerror or e}") from None


def _settings(analysis) -> dict:
    st = analysis.provenance.get("settings", {})
    return {
        "metric": analysis.metric,
        "maxdim": analysis.maxdim,
        "threshold": analysis.threshold,
        "engine": analysis.engine,
        "paper_compat": analysis.paper_compat,
        "drop_special": bool(st.get("drop_special", analysis.attention.special_dropped)),
        "truncate": bool(st.get("truncate", False)),
        "layers": list(analysis.layers),
        "heads": list(analysis.heads),
    }


def _print_json(analysis, m, rows, source, timing, saved, figures) -> None:
    a = analysis.attention
    doc = {
        "attntopo": __version__,
        "model": m.info(),
        "settings": _settings(analysis),
        "source": source,
        "text": a.text,
        "n_tokens": a.n_tokens,
        "truncated": a.truncated,
        "tokens": a.tokens,
        "labels": a.labels,
        "special": a.special.tolist(),
        "summary": rows,
        "timing": timing,
        "out": None if saved is None else str(saved),
        "figures": figures,
    }
    sys.stdout.write(json.dumps(json_safe(doc), ensure_ascii=False, indent=1) + "\n")
    sys.stdout.flush()


def _print_header(analysis, m, source, timing) -> None:
    a = analysis.attention
    kind = "causal" if m.causal else "bidirectional"
    _out.print(
        f"[bold]attntopo {__version__}[/bold] · model [bold]{_esc(m.name)}[/bold] "
        f"({_esc(m.architecture)}, {m.n_layers} layers × {m.n_heads} heads, {kind})"
    )
    labels = a.labels
    shown = labels if len(labels) <= 24 else labels[:20] + ["…"] + labels[-3:]
    trunc = " [yellow](truncated)[/yellow]" if a.truncated else ""
    dropped = ", special tokens dropped" if a.special_dropped else ""
    _out.print(
        f"[bold]{a.n_tokens}[/bold] tokens from {_esc(source)}{dropped}{trunc}: "
        + _esc(" ".join(shown)),
        overflow="fold",
    )
    thr = "∞" if math.isinf(analysis.threshold) else f"{analysis.threshold:g}"
    _out.print(
        f"metric {analysis.metric}{' (paper-compat)' if analysis.paper_compat else ''} · maxdim "
        f"{analysis.maxdim} · threshold {thr} · engine {analysis.engine} · "
        f"{_plural(len(analysis.layers) * len(analysis.heads), 'head')}"
    )
    _out.print(
        f"time {timing['total_s']:.1f} s: model {timing['model_s']:.1f} s, analysis "
        f"{timing['analysis_s']:.1f} s"
        + (f", figures {timing['plots_s']:.1f} s" if timing["plots_s"] else "")
    )


def _num(x: Any) -> str:
    """A table number in 5 characters: 0.318, 8.111, 12.60, 123.4."""
    f = float(x)
    if not math.isfinite(f):
        return _fmt(f)
    a = abs(f)
    return f"{f:.3f}" if a < 10 else f"{f:.2f}" if a < 100 else f"{f:.1f}" if a < 1000 else f"{f:.3g}"


def _print_table(analysis, rows: list[dict], key: str, top: int) -> None:
    n = len(rows)
    ordered = _sorted_rows(rows, key)
    shown = ordered if top == 0 else ordered[:top]
    by = "layer order" if key == "layer" else f"{key}, largest first"
    title = (
        f"Persistence per head ({_plural(n, 'head')}, {by})"
        if len(shown) == n
        else f"Persistence per head: top {len(shown)} of {n} by {key}"
    )
    table = Table(
        title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False,
        padding=(0, 1) if analysis.maxdim <= 1 else (0, 0), show_edge=False,
    )
    table.add_column("layer", justify="right", no_wrap=True)
    table.add_column("head", justify="right", no_wrap=True)
    n_tok = analysis.attention.n_tokens
    # every token is born as its own H0 class: H0 always has n_tokens bars (said in the caption)
    h0_constant = all(int(r["n_bars_h0"]) == n_tok for r in rows)
    columns = []
    for d in range(analysis.maxdim + 1):
        for stat, head in (
            ("n_bars", "bars"), ("total_persistence", "total"), ("max_persistence", "max"),
            ("persistence_entropy", "ent"),
        ):
            if d == 0 and stat == "n_bars" and h0_constant:
                continue
            col = f"{stat}_h{d}"
            columns.append((d, stat, col))
            table.add_column(
                f"H{d}\n{head}", justify="right", no_wrap=True, min_width=3 if stat == "n_bars" else 5,
                style="bold cyan" if col == key else None,
            )
    for r in shown:
        cells = [str(r["layer"]), str(r["head"])]
        for d, stat, col in columns:
            if stat == "n_bars":
                nb, ni = int(r[col]), int(r[f"n_infinite_h{d}"])
                cells.append(f"{nb} ({ni}∞)" if ni and not (d == 0 and ni == 1) else str(nb))
            else:
                cells.append(_num(r[col]))
        table.add_row(*cells)
    hidden = n - len(shown)
    notes = []
    if hidden:
        notes.append(
            f"{hidden} more head{'s' if hidden != 1 else ''} hidden (--top 0 shows all, --sort orders)."
        )
    if h0_constant:
        notes.append(f"Every head has {n_tok} H0 bars, one per token.")
    notes.append("total, max: finite persistence in distance units; ent: persistence entropy in bits.")
    table.caption = " ".join(notes)
    table.caption_justify = "left"
    _out.print(table)


_MODELS_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo models\n"
    "  attntopo models --json\n\n"
    "Any Hugging Face id or local model folder also works as --model, when it can be reached."
)


@app.command(epilog=_MODELS_EPILOG)
def models(
    json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON on stdout."),
    debug: bool = _debug_option(),
) -> None:
    """List the packaged model aliases usable offline: layers × heads, causal or not, where they load from.

    Reads configs and GGUF headers only; no weights are loaded.
    """  # noqa: E501 - typer keeps line breaks of help text
    from .models import ALIASES

    rows = [_describe_alias(name) for name in ALIASES]
    if json_out:
        sys.stdout.write(json.dumps(json_safe(rows), ensure_ascii=False, indent=1) + "\n")
        return
    table = Table(title="Packaged models", title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("alias", style="bold", no_wrap=True)
    table.add_column("model", no_wrap=True)
    table.add_column("layers × heads", justify="right", no_wrap=True)
    table.add_column("attention", no_wrap=True)
    table.add_column("status")
    for r in rows:
        if r["n_layers"]:
            lh = f"{r['n_layers']} × {r['n_heads']}"
            if r["n_kv_heads"] and r["n_kv_heads"] != r["n_heads"]:
                lh += f" ({r['n_kv_heads']} kv)"
        else:
            lh = "?"
        causal = {True: "causal", False: "bidirectional", None: "?"}[r["causal"]]
        if not r["installed"]:
            status = Text("not installed", style="yellow")
        elif r["format"] == "gguf":
            status = Text("ready" if r["converted"] else "first load converts")
        else:
            status = Text("ready")
        table.add_row(r["alias"], r["description"].split(" (")[0].split(",")[0], lh, causal, status)
    _out.print(table)
    for r in rows:
        if not r["installed"]:
            _out.print(f"[bold]{r['alias']}[/bold]: [yellow]{_esc(r['note'])}[/yellow]", soft_wrap=True)
            continue
        _out.print(f"[bold]{r['alias']}[/bold] loads from {_esc(_short_path(r['source'] or ''))}", soft_wrap=True)
        if r["format"] == "gguf":
            if r["converted"]:
                _out.print(f"  converted: {_esc(_short_path(r['converted']))}", soft_wrap=True)
            else:
                _out.print(f"  {_esc(r['note'])}", soft_wrap=True)
    installed = [r["alias"] for r in rows if r["installed"]]
    _out.print(f"usable offline: {', '.join(installed) or 'none'} · default: minilm")


def _short_path(path: str) -> str:
    """Paths for humans: ``site-packages/…`` for installed packages, ``~`` for home."""
    marker = "site-packages" + os.sep
    if marker in path:
        return marker + path.split(marker, 1)[1]
    home = str(Path.home())
    if home != os.sep and path.startswith(home + os.sep):
        return "~" + path[len(home):]
    return path


# ================================================= compare and phrase (issue 5)
_COMPARE_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo compare \"Quantum information theory allows us to study attention\" "
    "\"Classical information theory studies entropy\"\n"
    "  attntopo compare \"TEXT A\" \"TEXT B\" --layer 2 --head 4 --threshold 0.2 "
    "--highlight \"information theory\"\n"
    "  attntopo compare \"TEXT A\" \"TEXT B\" --plots --plot-format png --plot-format html --out cmp\n"
    "  attntopo compare \"Information theory studies entropy\" "
    "\"La théorie de l'information étudie l'entropie\" --align 0:5 --align 1:1 --json\n\n"
    "Shared tokens are matched by word (case-insensitive, subwords grouped) and occurrence; "
    "--align I:J pairs word I of TEXT A with word J of TEXT B instead (words: runs of letters/"
    "digits and single punctuation marks, 0-based). Without --threshold the scale is chosen per "
    "head (median of both texts' H0 deaths). A saved result loads back with "
    "[bold]attntopo.load_result(DIR)[/bold]."
)


def _parse_alignment(values: Optional[List[str]]) -> list[tuple[int, int]] | None:
    """``--align 0:5 --align 1:1,2:6`` → ``[(0, 5), (1, 1), (2, 6)]``."""
    if not values:
        return None
    out: list[tuple[int, int]] = []
    for v in values:
        for part in str(v).split(","):
            m_ = re.fullmatch(r"\s*(-?\d+)\s*:\s*(-?\d+)\s*", part)
            if not m_:
                raise InvalidInputError(f"--align expects pairs I:J such as 0:5 or 0:5,1:1; got {v!r}")
            out.append((int(m_.group(1)), int(m_.group(2))))
    return out


def _highlight_words(values: Optional[List[str]]) -> list[str]:
    """``--highlight "information theory" --highlight entropy`` → three words."""
    return [w for v in (values or []) for w in str(v).split()]


def _compare_rows(c, dim: int) -> list[dict]:
    s = c.summary()
    keys = ["layer", "head", "scale"] + [
        f"{n}_h{d}" for n in ("bottleneck", "wasserstein1") for d in range(c.maxdim + 1)
    ] + ["shared_edges", "shared_triangles"]
    rows = [{k: s[k][t].item() for k in keys} for t in range(len(s["layer"]))]
    col = f"bottleneck_h{dim}"
    return sorted(rows, key=lambda r: (r[col], sum(r[f"bottleneck_h{d}"] for d in range(c.maxdim + 1)),
                                       r["layer"], r["head"]))


def _render_compare_figures(c, heads: list[tuple[int, int]], highlight: list[str], formats: list[str]) -> dict:
    from . import plots as P
    from .plots import compare as PC

    files: dict[str, bytes] = {}
    static = [f for f in formats if f != "html"]
    hl = highlight or None

    def put(name: str, fig) -> None:
        for fmt in static:
            files[f"figures/{name}.{fmt}"] = P.figure_to_bytes(fig, fmt)

    many = len(c.layers) * len(c.heads) > 1
    if many:
        for d in range(c.maxdim + 1):
            put(f"heads_bottleneck_h{d}", PC.plot_compare_heads(c, "bottleneck", dim=d))
        put("heads_shared_edges", PC.plot_compare_heads(c, "shared_edges"))
    for layer, head in heads:
        tag = f"L{layer:02d}_H{head:02d}"
        put(f"{tag}_graphs", PC.plot_compare_graphs(c, layer, head, highlight=hl))
        put(f"{tag}_diagrams", PC.plot_compare_diagrams(c, layer, head))
    if "html" in formats:
        figs = []
        if many:
            figs.append(("Per head", PC.iplot_compare_heads(c, "bottleneck", dim=min(1, c.maxdim))))
        for layer, head in heads:
            t = f"layer {layer}, head {head}"
            figs.append((f"Threshold graphs · {t}", PC.iplot_compare_graphs(c, layer, head, highlight=hl)))
            figs.append((f"Diagrams · {t}", PC.iplot_compare_diagrams(c, layer, head)))
        files["figures/report.html"] = P.figures_to_html(figs, title=f"attntopo compare · {c.a.attention.model}")
    return files


@app.command("compare", epilog=_COMPARE_EPILOG, no_args_is_help=True)
def compare_cmd(
    text_a: str = typer.Argument(..., metavar="TEXT_A", help="The first text.", show_default=False),
    text_b: str = typer.Argument(..., metavar="TEXT_B", help="The second text.", show_default=False),
    model: str = typer.Option(
        "minilm", "--model", "-m",
        help="Model: a packaged alias, a Hugging Face id (a multilingual one for translations) or a folder.",
    ),
    layer: Optional[List[str]] = typer.Option(
        None, "--layer", "-l", metavar="L",
        help="Layer(s), 0-based; repeat or comma-separate (default: all).", show_default=False,
    ),
    head: Optional[List[str]] = typer.Option(
        None, "--head", metavar="H", help="Head(s) in each chosen layer (default: all).", show_default=False,
    ),
    metric: Metric = _metric_option(),
    maxdim: int = typer.Option(1, "--maxdim", metavar="D", help="Highest homology dimension: 0, 1 or 2."),
    threshold: Optional[float] = typer.Option(
        None, "--threshold", "-t", metavar="EPS",
        help="Scale at which shared edges/triangles are compared, >= 0 (default: per head, the median "
        "H0 death of both texts). The filtration itself is never cut.",
        show_default=False,
    ),
    highlight: Optional[List[str]] = typer.Option(
        None, "--highlight", metavar="WORDS",
        help="Shared words to report pair by pair and highlight in figures, e.g. \"information theory\".",
        show_default=False,
    ),
    align: Optional[List[str]] = typer.Option(
        None, "--align", metavar="I:J",
        help="Pair word I of TEXT A with word J of TEXT B (repeat or comma-separate) instead of string matching.",
        show_default=False,
    ),
    align_tokens: bool = typer.Option(False, "--align-tokens", help="--align gives token positions, not words."),
    include_special: bool = typer.Option(
        False, "--include-special", help="Also match special tokens (\\[CLS] with \\[CLS], …)."
    ),
    drop_special: bool = typer.Option(
        False, "--drop-special", help="Remove special tokens (\\[CLS], \\[SEP], …) and renormalize rows."
    ),
    truncate: bool = typer.Option(False, "--truncate", help="Cut texts longer than the model's context."),
    dim: Optional[int] = typer.Option(
        None, "--dim", metavar="D", help="Homology dimension used to rank heads (default: 1, or 0 with --maxdim 0).",
        show_default=False,
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", metavar="DIR", help="Save the comparison (and figures) into this folder.",
        show_default=False,
    ),
    plots: bool = typer.Option(False, "--plots", help="Also draw figures into DIR/figures (needs --out)."),
    plot_format: Optional[List[PlotFormat]] = typer.Option(
        None, "--plot-format", help="png (default), svg, pdf; html writes one interactive report.html.",
        show_default=False,
    ),
    plot_heads: int = typer.Option(
        2, "--plot-heads", min=0, metavar="N", help="Per-head figures for the N most similar heads.",
    ),
    top: int = typer.Option(
        DEFAULT_TOP, "--top", "-n", min=0, metavar="N", help="Show at most N heads (0: all). JSON holds all.",
    ),
    json_out: bool = _json_option(),
    n_jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N", help="Worker processes for persistence.", show_default=False,
    ),
    debug: bool = _debug_option(),
) -> None:
    """Compare two texts head by head: shared tokens, when they connect in each text, simplices present in both, and diagram distances (bottleneck, Wasserstein) per homology dimension.

    The table lists heads from the most similar (smallest bottleneck distance) to the most different. Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    t_start = time.perf_counter()
    metric = Metric(metric).value
    if not text_a.strip() or not text_b.strip():
        raise EmptyTextError("TEXT_A and TEXT_B must both hold at least one word")
    _check_maxdim(maxdim)
    if threshold is not None and (math.isnan(threshold) or math.isinf(threshold) or threshold < 0):
        raise InvalidInputError(f"--threshold must be a finite number >= 0, got {threshold:g}")
    if dim is not None and not 0 <= dim <= maxdim:
        raise InvalidInputError(f"--dim must be in 0..{maxdim} (--maxdim), got {dim}")
    rank_dim = min(1, maxdim) if dim is None else dim
    layers = _parse_indices(layer, "--layer")
    heads = _parse_indices(head, "--head")
    alignment = _parse_alignment(align)
    if align_tokens and alignment is None:
        raise InvalidInputError("--align-tokens needs --align I:J pairs")
    words = _highlight_words(highlight)
    formats = _check_plot_options(plots, plot_format, out)

    show = not json_out
    m, t_model = _load_model_with_status(model, show)
    with _status("comparing: attention → distances → persistence → diagram distances …", show):
        t0 = time.perf_counter()
        c = at.compare(
            text_a, text_b, m, layers, heads, metric=metric, maxdim=maxdim, threshold=threshold,
            drop_special=drop_special, include_special=include_special, alignment=alignment,
            alignment_units="token" if align_tokens else "word", n_jobs=n_jobs, truncate=truncate,
        )
        t_cmp = time.perf_counter() - t0
    keys = [c.keys[c._key_index(w)] for w in words]  # validates the words: one-line error if not shared
    rows = _compare_rows(c, rank_dim)
    single = len(rows) == 1
    report_heads = [(r["layer"], r["head"]) for r in rows[: max(1, min(top or len(rows), 5))]]
    figures: dict[str, bytes] = {}
    if plots:
        with _status("drawing figures …", show):
            chosen = [(r["layer"], r["head"]) for r in rows[:plot_heads]]
            figures = _render_compare_figures(c, chosen, keys, formats)
    saved = None
    if out is not None:
        with _status(f"saving to {out} …", show):
            try:
                saved = c.save(out, extra_files=figures)
            except OSError as e:
                raise InvalidInputError(f"cannot write --out {str(out)!r}: {e.strerror or e}") from None
    timing = {"model_s": round(t_model, 3), "compare_s": round(t_cmp, 3),
              "total_s": round(time.perf_counter() - t_start, 3)}
    pairs = [
        {"layer": lay, "head": hd, **c.pair(u, v, lay, hd)}
        for lay, hd in ([(r["layer"], r["head"]) for r in rows])
        for i_, u in enumerate(keys) for v in keys[i_ + 1:]
    ]
    if json_out:
        doc = c.to_dict(k=min(5, len(rows)))
        doc.update({
            "attntopo": __version__, "model": m.info(), "tokens_a": c.a.attention.labels,
            "tokens_b": c.b.attention.labels, "highlight": keys, "highlight_pairs": pairs,
            "timing": timing, "out": None if saved is None else str(saved), "figures": sorted(figures),
        })
        if single:
            doc["head_report"] = c.head_report(rows[0]["layer"], rows[0]["head"])
        sys.stdout.write(json.dumps(json_safe(doc), ensure_ascii=False, indent=1) + "\n")
        sys.stdout.flush()
        return

    kind = "causal" if m.causal else "bidirectional"
    _out.print(f"[bold]attntopo {__version__}[/bold] · model [bold]{_esc(m.name)}[/bold] "
               f"({m.n_layers} layers × {m.n_heads} heads, {kind}) · metric {metric}")
    for name, an in (("A", c.a), ("B", c.b)):
        _out.print(f"[bold]{name}[/bold] {an.attention.n_tokens} tokens: " + _esc(" ".join(an.attention.labels)),
                   overflow="fold")
    shared = ", ".join(c.keys) if c.keys else "none"
    how = "aligned" if alignment is not None else "shared"
    _out.print(f"{how} tokens ({len(c.keys)}): {_esc(shared)}", overflow="fold")
    scale = (f"scale ε = {threshold:g}" if threshold is not None
             else f"scale ε per head (median H0 death), {c.scales.min():.3g}–{c.scales.max():.3g}")
    _out.print(f"{scale} · time {timing['total_s']:.1f} s")
    shown = rows if top == 0 else rows[:top]
    table = Table(
        title=(f"Heads from most similar to most different by bottleneck H{rank_dim}"
               + ("" if len(shown) == len(rows) else f" (top {len(shown)} of {len(rows)})")),
        title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
    )
    for col in ("layer", "head", "ε"):
        table.add_column(col, justify="right", no_wrap=True)
    for d in range(c.maxdim + 1):
        table.add_column(f"bottl.\nH{d}", justify="right", no_wrap=True,
                         style="bold cyan" if d == rank_dim else None)
    for d in range(c.maxdim + 1):
        table.add_column(f"W1\nH{d}", justify="right", no_wrap=True)
    table.add_column("shared\nedges", justify="right", no_wrap=True)
    table.add_column("shared\ntriangles", justify="right", no_wrap=True)
    for r in shown:
        table.add_row(
            str(r["layer"]), str(r["head"]), _num(r["scale"]),
            *[_num(r[f"bottleneck_h{d}"]) for d in range(c.maxdim + 1)],
            *[_num(r[f"wasserstein1_h{d}"]) for d in range(c.maxdim + 1)],
            str(r["shared_edges"]), str(r["shared_triangles"]),
        )
    table.caption = ("Diagram distances between the two texts' diagrams, per homology dimension (distance units); "
                     "shared edges/triangles: among shared tokens, present in both texts at ε.")
    table.caption_justify = "left"
    _out.print(table)
    if len(keys) >= 2:
        pt = Table(title="Highlighted pairs (edge birth = distance; connection = minimax path scale)",
                   title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for col in ("layer", "head", "pair", "edge A", "edge B", "connect A", "connect B"):
            pt.add_column(col, justify="left" if col == "pair" else "right", no_wrap=True)
        for p in pairs:
            if (p["layer"], p["head"]) in report_heads:
                pt.add_row(str(p["layer"]), str(p["head"]), _esc(f"{p['a']} – {p['b']}"),
                           _num(p["edge_birth_a"]), _num(p["edge_birth_b"]),
                           _num(p["connection_a"]), _num(p["connection_b"]))
        _out.print(pt)
    if single and c.keys:
        simp = c.shared_simplices(rows[0]["layer"], rows[0]["head"])
        if simp:
            _out.print("present in both texts at ε: " + _esc("; ".join(
                f"{' – '.join(s['tokens'])} (born {s['birth_a']:.3f} / {s['birth_b']:.3f})" for s in simp)),
                overflow="fold")
    if saved is not None:
        extra = f" with {len(figures)} figure file{'s' if len(figures) != 1 else ''} in figures/" if figures else ""
        _out.print(f"saved to [bold]{_esc(saved)}[/bold]{extra}; load with "
                   f"attntopo.load_result({_esc(repr(str(saved)))})")


_PHRASE_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo phrase \"information theory\" --context \"Quantum information theory allows us to study "
    "attention\" --context \"Shannon founded information theory in 1948.\"\n"
    "  attntopo phrase \"information theory\" -c \"…\" -c \"…\" --layer 2 --head 4 --json\n\n"
    "The phrase is found case-insensitively in each context; its tokens are those whose characters "
    "overlap it (never every token with the same id). Its diagrams are those of its own distance "
    "sub-matrix inside each context."
)


@app.command("phrase", epilog=_PHRASE_EPILOG, no_args_is_help=True)
def phrase_cmd(
    phrase: str = typer.Argument(..., metavar="PHRASE", help="The phrase to follow.", show_default=False),
    context: Optional[List[str]] = typer.Option(
        None, "--context", "-c", metavar="TEXT", help="A context containing the phrase; repeat (at least one).",
        show_default=False,
    ),
    model: str = typer.Option("minilm", "--model", "-m", help="Model alias, Hugging Face id or folder."),
    layer: Optional[List[str]] = typer.Option(
        None, "--layer", "-l", metavar="L", help="Layer(s), 0-based (default: all).", show_default=False,
    ),
    head: Optional[List[str]] = typer.Option(
        None, "--head", metavar="H", help="Head(s) (default: all).", show_default=False,
    ),
    metric: Metric = _metric_option(),
    maxdim: int = typer.Option(1, "--maxdim", metavar="D", help="Highest homology dimension: 0, 1 or 2."),
    dim: int = typer.Option(0, "--dim", metavar="D", help="Homology dimension reported (phrases are short: H0)."),
    occurrence: int = typer.Option(0, "--occurrence", min=0, metavar="K", help="Use the K-th match in each context."),
    drop_special: bool = typer.Option(False, "--drop-special", help="Remove special tokens and renormalize rows."),
    truncate: bool = typer.Option(False, "--truncate", help="Cut texts longer than the model's context."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", metavar="DIR", help="Save the result into this folder.", show_default=False,
    ),
    top: int = typer.Option(
        DEFAULT_TOP, "--top", "-n", min=0, metavar="N", help="Show at most N heads (0: all). JSON holds all.",
    ),
    json_out: bool = _json_option(),
    n_jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N", help="Worker processes for persistence.", show_default=False,
    ),
    debug: bool = _debug_option(),
) -> None:
    """Follow one phrase across contexts: its tokens in each, its diagrams, and how far apart they are (bottleneck, Wasserstein) from context to context.

    Heads are listed from the most stable (smallest mean distance between contexts) to the least.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    t_start = time.perf_counter()
    metric = Metric(metric).value
    if not context:
        raise InvalidInputError("give at least one --context TEXT that contains the phrase")
    _check_maxdim(maxdim)
    if not 0 <= dim <= maxdim:
        raise InvalidInputError(f"--dim must be in 0..{maxdim} (--maxdim), got {dim}")
    layers = _parse_indices(layer, "--layer")
    heads = _parse_indices(head, "--head")
    if out is not None:
        _check_out(out)
    show = not json_out
    m, _ = _load_model_with_status(model, show)
    with _status("phrase topology: attention → distances → persistence …", show):
        p = at.phrase_topology(phrase, list(context), m, layers, heads, metric=metric, maxdim=maxdim,
                               drop_special=drop_special, occurrence=occurrence, n_jobs=n_jobs,
                               truncate=truncate)
    saved = None
    if out is not None:
        try:
            saved = p.save(out)
        except OSError as e:
            raise InvalidInputError(f"cannot write --out {str(out)!r}: {e.strerror or e}") from None
    spread = {n: p.spread(dim, n) for n in ("bottleneck", "wasserstein1")}
    rows = [
        {"layer": lay, "head": hd, "bottleneck": float(spread["bottleneck"][i, j]),
         "wasserstein1": float(spread["wasserstein1"][i, j])}
        for i, lay in enumerate(p.layers) for j, hd in enumerate(p.heads)
    ]
    rows.sort(key=lambda r: (math.inf if math.isnan(r["bottleneck"]) else r["bottleneck"], r["layer"], r["head"]))
    single = len(rows) == 1
    if json_out:
        doc = p.to_dict(k=min(5, len(rows)))
        doc.update({"attntopo": __version__, "model": m.info(), "dim": dim, "spread_rows": rows,
                    "total_s": round(time.perf_counter() - t_start, 3),
                    "out": None if saved is None else str(saved)})
        if single:
            doc["matrices"] = {n: p.matrix(dim=dim, by=n).tolist() for n in ("bottleneck", "wasserstein1", "wasserstein2")}
        sys.stdout.write(json.dumps(json_safe(doc), ensure_ascii=False, indent=1) + "\n")
        sys.stdout.flush()
        return
    _out.print(f"[bold]attntopo {__version__}[/bold] · model [bold]{_esc(m.name)}[/bold] · phrase "
               f"[bold]{_esc(repr(phrase))}[/bold] in {_plural(len(p.contexts), 'context')}")
    for k, (ctx, labels) in enumerate(zip(p.contexts, p.token_labels)):
        short = ctx if len(ctx) <= 70 else ctx[:67] + "…"
        _out.print(f"  {k}: {_esc(short)} → tokens {_esc(' '.join(labels))}", overflow="fold")
    if single:
        for n in ("bottleneck", "wasserstein1"):
            M = p.matrix(dim=dim, by=n)
            t = Table(title=f"{n} H{dim} between contexts", title_justify="left", box=box.SIMPLE_HEAD,
                      show_edge=False, pad_edge=False, header_style="bold")
            t.add_column("")
            for k in range(len(p.contexts)):
                t.add_column(str(k), justify="right")
            for k in range(len(p.contexts)):
                t.add_row(str(k), *[_num(x) for x in M[k]])
            _out.print(t)
    else:
        shown = rows if top == 0 else rows[:top]
        _out.print(f"[bold]Heads from most to least stable[/bold] (mean H{dim} distance between contexts"
                   + (")" if len(shown) == len(rows) else f"; top {len(shown)} of {len(rows)}, --top 0 shows all)"))
        t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        for col in ("layer", "head", "bottleneck", "W1"):
            t.add_column(col, justify="right", no_wrap=True)
        for r in shown:
            t.add_row(str(r["layer"]), str(r["head"]), _num(r["bottleneck"]), _num(r["wasserstein1"]))
        _out.print(t)
    if saved is not None:
        _out.print(f"saved to [bold]{_esc(saved)}[/bold]; load with attntopo.load_result({_esc(repr(str(saved)))})")


# ========================================================================== timeline
_TIMELINE_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo timeline \"The cat sat on the mat because it was tired\"\n"
    "  attntopo timeline -f examples/quantum.txt --model smollm2 --layer 10 --head 4\n"
    "  attntopo timeline -f examples/quantum.txt -m smollm2 --plots --out tl\n"
    "  attntopo timeline \"Attention is all you need\" --json > tl.json\n\n"
    "Slice t is the model input for the first tokens of the text, special tokens included "
    "(BERT: \\[CLS] + first t−2 tokens + \\[SEP]; SmolLM2: the first t tokens). Causal models "
    "need one forward pass; bidirectional models one per prefix. The result loads back with "
    "[bold]attntopo.load_result(DIR)[/bold]."
)


def _tl_one_index(values: Optional[List[str]], option: str, default: int) -> int:
    got = _parse_indices(values, option)
    if got is None:
        return default
    if len(got) != 1:
        raise InvalidInputError(
            f"timeline follows one head: give one {option} (got {len(got)}); run it again for others"
        )
    return got[0]


def _tl_vines(tl, top: int) -> dict:
    out = {}
    for d in range(tl.maxdim + 1):
        vines = sorted(tl.vines(d), key=lambda v: (-v.length, v.start))
        out[f"h{d}"] = {
            "count": len(vines),
            "longest": [
                {
                    "start": v.start, "end": v.end, "length": v.length, "alive": v.alive,
                    "born_token": v.born_token, "died_token": v.died_token,
                    "max_persistence": v.max_persistence,
                    "last_point": [float(x) for x in v.points[-1]],
                }
                for v in (vines if top == 0 else vines[:top])
            ],
        }
    return out


def _tl_figures(tl, formats: list[str]) -> dict[str, bytes]:
    from . import plots as P
    from .plots import timeline as PT

    files: dict[str, bytes] = {}
    static = [f for f in formats if f != "html"]

    def put(name: str, fig) -> None:
        for fmt in static:
            files[f"figures/{name}.{fmt}"] = P.figure_to_bytes(fig, fmt)

    put("timeline_overview", PT.plot_timeline_overview(tl, min(1, tl.maxdim)))
    put("timeline_diagrams", PT.plot_timeline_diagrams(tl))
    put("coherence_bottleneck", PT.plot_coherence(tl, "bottleneck"))
    put("coherence_wasserstein", PT.plot_coherence(tl, "wasserstein"))
    for d in range(tl.maxdim + 1):
        put(f"vineyard_h{d}", PT.plot_vineyard(tl, d))
        put(f"betti_h{d}", PT.plot_betti_heatmap(tl, d))
    if "html" in formats:
        files["figures/timeline.html"] = P.figure_to_bytes(PT.iplot_timeline(tl), "html")
    return files


@app.command("timeline", epilog=_TIMELINE_EPILOG, no_args_is_help=False)
def timeline_cmd(
    text: Optional[str] = typer.Argument(
        None, metavar="TEXT", help="The text (or use --file).", show_default=False
    ),
    file: Optional[str] = typer.Option(
        None, "--file", "-f", metavar="PATH", help="Read the text from a UTF-8 file ('-' reads stdin).",
        show_default=False,
    ),
    model: str = typer.Option(
        "minilm", "--model", "-m", help="Model: a packaged alias (minilm, smollm2), a Hugging Face id or a folder.",
    ),
    layer: Optional[List[str]] = typer.Option(
        None, "--layer", "-l", metavar="L", help="Layer, 0-based (default 0; -1 is the last).", show_default=False,
    ),
    head: Optional[List[str]] = typer.Option(
        None, "--head", metavar="H", help="Head, 0-based (default 0).", show_default=False,
    ),
    metric: Metric = _metric_option(),
    maxdim: int = typer.Option(1, "--maxdim", metavar="D", help="Highest homology dimension: 0, 1 or 2."),
    t0: Optional[int] = typer.Option(
        None, "--t0", metavar="T", help="First prefix length in model tokens, specials included "
        "(default: one content token).", show_default=False,
    ),
    drop_special: bool = typer.Option(
        False, "--drop-special", help="Remove special tokens (\\[CLS], \\[SEP], …) from every slice and renormalize rows."
    ),
    truncate: bool = typer.Option(False, "--truncate", help="Cut texts longer than the model's context."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", metavar="DIR", help="Save the timeline (and figures) into this folder, atomically.",
        show_default=False,
    ),
    plots: bool = typer.Option(False, "--plots", help="Also draw figures into DIR/figures (needs --out)."),
    plot_format: Optional[List[PlotFormat]] = typer.Option(
        None, "--plot-format", help="png (default), svg, pdf; html writes an animation timeline.html. Repeatable.",
        show_default=False,
    ),
    top: int = typer.Option(
        10, "--top", "-n", min=0, metavar="N", help="Show the N largest changes and longest vines (0: all).",
    ),
    json_out: bool = _json_option(),
    n_jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N", help="Worker processes for persistence.", show_default=False,
    ),
    debug: bool = _debug_option(),
) -> None:
    """Topology in time: the persistence diagram of every prefix of the text for one head, how much each arriving token changes it (bottleneck, Wasserstein), and the features followed through time (vines).

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    t_start = time.perf_counter()
    metric = Metric(metric).value
    body, source = _read_text(text, file)
    _check_maxdim(maxdim)
    lay = _tl_one_index(layer, "--layer", 0)
    hd = _tl_one_index(head, "--head", 0)
    formats = _check_plot_options(plots, plot_format, out)

    show = not json_out
    m, t_model = _load_model_with_status(model, show)
    how = "one forward pass" if m.causal else "one forward pass per prefix"
    with _status(f"timeline: {how} → distances → persistence of every prefix …", show):
        t1 = time.perf_counter()
        tl = at.timeline(body, m, layer=lay, head=hd, metric=metric, maxdim=maxdim, t0=t0,
                         drop_special=drop_special, truncate=truncate, n_jobs=n_jobs)
        t_tl = time.perf_counter() - t1
    figures: dict[str, bytes] = {}
    t_plots = 0.0
    if plots:
        with _status("drawing figures …", show):
            t1 = time.perf_counter()
            figures = _tl_figures(tl, formats)
            t_plots = time.perf_counter() - t1
    saved = None
    if out is not None:
        with _status(f"saving to {out} …", show):
            try:
                saved = tl.save(out, extra_files=figures)
            except OSError as e:
                raise InvalidInputError(f"cannot write --out {str(out)!r}: {e.strerror or e}") from None
    timing = {"model_s": round(t_model, 3), "timeline_s": round(t_tl, 3), "plots_s": round(t_plots, 3),
              "total_s": round(time.perf_counter() - t_start, 3)}
    n_changes = len(tl.slices) - 1 if top == 0 else min(top, len(tl.slices) - 1)
    changes = [c._asdict() for c in tl.top_changes(n_changes)] if n_changes > 0 else []
    construction = "one_pass" if tl.one_pass else "prefix_runs"
    if json_out:
        doc = {
            "attntopo": __version__, "model": m.info(),
            "settings": {"layer": tl.layer, "head": tl.head, "metric": tl.metric, "maxdim": tl.maxdim,
                         "t0": tl.t0, "drop_special": tl.drop_special, "truncate": truncate,
                         "engine": tl.engine, "wasserstein_p": tl.p},
            "source": source, "text": tl.text, "n_tokens": tl.n_tokens, "truncated": tl.truncated,
            "tokens": tl.tokens, "labels": tl.labels, "special": tl.special.tolist(),
            "construction": construction, "two_parameter": tl.growing,
            "slices": tl.summary_rows(), "top_changes": changes, "vines": _tl_vines(tl, top),
            "timing": timing, "out": None if saved is None else str(saved), "figures": sorted(figures),
        }
        sys.stdout.write(json.dumps(json_safe(doc), ensure_ascii=False, indent=1) + "\n")
        sys.stdout.flush()
        return

    kind = "causal" if m.causal else "bidirectional"
    _out.print(f"[bold]attntopo {__version__}[/bold] · model [bold]{_esc(m.name)}[/bold] "
               f"({m.n_layers} layers × {m.n_heads} heads, {kind}) · layer {tl.layer} head {tl.head} · "
               f"metric {tl.metric}")
    labels = tl.labels
    shown = labels if len(labels) <= 24 else labels[:20] + ["…"] + labels[-3:]
    _out.print(f"[bold]{tl.n_tokens}[/bold] tokens from {_esc(source)}: " + _esc(" ".join(shown)), overflow="fold")
    built = ("one forward pass (each prefix is a block of it)" if tl.one_pass
             else f"{len(tl.slices)} prefix runs (every new token changes every row)")
    _out.print(f"{_plural(len(tl.slices), 'slice')}, t = {tl.t0}…{tl.slices[-1].t}, from {built} · "
               f"time {timing['total_s']:.1f} s (timeline {timing['timeline_s']:.1f} s)")
    table = Table(title="Tokens whose arrival changed the topology most (distance to the previous slice)",
                  title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("t", "token"):
        table.add_column(col, justify="right" if col == "t" else "left", no_wrap=True)
    for d in range(tl.maxdim + 1):
        table.add_column(f"bottl.\nH{d}", justify="right", no_wrap=True)
    for d in range(tl.maxdim + 1):
        table.add_column(f"W{tl.p:g}\nH{d}", justify="right", no_wrap=True)
    for c in changes:
        k = c["t"] - tl.t0 - 1
        table.add_row(str(c["t"]), _esc(c["label"]), *[_num(tl.bottleneck[k, d]) for d in range(tl.maxdim + 1)],
                      *[_num(tl.wasserstein[k, d]) for d in range(tl.maxdim + 1)])
    _out.print(table)
    vines = _tl_vines(tl, top)
    for d in range(tl.maxdim + 1):
        v = vines[f"h{d}"]
        if not v["count"]:
            _out.print(f"H{d}: no features")
            continue
        parts = []
        for x in v["longest"][: min(len(v["longest"]), 5)]:
            born = "from the start" if x["born_token"] is None else f"born with '{labels[x['born_token']]}'"
            end = "alive at the end" if x["died_token"] is None else f"gone with '{labels[x['died_token']]}'"
            parts.append(f"t {x['start']}–{x['end']} ({born}, {end})")
        _out.print(f"H{d}: {_plural(v['count'], 'vine')}; longest: " + _esc("; ".join(parts)), overflow="fold")
    if tl.growing:
        _out.print("distances never change as tokens arrive: the slices form one distance × time "
                   "bifiltration (Timeline.hilbert(), Timeline.signed_barcode())")
    else:
        _out.print("bidirectional model: distances change as tokens arrive, so only the slice view applies")
    if saved is not None:
        extra = f" with {len(figures)} figure file{'s' if len(figures) != 1 else ''} in figures/" if figures else ""
        _out.print(f"saved to [bold]{_esc(saved)}[/bold]{extra}; load with "
                   f"attntopo.load_result({_esc(repr(str(saved)))})")


# ================================================= head space and head types (issue 6)
_HEADS_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo heads \"The cat sat on the mat.\" \"Einstein published four papers in 1905.\"\n"
    "  attntopo heads -f a.txt -f b.txt -f c.txt --model smollm2 --out heads --plots\n"
    "  attntopo heads -f a.txt -f b.txt -f c.txt --compare-model smollm2 --n-boot 200 --json\n\n"
    "Every head of every layer is one point; two heads are as far apart as the Jensen–Shannon "
    "distances between the rows they give the same tokens, averaged over tokens and texts. "
    "Each TEXT or --file is one text. With --compare-model the bootstrap over texts needs at "
    "least 2 texts (10 or more for a meaningful p-value). A saved result loads back with "
    "[bold]attntopo.load_result(DIR)[/bold]."
)


def _heads_texts(texts: Optional[List[str]], files: Optional[List[str]]) -> tuple[list[str], list[str]]:
    """All texts (arguments first, then files) and where each came from."""
    out: list[tuple[str, str]] = []
    for k, t in enumerate(texts or []):
        body, _ = _read_text(t, None)
        out.append((body, f"argument {k + 1}"))
    if files and sum(1 for f in files if f == "-") > 1:
        raise InvalidInputError("--file - (stdin) can be given only once")
    for f in files or []:
        out.append(_read_text(None, f))
    if not out:
        raise InvalidInputError(
            "no text given: pass TEXT arguments or --file PATH (see attntopo heads --help)"
        )
    return [b for b, _ in out], [s for _, s in out]


def _heads_figures(spaces: list, comparison, formats: list[str]) -> dict[str, bytes]:
    from . import plots as P
    from .plots import heads as PH

    files: dict[str, bytes] = {}
    static = [f for f in formats if f != "html"]

    def put(name: str, fig) -> None:
        for fmt in static:
            files[f"figures/{name}.{fmt}"] = P.figure_to_bytes(fig, fmt)

    for hs in spaces:
        tag = "" if len(spaces) == 1 else f"{_safe_name(hs.model)}_"
        put(f"{tag}head_distances", PH.plot_head_distances(hs))
        put(f"{tag}head_mds_layer", PH.plot_head_mds(hs, "layer"))
        put(f"{tag}head_barcode", PH.plot_head_barcode(hs))
        if hs.types is not None:
            put(f"{tag}head_mds_type", PH.plot_head_mds(hs, "type"))
            put(f"{tag}head_types", PH.plot_head_types(hs.types))
        if "html" in formats:
            fig = PH.iplot_head_mds(hs, "type" if hs.types is not None else "layer")
            files[f"figures/{tag}head_mds.html"] = P.figure_to_bytes(fig, "html")
    if comparison is not None:
        put("model_diagrams", PH.plot_model_diagrams(comparison))
    return files


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("_") or "model"


def _heads_doc(hs, top: int, eps: Optional[float]) -> dict:
    groups = hs.redundancy(eps)
    doc = {
        "model": hs.model,
        "n_layers": hs.n_layers,
        "n_heads": hs.n_heads,
        "summary": hs.summary(),
        "redundancy": groups if top == 0 else groups[:top],
        "n_redundant_groups": len(groups),
    }
    if hs.types is not None:
        doc["type_counts"] = hs.types.counts()
        doc["type_labels"] = hs.types.labels.tolist()
        doc["types"] = hs.types.rows()
    return doc


def _print_space(hs, top: int, eps: Optional[float]) -> None:
    from .plots.heads import TYPE_CODES

    s = hs.summary()
    kind = "causal" if hs.causal else "bidirectional"
    _out.print(
        f"[bold]{_esc(hs.model)}[/bold]: {hs.n_layers} layers × {hs.n_heads} heads = "
        f"{hs.n_points} points ({kind}) · {_plural(hs.n_texts, 'text')}, "
        f"{'/'.join(str(n) for n in hs.n_tokens)} tokens"
    )
    unit = "mean JS distance per token" if hs.normalize else "JS distance summed over tokens"
    _out.print(
        f"  head distances ({unit}): min {_num(s['distance_min'])}, median "
        f"{_num(s['distance_median'])}, max {_num(s['distance_max'])}; median nearest neighbour "
        f"{_num(s['nearest_neighbour_median'])}; MDS shows {s['mds_explained']:.0%} of the geometry"
    )
    parts = []
    for d, ds in s["diagram"].items():
        parts.append(
            f"H{d} {ds['n_bars']} bars (max persistence {_num(ds['max_persistence'])}, "
            f"total {_num(ds['total_persistence'])})"
        )
    _out.print("  head-space diagram: " + "; ".join(parts))
    if hs.types is not None:
        counts = {k: v for k, v in hs.types.counts().items() if v}
        _out.print("  head types: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        width = max(2, len(str(max(hs.layer_ids))))
        _out.print("  " + " " * (width + 1) + " ".join(f"{h:>2d}" for h in hs.head_ids))
        for i, l in enumerate(hs.layer_ids):
            _out.print(f"  {l:>{width}d} " + " ".join(TYPE_CODES[x] for x in hs.types.labels[i]))
        _out.print(
            "  (sk sink, se self, pr previous, nx next, br broad, bd banded, vt vertical, mx mixed)"
        )
    groups = hs.redundancy(eps)
    used = groups[0]["eps"] if groups else (hs.default_scale() if eps is None else eps)
    if not groups:
        _out.print(f"  redundant heads within {_num(used)}: none")
        return
    _out.print(
        f"  redundant groups (every pair within {_num(used)}): {len(groups)} groups, "
        f"{sum(g['size'] for g in groups)} heads"
    )
    for g in groups if top == 0 else groups[:top]:
        _out.print(f"    {' '.join(g['heads'])}  (mean {_num(g['mean_distance'])})", overflow="fold")


@app.command("heads", epilog=_HEADS_EPILOG, no_args_is_help=False)
def heads_cmd(
    text: Optional[List[str]] = typer.Argument(
        None, metavar="TEXT...", help="Texts (each argument is one text; or use --file).", show_default=False
    ),
    file: Optional[List[str]] = typer.Option(
        None, "--file", "-f", metavar="PATH",
        help="Read one text from a UTF-8 file ('-' reads stdin); repeatable.", show_default=False,
    ),
    model: str = typer.Option(
        "minilm", "--model", "-m", help="Model: a packaged alias (minilm, smollm2), a Hugging Face id or a folder.",
    ),
    compare_model: Optional[str] = typer.Option(
        None, "--compare-model", "-c", metavar="MODEL",
        help="Also build this model's head space on the same texts and compare the two diagrams.",
        show_default=False,
    ),
    metric: Metric = _metric_option(),
    maxdim: int = typer.Option(1, "--maxdim", metavar="D", help="Highest homology dimension of head space: 0, 1 or 2."),
    raw: bool = typer.Option(
        False, "--sum", help="Sum over tokens (the founding paper) instead of the mean; not with --compare-model."
    ),
    eps: Optional[float] = typer.Option(
        None, "--eps", metavar="E",
        help="Scale of the redundancy report (default: the median nearest-neighbour distance).",
        show_default=False,
    ),
    n_boot: Optional[int] = typer.Option(
        None, "--n-boot", min=0, metavar="N",
        help="Bootstrap replicates of --compare-model (default 100 with 2+ texts, 0 with one).",
        show_default=False,
    ),
    seed: int = typer.Option(0, "--seed", metavar="S", help="Seed of the bootstrap."),
    drop_special: bool = typer.Option(
        False, "--drop-special", help="Remove special tokens (\\[CLS], \\[SEP], …) and renormalize rows."
    ),
    truncate: bool = typer.Option(False, "--truncate", help="Cut texts longer than the model's context."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", metavar="DIR",
        help="Save the head space (or the comparison) and figures into this folder, atomically.",
        show_default=False,
    ),
    plots: bool = typer.Option(False, "--plots", help="Also draw figures into DIR/figures (needs --out)."),
    plot_format: Optional[List[PlotFormat]] = typer.Option(
        None, "--plot-format",
        help="png (default), svg, pdf; html writes the interactive MDS scatter. Repeatable.", show_default=False,
    ),
    top: int = typer.Option(8, "--top", "-n", min=0, metavar="N", help="Show at most N redundant groups (0: all)."),
    json_out: bool = _json_option(),
    n_jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N", help="Worker processes for the bootstrap diagrams.",
        show_default=False,
    ),
    debug: bool = _debug_option(),
) -> None:
    """Head space: every attention head is a point, at Jensen–Shannon distance from the others; its persistence, clusters, redundant heads and head types (sink, self, previous/next token, banded, vertical, broad) — and, with --compare-model, two models' head spaces compared.

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    t_start = time.perf_counter()
    metric = Metric(metric).value
    bodies, sources = _heads_texts(text, file)
    _check_maxdim(maxdim)
    if eps is not None and (math.isnan(eps) or eps < 0):
        raise InvalidInputError(f"--eps must be a number >= 0, got {eps:g}")
    if raw and compare_model is not None:
        raise InvalidInputError("--sum cannot be used with --compare-model: models are compared on mean distances")
    if n_boot is not None and compare_model is None:
        raise InvalidInputError("--n-boot needs --compare-model")
    if compare_model is not None and n_boot is not None and n_boot > 0 and len(bodies) < 2:
        raise InvalidInputError("the bootstrap over texts needs at least 2 texts; give more or --n-boot 0")
    boots = (100 if len(bodies) >= 2 else 0) if n_boot is None else n_boot
    formats = _check_plot_options(plots, plot_format, out)

    show = not json_out
    names = [model] + ([compare_model] if compare_model is not None else [])
    spaces = []
    t_model = t_space = 0.0
    for name in names:
        m, dt = _load_model_with_status(name, show)
        t_model += dt
        with _status(f"{name}: head distances over {_plural(len(bodies), 'text')} → persistence → types …", show):
            t1 = time.perf_counter()
            spaces.append(at.head_space(bodies, m, normalize=not raw, maxdim=maxdim, metric=metric,
                                        drop_special=drop_special, truncate=truncate))
            t_space += time.perf_counter() - t1
    comparison = None
    t_cmp = 0.0
    if compare_model is not None:
        with _status(f"comparing the diagrams ({boots} bootstrap replicates) …", show):
            t1 = time.perf_counter()
            comparison = at.compare_models(None, spaces[0], spaces[1], maxdim=maxdim, n_boot=boots,
                                           seed=seed, n_jobs=n_jobs)
            t_cmp = time.perf_counter() - t1
    figures: dict[str, bytes] = {}
    t_plots = 0.0
    if plots:
        with _status("drawing figures …", show):
            t1 = time.perf_counter()
            figures = _heads_figures(spaces, comparison, formats)
            t_plots = time.perf_counter() - t1
    saved = None
    if out is not None:
        with _status(f"saving to {out} …", show):
            try:
                saved = (comparison or spaces[0]).save(out, extra_files=figures)
            except OSError as e:
                raise InvalidInputError(f"cannot write --out {str(out)!r}: {e.strerror or e}") from None
    timing = {"model_s": round(t_model, 3), "head_space_s": round(t_space, 3), "compare_s": round(t_cmp, 3),
              "plots_s": round(t_plots, 3), "total_s": round(time.perf_counter() - t_start, 3)}
    if json_out:
        doc = {
            "attntopo": __version__,
            "settings": {"metric": metric, "maxdim": maxdim, "normalize": not raw, "eps": eps,
                         "drop_special": drop_special, "truncate": truncate},
            "sources": sources,
            "models": [_heads_doc(hs, top, eps) for hs in spaces],
            "comparison": None if comparison is None else {
                "n_boot": comparison.n_boot, "seed": comparison.seed, "wasserstein_p": comparison.p,
                "dims": comparison.summary(),
            },
            "timing": timing, "out": None if saved is None else str(saved), "figures": sorted(figures),
        }
        sys.stdout.write(json.dumps(json_safe(doc), ensure_ascii=False, indent=1) + "\n")
        sys.stdout.flush()
        return

    _out.print(f"[bold]attntopo {__version__}[/bold] · head space · metric {metric} · "
               f"{_plural(len(bodies), 'text')} ({_esc(', '.join(sources))}) · time {timing['total_s']:.1f} s")
    for hs in spaces:
        _print_space(hs, top, eps)
    if comparison is not None:
        table = Table(
            title=f"{comparison.a.model} vs {comparison.b.model}: distance between the head-space diagrams",
            title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
        )
        cols = ["dim", "bottleneck", f"W{comparison.p:g}"]
        if comparison.n_boot:
            cols += ["null (bottl.)", "z", "p", f"null (W{comparison.p:g})", "z ", "p "]
        for c in cols:
            table.add_column(c, justify="right", no_wrap=True)
        for r in comparison.summary():
            cells = [f"H{r['dim']}", _num(r["bottleneck"]), _num(r["wasserstein"])]
            if comparison.n_boot:
                for name in ("bottleneck", "wasserstein"):
                    mu = (r[f"{name}_null_mean_a"] + r[f"{name}_null_mean_b"]) / 2
                    cells += [f"{_num(mu)}±{_num(r[f'{name}_null_std'])}", _fmt(r[f"{name}_z"], 1),
                              _fmt(r[f"{name}_p"], 3)]
            table.add_row(*cells)
        if comparison.n_boot:
            table.caption = (
                f"null: distance between one model's diagrams on two bootstrap resamples of the texts "
                f"({comparison.n_boot} replicates, seed {comparison.seed}); p = share of null ≥ observed. "
                f"H0 Wasserstein grows with the difference in head counts."
            )
        else:
            table.caption = "no bootstrap (one text or --n-boot 0)"
        table.caption_justify = "left"
        _out.print(table)
    if saved is not None:
        extra = f" with {len(figures)} figure file{'s' if len(figures) != 1 else ''} in figures/" if figures else ""
        _out.print(f"saved to [bold]{_esc(saved)}[/bold]{extra}; load with "
                   f"attntopo.load_result({_esc(repr(str(saved)))})")


# ================================================ explorer and reports (issue 8)
_SERVE_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo serve                       # http://127.0.0.1:8000, packaged models\n"
    "  attntopo serve --port 8080 --open    # another port; open the page in a browser\n"
    "  attntopo serve --model smollm2 --max-chars 4000 --timeout 180\n\n"
    "The page and its JSON API (reference at /docs, schema at /openapi.json) are served by this "
    "process only; every script and style is local, so it works offline. It listens on 127.0.0.1 "
    "(this machine) unless --host says otherwise; there is no authentication."
)


def _port_free(host: str, port: int) -> None:
    """Fail with one line, before starting uvicorn, when the address cannot be bound."""
    import socket

    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host.strip("[]"), port))
    except OSError as e:
        hint = " (another server is running there? try --port 8001)" if port else ""
        raise InvalidInputError(f"cannot listen on {host}:{port}: {e.strerror or e}{hint}") from None


@app.command("serve", epilog=_SERVE_EPILOG, no_args_is_help=False)
def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", metavar="HOST",
                             help="Address to listen on; 127.0.0.1 = this machine only (0.0.0.0: every interface)."),
    port: int = typer.Option(8000, "--port", "-p", min=0, max=65535, metavar="PORT", help="TCP port."),
    model: str = typer.Option(
        "minilm", "--model", "-m",
        help="Default model of the page; a hub id or folder given here is offered too (besides the packaged aliases).",
    ),
    max_chars: int = typer.Option(2000, "--max-chars", min=1, metavar="N", help="Longest text accepted, in characters."),
    max_concurrent: int = typer.Option(
        2, "--max-concurrent", min=1, metavar="N", help="Analyses running at once; more requests get 503 (busy)."
    ),
    timeout: float = typer.Option(
        60.0, "--timeout", metavar="S",
        help="Seconds a request may take before it gets 504; the computation finishes and is cached.",
    ),
    cache_size: int = typer.Option(16, "--cache-size", min=0, metavar="N", help="Analyses and comparisons kept in memory."),
    open_browser: bool = typer.Option(False, "--open/--no-open", help="Open the page in the default browser."),
    debug: bool = typer.Option(False, "--debug", help="Log every request and show tracebacks."),
) -> None:
    """Serve the explorer: a local web page to type two texts, pick a model, layer and head, move a threshold slider and watch the token graphs, persistence diagrams and head maps — and the JSON API it uses.

    Stop with Ctrl+C.
    """  # noqa: E501 - typer keeps line breaks of help text
    if math.isnan(timeout) or math.isinf(timeout) or timeout <= 0:
        raise InvalidInputError(f"--timeout must be a positive number of seconds, got {timeout:g}")
    from .errors import MissingDependencyError

    try:
        import uvicorn
    except ImportError:
        raise MissingDependencyError("attntopo serve needs uvicorn: pip install 'attntopo[web]'") from None
    from .models import resolve_spec
    from .web import Settings, create_app  # MissingDependencyError (one line) without fastapi

    resolve_spec(model)  # an unknown alias or a missing folder fails here, in one line
    settings = Settings(model=model, host=host, port=port, max_chars=max_chars, max_concurrent=max_concurrent,
                        timeout=timeout, cache_size=cache_size, preload=True)
    _port_free(host, port)
    application = create_app(settings)
    shown = host if settings.is_loopback else "127.0.0.1"
    shown = f"[{shown}]" if ":" in shown and not shown.startswith("[") else shown
    url = f"http://{shown}:{port}/"
    if not settings.is_loopback:
        _err.print(
            f"[bold red]warning: listening on {_esc(host)}:{port}, not only on this machine.[/bold red] "
            "The explorer has no authentication: anyone who can reach this port can run models here "
            "and read what is typed. Use the default --host 127.0.0.1 unless that is what you want.",
            soft_wrap=True,
        )
    _err.print(
        f"attntopo {__version__} explorer on [bold]{url}[/bold] · API reference {url}docs · default model "
        f"{_esc(model)} · at most {max_chars} characters, {max_concurrent} analyses at once, {timeout:g} s each "
        "· Ctrl+C stops",
        soft_wrap=True,
    )
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, lambda: webbrowser.open(url)).start()
    uvicorn.run(application, host=host.strip("[]"), port=port, log_level="info" if debug else "warning",
                access_log=debug, server_header=False)


_REPORT_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo report \"Quantum information theory allows us to study attention\" -o report.html\n"
    "  attntopo report -f examples/quantum.txt --layer 1 --head 2 --layer 4 --head 11 -o q.html\n"
    "  attntopo report \"Information theory studies entropy\" --compare \"Quantum information theory\" "
    "-m smollm2 -o cmp.html\n\n"
    "One self-contained HTML file: summary tables, the all-heads grid and interactive figures "
    "(persistence diagrams, distance matrices, threshold graphs with a slider over ε); with --compare "
    "also the comparison. plotly.js is inlined (about 5 MB): the file opens offline and loads nothing. "
    "--layer/--head pairs are matched in order (one --layer with several --head: that layer's heads)."
)


def _report_heads(layers: list[int] | None, heads: list[int] | None) -> list[tuple[int, int]] | None:
    if layers is None and heads is None:
        return None
    if layers is None or heads is None:
        raise InvalidInputError("give --layer and --head together (e.g. --layer 1 --head 2), or neither")
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
        raise InvalidInputError(f"--out {str(out)!r} is a folder: give a file name such as report.html")
    if p.suffix.lower() not in (".html", ".htm"):
        raise InvalidInputError(f"--out {str(out)!r} must be an .html file")
    anc = p.absolute().parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InvalidInputError(f"cannot create --out {str(out)!r}: {str(anc)!r} is not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InvalidInputError(f"cannot write --out {str(out)!r}: no write permission in {str(anc)!r}")


@app.command("report", epilog=_REPORT_EPILOG, no_args_is_help=True)
def report_cmd(
    text: Optional[str] = typer.Argument(None, metavar="TEXT", help="The text (or use --file).", show_default=False),
    file: Optional[str] = typer.Option(
        None, "--file", "-f", metavar="PATH", help="Read the text from a UTF-8 file ('-' reads stdin).",
        show_default=False,
    ),
    compare_text: Optional[str] = typer.Option(
        None, "--compare", metavar="TEXT_B", help="A second text: the report also compares the two.",
        show_default=False,
    ),
    out: Path = typer.Option(..., "--out", "-o", metavar="FILE", help="The HTML file to write (atomically).",
                             show_default=False),
    model: str = typer.Option(
        "minilm", "--model", "-m", help="Model: a packaged alias (minilm, smollm2), a Hugging Face id or a folder.",
    ),
    layer: Optional[List[str]] = typer.Option(
        None, "--layer", "-l", metavar="L", help="Layer of a head drawn in full; pairs with --head.", show_default=False,
    ),
    head: Optional[List[str]] = typer.Option(
        None, "--head", metavar="H", help="Head drawn in full (default: the most persistent heads).",
        show_default=False,
    ),
    plot_heads: int = typer.Option(
        3, "--plot-heads", min=0, max=20, metavar="N",
        help="Without --layer/--head: draw the N most persistent heads (and, with --compare, the N most similar).",
    ),
    metric: Metric = _metric_option(),
    maxdim: int = typer.Option(1, "--maxdim", metavar="D", help="Highest homology dimension: 0, 1 or 2."),
    drop_special: bool = typer.Option(
        False, "--drop-special", help="Remove special tokens (\\[CLS], \\[SEP], …) and renormalize rows."
    ),
    truncate: bool = typer.Option(False, "--truncate", help="Cut texts longer than the model's context."),
    title: Optional[str] = typer.Option(None, "--title", metavar="TITLE", help="Title of the report.",
                                        show_default=False),
    n_jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N", help="Worker processes for persistence.", show_default=False,
    ),
    debug: bool = _debug_option(),
) -> None:
    """Write one self-contained HTML report of a text (and, with --compare, of two texts): summary tables, the all-heads grid and interactive figures of chosen heads, to send to a colleague.

    Progress goes to stderr; the path written to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    t_start = time.perf_counter()
    metric = Metric(metric).value
    body, source = _read_text(text, file)
    if compare_text is not None and not compare_text.strip():
        raise EmptyTextError("--compare TEXT_B is empty or only whitespace: give at least one word")
    _check_maxdim(maxdim)
    chosen = _report_heads(_parse_indices(layer, "--layer"), _parse_indices(head, "--head"))
    _check_report_out(out)
    try:
        import plotly  # noqa: F401

        from . import plots as _plots  # noqa: F401
    except ImportError as e:
        raise InvalidInputError(f"reports need matplotlib and plotly: pip install 'attntopo[plots]' ({e})") from None
    from .models import load_model
    from .report import report_html, write_report

    with _status(f"loading model {model} …", True):
        m = load_model(model)
    comparison = None
    if compare_text is None:
        with _status("analysing every head: attention → distances → persistence …", True):
            analysis = at.analyze(body, m, metric=metric, maxdim=maxdim, drop_special=drop_special,
                                  truncate=truncate, n_jobs=n_jobs)
    else:
        with _status("comparing the two texts on every head …", True):
            comparison = at.compare(body, compare_text, m, metric=metric, maxdim=maxdim,
                                    drop_special=drop_special, truncate=truncate, n_jobs=n_jobs)
        analysis = comparison.a
    with _status("drawing the report …", True):
        html = report_html(analysis, comparison, heads=chosen, n_heads=plot_heads, title=title)
    try:
        saved = write_report(out, html)
    except OSError as e:
        raise InvalidInputError(f"cannot write --out {str(out)!r}: {e.strerror or e}") from None
    size = len(html.encode("utf-8"))
    kind = "comparison report" if comparison is not None else "report"
    _out.print(
        f"wrote {kind} [bold]{_esc(saved)}[/bold] ({size / 2**20:.1f} MB, self-contained) from {_esc(source)} · "
        f"model {_esc(m.name)} · {time.perf_counter() - t_start:.1f} s",
        soft_wrap=True,
    )


# ============================================================================== entry
def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("ATTNTOPO_DEBUG", "") not in ("", "0")
    if not args:
        args = ["--help"]
    if debug:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    command = typer.main.get_command(app)
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=not debug) as rec:
            if not debug:
                warnings.simplefilter("default")
            try:
                rc = command.main(args=args, prog_name="attntopo", standalone_mode=False)
            finally:
                caught = list(rec or [])
        code = rc if isinstance(rc, int) else EXIT_OK
        if code == EXIT_OK:
            _show_warnings(caught)
        return code
    except typer.TyperException as e:  # usage errors: bad option, missing value, bad choice …
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError" and ctx is not None:
            sys.stdout.write(ctx.get_help() + "\n")
            return EXIT_OK
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        _error(e.format_message().replace("Value error, ", "") + where, debug)
        return int(getattr(e, "exit_code", EXIT_USAGE) or EXIT_USAGE)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        return EXIT_INTERRUPTED
    except AttntopoError as e:
        _error(str(e), debug)
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `attntopo … | head`: the reader left; stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # silence the exit flush
        except (OSError, ValueError):
            pass
        return EXIT_FAILURE
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        _error(f"unexpected {type(e).__name__}: {e} (run with --debug for the traceback)", debug)
        return EXIT_FAILURE


def _error(message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    sys.stderr.write(f"error: {_one_line(message)}\n")
    sys.stderr.flush()


def _show_warnings(caught: list) -> None:
    """Repeat attntopo's own warnings as one ``warning:`` line each (others need --debug)."""
    pkg = str(Path(__file__).parent)
    seen = set()
    for w in caught:
        if not str(getattr(w, "filename", "")).startswith(pkg):
            continue
        msg = _one_line(str(w.message))
        if msg in seen:
            continue
        seen.add(msg)
        sys.stderr.write(f"warning: {msg}\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
