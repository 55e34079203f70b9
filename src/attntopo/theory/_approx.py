"""How well efficient-attention families approximate every head: :func:`approximability`.

For every head ``A`` (rows = query tokens, summing to 1) and every budget ``p`` — numbers
stored per query row, the same for every family (:func:`._approx_families.family_sizes`) —
the best approximation ``Â`` of each family (:mod:`._approx_families`):

===================  ==========================================================  ==============
family               approximation                                               size at ``p``
===================  ==========================================================  ==============
``band_sparse``      band ``|i − j| <= w`` ∪ ``c`` global columns ∪ ``s``        best split of
                     corrections per row (head types' band and vertical fits)    ``p``
``top_k``            ``k`` largest entries per row (Frobenius optimum)            ``k = p // 2``
``low_rank``         truncated SVD (Eckart–Young optimum)                         ``r = p // 2``
``kernel``           FAVOR+ positive random features on the head's own Q and K    ``m = p // 2``
``cluster_kmeans``   k-means (scikit-learn) on the rows; shared mean rows        ``k = p − 1``
``cluster_h0``       H0 clusters of the rows' JS distances at the scale where    ``k = p − 1``
                     ``k`` bars are alive (single linkage); shared mean rows
===================  ==========================================================  ==============

Two errors per head, family and budget: the relative Frobenius error ``‖A − Â‖_F / ‖A‖_F`` and
the mean row-wise Jensen–Shannon distance (base 2) between ``A`` and ``Â``'s rows with negative
entries clipped to 0 (and future entries of causal models set to 0) and renormalized
(:func:`._approx_families.js_error`).  The kernel family is random: its errors are the mean
over ``draws`` independent feature draws (seeded per layer, head and budget), with their
standard deviation.  The winner of a head at a budget is the family with the smallest
Frobenius error (ties: the first in :data:`FAMILIES`).

With the head's normalized attention entropy (head types' ``entropy_norm``: 0 one-hot, 1
uniform) the result checks Scatterbrain's finding (Chen et al. 2021: sparse attention wins at
low entropy, low-rank at high entropy) per budget: the Spearman correlation between entropy
and ``log(error_sparse / error_lowrank)``, and how often sparse wins among the heads below the
median entropy and low-rank among those above (:meth:`Approximability.scatterbrain`).

The kernel family needs each head's queries and keys: one forward pass with hooks
(:func:`attntopo.models._qk.capture_qk`), never one per head.  Given a text, that one pass
also gives the attention itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from .._progress import ProgressOption, make_reporter
from .._validation import check_bool, check_int, check_number
from ..analyses.building import Columns, Result, read_array
from ..attention import Attention
from ..errors import InvalidInputError, OutOfRangeError, ResultFormatError
from ..io import json_safe
from ._approx_families import (
    FAMILIES,
    band_sparse,
    band_sparse_search,
    clustered,
    family_sizes,
    js_error,
    js_error_support,
    low_rank,
    performer,
    random_features,
    relative_error,
    top_k,
)

__all__ = ["Approximability", "approximability", "FAMILIES", "DEFAULT_BUDGETS"]

#: Budgets (numbers per query row) used when none are given, those up to ``n``.
DEFAULT_BUDGETS = (4, 8, 16, 32)
#: Kernel draws averaged when none are given.
DEFAULT_DRAWS = 4
_SPARSE_VS = ("low_rank", "kernel")  # what top_k is compared with in the Scatterbrain check


# ---------------------------------------------------------------------- result
@dataclass(eq=False)
class Approximability(Result):
    """Errors of every efficient-attention family on every head at matched budgets.

    Attributes
    ----------
    model, text : str
    tokens : list of str
    causal : bool
    layers, heads : tuple of int
        Model layers and heads of the grid's axes.
    families : tuple of str
        Measured families, in :data:`FAMILIES` order.
    budgets : tuple of int
        Numbers stored per query row.
    errors, js : ndarray of shape (n_families, n_budgets, n_layers, n_heads)
        Relative Frobenius error and mean row JS distance of each family's best approximation.
    kernel_std, kernel_js_std : ndarray of shape (n_budgets, n_layers, n_heads)
        Standard deviation over the draws of the kernel family's errors (NaN if not measured).
    sizes : dict of str to ndarray of shape (n_budgets, n_layers, n_heads), int
        The size each approximation used: ``band_w``, ``band_columns``, ``band_corrections``,
        ``sparse_k``, ``rank``, ``features``, ``kmeans_clusters``, ``h0_clusters`` (clusters found,
        at most ``p − 1``).
    singular_values : ndarray of shape (n_layers, n_heads, n_tokens)
    entropy_norm : ndarray of shape (n_layers, n_heads)
        Mean normalized row entropy (head types' ``entropy_norm``).
    labels : ndarray of str, shape (n_layers, n_heads)
        Head types' label of each head.
    scale : float or "gap"
        The chosen scale of the ``cluster_h0`` extra measurement.
    scales, scale_clusters, scale_errors, scale_js : ndarray of shape (n_layers, n_heads)
        H0 clusters at ``scale`` (per head its largest-gap scale for ``"gap"``): the scale used,
        the clusters (budget ``clusters + 1``) and the two errors; measured with the
        ``cluster_h0`` family (NaN, and 0 clusters, without it).
    settings : dict
        ``draws``, ``orthogonal``, ``seed``, ``kmeans_n_init``.
    """

    kind: ClassVar[str] = "approximability"

    model: str
    text: str
    tokens: list[str]
    causal: bool
    layers: tuple[int, ...]
    heads: tuple[int, ...]
    families: tuple[str, ...]
    budgets: tuple[int, ...]
    errors: np.ndarray
    js: np.ndarray
    kernel_std: np.ndarray
    kernel_js_std: np.ndarray
    sizes: dict
    singular_values: np.ndarray
    entropy_norm: np.ndarray
    labels: np.ndarray
    scale: Any
    scales: np.ndarray
    scale_clusters: np.ndarray
    scale_errors: np.ndarray
    scale_js: np.ndarray
    settings: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    # ---------------------------------------------------------------- access
    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    def _b(self, budget: int) -> int:
        if budget not in self.budgets:
            raise OutOfRangeError(
                f"budget {budget!r} was not measured; budgets: {list(self.budgets)}"
            )
        return self.budgets.index(budget)

    def error(self, family: str, budget: int, *, by: str = "frobenius") -> np.ndarray:
        """``(n_layers, n_heads)`` errors of one family at
        one budget (``by="frobenius"`` or ``"js"``)."""
        if family not in self.families:
            raise InvalidInputError(
                f"family {family!r} was not measured; families: {', '.join(self.families)}"
            )
        arr = self._by(by)
        return arr[self.families.index(family), self._b(budget)]

    def _by(self, by: str) -> np.ndarray:
        if by not in ("frobenius", "js"):
            raise InvalidInputError(f"by must be 'frobenius' or 'js', got {by!r}")
        return self.errors if by == "frobenius" else self.js

    def winners(self, budget: int, *, by: str = "frobenius") -> np.ndarray:
        """``(n_layers, n_heads)`` family with the smallest
        error at ``budget`` (ties: first family)."""
        arr = self._by(by)[:, self._b(budget)]
        return np.asarray(self.families)[np.argmin(np.where(np.isnan(arr), np.inf, arr), axis=0)]

    def win_counts(self, *, by: str = "frobenius") -> dict[int, dict[str, int]]:
        """``{budget: {family: heads it wins}}``."""
        return {
            b: {f: int((self.winners(b, by=by) == f).sum()) for f in self.families}
            for b in self.budgets
        }

    def scatterbrain(self) -> dict[int, dict[str, dict]]:
        """Scatterbrain's claim per budget: ``{budget: {"low_rank": {...}, "kernel": {...}}}``.

        For each head ``g = log(error_top_k / error_other)`` (> 0: the other family wins).
        Entries: ``spearman`` (correlation of ``g`` with ``entropy_norm``; the claim says > 0) and
        its ``p_value``, ``sparse_wins_low`` (share of heads at or below the median entropy where
        top-k has the smaller error), ``other_wins_high`` (share above the median where the other
        family does), ``n_heads`` and ``holds`` (``spearman > 0``, ``p_value < 0.05`` and both
        shares above ½).
        """
        from scipy.stats import spearmanr

        out: dict[int, dict[str, dict]] = {}
        ent = np.asarray(self.entropy_norm, dtype=np.float64).ravel()
        for b in self.budgets:
            row: dict[str, dict] = {}
            if "top_k" not in self.families:
                out[b] = row
                continue
            es = self.error("top_k", b).ravel()
            for other in _SPARSE_VS:
                if other not in self.families:
                    continue
                eo = self.error(other, b).ravel()
                ok = np.isfinite(ent) & (es > 0) & (eo > 0)
                g = np.log(es[ok] / eo[ok])
                e = ent[ok]
                if g.size < 3 or np.ptp(g) == 0 or np.ptp(e) == 0:
                    rho, p = float("nan"), float("nan")
                else:
                    res = spearmanr(e, g)
                    rho, p = float(res.statistic), float(res.pvalue)
                med = np.median(e) if e.size else np.nan
                low, high = e <= med, e > med
                s_low = float(np.mean(g[low] < 0)) if low.any() else float("nan")
                o_high = float(np.mean(g[high] > 0)) if high.any() else float("nan")
                holds = bool(rho > 0 and p < 0.05 and s_low > 0.5 and o_high > 0.5)
                row[other] = {
                    "spearman": rho,
                    "p_value": p,
                    "sparse_wins_low": s_low,
                    "other_wins_high": o_high,
                    "n_heads": int(g.size),
                    "holds": holds,
                }
            out[b] = row
        return out

    # ---------------------------------------------------------------- tables
    def summary(self) -> Columns:
        """One row per head and budget (layer-major, budgets innermost).

        Columns: ``layer``, ``head``, ``budget``, per family its Frobenius error (named by the
        family) and ``<family>_js``, ``winner``, ``winner_js``, ``entropy_norm``, ``label``, the
        :attr:`sizes`, and ``kernel_std``.
        """
        L, H, B = len(self.layers), len(self.heads), len(self.budgets)

        def grid(a: np.ndarray) -> np.ndarray:  # (B, L, H) -> rows (L, H, B)
            return np.moveaxis(np.asarray(a), 0, -1).reshape(-1)

        cols: dict[str, np.ndarray] = {
            "layer": np.repeat(np.asarray(self.layers, dtype=np.int64), H * B),
            "head": np.tile(np.repeat(np.asarray(self.heads, dtype=np.int64), B), L),
            "budget": np.tile(np.asarray(self.budgets, dtype=np.int64), L * H),
        }
        for i, f in enumerate(self.families):
            cols[f] = grid(self.errors[i])
        for i, f in enumerate(self.families):
            cols[f"{f}_js"] = grid(self.js[i])
        cols["winner"] = grid(np.stack([self.winners(b) for b in self.budgets]))
        cols["winner_js"] = grid(np.stack([self.winners(b, by="js") for b in self.budgets]))
        cols["entropy_norm"] = np.repeat(
            np.asarray(self.entropy_norm, dtype=np.float64).reshape(-1), B
        )
        cols["label"] = np.repeat(np.asarray(self.labels).reshape(-1), B)
        for k, v in self.sizes.items():
            cols[k] = grid(v)
        cols["kernel_std"] = grid(self.kernel_std)
        return Columns(cols)

    def scale_summary(self) -> Columns:
        """One row per head: H0 clusters at :attr:`scale` (``scale``, ``clusters``, ``budget`` =
        clusters + 1, ``error``, ``js``)."""
        L, H = len(self.layers), len(self.heads)
        k = np.asarray(self.scale_clusters, dtype=np.int64).reshape(-1)
        return Columns(
            {
                "layer": np.repeat(np.asarray(self.layers, dtype=np.int64), H),
                "head": np.tile(np.asarray(self.heads, dtype=np.int64), L),
                "scale": np.asarray(self.scales).reshape(-1),
                "clusters": k,
                "budget": k + 1,
                "error": np.asarray(self.scale_errors).reshape(-1),
                "js": np.asarray(self.scale_js).reshape(-1),
            }
        )

    def to_dict(self) -> dict:
        """JSON-safe: settings, per-budget win counts, the Scatterbrain check, the summary rows."""
        return json_safe(
            {
                "kind": self.kind,
                "model": self.model,
                "text": self.text,
                "tokens": self.tokens,
                "n_tokens": self.n_tokens,
                "causal": self.causal,
                "families": list(self.families),
                "budgets": list(self.budgets),
                "settings": self.settings,
                "scale": self.scale,
                "win_counts": {str(b): c for b, c in self.win_counts().items()},
                "win_counts_js": {str(b): c for b, c in self.win_counts(by="js").items()},
                "scatterbrain": {str(b): c for b, c in self.scatterbrain().items()},
                "summary": self.summary().rows(),
                "scale_summary": self.scale_summary().rows(),
                "provenance": self.provenance,
            }
        )

    def __repr__(self) -> str:
        b = self.budgets[len(self.budgets) // 2]
        wins = {f: c for f, c in self.win_counts()[b].items() if c}
        return (
            f"Approximability({self.model!r}, n={self.n_tokens}, "
            f"{len(self.layers)}x{len(self.heads)} heads, "
            f"budgets={list(self.budgets)}, winners at {b}: {wins})"
        )

    # --------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {
            k: getattr(self, k)
            for k in ("model", "text", "tokens", "causal", "scale", "settings", "provenance")
        }
        meta.update(
            layer_ids=list(self.layers),
            head_ids=list(self.heads),
            families=list(self.families),
            budgets=list(self.budgets),
            sizes=list(self.sizes),
        )
        arrays = {name: np.asarray(getattr(self, name)) for name in _ARRAYS}
        arrays["labels"] = np.asarray(self.labels, dtype=str)
        arrays.update({f"size__{k}": np.asarray(v, dtype=np.int64) for k, v in self.sizes.items()})
        return meta, arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> "Approximability":
        if "scale_eps" in arrays:
            raise ResultFormatError(
                "an approximability result saved before the first release (its per-head scales "
                "under 'scale_eps', now 'scales'), which this attntopo does not read: compute it "
                "again and save it"
            )
        layer_ids = tuple(int(x) for x in meta["layer_ids"])
        head_ids = tuple(int(x) for x in meta["head_ids"])
        families = tuple(str(f) for f in meta["families"])
        if any(f not in FAMILIES for f in families):
            raise ResultFormatError(f"unknown family in {families}; known: {', '.join(FAMILIES)}")
        budgets = tuple(int(b) for b in meta["budgets"])
        tokens = [str(t) for t in meta["tokens"]]
        F, B, L, H, n = len(families), len(budgets), len(layer_ids), len(head_ids), len(tokens)
        shapes = {
            "errors": (F, B, L, H),
            "js": (F, B, L, H),
            "kernel_std": (B, L, H),
            "kernel_js_std": (B, L, H),
            "singular_values": (L, H, n),
            "entropy_norm": (L, H),
            "scales": (L, H),
            "scale_clusters": (L, H),
            "scale_errors": (L, H),
            "scale_js": (L, H),
        }
        got = {
            k: read_array(arrays, k, kind="i" if k == "scale_clusters" else "f", shape=s)
            for k, s in shapes.items()
        }
        sizes = {
            str(k): read_array(arrays, f"size__{k}", kind="i", shape=(B, L, H))
            for k in meta["sizes"]
        }
        return cls(
            model=str(meta["model"]),
            text=str(meta["text"]),
            tokens=tokens,
            causal=bool(meta["causal"]),
            layers=layer_ids,
            heads=head_ids,
            families=families,
            budgets=budgets,
            sizes=sizes,
            labels=read_array(arrays, "labels", kind="U", shape=(L, H)).astype(str),
            scale=meta["scale"],
            settings=dict(meta.get("settings") or {}),
            provenance=dict(meta.get("provenance") or {}),
            **got,
        )


_ARRAYS = (
    "errors",
    "js",
    "kernel_std",
    "kernel_js_std",
    "singular_values",
    "entropy_norm",
    "scales",
    "scale_clusters",
    "scale_errors",
    "scale_js",
)


# -------------------------------------------------------------------- inputs
def _check_families(families: Any) -> tuple[str, ...]:
    if families is None:
        return FAMILIES
    if isinstance(families, str):
        families = [families]
    try:
        given = list(families)
    except TypeError:
        raise InvalidInputError(
            f"families must be a list of family names, got {type(families).__name__}"
        ) from None
    bad = [f for f in given if f not in FAMILIES]
    if bad or not given:
        raise InvalidInputError(
            f"families must name at least one of {', '.join(FAMILIES)}; got {given!r}"
        )
    return tuple(f for f in FAMILIES if f in given)


def _check_budgets(budgets: Any, n: int) -> tuple[int, ...]:
    if n < 2:
        raise InvalidInputError(f"approximability needs at least 2 tokens, got {n}")
    if budgets is None:
        out = tuple(b for b in DEFAULT_BUDGETS if b <= n)
        return out or (n,)
    if isinstance(budgets, (int, np.integer)) and not isinstance(budgets, bool):
        budgets = [budgets]
    try:
        given = list(budgets)
    except TypeError:
        raise InvalidInputError(
            f"budgets must be an int or a list of ints, got {type(budgets).__name__}"
        ) from None
    if not given:
        raise InvalidInputError(
            "budgets must name at least one budget (numbers stored per query row)"
        )
    out = []
    for b in given:
        v = check_int(b, "budget", lo=2, hint="numbers stored per query row")
        if v > n:
            raise OutOfRangeError(
                f"budget {v} is larger than the text's {n} tokens: a dense row stores n = {n} "
                f"numbers; give budgets in 2..{n}"
            )
        out.append(v)
    return tuple(sorted(set(out)))


def _check_scale(scale: Any) -> Any:
    if scale == "gap":
        return "gap"
    v = float(check_number(scale, "scale", lo=0, hint="a JS distance in [0, 1], or 'gap'"))
    if v > 1:
        raise InvalidInputError(f"scale must be a JS distance in [0, 1] or 'gap', got {scale!r}")
    return v


def _attention_and_qk(att: Any, model: Any, need_qk: bool, layers: Any, heads: Any, truncate: bool):
    """``(Attention, QKCapture or None, model info)``: one forward pass at most."""
    from ..models import AttentionModel, check_selection, load_model
    from ..models.instruments import capture_qk

    if isinstance(att, str):
        check_selection(model or "minilm", layers=layers, heads=heads)  # before the weights load
        m = model if isinstance(model, AttentionModel) else load_model(model or "minilm")
        cap = capture_qk(m, att, truncate=truncate)
        e = cap.encoding
        full = Attention(
            weights=cap.attention,
            tokens=e.tokens,
            offsets=e.offsets,
            special=np.array(e.special),
            causal=m.causal,
            model=m.name,
            text=e.text,
            token_ids=np.array(e.ids),
            truncated=e.truncated,
        )
        return full.select(layers=layers, heads=heads), cap, m.info()
    if not isinstance(att, Attention):
        raise InvalidInputError(
            f"approximability takes a text or an Attention, got {type(att).__name__}"
        )
    att = att.select(layers=layers, heads=heads) if layers is not None or heads is not None else att
    if not need_qk:
        return (
            att,
            None,
            (model.info() if isinstance(model, AttentionModel) else {"name": att.model}),
        )
    if not att.text:
        raise InvalidInputError(
            "the kernel family needs the text behind the attention (att.text is empty): pass "
            "families without 'kernel'"
        )
    m = model if isinstance(model, AttentionModel) else load_model(model or att.model)
    cap = capture_qk(m, att.text, truncate=att.truncated)
    ids = np.asarray(cap.encoding.ids)
    keep = (
        ~np.asarray(cap.encoding.special) if att.special_dropped else np.ones(ids.size, dtype=bool)
    )
    if att.token_ids is not None and not np.array_equal(ids[keep], att.token_ids):
        raise InvalidInputError(
            f"{m.name} tokenizes att.text into other tokens than att holds (a prefix, a subset or "
            "another model?): pass the model that made att, or families without 'kernel'"
        )
    if max(att.layers) >= m.n_layers or max(att.heads) >= m.n_heads:
        raise InvalidInputError(f"att has layers/heads {m.name} lacks")
    return att, cap, m.info()


# ----------------------------------------------------------------- the work
def _kernel(
    cap: Any,
    lid: int,
    hids: Sequence[int],
    m: int,
    draws: int,
    seed: int,
    budget: int,
    orthogonal: bool,
    causal: bool,
    keep: np.ndarray | None,
) -> np.ndarray:
    """FAVOR+ approximations ``(heads, draws, n, n)`` of one layer's heads (restricted to ``keep``).

    Each head's features are drawn from its own generator, seeded by ``(seed, layer, head,
    budget)``: a head's numbers do not depend on which other heads are measured.
    """
    Q = cap.queries[lid, list(hids)]  # (h, n, d)
    K = cap.keys[lid, list(hids)]
    d = Q.shape[-1]
    omega = np.stack(
        [
            np.stack([random_features(m, d, rng, orthogonal=orthogonal) for _ in range(draws)])
            for rng in (np.random.default_rng([seed, lid, h, budget]) for h in hids)
        ]
    )  # (h, draws, m, d)
    Ahat = performer(Q[:, None], K[:, None], float(cap.scaling[lid]), omega, causal=causal)
    if keep is not None:
        Ahat = Ahat[..., keep, :][..., keep]
        Ahat = Ahat / Ahat.sum(-1, keepdims=True)
    return Ahat


def approximability(
    text: str | Attention,
    *,
    model: Any = None,
    budgets: Sequence[int] | int | None = None,
    families: Sequence[str] | None = None,
    scale: Any = "gap",
    draws: int = DEFAULT_DRAWS,
    orthogonal: bool = True,
    seed: int = 0,
    layers: Any = None,
    heads: Any = None,
    truncate: bool = False,
    progress: ProgressOption = None,
) -> Approximability:
    """Approximate every head by each efficient-attention family at matched budgets.

    Parameters
    ----------
    text : str or Attention
        A text (run through ``model`` once: attention, queries and keys from the same pass),
        or the attention of one text, as in :func:`attntopo.analyze`.
    model : str or AttentionModel, optional
        For a text: the model (default ``"minilm"``).  For an Attention: the model that made
        it, used only by the kernel family (one forward pass of ``text.text`` capturing queries
        and keys); by default ``load_model(text.model)``.
    budgets : int or sequence of int in 2..n, optional
        Numbers stored per query row (:func:`._approx_families.family_sizes`); default those of
        :data:`DEFAULT_BUDGETS` up to ``n``.  A budget above ``n`` raises OutOfRangeError.
    families : sequence of str, optional
        Any of :data:`FAMILIES` (default all).
    scale : float or "gap"
        The scale of the extra H0-cluster measurement (a JS distance, or each head's largest
        H0 gap), reported next to the matched budgets.
    draws : int >= 1
        Kernel feature draws averaged (each seeded by ``seed``, layer, head and budget).
    orthogonal : bool, default True
        Orthogonal random features (FAVOR+'s default) or iid Gaussian ones.
    seed : int >= 0
        For the kernel draws and k-means (one initialization, k-means++).
    layers, heads : optional
        Keep only these (as :meth:`Attention.select`: positions in ``text``).
    truncate : bool
        Cut a text longer than the model's limit.
    progress : bool, callable or None, default None
        Report each layer done (:mod:`attntopo._progress`): ``None`` a bar on a terminal or
        in a notebook, as in every analysis that runs a model.

    Returns
    -------
    Approximability

    Raises
    ------
    OutOfRangeError
        A budget larger than the number of tokens.
    InvalidInputError, MissingDependencyError (k-means needs scikit-learn), ModelLoadError
    """
    fams = _check_families(families)
    draws = check_int(draws, "draws", lo=1)
    seed = check_int(seed, "seed", lo=0)
    orthogonal = check_bool(orthogonal, "orthogonal")
    truncate = check_bool(truncate, "truncate")
    scale = _check_scale(scale)
    att, cap, info = _attention_and_qk(text, model, "kernel" in fams, layers, heads, truncate)
    n = att.n_tokens
    bud = _check_budgets(budgets, n)
    from ..models.instruments import one_blas_thread

    # BLAS and OpenMP (k-means) on one thread: these matrices are small, threads cost more
    with (
        make_reporter(progress, description="approximability") as rep,
        one_blas_thread(user_api=None),
    ):
        rep.add_total(att.n_layers)  # one unit per layer (the capture pass ran before)
        rep.stage("approximating heads")
        res = _measure(att, cap, fams, bud, scale, draws, orthogonal, seed, rep)
    settings = {
        "draws": draws,
        "orthogonal": orthogonal,
        "seed": seed,
        "kmeans_n_init": 1,
        "budget_unit": "numbers stored per query row",
    }
    from ..analyses.building import head_features, label_heads, make_provenance
    from ..attention import token_labels

    feats = head_features(att) if n >= 2 else {}
    labels = label_heads(feats, causal=att.causal)
    tokens, _ = token_labels(att.tokens, att.offsets, att.special, text=att.text)
    return Approximability(
        model=att.model,
        text=att.text,
        tokens=list(tokens),
        causal=bool(att.causal),
        layers=tuple(att.layers),
        heads=tuple(att.heads),
        families=fams,
        budgets=bud,
        entropy_norm=feats["entropy_norm"],
        labels=labels,
        scale=scale,
        settings=settings,
        provenance=make_provenance(
            info,
            settings={**settings, "families": list(fams), "budgets": list(bud), "scale": scale},
        ),
        **res,
    )


def _measure(
    att: Attention,
    cap: Any,
    fams: tuple[str, ...],
    bud: tuple[int, ...],
    scale: Any,
    draws: int,
    orthogonal: bool,
    seed: int,
    rep: Any,
) -> dict:
    from scipy.cluster.hierarchy import fcluster

    from ..compress import persistence_labels
    from ..compress.grouping import canonical, kmeans_labels
    from ..distances import row_distances
    from ..topology import linkage

    L, H, n, F, B = att.n_layers, att.n_heads, att.n_tokens, len(fams), len(bud)
    causal = bool(att.causal)
    errors = np.full((F, B, L, H), np.nan)
    js = np.full((F, B, L, H), np.nan)
    kstd = np.full((B, L, H), np.nan)
    kjs_std = np.full((B, L, H), np.nan)
    size_names = (
        "band_w",
        "band_columns",
        "band_corrections",
        "sparse_k",
        "rank",
        "features",
        "kmeans_clusters",
        "h0_clusters",
    )
    sizes = {k: np.zeros((B, L, H), dtype=np.int64) for k in size_names}
    sv = np.zeros((L, H, n))
    sc = {k: np.full((L, H), np.nan) for k in ("scales", "scale_errors", "scale_js")}
    sc_k = np.zeros((L, H), dtype=np.int64)
    fsz = [family_sizes(b, n) for b in bud]
    keep = None
    if cap is not None and att.special_dropped:
        keep = ~np.asarray(cap.encoding.special)
    fi = {f: i for i, f in enumerate(fams)}
    for li in range(L):
        A = att.weights[li].astype(np.float64)  # (H, n, n)
        rows = A.sum(-1)
        lid = att.layers[li]
        svd = np.linalg.svd(A)
        sv[li] = svd[1]  # kept for every family: the figure's rank curves
        if "band_sparse" in fi:
            err2, params = band_sparse_search(A, bud, causal=causal)
            tot = (A * A).sum((-2, -1))
            errors[fi["band_sparse"], :, li] = np.sqrt(err2 / tot)
            for j in range(B):
                w, c, s = (params[j, :, t] for t in range(3))
                (
                    sizes["band_w"][j, li],
                    sizes["band_columns"][j, li],
                    sizes["band_corrections"][j, li],
                ) = w, c, s
                kept = np.stack(
                    [
                        band_sparse(A[h], int(w[h]), int(c[h]), int(s[h]), causal=causal).sum(-1)
                        for h in range(H)
                    ]
                )
                js[fi["band_sparse"], j, li] = js_error_support(kept, rows)
        for j, z in enumerate(fsz):
            if "top_k" in fi:
                Ahat = top_k(A, z["top_k"])
                errors[fi["top_k"], j, li] = relative_error(A, Ahat)
                js[fi["top_k"], j, li] = js_error_support(Ahat.sum(-1), rows)
                sizes["sparse_k"][j, li] = z["top_k"]
            if "low_rank" in fi:
                Ahat, _ = low_rank(A, z["low_rank"], svd=svd)
                errors[fi["low_rank"], j, li] = relative_error(A, Ahat)
                js[fi["low_rank"], j, li] = js_error(A, Ahat, causal=causal)
                sizes["rank"][j, li] = z["low_rank"]
            if "kernel" in fi:
                sizes["features"][j, li] = z["kernel"]
                Ahat = _kernel(
                    cap, lid, att.heads, z["kernel"], draws, seed, bud[j], orthogonal, causal, keep
                )
                e = relative_error(A[:, None], Ahat)  # (H, draws)
                d = js_error(A[:, None], Ahat, causal=causal, normalized=True)
                errors[fi["kernel"], j, li], kstd[j, li] = e.mean(-1), e.std(-1)
                js[fi["kernel"], j, li], kjs_std[j, li] = d.mean(-1), d.std(-1)

        def record(name: str, j: int, Ahat: np.ndarray) -> None:
            errors[fi[name], j, li] = relative_error(A, Ahat)
            js[fi[name], j, li] = js_error(A, Ahat, causal=causal)

        if "cluster_kmeans" in fi:
            for j, z in enumerate(fsz):
                # one k-means start per head (compress uses 4):
                # 72 heads × budgets stay within seconds
                labs = [
                    kmeans_labels(
                        A[h], z["clusters"], seed, n_init=1, what="the cluster_kmeans family"
                    )
                    for h in range(H)
                ]
                record(
                    "cluster_kmeans",
                    j,
                    np.stack([clustered(A[h], labs[h], causal=causal) for h in range(H)]),
                )
                sizes["kmeans_clusters"][j, li] = [np.unique(lab).size for lab in labs]
        if "cluster_h0" in fi:
            D = row_distances(A)
            Z = [linkage(D[h]) for h in range(H)]  # their heights are the H0 deaths
            for j, z in enumerate(fsz):
                # the smallest scale with at most k H0 bars alive (single linkage cut)
                labs = [
                    canonical(fcluster(Z[h], z["clusters"], criterion="maxclust")) for h in range(H)
                ]
                record(
                    "cluster_h0",
                    j,
                    np.stack([clustered(A[h], labs[h], causal=causal) for h in range(H)]),
                )
                sizes["h0_clusters"][j, li] = [int(lab.max()) + 1 for lab in labs]
            at_scale = [persistence_labels(D[h], scale) for h in range(H)]
            Ahat = np.stack(
                [clustered(A[h], lab, causal=causal) for h, (lab, _) in enumerate(at_scale)]
            )
            sc["scales"][li] = [scale for _, scale in at_scale]
            sc_k[li] = [int(lab.max()) + 1 for lab, _ in at_scale]
            sc["scale_errors"][li], sc["scale_js"][li] = (
                relative_error(A, Ahat),
                js_error(A, Ahat, causal=causal),
            )
        rep.advance()
    return {
        "errors": errors,
        "js": js,
        "kernel_std": kstd,
        "kernel_js_std": kjs_std,
        "sizes": sizes,
        "singular_values": sv,
        "scale_clusters": sc_k,
        **sc,
    }
