"""``attntopo analyze``: one text through the pipeline;
a per-head table, JSON, a result folder, figures."""

from __future__ import annotations

import math
import time
from typing import Annotated, Optional

import typer

from .. import __version__
from .._validation import check_maxdim, check_number, check_threshold
from ..constants import DEFAULT_MODEL, SUMMARY_STATS
from ..errors import InvalidInputError
from ._common import (
    DEFAULT_TOP,
    EngineName,
    Metric,
    PaperMode,
    command,
    console,
    data_table,
    esc,
    grid_points,
    json_doc,
    num,
    opening,
    parse_indices,
    plural,
    print_table,
    progress_bar,
    read_text,
    where_line,
)

_ANALYZE_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo analyze "Quantum information theory allows us to study attention"\n'
    "  attntopo analyze --file examples/quantum.txt --model minilm\n"
    "  attntopo analyze -f examples/quantum.txt --layer 1 --head 2 --plots --out q\n"
    "  attntopo analyze -f examples/quantum.txt --layer 0,1 --top 0 --sort layer\n"
    "  attntopo analyze -f examples/quantum.txt -m smollm2 --maxdim 2 --json > q.json\n"
    "  cat notes.txt | attntopo analyze -f - --drop-special\n\n"
    "Layers and heads are 0-based; negatives count from the end (--layer -1 is the last). "
    "A saved result loads back with [bold]attntopo.load_result(DIR)[/bold]."
)


_HELPS = {  # the shared options in this command's words
    "text": "The text to analyse (or use --file).",
    "model": "Model: a packaged alias (see [bold]attntopo "
    "models[/bold]), a Hugging Face id or a local folder/.gguf.",
    "layer": "Layer(s) to analyse, 0-based; repeat or comma-separate (default: all).",
    "head": "Head(s) to analyse in each chosen layer; repeat or comma-separate (default: all).",
    "metric": "Distance between two tokens' attention rows.",
    "truncate": "Cut texts longer than the model's context instead of failing.",
    "out": "Save the result (and figures) into this folder, "
    "atomically; an existing result there is replaced.",
    "plot_format": "Figure format(s): png (default), svg, pdf; html "
    "writes one interactive report.html. Repeatable.",
    "top": "Show at most N heads in the table (0: all). JSON always holds all.",
    "n_jobs": "Worker processes for persistence (default: all cores).",
}


