"""Comparing the topology of two texts, head by head.

:func:`compare` runs two texts (a text and its translation, two contexts, …) through one
model in a single batched pass, computes the token distances of every selected head and
the persistence diagrams of both texts in one parallel batch, and answers:

* which tokens the texts share (:class:`~attntopo.words.SharedToken`: matched at word level
  by normalized string and occurrence, or by a user-supplied word alignment);
* for every pair of shared tokens, in each text, when they get an edge (edge birth) and
  when they first lie in one connected component (connection scale);
* which edges and triangles among shared tokens are present in *both* texts at a scale,
  with their birth in each;
* how far apart the two texts' diagrams are, per homology dimension (bottleneck,
  Wasserstein p = 1 and 2), for the whole texts and for the shared tokens only;
* over all heads, tables (layers × heads) of those numbers, and the heads where the texts
  agree or differ most.

``paper_compat="notebook"`` reproduces the founding paper's text-comparison notebook
(``persistent_homology_of_attention``), ``"listing"`` its printed Listing 1's distance; see
:func:`compare`.

Words, subwords and how they are matched: see :mod:`attntopo.words` (a word is represented
by its first token).  One phrase across several contexts: :mod:`._phrase`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np

from .._progress import ProgressOption, reports
from .._validation import (
    check_choice,
    check_dim,
    check_maxdim,
    check_metric,
    check_paper_compat,
    check_positive_int,
    check_scale,
    is_int,
)
from ..attention import Attention
from ..constants import COUNT_NAMES, DEFAULT_MODEL, DISTANCE_NAMES, PaperMode
from ..errors import InvalidInputError, OutOfRangeError, ResultFormatError
from ..io import json_float, json_safe
from ..topology import Diagram, pack_diagrams, persistence_batch, unpack_diagrams
from ..words import SharedToken, check_alignment, match_aligned, match_words, normalize_token
from ._analysis import Analysis
from ._comparison_heads import (
    _adaptive_scales,
    _grid,
    _head_diagram_distances,
    _shared_counts,
    _text_distances,
    shared_connection_scales,
)
from ._inputs import attentions_of
from ._provenance import make_provenance, stored_paper_mode
from ._ranking import RANKING_RULE, informative_dim, rank_order, ranked_heads
from ._result import Columns, Result, nest, read_array, unnest

__all__ = ["Comparison", "compare"]


@dataclass(eq=False)
class Comparison(Result):
    """Two texts' topology, head by head, with the tokens they share.

    Attributes
    ----------
    a, b : Analysis
        Each text's attention, distances ``(L, H, n, n)`` and diagrams (full filtration).
    shared_tokens : list of SharedToken
        Tokens present in both texts (``m`` of them), in the order of text A.
    scales : ndarray of shape (L, H)
        The scale ``eps`` at which simplices are compared, per head (all equal to
        ``scale`` when one was given).
    given_scale : float or None
        The ``scale`` given to :func:`compare`; ``None`` = adaptive per head (see there;
        :meth:`scale` gives the scale one head used).
    shared_diagrams_a, shared_diagrams_b : list of list of Diagram, or None
        Diagrams of the shared tokens' own metric spaces (sub-matrices ``(m, m)`` of each
        text's distances); ``None`` when no token is shared.
    diagram_distances : dict of str to ndarray of shape (L, H, maxdim + 1)
        ``"bottleneck"``, ``"wasserstein1"``, ``"wasserstein2"`` between the two texts' full
        diagrams, per homology dimension (never pooled).
    shared_diagram_distances : dict of str to ndarray of shape (L, H, maxdim + 1)
        The same between the shared-token diagrams (NaN when no token is shared).
    counts : dict of str to int ndarray of shape (L, H)
        :data:`COUNT_NAMES`: edges and triangles among shared tokens present in both texts at
        the head's scale, and in each text alone.
    connection_a, connection_b : ndarray of shape (L, H, m, m)
        Connection scales (minimax path distance in the whole text's complex) of every pair
        of shared tokens.
    alignment, alignment_units : the user alignment, if one was given.
    include_special : bool
        Whether special tokens were matched.
    provenance : dict
    """

    a: Analysis
    b: Analysis
    shared_tokens: list[SharedToken]
    scales: np.ndarray
    given_scale: float | None
    shared_diagrams_a: list[list[Diagram]] | None
    shared_diagrams_b: list[list[Diagram]] | None
    diagram_distances: dict[str, np.ndarray]
    shared_diagram_distances: dict[str, np.ndarray]
    counts: dict[str, np.ndarray]
    connection_a: np.ndarray
    connection_b: np.ndarray
    alignment: list[tuple[int, int]] | None = None
    alignment_units: str = "word"
    include_special: bool = False
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = "comparison"

    # ------------------------------------------------------------------ access
    @property
    def layers(self) -> tuple[int, ...]:
        """Model layer indices compared (0-based)."""
        return self.a.layers

    @property
    def heads(self) -> tuple[int, ...]:
        """Model head indices compared (0-based)."""
        return self.a.heads

    @property
    def maxdim(self) -> int:
        return self.a.maxdim

    @property
    def metric(self) -> str:
        return self.a.metric

    @property
    def paper_compat(self) -> str | bool:
        """The founding-paper recipe (``"notebook"``, ``"listing"``)
        or ``False`` (see :func:`compare`)."""
        return self.a.paper_compat

    @property
    def keys(self) -> list[str]:
        """Keys of the shared tokens, in order."""
        return [s.key for s in self.shared_tokens]

    @property
    def index_a(self) -> np.ndarray:
        """int ndarray of shape (m,): representative token of each shared token in text A."""
        return np.array([s.a for s in self.shared_tokens], dtype=np.int64)

    @property
    def index_b(self) -> np.ndarray:
        """int ndarray of shape (m,): representative token of each shared token in text B."""
        return np.array([s.b for s in self.shared_tokens], dtype=np.int64)

    @property
    def edge_birth_a(self) -> np.ndarray:
        """ndarray of shape (L, H, m, m): distances between shared tokens in text A."""
        ia = self.index_a
        return self.a.distances[:, :, ia][:, :, :, ia]

    @property
    def edge_birth_b(self) -> np.ndarray:
        """ndarray of shape (L, H, m, m): distances between shared tokens in text B."""
        ib = self.index_b
        return self.b.distances[:, :, ib][:, :, :, ib]

    def _pos(self, layer: int | None, head: int | None) -> tuple[int, int]:
        if layer is None or head is None:
            if len(self.layers) == 1 and len(self.heads) == 1:
                return 0, 0
            raise InvalidInputError(
                "several heads were compared: give layer= and head= (0-based model indices)"
            )
        return self.a._pos(layer, head)

    def _key_index(self, key: str | int) -> int:
        if is_int(key):
            m = len(self.shared_tokens)
            if not -m <= key < m:
                raise OutOfRangeError(f"shared token {key} is out of range: {m} shared tokens")
            return int(key) % m
        keys = self.keys
        k = normalize_token(str(key)) if str(key) not in keys else str(key)
        if k not in keys:
            raise InvalidInputError(
                f"{key!r} is not a shared token; shared are: {', '.join(keys) or '(none)'}"
            )
        return keys.index(k)

    def scale(self, layer: int | None = None, head: int | None = None) -> float:
        """The scale ``eps`` used for one head."""
        i, j = self._pos(layer, head)
        return float(self.scales[i, j])

    def diagrams(
        self, layer: int | None = None, head: int | None = None
    ) -> tuple[Diagram, Diagram]:
        """The two texts' full diagrams of one head."""
        i, j = self._pos(layer, head)
        return self.a.diagrams[i][j], self.b.diagrams[i][j]

    def pair(
        self, u: str | int, v: str | int, layer: int | None = None, head: int | None = None
    ) -> dict:
        """Edge births and connection scales of two shared tokens (by key or position) in one head.

        Returns ``{"a", "b", "edge_birth_a", "edge_birth_b", "connection_a", "connection_b",
        "scale"}``.
        """
        i, j = self._pos(layer, head)
        p, q = self._key_index(u), self._key_index(v)
        sa, sb = self.shared_tokens[p], self.shared_tokens[q]
        return {
            "a": sa.key,
            "b": sb.key,
            "edge_birth_a": float(self.a.distances[i, j, sa.a, sb.a]),
            "edge_birth_b": float(self.b.distances[i, j, sa.b, sb.b]),
            "connection_a": float(self.connection_a[i, j, p, q]),
            "connection_b": float(self.connection_b[i, j, p, q]),
            "scale": float(self.scales[i, j]),
        }

    def first_triangle(
        self, u: str | int, v: str | int, layer: int | None = None, head: int | None = None
    ) -> dict:
        """Scale at which two shared tokens first span a triangle, in each text.

        The earliest 2-simplex containing both tokens' representatives, with any third token
        of that text (special tokens and subwords included):
        ``min_k max(D[u, v], D[u, k], D[v, k])``.

        Returns
        -------
        dict
            ``{"birth_a", "third_a", "third_a_index", "birth_b", "third_b", "third_b_index"}``
            (births ``inf`` and thirds ``None`` when a text has fewer than 3 tokens).
        """
        i, j = self._pos(layer, head)
        su = self.shared_tokens[self._key_index(u)]
        sv = self.shared_tokens[self._key_index(v)]
        out: dict = {}
        for side, an, x, y in (("a", self.a, su.a, sv.a), ("b", self.b, su.b, sv.b)):
            D = an.distances[i, j]
            cand = np.maximum(D[x], D[y])
            cand[[x, y]] = np.inf
            k = int(np.argmin(cand))
            if len(cand) < 3 or x == y:
                out.update(
                    {f"birth_{side}": math.inf, f"third_{side}": None, f"third_{side}_index": None}
                )
                continue
            out.update(
                {
                    f"birth_{side}": float(max(D[x, y], cand[k])),
                    f"third_{side}": an.attention.labels[k],
                    f"third_{side}_index": k,
                }
            )
        return out

    def pairs(self, layer: int | None = None, head: int | None = None) -> list[dict]:
        """:meth:`pair` for every pair of shared tokens (``p < q`` in shared order)."""
        m = len(self.shared_tokens)
        return [
            self.pair(p, q, *self._model_ids(layer, head))
            for p in range(m)
            for q in range(p + 1, m)
        ]

    def _model_ids(self, layer, head) -> tuple[int, int]:
        i, j = self._pos(layer, head)
        return self.layers[i], self.heads[j]

    def shared_simplices(
        self,
        layer: int | None = None,
        head: int | None = None,
        *,
        scale: float | None = None,
        dim: int | None = None,
    ) -> list[dict]:
        """Edges and triangles among shared tokens present in both texts at ``scale``.

        Parameters
        ----------
        layer, head : int
            Model indices (optional when one head was compared).
        scale : float, optional
            Scale; default the head's :attr:`scales` entry.
        dim : {1, 2}, optional
            Only edges (1) or only triangles (2); both by default.

        Returns
        -------
        list of dict
            ``{"tokens": (key, key[, key]), "birth_a", "birth_b"}``, edges first, then
            triangles, each in lexicographic order of shared positions.  A simplex's birth is
            its longest side in that text.
        """
        i, j = self._pos(layer, head)
        e = float(self.scales[i, j]) if scale is None else check_scale(scale)
        if dim not in (None, 1, 2):
            raise InvalidInputError(
                f"dim must be 1 (edges), 2 (triangles) or None (both), got {dim!r}"
            )
        SA, SB = self.edge_birth_a[i, j], self.edge_birth_b[i, j]
        m = SA.shape[0]
        M = (SA <= e) & (SB <= e)
        np.fill_diagonal(M, False)
        keys = self.keys
        out: list[dict] = []
        if dim in (None, 1):
            p, q = np.nonzero(np.triu(M, 1))
            out += [
                {
                    "tokens": (keys[x], keys[y]),
                    "birth_a": float(SA[x, y]),
                    "birth_b": float(SB[x, y]),
                }
                for x, y in zip(p.tolist(), q.tolist())
            ]
        if dim in (None, 2) and m >= 3:
            p, q = np.nonzero(np.triu(M, 1))
            U = np.triu(M, 1)
            for x, y in zip(p.tolist(), q.tolist()):
                for z in np.flatnonzero(U[x] & U[y]).tolist():
                    out.append(
                        {
                            "tokens": (keys[x], keys[y], keys[z]),
                            "birth_a": float(max(SA[x, y], SA[x, z], SA[y, z])),
                            "birth_b": float(max(SB[x, y], SB[x, z], SB[y, z])),
                        }
                    )
        return out

    # ------------------------------------------------------------------ tables
    def grid(
        self, *, name: str = "bottleneck", dim: int | None = None, scope: str = "text"
    ) -> np.ndarray:
        """A (layers × heads) table.

        Parameters
        ----------
        name : str
            A diagram distance (:data:`DISTANCE_NAMES`) or a count (:data:`COUNT_NAMES`),
            or ``"scale"``.
        dim : int, optional
            Homology dimension for distances (default: :meth:`default_dim` of ``name`` and
            ``scope``, the dimension the default ranking uses).
        scope : {"text", "shared"}
            Distances between the whole texts' diagrams, or between the shared tokens'.

        Returns
        -------
        ndarray of shape (n_layers, n_heads)
        """
        if name == "scale":
            return self.scales.copy()
        if name in COUNT_NAMES:
            return self.counts[name].copy()
        if name not in DISTANCE_NAMES:
            raise InvalidInputError(
                f"unknown table {name!r}; allowed: "
                f"{', '.join(DISTANCE_NAMES + COUNT_NAMES)}, 'scale'"
            )
        check_choice(scope, "scope", ("text", "shared"))
        d = self._dim(dim, name, scope)
        src = self.diagram_distances if scope == "text" else self.shared_diagram_distances
        return src[name][:, :, d].copy()

    def _dim(self, dim: int | None, by: str = "bottleneck", scope: str = "text") -> int:
        if dim is None:
            return self.default_dim(by=by, scope=scope)
        return check_dim(dim, self.maxdim)

    def default_dim(self, *, by: str = "bottleneck", scope: str = "text") -> int:
        """The homology dimension a ranking by the diagram distance ``by`` uses when none is given.

        The highest dimension in which no value is shared by more than half of the heads (NaN
        left out), H0 when there is none (:data:`attntopo.analyses.RANKING_RULE`).  On short
        texts most heads have no H1 bar in either text and an H1 distance of exactly 0: this
        is then H0.
        """
        if by not in DISTANCE_NAMES:
            raise InvalidInputError(f"by must be one of {', '.join(DISTANCE_NAMES)}; got {by!r}")
        check_choice(scope, "scope", ("text", "shared"))
        src = self.diagram_distances if scope == "text" else self.shared_diagram_distances
        return informative_dim(src[by])

    @property
    def ranking_dim(self) -> int:
        """The homology dimension of the default ranking (bottleneck between the whole texts):
        what :meth:`most_similar_heads`, :meth:`summary`'s ``rank``, the command line's table,
        the explorer and the figures' outlines use without ``dim``.  See :meth:`default_dim`."""
        return self.default_dim(by="bottleneck", scope="text")

    def ranking(
        self,
        *,
        by: str = "bottleneck",
        dim: int | None = None,
        scope: str = "text",
        similar: bool = True,
    ) -> Columns:
        """Every head ranked, best first.

        Parameters
        ----------
        by : str
            A diagram distance (:data:`DISTANCE_NAMES`; similar = small) in dimension ``dim``,
            or ``"shared_edges"``/``"shared_triangles"`` (similar = many).
        dim : int, optional
            Homology dimension of a distance; default :meth:`default_dim` (the highest one in
            which no value is shared by more than half of the heads).
        scope : {"text", "shared"}
        similar : bool, default True
            Most similar first; ``False``: most different first.

        Returns
        -------
        Columns
            ``layer``, ``head`` (model indices), ``value`` (the number ranked), ``rank``
            (``scipy.stats.rankdata(method="min")``: 1 is the best and equal values share the
            smallest rank of their group) and ``n_tied`` (heads sharing that rank; 1: no tie),
            one row per head.  Within a tie heads are listed by the same distance summed over
            all dimensions, then by layer and head; that order never changes a rank.  NaN (no
            shared token with ``scope="shared"``) ranks last.
        """
        if by not in DISTANCE_NAMES + ("shared_edges", "shared_triangles"):
            raise InvalidInputError(
                f"by must be one of {', '.join(DISTANCE_NAMES)}, "
                f"shared_edges, shared_triangles; got {by!r}"
            )
        g = self.grid(name=by, dim=dim, scope=scope).astype(np.float64).ravel()
        # a distance: small = similar; a count of shared simplices: large = similar
        sign = (1.0 if by in DISTANCE_NAMES else -1.0) * (1.0 if similar else -1.0)
        tot = None
        if by in DISTANCE_NAMES:
            src = self.diagram_distances if scope == "text" else self.shared_diagram_distances
            tot = sign * src[by].sum(-1).ravel()
        return ranked_heads(self.layers, self.heads, g, sign * g, tot)

    def _ranked(
        self, k: int, by: str, dim: int | None, scope: str, similar: bool
    ) -> list[tuple[int, int, float]]:
        k = check_positive_int(k, "k", allow_none=False)
        r = self.ranking(by=by, dim=dim, scope=scope, similar=similar)
        return [
            (int(r["layer"][t]), int(r["head"][t]), float(r["value"][t]))
            for t in range(min(int(k), r.n_rows))
        ]

    def most_similar_heads(
        self, *, k: int = 5, by: str = "bottleneck", dim: int | None = None, scope: str = "text"
    ) -> list[tuple[int, int, float]]:
        """The ``k`` heads where the two texts' topology agrees most.

        ``by`` a diagram distance (smallest first, in dimension ``dim``; default
        :attr:`ranking_dim`, the highest dimension without a majority tie) or
        ``"shared_edges"``/``"shared_triangles"`` (largest first).  Returns
        ``[(layer, head, value), ...]`` (model indices), the first ``k`` rows of
        :meth:`ranking`, which also gives each head's rank with ties shared (equal values
        are listed by the distance summed over all dimensions, then by layer and head).
        """
        return self._ranked(k, by, dim, scope, True)

    def most_different_heads(
        self, *, k: int = 5, by: str = "bottleneck", dim: int | None = None, scope: str = "text"
    ) -> list[tuple[int, int, float]]:
        """The ``k`` heads where the two texts' topology differs most (see
        :meth:`most_similar_heads`)."""
        return self._ranked(k, by, dim, scope, False)

    def summary(self) -> Columns:
        """Per-head table as columns (arrays of length n_layers · n_heads, layer-major).

        Columns: ``layer``, ``head``, ``scale``, ``{name}_h{d}`` for every diagram distance
        and dimension (whole texts), ``shared_{name}_h{d}`` (shared tokens), the counts, and
        the default ranking: ``rank`` (1 = most similar; tied heads share the smallest rank,
        see :meth:`ranking`) and ``rank_by``, the column it ranks (``"bottleneck_h{d}"`` with
        ``d`` = :attr:`ranking_dim`).
        """
        L, H = len(self.layers), len(self.heads)
        cols: dict[str, np.ndarray] = {
            "layer": np.repeat(np.array(self.layers, dtype=np.int64), H),
            "head": np.tile(np.array(self.heads, dtype=np.int64), L),
            "scale": self.scales.ravel().copy(),
        }
        for prefix, src in (
            ("", self.diagram_distances),
            ("shared_", self.shared_diagram_distances),
        ):
            for name in DISTANCE_NAMES:
                for d in range(self.maxdim + 1):
                    cols[f"{prefix}{name}_h{d}"] = src[name][:, :, d].ravel().copy()
        for name in COUNT_NAMES:
            cols[name] = self.counts[name].ravel().copy()
        d = self.ranking_dim
        src = self.diagram_distances["bottleneck"]
        cols["rank"] = rank_order(src[:, :, d].ravel(), src.sum(-1).ravel())[1]
        cols["rank_by"] = np.full(L * H, f"bottleneck_h{d}")
        return Columns(cols)

    def head_report(self, layer: int | None = None, head: int | None = None) -> dict:
        """Everything about one head as plain data (JSON-ready apart from ``inf``)."""
        i, j = self._pos(layer, head)
        lay, hd = self.layers[i], self.heads[j]
        return {
            "layer": lay,
            "head": hd,
            "scale": float(self.scales[i, j]),
            "diagram_distances": {
                n: self.diagram_distances[n][i, j].tolist() for n in DISTANCE_NAMES
            },
            "shared_diagram_distances": {
                n: self.shared_diagram_distances[n][i, j].tolist() for n in DISTANCE_NAMES
            },
            "counts": {n: int(self.counts[n][i, j]) for n in COUNT_NAMES},
            "pairs": self.pairs(lay, hd),
            "shared_simplices": [
                {**s, "tokens": list(s["tokens"])} for s in self.shared_simplices(lay, hd)
            ],
        }

    def to_dict(self, *, k: int = 5, dim: int | None = None) -> dict:
        """Plain JSON-safe overview: texts, settings, shared tokens, per-head table, the ``k``
        most similar and most different heads (what ``attntopo compare --json`` starts from).

        ``ranking`` says what the heads are ranked by: ``{"by": "bottleneck", "dim": d,
        "column": "bottleneck_h{d}", "default": true if ``dim`` was not given, "rule"}``
        (``d`` = ``dim`` or :attr:`ranking_dim`).  Each entry of ``most_similar_heads`` and
        ``most_different_heads`` is ``[layer, head, value, rank, n_tied]``: heads with equal
        values share the smallest rank of their group and ``n_tied`` > 1 (:meth:`ranking`).
        """
        k = max(1, min(int(k), len(self.layers) * len(self.heads)))
        d = self._dim(dim)
        return json_safe(
            {
                "kind": "comparison",
                "model": self.a.attention.model,
                "text_a": self.a.attention.text,
                "text_b": self.b.attention.text,
                "metric": self.metric,
                "maxdim": self.maxdim,
                "scale": self.given_scale,
                "layers": list(self.layers),
                "heads": list(self.heads),
                "shared_tokens": [s.to_dict() for s in self.shared_tokens],
                "summary": self.summary().rows(),
                "ranking": self.ranking_info(dim=dim),
                "most_similar_heads": self.ranked_entries(k, dim=d),
                "most_different_heads": self.ranked_entries(k, dim=d, similar=False),
            }
        )

    def ranking_info(self, *, dim: int | None = None) -> dict:
        """What the heads are ranked by, as plain data: ``{"by": "bottleneck", "dim": d, "column":
        "bottleneck_h{d}", "default": dim is None, "rule": RANKING_RULE}`` (``d`` = ``dim`` or
        :attr:`ranking_dim`)."""
        d = self._dim(dim)
        return {
            "by": "bottleneck",
            "dim": d,
            "column": f"bottleneck_h{d}",
            "default": dim is None,
            "rule": RANKING_RULE,
        }

    def ranked_entries(self, k: int, *, dim: int | None = None, similar: bool = True) -> list[list]:
        """The first ``k`` rows of :meth:`ranking` by bottleneck as ``[layer, head, value, rank,
        n_tied]`` lists (JSON's ``most_similar_heads`` / ``most_different_heads``)."""
        r = self.ranking(by="bottleneck", dim=dim, similar=similar)
        return [
            [
                int(r["layer"][t]),
                int(r["head"][t]),
                float(r["value"][t]),
                int(r["rank"][t]),
                int(r["n_tied"][t]),
            ]
            for t in range(min(int(k), r.n_rows))
        ]

    def __repr__(self) -> str:
        return (
            f"Comparison(model={self.a.attention.model!r}, tokens={self.a.attention.n_tokens}/"
            f"{self.b.attention.n_tokens}, shared={len(self.shared_tokens)}, "
            f"layers={len(self.layers)}, heads={len(self.heads)}, maxdim={self.maxdim})"
        )

    # ---------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta: dict = {}
        arrays: dict[str, np.ndarray] = {}
        nest(meta, arrays, "a", self.a)
        nest(meta, arrays, "b", self.b)
        arrays["scales"] = self.scales
        arrays["connection_a"] = self.connection_a
        arrays["connection_b"] = self.connection_b
        for n in DISTANCE_NAMES:
            arrays[f"dist__{n}"] = self.diagram_distances[n]
            arrays[f"shared_dist__{n}"] = self.shared_diagram_distances[n]
        for n in COUNT_NAMES:
            arrays[f"count__{n}"] = self.counts[n]
        if self.shared_diagrams_a is not None:
            for side, grid in (("a", self.shared_diagrams_a), ("b", self.shared_diagrams_b)):
                arrays.update(pack_diagrams(grid, prefix=f"shared_{side}__", maxdim=self.maxdim))
        meta.update(
            {
                "shared_tokens": [s.to_dict() for s in self.shared_tokens],
                "scale": self.given_scale,
                "alignment": [list(p) for p in self.alignment]
                if self.alignment is not None
                else None,
                "alignment_units": self.alignment_units,
                "include_special": self.include_special,
                "has_shared_diagrams": self.shared_diagrams_a is not None,
                "provenance": self.provenance,
            }
        )
        return meta, arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: dict) -> "Comparison":
        a = unnest(meta, arrays, "a", Analysis)
        b = unnest(meta, arrays, "b", Analysis)
        if a is None or b is None:
            raise ResultFormatError("a comparison must hold the analyses of both texts")
        L, H = len(a.layers), len(a.heads)
        shared = [SharedToken.from_dict(d) for d in meta["shared_tokens"]]
        m = len(shared)
        sa = sb = None
        if meta.get("has_shared_diagrams"):
            sa, sb = (
                unpack_diagrams(
                    arrays,
                    prefix=f"shared_{side}__",
                    maxdim=a.maxdim,
                    shape=(L, H),
                    engine=a.engine,
                )
                for side in ("a", "b")
            )
        thr = meta["scale"]
        lh = (L, H, a.maxdim + 1)
        return cls(
            a=a,
            b=b,
            shared_tokens=shared,
            scales=read_array(arrays, "scales", kind="f", shape=(L, H), nonneg=True),
            given_scale=None if thr is None else json_float(thr),
            shared_diagrams_a=sa,
            shared_diagrams_b=sb,
            diagram_distances={
                n: read_array(arrays, f"dist__{n}", kind="f", shape=lh) for n in DISTANCE_NAMES
            },
            shared_diagram_distances={
                n: read_array(arrays, f"shared_dist__{n}", kind="f", shape=lh)
                for n in DISTANCE_NAMES
            },
            counts={
                n: read_array(arrays, f"count__{n}", kind="i", shape=(L, H), nonneg=True)
                for n in COUNT_NAMES
            },
            connection_a=read_array(
                arrays, "connection_a", kind="f", shape=(L, H, m, m), nonneg=True
            ),
            connection_b=read_array(
                arrays, "connection_b", kind="f", shape=(L, H, m, m), nonneg=True
            ),
            alignment=None
            if meta.get("alignment") is None
            else [tuple(p) for p in meta["alignment"]],
            alignment_units=meta.get("alignment_units", "word"),
            include_special=bool(meta.get("include_special", False)),
            provenance=meta.get("provenance", {}),
        )


