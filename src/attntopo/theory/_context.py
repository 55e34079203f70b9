"""Contextual mappings and permutation equivariance, measured on a real model (issue 18 §3).

Self-attention without positional information is a permutation-equivariant map; positions make
it order-aware, and Yun et al. (2020) show that attention layers with positions can compute a
*contextual mapping*: token outputs that are all distinct within an input and across inputs
that are not permutations of each other.  :func:`context` measures both on texts:

1. **equivariance** ``‖f(XP) − f(X)P‖_F / ‖f(X)‖_F`` per layer, for one transformer layer on
   its own input (``f`` = layer ``l``, called on the hidden states that enter it) and for the
   encoder up to that layer (``f`` = embeddings + layers ``0 … l``, a forward pass of the permuted
   text), under each *condition*:

   * ``positions``: the model as it is;
   * ``no_positions``: every positional mechanism removed (:mod:`attntopo.models._positions`):
     absolute position embeddings zeroed, or rotary embeddings made the identity **and**, in a
     causal model, the causal mask removed (the mask orders the tokens too).  Here the error is
     zero up to float32 round-off: the theorem, checked;
   * ``no_rotary_causal`` (causal models only): rotary embeddings off, causal mask kept.  Not
     zero and not meant to be: a causal model is not permutation-equivariant, whatever its
     position embeddings.  The number says how much of the order dependence the mask carries.

   ``P`` permutes the content tokens only; special tokens ([CLS], [SEP], <s>) keep their places;
2. **contextual-mapping margins** per layer, on the hidden states of the unmodified model
   (content tokens): within each text and across texts (:mod:`._context_math`).  In a causal
   model two tokens with the same prefix (the first word of two texts, say) have equal outputs
   at every layer by construction; the cross margin leaves such pairs out, else it would be 0;
3. **Ethayarajh's measures** per layer: self-similarity of words that occur in several texts
   (a word is its first token, as everywhere in attntopo), intra-sentence similarity, and the
   anisotropy baseline they are read against;
4. optionally, **one word in many contexts**: its attention rows (per layer and head) put on a
   common support (offsets from the word, or token types), their JS distances and H0 total
   persistence, the spread of its attention entropy, and the spread of its hidden states.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np

from .._progress import reports
from .._validation import check_int, check_positive_int, check_texts
from ..analyses.building import Columns, Result, read_array
from ..errors import InvalidInputError, ResultFormatError
from ..io import json_safe
from . import _context_math as cm

__all__ = ["Context", "context", "word_contexts", "CONTEXT_SENTENCES", "SUPPORTS", "CONDITIONS"]

#: common supports of a word's attention rows across contexts (see :func:`context`)
SUPPORTS = ("relative", "vocabulary")
#: equivariance conditions (``no_rotary_causal`` only for causal models)
CONDITIONS = ("positions", "no_positions", "no_rotary_causal")

#: short sentences written for attntopo, eight contexts for each of a few ambiguous words
CONTEXT_SENTENCES: dict[str, tuple[str, ...]] = {
    "bank": (
        "She sat on the bank of the river and watched the boats.",
        "The bank raised its interest rates again this spring.",
        "He walked to the bank to deposit his first paycheck.",
        "Wild flowers grew along the muddy bank after the flood.",
        "The central bank warned that inflation would stay high.",
        "A heron stood still on the far bank of the stream.",
        "My bank closed the branch near the old train station.",
        "They pulled the canoe up onto the grassy bank for lunch.",
    ),
    "light": (
        "Turn off the light before you leave the room.",
        "The box was light enough for the child to carry.",
        "Morning light poured through the kitchen window.",
        "She wore a light jacket because the evening was warm.",
        "The speed of light is the same for every observer.",
        "He struck a match to light the candle on the table.",
        "A light rain fell over the city all afternoon.",
        "The painter waited for the light to change over the hills.",
    ),
    "play": (
        "The children went outside to play in the snow.",
        "We saw a play about two brothers at the old theatre.",
        "She learned to play the violin when she was six.",
        "The coach called a new play in the final minute.",
        "Let the dog play with the ball for a while.",
        "The actors rehearsed the play for three long weeks.",
        "Which song will the band play at the wedding?",
        "There is too much play in this loose steering wheel.",
    ),
}


def word_contexts(
    word: str,
    *,
    k: int = 8,
    source: str = "builtin",
    categories: Sequence[str] | None = None,
    max_words: int = 40,
    seed: int = 0,
) -> list[str]:
    """Texts that contain ``word`` (as a whole word, any case),
    for the "same word, many contexts" study.

    Parameters
    ----------
    word : str
    k : int
        How many texts (at most).
    source : {"builtin", "fortunes"}
        attntopo's own sentences (:data:`CONTEXT_SENTENCES`: "bank", "light", "play"), or
        Debian's fortunes read at run time (:func:`attntopo.datasets.fortunes`), drawn at random
        (``seed``) among those with at most ``max_words`` words.
    categories : sequence of str, optional
        Fortune categories (all by default).

    Raises
    ------
    InvalidInputError
        Unknown source, a built-in word that is not there, or fewer than 3 texts found.
    """
    import re

    k = check_int(k, "k", lo=3)
    key = str(word).strip().casefold()
    if not key or not re.fullmatch(r"\w+", key):
        raise InvalidInputError(f"word must be a single word (letters/digits), got {word!r}")
    if source == "builtin":
        if key not in CONTEXT_SENTENCES:
            raise InvalidInputError(
                f"no built-in contexts for {word!r}; built in: {', '.join(CONTEXT_SENTENCES)} "
                f"(or take the contexts from Debian's fortunes)"
            )
        return list(CONTEXT_SENTENCES[key][:k])
    if source != "fortunes":
        raise InvalidInputError(f"unknown source {source!r}; allowed: 'builtin', 'fortunes'")
    from ..datasets import fortunes

    data = fortunes(categories=categories, max_words=max_words)
    pattern = re.compile(rf"\b{re.escape(key)}\b", re.IGNORECASE)
    found = [t for t in data.texts if pattern.search(t)]
    if len(found) < 3:
        raise InvalidInputError(
            f"only {len(found)} fortunes with at most {max_words} words contain {word!r}: "
            f"a word needs at least 3 contexts"
        )
    pick = np.random.default_rng(seed).permutation(len(found))[:k]
    return [found[i] for i in sorted(pick)]


# -------------------------------------------------------------------------- result
_ARRAYS = {  # name -> (kind, ndim)
    "n_tokens": ("i", 1),
    "equivariance_texts": ("i", 1),
    "layer_error": ("f", 4),
    "encoder_error": ("f", 4),
    "margin_within": ("f", 2),
    "margin_within_rel": ("f", 2),
    "margin_cross": ("f", 1),
    "margin_cross_rel": ("f", 1),
    "cross_argmin": ("i", 2),
    "self_similarity": ("f", 1),
    "self_similarity_words": ("f", 2),
    "intra_similarity": ("f", 2),
    "anisotropy": ("f", 1),
    "word_texts": ("i", 1),
    "word_tokens": ("i", 1),
    "word_js": ("f", 3),
    "word_js_max": ("f", 3),
    "word_h0": ("f", 3),
    "word_entropy": ("f", 3),
    "word_hidden_cosine": ("f", 1),
    "word_hidden_spread": ("f", 1),
}


@dataclass(eq=False)
class Context(Result):
    """Permutation equivariance, contextual-mapping margins and contextuality of one model on texts.

    ``L`` layers, ``H`` heads, ``T`` texts, ``C`` conditions, ``P`` permutations, ``k`` contexts of
    the word.  Hidden-state arrays have ``L + 1`` entries: index 0 is the embedding output,
    index ``l + 1`` the output of layer ``l`` (Llama-style models: the last one after the final
    norm, as transformers returns it).  ``nan`` where a measure was not computed.

    Attributes
    ----------
    model, model_type : str
    causal : bool
    n_layers, n_heads : int
    texts : list of str
    tokens : list of list of str
        Token labels per text (special tokens included).
    n_tokens : ndarray of shape (T,), int
    positional : str
        What carries order information in the model and what was switched off.
    conditions : list of str
        ``positions``, ``no_positions`` and (causal models) ``no_rotary_causal``.
    n_permutations, seed : int
    permutations : list of list of list of int
        ``permutations[e][p]``: the ``p``-th permutation of equivariance text ``e``.
    equivariance_texts : ndarray of shape (E,), int
        Which texts the equivariance was measured on.
    layer_error : ndarray of shape (C, E, P, L)
        ``‖f_l(XP) − f_l(X)P‖ / ‖f_l(X)‖`` for layer ``l`` alone on its input ``X``.
    encoder_error : ndarray of shape (C, E, P, L + 1)
        The same for the embeddings and layers up to each hidden state.
    margin_within, margin_within_rel : ndarray of shape (T, L + 1)
        ``min_{i<j} ‖h_i − h_j‖`` over content tokens,
        and divided by the text's mean pairwise distance.
    margin_cross, margin_cross_rel : ndarray of shape (L + 1,)
        ``min ‖h_i(a) − h_j(b)‖`` over texts ``a < b`` that are not permutations of each other
        (causal models: over token pairs whose prefixes differ; equal prefixes give equal outputs
        by construction, so a causal model is never a contextual mapping in Yun et al.'s sense for
        texts that share a first token), and divided by the mean distance over the same pairs.
    cross_argmin : ndarray of shape (L + 1, 4), int
        ``(a, i, b, j)`` where the cross margin is attained (token positions in each text).
    n_cross_pairs : int
        Text pairs compared (0: cross-context measures not computed).
    self_similarity : ndarray of shape (L + 1,)
        Mean over :attr:`similarity_words` of each word's self-similarity.
    similarity_words : list of str
    self_similarity_words : ndarray of shape (W, L + 1)
    intra_similarity : ndarray of shape (T, L + 1)
    anisotropy : ndarray of shape (L + 1,)
    word : str or None
    word_texts, word_tokens : ndarray of shape (k,), int
        The texts holding the word and its (first) token in each.
    word_js, word_js_max, word_h0 : ndarray of shape (len(SUPPORTS), L, H)
        Mean and largest JS distance (base 2) between the word's attention rows in different
        contexts, and the H0 total persistence of those ``k`` points, per support.
    word_entropy : ndarray of shape (k, L, H)
        Entropy of the word's row divided by ``log2`` of the keys it can see.
    word_hidden_cosine : ndarray of shape (L + 1,)
        Mean over context pairs of ``1 − cos`` between the word's hidden states.
    word_hidden_spread : ndarray of shape (L + 1,)
        Mean pairwise Euclidean distance between them divided by their mean norm.
    """

    kind: ClassVar[str] = "context"

    model: str
    model_type: str
    causal: bool
    n_layers: int
    n_heads: int
    texts: list
    tokens: list
    n_tokens: np.ndarray
    positional: str
    conditions: list
    n_permutations: int
    seed: int
    permutations: list
    equivariance_texts: np.ndarray
    layer_error: np.ndarray
    encoder_error: np.ndarray
    margin_within: np.ndarray
    margin_within_rel: np.ndarray
    margin_cross: np.ndarray
    margin_cross_rel: np.ndarray
    cross_argmin: np.ndarray
    n_cross_pairs: int
    self_similarity: np.ndarray
    similarity_words: list
    self_similarity_words: np.ndarray
    intra_similarity: np.ndarray
    anisotropy: np.ndarray
    word: str | None
    word_texts: np.ndarray
    word_tokens: np.ndarray
    word_js: np.ndarray
    word_js_max: np.ndarray
    word_h0: np.ndarray
    word_entropy: np.ndarray
    word_hidden_cosine: np.ndarray
    word_hidden_spread: np.ndarray
    provenance: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ tables
    def _per_layer(self, a: np.ndarray) -> np.ndarray:
        """(L,) layer-side values on the L + 1 depths (nan at depth 0, the embeddings)."""
        return np.concatenate([[np.nan], a])

    def summary(self) -> Columns:
        """One row per depth: ``depth`` 0 (the embedding output), ``l + 1`` (layer ``l``: its
        output, its map on its own input, its attention), as in :func:`attntopo.theory.depth`.

        Columns: ``depth``; for every condition ``c``: ``layer_error_c``, ``layer_error_c_max``
        (the layer alone), ``encoder_error_c``, ``encoder_error_c_max`` (embeddings and layers up to
        this depth), mean / max over texts and permutations; ``margin_within`` (min over texts),
        ``margin_within_rel``, ``margin_cross``, ``margin_cross_rel``, ``self_similarity``,
        ``intra_similarity`` (mean over texts), ``anisotropy``; with a word: ``word_js_relative``,
        ``word_js_vocabulary`` (mean over heads), ``word_entropy_spread`` (mean over heads of the
        std over contexts), ``word_hidden_cosine``, ``word_hidden_spread``.  Layer-side columns are
        ``nan`` at depth 0.
        """
        L = self.n_layers
        cols: dict[str, Any] = {"depth": np.arange(L + 1)}
        for c, name in enumerate(self.conditions):
            le = (
                self.layer_error[c].reshape(-1, L)
                if self.layer_error.size
                else np.full((1, L), np.nan)
            )
            ee = (
                self.encoder_error[c].reshape(-1, L + 1)
                if self.encoder_error.size
                else np.full((1, L + 1), np.nan)
            )
            cols[f"layer_error_{name}"] = self._per_layer(le.mean(0))
            cols[f"layer_error_{name}_max"] = self._per_layer(le.max(0))
            cols[f"encoder_error_{name}"] = ee.mean(0)
            cols[f"encoder_error_{name}_max"] = ee.max(0)
        cols["margin_within"] = self.margin_within.min(0)
        cols["margin_within_rel"] = self.margin_within_rel.min(0)
        cols["margin_cross"] = self.margin_cross
        cols["margin_cross_rel"] = self.margin_cross_rel
        cols["self_similarity"] = self.self_similarity
        cols["intra_similarity"] = self.intra_similarity.mean(0)
        cols["anisotropy"] = self.anisotropy
        if self.word is not None:
            for s, name in enumerate(SUPPORTS):
                cols[f"word_js_{name}"] = self._per_layer(self.word_js[s].mean(-1))
            cols["word_entropy_spread"] = self._per_layer(self.word_entropy.std(0).mean(-1))
            cols["word_hidden_cosine"] = self.word_hidden_cosine
            cols["word_hidden_spread"] = self.word_hidden_spread
        return Columns(cols)

    def to_dict(self) -> dict:
        return json_safe(
            {
                "kind": self.kind,
                "model": self.model,
                "model_type": self.model_type,
                "causal": self.causal,
                "n_layers": self.n_layers,
                "n_heads": self.n_heads,
                "texts": self.texts,
                "tokens": self.tokens,
                "positional": self.positional,
                "conditions": self.conditions,
                "n_permutations": self.n_permutations,
                "seed": self.seed,
                "equivariance_texts": self.equivariance_texts.tolist(),
                "n_cross_pairs": self.n_cross_pairs,
                "similarity_words": self.similarity_words,
                "word": self.word,
                "word_texts": self.word_texts.tolist(),
                "word_tokens": self.word_tokens.tolist(),
                "summary": self.summary().rows(),
                "provenance": self.provenance,
            }
        )

    # ----------------------------------------------------------------- storage
    _META = (
        "model",
        "model_type",
        "causal",
        "n_layers",
        "n_heads",
        "texts",
        "tokens",
        "positional",
        "conditions",
        "n_permutations",
        "seed",
        "permutations",
        "n_cross_pairs",
        "similarity_words",
        "word",
        "provenance",
    )

    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        return (
            {k: getattr(self, k) for k in self._META},
            {k: np.asarray(getattr(self, k)) for k in _ARRAYS},
        )

    @classmethod
    def _from_payload(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> "Context":
        missing = [k for k in cls._META if k not in meta and k != "provenance"]
        if missing:
            raise ResultFormatError(f"a context result needs {', '.join(missing)} in its metadata")
        got = {k: read_array(arrays, k, kind=kind, ndim=nd) for k, (kind, nd) in _ARRAYS.items()}
        if not set(meta["conditions"]) <= set(CONDITIONS):
            raise ResultFormatError(f"unknown equivariance conditions {meta['conditions']!r}")
        L, T = int(meta["n_layers"]), len(meta["texts"])
        H, C = int(meta["n_heads"]), len(meta["conditions"])
        E, P = got["equivariance_texts"].shape[0], int(meta["n_permutations"])
        W, k = len(meta["similarity_words"]), got["word_texts"].shape[0]
        checks = [
            ("margin_within", (T, L + 1)),
            ("margin_within_rel", (T, L + 1)),
            ("margin_cross", (L + 1,)),
            ("margin_cross_rel", (L + 1,)),
            ("cross_argmin", (L + 1, 4)),
            ("anisotropy", (L + 1,)),
            ("intra_similarity", (T, L + 1)),
            ("n_tokens", (T,)),
            ("self_similarity", (L + 1,)),
            ("self_similarity_words", (W, L + 1)),
            ("layer_error", (C, E, P, L)),
            ("encoder_error", (C, E, P, L + 1)),
            ("word_tokens", (k,)),
        ]
        word_arrays = [
            ("word_entropy", (k, L, H)),
            ("word_js", (len(SUPPORTS), L, H)),
            ("word_js_max", (len(SUPPORTS), L, H)),
            ("word_h0", (len(SUPPORTS), L, H)),
            ("word_hidden_cosine", (L + 1,)),
            ("word_hidden_spread", (L + 1,)),
        ]
        if meta.get("word") is not None:
            checks += word_arrays
        else:  # no word studied: its arrays are empty
            for name, _ in word_arrays:
                if got[name].size:
                    raise ResultFormatError(
                        f"array {name!r} must be empty without a word, got {got[name].shape}"
                    )
        for name, shape in checks:
            if got[name].shape != shape:
                raise ResultFormatError(
                    f"array {name!r} must have shape {shape}, got {got[name].shape}"
                )
        kw = {k: meta[k] for k in cls._META if k != "provenance"}
        for k in ("causal",):
            kw[k] = bool(kw[k])
        for k in ("n_layers", "n_heads", "n_permutations", "seed", "n_cross_pairs"):
            kw[k] = int(kw[k])
        kw["texts"] = [str(t) for t in kw["texts"]]
        kw["tokens"] = [list(t) for t in kw["tokens"]]
        kw["conditions"] = list(kw["conditions"])
        kw["similarity_words"] = list(kw["similarity_words"])
        kw["permutations"] = [[list(map(int, p)) for p in perms] for perms in kw["permutations"]]
        return cls(**kw, **got, provenance=dict(meta.get("provenance") or {}))

    def __repr__(self) -> str:
        parts = [f"Context({self.model!r}, {len(self.texts)} texts, conditions={self.conditions}"]
        if self.word is not None:
            parts.append(f"word={self.word!r} in {len(self.word_texts)} contexts")
        return ", ".join(parts) + ")"


# ----------------------------------------------------------------------- running
def _conditions(m: Any) -> list[tuple[str, Callable[[], Any]]]:
    """(name, context-manager factory) per equivariance condition; raises for unsupported models."""
    from ..models.instruments import causal_mask_off, positional_mechanism, positions_off

    positional_mechanism(m)  # PositionsNotRemovableError before any work

    @contextlib.contextmanager
    def nothing():
        yield

    if not m.causal:
        return [("positions", nothing), ("no_positions", lambda: positions_off(m))]

    @contextlib.contextmanager
    def no_order():
        with positions_off(m), causal_mask_off(m):
            yield

    return [
        ("positions", nothing),
        ("no_positions", no_order),
        ("no_rotary_causal", lambda: positions_off(m)),
    ]


def _out(x: Any) -> Any:
    return x[0] if isinstance(x, tuple) else x


def _equivariance(
    m: Any, texts: list[str], perms: list[list[np.ndarray]], conds, truncate: bool, progress: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``layer_error`` (C, E, P, L) and ``encoder_error`` (C, E, P, L + 1)."""
    import torch

    from ..models.instruments import forward_capture, transformer_layers

    layers = transformer_layers(m)
    L = len(layers)
    embed = m.hf_model.get_input_embeddings()
    P = len(perms[0]) if perms else 0
    layer_err = np.zeros((len(conds), len(texts), P, L))
    enc_err = np.zeros((len(conds), len(texts), P, L + 1))
    for c, (_name, make) in enumerate(conds):
        # the model is patched (positions or the causal mask off) for the whole condition:
        # hold it, so that no other thread runs a forward pass through the patched model
        with m._lock, make():
            for e, text in enumerate(texts):
                calls: list[tuple[tuple, dict]] = []
                hooks = [
                    layer.register_forward_pre_hook(
                        lambda _m, a, k: calls.append((a, k)), with_kwargs=True
                    )
                    for layer in layers
                ]
                try:
                    base = forward_capture(m, [text], truncate=truncate)[0].hidden
                finally:
                    for h in hooks:
                        h.remove()
                progress.advance()
                for p, perm in enumerate(perms[e]):
                    pt = torch.from_numpy(perm)
                    moved = forward_capture(
                        m,
                        [text],
                        truncate=truncate,
                        input_embeds_hook=lambda ids, pt=pt: embed(ids[:, pt]),
                    )[0].hidden
                    for i in range(L + 1):
                        enc_err[c, e, p, i] = cm.equivariance_error(base[i], moved[i], perm)
                    progress.advance()
                with m._lock, torch.inference_mode():
                    for i, (layer, (args, kwargs)) in enumerate(zip(layers, calls)):
                        x = args[0]
                        out = _out(layer(*args, **kwargs))[0].double().cpu().numpy()
                        for p, perm in enumerate(perms[e]):
                            pt = torch.from_numpy(perm).to(x.device)
                            outp = (
                                _out(layer(x[:, pt], *args[1:], **kwargs))[0].double().cpu().numpy()
                            )
                            layer_err[c, e, p, i] = cm.equivariance_error(out, outp, perm)
    return layer_err, enc_err