@command(epilog=_ANALYZE_EPILOG, no_args_is_help=False, helps=_HELPS)
def analyze(
    text=None,
    file=None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    layer=None,
    head=None,
    metric="jensen_shannon",
    maxdim=1,
    threshold: Annotated[
        float,
        typer.Option(
            "--threshold",
            metavar="T",
            help="Largest edge length of the Rips filtration, > 0 (inf: the whole filtration).",
        ),
    ] = math.inf,
    engine: Annotated[
        Optional[EngineName],
        typer.Option(
            "--engine",
            help="Persistence engine (default: the fastest installed).",
            show_default=False,
        ),
    ] = None,
    min_persistence: Annotated[
        float,
        typer.Option(
            "--min-persistence",
            metavar="P",
            help="Drop finite bars of length <= P (death - birth) before counting and summing them "
            "(0: keep every bar).",
        ),
    ] = 0.0,
    drop_special=False,
    paper: Annotated[
        Optional[PaperMode],
        typer.Option(
            "--paper",
            show_default=False,
            help="Reproduce a founding-paper distance (softmax again, natural log), a reproduction "
            "aid: notebook = the published notebooks (fourth root of the divergence), listing "
            "= the printed Listing 1 (square root).",
        ),
    ] = None,
    truncate=False,
    out=None,
    plots=False,
    plot_format=None,
    plot_heads: Annotated[
        int,
        typer.Option(
            "--plot-heads",
            min=0,
            metavar="N",
            help="Draw per-head figures for at most N heads "
            "(the top N by --sort); the head grid shows all.",
        ),
    ] = 3,
    top=DEFAULT_TOP,
    sort: Annotated[
        Optional[str],
        typer.Option(
            "--sort",
            metavar="COLUMN",
            help="Order of the table: 'layer' or a summary column such as max_persistence_h1, "
            "total_persistence_h0, persistence_entropy_h1, n_bars_h1 "
            "(default: layer order when every head fits, else max_persistence_h1).",
            show_default=False,
        ),
    ] = None,
    json_out=False,
    no_diagrams=False,
    n_jobs=None,
) -> None:
    """Analyse one text: attention of every (or the chosen) head → token distances → persistence diagrams → a per-head summary table.

    The table lists, per head, the number of bars in each homology dimension, the total and the largest finite persistence (in distance units) and the persistence entropy (bits). Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    metric = Metric(metric).value
    engine = None if engine is None else EngineName(engine).value
    body, source = read_text(text, file)
    check_maxdim(maxdim, name="--maxdim")
    check_threshold(threshold, "--threshold")
    check_number(min_persistence, "--min-persistence", lo=0.0)
    layers = parse_indices(layer, "--layer")
    heads = parse_indices(head, "--head")
    sort = _check_sort(sort, maxdim)
    run = opening(
        json_out=json_out,
        out=out,
        plots=plots,
        plot_format=plot_format,
        model=model,
        device=device,
        dtype=dtype,
        layers=layers,
        heads=heads,
    )
    m, show, formats = run.model, run.show, run.formats
    n_sel = (len(layers) if layers else m.n_layers) * (len(heads) if heads else m.n_heads)
    with progress_bar(f"analysing {n_sel} head{'s' if n_sel != 1 else ''}", show) as progress:
        t0 = time.perf_counter()
        paper = None if paper is None else PaperMode(paper).value
        analysis = at.analyze(
            body,
            m,
            layers=layers,
            heads=heads,
            metric=metric,
            maxdim=maxdim,
            threshold=threshold,
            engine=engine,
            drop_special=drop_special,
            paper_compat=paper,
            truncate=truncate,
            n_jobs=n_jobs,
            progress=progress,
            min_persistence=min_persistence,
        )
        t_analysis = time.perf_counter() - t0

    rows = analysis.summary_rows()
    n_heads_total = len(rows)
    sort_key = sort or ("layer" if (top == 0 or n_heads_total <= top) else _default_sort(analysis))
    bundle = None
    if formats:
        from ..plots import analysis_bundle

        key = sort or _default_sort(analysis)
        chosen = [(r["layer"], r["head"]) for r in _sorted_rows(rows, key)[:plot_heads]]
        bundle = analysis_bundle(
            analysis, heads=chosen, stat=key if key != "layer" else _default_sort(analysis)
        )

    def document(saved, figures, timing):
        doc = json_doc(
            analysis.to_dict(), source=source, saved=saved, figures=figures, timing=timing
        )
        if not no_diagrams:
            doc["diagrams"] = grid_points(analysis.diagrams, analysis.layers, analysis.heads)
        return doc

    def summary(timing):
        _print_header(analysis, m, source, timing)
        _print_table(analysis, rows, sort_key, top)

    run.finish(
        analysis,
        seconds={"analysis_s": t_analysis},
        bundle=lambda _: bundle,
        plots_s=True,
        document=document,
        summary=summary,
    )


# ------------------------------------------------------------------ table order
def _sort_keys(maxdim: int) -> list[str]:
    return ["layer"] + [f"{s}_h{d}" for d in range(maxdim + 1) for s in SUMMARY_STATS]


def _default_sort(analysis) -> str:
    """The longest bar in the analysis's ranking dimension (H0 when most heads have no H1 bar)."""
    return f"max_persistence_h{analysis.ranking_dim}"


def _check_sort(sort: Optional[str], maxdim: int) -> Optional[str]:
    if sort is None:
        return None
    allowed = _sort_keys(maxdim)
    if sort not in allowed:
        raise InvalidInputError(
            f"--sort {sort!r} is not a summary column; allowed: {', '.join(allowed)}"
        )
    return sort


def _sorted_rows(rows: list[dict], key: str) -> list[dict]:
    if key == "layer":
        return sorted(rows, key=lambda r: (r["layer"], r["head"]))
    return sorted(rows, key=lambda r: (-float(r[key]), r["layer"], r["head"]))


