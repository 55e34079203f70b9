"""One phrase in several contexts: its own metric space in each, and how much it changes.

:func:`phrase_topology` takes the token span of one phrase in each of several contexts,
the phrase's own metric space inside each context (the sub-matrix of the context's
distance matrix), its diagrams, and the pairwise diagram distances between contexts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np

from .._progress import ProgressOption, reports
from .._validation import (
    check_choice,
    check_dim,
    check_maxdim,
    check_metric,
    check_nonneg_int,
    check_positive_int,
)
from ..attention import Attention, resolve_index
from ..constants import DEFAULT_MODEL, DISTANCE_NAMES
from ..distances import row_distances
from ..errors import EmptyTextError, InvalidInputError, ResultFormatError
from ..io import json_safe
from ..topology import Diagram, pack_diagrams, persistence_batch, unpack_diagrams
from ..words import find_phrase, phrase_tokens
from ._comparison_heads import _grid, _pair_distances
from ._inputs import attentions_of, head_position
from ._provenance import make_provenance
from ._result import Columns, Result, read_array

__all__ = ["PhraseTopology", "phrase_topology"]


@dataclass(eq=False)
class PhraseTopology(Result):
    """The shape of one phrase in several contexts.

    Attributes
    ----------
    phrase : str
    contexts : list of str
    spans : list of (int, int)
        Character span of the phrase in each context.
    token_indices : list of list of int
        The phrase's tokens in each context (positions in the context's token list, after
        ``drop_special``): every token whose characters overlap the span.
    token_labels : list of list of str
    sub_distances : list of ndarray of shape (L, H, k_c, k_c)
        The phrase's own metric space in each context: the sub-matrix of the context's token
        distances (rows computed over the whole context).
    diagrams : list of list of list of Diagram
        ``diagrams[c][i][j]``: context ``c``, layer position ``i``, head position ``j``.
    diagram_distances : dict of str to ndarray of shape (L, H, maxdim + 1, C, C)
        Pairwise diagram distances between contexts (:data:`DISTANCE_NAMES`), per homology
        dimension.
    layers, heads : tuple of int
    model, metric, maxdim, engine, provenance
    """

    phrase: str
    contexts: list[str]
    spans: list[tuple[int, int]]
    token_indices: list[list[int]]
    token_labels: list[list[str]]
    sub_distances: list[np.ndarray]
    diagrams: list[list[list[Diagram]]]
    diagram_distances: dict[str, np.ndarray]
    layers: tuple[int, ...]
    heads: tuple[int, ...]
    model: str
    metric: str
    maxdim: int
    engine: str
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = "phrase_topology"

    def _pos(self, layer: int | None, head: int | None) -> tuple[int, int]:
        if layer is None or head is None:
            if len(self.layers) == 1 and len(self.heads) == 1:
                return 0, 0
            raise InvalidInputError(
                "several heads were analysed: give layer= and head= (0-based model indices)"
            )
        return head_position(layer, head, self.layers, self.heads, self.provenance.get("model"))

    def _dim(self, dim: int | None) -> int:
        # phrases are short (H1 needs at least 4 tokens): H0 by default
        if dim is None:
            return 0
        return check_dim(dim, self.maxdim)

    def matrix(
        self,
        layer: int | None = None,
        head: int | None = None,
        *,
        dim: int | None = None,
        by: str = "bottleneck",
    ) -> np.ndarray:
        """(C, C) pairwise diagram distances between contexts
        for one head and dimension (H0 by default)."""
        check_choice(by, "by", DISTANCE_NAMES)
        i, j = self._pos(layer, head)
        return self.diagram_distances[by][i, j, self._dim(dim)].copy()

    def diagram(self, context: int, layer: int | None = None, head: int | None = None) -> Diagram:
        """The phrase's diagram in one context and head."""
        i, j = self._pos(layer, head)
        c = resolve_index(context, len(self.contexts), "context")
        return self.diagrams[c][i][j]

    def spread(self, *, dim: int | None = None, by: str = "bottleneck") -> np.ndarray:
        """(L, H): mean pairwise distance between contexts, per head (small = the phrase keeps
        its shape across contexts).  NaN with a single context."""
        check_choice(by, "by", DISTANCE_NAMES)
        X = self.diagram_distances[by][:, :, self._dim(dim)]
        C = X.shape[-1]
        if C < 2:
            return np.full(X.shape[:2], np.nan)
        iu = np.triu_indices(C, 1)
        return X[:, :, iu[0], iu[1]].mean(-1)

    def most_stable_heads(
        self, *, k: int = 5, dim: int | None = None, by: str = "bottleneck"
    ) -> list[tuple[int, int, float]]:
        """The ``k`` heads where the phrase's diagrams vary least across contexts:
        ``[(layer, head, mean distance), ...]``."""
        k = check_positive_int(k, "k", allow_none=False)
        S = self.spread(dim=dim, by=by)
        flat = np.where(np.isnan(S), np.inf, S).ravel()
        order = np.lexsort((np.arange(flat.size), flat))[: int(k)]
        H = len(self.heads)
        return [
            (self.layers[t // H], self.heads[t % H], float(S.ravel()[t])) for t in order.tolist()
        ]

    def summary(self) -> Columns:
        """Per-head table as columns (arrays of length n_layers · n_heads, layer-major).

        Columns: ``layer``, ``head`` and ``spread_{name}_h{d}``: :meth:`spread` (the mean
        pairwise distance between the contexts' diagrams, NaN with one context) for every
        diagram distance :data:`DISTANCE_NAMES` and dimension ``d``.
        """
        L, H = len(self.layers), len(self.heads)
        cols: dict[str, np.ndarray] = {
            "layer": np.repeat(np.array(self.layers, dtype=np.int64), H),
            "head": np.tile(np.array(self.heads, dtype=np.int64), L),
        }
        for name in DISTANCE_NAMES:
            for d in range(self.maxdim + 1):
                cols[f"spread_{name}_h{d}"] = self.spread(dim=d, by=name).ravel()
        return Columns(cols)

    def to_dict(self, *, k: int = 5) -> dict:
        """Plain JSON-safe overview: phrase, settings, contexts, spread per head, the ``k`` most
        stable heads (what ``attntopo phrase --json`` starts from)."""
        k = max(1, min(int(k), len(self.layers) * len(self.heads)))
        return json_safe(
            {
                "kind": "phrase_topology",
                "phrase": self.phrase,
                "model": self.model,
                "metric": self.metric,
                "maxdim": self.maxdim,
                "layers": list(self.layers),
                "heads": list(self.heads),
                "contexts": [
                    {"text": c, "span": list(s), "tokens": lab, "token_indices": idx}
                    for c, s, lab, idx in zip(
                        self.contexts, self.spans, self.token_labels, self.token_indices
                    )
                ],
                "spread": {
                    n: {f"h{d}": self.spread(dim=d, by=n).tolist() for d in range(self.maxdim + 1)}
                    for n in DISTANCE_NAMES
                },
                "most_stable_heads": self.most_stable_heads(k=k),
            }
        )

    def __repr__(self) -> str:
        return (
            f"PhraseTopology(phrase={self.phrase!r}, contexts={len(self.contexts)}, "
            f"layers={len(self.layers)}, heads={len(self.heads)}, maxdim={self.maxdim})"
        )

    # ---------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        arrays: dict[str, np.ndarray] = {}
        for c, sub in enumerate(self.sub_distances):
            arrays[f"sub_{c}"] = sub
            arrays.update(pack_diagrams(self.diagrams[c], prefix=f"dgm_{c}__", maxdim=self.maxdim))
        for n in DISTANCE_NAMES:
            arrays[f"dist__{n}"] = self.diagram_distances[n]
        meta = {
            "phrase": self.phrase,
            "contexts": self.contexts,
            "spans": [list(s) for s in self.spans],
            "token_indices": self.token_indices,
            "token_labels": self.token_labels,
            "layers": list(self.layers),
            "heads": list(self.heads),
            "model": self.model,
            "metric": self.metric,
            "maxdim": self.maxdim,
            "engine": self.engine,
            "provenance": self.provenance,
        }
        return meta, arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: dict) -> "PhraseTopology":
        L, H, maxdim = len(meta["layers"]), len(meta["heads"]), check_maxdim(meta["maxdim"])
        C = len(meta["contexts"])
        token_indices = [[int(t) for t in x] for x in meta["token_indices"]]
        if len(token_indices) != C:
            raise ResultFormatError(f"{len(token_indices)} token lists for {C} contexts")
        return cls(
            phrase=meta["phrase"],
            contexts=list(meta["contexts"]),
            spans=[tuple(s) for s in meta["spans"]],
            token_indices=token_indices,
            token_labels=[list(x) for x in meta["token_labels"]],
            sub_distances=[
                read_array(
                    arrays, f"sub_{c}", kind="f", shape=(L, H, len(idx), len(idx)), nonneg=True
                )
                for c, idx in enumerate(token_indices)
            ],
            diagrams=[
                unpack_diagrams(
                    arrays, prefix=f"dgm_{c}__", maxdim=maxdim, shape=(L, H), engine=meta["engine"]
                )
                for c in range(C)
            ],
            diagram_distances={
                n: read_array(arrays, f"dist__{n}", kind="f", shape=(L, H, maxdim + 1, C, C))
                for n in DISTANCE_NAMES
            },
            layers=tuple(meta["layers"]),
            heads=tuple(meta["heads"]),
            model=meta["model"],
            metric=meta["metric"],
            maxdim=maxdim,
            engine=meta["engine"],
            provenance=meta.get("provenance", {}),
        )


@reports("phrase")  # progress arrives as an open Reporter
def phrase_topology(
    phrase: str,
    contexts: Sequence[str],
    model: Any = DEFAULT_MODEL,
    *,
    layers: int | Sequence[int] | None = None,
    heads: int | Sequence[int] | None = None,
    metric: str = "jensen_shannon",
    maxdim: int = 1,
    drop_special: bool = False,
    occurrence: int = 0,
    engine: str | None = None,
    n_jobs: int | None = None,
    truncate: bool = False,
    progress: ProgressOption = None,
) -> PhraseTopology:
    """The topology of one phrase in several contexts, and how much it changes between them.

    Parameters
    ----------
    phrase : str
        Searched case-insensitively in each context (whitespace matches any whitespace).
    contexts : list of str
        At least one context; each must contain the phrase.  (Attention objects of one
        model are accepted too; ``model`` is then ignored.)
    model : str or AttentionModel
    layers, heads : int or list of int, optional
        0-based model indices; ``None`` = all.
    metric, maxdim, drop_special, engine, n_jobs, truncate
        As in :func:`compare`.
    occurrence : int
        Which occurrence of the phrase to use in every context (0 = the first).
    progress : bool, callable or None, default None
        One progress bar for the whole run: ``None`` a bar on a terminal or in a notebook,
        ``True``/``False``, or a callback ``callback(done, total, stage)`` (see
        :mod:`attntopo._progress`); stages ``"loading model"`` (when it loads),
        ``"attention"`` (one unit per context), ``"distances"`` (one per context and head),
        ``"persistence"`` (one per context and head) and ``"diagram distances"`` (one per
        pair of contexts and head).

    Returns
    -------
    PhraseTopology

    Notes
    -----
    The phrase's tokens in a context are those whose character offsets overlap the
    phrase's span — never "every token whose id appears in the phrase" (which would also
    take every other *the* of the context).  Their distances are the context's own
    (each row is a distribution over all the context's tokens), computed for the phrase's
    ``k`` tokens alone (``k²`` pairs, not the context's ``n²``); the sub-matrix is the
    phrase's metric space in that context, whose Vietoris–Rips diagrams are compared
    between contexts per homology dimension.  All contexts go through the model in one
    batched pass and all diagrams are computed in one parallel batch.
    """
    if not isinstance(phrase, str):
        raise InvalidInputError(f"phrase must be a string, got {type(phrase).__name__}")
    if not phrase.strip():
        raise EmptyTextError("phrase is empty or only whitespace: give the word(s) to follow")
    if isinstance(contexts, str):
        raise InvalidInputError("contexts must be a list of strings, not one string")
    contexts = list(contexts)
    if not contexts:
        raise InvalidInputError("give at least one context")
    for c in contexts:
        if not isinstance(c, (str, Attention)):
            raise InvalidInputError(
                f"contexts must be strings (or Attention objects), got {type(c).__name__}"
            )
    texts = [c if isinstance(c, str) else c.text for c in contexts]
    occurrence = check_nonneg_int(occurrence, "occurrence")
    metric = check_metric(metric)
    maxdim = check_maxdim(maxdim)
    spans = []
    for k, c in enumerate(texts):
        try:
            spans.append(find_phrase(phrase, c, occurrence=int(occurrence)))
        except InvalidInputError as e:
            raise InvalidInputError(f"context {k}: {e}") from None

    atts, info = attentions_of(contexts, model, layers, heads, drop_special, truncate, progress)
    C = len(contexts)
    L, H = atts[0].weights.shape[:2]
    # distances and persistence per context and head, then per pair of contexts and head
    progress.add_total(L * H * (2 * C + C * (C - 1) // 2))
    token_indices, labels, subs = [], [], []
    for k, (att, span) in enumerate(zip(atts, spans)):
        idx = phrase_tokens(att, span)
        if not idx:
            raise InvalidInputError(
                f"context {k}: the phrase's characters {span} map to no token "
                f"(the tokenizer gave no offsets, or the text was truncated before it)"
            )
        token_indices.append(idx)
        labels.append([att.labels[t] for t in idx])
        # the phrase's rows alone (each over all the context's keys): k² pairs, not n², and
        # the same numbers as the full matrix's block (the same bits with the C kernel)
        progress.stage("distances")
        subs.append(row_distances(att.weights[:, :, np.array(idx), :], metric=metric))
        progress.advance(L * H)
    mats = [mat for S in subs for mat in S.reshape(-1, S.shape[-1], S.shape[-1])]
    dgms = persistence_batch(mats, maxdim=maxdim, engine=engine, n_jobs=n_jobs, progress=progress)
    grids = [_grid(dgms, L, H, c * L * H) for c in range(C)]
    dist = np.zeros((3, L, H, maxdim + 1, C, C))
    progress.stage("diagram distances")
    for x in range(C):
        for y in range(x + 1, C):
            for i in range(L):
                for j in range(H):
                    v = _pair_distances(grids[x][i][j], grids[y][i][j])
                    dist[:, i, j, :, x, y] = v
                    dist[:, i, j, :, y, x] = v
                    progress.advance()
    return PhraseTopology(
        phrase=phrase,
        contexts=texts,
        spans=spans,
        token_indices=token_indices,
        token_labels=labels,
        sub_distances=subs,
        diagrams=grids,
        diagram_distances={n: dist[k] for k, n in enumerate(DISTANCE_NAMES)},
        layers=tuple(atts[0].layers),
        heads=tuple(atts[0].heads),
        model=atts[0].model,
        metric=metric,
        maxdim=maxdim,
        engine=dgms[0].engine,
        provenance=make_provenance(
            info,
            settings={
                "metric": metric,
                "engine": dgms[0].engine,
                "drop_special": drop_special,
                "truncate": truncate,
                "occurrence": int(occurrence),
            },
        ),
    )
