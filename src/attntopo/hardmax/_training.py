"""Training the hardmax classifier: stratified splits,
the loop, early stopping on validation, a baseline.

The published numbers picked the best epoch on the *test* split; here the test split is touched
twice, after training: with the last epoch's parameters and with those of the epoch that did
best on the *validation* split.  Both are reported.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, Callable, Sequence

import numpy as np

from .._validation import check_int, check_number
from ..errors import InvalidInputError
from ._classifier import (
    PAD,
    UNK,
    HardmaxClassifier,
    encode,
    hardmax_forward,
    softmax_forward,
    tokenize,
)

__all__ = ["stratified_split", "train_classifier", "bag_of_words_baseline"]


def _check_data(texts: Any, labels: Any) -> tuple[list[str], list[str], list[str]]:
    if isinstance(texts, str) or not hasattr(texts, "__len__"):
        raise InvalidInputError(f"texts must be a list of strings, got {type(texts).__name__}")
    texts, labels = list(texts), [str(y) for y in labels]
    if not texts:
        raise InvalidInputError("the dataset is empty: give at least one text per class")
    if len(texts) != len(labels):
        raise InvalidInputError(
            f"texts and labels differ in length ({len(texts)} and {len(labels)})"
        )
    for i, t in enumerate(texts):
        if not isinstance(t, str) or not tokenize(t):
            raise InvalidInputError(f"text {i} is not a string with at least one word")
    classes = sorted(set(labels))
    if len(classes) != 2:
        shown = ", ".join(repr(c) for c in classes[:5]) + (" …" if len(classes) > 5 else "")
        raise InvalidInputError(
            "the hardmax classifier is binary: the labels must "
            f"hold exactly 2 classes, got {len(classes)} ({shown})"
        )
    return texts, labels, classes


def stratified_split(
    labels: Sequence[Any], val: float, test: float, seed: int
) -> tuple[np.ndarray, ...]:
    """Indices ``(train, val, test)``: each class shuffled
    (``seed``) and cut in the same proportions.

    Every class puts ``round(val · n_c)`` texts (at least one) into validation and
    ``round(test · n_c)`` (at least one) into test; the rest is training (at least one).
    """
    labels = np.asarray([str(y) for y in labels])
    rng = np.random.default_rng(seed)
    parts: tuple[list, list, list] = ([], [], [])
    for c in sorted({str(y) for y in labels}):
        idx = np.flatnonzero(labels == c)
        rng.shuffle(idx)
        n = idx.size
        nv, nt = max(1, round(val * n)), max(1, round(test * n))
        if n - nv - nt < 1:
            raise InvalidInputError(
                f"class {c!r} has {n} text(s): too few for a training, a validation and a test "
                f"part (val={val:g}, test={test:g} need at least 3)"
            )
        parts[1].extend(idx[:nv])
        parts[2].extend(idx[nv : nv + nt])
        parts[0].extend(idx[nv + nt :])
    return tuple(np.sort(np.asarray(p, dtype=np.int64)) for p in parts)


def _vocabulary(texts: Sequence[str], min_count: int, max_vocab: int) -> list[str]:
    counts = Counter(t for text in texts for t in tokenize(text))
    words = [w for w, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if k >= min_count]
    return [PAD, UNK] + words[: max(0, max_vocab - 2)]


def bag_of_words_baseline(
    texts: Sequence[str],
    labels: Sequence[Any],
    split: tuple[np.ndarray, ...],
    *,
    Cs: Sequence[float] = (0.01, 0.1, 1.0, 10.0, 100.0),
) -> dict:
    """Logistic regression on word counts, ``C`` picked on the validation split, scored on test.

    The words are :func:`tokenize`'s (the classifier's own), counted by scikit-learn's
    ``CountVectorizer`` over the training split.
    """
    try:
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        from ..errors import MissingDependencyError

        raise MissingDependencyError(
            "the bag-of-words baseline needs scikit-learn: pip install scikit-learn"
        ) from None
    tr, va, te = split
    X = np.asarray(texts, dtype=object)
    y = np.asarray([str(v) for v in labels])
    vec = CountVectorizer(tokenizer=tokenize, lowercase=False, token_pattern=None)
    Xtr = vec.fit_transform(X[tr])
    best = None
    for C in Cs:
        clf = LogisticRegression(C=C, max_iter=5000).fit(Xtr, y[tr])
        acc = float(np.mean(clf.predict(vec.transform(X[va])) == y[va]))
        if best is None or acc > best[0]:
            best = (acc, C, clf)
    val_acc, C, clf = best
    return {
        "model": "logistic regression on word counts (sklearn)",
        "C": C,
        "val_accuracy": val_acc,
        "test_accuracy": float(np.mean(clf.predict(vec.transform(X[te])) == y[te])),
        "vocabulary": len(vec.vocabulary_),
    }


class _Network:
    """One training run's parameters (embeddings, linear map) and its encoded texts as tensors."""

    def __init__(
        self,
        ids: np.ndarray,
        mask: np.ndarray,
        y: np.ndarray,
        n_vocab: int,
        d: int,
        seed: int,
        *,
        alpha: float,
        layers: int,
        temperature: float,
    ) -> None:
        import torch

        gen = torch.Generator().manual_seed(seed)
        self.emb = torch.nn.Embedding(n_vocab, d, padding_idx=0)
        self.lin = torch.nn.Linear(d, 1)
        with torch.no_grad():
            self.emb.weight.copy_(torch.randn(n_vocab, d, generator=gen))
            self.emb.weight[0].zero_()
            self.lin.weight.copy_(torch.randn(1, d, generator=gen) / np.sqrt(d))
            self.lin.bias.zero_()
        self.ids, self.mask, self.y = (
            torch.from_numpy(ids),
            torch.from_numpy(mask),
            torch.from_numpy(y),
        )
        self.y_np = y
        self.alpha, self.layers, self.temperature = alpha, layers, temperature

    def parameters(self) -> list:
        return list(self.emb.parameters()) + list(self.lin.parameters())

    def state(self) -> tuple:
        """A detached copy of ``(embedding, weight, bias)``."""
        return tuple(p.detach().clone() for p in (self.emb.weight, self.lin.weight, self.lin.bias))

    def logits(self, batch: np.ndarray, hard: bool, state=None):
        E = self.emb.weight if state is None else state[0]
        m = self.mask[batch]
        width = int(m.sum(1).max())  # padding takes no part: cut the batch to its longest text
        m = m[:, :width]
        Z = E[self.ids[batch][:, :width]]
        if hard:
            Z = hardmax_forward(Z.detach(), m, self.alpha, self.layers)
        else:
            Z = softmax_forward(Z, m, self.alpha, self.layers, self.temperature)
        mean = (Z * m[..., None]).sum(1) / m.sum(1, keepdim=True)
        W, b = (self.lin.weight, self.lin.bias) if state is None else (state[1], state[2])
        return (mean @ W.double().T if hard else mean @ W.T).squeeze(-1) + (
            b.double() if hard else b
        )

    def accuracy(self, idx: np.ndarray, state=None) -> float:
        """Exact-hardmax accuracy on the texts ``idx`` (current parameters, or ``state``)."""
        import torch

        with torch.no_grad():
            out = []
            for s in range(0, idx.size, 512):
                out.append((self.logits(idx[s : s + 512], True, state) >= 0).numpy())
            pred = np.concatenate(out)
        return float(np.mean(pred == (self.y_np[idx] == 1)))


