"""``attntopo phrase``: one phrase across contexts (its tokens, diagrams and their distances)."""

from __future__ import annotations

import math
import time
from typing import Annotated, List, Optional

import typer

from .. import __version__
from .._validation import check_dim, check_maxdim
from ..constants import DEFAULT_MODEL
from ..errors import EmptyTextError, InvalidInputError
from ._common import opening, progress_bar
from ._options import DEFAULT_TOP, Metric, command, parse_indices
from ._output import console, esc, grid_points, json_doc, num, plural, print_table
from ._table import data_table

_PHRASE_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo phrase "information theory" --context "Quantum information theory allows us to '
    'study attention" --context "Shannon founded information theory in 1948."\n'
    '  attntopo phrase "information theory" -c "…" -c "…" --layer 2 --head 4 --json\n\n'
    "The phrase is found case-insensitively in each context; its tokens are those whose "
    "characters overlap it (never every token with the same id). Its diagrams are those of its "
    "own distance sub-matrix inside each context."
)


_HELPS = {  # the shared options in this command's words
    "model": "Model alias, Hugging Face id or folder.",
    "layer": "Layer(s), 0-based (default: all).",
    "head": "Head(s) (default: all).",
    "drop_special": "Remove special tokens and renormalize rows.",
    "out": "Save the result into this folder.",
    "top": "Show at most N heads (0: all). JSON holds all.",
}


@command("phrase", epilog=_PHRASE_EPILOG, no_args_is_help=True, helps=_HELPS)
def phrase_cmd(
    phrase: Annotated[
        str,
        typer.Argument(
            metavar="PHRASE",
            help="The phrase to follow.",
            show_default=False,
        ),
    ],
    context: Annotated[
        Optional[List[str]],
        typer.Option(
            "--context",
            "-c",
            metavar="TEXT",
            help="A context containing the phrase; repeat (at least one).",
            show_default=False,
        ),
    ] = None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    layer=None,
    head=None,
    metric="jensen_shannon",
    maxdim=1,
    dim: Annotated[
        int,
        typer.Option(
            "--dim",
            metavar="D",
            help="Homology dimension reported (phrases are short: H0).",
        ),
    ] = 0,
    occurrence: Annotated[
        int,
        typer.Option(
            "--occurrence",
            min=0,
            metavar="K",
            help="Use the K-th match in each context.",
        ),
    ] = 0,
    drop_special=False,
    truncate=False,
    out=None,
    top=DEFAULT_TOP,
    json_out=False,
    no_diagrams=False,
    n_jobs=None,
) -> None:
    """Follow one phrase across contexts: its tokens in each, its diagrams, and how far apart they are (bottleneck, Wasserstein) from context to context.

    Heads are listed from the most stable (smallest mean distance between contexts) to the least.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    metric = Metric(metric).value
    if not phrase.strip():  # before the model loads
        raise EmptyTextError("PHRASE is empty or only whitespace: give the word(s) to follow")
    if not context:
        raise InvalidInputError("give at least one --context TEXT that contains the phrase")
    check_maxdim(maxdim, name="--maxdim")
    check_dim(dim, maxdim, "--dim", hint="--maxdim")
    layers = parse_indices(layer, "--layer")
    heads = parse_indices(head, "--head")
    run = opening(
        json_out=json_out,
        out=out,
        model=model,
        device=device,
        dtype=dtype,
        layers=layers,
        heads=heads,
    )
    m, show = run.model, run.show
    with progress_bar("phrase topology", show) as progress:
        t0 = time.perf_counter()
        p = at.phrase_topology(
            phrase,
            list(context),
            m,
            layers=layers,
            heads=heads,
            metric=metric,
            maxdim=maxdim,
            drop_special=drop_special,
            occurrence=occurrence,
            n_jobs=n_jobs,
            truncate=truncate,
            progress=progress,
        )
        t_phrase = time.perf_counter() - t0
    spread = {n: p.spread(dim=dim, by=n) for n in ("bottleneck", "wasserstein1")}
    rows = [
        {
            "layer": lay,
            "head": hd,
            "bottleneck": float(spread["bottleneck"][i, j]),
            "wasserstein1": float(spread["wasserstein1"][i, j]),
        }
        for i, lay in enumerate(p.layers)
        for j, hd in enumerate(p.heads)
    ]
    rows.sort(
        key=lambda r: (
            math.inf if math.isnan(r["bottleneck"]) else r["bottleneck"],
            r["layer"],
            r["head"],
        )
    )
    single = len(rows) == 1

    def document(saved, figures, timing):
        doc = p.to_dict(k=min(5, len(rows)))
        # "summary": the per-head table under the key every command uses
        doc.update({"attntopo": __version__, "model": m.info(), "dim": dim, "summary": rows})
        if single:
            doc["matrices"] = {
                n: p.matrix(dim=dim, by=n).tolist()
                for n in ("bottleneck", "wasserstein1", "wasserstein2")
            }
        doc = json_doc(doc, saved=saved, figures=figures, timing=timing)
        if (
            not no_diagrams
        ):  # the phrase's own diagrams: of its tokens' distance sub-matrix in each context
            doc["diagrams"] = [
                d
                for k, grid in enumerate(p.diagrams)
                for d in grid_points(grid, p.layers, p.heads, context=k)
            ]
        return doc

    run.finish(
        p,
        seconds={"phrase_s": t_phrase},
        document=document,
        summary=lambda _: _print_summary(p, m, phrase, rows, dim=dim, top=top),
    )


def _print_summary(p, m, phrase, rows, *, dim, top) -> None:
    """The lines and tables of ``phrase`` without ``--json``."""
    single = len(rows) == 1
    console.print(
        f"[bold]attntopo {__version__}[/bold] · model [bold]{esc(m.name)}[/bold] · phrase "
        f"[bold]{esc(repr(phrase))}[/bold] in {plural(len(p.contexts), 'context')}"
    )
    for k, (ctx, labels) in enumerate(zip(p.contexts, p.token_labels)):
        short = ctx if len(ctx) <= 70 else ctx[:67] + "…"
        console.print(f"  {k}: {esc(short)} → tokens {esc(' '.join(labels))}", overflow="fold")
    if single:
        for n in ("bottleneck", "wasserstein1"):
            M = p.matrix(dim=dim, by=n)
            t = data_table(f"{n} H{dim} between contexts")
            t.add_column("")
            for k in range(len(p.contexts)):
                t.add_column(str(k), justify="right")
            for k in range(len(p.contexts)):
                t.add_row(str(k), *[num(x) for x in M[k]])
            print_table(t)
    else:
        shown = rows if top == 0 else rows[:top]
        console.print(
            f"[bold]Heads from most to least stable[/bold] (mean H{dim} distance between contexts"
            + (
                ")"
                if len(shown) == len(rows)
                else f"; top {len(shown)} of {len(rows)}, --top 0 shows all)"
            )
        )
        t = data_table()
        for col in ("layer", "head", "bottleneck", "W1"):
            t.add_column(col, justify="right", no_wrap=True)
        for r in shown:
            t.add_row(str(r["layer"]), str(r["head"]), num(r["bottleneck"]), num(r["wasserstein1"]))
        print_table(t)
