"""The founding paper's recipes on the packaged MiniLM (issue 15 item 10; docs/concepts.md §5).

The synthetic checks of every mode are in tests/unit/analyses/test_paper_compat.py; here the heads
notebook's loops run on real attention, and the float32 effect documented in concepts.md is
measured on the example it names.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

import attntopo as at
from _reference import heads_notebook_matrix

gudhi = pytest.importorskip("gudhi")

QUANTUM = "Quantum information theory is fascinating"  # the notebook's first text


def test_head_space_notebook_on_minilm_is_the_notebooks_loops(minilm):
    """persistent_homology_attention_heads.ipynb, get_js_distance_matrix + distances.sum(0)."""
    att = minilm.attention(QUANTUM)
    W = att.weights.astype(np.float64)  # scipy on the float32 rows it would see, in float64
    L, H = W.shape[:2]
    flat = heads_notebook_matrix(W)
    hs = at.head_space(att, paper_compat="notebook")
    assert hs.distances.shape == (12, 12)
    np.testing.assert_allclose(hs.distances, flat, rtol=0, atol=1e-9)
    # the same heads in attntopo's own space, log base 2: × 1/sqrt(ln 2) within each layer
    own = at.head_distances(att)
    within = sum(own[li * H : (li + 1) * H, li * H : (li + 1) * H] for li in range(L))
    off = ~np.eye(H, dtype=bool)
    np.testing.assert_allclose(within[off], flat[off] / math.sqrt(math.log(2)), rtol=1e-9)


def test_float32_notebook_run_on_minilm_l0h2(minilm):
    """concepts.md §5: the notebooks' float32 arithmetic gives NaN distances on MiniLM layer 0,
    head 2 of the notebook's text, and gudhi's dropped edge moves the H0 diagram by ~0.2;
    attntopo's float64 notebook mode has neither."""
    A32 = minilm.attention(QUANTUM).weights[0, 2]  # float32, as the notebook has it
    S = np.exp(A32) / np.sum(np.exp(A32), axis=-1)[:, np.newaxis]
    n = len(S)
    with np.errstate(invalid="ignore"):
        D32 = np.array([[np.sqrt(jensenshannon(S[i], S[j])) for j in range(n)] for i in range(n)])
    ours = at.token_distances(A32, paper_compat="notebook")
    assert not np.isnan(ours).any()
    if not np.isnan(D32).any():  # float32 round-off depends on the CPU's kernels
        pytest.skip("this CPU's float32 forward pass gave no NaN distance on L0H2")

    def h0(D):
        st = gudhi.RipsComplex(distance_matrix=D, max_edge_length=np.inf).create_simplex_tree(
            max_dimension=2
        )
        return np.array([(b, d) for k, (b, d) in st.persistence(min_persistence=0.01) if k == 0])

    moved = gudhi.bottleneck_distance(h0(D32), h0(ours))
    assert moved > 0.1, moved  # one missing edge changes a whole H0 bar, not round-off
