"""Depth: what each layer does to the token representations and the attention geometry.

One forward pass per text (:func:`attntopo.models._hidden.forward_capture`) gives the hidden
states ``X_0 … X_L`` (``X_0`` the embeddings, ``X_{l+1}`` the output of layer ``l``) and the
attention ``A_{l,h}`` of every head.  :func:`depth` measures, per layer (and per head where it
applies), for every text:

Rank collapse (Dong, Cordonnier & Loukas 2021, "Attention is not all you need")
    ``res(X) = ‖X − 1 x̄ᵀ‖ / ‖X‖`` with the composite norm ``‖M‖ = sqrt(‖M‖₁ ‖M‖_∞)``, where
    ``‖M‖₁ = max_j Σ_i |M_ij|`` (the induced 1-norm: largest column absolute sum) and
    ``‖M‖_∞ = max_i Σ_j |M_ij|`` (the induced ∞-norm: largest row absolute sum), rows = tokens.
    ``x̄`` is the mean row (the mean token).  Dong et al. take the ``x`` that minimises
    ``‖X − 1 xᵀ‖``; the mean is not always that minimiser, so ``res`` here is an upper bound on
    theirs, and 0 exactly when every row is equal (rank one).  The same formula is applied to
    products of attention matrices along head paths, ``P = A_l ⋯ A_1 A_0`` (``rank1(P) = 1 π̄ᵀ``,
    ``π̄`` the mean row of ``P``): for the ``H`` paths that keep one head index in every layer,
    and for the product of the layer means ``Ā_l = mean_h A_{l,h}``, which equals the mean over
    all ``H^(l+1)`` head paths of their products (the path decomposition of a multi-head
    attention stack without value matrices, skip connections or MLPs: the setting of the
    rank-collapse theorem).

Geometry of the attention distributions, per head
    Mean and diameter (largest entry) of the Jensen–Shannon distances between a head's rows
    (:func:`attntopo.token_distances`, base 2, in [0, 1]; mean over the ``n(n−1)/2`` pairs),
    H0 total persistence of their Vietoris–Rips filtration (:func:`attntopo.topology.persistence`;
    the finite H0 deaths are the edges of a minimum spanning tree, so this is its total length:
    it grows with ``n``), and the mean over query tokens of the Shannon entropy of the rows, in
    bits (a causal model's row ``i`` has at most ``log2(i + 1)`` bits).

Intrinsic dimension and neighbourhoods of the hidden states
    TwoNN (Facco et al. 2017) from scikit-dimension (``skdim.id.TwoNN()``, its defaults: linear
    fit, 10 % of the largest ratios discarded) on the tokens of *all* texts pooled per depth
    (exact duplicate rows dropped first — a causal model's first token, or a repeated word in
    the embeddings of a model without position embeddings, occurs identically in many texts),
    and per text where a text has at least :data:`MIN_ID_POINTS` distinct tokens (else NaN).
    Neighbourhood overlap of layer ``l``: the mean over tokens of ``|N_l(i) ∩ N_{l+1}(i)| / k``,
    ``N(i)`` the ``k`` nearest other tokens of the same text by Euclidean distance (ties broken by
    position), ``k = min(k, n − 2)`` per text.

Fisher–Rao movement, per head
    ``d_FR(p, q) = 2 arccos(Σ_i sqrt(p_i q_i))`` (the geodesic distance on the probability simplex
    with the Fisher metric, radius-2 sphere convention: in ``[0, π]``) between token ``i``'s
    attention row in head ``h`` of layer ``l`` and in head ``h`` of layer ``l + 1``, averaged over
    tokens: how far the next layer moves where a token looks.  Computed as the equal
    ``4 arcsin(‖√p − √q‖₂ / 2)``, which stays accurate for close rows.

Every value is computed in float64 from the float32 forward pass; texts are never padded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from .._progress import ProgressOption, make_reporter
from .._validation import check_bool, check_positive_int, check_texts
from ..analyses.building import Columns, Result, read_array
from ..errors import InvalidInputError, MissingDependencyError, ResultFormatError
from ..io import json_safe

__all__ = [
    "Depth",
    "depth",
    "composite_norm",
    "residual",
    "path_products",
    "fisher_rao_rows",
    "row_entropy",
    "js_geometry",
    "knn_overlap",
    "intrinsic_dimension",
    "MIN_ID_POINTS",
    "MIN_TOKENS",
]

#: Fewest distinct points TwoNN is run on (fewer: NaN).  TwoNN's ratio statistics need tens of
#: points to be more than noise; 20 is a floor, not a recommendation.
MIN_ID_POINTS = 20
#: Fewest tokens per text (special tokens included): a pair of tokens and a neighbour.
MIN_TOKENS = 3

_LN2 = math.log(2.0)


# ============================================================================ the mathematics
def composite_norm(M: Any) -> np.ndarray:
    """``sqrt(‖M‖₁ ‖M‖_∞)`` of every matrix in ``M`` (Dong et al. 2021's norm).

    Parameters
    ----------
    M : array_like of shape (..., n, d)

    Returns
    -------
    ndarray of shape (...), float64
        ``‖M‖₁`` is the largest column absolute sum (induced 1-norm), ``‖M‖_∞`` the largest row
        absolute sum (induced ∞-norm).
    """
    A = np.abs(np.asarray(M, dtype=np.float64))
    return np.sqrt(A.sum(axis=-2).max(axis=-1) * A.sum(axis=-1).max(axis=-1))


def residual(X: Any) -> np.ndarray:
    """Relative distance to rank one, ``‖X − 1 x̄ᵀ‖ / ‖X‖`` with :func:`composite_norm`.

    Parameters
    ----------
    X : array_like of shape (..., n, d)
        Rows are tokens (hidden states), or rows of an attention product.

    Returns
    -------
    ndarray of shape (...), float64
        In ``[0, 2]`` (0 exactly when all rows are equal); NaN for an all-zero matrix.
        ``x̄`` is the mean row, an upper bound on Dong et al.'s minimum over ``x``.
    """
    A = np.asarray(X, dtype=np.float64)
    num = composite_norm(A - A.mean(axis=-2, keepdims=True))
    den = composite_norm(A)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def path_products(att: Any) -> tuple[np.ndarray, np.ndarray]:
    """Products of attention matrices along head paths, after every layer.

    Parameters
    ----------
    att : array_like of shape (L, H, n, n)
        Row-stochastic attention of one text.

    Returns
    -------
    same_head : ndarray of shape (L, H, n, n), float64
        ``same_head[l, h] = A_{l,h} ⋯ A_{1,h} A_{0,h}``: the path through head ``h`` of every layer.
    layer_mean : ndarray of shape (L, n, n), float64
        ``Ā_l ⋯ Ā_0`` with ``Ā_l`` the mean of layer ``l``'s heads: the mean of the products
        over all ``H^(l+1)`` paths.

    Notes
    -----
    Rows are rescaled to sum to 1 in float64 first: a float32 forward pass gives row sums off
    by ~1e-7, and products of such rows converge to rows of slightly different sums, which
    leaves ``res`` stuck near 1e-7 instead of decaying to round-off.
    """
    A = np.asarray(att, dtype=np.float64)
    if A.ndim != 4 or A.shape[-1] != A.shape[-2]:
        raise InvalidInputError(f"attention must have shape (L, H, n, n), got {A.shape}")
    A = _normalized_rows(A)
    same = np.empty_like(A)
    mean = np.empty((A.shape[0],) + A.shape[2:], dtype=np.float64)
    for layer in range(A.shape[0]):
        if layer == 0:
            same[0], mean[0] = A[0], A[0].mean(axis=0)
        else:
            same[layer] = A[layer] @ same[layer - 1]
            mean[layer] = A[layer].mean(axis=0) @ mean[layer - 1]
    return same, mean


def _normalized_rows(P: Any) -> np.ndarray:
    A = np.asarray(P, dtype=np.float64)
    lo = A.min() if A.size else 0.0
    if not (lo >= -1e-6 and np.isfinite(A.max() if A.size else 0.0)):  # NaN fails both comparisons
        raise InvalidInputError("distributions must be finite and non-negative")
    if lo < 0:  # round-off below zero
        A = np.clip(A, 0.0, None)
    s = A.sum(axis=-1, keepdims=True)
    if np.any(s <= 0):
        raise InvalidInputError("every distribution must have a positive sum")
    return A / s


def fisher_rao_rows(P: Any, Q: Any) -> np.ndarray:
    """Fisher–Rao distance between corresponding rows, ``2 arccos(Σ sqrt(p q))``.

    Parameters
    ----------
    P, Q : array_like of shape (..., m)
        Distributions in their last axis (rescaled to sum 1 in float64).

    Returns
    -------
    ndarray of shape (...), float64
        In ``[0, π]``; computed as ``4 arcsin(‖√p − √q‖₂ / 2)``.
    """
    p, q = _normalized_rows(P), _normalized_rows(Q)
    if p.shape != q.shape:
        raise InvalidInputError(f"P and Q must have one shape, got {p.shape} and {q.shape}")
    h = np.sqrt(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2, axis=-1))
    return 4.0 * np.arcsin(np.minimum(h / 2.0, math.sqrt(0.5)))


def row_entropy(att: Any) -> np.ndarray:
    """Mean over rows of the Shannon entropy of each row, in bits.

    Parameters
    ----------
    att : array_like of shape (..., n, m)

    Returns
    -------
    ndarray of shape (...), float64
    """
    from scipy.special import entr

    return entr(_normalized_rows(att)).sum(axis=-1).mean(axis=-1) / _LN2


def js_geometry(att: Any, *, n_jobs: int | None = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and diameter of the JS distances between each matrix's rows, and H0 total persistence.

    Parameters
    ----------
    att : array_like of shape (..., n, n)
        Row-stochastic matrices (``n >= 2``).
    n_jobs : int, optional
        Worker processes for the persistence (:func:`attntopo.topology.persistence_batch`).

    Returns
    -------
    mean, diameter, h0_total : ndarray of shape (...), float64
        Mean over the pairs ``i < j`` of the base-2 JS distance, its maximum, and the sum of
        the finite H0 deaths of the Rips filtration (= the total length of a minimum spanning
        tree).
    """
    from ..distances import token_distances
    from ..topology import persistence_batch

    A = np.asarray(att, dtype=np.float64)
    n = A.shape[-1]
    if A.ndim < 2 or n < 2 or A.shape[-2] != n:
        raise InvalidInputError(f"attention must have shape (..., n, n) with n >= 2, got {A.shape}")
    D = token_distances(A)
    iu = np.triu_indices(n, 1)
    pairs = D[..., iu[0], iu[1]]
    lead = D.shape[:-2]
    dgms = persistence_batch(D.reshape((-1, n, n)), maxdim=0, n_jobs=n_jobs)
    h0 = np.array(
        [
            float(np.sum(g[0][np.isfinite(g[0][:, 1]), 1] - g[0][np.isfinite(g[0][:, 1]), 0]))
            for g in dgms
        ]
    ).reshape(lead)
    return pairs.mean(axis=-1), pairs.max(axis=-1), h0


def _neighbours(X: np.ndarray, k: int) -> np.ndarray:
    from scipy.spatial.distance import cdist

    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    return np.argsort(D, axis=1, kind="stable")[:, :k]


def knn_overlap(X: Any, Y: Any, k: int) -> float:
    """Mean over points of ``|N_X(i) ∩ N_Y(i)| / k`` (``k`` nearest other points, Euclidean).

    Parameters
    ----------
    X, Y : array_like of shape (n, d) and (n, d')
        The same ``n`` points in two representations.
    k : int
        Neighbours, ``1 <= k <= n − 1``.

    Returns
    -------
    float
        In ``[0, 1]``; 1 when every point keeps its neighbours.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0]:
        raise InvalidInputError(
            f"X and Y must be (n, d) arrays of the same n, got {X.shape} and {Y.shape}"
        )
    k = check_positive_int(k, "k", allow_none=False)
    if k > X.shape[0] - 1:
        raise InvalidInputError(f"k must be at most n - 1 = {X.shape[0] - 1}, got {k}")
    a, b = _neighbours(X, k), _neighbours(Y, k)
    same = (a[:, :, None] == b[:, None, :]).any(axis=2).sum(axis=1)
    return float(same.mean() / k)


def _skdim() -> Any:
    try:
        import skdim
    except ImportError:
        raise MissingDependencyError(
            "the intrinsic dimension needs scikit-dimension: pip install 'attntopo[theory]'"
        ) from None
    return skdim


def intrinsic_dimension(X: Any, *, min_points: int = MIN_ID_POINTS) -> tuple[float, int]:
    """TwoNN intrinsic dimension (scikit-dimension) of the distinct rows of ``X``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    min_points : int
        Fewer distinct rows than this give NaN.

    Returns
    -------
    dimension : float
        ``skdim.id.TwoNN().fit(unique rows).dimension_``, or NaN.
    n_points : int
        Distinct rows used.
    """
    skdim = _skdim()
    U = np.unique(np.asarray(X, dtype=np.float64), axis=0)
    if U.shape[0] < max(3, int(min_points)):
        return float("nan"), int(U.shape[0])
    return float(skdim.id.TwoNN().fit(U).dimension_), int(U.shape[0])


def _mean_std(x: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sample standard deviation (ddof 1) over ``axis``,
    ignoring NaN; std NaN for one value."""
    x = np.asarray(x, dtype=np.float64)
    ok = np.isfinite(x)
    cnt = ok.sum(axis=axis)
    s = np.where(ok, x, 0.0).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(cnt > 0, s / np.maximum(cnt, 1), np.nan)
        dev = np.where(ok, x - np.expand_dims(mean, axis), 0.0)
        var = (dev**2).sum(axis=axis) / np.maximum(cnt - 1, 1)
    return mean, np.where(cnt > 1, np.sqrt(var), np.nan)


# ============================================================================ the result
_PER_HEAD = ("js_mean", "js_diameter", "h0_total", "entropy")


@dataclass(eq=False)
class Depth(Result):
    """Depth diagnostics of one model on a list of texts (:func:`depth`).

    ``T`` texts, ``L`` layers, ``H`` heads.  Depth ``0`` is the embedding output, depth
    ``l + 1`` the output of layer ``l``.

    Attributes
    ----------
    model : str
    causal : bool
    n_layers, n_heads : int
    texts : list of str
    k : int
        Neighbours asked for (each text uses ``k_used``).
    n_tokens, k_used : ndarray of shape (T,), int
    res_hidden : ndarray of shape (T, L + 1)
        ``res(X_depth)`` (module docstring).
    res_path_head : ndarray of shape (T, L, H)
        ``res(A_{l,h} ⋯ A_{0,h})``.
    res_path_mean : ndarray of shape (T, L)
        ``res(Ā_l ⋯ Ā_0)``.
    js_mean, js_diameter, h0_total, entropy : ndarray of shape (T, L, H)
        JS mean and diameter, H0 total persistence (JS units), row entropy (bits).
    fisher_rao : ndarray of shape (T, L - 1, H)
        ``fisher_rao[t, l, h]``: mean over tokens of ``d_FR`` between head ``h``'s rows in layers
        ``l`` and ``l + 1``.
    knn_overlap : ndarray of shape (T, L)
        Between depths ``l`` and ``l + 1`` (what layer ``l`` keeps of the neighbourhoods).
    intrinsic_dim : ndarray of shape (L + 1,)
        TwoNN on all texts' tokens pooled per depth; ``id_points`` distinct points each.
    id_points : ndarray of shape (L + 1,), int
    intrinsic_dim_text : ndarray of shape (T, L + 1)
        TwoNN per text (NaN below :data:`MIN_ID_POINTS` distinct tokens).
    provenance : dict
    """

    kind: ClassVar[str] = "depth"

    model: str
    causal: bool
    n_layers: int
    n_heads: int
    texts: list[str]
    k: int
    n_tokens: np.ndarray
    k_used: np.ndarray
    res_hidden: np.ndarray
    res_path_head: np.ndarray
    res_path_mean: np.ndarray
    js_mean: np.ndarray
    js_diameter: np.ndarray
    h0_total: np.ndarray
    entropy: np.ndarray
    fisher_rao: np.ndarray
    knn_overlap: np.ndarray
    intrinsic_dim: np.ndarray
    id_points: np.ndarray
    intrinsic_dim_text: np.ndarray
    provenance: dict = field(default_factory=dict)

    _ARRAYS: ClassVar[tuple[str, ...]] = (
        "n_tokens",
        "k_used",
        "res_hidden",
        "res_path_head",
        "res_path_mean",
        "js_mean",
        "js_diameter",
        "h0_total",
        "entropy",
        "fisher_rao",
        "knn_overlap",
        "intrinsic_dim",
        "id_points",
        "intrinsic_dim_text",
    )

    @property
    def n_texts(self) -> int:
        return len(self.texts)

    # ------------------------------------------------------------------ tables
    def _layer_rows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Mean and std over texts of a measure, one entry per depth 0..L (NaN where undefined)."""
        L = self.n_layers
        x = np.asarray(getattr(self, name), dtype=np.float64)
        if x.ndim == 3:  # per head: mean over heads per text first
            x = x.mean(axis=2)
        mean, std = _mean_std(x, axis=0)
        pad = L + 1 - mean.shape[0]
        if pad:
            fill = np.full(pad, np.nan)
            mean, std = np.concatenate([fill, mean]), np.concatenate([fill, std])
        return mean, std

    def summary(self) -> Columns:
        """One row per depth ``0..L``: ``depth``, ``layer`` (-1 for the embeddings), and per measure
        its mean over texts and ``*_std`` (sample std over texts; NaN for one text).

        Per-head measures are averaged over heads within each text first.  Attention measures of
        depth ``l + 1`` are layer ``l``'s; ``fisher_rao`` at depth ``l + 1`` is the move from layer
        ``l − 1`` to ``l``; ``knn_overlap`` at depth ``l + 1`` compares depths ``l`` and ``l + 1``.
        ``intrinsic_dim`` is the pooled estimate, ``intrinsic_dim_text`` the per-text mean.
        """
        L = self.n_layers
        cols: dict[str, np.ndarray] = {"depth": np.arange(L + 1), "layer": np.arange(L + 1) - 1}
        for name in (
            "res_hidden",
            "res_path_head",
            "res_path_mean",
            *_PER_HEAD,
            "fisher_rao",
            "knn_overlap",
        ):
            mean, std = self._layer_rows(name)
            cols[name], cols[f"{name}_std"] = mean, std
        cols["intrinsic_dim"] = np.asarray(self.intrinsic_dim, dtype=np.float64)
        cols["id_points"] = np.asarray(self.id_points)
        cols["intrinsic_dim_text"], cols["intrinsic_dim_text_std"] = self._layer_rows(
            "intrinsic_dim_text"
        )
        return Columns(cols)

    def head_table(self) -> Columns:
        """One row per ``(layer, head)``: each per-head measure's mean and std over texts."""
        L, H = self.n_layers, self.n_heads
        cols: dict[str, np.ndarray] = {
            "layer": np.repeat(np.arange(L), H),
            "head": np.tile(np.arange(H), L),
        }
        for name in ("res_path_head", *_PER_HEAD, "fisher_rao"):
            x = np.asarray(getattr(self, name), dtype=np.float64)
            mean, std = _mean_std(x, axis=0)
            if name == "fisher_rao":  # move into layer l: NaN for layer 0
                mean = np.concatenate([np.full((1, H), np.nan), mean])
                std = np.concatenate([np.full((1, H), np.nan), std])
            cols[name], cols[f"{name}_std"] = mean.reshape(-1), std.reshape(-1)
        return Columns(cols)

    def to_dict(self) -> dict:
        return json_safe(
            {
                "kind": self.kind,
                "model": self.model,
                "causal": self.causal,
                "n_layers": self.n_layers,
                "n_heads": self.n_heads,
                "n_texts": self.n_texts,
                "n_tokens": self.n_tokens,
                "k": self.k,
                "k_used": self.k_used,
                "summary": self.summary().rows(),
                "heads": self.head_table().rows(),
                "provenance": self.provenance,
            }
        )

    # ----------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {
            "model": self.model,
            "causal": self.causal,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "texts": list(self.texts),
            "k": self.k,
            "provenance": self.provenance,
        }
        return meta, {name: np.asarray(getattr(self, name)) for name in self._ARRAYS}

    @classmethod
    def _from_payload(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> "Depth":
        try:
            L, H = int(meta["n_layers"]), int(meta["n_heads"])
            texts = [str(t) for t in meta["texts"]]
            k = int(meta["k"])
        except (KeyError, TypeError, ValueError) as e:
            raise ResultFormatError(f"depth metadata is incomplete or malformed ({e})") from None
        T = len(texts)
        shapes = {
            "n_tokens": ("i", (T,)),
            "k_used": ("i", (T,)),
            "res_hidden": ("f", (T, L + 1)),
            "res_path_head": ("f", (T, L, H)),
            "res_path_mean": ("f", (T, L)),
            **{name: ("f", (T, L, H)) for name in _PER_HEAD},
            "fisher_rao": ("f", (T, max(L - 1, 0), H)),
            "knn_overlap": ("f", (T, L)),
            "intrinsic_dim": ("f", (L + 1,)),
            "id_points": ("i", (L + 1,)),
            "intrinsic_dim_text": ("f", (T, L + 1)),
        }
        got = {
            name: read_array(arrays, name, kind=kind, shape=shape)
            for name, (kind, shape) in shapes.items()
        }
        return cls(
            model=str(meta["model"]),
            causal=bool(meta["causal"]),
            n_layers=L,
            n_heads=H,
            texts=texts,
            k=k,
            provenance=dict(meta.get("provenance") or {}),
            **got,
        )

    def __repr__(self) -> str:
        res = self.summary()["res_hidden"]
        return (
            f"Depth({self.model!r}, {self.n_texts} text{'s' if self.n_texts != 1 else ''}, "
            f"{self.n_layers} layers × {self.n_heads} heads, res(X) {res[0]:.3f} → {res[-1]:.3f})"
        )


# ============================================================================ the entry point
def _one_text(hidden: np.ndarray, att: np.ndarray, k: int, n_jobs: int | None) -> dict:
    """Every per-text measure of one forward pass (hidden (L+1, n, d), attention (L, H, n, n))."""
    L = att.shape[0]
    n = att.shape[-1]
    same, mean = path_products(att)
    js_mean, js_diam, h0 = js_geometry(att, n_jobs=n_jobs)
    k_used = min(k, n - 2)
    fr = fisher_rao_rows(att[:-1], att[1:]).mean(axis=-1) if L > 1 else np.zeros((0, att.shape[1]))
    ids = [intrinsic_dimension(hidden[d])[0] for d in range(L + 1)]
    return {
        "res_hidden": residual(hidden),
        "res_path_head": residual(same),
        "res_path_mean": residual(mean),
        "js_mean": js_mean,
        "js_diameter": js_diam,
        "h0_total": h0,
        "entropy": row_entropy(att),
        "fisher_rao": fr,
        "knn_overlap": np.array([knn_overlap(hidden[d], hidden[d + 1], k_used) for d in range(L)]),
        "intrinsic_dim_text": np.array(ids),
        "k_used": k_used,
        "n_tokens": n,
    }


def depth(
    texts: str | Sequence[str],
    model: Any = "minilm",
    *,
    k: int = 10,
    truncate: bool = False,
    n_jobs: int | None = 1,
    progress: ProgressOption = None,
) -> Depth:
    """Rank collapse, attention geometry, intrinsic dimension and Fisher–Rao movement per layer.

    Parameters
    ----------
    texts : str or sequence of str
        Each text runs alone (one forward pass, no padding) and needs at least
        :data:`MIN_TOKENS` tokens (special tokens included).
    model : str or AttentionModel, default "minilm"
        ``"minilm"``, ``"smollm2"``, a Hugging Face id or folder, or a loaded model.
    k : int, default 10
        Neighbours for the neighbourhood overlap (each text uses ``min(k, n − 2)``).
    truncate : bool
        Cut texts longer than the model's limit instead of raising.
    n_jobs : int, optional
        Worker processes for the H0 persistence (``1``: serial; ``None``: all CPUs when it pays).
    progress : bool, callable or None
        See :mod:`attntopo._progress` (stages ``forward``, ``measures``, ``intrinsic dimension``).

    Returns
    -------
    Depth
        Per text, layer and head; ``summary()`` gives means and spreads per depth.

    Raises
    ------
    InvalidInputError, EmptyTextError, TextTooLongError
        Bad texts, a text of fewer than :data:`MIN_TOKENS` tokens, bad ``k``.
    MissingDependencyError
        scikit-dimension is not installed.

    Examples
    --------
    >>> d = depth(["The cat sat on the mat.", "Attention is all you need."])   # doctest: +SKIP
    >>> d.summary()["res_hidden"]                                               # doctest: +SKIP
    """
    from ..analyses.building import make_provenance
    from ..models import load_model
    from ..models.instruments import forward_capture

    texts = check_texts(texts)
    k = check_positive_int(
        k, "k", allow_none=False, hint="neighbours for the overlap between layers"
    )
    truncate = check_bool(truncate, "truncate")
    n_jobs = check_positive_int(n_jobs, "n_jobs", None)
    _skdim()  # fails before any model work when scikit-dimension is missing
    with make_reporter(progress, description="depth") as reporter:
        reporter.add_total(3 * len(texts) + 1)
        m = load_model(model, progress=reporter) if isinstance(model, str) else model
        encs = m._encode(texts, truncate=truncate)  # length errors before any forward pass
        for i, enc in enumerate(encs):
            if len(enc.ids) < MIN_TOKENS:
                raise InvalidInputError(
                    f"texts[{i}] has {len(enc.ids)} token{'s' if len(enc.ids) != 1 else ''} "
                    f"with {m.name}'s special tokens; depth needs at least {MIN_TOKENS}"
                )
        rows, hiddens = [], []
        for text in texts:
            reporter.stage("forward")
            cap = forward_capture(m, text, attention=True, truncate=truncate)[0]
            reporter.advance(1)
            reporter.stage("measures")
            rows.append(_one_text(cap.hidden, cap.attention, k, n_jobs))
            hiddens.append(cap.hidden)
            reporter.advance(2)
        reporter.stage("intrinsic dimension")
        pooled = [
            intrinsic_dimension(np.concatenate([h[d] for h in hiddens]))
            for d in range(m.n_layers + 1)
        ]
        reporter.advance(1)

    def stack(name: str, dtype: Any = np.float64) -> np.ndarray:
        return np.stack([np.asarray(r[name], dtype=dtype) for r in rows])

    return Depth(
        model=m.name,
        causal=bool(m.causal),
        n_layers=int(m.n_layers),
        n_heads=int(m.n_heads),
        texts=texts,
        k=k,
        n_tokens=stack("n_tokens", np.int64),
        k_used=stack("k_used", np.int64),
        res_hidden=stack("res_hidden"),
        res_path_head=stack("res_path_head"),
        res_path_mean=stack("res_path_mean"),
        js_mean=stack("js_mean"),
        js_diameter=stack("js_diameter"),
        h0_total=stack("h0_total"),
        entropy=stack("entropy"),
        fisher_rao=stack("fisher_rao"),
        knn_overlap=stack("knn_overlap"),
        intrinsic_dim=np.array([p[0] for p in pooled], dtype=np.float64),
        id_points=np.array([p[1] for p in pooled], dtype=np.int64),
        intrinsic_dim_text=stack("intrinsic_dim_text"),
        provenance=make_provenance(
            m.info(),
            settings={
                "k": k,
                "truncate": truncate,
                "metric": "jensen_shannon",
                "base": 2,
                "id_estimator": "skdim.id.TwoNN()",
                "min_id_points": MIN_ID_POINTS,
            },
        ),
    )
