"""Head types: what pattern each attention head draws, measured on the text(s).

For every head, :func:`head_types` measures how its attention mass is spread over the
keys (averaged over the query rows, then over the texts) and gives the head one label.

Features (columns of :attr:`HeadTypes.features`, one value per head)
--------------------------------------------------------------------
All masses are averages over the *free* query rows: rows that can attend to at least two
keys (every row of a bidirectional model; rows ``i >= 1`` of a causal one, whose row 0
can only attend to itself).  A mass is in ``[0, 1]``.

``self``, ``previous``, ``next``
    Mass on the query itself (the diagonal), on the previous token (subdiagonal; rows
    ``i >= 1``) and on the next token (superdiagonal; rows ``i <= n - 2``).  A causal
    model cannot attend to the next token: ``next`` and ``dist_next`` are ``nan``.
``first``, ``special``, ``sink``
    Mass on the first token, on special tokens (``[CLS]``, ``[SEP]``, ``<s>`` …: the
    :attr:`~attntopo.attention.Attention.special` mask, which the tokenizer reports; no
    token id is hard-coded) and on their union (the usual attention *sinks*).
``punctuation``
    Mass on punctuation tokens: non-special tokens whose text (decoded by the tokenizer
    when one is given, else the text span of the token's offsets) is non-empty and made
    only of Unicode punctuation (``unicodedata`` category ``P*``).
``band``
    Mass inside the band ``|i - j| <= w`` (``w = band_width``, default
    :data:`BAND_WIDTH`).
``max_column_mass``, ``max_column``
    The largest mean column mass ``max_j mean_i A[i, j]`` (a token every query attends
    to) and its position ``j`` (``-1`` when several texts are pooled).
``entropy``, ``entropy_norm``
    Mean row entropy in bits, and the mean of each row's entropy divided by
    ``log2`` of the number of keys the row may attend to (``n``, or ``i + 1`` for causal
    rows): 1 for uniform attention, 0 for a one-hot row.
``dist_identity``, ``dist_previous``, ``dist_next``, ``dist_first``, ``dist_uniform``
    Mean Jensen–Shannon distance (base 2, in ``[0, 1]``) between each row and the row of
    an ideal pattern matrix: the identity, the previous-token shift (rows ``i >= 1``), the
    next-token shift (rows ``i <= n - 2``), the first-token column, and uniform attention
    over the keys a row may see (the causal-uniform matrix for causal models).
``band_error``, ``vertical_error``, ``fit_error``
    The band-plus-sparse-error fit.  The best approximation of a head by a matrix
    supported on the band ``|i - j| <= w`` keeps the band entries and leaves an L1 error of
    ``band_error = 1 - band`` per row.  A *vertical* head puts its mass on a few columns;
    permuting the columns so the heaviest come first turns it into a band head, and the
    best approximation by ``k`` columns (the ``k`` heaviest in mean column mass) leaves
    ``vertical_error = 1 - (mass on those k columns)``.  ``k`` is the number of entries a
    row keeps inside the band (``2w + 1``, or ``w + 1`` for causal models), so both fits
    have the same sparsity budget.  ``fit_error`` is the smaller error and
    :attr:`HeadTypes.fit_class` says which (``"band"`` or ``"vertical"``).
``fit_error_rel``
    ``fit_error`` divided by the error the band fit leaves on uniform attention
    (``1 - (2w + 1) / n`` away from the edges): 0 for a perfect fit, about 1 for a head
    that is no sparser than uniform.  Uniform attention over a short text fits a band of 5
    tokens better than over a long one; this ratio removes that length effect.

Labels (first rule that applies)
--------------------------------
===========  ===========================================================================
``sink``     ``sink >= SINK_THRESHOLD`` (0.5): most mass on the first / special tokens
``self``     ``self >= SELF_THRESHOLD`` (0.5): positional head, each token attends to itself
``previous`` ``previous >= PREVIOUS_THRESHOLD`` (0.5): previous-token head
``next``     ``next >= NEXT_THRESHOLD`` (0.5): next-token head (never for causal models)
``broad``    ``entropy_norm >= BROAD_ENTROPY`` (0.85): attention spread nearly uniformly
``banded``   ``fit_error_rel <= FIT_MAX_ERROR`` (0.5) and the band fits best: syntactic /
             local head, mass within ``w`` tokens
``vertical`` ``fit_error_rel <= FIT_MAX_ERROR`` and the column fit is better: rare-token head,
             mass on a few columns (below the sink threshold on first/special tokens)
``mixed``    none of the above
===========  ===========================================================================

The thresholds are module constants; :func:`label_heads` applies the rules to a features
table, so other thresholds can be tried without recomputing anything.  The tests build
noisy synthetic matrices of every type (identity, shifted identity, band, one heavy
column, a ``[CLS]`` sink, uniform; bidirectional and causal) and check each label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np

from .._validation import check_nonneg_int, check_positive_int
from ..attention import Attention, resolve_index
from ..errors import InvalidInputError, OutOfRangeError
from ..io import json_safe
from ..words import punctuation_mask, token_strings
from ._inputs import as_attentions
from ._provenance import make_provenance
from ._result import Columns, Result, read_array

__all__ = [
    "HeadTypes",
    "head_types",
    "head_features",
    "label_heads",
    "punctuation_mask",
    "token_strings",
    "LABELS",
    "LABEL_DESCRIPTIONS",
    "FEATURES",
    "BAND_WIDTH",
    "SINK_THRESHOLD",
    "SELF_THRESHOLD",
    "PREVIOUS_THRESHOLD",
    "NEXT_THRESHOLD",
    "BROAD_ENTROPY",
    "FIT_MAX_ERROR",
]

#: Default half-width ``w`` of the band ``|i - j| <= w``.
BAND_WIDTH = 2
#: ``sink`` label: at least this mass on the first and special tokens.
SINK_THRESHOLD = 0.5
#: ``self`` label: at least this mass on the diagonal.
SELF_THRESHOLD = 0.5
#: ``previous`` label: at least this mass on the previous token.
PREVIOUS_THRESHOLD = 0.5
#: ``next`` label: at least this mass on the next token (bidirectional models only).
NEXT_THRESHOLD = 0.5
#: ``broad`` label: mean normalized row entropy at least this.
BROAD_ENTROPY = 0.85
#: ``banded`` / ``vertical`` labels: the better fit leaves at most this share of the error
#: it leaves on uniform attention (``fit_error_rel``).
FIT_MAX_ERROR = 0.5

#: Head labels, in the order the rules are tried.
LABELS = ("sink", "self", "previous", "next", "broad", "banded", "vertical", "mixed")
LABEL_DESCRIPTIONS = {
    "sink": "attention sink: most mass on the first / special tokens",
    "self": "positional: each token attends to itself",
    "previous": "previous-token head",
    "next": "next-token head",
    "broad": "broad: attention spread nearly uniformly (high entropy)",
    "banded": "banded / syntactic: mass within a few tokens",
    "vertical": "vertical / rare-token: mass on a few columns (tokens every query attends to)",
    "mixed": "no single pattern",
}

#: Numeric feature columns (each an array of length n_layers · n_heads, layer-major).
FEATURES = (
    "self",
    "previous",
    "next",
    "first",
    "special",
    "sink",
    "punctuation",
    "band",
    "max_column_mass",
    "max_column",
    "entropy",
    "entropy_norm",
    "dist_identity",
    "dist_previous",
    "dist_next",
    "dist_first",
    "dist_uniform",
    "band_error",
    "vertical_error",
    "fit_error",
    "fit_error_rel",
)

_LN2 = math.log(2.0)


# ------------------------------------------------------------------- features
def _one_hot_js_distance(t: np.ndarray) -> np.ndarray:
    """JS distance (base 2) between a distribution and the one-hot row on a key where it has mass t.

    ``JS(p, e_j) = ln 2 + ½ t ln t − ½ (1 + t) ln(1 + t)`` depends on ``p_j = t`` only.
    """
    t = np.clip(t, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        tlt = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)
    js = _LN2 + 0.5 * tlt - 0.5 * (1.0 + t) * np.log1p(t)
    return np.sqrt(np.clip(js / _LN2, 0.0, 1.0))


def _rows_js_distance(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Row-wise JS distance (base 2) of aligned stacks ``(..., n)`` → ``(...)``."""
    from scipy.special import rel_entr

    M = 0.5 * (P + Q)
    js = 0.5 * rel_entr(P, M).sum(-1) + 0.5 * rel_entr(Q, M).sum(-1)
    return np.sqrt(np.clip(js / _LN2, 0.0, 1.0))


