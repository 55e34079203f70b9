"""``attntopo depth``: rank collapse, attention geometry,
intrinsic dimension and Fisher–Rao movement per layer."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from .._validation import check_positive_int
from ..constants import DEFAULT_MODEL
from ._common import opening, progress_bar, read_texts
from ._options import TextsArg, TextsFileOpt, command
from ._output import console, esc, model_line, num, print_table
from ._table import data_table

_DEPTH_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo depth "The cat sat on the mat because it was tired." "Attention is all you need."\n'
    "  attntopo depth -f texts.txt -m smollm2 --json > depth.json\n"
    "  attntopo depth -f texts.txt --out d --plots --plot-format svg\n\n"
    "One forward pass per text. Per depth (0 = embeddings, l+1 = after layer l), mean over texts: "
    "res(X) = ‖X − 1x̄ᵀ‖/‖X‖ of the hidden states (norm √(‖·‖₁‖·‖∞), Dong et al. 2021) and of the "
    "product of layer-mean attention matrices; mean and diameter of the Jensen–Shannon distances "
    "between a head's rows, their H0 total persistence and the row entropy (means over heads); "
    "the TwoNN intrinsic dimension of all texts' tokens; the k-NN overlap with the previous "
    "depth; the mean Fisher–Rao distance between a token's attention rows in consecutive layers. "
    "--json adds spreads and every head. docs/theory.md §1."
)


@command("depth", epilog=_DEPTH_EPILOG, no_args_is_help=False, static_figures="the depth figure is")
def depth_cmd(
    texts: TextsArg = None,
    file: TextsFileOpt = None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    k: Annotated[
        int,
        typer.Option(
            "--k",
            "-k",
            help="Neighbours for the k-NN overlap between depths (min(k, n−2) per text).",
        ),
    ] = 10,
    truncate=False,
    out=None,
    plots=False,
    plot_format=None,
    json_out=False,
) -> None:
    """Per-layer geometry of a model: rank collapse, JS geometry, intrinsic dimension, Fisher–Rao movement.

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    from ..theory import depth

    body, source = read_texts(texts, file)
    k = check_positive_int(
        k, "--k", allow_none=False, hint="neighbours for the overlap between depths"
    )
    run = opening(
        json_out=json_out,
        out=out,
        plots=plots,
        plot_format=plot_format,
        model=model,
        device=device,
        dtype=dtype,
    )
    m, show = run.model, run.show
    with progress_bar(f"depth · {len(body)} text{'s' if len(body) != 1 else ''}", show) as bar:
        t0 = time.perf_counter()
        d = depth(body, m, k=k, truncate=truncate, progress=bar)
        t_d = time.perf_counter() - t0
    run.finish(
        d,
        seconds={"depth_s": t_d},
        bundle=_bundle,
        source=source,
        summary=lambda timing: _print_summary(d, m, source, timing),
    )


def _bundle(d):
    from ..plots.theory_depth import depth_bundle

    return depth_bundle(d)


def _print_summary(d, m, source: str, timing: dict) -> None:
    console.print(model_line(m))
    ntok = d.n_tokens
    console.print(
        f"{d.n_texts} text{'s' if d.n_texts != 1 else ''} from {esc(source)} "
        f"({int(ntok.min())}–{int(ntok.max())} tokens), k = {d.k} · {timing['depth_s']:.1f} s"
    )
    cols = d.summary()
    table = data_table(
        "per depth (0 = embeddings, l+1 = after layer l); means over texts, per-head measures "
        "averaged over heads"
    )
    heads = [
        ("depth", None),
        ("res(X)", "res_hidden"),
        ("res(ΠĀ)", "res_path_mean"),
        ("JS mean", "js_mean"),
        ("JS diam", "js_diameter"),
        ("H0 total", "h0_total"),
        ("entropy", "entropy"),
        ("ID", "intrinsic_dim"),
        ("kNN", "knn_overlap"),
        ("FR move", "fisher_rao"),
    ]
    for h, _ in heads:
        table.add_column(h, justify="right", no_wrap=True)
    for r in range(cols.n_rows):
        cells = [str(int(cols["depth"][r]))]
        for _, name in heads[1:]:
            v = float(cols[name][r])
            cells.append(
                "–"
                if v != v
                else (f"{v:.1e}" if name == "res_path_mean" and 0 < v < 0.01 else num(v))
            )
        table.add_row(*cells)
    print_table(table)
    console.print(
        "res: rank-one residual (0 = all tokens equal); ID: TwoNN on all texts' tokens; kNN: "
        "overlap with the previous depth; FR move: Fisher–Rao distance from the previous layer's "
        "rows (rad). --json for spreads and every head."
    )
