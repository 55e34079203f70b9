#!/usr/bin/env python
"""The measurements behind docs/theory.md §3 (Contextual mappings and equivariance), both packaged
models.

    python benchmarks/theory_context_measure.py [--texts 12] [--no-smollm2]

1. :func:`attntopo.theory.context` on fortunes (science, people, politics; 15 to 50 words; drawn
   with seed 0, the texts of §1): equivariance on the first 4 texts (3 permutations each), margins
   and Ethayarajh's measures on all;
2. the same-word study on attntopo's own sentences for "bank", "light" and "play" (8 contexts each;
   no equivariance);
3. whether the H0 two-cluster split of "bank"'s representations separates its two senses;
4. one explanation: the share of the encoder's equivariance error that sits in the first position
   (the token the permutation moves there and the one it replaced), per depth.

Writes ``docs/theory_context.json`` (every summary row and the extra numbers) and
``docs/img/theory_context.png`` (both models side by side, the fortunes run) and
``docs/img/theory_context_word.png`` (the "bank" study of both), and
prints the markdown tables docs/theory.md quotes.  Set ``OMP_NUM_THREADS=1`` on a loaded machine:
two torch threads on an oversubscribed 2-core machine ran 20-30 times slower.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("bank", "light", "play")
#: the senses of "bank" in attntopo's eight sentences (CONTEXT_SENTENCES["bank"]): 0 river, 1 money
BANK_SENSES = (0, 1, 1, 0, 1, 0, 1, 0)


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


def first_position_share(model, texts: list[str], seed: int = 0) -> list[float]:
    """Per depth, mean over texts (positions on, one permutation): the share of
    ``‖f(XP) − f(X)P‖²`` in the first content position."""
    import torch

    from attntopo.models._hidden import forward_capture
    from attntopo.theory._context_math import content_permutation

    rng = np.random.default_rng(seed)
    embed = model.hf_model.get_input_embeddings()
    shares = []
    for cap in forward_capture(model, texts):
        perm = content_permutation(cap.encoding.special, rng)
        pt = torch.from_numpy(perm)
        moved = forward_capture(
            model, [cap.encoding.text], input_embeds_hook=lambda ids: embed(ids[:, pt])
        )[0].hidden
        diff = (
            moved.astype(np.float64) - cap.hidden[:, perm].astype(np.float64)
        ) ** 2  # (L+1, n, d)
        first = int(np.flatnonzero(~np.asarray(cap.encoding.special))[0])
        per_pos = diff.sum(-1)
        total = per_pos.sum(-1)
        shares.append(
            np.divide(per_pos[:, first], total, out=np.zeros_like(total), where=total > 0)
        )
    return np.mean(shares, axis=0).tolist()


def sense_split(model, r) -> dict:
    """Per depth: does the H0 split of "bank"'s eight points into two clusters (single linkage, the
    last merge of the H0 persistence) separate the two senses?  Adjusted Rand index against
    :data:`BANK_SENSES` (1: exactly the senses, about 0: unrelated), for the hidden states (cosine
    distance) and for the attention rows over token types (JS distance, mean over heads)."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import pdist, squareform
    from sklearn.metrics import adjusted_rand_score

    from attntopo.distances import row_distances
    from attntopo.models._hidden import forward_capture
    from attntopo.theory._context_math import vocabulary_support

    caps = forward_capture(model, r.texts, attention=True)
    toks = r.word_tokens

    def ari(D):
        return float(
            adjusted_rand_score(BANK_SENSES, fcluster(linkage(D, "single"), 2, "maxclust"))
        )

    hidden = [
        ari(
            pdist(
                np.stack([c.hidden[d, t] for c, t in zip(caps, toks)]).astype(np.float64), "cosine"
            )
        )
        for d in range(r.n_layers + 1)
    ]
    S, _ = vocabulary_support(
        [c.attention[:, :, t] for c, t in zip(caps, toks)], [c.encoding.ids for c in caps]
    )
    D = row_distances(S / S.sum(-1, keepdims=True)).mean(axis=1)  # (L, 8, 8): mean over heads
    attention = [ari(squareform(D[layer], checks=False)) for layer in range(r.n_layers)]
    return {"hidden": hidden, "attention": attention}


def measure(name: str, texts: list[str]) -> dict:
    import attntopo as at
    from attntopo.theory import context
    from attntopo.theory._context import CONTEXT_SENTENCES

    m = at.load_model(name)
    t0 = time.perf_counter()
    main = context(texts, m, equivariance_texts=4, n_permutations=3, progress=False)
    seconds = time.perf_counter() - t0
    words = {
        w: context(list(CONTEXT_SENTENCES[w]), m, word=w, equivariance_texts=0, progress=False)
        for w in WORDS
    }
    return {
        "result": main,
        "words": words,
        "seconds": seconds,
        "senses": sense_split(m, words["bank"]),
        "first_share": first_position_share(m, texts[:4]) if m.causal else None,
    }