def _word_key(word: str) -> str:
    from ..words import normalize_token

    return normalize_token(word)


def _words_of(caps: list, m: Any) -> list[list[tuple[str, int]]]:
    """Per text: (matching key, first token) of every word with a letter or digit."""
    from ..attention import Attention
    from ..words import word_tokens

    out = []
    for cap in caps:
        enc = cap.encoding
        att = Attention(
            weights=cap.attention,
            tokens=enc.tokens,
            offsets=enc.offsets,
            special=enc.special,
            causal=bool(m.causal),
            model=m.name,
            text=enc.text,
            token_ids=enc.ids,
        )
        words = []
        for _index, w, toks in word_tokens(att):
            key = _word_key(w)
            if any(ch.isalnum() for ch in key):
                words.append((key, int(toks[0])))
        out.append(words)
    return out


def _similarities(hidden: list[np.ndarray], words: list[list[tuple[str, int]]], min_contexts: int):
    """Self-similarity (mean and per word), the words used; hidden: per text (L+1, n, d)."""
    where: dict[str, list[tuple[int, int]]] = {}
    for t, ws in enumerate(words):
        for key, tok in ws:
            where.setdefault(key, []).append((t, tok))
    keys = sorted(k for k, occ in where.items() if len({t for t, _ in occ}) >= min_contexts)
    depth = hidden[0].shape[0]
    per_word = np.full((len(keys), depth), np.nan)
    for w, key in enumerate(keys):
        occ = where[key]
        groups = [t for t, _ in occ]
        for i in range(depth):
            X = np.stack([hidden[t][i, tok] for t, tok in occ])
            per_word[w, i] = cm.self_similarity(X, groups)
    mean = per_word.mean(0) if keys else np.full(depth, np.nan)
    return mean, keys, per_word


