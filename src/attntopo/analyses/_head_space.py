"""Head space: every attention head of a model is a point; how far apart are they?

The founding paper defines the distance between two heads ``a`` and ``b`` on a text as the
sum over the query tokens ``i`` of the Jensen–Shannon distance between the distributions
the two heads give token ``i``:

.. math:: d(a, b) = \\sum_i \\mathrm{JS}(A_a[i, :], A_b[i, :])

(after Clark et al., *What does BERT look at?*, who cluster heads with a JS head
distance).  Here every head of every layer is one point: head ``h`` of layer ``l`` is index
``l · H + h`` of an ``(L·H, L·H)`` matrix, and JS is taken with log base 2.

The heads notebook (``topology_of_attention_heads``) computed something narrower, which
``paper_compat="notebook"`` reproduces: scipy's JS distance (natural log) of the raw rows,
only between heads of the same layer, summed over the query tokens into one ``(H, H)``
matrix per layer, and those matrices summed over the layers: an ``H``-point space whose
point ``h`` is "head ``h`` of every layer".  A natural-log distance is the base-2 one times
``sqrt(ln 2)``: attntopo's values are the notebook's × ``1 / sqrt(ln 2) ≈ 1.2011``.

* :func:`head_distances` — that matrix for one text (the paper's sum, or with
  ``normalize=True`` the mean over tokens, comparable across lengths and tokenizers), or
  for several texts (``reduce="sum" | "mean"``, or ``"none"`` for the stack).  A sum of
  metrics over tokens is a (pseudo)metric: symmetric, zero diagonal, triangle inequality.
* :func:`head_space` → :class:`HeadSpace`: that matrix for a model on some texts, its
  persistence diagram, single-linkage dendrogram, a 2-D classical MDS embedding, head
  clusters at a scale, a redundancy report, and the heads' types
  (:mod:`attntopo.analyses._head_types`).

Two models' head spaces compared: :mod:`attntopo.analyses._model_comparison`.

Speed: for one query token the ``L·H`` rows form an ``(L·H, n)`` stack and all pairs of
heads are done at once by :func:`attntopo.distances.row_distances` (the JS kernel of
:func:`~attntopo.distances.token_distances`: float64, tiled, chunked, cancellation-free
for near-identical rows), 16 query tokens per call; for causal models the keys a chunk
cannot see are skipped.  The work is ``n² (L·H)² / 2`` logarithms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Sequence

import numpy as np
import torch

from .._mds import classical_mds
from .._progress import NO_PROGRESS, ProgressOption, Reporter, make_reporter, reports
from .._validation import (
    check_bool,
    check_choice,
    check_maxdim,
    check_metric,
    check_paper_compat,
    check_scale,
)
from ..attention import Attention, resolve_index
from ..constants import DEFAULT_MODEL
from ..distances import row_distances
from ..errors import InvalidInputError, OutOfRangeError
from ..io import json_float, json_safe
from ..topology import Diagram, pack_diagrams, persistence, unpack_diagrams
from ..topology.complex import clusters_at
from ..topology.complex import linkage as _single_linkage
from ._head_types import BAND_WIDTH, HeadTypes, head_features
from ._head_types import _assemble as _assemble_types
from ._inputs import texts_or_attentions
from ._provenance import make_provenance, model_info, stored_paper_mode
from ._result import Columns, Result, nest, read_array, unnest

__all__ = ["HeadSpace", "head_distances", "head_space", "head_labels", "REDUCTIONS"]

#: Ways of combining several texts' head-distance matrices.
REDUCTIONS = ("sum", "mean", "none")

#: The founding paper's head-space recipe (``paper_compat=``): its heads notebook only.
HEAD_PAPER_MODES = ("notebook",)
_HEAD_PAPER_HINT = (
    "the printed Listing 1 defines token distances only; the heads notebook is 'notebook'"
)

_TOKEN_CHUNK = 16  # query tokens per row_distances call (causal: skipped keys per chunk)
_TEXT_BATCH = 8  # texts per forward pass in head_space (bounds the memory of attentions)


# ----------------------------------------------------------------- head distances
def head_labels(layer_ids: Sequence[int], head_ids: Sequence[int]) -> list[str]:
    """Labels ``"L{l}H{h}"`` of the heads, layer-major (the order of the head-distance matrix)."""
    return [f"L{li}H{h}" for li in layer_ids for h in head_ids]


def _weights(att: Any) -> tuple[np.ndarray, bool]:
    """(L, H, n, n) weights and causal flag of an Attention or an array."""
    if isinstance(att, Attention):
        return att.weights, att.causal
    if isinstance(att, torch.Tensor):
        att = att.detach().cpu().numpy()
    try:
        w = np.asarray(att)
    except (TypeError, ValueError):
        raise InvalidInputError(
            "attention must be an Attention or an array of shape (L, H, n, n)"
        ) from None
    if w.dtype == object or w.dtype.kind not in "fiu":
        raise InvalidInputError(
            "attention must be an Attention or a real array "
            f"of shape (L, H, n, n); got dtype {w.dtype}"
        )
    if w.ndim != 4 or w.shape[2] != w.shape[3]:
        raise InvalidInputError(f"attention weights must have shape (L, H, n, n), got {w.shape}")
    n = w.shape[-1]
    causal = bool(n > 1 and np.all(np.triu(w.reshape(-1, n, n)[0], 1) == 0))
    return w, causal


def _one_text(
    w: np.ndarray,
    metric: str,
    n_jobs: int | None,
    notebook: bool = False,
    reporter: Reporter = NO_PROGRESS,
) -> np.ndarray:
    """Sum over query tokens of the distances between all heads' rows: (L·H, L·H).

    ``notebook``: the heads notebook's matrix instead, (H, H): natural-log JS between the
    heads of one layer only, summed over query tokens and then over layers.  ``reporter``
    advances by the query tokens of each chunk done.
    """
    L, H, n, _ = w.shape
    t = torch.from_numpy(np.ascontiguousarray(w))
    if notebook:
        x, base, N = t.permute(2, 0, 1, 3), math.e, H  # (q, L, H, keys): rows of one layer
    else:
        x, base, N = t.reshape(L * H, n, n).permute(1, 0, 2), 2.0, L * H  # (q, N, keys)
    total = np.zeros((N, N), dtype=np.float64)
    for a in range(0, n, _TOKEN_CHUNK):
        b = min(n, a + _TOKEN_CHUNK)
        chunk = x[a:b].contiguous()  # rows of the heads for query tokens a..b-1
        D = row_distances(chunk, metric=metric, base=base, n_jobs=n_jobs)  # (b - a, [L,] N, N)
        total += D.reshape(-1, N, N).sum(0)
        reporter.advance(b - a)
    return total


def head_distances(
    att: Attention | np.ndarray | Sequence[Attention | np.ndarray],
    *,
    normalize: bool = False,
    metric: str = "jensen_shannon",
    reduce: str = "sum",
    paper_compat: Literal["notebook"] | bool | None = False,
    n_jobs: int | None = None,
    progress: ProgressOption = False,
) -> np.ndarray:
    """Distances between all attention heads of a model on a text (or texts).

    Parameters
    ----------
    att : Attention or array of shape (L, H, n, n), or a list of them
        One text, or several texts of one model (same ``L`` and ``H``; lengths may
        differ).  Rows must be probability distributions.
    normalize : bool, default False
        ``False``: the paper's sum over the ``n`` query tokens (grows with length).
        ``True``: the mean over the query tokens, in ``[0, 1]`` for Jensen–Shannon,
        comparable across lengths, texts and tokenizers.
    metric : str, default "jensen_shannon"
        Row distance (:data:`attntopo.distances.METRICS`); JS with log base 2.
    reduce : {"sum", "mean", "none"}, default "sum"
        For a list of texts: the sum or the mean of the per-text matrices, or ``"none"``
        for the stack of shape (n_texts, L·H, L·H).  Ignored for one text.
    paper_compat : {False, None, "notebook"}, default False
        ``"notebook"``: the founding paper's heads notebook (``topology_of_attention_heads``)
        instead: for each layer ``l`` and heads ``h, h'`` of that layer,
        ``Σ_i scipy.spatial.distance.jensenshannon(A[l, h, i], A[l, h', i])`` (the raw rows,
        no second softmax, natural log, scipy's distance = square root of the divergence),
        summed over the layers into one ``(H, H)`` matrix.  Needs ``normalize=False`` (it
        sums over tokens) and ``metric="jensen_shannon"``.  The notebook computes in float32;
        this in float64.
    n_jobs : int, optional
        Worker threads (default: torch's thread count).
    progress : bool, callable or None, default False
        Report the query tokens done (stage ``"head distances"``): ``True`` a bar, ``None`` a
        bar on a terminal or in Jupyter, or a callback ``callback(done, total, stage)`` (see
        :mod:`attntopo._progress`).

    Returns
    -------
    ndarray of shape (L·H, L·H), float64 (or (n_texts, L·H, L·H) with ``reduce="none"``)
        ``D[l·H + h, l'·H + h']`` is the distance between head ``h`` of layer ``l`` and head
        ``h'`` of layer ``l'`` (positions in the attention's ``layers``/``heads``).
        Exactly symmetric with a zero diagonal; a metric on the heads.  With
        ``paper_compat="notebook"``: shape (H, H) (or (n_texts, H, H)), ``D[h, h']`` summed
        over the layers.

    Examples
    --------
    >>> import attntopo as at
    >>> att = at.load_model("minilm").attention("The cat sat on the mat.")
    >>> D = at.head_distances(att, normalize=True)        # (72, 72)
    """
    metric = check_metric(metric)
    normalize = check_bool(normalize, "normalize")
    check_choice(reduce, "reduce", REDUCTIONS)
    notebook = _check_head_paper_mode(paper_compat, metric, normalize) is not None
    single = isinstance(att, (Attention, np.ndarray, torch.Tensor))
    items = [att] if single else list(att)
    if not items:
        raise InvalidInputError("no attention given: pass an Attention or a non-empty list of them")
    ws = [_weights(a)[0] for a in items]
    shape = ws[0].shape[:2]
    for k, w in enumerate(ws[1:], 1):
        if w.shape[:2] != shape:
            raise InvalidInputError(
                f"all texts must have the same layers × heads: text 0 has {shape[0]}×{shape[1]}, "
                f"text {k} has {w.shape[0]}×{w.shape[1]}"
            )
    for k, a in enumerate(items[1:], 1):
        if isinstance(a, Attention) and isinstance(items[0], Attention):
            if a.layers != items[0].layers or a.heads != items[0].heads:
                raise InvalidInputError(f"text {k} holds other layers/heads than text 0")
    mats = []
    with make_reporter(
        progress, total=sum(w.shape[-1] for w in ws), description="head distances"
    ) as reporter:
        reporter.stage("head distances")
        for w in ws:
            D = _one_text(w, metric, n_jobs, notebook, reporter)
            if normalize:
                D /= w.shape[-1]
            mats.append(D)
    if single:
        return mats[0]
    stack = np.stack(mats)
    if reduce == "none":
        return stack
    return stack.sum(0) if reduce == "sum" else stack.mean(0)


def _check_head_paper_mode(paper_compat: Any, metric: str, normalize: bool) -> str | None:
    """The checked head-space paper mode (``"notebook"`` or None) and its requirements."""
    mode = check_paper_compat(paper_compat, modes=HEAD_PAPER_MODES, hint=_HEAD_PAPER_HINT)
    if mode and metric != "jensen_shannon":
        raise InvalidInputError(
            "paper_compat='notebook' reproduces the heads notebook's Jensen–Shannon distance "
            f"only; use metric='jensen_shannon' (got metric={metric!r})"
        )
    if mode and normalize:
        raise InvalidInputError(
            "paper_compat='notebook' sums over the tokens as the heads notebook does: "
            "use normalize=False"
        )
    return mode


# ---------------------------------------------------------------------- result
def _check_scale_arg(scale: Any) -> float:
    return check_scale(scale, "scale", unit="head-distance units")


@dataclass(eq=False)
class HeadSpace(Result):
    """The heads of a model as a finite metric space, and what its topology says.

    Build it with :func:`head_space`.

    Attributes
    ----------
    distances : ndarray of shape (N, N), float64
        Head distances (N = n_layers · n_heads, layer-major; see :func:`head_distances`).
    labels : list of str
        ``"L{l}H{h}"`` per head, in matrix order.
    layers, heads : tuple of int
        Model layers and heads.
    diagram : Diagram
        Vietoris–Rips persistence of the head space (H0 … maxdim).
    linkage : ndarray of shape (N - 1, 4)
        Single-linkage hierarchy (SciPy format); its merge heights are the finite H0 deaths.
    embedding : ndarray of shape (N, 2)
        Classical MDS coordinates (:func:`classical_mds`).
    eigenvalues : ndarray of shape (N,)
        MDS eigenvalues, largest first.
    metric, normalize, reduce : settings of :func:`head_distances`.
    model : str
    causal : bool
    n_tokens : tuple of int
        Tokens of each text.
    texts : list of str
    per_text : ndarray of shape (n_texts, N, N) or None
        Each text's matrix (kept for resampling, e.g. :func:`compare_models`).
    types : HeadTypes or None
        Head types measured on the same texts.
    paper_compat : False or "notebook"
        ``"notebook"``: the heads notebook's space (see :func:`head_distances`): one point
        per head index ``h`` (summed over the layers), N = n_heads, labels ``"H{h}"``,
        :attr:`layers_summed` True; no head types (they are per layer and head).
    provenance : dict
    """

    distances: np.ndarray
    layers: tuple[int, ...]
    heads: tuple[int, ...]
    diagram: Diagram
    linkage: np.ndarray
    embedding: np.ndarray
    eigenvalues: np.ndarray
    metric: str
    normalize: bool
    reduce: str
    model: str
    causal: bool
    n_tokens: tuple[int, ...]
    texts: list[str] = field(default_factory=list)
    per_text: np.ndarray | None = None
    types: HeadTypes | None = None
    paper_compat: str | bool = False
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = "head_space"

    # ---------------------------------------------------------------- access
    @property
    def layers_summed(self) -> bool:
        """True for the heads notebook's space: point ``h`` is head ``h`` of every layer."""
        return self.paper_compat == "notebook"

    @property
    def labels(self) -> list[str]:
        if self.layers_summed:
            return [f"H{h}" for h in self.heads]
        return head_labels(self.layers, self.heads)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_heads(self) -> int:
        return len(self.heads)

    @property
    def n_points(self) -> int:
        """Number of heads (points of the head space)."""
        return self.distances.shape[0]

    @property
    def n_texts(self) -> int:
        return len(self.n_tokens)

    @property
    def maxdim(self) -> int:
        return self.diagram.maxdim

    @property
    def layer_of(self) -> np.ndarray:
        """int ndarray of shape (N,): the model layer of each point (-1: all layers summed,
        :attr:`layers_summed`)."""
        if self.layers_summed:
            return np.full(self.n_heads, -1, dtype=np.int64)
        return np.repeat(np.asarray(self.layers, dtype=np.int64), self.n_heads)

    @property
    def head_of(self) -> np.ndarray:
        """int ndarray of shape (N,): the model head (within its layer) of each point."""
        return np.tile(
            np.asarray(self.heads, dtype=np.int64), 1 if self.layers_summed else self.n_layers
        )

    def index(self, layer: int, head: int) -> int:
        """Row of model layer ``layer``, head ``head`` (0-based, negatives ok) in the matrix
        (with :attr:`layers_summed`, every layer's head ``head`` is the same point)."""
        li = resolve_index(layer, max(self.layers) + 1, "layer")
        hi = resolve_index(head, max(self.heads) + 1, "head")
        if li not in self.layers or hi not in self.heads:
            raise OutOfRangeError(f"layer {layer}, head {head} is not in this head space")
        if self.layers_summed:
            return self.heads.index(hi)
        return self.layers.index(li) * self.n_heads + self.heads.index(hi)

    def distance(self, a: tuple[int, int], b: tuple[int, int]) -> float:
        """Distance between heads ``a = (layer, head)`` and ``b = (layer, head)``."""
        return float(self.distances[self.index(*a), self.index(*b)])

    def nearest(self, layer: int, head: int, *, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` heads closest to one head: ``[(label, distance), …]``, closest first."""
        i = self.index(layer, head)
        d = self.distances[i].copy()
        d[i] = np.inf
        order = np.argsort(d, kind="stable")[: max(0, int(k))]
        labels = self.labels
        return [(labels[j], float(d[j])) for j in order if np.isfinite(d[j])]

    def clusters(self, scale: float) -> np.ndarray:
        """Head clusters at ``scale``: single-linkage clusters (connected components of
        the graph joining heads at distance ``<= scale``).

        Returns an int ndarray of shape (N,): the cluster label of each head (matrix order),
        clusters numbered in order of their first head.  Their number equals
        ``diagram.betti(scale)[0]``.  The groups themselves, as lists of head labels, are
        :meth:`cluster_groups`.
        """
        return clusters_at(self.distances, _check_scale_arg(scale))

    def cluster_groups(self, scale: float) -> list[list[str]]:
        """The :meth:`clusters` at ``scale`` as lists of head labels (largest first)."""
        lab = self.clusters(scale)
        labels = self.labels
        groups = [[labels[i] for i in np.flatnonzero(lab == c)] for c in np.unique(lab)]
        return sorted(groups, key=lambda g: -len(g))

    def default_scale(self) -> float:
        """A scale for :meth:`redundancy`: the median nearest-neighbour distance of the heads."""
        d = self.distances.copy()
        np.fill_diagonal(d, np.inf)
        nn = d.min(1)
        nn = nn[np.isfinite(nn)]
        return float(np.median(nn)) if nn.size else 0.0

    def redundancy(self, *, scale: float | None = None, method: str = "complete") -> list[dict]:
        """Groups of heads that behave alike: within ``scale`` of each other.

        Parameters
        ----------
        scale : float, optional
            Scale in head-distance units; default :meth:`default_scale` (half of the heads
            then have a neighbour within ``scale``).
        method : {"complete", "single"}
            ``"complete"``: complete-linkage clusters cut at ``scale``, so *every* pair in a
            group is within ``scale`` (truly interchangeable heads).  ``"single"``: the
            single-linkage clusters of :meth:`clusters` (chains of close heads).

        Returns
        -------
        list of dict
            Groups of at least two heads, largest first (then tightest): ``heads`` (labels),
            ``indices`` (matrix rows), ``layers``, ``size``, ``mean_distance`` (mean over the
            pairs in the group), ``max_distance`` (diameter) and ``scale``.
        """
        from scipy.cluster.hierarchy import fcluster
        from scipy.cluster.hierarchy import linkage as sc_linkage
        from scipy.spatial.distance import squareform

        scale = self.default_scale() if scale is None else _check_scale_arg(scale)
        if method not in ("complete", "single"):
            raise InvalidInputError(f"method must be 'complete' or 'single', got {method!r}")
        N = self.n_points
        if N < 2:
            return []
        if method == "single":
            lab = self.clusters(scale)
        else:
            Z = sc_linkage(squareform(self.distances, checks=False), method="complete")
            lab = fcluster(Z, t=scale, criterion="distance")
        labels = self.labels
        layer_of = self.layer_of
        out = []
        for c in np.unique(lab):
            idx = np.flatnonzero(lab == c)
            if idx.size < 2:
                continue
            sub = self.distances[np.ix_(idx, idx)]
            iu = np.triu_indices(idx.size, 1)
            out.append(
                {
                    "heads": [labels[i] for i in idx],
                    "indices": idx.tolist(),
                    "layers": list(self.layers)
                    if self.layers_summed
                    else sorted(set(layer_of[idx].tolist())),
                    "size": int(idx.size),
                    "mean_distance": float(sub[iu].mean()),
                    "max_distance": float(sub[iu].max()),
                    "scale": scale,
                }
            )
        return sorted(out, key=lambda g: (-g["size"], g["mean_distance"], g["indices"][0]))

    def dendrogram(self) -> dict:
        """SciPy's ``dendrogram(..., no_plot=True)`` data
        of :attr:`linkage`, head labels as leaves."""
        from scipy.cluster.hierarchy import dendrogram as sc_dendrogram

        out = sc_dendrogram(self.linkage, no_plot=True, labels=self.labels)
        out["linkage"] = self.linkage
        return out

    def leaf_order(self) -> np.ndarray:
        """int ndarray of shape (N,): the heads in dendrogram order (close heads adjacent)."""
        from scipy.cluster.hierarchy import leaves_list

        if self.n_points < 2:
            return np.arange(self.n_points)
        return leaves_list(self.linkage)

    def mds_explained(self) -> float:
        """Share of the positive MDS eigenvalue mass in the 2-D embedding (1: exact picture)."""
        pos = np.clip(self.eigenvalues, 0.0, None)
        total = pos.sum()
        return float(pos[: self.embedding.shape[1]].sum() / total) if total > 0 else 1.0

    def layer_distances(self) -> np.ndarray:
        """(n_layers, n_layers) mean head distance between the heads of two layers
        (diagonal: mean over distinct pairs within a layer)."""
        if self.layers_summed:
            raise InvalidInputError(
                "this head space sums the layers (paper_compat='notebook'): it has no distances "
                "between layers"
            )
        L, H = self.n_layers, self.n_heads
        D = self.distances.reshape(L, H, L, H)
        out = D.mean(axis=(1, 3))
        if H > 1:
            for li in range(L):
                out[li, li] = D[li, :, li, :].sum() / (H * (H - 1))
        return out

    def summary(self) -> Columns:
        """One row per head (matrix order): ``layer``, ``head``, ``label`` (``"L{l}H{h}"``),
        ``mds_x``, ``mds_y`` (:attr:`embedding`), ``nearest`` (label of the closest other
        head, ``""`` for a single head) and ``nearest_distance`` (``inf`` for a single head),
        and ``type`` (the head-type label) when :attr:`types` were measured; sizes, distance
        statistics and diagram counts are :meth:`overview`.
        """
        labels = np.array(self.labels)
        d = self.distances.copy()
        np.fill_diagonal(d, np.inf)
        N = self.n_points
        nn = d.argmin(1) if N > 1 else np.zeros(N, dtype=np.int64)
        cols: dict[str, np.ndarray] = {
            "layer": self.layer_of,
            "head": self.head_of,
            "label": labels,
            "mds_x": self.embedding[:, 0],
            "mds_y": self.embedding[:, 1],
            "nearest": labels[nn] if N > 1 else np.full(N, ""),
            "nearest_distance": d[np.arange(N), nn] if N > 1 else np.full(N, np.inf),
        }
        if self.types is not None:
            cols["type"] = self.types.labels.reshape(-1)
        return Columns(cols)

    def overview(self) -> dict:
        """Plain-data overview: sizes, distance statistics, diagram counts, MDS share."""
        iu = np.triu_indices(self.n_points, 1)
        d = self.distances[iu]
        s = self.diagram.summary()
        out = {
            "model": self.model,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "n_points": self.n_points,
            "n_texts": self.n_texts,
            "n_tokens": list(self.n_tokens),
            "metric": self.metric,
            "normalize": self.normalize,
            "reduce": self.reduce,
            "paper_compat": self.paper_compat,
            "distance_min": float(d.min()) if d.size else 0.0,
            "distance_median": float(np.median(d)) if d.size else 0.0,
            "distance_max": float(d.max()) if d.size else 0.0,
            "nearest_neighbour_median": self.default_scale(),
            "mds_explained": self.mds_explained(),
            "diagram": {int(k): v for k, v in s.items()},
        }
        if self.types is not None:
            out["type_counts"] = self.types.counts()
        return out

    def __repr__(self) -> str:
        return (
            f"HeadSpace(model={self.model!r}, heads={self.n_layers}×{self.n_heads}, "
            f"texts={self.n_texts}, metric={self.metric!r}, normalize={self.normalize}, "
            f"maxdim={self.maxdim}"
            f"{f', paper_compat={self.paper_compat!r}' if self.paper_compat else ''})"
        )

    def to_dict(self, *, k: int = 0, scale: float | None = None) -> dict:
        """Plain JSON-safe data: the :meth:`overview`, the groups of :meth:`redundancy` at ``scale``
        (the ``k`` largest; 0: all) and the head types (what ``attntopo heads --json`` prints
        for each model)."""
        groups = self.redundancy(scale=scale)
        doc = {
            "model": self.model,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "summary": self.overview(),
            "redundancy": groups if k == 0 else groups[:k],
            "n_redundant_groups": len(groups),
        }
        if self.types is not None:
            doc.update(self.types.to_dict())
        return json_safe(doc)

    # --------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        arrays: dict[str, np.ndarray] = {
            "distances": self.distances,
            "linkage": self.linkage,
            "embedding": self.embedding,
            "eigenvalues": self.eigenvalues,
        }
        arrays.update(pack_diagrams(self.diagram, prefix="dgm_"))
        if self.per_text is not None:
            arrays["per_text"] = self.per_text
        meta = {
            "layer_ids": list(self.layers),
            "head_ids": list(self.heads),
            "metric": self.metric,
            "normalize": self.normalize,
            "reduce": self.reduce,
            "model": self.model,
            "causal": self.causal,
            "n_tokens": list(self.n_tokens),
            "texts": list(self.texts),
            "diagram": self.diagram.to_dict(),
            "paper_compat": self.paper_compat,
            "provenance": self.provenance,
        }
        nest(meta, arrays, "types", self.types)
        return meta, arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: dict) -> "HeadSpace":
        layer_ids = tuple(int(x) for x in meta["layer_ids"])
        head_ids = tuple(int(x) for x in meta["head_ids"])
        paper = stored_paper_mode(meta.get("paper_compat", False))
        N = len(head_ids) if paper == "notebook" else len(layer_ids) * len(head_ids)
        n_tokens = tuple(int(x) for x in meta["n_tokens"])
        info = meta["diagram"]
        diagram = unpack_diagrams(
            arrays,
            prefix="dgm_",
            maxdim=check_maxdim(info["maxdim"], hi=None),
            shape=(),
            threshold=json_float(info.get("threshold", "inf")),
            engine=info.get("engine", "giotto"),
            filtration=info.get("filtration", "vietoris_rips"),
        )
        return cls(
            distances=read_array(
                arrays, "distances", kind="f", shape=(N, N), finite=True, nonneg=True
            ),
            layers=layer_ids,
            heads=head_ids,
            diagram=diagram,
            linkage=read_array(arrays, "linkage", kind="f", shape=(max(N - 1, 0), 4)),
            embedding=read_array(arrays, "embedding", kind="f", shape=(N, None), finite=True),
            eigenvalues=read_array(arrays, "eigenvalues", kind="f", shape=(N,)),
            metric=str(meta["metric"]),
            normalize=bool(meta["normalize"]),
            reduce=str(meta["reduce"]),
            model=str(meta["model"]),
            causal=bool(meta["causal"]),
            n_tokens=n_tokens,
            texts=list(meta.get("texts", [])),
            per_text=read_array(
                arrays,
                "per_text",
                kind="f",
                shape=(len(n_tokens), N, N),
                finite=True,
                nonneg=True,
                optional=True,
            ),
            types=unnest(meta, arrays, "types", HeadTypes),
            paper_compat=paper,
            provenance=dict(meta.get("provenance", {})),
        )


# ------------------------------------------------------------------ building
def _build(
    D: np.ndarray,
    *,
    layers: tuple[int, ...],
    heads: tuple[int, ...],
    maxdim: int,
    engine: str | None,
    **kw: Any,
) -> HeadSpace:
    if D.shape[0] >= 2:
        Z = _single_linkage(D)
    else:
        Z = np.zeros((0, 4))
    X, vals = classical_mds(D, 2)
    dgm = persistence(D, maxdim=maxdim, engine=engine)
    return HeadSpace(
        distances=D,
        layers=layers,
        heads=heads,
        diagram=dgm,
        linkage=Z,
        embedding=X,
        eigenvalues=vals,
        **kw,
    )


@reports("head space")  # progress arrives as an open Reporter
def head_space(
    texts: str | Attention | Sequence[str] | Sequence[Attention],
    model: Any = DEFAULT_MODEL,
    *,
    normalize: bool | None = None,
    maxdim: int = 1,
    metric: str = "jensen_shannon",
    reduce: str = "mean",
    drop_special: bool = False,
    truncate: bool = False,
    engine: str | None = None,
    types: bool = True,
    band_width: int = BAND_WIDTH,
    keep_per_text: bool = True,
    paper_compat: Literal["notebook"] | bool | None = False,
    n_jobs: int | None = None,
    progress: ProgressOption = None,
) -> HeadSpace:
    """The head space of a model on some texts: distances, topology, embedding, types.

    Parameters
    ----------
    texts : str, list of str, Attention or list of Attention
        Texts (run through ``model`` in batches) or attentions of one model.
    model : str or AttentionModel, default "minilm"
        Alias, hub id, folder or loaded model (ignored for Attention input).
    normalize : bool, optional
        Mean over tokens instead of the sum (see :func:`head_distances`); keep it on to
        compare texts of different length or models with different tokenizers.  Default
        True (False with ``paper_compat="notebook"``, which sums).
    maxdim : {0, 1, 2}, default 1
        Highest homology dimension of the head-space diagram.
    metric : str, default "jensen_shannon"
    reduce : {"mean", "sum"}, default "mean"
        How several texts' matrices are combined.
    drop_special, truncate : bool
        As in :meth:`AttentionModel.attention` (text input only).
    engine : str, optional
        Persistence engine.
    types : bool, default True
        Also measure the head types (:func:`attntopo.head_types`) on the same texts.
    band_width : int
        Band half-width for the head types.
    keep_per_text : bool, default True
        Keep each text's matrix in :attr:`HeadSpace.per_text` (needed by
        :func:`compare_models`; ``N² · 8`` bytes per text).
    paper_compat : {False, None, "notebook"}, default False
        ``"notebook"``: the founding paper's heads notebook (``topology_of_attention_heads``):
        each text's matrix is :func:`head_distances` with ``paper_compat="notebook"`` (raw
        rows, natural-log JS distance, within layers, summed over tokens and layers), so the
        space has one point per head index (``n_heads`` points, labels ``"H{h}"``).  Texts
        are combined by ``reduce`` (one text: the notebook's matrix).  Its persistence uses
        attntopo's engines (the notebook: gudhi's Rips complex, the same diagrams).  Head
        types are not measured.
    n_jobs : int, optional
        Threads for the head distances.
    progress : bool, callable or None, default None
        One progress bar for the whole run: ``None`` a bar on a terminal or in Jupyter,
        ``True``/``False``, or a callback ``callback(done, total, stage)`` (see
        :mod:`attntopo._progress`).  Units: one per text and model layer in ``"attention"``
        (:meth:`~attntopo.models.AttentionModel.progress_units`), one per text in ``"head
        types"``, one per query token in ``"head distances"`` (added as each batch of texts
        arrives), one for ``"head space"`` (persistence, clustering, embedding).

    Returns
    -------
    HeadSpace
    """
    paper = check_paper_compat(paper_compat, modes=HEAD_PAPER_MODES, hint=_HEAD_PAPER_HINT)
    normalize = (paper is None) if normalize is None else check_bool(normalize, "normalize")
    maxdim = check_maxdim(maxdim)
    metric = check_metric(metric)
    _check_head_paper_mode(paper, metric, normalize)
    types = types and paper is None  # head types are per layer and head: not in a summed space
    check_choice(reduce, "reduce", ("sum", "mean"))
    items, is_att, m = texts_or_attentions(texts, model, progress)
    # the forward passes layer by layer (m.progress_units); the space
    progress.add_total((0 if is_att else m.progress_units(len(items))) + 1)
    per_text: list[np.ndarray] = []
    feats: list[dict[str, np.ndarray]] = []
    n_tokens: list[int] = []
    seen_texts: list[str] = []
    ref: Attention | None = None
    tokenizer = None if m is None else m.tokenizer

    def consume(batch: list[Attention]) -> None:
        nonlocal ref
        progress.add_total(sum(a.n_tokens for a in batch) + (len(batch) if types else 0))
        for a in batch:
            if ref is None:
                ref = a
            elif a.shape[:2] != ref.shape[:2] or a.layers != ref.layers or a.heads != ref.heads:
                raise InvalidInputError(
                    "all attentions must come from one model with the same layers and heads"
                )
            D = head_distances(
                a,
                normalize=normalize,
                metric=metric,
                paper_compat=paper,
                n_jobs=n_jobs,
                progress=progress,
            )
            per_text.append(D)
            n_tokens.append(a.n_tokens)
            seen_texts.append(a.text)
            if types:  # keep only the features, not the attention (memory)
                progress.stage("head types")
                feats.append(head_features(a, tokenizer=tokenizer, band_width=band_width))
                progress.advance()

    if is_att:
        atts = [a.drop_special() if (drop_special and not a.special_dropped) else a for a in items]
        consume(atts)
    else:
        for s in range(0, len(items), _TEXT_BATCH):
            chunk = m.attention(
                items[s : s + _TEXT_BATCH],
                drop_special=drop_special,
                truncate=truncate,
                progress=progress,
            )
            consume(list(chunk))
    assert ref is not None
    stack = np.stack(per_text)
    D = stack.sum(0) if reduce == "sum" else stack.mean(0)
    info = model_info(m, ref.model)
    attention_settings = {"drop_special": drop_special, "truncate": truncate}
    ht = None
    if types:
        ht = _assemble_types(
            feats,
            layers=tuple(ref.layers),
            heads=tuple(ref.heads),
            causal=ref.causal,
            model=ref.model,
            n_tokens=tuple(n_tokens),
            band_width=band_width,
            vertical_k=None,
            model_info=info,
            settings=attention_settings,
        )
    prov = make_provenance(
        info,
        settings={
            "metric": metric,
            "engine": engine,
            "normalize": normalize,
            "reduce": reduce,
            "paper_compat": stored_paper_mode(paper),
            **attention_settings,
        },
    )
    progress.stage("head space")
    hs = _build(
        D,
        layers=tuple(ref.layers),
        heads=tuple(ref.heads),
        maxdim=maxdim,
        engine=engine,
        metric=metric,
        normalize=normalize,
        reduce=reduce,
        model=ref.model,
        causal=ref.causal,
        n_tokens=tuple(n_tokens),
        texts=seen_texts,
        per_text=stack if keep_per_text else None,
        types=ht,
        paper_compat=stored_paper_mode(paper),
        provenance=prov,
    )
    prov["settings"]["engine"] = hs.diagram.engine  # the engine that ran
    progress.advance()
    return hs