def _layer_features(
    A: np.ndarray,
    causal: bool,
    special: np.ndarray,
    punct: np.ndarray,
    w: int,
    k: int,
) -> dict[str, np.ndarray]:
    """Features of the heads of one layer: A (H, n, n) float64 → {name: (H,)}."""
    H, n, _ = A.shape
    i = np.arange(n)
    avail = (i + 1) if causal else np.full(n, n)  # keys row i may attend to
    free = avail >= 2
    F = A[:, free]  # (H, f, n)
    fi = i[free]
    out: dict[str, np.ndarray] = {}
    out["self"] = A[:, fi, fi].mean(-1)
    prev_rows = fi[fi >= 1]
    out["previous"] = A[:, prev_rows, prev_rows - 1].mean(-1)
    next_rows = fi[fi <= n - 2]
    if causal or next_rows.size == 0:
        out["next"] = np.full(H, np.nan)
    else:
        out["next"] = A[:, next_rows, next_rows + 1].mean(-1)
    out["first"] = F[:, :, 0].mean(-1)
    out["special"] = F[:, :, special].sum(-1).mean(-1) if special.any() else np.zeros(H)
    sink_cols = special.copy()
    sink_cols[0] = True
    out["sink"] = F[:, :, sink_cols].sum(-1).mean(-1)
    out["punctuation"] = F[:, :, punct].sum(-1).mean(-1) if punct.any() else np.zeros(H)
    band_mask = np.abs(i[:, None] - i[None, :]) <= w
    out["band"] = (F * band_mask[free]).sum(-1).mean(-1)
    col = F.mean(1)  # (H, n): mean column mass
    out["max_column_mass"] = col.max(-1)
    out["max_column"] = col.argmax(-1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(F > 0, F * np.log2(np.where(F > 0, F, 1.0)), 0.0).sum(-1)  # (H, f)
    out["entropy"] = ent.mean(-1)
    out["entropy_norm"] = (ent / np.log2(avail[free])).mean(-1)
    # distances to ideal patterns (mean JS distance of the rows)
    out["dist_identity"] = _one_hot_js_distance(A[:, fi, fi]).mean(-1)
    out["dist_previous"] = _one_hot_js_distance(A[:, prev_rows, prev_rows - 1]).mean(-1)
    if causal or next_rows.size == 0:
        out["dist_next"] = np.full(H, np.nan)
    else:
        out["dist_next"] = _one_hot_js_distance(A[:, next_rows, next_rows + 1]).mean(-1)
    out["dist_first"] = _one_hot_js_distance(F[:, :, 0]).mean(-1)
    U = np.where(i[None, :] < avail[:, None], 1.0 / avail[:, None], 0.0)[free]  # (f, n)
    out["dist_uniform"] = _rows_js_distance(F, np.broadcast_to(U, F.shape)).mean(-1)
    # band-plus-sparse-error fits
    out["band_error"] = np.clip(1.0 - out["band"], 0.0, 1.0)
    top = -np.sort(-col, axis=-1)[:, :k].sum(-1)
    out["vertical_error"] = np.clip(1.0 - top, 0.0, 1.0)
    out["fit_error"] = np.minimum(out["band_error"], out["vertical_error"])
    # the error the band fit leaves on uniform attention (the same budget of entries per row):
    # the yardstick that makes fit errors comparable across text lengths
    kept = np.minimum(i, w) + 1 + (0 if causal else np.minimum(n - 1 - i, w))
    baseline = float(np.mean(1.0 - np.minimum(kept, avail)[free] / avail[free]))
    out["fit_error_rel"] = out["fit_error"] / baseline if baseline > 0 else np.full(H, np.inf)
    return out


def head_features(
    att: Attention,
    *,
    tokenizer: Any = None,
    band_width: int = BAND_WIDTH,
    vertical_k: int | None = None,
) -> dict[str, np.ndarray]:
    """The features of every head of one text: ``{name: ndarray of shape (L, H)}``.

    See the module docstring for the definitions (:data:`FEATURES`).  ``vertical_k``
    defaults to the number of entries a row keeps in the band (``2w + 1``, causal
    ``w + 1``).  Weights are used in float64, layer by layer.
    """
    if not isinstance(att, Attention):
        raise InvalidInputError(f"head_features takes an Attention, got {type(att).__name__}")
    w = check_nonneg_int(band_width, "band_width")
    n = att.n_tokens
    if n < 2:
        raise InvalidInputError(
            f"head types need at least 2 tokens (a row must be able to choose), got {n}"
        )
    k = (w + 1) if att.causal else (2 * w + 1)
    if vertical_k is not None:
        k = check_positive_int(vertical_k, "vertical_k")
    k = min(k, n)
    special = np.asarray(att.special, dtype=bool)
    punct = punctuation_mask(att, tokenizer=tokenizer)
    per_layer = [
        _layer_features(att.weights[li].astype(np.float64), att.causal, special, punct, w, k)
        for li in range(att.n_layers)
    ]
    return {name: np.stack([f[name] for f in per_layer]) for name in per_layer[0]}


def label_heads(
    features: dict[str, np.ndarray],
    *,
    causal: bool = False,
    sink_threshold: float = SINK_THRESHOLD,
    self_threshold: float = SELF_THRESHOLD,
    previous_threshold: float = PREVIOUS_THRESHOLD,
    next_threshold: float = NEXT_THRESHOLD,
    broad_entropy: float = BROAD_ENTROPY,
    fit_max_error: float = FIT_MAX_ERROR,
) -> np.ndarray:
    """Apply the labelling rules (module docstring) to a features table.

    Parameters
    ----------
    features : dict of str to ndarray
        At least ``sink``, ``self``, ``previous``, ``next``, ``entropy_norm``,
        ``band_error``, ``vertical_error`` and ``fit_error_rel``, all of one shape.
    causal : bool
        Causal model: the ``next`` rule never fires.

    Returns
    -------
    ndarray of str, same shape as the features
        One of :data:`LABELS` per head.
    """
    f = {k: np.asarray(v, dtype=np.float64) for k, v in features.items()}
    shape = f["self"].shape
    labels = np.full(shape, "mixed", dtype=object)
    done = np.zeros(shape, dtype=bool)

    def rule(name: str, cond: np.ndarray) -> None:
        nonlocal done
        cond = np.nan_to_num(cond, nan=0.0).astype(bool) & ~done
        labels[cond] = name
        done = done | cond

    with np.errstate(invalid="ignore"):
        rule("sink", f["sink"] >= sink_threshold)
        rule("self", f["self"] >= self_threshold)
        rule("previous", f["previous"] >= previous_threshold)
        if not causal:
            rule("next", f["next"] >= next_threshold)
        rule("broad", f["entropy_norm"] >= broad_entropy)
        fit_ok = f["fit_error_rel"] <= fit_max_error
        rule("banded", fit_ok & (f["band_error"] <= f["vertical_error"]))
        rule("vertical", fit_ok)
    return labels.astype(str)


# --------------------------------------------------------------------- result
@dataclass(eq=False)
class HeadTypes(Result):
    """Pattern features and a type label for every head (see the module docstring).

    Attributes
    ----------
    features : dict of str to ndarray of shape (n_layers * n_heads,)
        The :data:`FEATURES` columns plus ``layer`` and ``head`` (model indices),
        layer-major (head ``h`` of the ``l``-th layer is row ``l * n_heads + h``).
        Averages over the texts when several were given.
    labels : ndarray of str, shape (n_layers, n_heads)
        One of :data:`LABELS` per head.
    fit_class : ndarray of str, shape (n_layers, n_heads)
        ``"band"`` or ``"vertical"``: which of the two fits leaves the smaller error.
    layers, heads : tuple of int
        Model layers and heads of the rows.
    causal : bool
    model : str
    band_width, vertical_k : int
        The band half-width ``w`` and the number of columns of the vertical fit.
    n_tokens : tuple of int
        Tokens of each text.
    thresholds : dict
        The thresholds the labels were made with.
    provenance : dict
        Model, package versions, creation time, settings (band width, thresholds).
    """

    features: dict[str, np.ndarray]
    labels: np.ndarray
    fit_class: np.ndarray
    layers: tuple[int, ...]
    heads: tuple[int, ...]
    causal: bool
    model: str
    band_width: int
    vertical_k: int
    n_tokens: tuple[int, ...]
    thresholds: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = "head_types"

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_heads(self) -> int:
        return len(self.heads)

    @property
    def n_texts(self) -> int:
        return len(self.n_tokens)

    def _pos(self, layer: int, head: int) -> tuple[int, int]:
        li = resolve_index(layer, max(self.layers) + 1, "layer")
        hi = resolve_index(head, max(self.heads) + 1, "head")
        if li not in self.layers or hi not in self.heads:
            raise OutOfRangeError(
                f"layer {layer}, head {head} was not measured; layers {list(self.layers)}, "
                f"heads {list(self.heads)}"
            )
        return self.layers.index(li), self.heads.index(hi)

    def feature(self, name: str) -> np.ndarray:
        """One feature as an (n_layers, n_heads) grid."""
        if name not in self.features:
            raise InvalidInputError(
                f"unknown feature {name!r}; available: {', '.join(self.features)}"
            )
        return np.asarray(self.features[name]).reshape(self.n_layers, self.n_heads)

    def label(self, layer: int, head: int) -> str:
        """The label of model layer ``layer``, head ``head`` (0-based, negatives ok)."""
        i, j = self._pos(layer, head)
        return str(self.labels[i, j])

    def counts(self) -> dict[str, int]:
        """Number of heads per label (every label of :data:`LABELS`, zeros included)."""
        return {lab: int((self.labels == lab).sum()) for lab in LABELS}

    def heads_of(self, label: str) -> list[tuple[int, int]]:
        """``[(layer, head), …]`` of the heads with this label (model indices)."""
        if label not in LABELS:
            raise InvalidInputError(f"unknown label {label!r}; labels: {', '.join(LABELS)}")
        ii, jj = np.nonzero(self.labels == label)
        return [(self.layers[i], self.heads[j]) for i, j in zip(ii.tolist(), jj.tolist())]

    def summary(self) -> Columns:
        """All columns, one row per head (layer-major): ``layer``, ``head``, ``label``,
        ``fit_class`` and the :data:`FEATURES`."""
        out = {"layer": self.features["layer"], "head": self.features["head"]}
        out["label"] = self.labels.reshape(-1)
        out["fit_class"] = self.fit_class.reshape(-1)
        out.update({k: v for k, v in self.features.items() if k not in ("layer", "head")})
        return Columns(out)

    def table(self) -> dict[str, np.ndarray]:
        """The :meth:`summary` columns (the same table under its older name)."""
        return self.summary()

    def rows(self) -> list[dict]:
        """The :meth:`summary` table as a list of dicts (one per head, layer-major)."""
        return self.summary().rows()

    def to_dict(self) -> dict:
        """Plain JSON-safe data: label counts, the (n_layers, n_heads) labels and one row per
        head (what ``attntopo heads --json`` prints of the head types)."""
        return json_safe(
            {
                "type_counts": self.counts(),
                "type_labels": self.labels.tolist(),
                "types": self.rows(),
            }
        )

    def __repr__(self) -> str:
        c = {k: v for k, v in self.counts().items() if v}
        return (
            f"HeadTypes(model={self.model!r}, layers={self.n_layers}, heads={self.n_heads}, "
            f"texts={self.n_texts}, {c})"
        )

    # --------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        arrays = {f"feature__{k}": np.asarray(v) for k, v in self.features.items()}
        arrays["labels"] = np.asarray(self.labels, dtype=str)
        arrays["fit_class"] = np.asarray(self.fit_class, dtype=str)
        meta = {
            "layer_ids": list(self.layers),
            "head_ids": list(self.heads),
            "causal": self.causal,
            "model": self.model,
            "band_width": self.band_width,
            "vertical_k": self.vertical_k,
            "n_tokens": list(self.n_tokens),
            "thresholds": self.thresholds,
            "features": list(self.features),
            "provenance": self.provenance,
        }
        return meta, arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: dict) -> "HeadTypes":
        layer_ids = tuple(int(x) for x in meta["layer_ids"])
        head_ids = tuple(int(x) for x in meta["head_ids"])
        L, H = len(layer_ids), len(head_ids)
        features = {}
        for k in meta["features"]:
            kind = "i" if k in ("layer", "head", "max_column") else "f"
            features[k] = read_array(arrays, f"feature__{k}", kind=kind, shape=(L * H,))
        return cls(
            features=features,
            labels=read_array(arrays, "labels", kind="U", shape=(L, H)).astype(str),
            fit_class=read_array(arrays, "fit_class", kind="U", shape=(L, H)).astype(str),
            layers=layer_ids,
            heads=head_ids,
            causal=bool(meta["causal"]),
            model=str(meta["model"]),
            band_width=int(meta["band_width"]),
            vertical_k=int(meta["vertical_k"]),
            n_tokens=tuple(int(x) for x in meta["n_tokens"]),
            thresholds=dict(meta.get("thresholds", {})),
            provenance=dict(meta.get("provenance", {})),
        )


