"""The result of :func:`attntopo.timeline`: time slices, coherence, vineyards, bifiltration.

A :class:`Timeline` holds one :class:`Slice` per prefix length ``t`` (the prefix's attention
for one head, its token distances and its Vietoris–Rips diagram) and measures

* **temporal coherence**: bottleneck and Wasserstein distances between consecutive
  slices, per homology dimension — a curve over ``t`` whose peaks are the tokens whose
  arrival changes the topology most (:meth:`Timeline.top_changes`);
* **vineyards**: consecutive diagrams matched by an optimal (Wasserstein) matching, so
  that each feature becomes a *vine* with a birth time, a death time and a trajectory of
  (birth, death) points (:meth:`Timeline.vines`);
* **two-parameter persistence** (causal models only): the distances of a causal model
  never change as tokens arrive, so the slices are one (distance × time) bifiltration;
  :meth:`Timeline.hilbert` gives its Hilbert function and :meth:`Timeline.signed_barcode`
  its signed barcodes (see :mod:`attntopo.topology.multiparameter`).

How the slices are computed (prefixes and special tokens): :mod:`._timeline`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, Sequence

import numpy as np

from .._validation import check_choice, check_dim, check_maxdim, check_positive_int, is_int
from .._version import __version__
from ..attention import Attention, token_labels
from ..errors import InvalidInputError, OutOfRangeError, ResultFormatError
from ..io import json_float, json_safe
from ..topology import Diagram, pack_diagrams, unpack_diagrams
from ..topology.multiparameter import (
    HilbertFunction,
    SignedMeasure,
    default_scale_grid,
    hilbert_from_diagrams,
)
from ._result import Columns, Result, read_array

__all__ = ["Timeline", "Slice", "Vine", "Change"]

_COHERENCE = ("bottleneck", "wasserstein")


# --------------------------------------------------------------------- records
def _labels(tokens: Sequence[str], offsets, special, text: str) -> list[str]:
    return token_labels(tokens, offsets, special, text=text)[0]


@dataclass(eq=False)
class Slice:
    """One time slice: the prefix of length ``t`` and its topology.

    Attributes
    ----------
    t : int
        Prefix length in model input tokens (special tokens included).
    token : int
        Position, in the full tokenization, of the token whose arrival made this slice
        (the last content token of the prefix).
    positions : ndarray of shape (s,), int64
        Position in the full tokenization of each point of the slice.
    attention : Attention
        The prefix's attention for the timeline's head, weights of shape (1, 1, s, s).
    distances : ndarray of shape (s, s), float64
        Token distances (the timeline's metric).
    diagram : Diagram
        Vietoris–Rips persistence diagram of :attr:`distances`.
    """

    t: int
    token: int
    positions: np.ndarray
    attention: Attention
    distances: np.ndarray
    diagram: Diagram

    @property
    def tokens(self) -> list[str]:
        return self.attention.tokens

    @property
    def labels(self) -> list[str]:
        return self.attention.labels

    @property
    def n_points(self) -> int:
        """Number of points of the slice's metric space (``t`` unless specials are dropped)."""
        return int(self.distances.shape[0])

    def __repr__(self) -> str:
        counts = ", ".join(f"H{d}={len(self.diagram[d])}" for d in range(self.diagram.maxdim + 1))
        return f"Slice(t={self.t}, points={self.n_points}, {counts})"


@dataclass(frozen=True, eq=False)
class Vine:
    """One feature followed through time by matching consecutive diagrams.

    Attributes
    ----------
    dim : int
        Homology dimension.
    times : ndarray of shape (k,), int64
        Slice times ``t`` at which the feature is present (consecutive slices).
    points : ndarray of shape (k, 2), float64
        Its (birth, death) in distance units at each of those times (death may be inf).
    rows : ndarray of shape (k,), int64
        Its row in ``slice.diagram[dim]`` at each of those times.
    born_token : int or None
        Position of the token whose arrival created it (None if present in the first slice).
    died_token : int or None
        Position of the token whose arrival removed it (None if present in the last slice).
    """

    dim: int
    times: np.ndarray
    points: np.ndarray
    rows: np.ndarray
    born_token: int | None
    died_token: int | None

    @property
    def start(self) -> int:
        """First slice time at which the feature exists (its birth time)."""
        return int(self.times[0])

    @property
    def end(self) -> int:
        """Last slice time at which the feature exists."""
        return int(self.times[-1])

    @property
    def length(self) -> int:
        """How many consecutive slices it lives (its lifetime in time)."""
        return int(self.times.size)

    @property
    def alive(self) -> bool:
        """True if it is still present in the last slice."""
        return self.died_token is None

    @property
    def max_persistence(self) -> float:
        """Largest ``death − birth`` along the vine (inf for an essential class)."""
        return float(np.max(self.points[:, 1] - self.points[:, 0]))

    def __repr__(self) -> str:
        return (
            f"Vine(H{self.dim}, t={self.start}..{self.end}, length={self.length}, "
            f"max_persistence={self.max_persistence:.3g})"
        )


class Change(NamedTuple):
    """A token arrival and how much it changed the topology (see :meth:`Timeline.top_changes`)."""

    t: int
    position: int
    token: str
    label: str
    score: float


# --------------------------------------------------------------------- Timeline
@dataclass(eq=False)
class Timeline(Result):
    """The time slices of one text for one head, with coherence and vineyards.

    Attributes
    ----------
    slices : list of Slice
        One per prefix length ``t = t0 … n``.
    tokens, offsets, special, token_ids, text :
        The full tokenization (positions in :attr:`Slice.positions` index these).
    model : str
    causal : bool
    layer, head : int
        Model layer and head (0-based).
    metric, maxdim, engine, drop_special, p :
        Settings (``p`` is the Wasserstein order of the coherence curve and matchings).
    n_lead, n_trail : int
        Special tokens the tokenizer puts before / after every input.
    one_pass : bool
        True if all slices came from one forward pass (causal model, no trailing specials).
    bottleneck, wasserstein : ndarray of shape (len(slices) - 1, maxdim + 1)
        Distance between slice ``k`` and slice ``k + 1`` in each dimension.
    matchings : list (per dim) of list (per transition) of ndarray of shape (m, 2), int64
        Optimal Wasserstein matching between the rows of consecutive diagrams
        (``-1`` = the diagonal), used for :meth:`vines`.
    provenance : dict
    """

    slices: list[Slice]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    special: np.ndarray
    token_ids: np.ndarray | None
    text: str
    model: str
    causal: bool
    layer: int
    head: int
    metric: str
    maxdim: int
    engine: str
    drop_special: bool
    p: float
    n_lead: int
    n_trail: int
    one_pass: bool
    bottleneck: np.ndarray
    wasserstein: np.ndarray
    matchings: list[list[np.ndarray]]
    truncated: bool = False
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = "timeline"

    # ---------------------------------------------------------------- access
    @property
    def times(self) -> np.ndarray:
        """ndarray of shape (n_slices,): the prefix length ``t`` of each slice."""
        return np.array([s.t for s in self.slices], dtype=np.int64)

    @property
    def t0(self) -> int:
        return self.slices[0].t

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def labels(self) -> list[str]:
        """Readable labels of the full tokenization (as :attr:`Attention.labels`)."""
        return _labels(self.tokens, self.offsets, self.special, self.text)

    @property
    def arrivals(self) -> np.ndarray:
        """ndarray of shape (n_slices,): position of the token whose arrival made each slice."""
        return np.array([s.token for s in self.slices], dtype=np.int64)

    @property
    def growing(self) -> bool:
        """True if the slices are one growing metric space (distances never change).

        That holds for causal models whose slices are blocks of one forward pass (or whose
        only trailing specials are dropped); it is what two-parameter persistence needs.
        """
        return bool(self.causal and (self.n_trail == 0 or self.drop_special))

    def __len__(self) -> int:
        return len(self.slices)

    def slice(self, t: int) -> Slice:
        """The slice of prefix length ``t``."""
        k = int(t) - self.t0
        if not 0 <= k < len(self.slices):
            raise OutOfRangeError(
                f"no slice t={t}: slices run from t={self.t0} to t={self.slices[-1].t}"
            )
        return self.slices[k]

    def diagrams(self) -> list[Diagram]:
        return [s.diagram for s in self.slices]

    # ------------------------------------------------------------- coherence
    def change(self, *, metric: str = "bottleneck", dim: int | None = None) -> np.ndarray:
        """How much each token's arrival changed the diagram.

        Parameters
        ----------
        metric : {"bottleneck", "wasserstein"}
        dim : int, optional
            One homology dimension; by default all dimensions combined the way the
            metric combines them (max for bottleneck, ``ℓ^p`` sum for Wasserstein of
            order :attr:`p`).

        Returns
        -------
        ndarray of shape (n_slices - 1,)
            Entry ``k``: distance between slices ``k`` and ``k + 1`` (the arrival of token
            ``arrivals[k + 1]``).
        """
        check_choice(metric, "metric", _COHERENCE)
        arr = self.bottleneck if metric == "bottleneck" else self.wasserstein
        if dim is not None:
            return arr[:, check_dim(dim, self.maxdim)].copy()
        if arr.shape[0] == 0:
            return np.zeros(0)
        if metric == "bottleneck":
            return arr.max(axis=1)
        return (arr**self.p).sum(axis=1) ** (1.0 / self.p)

    def top_changes(
        self, *, k: int = 5, metric: str = "bottleneck", dim: int | None = None
    ) -> list[Change]:
        """The ``k`` tokens whose arrival changed the topology most, largest first.

        Scores are :meth:`change` values; ties keep time order.
        """
        k = check_positive_int(k, "k", allow_none=False)
        score = self.change(metric=metric, dim=dim)
        order = np.argsort(-score, kind="stable")[: int(k)]
        labels = self.labels
        out = []
        for i in order.tolist():
            s = self.slices[i + 1]
            out.append(Change(s.t, s.token, self.tokens[s.token], labels[s.token], float(score[i])))
        return out

    # ---------------------------------------------------------------- vines
    def vines(self, *, dim: int = 1, min_length: int = 1) -> list[Vine]:
        """Features followed through time: points of consecutive diagrams joined by the
        optimal matching (a point matched to the diagonal ends its vine; a point matched
        from the diagonal starts one).

        Parameters
        ----------
        dim : int
            Homology dimension.
        min_length : int
            Keep vines present in at least this many consecutive slices.

        Returns
        -------
        list of Vine
            Ordered by start time, then by row in the starting diagram.
        """
        dim = check_dim(dim, self.maxdim)
        S = len(self.slices)
        pts = [np.asarray(s.diagram[dim], dtype=np.float64).reshape(-1, 2) for s in self.slices]
        # each vine: list of (slice index, row)
        tracks: list[list[tuple[int, int]]] = []
        active: dict[int, int] = {}
        for r in range(len(pts[0])):
            active[r] = len(tracks)
            tracks.append([(0, r)])
        for k in range(S - 1):
            pairs = self.matchings[dim][k]
            nxt: dict[int, int] = {}
            seen_next = set()
            for i, j in pairs.tolist():
                if i >= 0 and j >= 0 and i in active:
                    v = active[i]
                    tracks[v].append((k + 1, j))
                    nxt[j] = v
                    seen_next.add(j)
            for j in range(len(pts[k + 1])):
                if j not in seen_next:
                    nxt[j] = len(tracks)
                    tracks.append([(k + 1, j)])
            active = nxt
        times = self.times
        out = []
        for tr in tracks:
            if len(tr) < min_length:
                continue
            ks = np.array([a for a, _ in tr], dtype=np.int64)
            rows = np.array([b for _, b in tr], dtype=np.int64)
            first, last = int(ks[0]), int(ks[-1])
            out.append(
                Vine(
                    dim=dim,
                    times=times[ks],
                    points=np.array([pts[a][b] for a, b in tr], dtype=np.float64).reshape(-1, 2),
                    rows=rows,
                    born_token=None if first == 0 else int(self.slices[first].token),
                    died_token=None if last == S - 1 else int(self.slices[last + 1].token),
                )
            )
        out.sort(key=lambda v: (v.start, int(v.rows[0])))
        return out

    # ------------------------------------------------------ 2-parameter view
    def betti_curves(self, *, scales: Any = None) -> HilbertFunction:
        """Betti numbers of every slice over a distance grid (the slice view; any model).

        ``values[d, i, j]`` = number of bars of slice ``j``'s diagram alive at ``scales[i]``.
        For causal models this *is* the Hilbert function of the (distance × time)
        bifiltration (:meth:`hilbert`); for bidirectional models it is only a stack of
        one-parameter Betti curves (the slices are not nested).

        Parameters
        ----------
        scales : None, int or array-like
            ``None``: every distinct distance of every slice (exact; a regular grid if that
            would exceed :data:`~attntopo.topology.multiparameter.MAX_EXACT_CELLS` cells); an
            int ``k``: ``k`` regular values in ``[0, max distance]``; or explicit values.
        """
        scale_g = self._scale_grid(scales)
        return hilbert_from_diagrams(
            self.diagrams(), self.times.astype(np.float64), scale_g, maxdim=self.maxdim
        )

    def _scale_grid(self, scales: Any) -> np.ndarray:
        if scales is None:
            if self.growing:  # every slice's distances are among the last one's
                last = self.slices[-1]
                vals = last.distances[np.triu_indices(last.n_points, 1)]
            else:
                vals = np.concatenate(
                    [s.distances[np.triu_indices(s.n_points, 1)] for s in self.slices]
                )
            return default_scale_grid(vals, len(self.slices), self.maxdim + 1)
        top = max(float(s.distances.max()) for s in self.slices)
        if is_int(scales):
            if scales < 2:
                raise InvalidInputError(f"scales as a resolution must be an int >= 2, got {scales}")
            return np.linspace(0.0, top if top > 0 else 1.0, int(scales))
        try:
            g = np.unique(np.asarray(scales, dtype=np.float64).ravel())
        except (TypeError, ValueError):
            raise InvalidInputError(
                "scales must be None, an int or an array of distances"
            ) from None
        if g.size == 0 or not np.all(np.isfinite(g)) or g[0] < 0:
            raise InvalidInputError("scales must hold finite distances >= 0")
        return g

    def _require_growing(self, what: str) -> None:
        if not self.growing:
            why = (
                "its attention is bidirectional, so every new token changes the distances "
                "between earlier tokens"
                if not self.causal
                else "its inputs end with special tokens that move as the text grows"
            )
            raise InvalidInputError(
                f"{what} needs distances that never change as tokens arrive, but {self.model} "
                f"is not like that: {why}; use the slice view instead (betti_curves(), "
                f"change(), vines())"
            )

    def bifiltration_data(self) -> tuple[np.ndarray, np.ndarray]:
        """``(D, times)`` of the (distance × time) bifiltration (growing timelines only).

        ``D`` is the last slice's distance matrix (every earlier slice's is a submatrix)
        and ``times[i]`` the prefix length at which point ``i`` arrives.
        """
        self._require_growing("two-parameter persistence")
        last = self.slices[-1]
        pos = last.positions
        times = np.empty(pos.size, dtype=np.float64)
        content_lo, content_hi = self.n_lead, self.n_tokens - self.n_trail
        for i, p in enumerate(pos.tolist()):
            if content_lo <= p < content_hi:
                times[i] = p + 1 + self.n_trail
            elif p < content_lo:
                times[i] = p + 1
            else:
                times[i] = self.n_lead + self.n_trail + 1
        return last.distances, times

    def hilbert(
        self, *, scales: Any = None, backend: str = "slices", n_jobs: int = -1
    ) -> HilbertFunction:
        """Hilbert function of the (distance × time) bifiltration on ``scales`` × slice times.

        Causal models only (bidirectional: :class:`~attntopo.errors.InvalidInputError`).

        Parameters
        ----------
        scales : None, int or array-like
            Distance grid (see :meth:`betti_curves`).
        backend : {"slices", "multipers", "auto"}
            ``"slices"`` (default) reads the slices' diagrams (already computed, no extra
            dependency); ``"multipers"`` computes the bifiltration's signed measure with
            multipers.  Both are exact and agree.
        """
        self._require_growing("the Hilbert function of the distance × time bifiltration")
        if backend == "slices":
            return self.betti_curves(scales=scales)
        from ..topology.multiparameter import hilbert_function

        D, times = self.bifiltration_data()
        return hilbert_function(
            D,
            times=times,
            maxdim=self.maxdim,
            scales=self._scale_grid(scales),
            t=self.times.astype(np.float64),
            backend=backend,
            n_jobs=n_jobs,
        )

    def signed_barcode(
        self, *, degree: int = 1, invariant: str = "hilbert", resolution: int = 32, n_jobs: int = -1
    ) -> SignedMeasure:
        """Signed barcode of the Hilbert function or rank invariant (multipers; causal only).

        See :func:`attntopo.topology.multiparameter.signed_measure`.
        """
        self._require_growing("the signed barcode of the distance × time bifiltration")
        from ..topology.multiparameter import signed_measure

        D, times = self.bifiltration_data()
        return signed_measure(
            D, times=times, degree=degree, invariant=invariant, resolution=resolution, n_jobs=n_jobs
        )

    # --------------------------------------------------------------- tables
    def summary_rows(self) -> list[dict]:
        """One dict per slice: ``t``, arriving token, point and bar counts, and the
        bottleneck / Wasserstein distance from the previous slice per dimension (None for
        the first slice)."""
        labels = self.labels
        rows = []
        for k, s in enumerate(self.slices):
            row: dict[str, Any] = {
                "t": s.t,
                "position": s.token,
                "token": self.tokens[s.token],
                "label": labels[s.token],
                "n_points": s.n_points,
            }
            for d in range(self.maxdim + 1):
                row[f"n_bars_h{d}"] = int(len(s.diagram[d]))
            for d in range(self.maxdim + 1):
                row[f"bottleneck_h{d}"] = None if k == 0 else float(self.bottleneck[k - 1, d])
                row[f"wasserstein_h{d}"] = None if k == 0 else float(self.wasserstein[k - 1, d])
            rows.append(row)
        return rows

    def summary(self) -> Columns:
        """One row per slice: the columns of :meth:`summary_rows` (``t``, ``position``,
        ``token``, ``label``, ``n_points``, ``n_bars_h{d}``, ``bottleneck_h{d}`` and
        ``wasserstein_h{d}``; the distances of the first slice, which has no predecessor,
        are NaN)."""
        rows = self.summary_rows()
        cols: dict[str, np.ndarray] = {}
        for key in rows[0]:
            vals = [r[key] for r in rows]
            if key.startswith(("bottleneck_", "wasserstein_")):
                cols[key] = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
            else:
                cols[key] = np.array(vals)
        return Columns(cols)

    def vines_overview(self, *, k: int = 10) -> dict:
        """Per dimension ``"h{d}"``: the number of vines and the ``k`` longest (0: all) as plain
        data (start, end, length, alive, the tokens that made and ended them, largest
        persistence and last point)."""
        out = {}
        for d in range(self.maxdim + 1):
            vines = sorted(self.vines(dim=d), key=lambda v: (-v.length, v.start))
            out[f"h{d}"] = {
                "count": len(vines),
                "longest": [
                    {
                        "start": v.start,
                        "end": v.end,
                        "length": v.length,
                        "alive": v.alive,
                        "born_token": v.born_token,
                        "died_token": v.died_token,
                        "max_persistence": v.max_persistence,
                        "last_point": [float(x) for x in v.points[-1]],
                    }
                    for v in (vines if k == 0 else vines[:k])
                ],
            }
        return out

    def to_dict(self, *, k: int = 10) -> dict:
        """Plain JSON-safe data: version, model, settings, the tokens, one row per slice, the
        ``k`` largest changes and longest vines (0: all) — what ``attntopo timeline --json``
        prints of the timeline."""
        n_changes = len(self.slices) - 1 if k == 0 else min(k, len(self.slices) - 1)
        st = self.provenance.get("settings", {})
        return json_safe(
            {
                "attntopo": self.provenance.get("versions", {}).get("attntopo", __version__),
                "model": self.provenance.get("model", {"name": self.model}),
                "settings": {
                    "layer": self.layer,
                    "head": self.head,
                    "metric": self.metric,
                    "maxdim": self.maxdim,
                    "t0": self.t0,
                    "drop_special": self.drop_special,
                    "truncate": bool(st.get("truncate", False)),
                    "engine": self.engine,
                    "wasserstein_p": self.p,
                },
                "text": self.text,
                "n_tokens": self.n_tokens,
                "truncated": self.truncated,
                "tokens": self.tokens,
                "labels": self.labels,
                "special": self.special.tolist(),
                "construction": "one_pass" if self.one_pass else "prefix_runs",
                "two_parameter": self.growing,
                "summary": self.summary_rows(),
                "top_changes": [c._asdict() for c in self.top_changes(k=n_changes)]
                if n_changes > 0
                else [],
                "vines": self.vines_overview(k=k),
            }
        )

    def __repr__(self) -> str:
        kind = "causal" if self.causal else "bidirectional"
        return (
            f"Timeline(model={self.model!r}, layer={self.layer}, head={self.head}, "
            f"t={self.t0}..{self.slices[-1].t}, {kind}, "
            f"metric={self.metric!r}, maxdim={self.maxdim})"
        )

    # -------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        S = len(self.slices)
        arrays: dict[str, np.ndarray] = {
            "special": np.asarray(self.special, dtype=bool),
            "slice_t": self.times,
            "slice_token": self.arrivals,
            "slice_sizes": np.array([s.n_points for s in self.slices], dtype=np.int64),
            "slice_positions": np.concatenate([s.positions for s in self.slices]).astype(np.int64),
            "slice_weights": np.concatenate([s.attention.weights.ravel() for s in self.slices]),
            "slice_distances": np.concatenate([s.distances.ravel() for s in self.slices]),
            "bottleneck": self.bottleneck,
            "wasserstein": self.wasserstein,
        }
        if self.token_ids is not None:
            arrays["token_ids"] = np.asarray(self.token_ids, dtype=np.int64)
        arrays.update(
            pack_diagrams([s.diagram for s in self.slices], prefix="dgm_", maxdim=self.maxdim)
        )
        for d in range(self.maxdim + 1):
            ms = self.matchings[d]
            arrays[f"match_counts_h{d}"] = np.array([len(m) for m in ms], dtype=np.int64)
            arrays[f"match_pairs_h{d}"] = (
                np.concatenate(ms, axis=0).astype(np.int64)
                if ms
                else np.zeros((0, 2), dtype=np.int64)
            )
        d0 = self.slices[0].diagram if S else None
        meta = {
            "model": self.model,
            "text": self.text,
            "tokens": self.tokens,
            "offsets": self.offsets,
            "causal": self.causal,
            "layer": self.layer,
            "head": self.head,
            "metric": self.metric,
            "maxdim": self.maxdim,
            "engine": self.engine,
            "drop_special": self.drop_special,
            "p": self.p,
            "n_lead": self.n_lead,
            "n_trail": self.n_trail,
            "one_pass": self.one_pass,
            "truncated": self.truncated,
            "threshold": getattr(d0, "threshold", math.inf),
            "filtration": getattr(d0, "filtration", "vietoris_rips"),
            "provenance": self.provenance,
        }
        return meta, arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: dict) -> "Timeline":
        tokens = list(meta["tokens"])
        n = len(tokens)
        offsets = [tuple(int(x) for x in o) for o in meta["offsets"]]
        special = read_array(arrays, "special", kind="b", shape=(n,))
        token_ids = read_array(arrays, "token_ids", kind="i", shape=(n,), optional=True)
        maxdim = check_maxdim(meta["maxdim"])
        sizes = read_array(arrays, "slice_sizes", kind="i", ndim=1, nonneg=True)
        S = sizes.size
        slice_t = read_array(arrays, "slice_t", kind="i", shape=(S,), nonneg=True)
        slice_token = read_array(arrays, "slice_token", kind="i", shape=(S,), nonneg=True)
        positions = read_array(
            arrays, "slice_positions", kind="i", shape=(int(sizes.sum()),), nonneg=True
        )
        if positions.size and positions.max() >= n:
            raise ResultFormatError(f"array 'slice_positions' points past the {n} tokens")
        n_sq = int((sizes**2).sum())
        weights = read_array(
            arrays, "slice_weights", kind="f", shape=(n_sq,), finite=True, nonneg=True
        )
        distances = read_array(
            arrays, "slice_distances", kind="f", shape=(n_sq,), finite=True, nonneg=True
        )
        pos_b = np.concatenate([[0], np.cumsum(sizes)])
        sq_b = np.concatenate([[0], np.cumsum(sizes**2)])
        diagrams = unpack_diagrams(
            arrays,
            prefix="dgm_",
            maxdim=maxdim,
            shape=(S,),
            threshold=json_float(meta.get("threshold", "inf")),
            engine=meta["engine"],
            filtration=meta.get("filtration", "vietoris_rips"),
        )
        layer, head = int(meta["layer"]), int(meta["head"])
        slices = []
        for k in range(S):
            s = int(sizes[k])
            pos = positions[pos_b[k] : pos_b[k + 1]]
            att = Attention(
                weights=weights[sq_b[k] : sq_b[k + 1]].reshape(1, 1, s, s),
                tokens=[tokens[i] for i in pos],
                offsets=[offsets[i] for i in pos],
                special=special[pos],
                causal=bool(meta["causal"]),
                model=meta["model"],
                text=meta.get("text", ""),
                token_ids=None if token_ids is None else token_ids[pos],
                layers=(layer,),
                heads=(head,),
                special_dropped=bool(meta["drop_special"]),
                truncated=bool(meta.get("truncated", False)),
            )
            slices.append(
                Slice(
                    t=int(slice_t[k]),
                    token=int(slice_token[k]),
                    positions=pos,
                    attention=att,
                    distances=distances[sq_b[k] : sq_b[k + 1]].reshape(s, s),
                    diagram=diagrams[k],
                )
            )
        matchings = []
        for d in range(maxdim + 1):
            c = read_array(
                arrays, f"match_counts_h{d}", kind="i", shape=(max(S - 1, 0),), nonneg=True
            )
            b = np.concatenate([[0], np.cumsum(c)])
            pairs = read_array(arrays, f"match_pairs_h{d}", kind="i", shape=(int(b[-1]), 2))
            matchings.append([pairs[b[k] : b[k + 1]] for k in range(c.size)])
        return cls(
            slices=slices,
            tokens=tokens,
            offsets=offsets,
            special=special,
            token_ids=token_ids,
            text=meta.get("text", ""),
            model=meta["model"],
            causal=bool(meta["causal"]),
            layer=layer,
            head=head,
            metric=meta["metric"],
            maxdim=maxdim,
            engine=meta["engine"],
            drop_special=bool(meta["drop_special"]),
            p=float(meta["p"]),
            n_lead=int(meta["n_lead"]),
            n_trail=int(meta["n_trail"]),
            one_pass=bool(meta["one_pass"]),
            bottleneck=read_array(
                arrays, "bottleneck", kind="f", shape=(max(S - 1, 0), maxdim + 1), nonneg=True
            ),
            wasserstein=read_array(
                arrays, "wasserstein", kind="f", shape=(max(S - 1, 0), maxdim + 1), nonneg=True
            ),
            matchings=matchings,
            truncated=bool(meta.get("truncated", False)),
            provenance=meta.get("provenance", {}),
        )
