"""The feature sets, declared once: :data:`FEATURE_SETS` maps each set's name to its record.

A record (:class:`FeatureSet`) says what the set is (a one-line summary and where it comes
from), what it needs (single texts or (prompt, response) pairs; whether it sees the attention
with special tokens dropped), its columns (:meth:`FeatureSet.quantities`) and how it is
computed, in one of two ways:

* ``head``: a function of one group of heads of one layer of one text (a
  :class:`~attntopo.features._layers.HeadGroup`: the attention ``W`` as the model computed it,
  ``Wr`` with special tokens dropped when asked, their distances ``D`` …) returning one row
  per head, ndarray of shape (H, len(quantities));
* ``diagrams``: a function of the Rips persistence diagrams of every head of a chunk (N
  heads: ``diagrams(dgms, sizes, st)`` → (N, len(quantities))), of the token distances by
  default or of the matrices its ``matrices`` function makes from the heads (``barcode``);
* ``layer`` and ``text``: one block of columns per text, not per head (``zigzag``):
  ``layer(att, st, drop_special)`` keeps what the set needs of each whole layer, and
  ``text(kept, st)`` (the layers' values in the model's order) gives the text's
  ``len(quantities)`` values, named ``L*H*.{set}.{quantity}``.

Every list of sets in the package derives from this table: the settings' check
(:class:`~attntopo.features.FeatureSettings`), :data:`DEFAULT_SETS`, the sets that need
persistence or pairs, the chunk's loop over the sets (``_layers.ChunkFeatures``), the column
names, the ``--sets`` help of ``attntopo corpus``, the table of :mod:`attntopo.features`' docstring
and the one in docs/features.md (held equal by a test).

The functions import their modules when called, so that reading the table (the command line's
help does) imports neither torch nor the sets' dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Literal, Mapping

import numpy as np

__all__ = ["FeatureSet", "FEATURE_SETS", "DEFAULT_SETS", "sets_table"]

InputKind = Literal["text", "pair"]


@dataclass(frozen=True)
class FeatureSet:
    """One feature set.

    Attributes
    ----------
    name : str
        The set's name in ``sets=`` and in its columns ``L{layer}H{head}.{name}.{quantity}``.
    summary : str
        One line for humans (help texts, docstrings, docs/features.md).
    source : str
        Where it comes from (a paper's code, or attntopo's own).
    quantities : callable
        ``quantities(st)`` → the quantity names of one head, in column order (``st``: the
        settings dict, :meth:`~attntopo.features.FeatureSettings.st`).
    head : callable, optional
        ``head(group)`` → ndarray of shape (H, k): the set's values of a group of heads.
    diagrams : callable, optional
        ``diagrams(dgms, sizes, st)`` → ndarray of shape (N, k) from N heads' persistence
        diagrams (H0 and H1) of spaces of ``sizes`` (N,) points.
    matrices : callable, optional
        With ``diagrams``: ``matrices(group)`` → (H, n, n) dissimilarities whose diagrams the
        set reads; None: the token distances (shared by every such set).
    layer, text : callable, optional
        Together: a set of one block per text (module docstring).
    input : {"text", "pair"}
        ``"pair"``: the set needs (prompt, response) pairs.
    default : bool
        Computed when no sets are named (:data:`DEFAULT_SETS`).
    drops_special : bool
        Sees the attention with special tokens removed and rows renormalized when
        ``drop_special=True`` (else the attention as the model computed it).
    needs_prompt_tokens : bool
        With ``input="pair"``: a pair whose prompt kept no token but special ones is refused
        (the set attaches the answer to the prompt's tokens), not scored.
    """

    name: str
    summary: str
    source: str
    quantities: Callable[[dict], list[str]]
    head: Callable[[Any], np.ndarray] | None = None
    diagrams: Callable[[list, np.ndarray, dict], np.ndarray] | None = None
    matrices: Callable[[Any], np.ndarray] | None = None
    layer: Callable[[Any, dict, bool], Any] | None = None
    text: Callable[[list, dict], np.ndarray] | None = None
    input: InputKind = "text"
    default: bool = False
    drops_special: bool = False
    needs_prompt_tokens: bool = False

    def __post_init__(self) -> None:
        ways = [self.head is not None, self.diagrams is not None, self.layer is not None]
        if sum(ways) != 1:
            raise TypeError(
                f"feature set {self.name!r}: give exactly one of head=, diagrams= and layer="
            )
        if self.matrices is not None and self.diagrams is None:
            raise TypeError(f"feature set {self.name!r}: matrices= goes with diagrams=")
        if self.needs_prompt_tokens and self.input != "pair":
            raise TypeError(f"feature set {self.name!r}: needs_prompt_tokens= goes with pairs")
        if (self.layer is None) != (self.text is None):
            raise TypeError(f"feature set {self.name!r}: layer= and text= go together")
        if self.on_distances and not self.name.startswith("js"):
            raise TypeError(
                f"feature set {self.name!r} reads the token distances: its name "
                "starts with js (the default metric's), which its columns replace "
                "by the metric's"
            )

    def column(self, st: dict) -> str:
        """The set's name in its columns: a set that reads the token distances is named after
        the default metric (``js…``), and its columns after the one ``st`` asks for
        (``DISTANCES[metric].column``: ``hellinger_image`` for ``js_image``)."""
        metric = st.get("metric", "jensen_shannon")
        if not self.on_distances or metric == "jensen_shannon":
            return self.name
        from ..distances import DISTANCES

        return DISTANCES[metric].column + self.name[len("js") :]

    @property
    def per_text(self) -> bool:
        """Whether the set has one block of columns per text (``L*H*``), not one per head."""
        return self.layer is not None

    @property
    def persistence(self) -> bool:
        """Whether the set reads persistence diagrams (computed in worker processes)."""
        return self.diagrams is not None

    @property
    def on_distances(self) -> bool:
        """Whether the set reads the diagrams of the token distances."""
        return self.diagrams is not None and self.matrices is None


# ------------------------------------------------------------------ the sets' functions
# (each imports its module when called: see the module docstring)
def _js_quantities(st: dict) -> list[str]:
    from ._js import js_names

    return js_names(st["scales"], st["quantiles"])


def _js(dgms: list, sizes: np.ndarray, st: dict) -> np.ndarray:
    from ._js import js_stats

    return js_stats(dgms, sizes, st["scales"], st["quantiles"], st.get("min_persistence", 0.0))


def _per_token_quantities(st: dict) -> list[str]:
    from ._js import per_token_names

    return per_token_names(st["scales"])


def _per_token(dgms: list, sizes: np.ndarray, st: dict) -> np.ndarray:
    from ._js import per_token_stats

    return per_token_stats(_js(dgms, sizes, st), sizes, st["scales"], st["quantiles"])


def _upper(st: dict) -> float:
    """The largest token distance of the settings' metric (the images' and landscapes' grid)."""
    from ..distances import DISTANCES

    return DISTANCES[st.get("metric", "jensen_shannon")].upper


def _pruned(dgms: list, st: dict) -> list:
    mp = st.get("min_persistence", 0.0)
    return [g.prune(mp) for g in dgms] if mp > 0 else dgms


def _image_quantities(st: dict) -> list[str]:
    from ._js import image_names

    return image_names()


def _image(dgms: list, sizes: np.ndarray, st: dict) -> np.ndarray:
    from ._js import image_stats

    return image_stats(_pruned(dgms, st), _upper(st))


def _landscape_quantities(st: dict) -> list[str]:
    from ._js import landscape_names

    return landscape_names()


def _landscape(dgms: list, sizes: np.ndarray, st: dict) -> np.ndarray:
    from ._js import landscape_stats

    return landscape_stats(_pruned(dgms, st), _upper(st))


def _graph_quantities(st: dict) -> list[str]:
    from ._graph import graph_names

    return graph_names(st["thresholds"])


def _graph(g: Any) -> np.ndarray:
    from ._graph import graph_features

    return graph_features(g.Wr, thresholds=g.st["thresholds"], cycle_cap=g.st["cycle_cap"])


def _barcode_quantities(st: dict) -> list[str]:
    from ._barcode import BARCODE_QUANTITIES

    return list(BARCODE_QUANTITIES)


def _barcode_matrices(g: Any) -> np.ndarray:
    from ._barcode import barcode_matrices

    return barcode_matrices(g.Wr)


def _barcode(dgms: list, sizes: np.ndarray, st: dict) -> np.ndarray:
    from ._barcode import barcode_stats

    return barcode_stats(dgms, st.get("min_persistence", 0.0))


def _template_quantities(st: dict) -> list[str]:
    from ._template import TEMPLATES

    return list(TEMPLATES)


def _template(g: Any) -> np.ndarray:
    from ._template import punctuation_mask, template_features

    att = g.att
    return template_features(g.W, punctuation_mask(att.text, att.offsets, att.special))


def _prompt_quantities(st: dict) -> list[str]:
    from ..distances import DISTANCES
    from ._prompt import PROMPT_QUANTITIES

    # the distance score is named after the metric (``js`` for the default)
    name = DISTANCES[st.get("metric", "jensen_shannon")].column
    return [name if q == "js" else q for q in st.get("prompt_quantities", PROMPT_QUANTITIES)]


def _prompt(g: Any) -> np.ndarray:
    from ._prompt import PROMPT_QUANTITIES, prompt_features

    att = g.att
    quantities = tuple(g.st.get("prompt_quantities", PROMPT_QUANTITIES))
    # the prompt score is measured between content tokens: special tokens always go
    mask = g.prompt_mask()
    special = bool(att.special.any())
    if g.device_weights is None and not g.real.special_dropped and special:
        # on the host: each head's content tokens renormalized as drop_special does
        return prompt_features(
            g.W, None, mask, quantities, keep=np.flatnonzero(~att.special), metric=g.st["metric"]
        )
    if g.real.special_dropped or not special:
        A = g.dev_real if g.dev_real is not None else g.Wr
        D = g.D if g.dev_real is None else None  # D went to the host: recomputed on the device
    else:  # on the device, special tokens still in
        A, D = g.device_content(), None
    return prompt_features(A, D, mask, quantities, metric=g.st["metric"])


def _lookback_quantities(st: dict) -> list[str]:
    from ._lookback import lookback_names

    return lookback_names()


def _lookback(g: Any) -> np.ndarray:
    from ._lookback import answer_start, lookback_features

    # the ratio of means is the same on renormalized rows: special tokens are left out
    att = g.att
    start = answer_start(att.special, att.offsets, g.boundary)
    return lookback_features(g.W, start, att.causal, keep=~att.special if g.drop_special else None)


def _zigzag_quantities(st: dict) -> list[str]:
    from ._zigzag import zigzag_names

    return zigzag_names()


def _zigzag_layer(att: Any, st: dict, drop_special: bool) -> tuple[np.ndarray, int]:
    """The layer's graph (its heads' mean decides it) and its number of vertices."""
    from ._zigzag import layer_graph

    keep = np.flatnonzero(~att.special) if drop_special and bool(att.special.any()) else None
    graph = layer_graph(
        att.weights[0], keep=keep, order=np.argsort(np.asarray(att.heads), kind="stable")
    )
    return graph, att.n_tokens if keep is None else int(keep.size)


def _zigzag(layers: list, st: dict) -> np.ndarray:
    from ._zigzag import zigzag_features

    return zigzag_features([g for g, _ in layers], layers[-1][1])


def _spectral_quantities(st: dict) -> list[str]:
    from ._spectral import SPECTRAL_K, spectral_names

    return spectral_names(st.get("spectral_k", SPECTRAL_K))


def _spectral(g: Any) -> np.ndarray:
    from ._spectral import SPECTRAL_K, spectral_features

    return spectral_features(g.Wr, g.real.causal, k=g.st.get("spectral_k", SPECTRAL_K))


#: Every feature set, by name, in the order the documentation lists them
#: (:data:`FEATURE_SETS` is a read-only view: iterate for the names, ``FEATURE_SETS[name]``
#: for the record).
_SETS: dict[str, FeatureSet] = {
    s.name: s
    for s in (
        FeatureSet(
            "js",
            "statistics of each head's Jensen–Shannon Rips diagram",
            "attntopo",
            _js_quantities,
            diagrams=_js,
            default=True,
            drops_special=True,
        ),
        FeatureSet(
            "graph",
            "invariants of the attention graph at thresholds τ",
            "tda4atd, la-tda",
            _graph_quantities,
            head=_graph,
            default=True,
            drops_special=True,
        ),
        FeatureSet(
            "barcode",
            "statistics of the Rips barcode of 1 − max(A, Aᵀ)",
            "tda4atd",
            _barcode_quantities,
            diagrams=_barcode,
            matrices=_barcode_matrices,
            default=True,
            drops_special=True,
        ),
        FeatureSet(
            "template",
            "distances to fixed attention patterns",
            "la-tda",
            _template_quantities,
            head=_template,
            default=True,
        ),
        FeatureSet(
            "prompt",
            "prompt-to-response spanning-forest score",
            "TOHA",
            _prompt_quantities,
            head=_prompt,
            input="pair",
            needs_prompt_tokens=True,
        ),
        FeatureSet(
            "js_image",
            "persistence images of the JS diagrams",
            "persim",
            _image_quantities,
            diagrams=_image,
            drops_special=True,
        ),
        FeatureSet(
            "js_landscape",
            "persistence landscapes of the JS diagrams",
            "persim",
            _landscape_quantities,
            diagrams=_landscape,
            drops_special=True,
        ),
        FeatureSet(
            "js_per_token",
            "the js quantities that grow with the text, divided by its token count",
            "attntopo",
            _per_token_quantities,
            diagrams=_per_token,
            drops_special=True,
        ),
        FeatureSet(
            "spectral",
            "top-k eigenvalues of each head's attention Laplacian",
            "LapEigvals",
            _spectral_quantities,
            head=_spectral,
            drops_special=True,
        ),
        FeatureSet(
            "lookback",
            "each head's attention on the prompt against the answer",
            "Lookback Lens",
            _lookback_quantities,
            head=_lookback,
            input="pair",
            drops_special=True,
        ),
        FeatureSet(
            "zigzag",
            "zigzag persistence of the head-mean attention graphs through the layers",
            "HalluZig",
            _zigzag_quantities,
            layer=_zigzag_layer,
            text=_zigzag,
            drops_special=True,
        ),
    )
}
FEATURE_SETS: Mapping[str, FeatureSet] = MappingProxyType(_SETS)

#: The sets computed when none are named.
DEFAULT_SETS: tuple[str, ...] = tuple(n for n, s in FEATURE_SETS.items() if s.default)


def sets_table() -> str:
    """The table of the sets as docs/features.md has it (Markdown; a test holds them equal)."""
    rows = ["| set | input | from | what |", "|---|---|---|---|"]
    for s in FEATURE_SETS.values():
        what = s.summary + (" (default)" if s.default else "")
        rows.append(f"| `{s.name}` | {s.input} | {s.source} | {what} |")
    return "\n".join(rows)