def rows_of(cols, keys) -> list[dict]:
    return [
        {k: (float(cols[k][r]) if k != "depth" else int(cols[k][r])) for k in keys if k in cols}
        for r in range(cols.n_rows)
    ]


def fmt(v: float) -> str:
    if v != v:
        return "–"
    return f"{v:.1e}" if 0 < abs(v) < 0.01 else f"{v:.3f}"


def pick(n_depths: int) -> list[int]:
    return sorted(
        {0, 1, 2, n_depths // 4, n_depths // 2, 3 * n_depths // 4, n_depths - 2, n_depths - 1}
    )


def markdown(name: str, res: dict) -> str:
    r = res["result"]
    cols = r.summary()
    conds = r.conditions
    head = (
        ["depth"]
        + [f"layer {c}" for c in conds]
        + [f"encoder {c}" for c in conds]
        + ["margin within (rel)", "margin across (rel)", "self-sim", "intra", "anisotropy"]
    )
    keys = (
        ["depth"]
        + [f"layer_error_{c}" for c in conds]
        + [f"encoder_error_{c}" for c in conds]
        + [
            "margin_within_rel",
            "margin_cross_rel",
            "self_similarity",
            "intra_similarity",
            "anisotropy",
        ]
    )
    out = [
        f"**{name}** ({r.n_layers} layers; {len(r.texts)} texts, {r.n_cross_pairs} cross pairs, "
        f"{len(r.similarity_words)} words in ≥ 2 texts; {res['seconds']:.0f} s)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for d in pick(cols.n_rows):
        out.append("| " + " | ".join([str(d)] + [fmt(float(cols[k][d])) for k in keys[1:]]) + " |")
    off = conds.index("no_positions")
    out += [
        "",
        f"max over texts, permutations and depths without positions: layer alone "
        f"{r.layer_error[off].max():.2e}, encoder {r.encoder_error[off].max():.2e}",
    ]
    out += [
        "",
        "| word | depth | attention JS over offsets | JS over token types | entropy spread | "
        "hidden 1 − cos |",
        "|---|---|---|---|---|---|",
    ]
    for w, wr in res["words"].items():
        wc = wr.summary()
        for d in (1, wc.n_rows // 2, wc.n_rows - 1):
            out.append(
                f"| {w} | {d} | {fmt(wc['word_js_relative'][d])} | "
                f"{fmt(wc['word_js_vocabulary'][d])} | {fmt(wc['word_entropy_spread'][d])} | "
                f"{fmt(wc['word_hidden_cosine'][d])} |"
            )
    sen = res["senses"]
    out += [
        "",
        '"bank": adjusted Rand index of the H0 two-cluster split against the two senses, hidden '
        "states per depth: " + ", ".join(f"{v:.2f}" for v in sen["hidden"]),
        "attention rows over token types (mean JS over heads) per layer: "
        + ", ".join(f"{v:.2f}" for v in sen["attention"]),
    ]
    if res["first_share"] is not None:
        share = res["first_share"]
        out += [
            "",
            "share of the encoder's squared equivariance error (positions on) in the first "
            "position: " + ", ".join(f"depth {d}: {share[d]:.2f}" for d in pick(len(share))),
        ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=12)
    ap.add_argument("--no-smollm2", action="store_true")
    args = ap.parse_args(argv)
    texts, what = fortune_texts(args.texts)
    names = ["minilm"] + ([] if args.no_smollm2 else ["smollm2"])
    results = {n: measure(n, texts) for n in names}
    doc: dict = {"texts": what, "models": {}}
    for n, res in results.items():
        cols = res["result"].summary()
        keys = list(cols)
        doc["models"][n] = {
            "summary": rows_of(cols, keys),
            "seconds": res["seconds"],
            "first_position_share": res["first_share"],
            "similarity_words": res["result"].similarity_words,
            "bank_senses_ari": res["senses"],
            "positional": res["result"].positional,
            "words": {
                w: rows_of(
                    wr.summary(),
                    [
                        "depth",
                        "word_js_relative",
                        "word_js_vocabulary",
                        "word_entropy_spread",
                        "word_hidden_cosine",
                        "word_hidden_spread",
                    ],
                )
                for w, wr in res["words"].items()
            },
        }
        print(markdown(n, res), "\n")
    (ROOT / "docs" / "theory_context.json").write_text(
        json.dumps(doc, indent=1) + "\n", encoding="utf-8"
    )
    from matplotlib.figure import Figure

    from attntopo.plots.theory_context import plot_context, plot_word

    out = ROOT / "docs" / "img" / "theory_context.png"
    plot_context([results[n]["result"] for n in names]).savefig(out, dpi=100)
    words_out = ROOT / "docs" / "img" / "theory_context_word.png"
    both = Figure(figsize=(5.2 * len(names), 3.4), layout="constrained")
    for ax, n in zip(both.subplots(1, len(names), squeeze=False)[0], names):
        plot_word(results[n]["words"]["bank"], ax=ax)
    both.savefig(words_out, dpi=100)
    print(f"wrote {out}, {words_out} and docs/theory_context.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
