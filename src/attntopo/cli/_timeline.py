"""``attntopo timeline``: one head's diagram for every
prefix of a text, its changes and its vines."""

from __future__ import annotations

import time
from typing import Annotated, List, Optional

import typer

from .._validation import check_maxdim
from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError
from ._common import opening, progress_bar, read_text
from ._options import Metric, command, parse_indices
from ._output import console, diagram_points, esc, json_doc, model_line, num, plural, print_table
from ._table import data_table

_TIMELINE_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo timeline "The cat sat on the mat because it was tired"\n'
    "  attntopo timeline -f examples/quantum.txt --model smollm2 --layer 10 --head 4\n"
    "  attntopo timeline -f examples/quantum.txt -m smollm2 --plots --out tl\n"
    '  attntopo timeline "Attention is all you need" --json > tl.json\n\n'
    "Slice t is the model input for the first tokens of the text, special tokens included "
    "(BERT: \\[CLS] + first t−2 tokens + \\[SEP]; SmolLM2: the first t tokens). Causal models "
    "need one forward pass; bidirectional models one per prefix. The result loads back with "
    "[bold]attntopo.load_result(DIR)[/bold]."
)


_HELPS = {  # the shared options in this command's words
    "layer": "Layer, 0-based (default 0; -1 is the last).",
    "head": "Head, 0-based (default 0).",
    "drop_special": "Remove special tokens (\\[CLS], \\[SEP], …) from every slice and "
    "renormalize rows.",
    "out": "Save the timeline (and figures) into this folder, atomically.",
    "plot_format": "png (default), svg, pdf; html writes an animation timeline.html. Repeatable.",
    "top": "Show the N largest changes and longest vines (0: all).",
}


@command("timeline", epilog=_TIMELINE_EPILOG, no_args_is_help=False, helps=_HELPS)
def timeline_cmd(
    text=None,
    file=None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    layer=None,
    head=None,
    metric="jensen_shannon",
    maxdim=1,
    t0: Annotated[
        Optional[int],
        typer.Option(
            "--t0",
            metavar="T",
            help="First prefix length in model tokens, specials included "
            "(default: one content token).",
            show_default=False,
        ),
    ] = None,
    drop_special=False,
    truncate=False,
    out=None,
    plots=False,
    plot_format=None,
    top=10,
    json_out=False,
    no_diagrams=False,
    n_jobs=None,
) -> None:
    """Topology in time: the persistence diagram of every prefix of the text for one head, how much each arriving token changes it (bottleneck, Wasserstein), and the features followed through time (vines).

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    metric = Metric(metric).value
    body, source = read_text(text, file)
    check_maxdim(maxdim, name="--maxdim")
    lay = _one_index(layer, "--layer", 0)
    hd = _one_index(head, "--head", 0)
    run = opening(
        json_out=json_out,
        out=out,
        plots=plots,
        plot_format=plot_format,
        model=model,
        device=device,
        dtype=dtype,
        layers=lay,
        heads=hd,
    )
    m, show = run.model, run.show
    how = "one forward pass" if m.causal else "a forward pass per prefix"
    with progress_bar(f"timeline ({how})", show) as progress:
        t1 = time.perf_counter()
        tl = at.timeline(
            body,
            m,
            layers=lay,
            heads=hd,
            metric=metric,
            maxdim=maxdim,
            t0=t0,
            drop_special=drop_special,
            truncate=truncate,
            n_jobs=n_jobs,
            progress=progress,
        )
        t_tl = time.perf_counter() - t1
    doc = tl.to_dict(k=top)

    def document(saved, figures, timing):
        out_doc = json_doc(doc, source=source, saved=saved, figures=figures, timing=timing)
        if not no_diagrams:  # one per slice: the diagram of the first t tokens
            out_doc["diagrams"] = [diagram_points(s.diagram, t=s.t) for s in tl.slices]
        return out_doc

    run.finish(
        tl,
        seconds={"timeline_s": t_tl},
        bundle=_bundle,
        plots_s=True,
        document=document,
        summary=lambda timing: _print_summary(tl, m, source, doc, timing),
    )


def _bundle(tl):
    from ..plots import timeline_bundle

    return timeline_bundle(tl)


def _print_summary(tl, m, source: str, doc: dict, timing: dict) -> None:
    console.print(model_line(m, f" · layer {tl.layer} head {tl.head} · metric {tl.metric}"))
    labels = tl.labels
    shown = labels if len(labels) <= 24 else labels[:20] + ["…"] + labels[-3:]
    console.print(
        f"[bold]{tl.n_tokens}[/bold] tokens from {esc(source)}: " + esc(" ".join(shown)),
        overflow="fold",
    )
    built = (
        "one forward pass (each prefix is a block of it)"
        if tl.one_pass
        else f"{len(tl.slices)} prefix runs (every new token changes every row)"
    )
    console.print(
        f"{plural(len(tl.slices), 'slice')}, t = {tl.t0}…{tl.slices[-1].t}, from {built} · "
        f"time {timing['total_s']:.1f} s (timeline {timing['timeline_s']:.1f} s)"
    )
    table = data_table(
        "Tokens whose arrival changed the topology most (distance to the previous slice)"
    )
    for col in ("t", "token"):
        table.add_column(col, justify="right" if col == "t" else "left", no_wrap=True)
    for d in range(tl.maxdim + 1):
        table.add_column(f"bottl.\nH{d}", justify="right", no_wrap=True)
    for d in range(tl.maxdim + 1):
        table.add_column(f"W{tl.p:g}\nH{d}", justify="right", no_wrap=True)
    for c in doc["top_changes"]:
        k = c["t"] - tl.t0 - 1
        table.add_row(
            str(c["t"]),
            c["label"],
            *[num(tl.bottleneck[k, d]) for d in range(tl.maxdim + 1)],
            *[num(tl.wasserstein[k, d]) for d in range(tl.maxdim + 1)],
        )
    print_table(table)
    vines = doc["vines"]
    for d in range(tl.maxdim + 1):
        v = vines[f"h{d}"]
        if not v["count"]:
            console.print(f"H{d}: no features")
            continue
        parts = []
        for x in v["longest"][: min(len(v["longest"]), 5)]:
            born = (
                "from the start"
                if x["born_token"] is None
                else f"born with '{labels[x['born_token']]}'"
            )
            end = (
                "alive at the end"
                if x["died_token"] is None
                else f"gone with '{labels[x['died_token']]}'"
            )
            parts.append(f"t {x['start']}–{x['end']} ({born}, {end})")
        console.print(
            f"H{d}: {plural(v['count'], 'vine')}; longest: " + esc("; ".join(parts)),
            overflow="fold",
        )
    if tl.growing:
        console.print(
            "distances never change as tokens arrive: the slices form one distance × time "
            "bifiltration (Timeline.hilbert(), Timeline.signed_barcode())"
        )
    else:
        console.print(
            "bidirectional model: distances change as tokens arrive, so only the slice view applies"
        )


def _one_index(values: Optional[List[str]], option: str, default: int) -> int:
    got = parse_indices(values, option)
    if got is None:
        return default
    if len(got) != 1:
        raise InvalidInputError(
            f"timeline follows one head: give one {option} "
            f"(got {len(got)}); run it again for others"
        )
    return got[0]
