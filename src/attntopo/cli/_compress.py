"""``attntopo compress``: one text through a model
with heads' attention rows grouped and replaced."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from .._validation import check_choice
from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError
from ._common import opening, read_text, status
from ._options import command, parse_indices
from ._output import console, esc, model_line

_COMPRESS_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo compress "The cat sat on the mat because it was tired."\n'
    "  attntopo compress -f story.txt -m smollm2 --scale 0.3 --method kmeans --json\n"
    '  attntopo compress "Attention is all you need" --layer 2 --head 0,3 --plots --out c\n\n'
    "Each chosen head's attention rows are grouped (H0 clusters of their Jensen–Shannon distances "
    "at --scale, or at each head's largest H0 gap; or a baseline with as many groups) and "
    "replaced by one row per group, inside the forward pass. Reported: distinct rows / n per head "
    "and the effect (MiniLM: sentence-embedding cosine; causal models: next-token KL and "
    "perplexity). docs/compression.md compares the methods."
)


_HELPS = {  # the shared options in this command's words
    "layer": "Layer(s) to compress, 0-based; repeat or comma-separate (default: all).",
}


@command(
    "compress",
    epilog=_COMPRESS_EPILOG,
    no_args_is_help=False,
    helps=_HELPS,
    static_figures="the compression figure is",
)
def compress_cmd(
    text=None,
    file=None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    layer=None,
    head=None,
    scale: Annotated[
        str,
        typer.Option(
            "--scale",
            help="JS distance ε of the H0 clusters, or 'gap' (each head's largest H0 gap).",
        ),
    ] = "gap",
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="persistence, random, kmeans or tome.",
        ),
    ] = "persistence",
    representative: Annotated[
        str,
        typer.Option(
            "--representative",
            help="barycenter or medoid.",
        ),
    ] = "barycenter",
    seed: Annotated[int, typer.Option("--seed", min=0, help="For random and kmeans.")] = 0,
    truncate=False,
    out=None,
    plots=False,
    plot_format=None,
    json_out=False,
) -> None:
    """Compress attention by persistent clusters (or a baseline) inside a forward pass and measure the effect.

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    from ..compress import METHODS, REPRESENTATIVES, compress

    check_choice(method, "--method", METHODS)  # before the model loads
    check_choice(representative, "--representative", REPRESENTATIVES)
    body, source = read_text(text, file)
    if scale != "gap":
        try:
            scale_value: float | str = float(scale)
        except ValueError:
            raise InvalidInputError(
                f"--scale must be a JS distance in [0, 1] or 'gap', got {scale!r}"
            ) from None
    else:
        scale_value = "gap"
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
    m, show = run.model, run.show
    with status("two forward passes, the second with grouped attention rows …", show):
        t0 = time.perf_counter()
        c = compress(
            body,
            m,
            layers=layers,
            heads=heads,
            scale=scale_value,
            method=method,
            representative=representative,
            seed=seed,
            truncate=truncate,
        )
        t_c = time.perf_counter() - t0
    run.finish(
        c,
        seconds={"compress_s": t_c},
        bundle=_bundle,
        source=source,
        summary=lambda timing: _print_summary(c, m, source, timing),
    )


def _bundle(c):
    from ..plots.compress import compression_bundle

    return compression_bundle(c)


def _print_summary(c, m, source: str, timing: dict) -> None:
    console.print(model_line(m, f" · {c.method}/{c.representative} at scale {c.scale}"))
    effect = ", ".join(f"{k} {v:.4g}" for k, v in c.effect.items())
    console.print(
        f"{c.n_tokens} tokens from {esc(source)}; {len(c.clusters)} heads compressed to "
        f"{c.compression:.3f} of their rows on average (min {c.clusters.min() / c.n_tokens:.3f}, "
        f"max {c.clusters.max() / c.n_tokens:.3f}) · "
        f"effect: {effect} · {timing['compress_s']:.1f} s"
    )
