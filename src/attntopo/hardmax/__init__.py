"""Hardmax attention dynamics: tokens gather into clusters around leaders.

The model of Alcalde, Fantuzzi & Zuazua, "Clustering in pure-attention hardmax transformers
and its role in sentiment analysis" (SIAM J. Math. Data Sci. 7(3), 2025; arXiv:2407.01602):
tokens ``z_1 … z_n`` in ``R^d`` evolve by

    z_i^{k+1} = z_i^k / (1 + α) + α / (1 + α) · mean_{j ∈ C_i^k} z_j^k,
    C_i^k = argmax_j ⟨A z_i^k, z_j^k⟩            (A symmetric positive definite, α > 0)

and token ``i`` is a *leader* at step ``k`` when ``C_i^k = {i}``.  The paper proves that the
tokens converge to finitely many points on the boundary of the convex polytope spanned by the
leaders.  docs/hardmax.md states the theorem, the floating-point rules and measured results.

>>> import numpy as np
>>> from attntopo import hardmax
>>> r = hardmax.simulate(np.random.default_rng(0).normal(size=(30, 2)), alpha=1.0, steps=60)
>>> r.n_clusters[-1] <= r.n_leaders[-1]
True

=============================  ==============================================================
:func:`simulate`               run the dynamics on an ``(n, d)`` array → :class:`HardmaxSimulation`
:func:`simulate_text`          the same on a model's hidden states with ``A`` from one head's
                               ``W_Qᵀ W_K`` (symmetrized, shifted to be positive definite)
:func:`key_query_matrix`       that ``A`` for a layer and head of a model
:func:`polytope_position`      where points lie relative to ``conv(vertices)``: inside, on the
                               boundary (LP and Qhull), degenerate polytopes included
:func:`train_classifier`       the paper's interpretable text classifier (embeddings → hardmax
                               attention K times → mean → linear) → :class:`HardmaxClassifier`,
                               whose ``explain(text)`` is the simulation behind a prediction
=============================  ==============================================================

Figures are in :mod:`attntopo.plots.hardmax`; the command line is ``attntopo hardmax simulate``.
"""

from ._classifier import HardmaxClassifier, tokenize
from ._dynamics import DEFAULT_CLUSTER_TOL, attention_sets, default_rtol, hardmax_step
from ._model import key_query_matrix, simulate_text, token_states
from ._polytope import MAX_HULL_DIM, PolytopePosition, affine_dimension, polytope_position
from ._simulation import HardmaxSimulation, simulate
from ._training import bag_of_words_baseline, stratified_split, train_classifier

__all__ = [
    "simulate",
    "simulate_text",
    "HardmaxSimulation",
    "HardmaxClassifier",
    "train_classifier",
    "bag_of_words_baseline",
    "stratified_split",
    "tokenize",
    "key_query_matrix",
    "token_states",
    "polytope_position",
    "PolytopePosition",
    "affine_dimension",
    "attention_sets",
    "hardmax_step",
    "default_rtol",
    "DEFAULT_CLUSTER_TOL",
    "MAX_HULL_DIM",
]
