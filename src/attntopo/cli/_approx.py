"""``attntopo approx``: how well band+sparse, top-k,
low-rank, kernel and clustered attention fit every head."""

from __future__ import annotations

import math
import time
from typing import Annotated, List, Optional

import typer

from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError
from ._common import opening, progress_bar, read_text
from ._options import comma_words, command, parse_indices
from ._output import console, esc, model_line, num, print_table
from ._table import data_table

_APPROX_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo approx "The cat sat on the mat because it was tired."\n'
    "  attntopo approx -f story.txt -m smollm2 --budget 8,16 --json\n"
    "  attntopo approx -f story.txt --family top_k,low_rank --show 8 --plots --out approx\n\n"
    "Every head's attention is approximated by each family at matched budgets (numbers stored per "
    "query row: top-k and rank r = budget/2, kernel features m = budget/2, clusters k = budget − "
    "1, band + columns + corrections split the budget); errors are ‖A − Â‖_F/‖A‖_F and the mean "
    "JS distance of Â's rows (negatives clipped, renormalized). One forward pass gives attention, "
    "queries and keys. docs/theory.md (section 2) has the measurements."
)


def _ints(values: Optional[List[str]], option: str) -> list[int] | None:
    out = parse_indices(values, option)
    if out is not None and any(v < 0 for v in out):
        raise InvalidInputError(f"{option} takes positive integers, got {out}")
    return out


def _words(values: Optional[List[str]]) -> list[str] | None:
    if not values:
        return None
    return comma_words(values, "--family", "top_k,low_rank")


@command(
    "approx",
    epilog=_APPROX_EPILOG,
    no_args_is_help=False,
    static_figures="the approximability figure is",
)
def approx_cmd(
    text=None,
    file=None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    budget: Annotated[
        Optional[List[str]],
        typer.Option(
            "--budget",
            "-b",
            metavar="P",
            show_default=False,
            help="Budget(s), numbers stored per query row, 2..n; repeat or comma-separate "
            "(default: 4,8,16,32 up to n).",
        ),
    ] = None,
    family: Annotated[
        Optional[List[str]],
        typer.Option(
            "--family",
            metavar="F",
            show_default=False,
            help="Families: band_sparse, top_k, low_rank, kernel, "
            "cluster_kmeans, cluster_h0 (default: all).",
        ),
    ] = None,
    layer=None,
    head=None,
    draws: Annotated[
        int, typer.Option("--draws", help="Kernel feature draws averaged per head.")
    ] = 4,
    iid: Annotated[
        bool, typer.Option("--iid", help="iid Gaussian kernel features instead of orthogonal ones.")
    ] = False,
    scale: Annotated[
        str,
        typer.Option(
            "--scale",
            help="Scale of the extra H0-cluster row: a JS distance or 'gap'.",
        ),
    ] = "gap",
    seed: Annotated[int, typer.Option("--seed", min=0, help="Kernel draws and k-means.")] = 0,
    show: Annotated[
        Optional[int],
        typer.Option(
            "--show",
            metavar="P",
            show_default=False,
            help="Budget of the per-head table (default: the middle one).",
        ),
    ] = None,
    truncate=False,
    out=None,
    plots=False,
    plot_format=None,
    json_out=False,
) -> None:
    """Approximate every head by band+sparse, top-k, low-rank, kernel and clustered attention.

    Progress goes to stderr; results to stdout.
    """
    from ..theory import approximability

    body, source = read_text(text, file)
    budgets = _ints(budget, "--budget")
    if show is not None and budgets is not None and show not in budgets:
        raise InvalidInputError(f"--show {show} is not one of the budgets {sorted(set(budgets))}")
    families = _words(family)
    scale_value: float | str = "gap"
    if scale != "gap":
        try:
            scale_value = float(scale)
        except ValueError:
            raise InvalidInputError(
                f"--scale must be a JS distance in [0, 1] or 'gap', got {scale!r}"
            ) from None
        if not 0.0 <= scale_value <= 1.0 or math.isnan(scale_value):
            raise InvalidInputError(
                f"--scale must be a JS distance in [0, 1] or 'gap', got {scale!r}"
            )
    layers, heads = parse_indices(layer, "--layer"), parse_indices(head, "--head")
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
    m, shown = run.model, run.show
    with progress_bar("approximability", shown) as progress:
        t0 = time.perf_counter()
        r = approximability(
            body,
            model=m,
            budgets=budgets,
            families=families,
            scale=scale_value,
            draws=draws,
            orthogonal=not iid,
            seed=seed,
            layers=layers,
            heads=heads,
            truncate=truncate,
            progress=progress,
        )
        t_a = time.perf_counter() - t0
    if show is not None and show not in r.budgets:
        raise InvalidInputError(f"--show {show} is not one of the budgets {list(r.budgets)}")
    run.finish(
        r,
        seconds={"approx_s": t_a},
        bundle=lambda r: _bundle(r, show),
        source=source,
        summary=lambda timing: _print(r, m, source, show, timing),
    )


def _bundle(r, show: int | None):
    from ..plots.theory_approx import approx_bundle

    return approx_bundle(r, budget=show)


def _print(r, m, source: str, show: int | None, timing: dict) -> None:
    import numpy as np

    console.print(
        model_line(m, f" · {r.n_tokens} tokens from {esc(source)} · {timing['approx_s']:.1f} s")
    )
    t = data_table("median relative Frobenius error over heads (heads won)")
    t.add_column("budget", justify="right")
    for f in r.families:
        t.add_column(f, justify="right")
    counts = r.win_counts()
    for b in r.budgets:
        t.add_row(
            str(b), *[f"{num(np.nanmedian(r.error(f, b)))} ({counts[b][f]})" for f in r.families]
        )
    print_table(t)
    for b, row in r.scatterbrain().items():
        for other, s in row.items():
            console.print(
                f"budget {b}: top-k vs {other}: Spearman ρ(entropy, log err ratio) = "
                f"{s['spearman']:.2f} (p = {s['p_value']:.2g}); sparse wins "
                f"{s['sparse_wins_low']:.0%} of low-entropy heads, {other} "
                f"{s['other_wins_high']:.0%} of high-entropy heads: Scatterbrain's claim "
                f"{'holds' if s['holds'] else 'does not hold'}"
            )
    b = r.budgets[len(r.budgets) // 2] if show is None else show
    h = data_table(f"per head at budget {b}")
    for c in ("layer", "head", "label", "entropy", *r.families, "winner"):
        h.add_column(c, justify="left" if c in ("label", "winner") else "right")
    win = r.winners(b)
    for i, lay in enumerate(r.layers):
        for j, hd in enumerate(r.heads):
            h.add_row(
                str(lay),
                str(hd),
                str(r.labels[i, j]),
                num(r.entropy_norm[i, j]),
                *[num(r.error(f, b)[i, j]) for f in r.families],
                str(win[i, j]),
            )
    print_table(h)