# ----------------------------------------------------------------------- output
def _print_header(analysis, m, source, timing) -> None:
    a = analysis.attention
    kind = "causal" if m.causal else "bidirectional"
    console.print(
        f"[bold]attntopo {__version__}[/bold] · model [bold]{esc(m.name)}[/bold] "
        f"({esc(m.architecture)}, {m.n_layers} layers × {m.n_heads} heads, {kind}{where_line(m)})"
    )
    labels = a.labels
    shown = labels if len(labels) <= 24 else labels[:20] + ["…"] + labels[-3:]
    trunc = " [yellow](truncated)[/yellow]" if a.truncated else ""
    dropped = ", special tokens dropped" if a.special_dropped else ""
    console.print(
        f"[bold]{a.n_tokens}[/bold] tokens from {esc(source)}{dropped}{trunc}: "
        + esc(" ".join(shown)),
        overflow="fold",
    )
    thr = "∞" if math.isinf(analysis.threshold) else f"{analysis.threshold:g}"
    console.print(
        f"metric {analysis.metric}"
        f"{f' (paper: {analysis.paper_compat})' if analysis.paper_compat else ''} · maxdim "
        f"{analysis.maxdim} · threshold {thr} · engine {analysis.engine} · "
        f"{plural(len(analysis.layers) * len(analysis.heads), 'head')}"
    )
    console.print(
        f"time {timing['total_s']:.1f} s: model {timing['model_s']:.1f} s, analysis "
        f"{timing['analysis_s']:.1f} s"
        + (f", figures {timing['plots_s']:.1f} s" if timing["plots_s"] else "")
    )


def _print_table(analysis, rows: list[dict], key: str, top: int) -> None:
    n = len(rows)
    ordered = _sorted_rows(rows, key)
    shown = ordered if top == 0 else ordered[:top]
    by = "layer order" if key == "layer" else f"{key}, largest first"
    title = (
        f"Persistence per head ({plural(n, 'head')}, {by})"
        if len(shown) == n
        else f"Persistence per head: top {len(shown)} of {n} by {key}"
    )
    table = data_table(title, padding=(0, 1) if analysis.maxdim <= 1 else (0, 0))
    table.add_column("layer", justify="right", no_wrap=True)
    table.add_column("head", justify="right", no_wrap=True)
    n_tok = analysis.attention.n_tokens
    # every token is born as its own H0 class: H0 always has n_tokens bars (said in the caption)
    h0_constant = all(int(r["n_bars_h0"]) == n_tok for r in rows)
    columns = []
    for d in range(analysis.maxdim + 1):
        for stat, head in (
            ("n_bars", "bars"),
            ("total_persistence", "total"),
            ("max_persistence", "max"),
            ("persistence_entropy", "ent"),
        ):
            if d == 0 and stat == "n_bars" and h0_constant:
                continue
            col = f"{stat}_h{d}"
            columns.append((d, stat, col))
            table.add_column(
                f"H{d}\n{head}",
                justify="right",
                no_wrap=True,
                min_width=3 if stat == "n_bars" else 5,
                style="bold cyan" if col == key else None,
            )
    for r in shown:
        cells = [str(r["layer"]), str(r["head"])]
        for d, stat, col in columns:
            if stat == "n_bars":
                nb, ni = int(r[col]), int(r[f"n_infinite_h{d}"])
                cells.append(f"{nb} ({ni}∞)" if ni and not (d == 0 and ni == 1) else str(nb))
            else:
                cells.append(num(r[col]))
        table.add_row(*cells)
    hidden = n - len(shown)
    notes = []
    if hidden:
        notes.append(
            f"{hidden} more head{'s' if hidden != 1 else ''} "
            "hidden (--top 0 shows all, --sort orders)."
        )
    if h0_constant:
        notes.append(f"Every head has {n_tok} H0 bars, one per token.")
    notes.append(
        "total, max: finite persistence in distance units; ent: persistence entropy in bits."
    )
    table.caption = " ".join(notes)
    print_table(table)