def head_types(
    att: Attention | Sequence[Attention],
    *,
    tokenizer: Any = None,
    band_width: int = BAND_WIDTH,
    vertical_k: int | None = None,
    sink_threshold: float = SINK_THRESHOLD,
    self_threshold: float = SELF_THRESHOLD,
    previous_threshold: float = PREVIOUS_THRESHOLD,
    next_threshold: float = NEXT_THRESHOLD,
    broad_entropy: float = BROAD_ENTROPY,
    fit_max_error: float = FIT_MAX_ERROR,
) -> HeadTypes:
    """Measure the attention pattern of every head and label it.

    Parameters
    ----------
    att : Attention or list of Attention
        One text, or several texts of the same model (same layers and heads); features are
        averaged over the texts (each text counts once) and the labels are made from the
        averages.
    tokenizer : transformers tokenizer, optional
        Used to decode tokens when looking for punctuation (``model.tokenizer``); without
        it the text spans of the token offsets are used.
    band_width : int, default :data:`BAND_WIDTH`
        Half-width ``w`` of the band ``|i - j| <= w``.
    vertical_k : int, optional
        Columns kept by the vertical fit; default the entries a row keeps in the band
        (``2w + 1``, causal ``w + 1``).
    sink_threshold, self_threshold, previous_threshold, next_threshold, broad_entropy, fit_max_error
        Label thresholds (module constants by default).

    Returns
    -------
    HeadTypes

    Examples
    --------
    >>> import attntopo as at
    >>> m = at.load_model("minilm")
    >>> types = at.head_types(m.attention("The cat sat on the mat."), tokenizer=m.tokenizer)
    >>> types.label(0, 3), types.counts()["sink"]            # doctest: +SKIP
    """
    atts = as_attentions(att)
    first = atts[0]
    for a in atts[1:]:
        if a.shape[:2] != first.shape[:2] or a.layers != first.layers or a.heads != first.heads:
            raise InvalidInputError(
                "all attentions must come from the same model and the same layers/heads; "
                f"got {first.shape[:2]} and {a.shape[:2]}"
            )
        if a.causal != first.causal:
            raise InvalidInputError(
                "all attentions must be of one model (causal and bidirectional mixed)"
            )
    w = check_nonneg_int(band_width, "band_width")
    per_text = [
        head_features(a, tokenizer=tokenizer, band_width=w, vertical_k=vertical_k) for a in atts
    ]
    thresholds = {
        "sink_threshold": float(sink_threshold),
        "self_threshold": float(self_threshold),
        "previous_threshold": float(previous_threshold),
        "next_threshold": float(next_threshold),
        "broad_entropy": float(broad_entropy),
        "fit_max_error": float(fit_max_error),
    }
    return _assemble(
        per_text,
        layers=tuple(first.layers),
        heads=tuple(first.heads),
        causal=first.causal,
        model=first.model,
        n_tokens=tuple(a.n_tokens for a in atts),
        band_width=w,
        vertical_k=vertical_k,
        thresholds=thresholds,
        model_info={"name": first.model},
    )


