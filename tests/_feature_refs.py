"""Independent reference computations for the feature-set tests (networkx, ripser, plain numpy).

Written the way the reference code (tda4atd / la-tda) computes each quantity, one graph or one
diagram at a time, so that attntopo's vectorized versions are checked against something that
shares none of their shortcuts.
"""

from __future__ import annotations

from itertools import islice

import networkx as nx
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attntopo.attention import Attention


def attention_matrices(max_n: int = 9, max_b: int = 3):
    """Hypothesis strategy: (B, n, n) row-stochastic float64 matrices with exact zeros and ties."""

    @st.composite
    def build(draw):
        n = draw(st.integers(1, max_n))
        b = draw(st.integers(1, max_b))
        raw = draw(
            arrays(
                np.float64,
                (b, n, n),
                elements=st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.1, 0.3, 1.0, 2.0, 5.0]),
            )
        )
        raw[raw.sum(-1) == 0] = 1.0  # a row without mass becomes uniform
        return raw / raw.sum(-1, keepdims=True)

    return build()


def random_attention(
    rng: np.random.Generator, b: int, n: int, sharpness: float = 3.0
) -> np.ndarray:
    """(b, n, n) softmax rows of Gaussian logits (float64)."""
    X = np.exp(sharpness * rng.standard_normal((b, n, n)))
    return X / X.sum(-1, keepdims=True)


def graph_reference(A: np.ndarray, thresholds, cap: int = 50) -> np.ndarray:
    """la-tda's graph features of one matrix, with networkx, in attntopo's column order.

    The graphs are built as la-tda's ``feature_src/topological_features.py`` builds them: the
    0/1 matrix ``A >= t`` through ``from_numpy_array(..., create_using=nx.MultiDiGraph())``
    (la-tda's ``from_numpy_matrix``, removed in networkx 3), and ``nx.Graph(g.to_undirected())``
    for b0, b1, chordality and ``maximal_matching``, whose result depends on that graph's
    adjacency order.
    """
    n = A.shape[0]
    out = []
    for t in thresholds:
        M = (A >= t).astype(np.int8)
        g = nx.from_numpy_array(M, create_using=nx.MultiDiGraph())
        u = nx.Graph(g.to_undirected())
        w = nx.number_connected_components(u)
        no_loops = u.copy()
        no_loops.remove_edges_from(nx.selfloop_edges(no_loops))
        out += [
            nx.number_strongly_connected_components(g),
            w,
            g.number_of_edges(),
            float(np.mean([d for _, d in g.degree()])),
            sum(1 for _ in islice(nx.simple_cycles(nx.DiGraph(g)), cap)),
            u.number_of_edges() - n + w,
            int(nx.is_chordal(no_loops)),
            len(nx.maximal_matching(u)),  # la-tda's max_matching_f, on la-tda's own graph
        ]
    return np.array(out, dtype=np.float64)


def bar_stats(pairs: np.ndarray) -> dict:
    """Plain statistics of one list of finite (birth, death) pairs, one formula per line."""
    if len(pairs) == 0:
        return {
            "sum": 0.0,
            "mean": 0.0,
            "max": 0.0,
            "std": 0.0,
            "entropy_e": 0.0,
            "entropy_2": 0.0,
            "n": 0,
            "longest_birth": 0.0,
            "longest_death": 0.0,
        }
    length = pairs[:, 1] - pairs[:, 0]
    p = length[length > 0] / length.sum()
    k = int(np.argmax(length))
    return {
        "sum": float(length.sum()),
        "mean": float(length.mean()),
        "max": float(length.max()),
        "std": float(np.std(length)),
        "entropy_e": float(-(p * np.log(p)).sum()),
        "entropy_2": float(-(p * np.log2(p)).sum()),
        "n": len(length),
        "longest_birth": float(pairs[k, 0]),
        "longest_death": float(pairs[k, 1]),
    }


def synthetic_attention(weights: np.ndarray, text: str = "", special=None) -> Attention:
    """An :class:`Attention` of given weights (L, H, n, n) with one token per character span."""
    L, H, n, _ = weights.shape
    words = text.split() if text else [f"w{i}" for i in range(n)]
    if len(words) < n:
        words += [f"x{i}" for i in range(n - len(words))]
    offsets, pos, parts = [], 0, []
    for w in words[:n]:
        parts.append(w)
        offsets.append((pos, pos + len(w)))
        pos += len(w) + 1
    special = np.zeros(n, dtype=bool) if special is None else np.asarray(special, dtype=bool)
    return Attention(
        weights=weights.astype(np.float32),
        tokens=words[:n],
        offsets=[(0, 0) if s else o for o, s in zip(offsets, special)],
        special=special,
        causal=False,
        model="synthetic",
        text=" ".join(parts),
    )


def texts_attention(rng: np.random.Generator, sizes, L: int = 2, H: int = 3) -> list[Attention]:
    """One synthetic :class:`Attention` per size: random rows, first and last tokens special,
    every third word a comma (for the template set's punctuation)."""
    out = []
    for k, n in enumerate(sizes):
        w = random_attention(rng, L * H, n).reshape(L, H, n, n)
        special = np.zeros(n, dtype=bool)
        special[[0, -1]] = True
        words = ["," if i % 3 == 1 else f"w{k}{i}" for i in range(n)]
        out.append(synthetic_attention(w, " ".join(words), special))
    return out