def _word_study(m: Any, caps: list, words: list[list[tuple[str, int]]], word: str) -> dict:
    from ..distances import row_distances

    key = _word_key(word)
    hits = [
        (t, next(tok for k, tok in ws if k == key))
        for t, ws in enumerate(words)
        if any(k == key for k, _ in ws)
    ]
    if len(hits) < 3:
        raise InvalidInputError(
            f"the word {word!r} occurs in {len(hits)} of the texts: the same-word study needs "
            f"it in at least 3 (it is matched as a whole word, case-folded)"
        )
    rows = [caps[t].attention[:, :, tok, :] for t, tok in hits]  # each (L, H, n_t)
    width = max(r.shape[-1] for r in rows)
    supports = {
        "relative": cm.relative_support(rows, [tok for _, tok in hits], width),
        "vocabulary": cm.vocabulary_support(rows, [caps[t].encoding.ids for t, _ in hits])[0],
    }
    k = len(hits)
    iu = np.triu_indices(k, 1)
    js, js_max, h0 = [], [], []
    for name in SUPPORTS:
        S = supports[name]
        S = S / S.sum(-1, keepdims=True)  # float32 rows in float64: sums to 1 within ~1e-7
        D = row_distances(S)  # (L, H, k, k)
        js.append(D[..., iu[0], iu[1]].mean(-1))
        js_max.append(D[..., iu[0], iu[1]].max(-1))
        h0.append(cm.h0_total_persistence(D))
    visible = np.array(
        [tok + 1 if m.causal else r.shape[-1] for (_, tok), r in zip(hits, rows)], dtype=np.float64
    )
    ent = np.stack([cm.entropy_bits(r) for r in rows])  # (k, L, H)
    with np.errstate(divide="ignore", invalid="ignore"):
        norm_ent = np.where(
            visible[:, None, None] > 1, ent / np.log2(np.maximum(visible, 2))[:, None, None], 0.0
        )
    hid = np.stack([caps[t].hidden[:, tok] for t, tok in hits]).astype(np.float64)  # (k, L+1, d)
    cos_d = np.array([1.0 - cm.pair_mean(cm.cosine_matrix(hid[:, i])) for i in range(hid.shape[1])])
    spread = []
    for i in range(hid.shape[1]):
        X = hid[:, i]
        diff = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=-1)[iu]
        spread.append(diff.mean() / np.linalg.norm(X, axis=-1).mean())
    return {
        "word_texts": np.array([t for t, _ in hits], dtype=np.int64),
        "word_tokens": np.array([tok for _, tok in hits], dtype=np.int64),
        "word_js": np.stack(js),
        "word_js_max": np.stack(js_max),
        "word_h0": np.stack(h0),
        "word_entropy": norm_ent,
        "word_hidden_cosine": cos_d,
        "word_hidden_spread": np.array(spread),
    }