@reports("compare")  # progress arrives as an open Reporter
def compare(
    text_a: str | Attention,
    text_b: str | Attention,
    model: Any = DEFAULT_MODEL,
    *,
    layers: int | Sequence[int] | None = None,
    heads: int | Sequence[int] | None = None,
    metric: str = "jensen_shannon",
    maxdim: int = 1,
    scale: float | None = None,
    drop_special: bool = False,
    include_special: bool = False,
    alignment: Sequence[tuple[int, int]] | None = None,
    alignment_units: str = "word",
    engine: str | None = None,
    n_jobs: int | None = None,
    truncate: bool = False,
    paper_compat: PaperMode | bool | None = False,
    progress: ProgressOption = None,
) -> Comparison:
    """Compare the attention topology of two texts, head by head.

    Parameters
    ----------
    text_a, text_b : str or Attention
        Two texts (run through ``model`` in one batched pass), or two :class:`Attention`
        objects of the same model, layers and heads (``model`` is then ignored).
    model : str or AttentionModel
        ``"minilm"``, ``"smollm2"``, any hub id (a multilingual one for translations), a
        folder, or a loaded model.
    layers, heads : int or list of int, optional
        0-based model indices; ``None`` = all layers / all heads.
    metric : str
        Token distance (Jensen–Shannon base 2 by default).
    maxdim : {0, 1, 2}
        Highest homology dimension of the diagrams.
    scale : float, optional
        The scale ``eps`` at which simplices among shared tokens are compared (edges and
        triangles present in both texts).  The filtration itself is never cut: diagrams and
        connection scales use all scales.  ``None`` (default) chooses a scale per head: the
        median of the finite H0 deaths of both texts pooled (the minimum-spanning-tree edge
        lengths), where about half of each text's tokens have merged.  Heads differ widely in
        their distance range (per-head medians of the pairwise JS distances range from 0.17 to
        1.0 on MiniLM), so one fixed scale leaves most heads with no edges at all; pass e.g.
        ``scale=0.2`` to use one scale everywhere.
    drop_special : bool
        Remove special tokens and renormalize rows before measuring distances.
    include_special : bool
        Also match special tokens ([CLS] with [CLS], …) as shared tokens (when kept).
    alignment : list of (int, int), optional
        Pairs tokens across the texts instead of string matching (translations): pairs of
        word indices (``alignment_units="word"``: positions in
        :func:`~attntopo.words.split_words` of each text) or of token positions (``"token"``:
        positions in the analysed token lists, after ``drop_special``).  One-to-one.
    alignment_units : {"word", "token"}
    engine, n_jobs
        Persistence engine and worker processes (see :func:`~attntopo.topology.persistence_batch`).
    truncate : bool
        Cut texts longer than the model's context instead of raising.
    paper_compat : {False, None, "notebook", "listing"}, default False
        Reproduce the founding paper (a reproduction aid, never the default):

        - ``"notebook"``: its text-comparison notebook (``persistent_homology_of_attention``,
          ``compute_persistence`` and ``compute_bottleneck_distance``): token distances with
          the rows softmaxed again, natural log, fourth root of the divergence
          (:func:`~attntopo.distances.token_distances` with ``paper_compat="notebook"``), and
          the diagram distances taken between diagrams without the bars of persistence
          ≤ :data:`~attntopo.analyses._comparison_heads.PAPER_MIN_PERSISTENCE`, 0.01 (its
          ``persistence(min_persistence=0.01)``).  The number the notebook prints for a head
          is ``grid("bottleneck", dim=0)`` (it compares the H0 diagrams only; the one infinite
          H0 bar of each text is born at 0 and costs nothing, as in gudhi).  The stored
          diagrams (:attr:`Comparison.a`, :attr:`Comparison.b`) are the full ones, as
          :func:`attntopo.analyze` with the same mode gives them.
        - ``"listing"``: the printed Listing 1's token distance (square root of the
          natural-log divergence of the softmaxed rows); everything else attntopo's.

        The notebook works on one chosen head and in float32 (docs/concepts.md §5).
    progress : bool, callable or None, default None
        One progress bar for the whole comparison: ``None`` a bar on a terminal or in
        Jupyter, ``True``/``False``, or a callback ``callback(done, total, stage)`` (see
        :mod:`attntopo._progress`); stages ``"attention"``, ``"distances"``,
        ``"persistence"``, ``"diagram distances"``, ``"connection scales"``.

    Returns
    -------
    Comparison

    Notes
    -----
    Shared tokens are matched at word level (see the module docs): normalized word string
    (NFKC, case-folded, without ``##``/``Ġ``/``▁``) and occurrence — the 2nd *the* of A
    matches the 2nd *the* of B — so subword splits still match; a word is represented by
    its first token.  Diagram distances use :mod:`attntopo.topology.diagram_distances`
    per homology dimension (never pooled), with infinite bars matched to infinite bars
    (the one infinite H0 bar of each text is born at 0, so it costs nothing).
    """
    metric = check_metric(metric)
    maxdim = check_maxdim(maxdim)
    scale = check_scale(
        scale, "scale", allow_inf=False, allow_none=True, hint="None: a scale per head; e.g. 0.2"
    )
    check_choice(alignment_units, "alignment_units", ("word", "token"))
    pairs = check_alignment(alignment) if alignment is not None else None
    paper = check_paper_compat(paper_compat)

    (A, B), info = attentions_of(
        [text_a, text_b], model, layers, heads, drop_special, truncate, progress
    )
    shared = (
        match_aligned(A, B, pairs, alignment_units)
        if pairs is not None
        else match_words(A, B, include_special=include_special and not drop_special)
    )
    m = len(shared)
    L, H = A.weights.shape[0], A.weights.shape[1]
    # distances and persistence of both texts (and of their shared tokens), then per head
    # the diagram distances (and the connection scales of the shared tokens)
    progress.add_total(L * H * (2 + 2 + (2 if m else 0) + 1 + (1 if m else 0)))
    DA, DB, TA, TB = _text_distances(A, B, str(info.get("device", "cpu")), metric, paper, progress)
    ia = np.array([s.a for s in shared], dtype=np.int64)
    ib = np.array([s.b for s in shared], dtype=np.int64)
    SA = DA[:, :, ia][:, :, :, ia]
    SB = DB[:, :, ib][:, :, :, ib]

    # one persistence batch: full A, full B, shared A, shared B
    mats = list(DA.reshape(-1, DA.shape[-1], DA.shape[-1])) + list(
        DB.reshape(-1, DB.shape[-1], DB.shape[-1])
    )
    if m:
        mats += list(SA.reshape(-1, m, m)) + list(SB.reshape(-1, m, m))
    dgms = persistence_batch(mats, maxdim=maxdim, engine=engine, n_jobs=n_jobs, progress=progress)
    used_engine = dgms[0].engine
    grid_a = _grid(dgms, L, H, 0)
    grid_b = _grid(dgms, L, H, L * H)
    sh_a = _grid(dgms, L, H, 2 * L * H) if m else None
    sh_b = _grid(dgms, L, H, 3 * L * H) if m else None

    prov = make_provenance(
        info,
        settings={
            "metric": metric,
            "engine": used_engine,
            "drop_special": drop_special,
            "truncate": truncate,
            "paper_compat": stored_paper_mode(paper),
        },
    )
    an_a = Analysis(
        A, DA, grid_a, metric, maxdim, math.inf, used_engine, stored_paper_mode(paper), dict(prov)
    )
    an_b = Analysis(
        B, DB, grid_b, metric, maxdim, math.inf, used_engine, stored_paper_mode(paper), dict(prov)
    )

    scales = np.full((L, H), scale) if scale is not None else _adaptive_scales(grid_a, grid_b)

    dist, sdist = _head_diagram_distances(grid_a, grid_b, sh_a, sh_b, maxdim, paper, progress)
    counts = _shared_counts(SA, SB, scales)

    conn_a = np.zeros((L, H, m, m))
    conn_b = np.zeros((L, H, m, m))
    if m:
        progress.stage("connection scales")
        conn_a = shared_connection_scales(TA, ia)
        conn_b = shared_connection_scales(TB, ib)
        progress.advance(L * H)
    del TA, TB

    return Comparison(
        a=an_a,
        b=an_b,
        shared_tokens=shared,
        scales=scales,
        given_scale=scale,
        shared_diagrams_a=sh_a,
        shared_diagrams_b=sh_b,
        diagram_distances={n: dist[k] for k, n in enumerate(DISTANCE_NAMES)},
        shared_diagram_distances={n: sdist[k] for k, n in enumerate(DISTANCE_NAMES)},
        counts=counts,
        connection_a=conn_a,
        connection_b=conn_b,
        alignment=pairs,
        alignment_units=alignment_units,
        include_special=bool(include_special),
        provenance=prov,
    )
