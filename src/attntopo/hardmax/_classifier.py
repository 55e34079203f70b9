"""The paper's interpretable classifier:
word embeddings → hardmax attention K times → mean → linear.

Alcalde, Fantuzzi & Zuazua (2025), section on sentiment analysis: each word of a text is a
learned point ``z ∈ R^d``; one pure-attention layer with ``Q = K = I`` and ``V = α I``, shared by
all ``K`` layers, moves the points by the hardmax dynamics of :mod:`attntopo.hardmax` (``A = I``);
the mean of the final points goes through a linear map and a sigmoid.  It is trained with
softmax attention at temperature ``T`` (``softmax(⟨z_i, z_j⟩ / T)``, ``T = 0.001``: nearly hard,
but differentiable) and evaluated with exact hardmax (ties averaged, the tolerance of
:func:`attntopo.hardmax.simulate`), so a prediction is explained by the leaders and the cluster
each word ends in: :meth:`HardmaxClassifier.explain` returns the very
:class:`~attntopo.hardmax.HardmaxSimulation` the prediction was computed from.

Texts become tokens by :func:`tokenize` (lower-cased words, numbers and punctuation marks);
the vocabulary is the training split's tokens seen at least ``min_count`` times (others are
``<unk>``); texts are cut to ``max_len`` tokens (128) and padded (padding takes no part in
attention or the mean).  There are no position embeddings: the model sees a multiset of words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from ..analyses.building import Columns, Result, read_array
from ..errors import InvalidInputError, ResultFormatError
from ..io import json_safe
from ._dynamics import DEFAULT_CLUSTER_TOL, default_rtol

__all__ = [
    "HardmaxClassifier",
    "tokenize",
    "encode",
    "hardmax_forward",
    "softmax_forward",
    "PAD",
    "UNK",
]

PAD, UNK = "<pad>", "<unk>"
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-cased words (with an apostrophe suffix: ``don't``),
    numbers and single punctuation marks."""
    return _TOKEN.findall(str(text).lower())