def _fit(
    net: _Network,
    split: tuple[np.ndarray, ...],
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    progress: Callable[[dict], None] | None,
) -> tuple[dict, tuple, float, float]:
    """The training loop: ``(history, (best val accuracy, its epoch, its state), test accuracy
    of the last epoch, test accuracy of the best epoch)``."""
    import torch

    from .._threads import torch_threads

    tr, va, te = split
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    history: dict[str, list] = {
        "epoch": [],
        "train_loss": [],
        "train_accuracy": [],
        "val_accuracy": [],
    }
    best = (-1.0, 0, None)
    rng = np.random.default_rng(seed)
    # tiny tensors (a batch of 64 texts × d numbers): torch's intra-op threads only add
    # synchronisation (measured: 2 threads 4× slower than 1 on a 2-core machine), and one
    # thread makes a run the same on every machine whatever its core count
    with torch_threads(1):
        for epoch in range(1, epochs + 1):
            order = rng.permutation(tr)
            total, seen = 0.0, 0
            for s in range(0, order.size, batch_size):
                batch = order[s : s + batch_size]
                opt.zero_grad()
                loss = loss_fn(net.logits(batch, False), net.y[batch])
                loss.backward()
                opt.step()
                with torch.no_grad():
                    net.emb.weight[0].zero_()
                total += float(loss.detach()) * batch.size
                seen += batch.size
            row = {
                "epoch": epoch,
                "train_loss": total / seen,
                "train_accuracy": net.accuracy(tr),
                "val_accuracy": net.accuracy(va),
            }
            for k, v in row.items():
                history[k].append(v)
            if row["val_accuracy"] > best[0]:
                best = (row["val_accuracy"], epoch, net.state())
            if progress is not None:
                progress(row)
        final_test = net.accuracy(te)
        early_test = net.accuracy(te, best[2])
    return history, best, final_test, early_test