def _empty_word() -> dict:
    z3 = np.zeros((len(SUPPORTS), 0, 0))
    return {
        "word_texts": np.zeros(0, np.int64),
        "word_tokens": np.zeros(0, np.int64),
        "word_js": z3,
        "word_js_max": z3,
        "word_h0": z3,
        "word_entropy": np.zeros((0, 0, 0)),
        "word_hidden_cosine": np.zeros(0),
        "word_hidden_spread": np.zeros(0),
    }


@reports("context")
def context(
    texts: str | Sequence[str],
    model: Any = "minilm",
    *,
    word: str | None = None,
    n_permutations: int = 3,
    seed: int = 0,
    cross: bool | None = None,
    min_contexts: int = 2,
    equivariance_texts: int | None = None,
    truncate: bool = False,
    progress: Any = None,
) -> Context:
    """Permutation equivariance, contextual-mapping
    margins and contextuality of ``model`` on ``texts``.

    Parameters
    ----------
    texts : str or sequence of str
    model : str or AttentionModel
        ``"minilm"``, ``"smollm2"``, a Hugging Face id or folder, or a loaded model.  Its positional
        mechanism must be one attntopo can switch off (:mod:`attntopo.models._positions`).
    word : str, optional
        Also study this word across the texts that contain it (at least 3; see
        :func:`word_contexts` for ready-made contexts).
    n_permutations : int
        Random permutations of each text's content tokens (``seed``).
    cross : bool, optional
        Compute the cross-text measures (cross margins, self-similarity, anisotropy); ``None``:
        when there are at least 3 texts.
    min_contexts : int
        A word enters the self-similarity when it occurs in at least this many texts (>= 2).
    equivariance_texts : int, optional
        Measure equivariance on the first this many texts only (all by default; 0: none).
    truncate : bool
        Cut texts longer than the model's limit instead of raising.
    progress : None, bool, callable or Reporter
        See :mod:`attntopo._progress`.

    Returns
    -------
    Context

    Raises
    ------
    PositionsNotRemovableError
        The model's positional mechanism cannot be switched off (the message names its type).
    InvalidInputError
        ``cross=True`` with fewer than 3 texts, a text with fewer than 2 content tokens
        (equivariance), a word in fewer than 3 texts, bad numbers.
    EmptyTextError, TextTooLongError
    """
    from ..analyses.building import make_provenance
    from ..attention import token_labels
    from ..models import load_model
    from ..models.instruments import forward_capture, positional_mechanism

    texts = check_texts(texts)
    n_permutations = check_positive_int(n_permutations, "n_permutations", allow_none=False)
    seed = check_int(seed, "seed", lo=0)
    min_contexts = check_int(min_contexts, "min_contexts", lo=2)
    if cross is None:
        cross = len(texts) >= 3
    elif not isinstance(cross, bool):
        raise InvalidInputError(f"cross must be None, True or False, got {cross!r}")
    elif cross and len(texts) < 3:
        raise InvalidInputError(f"cross-context margins need at least 3 texts, got {len(texts)}")
    n_eq = (
        len(texts)
        if equivariance_texts is None
        else check_int(equivariance_texts, "equivariance_texts", lo=0, hi=len(texts))
    )
    if word is not None and (not isinstance(word, str) or not word.strip()):
        raise InvalidInputError(f"word must be a non-empty string, got {word!r}")

    m = load_model(model) if isinstance(model, str) else model
    mech = positional_mechanism(m)
    conds = _conditions(m)
    progress.add_total(len(texts) + n_eq * len(conds) * (1 + n_permutations) + 1)
    progress.stage("forward passes")
    caps = []
    for t in texts:
        caps.extend(forward_capture(m, [t], attention=True, truncate=truncate))
        progress.advance()
    encs = [c.encoding for c in caps]
    L, H = m.n_layers, m.n_heads
    words = _words_of(caps, m)
    study = _word_study(m, caps, words, word) if word is not None else _empty_word()
    rng = np.random.default_rng(seed)
    perms = [
        [cm.content_permutation(e.special, rng) for _ in range(n_permutations)] for e in encs[:n_eq]
    ]
    progress.stage("permuted passes")
    layer_err, enc_err = _equivariance(m, texts[:n_eq], perms, conds, truncate, progress)

    progress.stage("margins")
    content = [np.flatnonzero(~np.asarray(e.special, dtype=bool)) for e in encs]
    hidden = [
        c.hidden[:, idx].astype(np.float64) for c, idx in zip(caps, content)
    ]  # content tokens only
    within = np.full((len(texts), L + 1), np.nan)
    within_rel = np.full((len(texts), L + 1), np.nan)
    intra = np.full((len(texts), L + 1), np.nan)
    for t, h in enumerate(hidden):
        for i in range(L + 1):
            within[t, i], within_rel[t, i], _, _ = cm.within_margin(h[i])
            intra[t, i] = cm.intra_similarity(h[i])
    margin_cross = np.full(L + 1, np.nan)
    margin_cross_rel = np.full(L + 1, np.nan)
    argmin = np.full((L + 1, 4), -1, dtype=np.int64)
    aniso = np.full(L + 1, np.nan)
    self_sim, sim_words, per_word = np.full(L + 1, np.nan), [], np.zeros((0, L + 1))
    n_pairs = 0
    if cross:
        skip = {
            (a, b)
            for a in range(len(texts))
            for b in range(a + 1, len(texts))
            if cm.is_permutation(encs[a].ids, encs[b].ids)
        }
        # causal models: tokens with the same prefix have the same output by construction; left out
        keys = (
            [k[idx] for k, idx in zip(cm.prefix_keys([e.ids for e in encs]), content)]
            if m.causal
            else None
        )
        for i in range(L + 1):
            margin_cross[i], margin_cross_rel[i], (a, ti, b, tj), n_pairs = cm.cross_margin(
                [h[i] for h in hidden], skip, keys
            )
            if a >= 0:
                argmin[i] = (a, content[a][ti], b, content[b][tj])
            aniso[i] = cm.anisotropy([h[i] for h in hidden])
        if n_pairs == 0:
            raise InvalidInputError(
                "cross-context margins need texts that are not permutations of each other: "
                "every pair of texts here is"
            )
        self_sim, sim_words, per_word = _similarities([c.hidden for c in caps], words, min_contexts)
    progress.advance()
    labels = [token_labels(e.tokens, e.offsets, e.special, text=e.text)[0] for e in encs]
    settings = {
        "n_permutations": n_permutations,
        "seed": seed,
        "cross": cross,
        "min_contexts": min_contexts,
        "equivariance_texts": n_eq,
        "word": word,
        "truncate": truncate,
    }
    return Context(
        model=m.name,
        model_type=mech.model_type,
        causal=bool(m.causal),
        n_layers=L,
        n_heads=H,
        texts=texts,
        tokens=labels,
        n_tokens=np.array([len(e.ids) for e in encs], dtype=np.int64),
        positional=mech.describe(),
        conditions=[name for name, _ in conds],
        n_permutations=n_permutations,
        seed=seed,
        permutations=[[p.tolist() for p in ps] for ps in perms],
        equivariance_texts=np.arange(n_eq, dtype=np.int64),
        layer_error=layer_err,
        encoder_error=enc_err,
        margin_within=within,
        margin_within_rel=within_rel,
        margin_cross=margin_cross,
        margin_cross_rel=margin_cross_rel,
        cross_argmin=argmin,
        n_cross_pairs=n_pairs,
        self_similarity=self_sim,
        similarity_words=sim_words,
        self_similarity_words=per_word,
        intra_similarity=intra,
        anisotropy=aniso,
        word=word,
        **study,
        provenance=make_provenance(m.info(), settings=settings),
    )
