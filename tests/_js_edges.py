"""Edge-case attention stacks and an exact Jensen–Shannon reference, shared by the tests of the
partial distance matrices (``tests/unit/distances/test_rows_edge_cases.py``) and of the JS
prompt score (``tests/unit/features/test_features_prompt_js_edges.py``), issue 36's audit.

The reference is independent of attntopo's code: each row normalized and each pair's
divergence summed in 40-digit arithmetic (mpmath, which torch's sympy brings along), base 2;
the minimum spanning forest with the prompt contracted to one vertex is networkx's.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import strategies as st

#: the ways a matrix of a stack is built (each matrix of a stack draws its own)
PATTERNS = ("dense", "causal", "zeros", "one_hot", "flat")
#: the dtypes the weights come out of a forward pass in (then ``normalize_rows``: float32)
DTYPES = ("float64", "float32", "float16", "bfloat16")


def on_each_path(fn: Callable[[str], Any]) -> None:
    """``fn(path)`` on the C kernel (when built) and on the pure-torch path (the one a GPU
    tensor takes: ``ATTNTOPO_NATIVE=0``), the environment restored after each."""
    from attntopo import _native

    for path in (["c-kernel"] if _native.available() else []) + ["pure-torch"]:
        with pytest.MonkeyPatch.context() as mp:
            if path == "pure-torch":
                mp.setenv("ATTNTOPO_NATIVE", "0")
            fn(path)


def _matrix(rng: np.random.Generator, n: int, pattern: str) -> np.ndarray:
    """One (n, n) nonnegative matrix of a pattern, rows not yet normalized."""
    if pattern == "one_hot":  # a single nonzero entry a row (ties between rows likely)
        M = np.zeros((n, n))
        M[np.arange(n), rng.integers(0, n, n)] = 1.0
        return M
    scale = 0.05 if pattern == "flat" else 3.0  # flat: a random-weight model's rows
    M = np.exp(scale * rng.standard_normal((n, n)))
    if pattern == "causal":  # row 0 has one key: a causal row of length 1
        M = np.tril(M)
    elif pattern == "zeros":
        M[rng.random((n, n)) < 0.5] = 0.0
        M[M.sum(-1) == 0, int(rng.integers(0, n))] = 1.0
    return M


@st.composite
def edge_stacks(draw, max_n: int = 9, max_b: int = 3, min_n: int = 1, tail: int = 0):
    """A (B, n, n) float64 stack of attention rows with the edge cases of the partial JS paths:
    heads of different patterns batched together (dense, causal with its length-1 row 0,
    exact zeros, one-hot rows, nearly uniform), two identical rows, two nearly identical rows
    (relative differences down to 1e-15: under the kernel's recomputation cutoff), a later
    causal row equal to an earlier one plus a little mass beyond it (the two rows' overlap is
    the earlier row's keys), rows that sum to 1 only within 5e-4 (rescaled), and weights that
    went through float32, float16 or bfloat16 and ``normalize_rows`` (a model's attention).
    ``tail`` > 0: the later row of each such pair is one of the last ``tail`` rows (an
    answer's, of a long prompt)."""
    import torch

    from attntopo.models.precision import normalize_rows

    n = draw(st.integers(min_n, max_n))
    b = draw(st.integers(1, max_b))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    patterns = draw(st.lists(st.sampled_from(PATTERNS), min_size=b, max_size=b))
    A = np.stack([_matrix(rng, n, p) for p in patterns])
    A /= A.sum(-1, keepdims=True)
    if n >= 2:
        for h in range(b):
            i, j = sorted(int(x) for x in rng.choice(n, 2, replace=False))
            if tail:
                j = int(rng.integers(max(1, n - tail), n))
                i = int(rng.integers(0, j))
            kind = draw(st.sampled_from(["none", "same", "near", "beyond"]))
            eps = draw(st.sampled_from([1e-15, 1e-12, 1e-9, 1e-6, 1e-4]))
            if kind == "same":
                A[h, j] = A[h, i]
            elif kind == "near":
                row = A[h, i] * (1.0 + eps * rng.standard_normal(n))
                A[h, j] = np.abs(row) / np.abs(row).sum()
            elif kind == "beyond" and i + 1 < n:  # an earlier row's keys, plus a little beyond
                row = np.zeros(n)
                row[: i + 1] = A[h, i, : i + 1] * (1.0 - eps)
                row[i + 1 : j + 1] = eps / (j - i)
                A[h, j] = row / row.sum()
    off = draw(st.sampled_from([0.0, 1e-12, -5e-4, 5e-4]))
    if off:  # some rows off by up to |off| from a sum of 1: attntopo rescales them
        A *= 1.0 + off * rng.random((b, n, 1))
    dtype = draw(st.sampled_from(DTYPES))
    if dtype != "float64":
        A /= A.sum(-1, keepdims=True)
        t = torch.from_numpy(A).to(getattr(torch, dtype))
        A = normalize_rows(t).numpy()  # float32, as a model's attention reaches attntopo
    return A


def exact_js(M: np.ndarray, rows: Any = None, digits: int = 40) -> np.ndarray:
    """(n, n) Jensen–Shannon distances (base 2) of the rows of ``M`` (any nonnegative rows of
    positive sum), each row normalized and every divergence summed in ``digits``-digit
    arithmetic: ½ Σ p ln(2p / (p + q)) + q ln(2q / (p + q)), 0 ln 0 = 0, over ln 2, square
    root.  Correct to ~1e-17 whatever the rows.  ``rows``: only the distances from these rows
    to all rows, (len(rows), n)."""
    import mpmath

    n = M.shape[0]
    chosen = list(range(n)) if rows is None else [int(i) for i in rows]
    D = np.zeros((len(chosen), n))
    with mpmath.workdps(digits):
        P = []
        for r in M:
            vals = [mpmath.mpf(float(x)) for x in r]
            s = mpmath.fsum(vals)
            P.append([v / s for v in vals])
        ln2 = mpmath.log(2)
        done: dict[tuple[int, int], float] = {}
        for a, i in enumerate(chosen):
            for j in range(n):
                if i == j:
                    continue
                key = (min(i, j), max(i, j))
                if key not in done:
                    acc = mpmath.mpf(0)
                    for x, y in zip(P[i], P[j]):
                        u = x + y
                        if x > 0:
                            acc += x * mpmath.log(2 * x / u)
                        if y > 0:
                            acc += y * mpmath.log(2 * y / u)
                    done[key] = float(mpmath.sqrt(max(acc / 2, 0) / ln2))
                D[a, j] = done[key]
    return D


def contracted_forest(D: np.ndarray, prompt: np.ndarray) -> float:
    """networkx's minimum spanning tree of the graph in which the prompt's points are one
    vertex, at distance ``min_p D[p, j]`` from each other point ``j``: its total length."""
    import networkx as nx

    P, R = np.flatnonzero(prompt), np.flatnonzero(~prompt)
    G = nx.Graph()
    G.add_node("prompt")
    for a, i in enumerate(R):
        G.add_edge("prompt", int(i), weight=float(D[P, i].min()))
        for j in R[a + 1 :]:
            G.add_edge(int(i), int(j), weight=float(D[i, j]))
    return float(sum(w for _, _, w in nx.minimum_spanning_tree(G).edges(data="weight")))