def encode(
    texts: Sequence[str], index: Mapping[str, int], max_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids ``(B, max_len)`` int64 (0 = padding, 1 = unknown) and the mask of real tokens."""
    ids = np.zeros((len(texts), max_len), dtype=np.int64)
    for b, text in enumerate(texts):
        toks = tokenize(text)[:max_len]
        ids[b, : len(toks)] = [index.get(t, 1) for t in toks]
    return ids, ids > 0


# ------------------------------------------------------------------ forward passes
def softmax_forward(Z, mask, alpha: float, layers: int, temperature: float):
    """Training pass (torch): ``K`` layers of softmax attention at ``temperature``.

    ``Z`` ``(B, L, d)``, ``mask`` ``(B, L)`` bool; returns the final points ``(B, L, d)``.
    """
    import torch

    keys = mask[:, None, :]
    for _ in range(layers):
        S = Z @ Z.transpose(1, 2) / temperature
        S = S.masked_fill(~keys, float("-inf"))
        P = torch.softmax(S, dim=-1)
        Z = Z + (alpha / (1.0 + alpha)) * (P @ Z - Z)
    return Z


def hardmax_forward(Z, mask, alpha: float, layers: int, rtol: float | None = None):
    """Evaluation pass (torch, float64): ``K`` layers of exact hardmax attention, ``A = I``.

    The rule of :func:`attntopo.hardmax.simulate` on each text's real tokens: ``j ∈ C_i`` when
    ``⟨z_i, z_j⟩ >= max_l ⟨z_i, z_l⟩ − rtol · ‖z_i‖ · R`` (``R`` the text's largest ``‖z_j^0‖``).
    Returns the final points ``(B, L, d)`` (padding rows are left as they were).
    """
    import torch

    Z = Z.double()
    d = Z.shape[-1]
    rtol = default_rtol(d) if rtol is None else float(rtol)
    keys = mask[:, None, :]
    R = torch.where(mask, Z.norm(dim=-1), torch.zeros((), dtype=Z.dtype)).amax(dim=1)  # (B,)
    for _ in range(layers):
        S = (Z @ Z.transpose(1, 2)).masked_fill(~keys, float("-inf"))
        gap = rtol * Z.norm(dim=-1) * R[:, None]  # (B, L)
        C = (S >= S.amax(dim=-1)[..., None] - gap[..., None]) & keys
        W = C.double()
        mean = (W @ Z) / W.sum(-1, keepdim=True).clamp(min=1.0)
        Z = torch.where(mask[..., None], Z + (alpha / (1.0 + alpha)) * (mean - Z), Z)
    return Z


# ---------------------------------------------------------------------- the model
@dataclass(eq=False)
class HardmaxClassifier(Result):
    """A trained hardmax-attention text classifier (binary).

    Made by :func:`attntopo.hardmax.train_classifier`; saved and loaded like every result
    (``save(DIR)``, :func:`attntopo.load_result`).

    Attributes
    ----------
    embedding : ndarray of shape (vocabulary, d), float64
        Row 0 is padding, row 1 ``<unk>``; the parameters selected on the validation split.
    weight : ndarray of shape (d,)
    bias : float
        The linear map after the mean: ``P(classes[1]) = sigmoid(weight · mean + bias)``.
    vocab : list of str
        The token of each embedding row.
    classes : list of str
        The two labels, ``classes[1]`` the positive one.
    alpha, layers, max_len, temperature : float, int, int, float
        ``α``, ``K``, the token limit, the training temperature.
    history : dict of lists
        Per epoch: ``epoch``, ``train_loss``, ``train_accuracy`` and ``val_accuracy`` (hardmax).
    metrics : dict
        ``test_accuracy_final`` (after the last epoch), ``test_accuracy_early`` (the epoch with the
        best validation accuracy, whose parameters this model holds), ``best_epoch``, the split
        sizes, the bag-of-words baseline and the most frequent leader words per class.
    settings : dict
        How it was trained (data source, seed, learning rate, …).
    """

    kind: ClassVar[str] = "hardmax_classifier"
    _eq_ignore: ClassVar[tuple[str, ...]] = ("provenance",)

    embedding: np.ndarray
    weight: np.ndarray
    bias: float
    vocab: list[str]
    classes: list[str]
    alpha: float
    layers: int
    max_len: int
    temperature: float
    history: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return int(self.embedding.shape[1])

    @property
    def index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.vocab)}

    # ---------------------------------------------------------------- predict
    def final_points(
        self, texts: Sequence[str], *, batch_size: int = 256
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact-hardmax final points ``(B, max_len, d)`` and the token mask ``(B, max_len)``."""
        import torch

        ids, mask = encode(list(texts), self.index, self.max_len)
        E = torch.from_numpy(self.embedding)
        out = []
        for s in range(0, len(ids), batch_size):
            i = torch.from_numpy(ids[s : s + batch_size])
            m = torch.from_numpy(mask[s : s + batch_size])
            out.append(hardmax_forward(E[i], m, self.alpha, self.layers).numpy())
        Z = np.concatenate(out) if out else np.zeros((0, self.max_len, self.dim))
        return Z, mask

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """``(B,)``: the probability of ``classes[1]`` (exact hardmax).

        A text without any token (only whitespace) has no mean; it is refused.
        """
        texts = _check_texts(texts)
        Z, mask = self.final_points(texts)
        counts = mask.sum(1)
        mean = (Z * mask[..., None]).sum(1) / counts[:, None]
        return 1.0 / (1.0 + np.exp(-(mean @ self.weight + self.bias)))

    def predict(self, texts: Sequence[str]) -> list[str]:
        """The predicted label of each text."""
        return [self.classes[int(p >= 0.5)] for p in self.predict_proba(texts)]

    def accuracy(self, texts: Sequence[str], labels: Sequence[Any]) -> float:
        """Share of texts whose predicted label is ``str(label)``."""
        pred = self.predict(texts)
        return float(np.mean([p == str(y) for p, y in zip(pred, labels)]))

    def explain(self, text: str):
        """The dynamics behind one prediction: ``(HardmaxSimulation, probability of classes[1])``.

        The simulation runs :func:`attntopo.hardmax.simulate` on the text's word embeddings with
        ``A = I`` for ``layers`` steps, labelled with the words (``<unk>`` for unknown ones, up
        to ``max_len``): its last step is exactly what the prediction averages.
        """
        from ._simulation import simulate

        text = _check_texts([text])[0]
        toks = tokenize(text)[: self.max_len]
        index = self.index
        ids = [index.get(t, 1) for t in toks]
        labels = [t if index.get(t, 1) != 1 else f"{t}→{UNK}" for t in toks]
        sim = simulate(
            self.embedding[ids],
            A=None,
            alpha=self.alpha,
            steps=self.layers,
            cluster_tol=DEFAULT_CLUSTER_TOL,
            tokens=labels,
            source={"kind": "classifier", "text": text, "classes": self.classes},
        )
        mean = sim.final.mean(axis=0)
        return sim, float(1.0 / (1.0 + np.exp(-(mean @ self.weight + self.bias))))

    def leader_words(
        self, texts: Sequence[str], labels: Sequence[Any], *, top: int = 10
    ) -> dict[str, list]:
        """The words that lead most often, per class: ``{label: [(word, texts, share), …]}``.

        For each text (exact hardmax, ``layers`` steps) the distinct words that are leaders at the
        last step; counted once per text, over the texts of each true label.  ``share``: the
        fraction of that class's texts in which the word leads.
        """
        from collections import Counter

        texts = _check_texts(texts)
        out: dict[str, list] = {}
        per_class: dict[str, Counter] = {c: Counter() for c in self.classes}
        n_class: Counter = Counter()
        for text, y in zip(texts, labels):
            sim, _ = self.explain(text)
            lead = {sim.tokens[i] for i in sim.leader_indices}
            per_class.setdefault(str(y), Counter()).update(lead)
            n_class[str(y)] += 1
        for c, counter in per_class.items():
            n = max(1, n_class[c])
            out[c] = [(w, int(k), round(k / n, 4)) for w, k in counter.most_common(top)]
        return out

    # --------------------------------------------------------------- protocol
    def summary(self) -> Columns:
        """One row per epoch: ``epoch``, ``train_loss``, ``train_accuracy``, ``val_accuracy``."""
        keys = ("epoch", "train_loss", "train_accuracy", "val_accuracy")
        return Columns(
            {
                k: np.asarray(self.history.get(k, []), dtype=float if k != "epoch" else int)
                for k in keys
            }
        )

    def to_dict(self) -> dict:
        return json_safe(
            {
                "kind": self.kind,
                "classes": self.classes,
                "dim": self.dim,
                "layers": self.layers,
                "alpha": self.alpha,
                "temperature": self.temperature,
                "max_len": self.max_len,
                "vocabulary": len(self.vocab),
                "metrics": self.metrics,
                "history": self.summary().rows(),
                "settings": self.settings,
                "provenance": self.provenance,
            }
        )

    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {
            "vocab": self.vocab,
            "classes": self.classes,
            "alpha": self.alpha,
            "layers": self.layers,
            "max_len": self.max_len,
            "temperature": self.temperature,
            "bias": self.bias,
            "history": self.history,
            "metrics": self.metrics,
            "settings": self.settings,
            "provenance": self.provenance,
        }
        return meta, {"embedding": self.embedding, "weight": self.weight}

    @classmethod
    def _from_payload(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> "HardmaxClassifier":
        E = read_array(arrays, "embedding", kind="f", ndim=2, finite=True)
        w = read_array(arrays, "weight", kind="f", shape=(E.shape[1],), finite=True)
        vocab, classes = meta.get("vocab"), meta.get("classes")
        if (
            not isinstance(vocab, list)
            or len(vocab) != E.shape[0]
            or not all(isinstance(t, str) for t in vocab)
        ):
            raise ResultFormatError(
                f"'vocab' must be a list of {E.shape[0]} strings (one per embedding row)"
            )
        if (
            not isinstance(classes, list)
            or len(classes) != 2
            or not all(isinstance(c, str) for c in classes)
        ):
            raise ResultFormatError("'classes' must be a list of 2 strings")
        for key in ("alpha", "temperature", "bias"):
            v = meta.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise ResultFormatError(f"{key!r} must be a finite number, got {v!r}")
        for key in ("layers", "max_len"):
            v = meta.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ResultFormatError(f"{key!r} must be an int >= 1, got {v!r}")
        return cls(
            embedding=E,
            weight=w,
            bias=float(meta["bias"]),
            vocab=vocab,
            classes=classes,
            alpha=float(meta["alpha"]),
            layers=int(meta["layers"]),
            max_len=int(meta["max_len"]),
            temperature=float(meta["temperature"]),
            history=dict(meta.get("history") or {}),
            metrics=dict(meta.get("metrics") or {}),
            settings=dict(meta.get("settings") or {}),
            provenance=dict(meta.get("provenance") or {}),
        )

    def __repr__(self) -> str:
        m = self.metrics
        return (
            f"HardmaxClassifier(d={self.dim}, layers={self.layers}, alpha={self.alpha:g}, "
            f"classes={self.classes}, vocabulary={len(self.vocab)}, "
            f"test_accuracy_early={m.get('test_accuracy_early')})"
        )


def _check_texts(texts: Any) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise InvalidInputError(f"texts must be a list of strings, got {type(texts).__name__}")
    out = []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InvalidInputError(f"texts[{i}] must be a string, got {type(t).__name__}")
        if not tokenize(t):
            raise InvalidInputError(f"texts[{i}] has no words (empty or only whitespace)")
        out.append(t)
    return out
