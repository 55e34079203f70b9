#!/usr/bin/env python
"""The measurements behind docs/theory.md §1 (Depth): both packaged models on a handful of fortunes.

    python benchmarks/theory_depth_measure.py [--texts 12] [--no-smollm2]

Runs :func:`attntopo.theory.depth` on fortunes (science, people, politics; 15 to 50 words; drawn
with seed 0) for MiniLM and SmolLM2, writes ``docs/theory_depth.json`` (every summary row) and
``docs/img/theory_depth.png`` (both models on one figure), and prints the markdown tables and the
computed statements that docs/theory.md quotes.  One extra measurement explains the hidden-state
residual: per depth, how much the largest-norm token dominates (its norm over the median token
norm) and the residual with that one token left out.  About 3 min on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def fortune_texts(n: int) -> tuple[list[str], str]:
    from attntopo.datasets import fortunes

    ds = fortunes(
        categories=["science", "people", "politics"],
        min_words=15,
        max_words=50,
        n_per_category=n // 3 + 1,
        seed=0,
    )
    return ds.texts[:n], f"{n} fortunes (science, people, politics; 15–50 words; drawn with seed 0)"


def dominance(model, texts: list[str]) -> dict:
    """Per depth, mean over texts: largest token norm / median token norm, and res(X) without that
    token."""
    from attntopo.models._hidden import forward_capture
    from attntopo.theory._depth import residual

    ratio, rest, first = [], [], []
    for cap in forward_capture(model, texts):
        X = cap.hidden.astype(np.float64)  # (L+1, n, d)
        norms = np.linalg.norm(X, axis=-1)
        top = norms.argmax(axis=1)
        ratio.append(norms.max(axis=1) / np.median(norms, axis=1))
        first.append(top == 0)
        rest.append([residual(np.delete(X[d], top[d], axis=0)) for d in range(X.shape[0])])
    return {
        "norm_ratio": np.mean(ratio, axis=0).tolist(),
        "top_is_first": np.mean(first, axis=0).tolist(),
        "res_hidden_without_top": np.mean(rest, axis=0).tolist(),
    }


def measure(name: str, texts: list[str]) -> tuple[object, dict]:
    import attntopo as at
    from attntopo.theory import depth

    m = at.load_model(name)
    t0 = time.perf_counter()
    d = depth(texts, m, progress=False)
    seconds = time.perf_counter() - t0
    extra = dominance(m, texts)
    cols = d.summary()
    rows = [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
        for r in cols.rows()
    ]
    for r, a, b, c in zip(
        rows, extra["norm_ratio"], extra["top_is_first"], extra["res_hidden_without_top"]
    ):
        r.update(norm_ratio=a, top_is_first=b, res_hidden_without_top=c)
    return d, {
        "model": d.model,
        "n_layers": d.n_layers,
        "n_heads": d.n_heads,
        "n_tokens": d.n_tokens.tolist(),
        "seconds": seconds,
        "rows": rows,
    }


def _f(x, digits=3) -> str:
    if x is None:
        return "–"
    return f"{x:.1e}" if 0 < abs(x) < 10**-digits else f"{x:.{digits}f}"


def report(runs: list[dict], source: str) -> str:
    out = [f"Texts: {source}.", ""]
    for run in runs:
        L = run["n_layers"]
        picks = sorted({0, 1, round(L / 4), round(L / 2), round(3 * L / 4), L - 1, L})
        out += [
            f"**{run['model']}** ({L} layers × {run['n_heads']} heads; {min(run['n_tokens'])}–"
            f"{max(run['n_tokens'])} tokens per text; {run['seconds']:.1f} s for all texts)",
            "",
            "| depth | res(X) | res(X) w/o top token | top/median norm | res(ΠĀ) | JS mean | JS "
            "diam | H0 total | entropy (bits) | ID pooled | ID per text | kNN overlap | FR move |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for i in picks:
            r = run["rows"][i]
            out.append(
                "| "
                + " | ".join(
                    [
                        str(i),
                        _f(r["res_hidden"]),
                        _f(r["res_hidden_without_top"]),
                        _f(r["norm_ratio"], 1),
                        _f(r["res_path_mean"]),
                        _f(r["js_mean"]),
                        _f(r["js_diameter"]),
                        _f(r["h0_total"], 2),
                        _f(r["entropy"], 2),
                        _f(r["intrinsic_dim"], 1),
                        _f(r["intrinsic_dim_text"], 1),
                        _f(r["knn_overlap"]),
                        _f(r["fisher_rao"]),
                    ]
                )
                + " |"
            )
        rows = run["rows"]
        res = [r["res_hidden"] for r in rows]
        path = [r["res_path_mean"] for r in rows[1:]]
        below = next((i + 1 for i, p in enumerate(path) if p < 1e-3), None)
        out += [
            "",
            f"- res(X): {res[0]:.3f} at the embeddings, {res[-1]:.3f} after the last layer, "
            f"minimum {min(res):.3f} (depth {int(np.argmin(res))}), maximum {max(res):.3f} "
            f"(depth {int(np.argmax(res))}).",
            f"- res of the layer-mean attention product: {path[0]:.3f} after layer 0, "
            f"{path[-1]:.1e} after the last; below 1e-3 from depth {below}."
            if below
            else f"- res of the layer-mean attention product: {path[0]:.3f} after layer 0, "
            f"{path[-1]:.1e} after the last; never below 1e-3.",
            "",
        ]
    return "\n".join(out)


def write_png(png: bytes, path: Path) -> None:
    """The figure as a 128-colour palette PNG (a quarter of the size, the same to the eye)."""
    import io

    from PIL import Image

    img = (
        Image.open(io.BytesIO(png))
        .convert("RGB")
        .quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    )
    img.save(path, optimize=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=12)
    ap.add_argument("--no-smollm2", action="store_true")
    ap.add_argument("--json", type=Path, default=ROOT / "docs" / "theory_depth.json")
    ap.add_argument("--figure", type=Path, default=ROOT / "docs" / "img" / "theory_depth.png")
    args = ap.parse_args(argv)
    texts, source = fortune_texts(args.texts)
    results, runs = [], []
    for name in ["minilm"] + ([] if args.no_smollm2 else ["smollm2"]):
        d, run = measure(name, texts)
        results.append(d)
        runs.append(run)
        print(f"{name}: {run['seconds']:.1f} s", file=sys.stderr)
    from attntopo.plots import figure_to_bytes
    from attntopo.plots.theory_depth import plot_depth

    write_png(figure_to_bytes(plot_depth(*results), "png", dpi=110), args.figure)
    args.json.write_text(
        json.dumps({"source": source, "texts": texts, "runs": runs}, indent=1, allow_nan=False)
        + "\n",
        encoding="utf-8",
    )
    print(report(runs, source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