def _assemble(
    per_text: list[dict[str, np.ndarray]],
    *,
    layers: tuple[int, ...],
    heads: tuple[int, ...],
    causal: bool,
    model: str,
    n_tokens: tuple[int, ...],
    band_width: int,
    vertical_k: int | None,
    thresholds: dict | None = None,
    model_info: dict | None = None,
    settings: dict | None = None,
) -> HeadTypes:
    """HeadTypes from per-text :func:`head_features` (averaged over texts, then labelled)."""
    if thresholds is None:
        thresholds = {
            "sink_threshold": SINK_THRESHOLD,
            "self_threshold": SELF_THRESHOLD,
            "previous_threshold": PREVIOUS_THRESHOLD,
            "next_threshold": NEXT_THRESHOLD,
            "broad_entropy": BROAD_ENTROPY,
            "fit_max_error": FIT_MAX_ERROR,
        }
    feats = {}
    for name in per_text[0]:
        stack = np.stack([p[name] for p in per_text])
        if name == "max_column":
            feats[name] = stack[0] if len(per_text) == 1 else np.full(stack.shape[1:], -1.0)
        else:
            feats[name] = stack.mean(0)
    labels = label_heads(feats, causal=causal, **thresholds)
    fit_class = np.where(feats["band_error"] <= feats["vertical_error"], "band", "vertical")
    L, H = len(layers), len(heads)
    table: dict[str, np.ndarray] = {
        "layer": np.repeat(np.asarray(layers, dtype=np.int64), H),
        "head": np.tile(np.asarray(heads, dtype=np.int64), L),
    }
    for name in FEATURES:
        v = feats[name].reshape(-1)
        table[name] = v.astype(np.int64) if name == "max_column" else v
    w = band_width
    k = (w + 1 if causal else 2 * w + 1) if vertical_k is None else int(vertical_k)
    return HeadTypes(
        features=table,
        labels=labels,
        fit_class=fit_class.astype(str),
        layers=layers,
        heads=heads,
        causal=causal,
        model=model,
        band_width=w,
        vertical_k=min(k, min(n_tokens)),
        n_tokens=n_tokens,
        thresholds=dict(thresholds),
        provenance=make_provenance(
            model_info or {"name": model},
            settings={**(settings or {}), "band_width": w, "vertical_k": vertical_k, **thresholds},
        ),
    )
