"""One text through the whole pipeline: attention → distances → persistence → summaries."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Sequence

import numpy as np

from .._progress import ProgressOption, reports
from .._validation import (
    check_dim,
    check_indices,
    check_maxdim,
    check_metric,
    check_number,
    check_paper_compat,
    check_positive_int,
    check_threshold,
)
from .._version import __version__
from ..attention import Attention
from ..constants import DEFAULT_MODEL, SUMMARY_STATS, PaperMode
from ..distances import token_distances
from ..errors import InvalidInputError, ResultFormatError
from ..io import json_float, json_safe
from ..topology import Diagram, pack_diagrams, unpack_diagrams
from ..topology.persistence import persistence_batch_valid
from ._inputs import head_position, load
from ._provenance import make_provenance, model_info, stored_paper_mode
from ._ranking import informative_dim, ranked_heads
from ._result import Columns, Result, read_array

__all__ = ["Analysis", "analyze"]


@dataclass(eq=False)
class Analysis(Result):
    """Everything attntopo computes for one text, per head.

    Attributes
    ----------
    attention : Attention
        Weights of shape (n_layers, n_heads, n, n) for the analysed layers/heads.
    distances : ndarray of shape (n_layers, n_heads, n, n), float64
        Token distance matrices (:attr:`metric`).
    diagrams : list of list of Diagram
        ``diagrams[i][j]`` is the diagram of layer ``attention.layers[i]``,
        head ``attention.heads[j]``.
    metric, maxdim, threshold, engine : settings used.
    paper_compat : False, "notebook" or "listing"
        The founding-paper recipe of the token distances (see
        :func:`attntopo.distances.token_distances`); ``False``: attntopo's own.
    provenance : dict
        Model description, package versions, creation time, settings
        (:mod:`attntopo.analyses._provenance`).

    Notes
    -----
    Follows the result protocol (:mod:`attntopo.analyses._result`): :meth:`summary` (one row
    per head), :meth:`to_pandas`, :meth:`to_dict`, :meth:`save` / :func:`attntopo.load_result`,
    equality over the fields except ``provenance``.
    """

    attention: Attention
    distances: np.ndarray
    diagrams: list[list[Diagram]]
    metric: str
    maxdim: int
    threshold: float
    engine: str
    paper_compat: str | bool = False
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = "analysis"

    # ----------------------------------------------------------------- access
    @property
    def tokens(self) -> list[str]:
        return self.attention.tokens

    @property
    def layers(self) -> tuple[int, ...]:
        """Model layer indices analysed (0-based)."""
        return self.attention.layers

    @property
    def heads(self) -> tuple[int, ...]:
        """Model head indices analysed (0-based)."""
        return self.attention.heads

    def position(self, layer: int, head: int) -> tuple[int, int]:
        """Positions ``(i, j)`` in the arrays of model layer ``layer`` and head ``head``.

        Raises :class:`~attntopo.errors.OutOfRangeError` if that head was not analysed.
        """
        return head_position(layer, head, self.layers, self.heads, self.provenance.get("model"))

    _pos = position

    def attention_matrix(self, layer: int, head: int) -> np.ndarray:
        """(n, n) attention weights of model layer ``layer``, head ``head``."""
        i, j = self.position(layer, head)
        return self.attention.weights[i, j]

    def diagram(self, layer: int, head: int) -> Diagram:
        """Persistence diagram of model layer ``layer``, head ``head`` (0-based, negatives ok)."""
        i, j = self._pos(layer, head)
        return self.diagrams[i][j]

    def distance_matrix(self, layer: int, head: int) -> np.ndarray:
        """(n, n) token distance matrix of one head."""
        i, j = self._pos(layer, head)
        return self.distances[i, j]

    # ---------------------------------------------------------------- summary
    def summary(self) -> Columns:
        """Per-head summary table as columns (all arrays of length n_layers · n_heads).

        Columns: ``layer``, ``head``, then for each dimension ``d`` ≤ maxdim:
        ``n_bars_h{d}`` (all bars), ``n_infinite_h{d}``, ``total_persistence_h{d}`` and
        ``max_persistence_h{d}`` (finite bars only, in distance units) and
        ``persistence_entropy_h{d}`` (bits, over finite lifetimes).
        """
        rows = self.summary_rows()
        if not rows:
            return Columns({})
        return Columns({k: np.array([r[k] for r in rows]) for k in rows[0]})

    def summary_rows(self) -> list[dict]:
        """Per-head summaries as a list of dicts (one per head, layer-major order)."""
        rows = []
        for i, layer in enumerate(self.layers):
            for j, head in enumerate(self.heads):
                s = self.diagrams[i][j].summary()
                row = {"layer": layer, "head": head}
                for d in range(self.maxdim + 1):
                    sd = s[d]
                    for stat in SUMMARY_STATS:
                        row[f"{stat}_h{d}"] = sd[stat]
                rows.append(row)
        return rows

    # ---------------------------------------------------------------- ranking
    def _stat_grid(self, stat: str) -> np.ndarray:
        """ndarray of shape (n_layers, n_heads, maxdim + 1):
        one summary statistic per head and dimension."""
        if stat not in SUMMARY_STATS:
            raise InvalidInputError(
                f"unknown statistic {stat!r}; allowed: {', '.join(SUMMARY_STATS)}"
            )
        L, H = len(self.layers), len(self.heads)
        out = np.zeros((L, H, self.maxdim + 1))
        for i in range(L):
            for j in range(H):
                s = self.diagrams[i][j].summary()
                out[i, j] = [s[d][stat] for d in range(self.maxdim + 1)]
        return out

    @property
    def ranking_dim(self) -> int:
        """The homology dimension of the default ranking of heads by ``max_persistence``.

        The highest dimension in which no value is shared by more than half of the heads, H0
        when there is none (:data:`attntopo.analyses.RANKING_RULE`): on a short text most heads
        have no H1 bar, their largest H1 persistence is 0, and the heads are ranked by H0.
        Used by :meth:`most_persistent_heads`, the report's and the figures' default heads, the
        command line's table and the explorer.
        """
        return informative_dim(self._stat_grid("max_persistence"))

    def ranking(self, *, stat: str = "max_persistence", dim: int | None = None) -> Columns:
        """Every head ranked by a summary statistic, largest first.

        Parameters
        ----------
        stat : str
            One of :data:`attntopo.constants.SUMMARY_STATS` (default the longest finite bar).
        dim : int, optional
            Homology dimension; default :attr:`ranking_dim`.

        Returns
        -------
        Columns
            ``layer``, ``head``, ``value``, ``rank`` (``scipy.stats.rankdata(method="min")`` of
            the negated values: 1 is the largest, equal values share the smallest rank of their
            group) and ``n_tied`` (heads sharing that rank).  Within a tie heads are listed by
            ``total_persistence_h0`` (largest first), then by layer and head.
        """
        g = self._stat_grid(stat)
        d = self.ranking_dim if dim is None else check_dim(dim, self.maxdim)
        v = g[:, :, d].ravel()
        tot0 = self._stat_grid("total_persistence")[:, :, 0].ravel()
        return ranked_heads(self.layers, self.heads, v, -v, -tot0)

    def most_persistent_heads(
        self, *, k: int = 5, dim: int | None = None
    ) -> list[tuple[int, int, float]]:
        """The ``k`` heads with the longest finite bar in dimension ``dim`` (default
        :attr:`ranking_dim`): ``[(layer, head, max_persistence), ...]``, the first rows of
        :meth:`ranking` (which also gives ranks, ties shared)."""
        k = check_positive_int(k, "k", allow_none=False)
        r = self.ranking(stat="max_persistence", dim=dim)
        return [
            (int(r["layer"][t]), int(r["head"][t]), float(r["value"][t]))
            for t in range(min(k, r.n_rows))
        ]

    def _settings(self) -> dict:
        st = self.provenance.get("settings", {})
        return {
            "metric": self.metric,
            "maxdim": self.maxdim,
            "threshold": self.threshold,
            "engine": self.engine,
            "paper_compat": self.paper_compat,
            "drop_special": bool(st.get("drop_special", self.attention.special_dropped)),
            "truncate": bool(st.get("truncate", False)),
            "min_persistence": float(st.get("min_persistence", 0.0)),
            "layers": list(self.layers),
            "heads": list(self.heads),
        }

    def to_dict(self) -> dict:
        """Plain JSON-safe data: version, model, settings, the tokens and the per-head summary
        (:meth:`summary_rows`) — what ``attntopo analyze --json`` prints of the analysis."""
        a = self.attention
        return json_safe(
            {
                "attntopo": self.provenance.get("versions", {}).get("attntopo", __version__),
                "model": self.provenance.get("model", {"name": a.model}),
                "settings": self._settings(),
                "text": a.text,
                "n_tokens": a.n_tokens,
                "truncated": a.truncated,
                "tokens": a.tokens,
                "labels": a.labels,
                "special": a.special.tolist(),
                "summary": self.summary_rows(),
            }
        )

    def __repr__(self) -> str:
        a = self.attention
        return (
            f"Analysis(model={a.model!r}, tokens={a.n_tokens}, layers={len(self.layers)}, "
            f"heads={len(self.heads)}, metric={self.metric!r}, maxdim={self.maxdim})"
        )

    # ---------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        a = self.attention
        arrays: dict[str, np.ndarray] = {
            "weights": a.weights,
            "distances": self.distances,
            "special": a.special,
        }
        if a.token_ids is not None:
            arrays["token_ids"] = a.token_ids
        arrays.update(pack_diagrams(self.diagrams, prefix="dgm_", maxdim=self.maxdim))
        L, H = len(self.layers), len(self.heads)
        d0 = self.diagrams[0][0] if L and H else None
        meta = {
            "model": a.model,
            "text": a.text,
            "tokens": a.tokens,
            "offsets": a.offsets,
            "causal": a.causal,
            # saved files keep the keys "layer_ids"/"head_ids" (the format is unchanged by the
            # rename of the attributes: files of either version load in the other)
            "layer_ids": list(a.layers),
            "head_ids": list(a.heads),
            "special_dropped": a.special_dropped,
            "truncated": a.truncated,
            "metric": self.metric,
            "maxdim": self.maxdim,
            "threshold": self.threshold,
            "engine": self.engine,
            "filtration": getattr(d0, "filtration", "vietoris_rips"),
            "paper_compat": self.paper_compat,
            "provenance": self.provenance,
        }
        return meta, arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: dict) -> "Analysis":
        layer_ids, head_ids = tuple(meta["layer_ids"]), tuple(meta["head_ids"])
        L, H = len(layer_ids), len(head_ids)
        n = len(meta["tokens"])
        weights = read_array(
            arrays, "weights", kind="f", shape=(L, H, n, n), finite=True, nonneg=True
        )
        distances = read_array(arrays, "distances", kind="f", shape=(L, H, n, n), nonneg=True)
        if np.isnan(distances).any():
            raise ResultFormatError("array 'distances' holds NaN")
        att = Attention(
            weights=weights,
            tokens=meta["tokens"],
            offsets=[tuple(o) for o in meta["offsets"]],
            special=read_array(arrays, "special", kind="b", shape=(n,)),
            causal=bool(meta["causal"]),
            model=meta["model"],
            text=meta.get("text", ""),
            token_ids=read_array(arrays, "token_ids", kind="i", shape=(n,), optional=True),
            layers=layer_ids,
            heads=head_ids,
            special_dropped=bool(meta.get("special_dropped", False)),
            truncated=bool(meta.get("truncated", False)),
        )
        maxdim = check_maxdim(meta["maxdim"])
        threshold = json_float(meta["threshold"])
        diagrams = unpack_diagrams(
            arrays,
            prefix="dgm_",
            maxdim=maxdim,
            shape=(L, H),
            threshold=threshold,
            engine=meta["engine"],
            filtration=meta.get("filtration", "vietoris_rips"),
        )
        return cls(
            attention=att,
            distances=distances,
            diagrams=diagrams,
            metric=meta["metric"],
            maxdim=maxdim,
            threshold=threshold,
            engine=meta["engine"],
            paper_compat=stored_paper_mode(meta.get("paper_compat", False)),
            provenance=meta.get("provenance", {}),
        )


@reports("analyze")  # progress arrives as an open Reporter
def analyze(
    text: str | Sequence[str] | Attention,
    model=DEFAULT_MODEL,
    *,
    layers=None,
    heads=None,
    metric: str = "jensen_shannon",
    maxdim: int = 1,
    threshold: float = math.inf,
    engine: str | None = None,
    drop_special: bool = False,
    paper_compat: PaperMode | bool | None = False,
    truncate: bool = False,
    n_jobs: int | None = None,
    progress: ProgressOption = None,
    min_persistence: float = 0.0,
) -> Analysis | list[Analysis]:
    """Analyse a text on every (or the chosen) head: attention, distances, diagrams, summaries.

    Parameters
    ----------
    text : str, list of str, or Attention
        One text → one :class:`Analysis`; a list → a list (attention batched, persistence of
        all heads of all texts computed in one parallel batch).  An :class:`Attention`
        is analysed as is (``model`` is then ignored).
    model : str or AttentionModel
        Alias (``"minilm"``, ``"smollm2"``), hub id, folder, or a loaded model.
    layers, heads : int or list of int, optional
        0-based model indices (negatives allowed); all by default.
    metric : str
        Row distance (see :data:`attntopo.distances.METRICS`); Jensen–Shannon base 2 by default.
    maxdim : {0, 1, 2}
        Highest homology dimension.
    threshold : float
        Largest edge length of the Rips filtration (inf: the full filtration).
    engine : str, optional
        Persistence engine (default: the fastest installed, see :mod:`attntopo.topology`).
    drop_special : bool
        Remove special tokens and renormalize rows before measuring distances.
    paper_compat : {False, None, "notebook", "listing"}
        Reproduce a founding-paper token distance (softmax re-applied, natural log):
        ``"notebook"`` the published notebooks' fourth root of the divergence, ``"listing"``
        the printed Listing 1's square root.  See :func:`attntopo.distances.token_distances`.
    truncate : bool
        Cut texts longer than the model's context instead of raising.
    n_jobs : int, optional
        Worker processes for persistence (default: all cores).
    min_persistence : float, default 0
        Drop the finite bars of length ``death − birth <= min_persistence`` from every diagram
        (:meth:`attntopo.topology.Diagram.prune`; gudhi's convention), so that counts and
        summaries ignore bars of round-off size; recorded in the provenance's settings.
    progress : bool, callable or None, default None
        One progress bar for the whole run: ``None`` a bar on a terminal or in Jupyter (not
        when stderr is a pipe or a file), ``True``/``False``, or a callback
        ``callback(done, total, stage)`` (see :mod:`attntopo._progress`).  Units: one per
        text and model layer in stage ``"attention"``, advanced as the forward pass computes
        each layer (so one long text moves), one per head and text in ``"distances"`` and in
        ``"persistence"`` (and the model's load, ``"loading model"``, when it happens here).
    """
    metric = check_metric(metric)
    maxdim = check_maxdim(maxdim)
    threshold = check_threshold(threshold)
    paper_compat = stored_paper_mode(check_paper_compat(paper_compat))
    min_persistence = check_number(min_persistence, "min_persistence", lo=0.0)
    if isinstance(text, Attention):
        atts = [
            text.select(layers=layers, heads=heads)
            if (layers is not None or heads is not None)
            else text
        ]
        if drop_special and not text.special_dropped:
            atts = [a.drop_special() for a in atts]
        single = True
        m = None
        progress.add_total(2 * atts[0].weights.shape[0] * atts[0].weights.shape[1])
    else:
        m = load(model, progress, layers, heads)
        single = isinstance(text, str)
        n_texts = len(text) if isinstance(text, (list, tuple)) else 1  # m.attention checks the type
        n_heads = len(check_indices(layers, m.n_layers, "layer")) * len(
            check_indices(heads, m.n_heads, "head")
        )
        # the forward pass layer by layer (m.progress_units), distances, persistence
        progress.add_total(m.progress_units(n_texts) + n_texts * 2 * n_heads)
        res = m.attention(
            text,
            drop_special=drop_special,
            truncate=truncate,
            layers=layers,
            heads=heads,
            progress=progress,
        )
        atts = [res] if single else list(res)

    device = _device_route(m, metric, paper_compat, engine)
    if device is not None:
        # the model is on a GPU: distances there, and H0 there too (a minimum spanning tree);
        # H1 and above in the engines on the CPU, each layer's while the device does the next
        dists, dgms = _on_device(atts, device, maxdim, threshold, progress, n_jobs=n_jobs)
    else:
        dists, dgms = None, None
    if dists is None:
        dists = [
            token_distances(a, metric=metric, paper_compat=paper_compat, progress=progress)
            for a in atts
        ]
    if dgms is None:
        flat = [d.reshape(-1, d.shape[-1], d.shape[-1]) for d in dists]
        all_mats = [mat for f in flat for mat in f]
        # token_distances' matrices are valid by construction: no per-matrix re-validation
        dgms = persistence_batch_valid(
            all_mats,
            maxdim=maxdim,
            threshold=threshold,
            engine=engine,
            n_jobs=n_jobs,
            progress=progress,
        )
    used_engine = dgms[0].engine if dgms else (engine or "")
    if min_persistence > 0:
        dgms = [g.prune(min_persistence) for g in dgms]
    prov = make_provenance(
        model_info(m, atts[0].model),
        settings={
            "metric": metric,
            "engine": used_engine,
            "drop_special": drop_special,
            "truncate": truncate,
            "paper_compat": paper_compat,
            "min_persistence": min_persistence,
        },
    )
    out = []
    k = 0
    for a, d in zip(atts, dists):
        L, H = d.shape[0], d.shape[1]
        grid = [[dgms[k + i * H + j] for j in range(H)] for i in range(L)]
        k += L * H
        out.append(
            Analysis(
                attention=a,
                distances=d,
                diagrams=grid,
                metric=metric,
                maxdim=int(maxdim),
                threshold=threshold,
                engine=used_engine,
                paper_compat=paper_compat,
                provenance=dict(prov),
            )
        )
    return out[0] if single else out


def _device_route(m, metric: str, paper_compat, engine: str | None) -> str | None:
    """The device that computes analyze's distances (and H0) when that is not the host: the
    model's GPU for Jensen–Shannon distances with the default engine; None otherwise (the
    distances and the engines on the CPU)."""
    device = str(getattr(m, "device", "cpu")) if m is not None else "cpu"
    if device != "cpu" and metric == "jensen_shannon" and not paper_compat and engine is None:
        return device
    return None


#: Layers whose distance matrices may wait on the host for the persistence engines (H1 and
#: above) while the device computes the next layer's: memory stays flat in the number of layers.
MAX_WAITING_LAYERS = 2


def _on_device(
    atts: list[Attention],
    device: str,
    maxdim: int,
    threshold: float,
    progress,
    *,
    n_jobs: int | None = None,
) -> tuple[list[np.ndarray], list[Diagram]]:
    """Jensen–Shannon distances of each Attention computed on ``device`` (float64), layer by
    layer, and every head's diagram: for ``maxdim=0`` the H0 diagrams there too
    (:func:`attntopo.topology.h0_diagrams`: the same diagrams as the engines'); for H1 and
    above the engines on the CPU, overlapped with the device: layer ``k``'s matrices go to the
    engines in a background thread (their worker processes) while the device computes layer
    ``k + 1``, at most :data:`MAX_WAITING_LAYERS` layers waiting.  The diagrams are the same,
    in the same order (text-major, then layer, then head), as the engines' of the whole batch.
    Only the distances and the deaths come back to the host."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    import torch

    from ..distances import token_distances_tensor
    from ..topology import h0_diagrams

    dists: list[np.ndarray] = []
    dgms: list[Diagram] = []
    waiting: deque = deque()  # (future, heads) of the layers handed to the engines, oldest first

    def collect() -> None:
        job, H = waiting.popleft()
        dgms.extend(job.result())
        progress.advance(H)

    executor = ThreadPoolExecutor(1, thread_name_prefix="attntopo-analyze") if maxdim > 0 else None
    try:
        for a in atts:
            L, H, n, _ = a.weights.shape
            host = np.empty((L, H, n, n))
            for layer in range(L):
                D = token_distances_tensor(torch.from_numpy(a.weights[layer]).to(device))
                progress.advance(H)
                if executor is None:
                    dgms.extend(h0_diagrams(D, threshold=threshold))
                    progress.advance(H)
                host[layer] = D.cpu().numpy()
                del D
                if executor is not None:
                    while len(waiting) >= MAX_WAITING_LAYERS:
                        collect()
                    # token_distances' matrices are valid by construction: not checked again
                    waiting.append(
                        (
                            executor.submit(
                                persistence_batch_valid,
                                list(host[layer]),
                                maxdim=maxdim,
                                threshold=threshold,
                                n_jobs=n_jobs,
                            ),
                            H,
                        )
                    )
            dists.append(host)
        while waiting:
            collect()
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    return dists, dgms