def train_classifier(
    texts: Sequence[str],
    labels: Sequence[Any],
    *,
    d: int = 2,
    layers: int = 8,
    alpha: float = 1.0,
    temperature: float = 0.001,
    max_len: int = 128,
    epochs: int = 20,
    batch_size: int = 64,
    lr: float = 0.01,
    val: float = 0.15,
    test: float = 0.15,
    min_count: int = 2,
    max_vocab: int = 20000,
    seed: int = 0,
    baseline: bool = True,
    top_words: int = 10,
    source: dict | None = None,
    progress: Callable[[dict], None] | None = None,
) -> HardmaxClassifier:
    """Train the hardmax classifier of Alcalde, Fantuzzi & Zuazua on labelled texts (2 classes).

    Embeddings ``(vocabulary, d)`` (normal, std 1), then ``layers`` applications of one shared
    attention layer ``Q = K = I``, ``V = α I`` (softmax at ``temperature`` while training), the
    mean over the tokens, a linear map and a sigmoid; binary cross-entropy, Adam, shuffled
    mini-batches.  After every epoch the validation split is scored with exact hardmax; the
    returned model holds the parameters of the best validation epoch (the first of equals).

    Parameters
    ----------
    texts, labels : sequences of equal length
        Exactly two distinct labels (compared as strings);
        ``classes[1]`` is the larger in sort order.
    d, layers, alpha, temperature, max_len
        Embedding dimension, ``K``, ``α``, training temperature, tokens per text (more are cut).
    epochs, batch_size, lr, seed
        Optimisation.
    val, test : float
        Shares of each class held out for validation and test (stratified, ``seed``).
    min_count, max_vocab : int
        Vocabulary: training-split tokens seen at least
        ``min_count`` times, the most frequent first.
    baseline : bool
        Also fit :func:`bag_of_words_baseline` on the same split (needs scikit-learn).
    top_words : int
        Leader words per class reported (on the test split).
    source : dict, optional
        Where the data came from, kept in ``settings``.
    progress : callable, optional
        Called with each epoch's row of ``history``.

    Returns
    -------
    HardmaxClassifier
        ``metrics``: ``test_accuracy_final``, ``test_accuracy_early``, ``best_epoch``,
        ``val_accuracy_best``, split sizes, ``baseline`` and ``leader_words`` (per true class).

    Raises
    ------
    InvalidInputError
        An empty dataset, one class or more than two, a text without words, a class too small for
        the three splits, or a setting out of range.
    """
    texts, labels, classes = _check_data(texts, labels)
    d = check_int(d, "d", lo=1)
    layers = check_int(layers, "layers", lo=1)
    alpha = float(check_number(alpha, "alpha", lo=0, lo_open=True))
    temperature = float(check_number(temperature, "temperature", lo=0, lo_open=True))
    max_len = check_int(max_len, "max_len", lo=1)
    epochs = check_int(epochs, "epochs", lo=1)
    batch_size = check_int(batch_size, "batch_size", lo=1)
    lr = float(check_number(lr, "lr", lo=0, lo_open=True))
    for name, v in (("val", val), ("test", test)):
        check_number(v, name, lo=0, lo_open=True)
        if v >= 0.5:
            raise InvalidInputError(f"{name} must be a share below 0.5, got {v!r}")
    min_count = check_int(min_count, "min_count", lo=1)
    max_vocab = check_int(max_vocab, "max_vocab", lo=3)
    seed = check_int(seed, "seed", lo=0)

    t0 = time.perf_counter()
    split = stratified_split(labels, val, test, seed)
    tr, va, te = split
    vocab = _vocabulary([texts[i] for i in tr], min_count, max_vocab)
    index = {t: i for i, t in enumerate(vocab)}
    y_all = np.array([classes.index(y) for y in labels], dtype=np.float32)
    ids, mask = encode(texts, index, max_len)
    net = _Network(
        ids, mask, y_all, len(vocab), d, seed, alpha=alpha, layers=layers, temperature=temperature
    )
    history, (val_best, best_epoch, state), final_test, early_test = _fit(
        net, split, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, progress=progress
    )
    E, W, b = (x.double().numpy() for x in state)
    model = HardmaxClassifier(
        embedding=np.array(E),
        weight=np.array(W[0]),
        bias=float(b[0]),
        vocab=vocab,
        classes=classes,
        alpha=alpha,
        layers=layers,
        max_len=max_len,
        temperature=temperature,
        history=history,
        settings={
            "d": d,
            "epochs": epochs,
            "batch_size": batch_size,
            "lr": lr,
            "val": val,
            "test": test,
            "min_count": min_count,
            "max_vocab": max_vocab,
            "seed": seed,
            "optimizer": "Adam",
            "source": dict(source or {}),
        },
    )
    metrics: dict[str, Any] = {
        "n_train": int(tr.size),
        "n_val": int(va.size),
        "n_test": int(te.size),
        "class_counts": {c: int(labels.count(c)) for c in classes},
        "test_accuracy_final": final_test,
        "test_accuracy_early": early_test,
        "best_epoch": int(best_epoch),
        "val_accuracy_best": val_best,
        "val_accuracy_final": history["val_accuracy"][-1],
        "majority_test_accuracy": float(max(np.mean(y_all[te] == 0), np.mean(y_all[te] == 1))),
        "train_seconds": round(time.perf_counter() - t0, 2),
    }
    # the model must reproduce the accuracy it was selected with (float64 hardmax on its own)
    test_texts, test_labels = [texts[i] for i in te], [labels[i] for i in te]
    metrics["test_accuracy_model"] = model.accuracy(test_texts, test_labels)
    if baseline:
        metrics["baseline"] = bag_of_words_baseline(texts, labels, split)
    if top_words:
        metrics["leader_words"] = model.leader_words(test_texts, test_labels, top=top_words)
    model.metrics = metrics
    from ..analyses.building import make_provenance

    model.provenance = make_provenance({"name": "hardmax classifier"}, settings=model.settings)
    return model
