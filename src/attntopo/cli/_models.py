"""``attntopo models``: the packaged model aliases,
described from configs and GGUF headers (no weights)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rich.text import Text

from ..constants import DEFAULT_MODEL
from ..models.describe import describe_alias
from ._common import finish_listing
from ._options import command
from ._output import console, esc, print_table
from ._table import data_table

_MODELS_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo models\n"
    "  attntopo models --json\n\n"
    "Any Hugging Face id or local model folder also works as --model, when it can be reached."
)


_HELPS = {  # the shared options in this command's words
    "json_out": 'Print machine-readable JSON on stdout: the models under "models".',
}


@command(epilog=_MODELS_EPILOG, helps=_HELPS)
def models(
    json_out=False,
) -> None:
    """List the packaged model aliases usable offline: layers × heads, causal or not, where they load from.

    Reads configs and GGUF headers only; no weights are loaded.
    """  # noqa: E501 - typer keeps line breaks of help text
    from ..models import ALIASES

    t0 = time.perf_counter()
    rows = [describe_alias(name) for name in ALIASES]
    finish_listing(
        "models",
        rows,
        json_out=json_out,
        timing={"describe_s": round(time.perf_counter() - t0, 3)},
        t_start=t0,
        summary=lambda _: _print_models(rows),
        head={"default": DEFAULT_MODEL},
    )


def _print_models(rows: list[dict]) -> None:
    table = data_table("Packaged models")
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
    print_table(table)
    for r in rows:
        if not r["installed"]:
            console.print(
                f"[bold]{r['alias']}[/bold]: [yellow]{esc(r['note'])}[/yellow]", soft_wrap=True
            )
            continue
        console.print(
            f"[bold]{r['alias']}[/bold] loads from {esc(_short_path(r['source'] or ''))}",
            soft_wrap=True,
        )
        if r["format"] == "gguf":
            if r["converted"]:
                console.print(f"  converted: {esc(_short_path(r['converted']))}", soft_wrap=True)
            else:
                console.print(f"  {esc(r['note'])}", soft_wrap=True)
    installed = [r["alias"] for r in rows if r["installed"]]
    console.print(f"usable offline: {', '.join(installed) or 'none'} · default: {DEFAULT_MODEL}")


def _short_path(path: str) -> str:
    """Paths for humans: ``site-packages/…`` for installed packages, ``~`` for home."""
    marker = "site-packages" + os.sep
    if marker in path:
        return marker + path.split(marker, 1)[1]
    home = str(Path.home())
    if home != os.sep and path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path
