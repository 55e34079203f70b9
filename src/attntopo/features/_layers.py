"""Feature rows built one layer at a time: what :func:`attntopo.features` and the corpus
engine compute from each layer's attention, so that no step holds every layer at once.

Every feature set works per head, so a text's row is the concatenation, set by set, of its
layers' per-head values (columns are layer-major within a set, in the order the user gave
the layers and heads: :func:`head_order`).  Each value is kept under the ``(layer, head)``
of the weights it came from and placed by that key, never by its position in the stream: a
forward pass hands layers over in model order, whatever order they were asked in.
:class:`ChunkFeatures` takes one layer of one text at a time (:meth:`ChunkFeatures.add`)
from either source:

* an :class:`~attntopo.attention.Attention` already computed (split into its layers), or
* the forward pass itself, through :meth:`attntopo.models.AttentionModel.stream`, which hands
  each layer over as the model computes it and drops it afterwards.

The two give the same numbers: the same functions run on the same float32 weights.

Memory of one long text.  A layer's heads are taken in groups of :func:`heads_per_group`
(``GROUP_BYTES`` of float64 ``n × n`` matrices per group): every set's temporaries (the
float64 copies of the rows, ``drop_special``'s renormalized weights, the distance matrices)
exist for one group at a time, never for the whole layer; a text short enough for a layer to
fit in ``GROUP_BYTES`` is one group, as before.  Every set works head by head, so the rows do
not depend on the grouping.  The distance matrices of the persistence sets (``js``,
``js_image``, ``js_landscape``, ``barcode``) wait in batches of at most ``GROUP_BYTES`` (plus
one matrix), handed to the persistence engines (through ``submit``, in a background thread
whose worker processes compute them while the next heads come) when a batch is full, or, when
the layer came with its weights on the model's device (a GPU), as soon as the layer is done,
so that the engines' H1 of layer ``k`` overlaps the device's work on layer ``k + 1``; at most
two batches are alive besides the one filling, so a chunk holds at most about
``3 × GROUP_BYTES`` of distance matrices whatever its texts' length and head count (a
512-token text's 72 MiniLM heads are 150 MB of them).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..attention import Attention
from ..distances import token_distances
from ..errors import InvalidInputError
from ..topology.persistence import persistence_batch_valid
from ._registry import FEATURE_SETS

__all__ = [
    "ChunkFeatures",
    "HeadGroup",
    "Done",
    "prompt_mask",
    "JS_SETS",
    "GROUP_BYTES",
    "heads_per_group",
    "head_order",
    "MODEL_SETS",
]

#: Sets with one block of values per text (all the chosen layers and heads together), not one
#: per head (:attr:`FeatureSet.per_text`): their columns are ``L*H*.{set}.{quantity}``.
MODEL_SETS = tuple(name for name, s in FEATURE_SETS.items() if s.per_text)
#: Sets read from the diagrams of the token distances (:attr:`FeatureSet.on_distances`).
JS_SETS = tuple(name for name, s in FEATURE_SETS.items() if s.on_distances)
#: Bytes of float64 ``n × n`` matrices per group of heads (:func:`heads_per_group`), and per
#: persistence batch: 8 MiB.
GROUP_BYTES = 1 << 23
# float64 entries of distance matrices waiting for one persistence batch
_FLUSH_ELEMENTS = GROUP_BYTES // 8


def heads_per_group(n: int, n_heads: int) -> int:
    """Heads of an ``n``-token layer taken together: as many as keep their float64 ``n × n``
    matrices within :data:`GROUP_BYTES`, at least one, at most ``n_heads``.

    >>> heads_per_group(510, 12), heads_per_group(128, 12), heads_per_group(2048, 9)
    (4, 12, 1)
    """
    return max(1, min(n_heads, GROUP_BYTES // max(1, 8 * n * n)))


class Done:
    """A result already computed, with a :class:`~concurrent.futures.Future`'s ``result()``."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self) -> Any:
        return self._value


def prompt_mask(special: np.ndarray, offsets: list, boundary: int) -> np.ndarray:
    """Prompt tokens among the non-special tokens (those starting before ``boundary``)."""
    keep = ~np.asarray(special, dtype=bool)
    starts = np.array([a for a, _ in offsets], dtype=np.int64)
    return starts[keep] < boundary


class _Persistence:
    """Distance matrices of one kind waiting for the engines, batched, with backpressure."""

    def __init__(
        self,
        n_texts: int,
        maxdim: int,
        engine: str | None,
        n_jobs: int | None,
        submit: Callable[..., Any] | None,
    ) -> None:
        self.maxdim, self.engine, self.n_jobs, self.submit = maxdim, engine, n_jobs, submit
        self.mats: list[np.ndarray] = []
        self.keys: list[tuple[int, int]] = []  # (text, ordinal of the matrix within the text)
        self.sizes: list[list[int]] = [[] for _ in range(n_texts)]  # per text, each matrix's n
        self.size = 0
        self.jobs: list[tuple[Any, list[tuple[int, int]]]] = []
        self.done: dict[tuple[int, int], Any] = {}

    def add(self, t: int, D: np.ndarray) -> None:
        """One matrix of text ``t`` (its next one)."""
        self.mats.append(D)
        self.keys.append((t, len(self.sizes[t])))
        self.sizes[t].append(int(D.shape[-1]))
        self.size += D.size
        if self.size >= _FLUSH_ELEMENTS:
            self.flush()

    def flush(self) -> None:
        if not self.mats:
            return
        # at most two batches alive: wait for the older one before starting another
        while len(self.jobs) >= 2:
            self._collect(0)
        # matrices are valid by construction (token_distances: finite, exactly symmetric, zero
        # diagonal; barcode_matrices: the same, in [0, 1]): not checked again
        args = (self.mats,)
        kw = dict(maxdim=self.maxdim, engine=self.engine, n_jobs=self.n_jobs)
        job = (
            self.submit(persistence_batch_valid, *args, **kw)
            if self.submit is not None
            else Done(persistence_batch_valid(*args, **kw))
        )
        self.jobs.append((job, self.keys))
        self.mats, self.keys, self.size = [], [], 0

    def _collect(self, k: int) -> None:
        job, keys = self.jobs.pop(k)
        self.done.update(zip(keys, job.result()))

    def diagrams(self) -> tuple[list[Any], np.ndarray]:
        """Every diagram, text-major and in the order each text's matrices came, and the
        number of points of each."""
        self.flush()
        while self.jobs:
            self._collect(0)
        return (
            [self.done[(t, j)] for t, s in enumerate(self.sizes) for j in range(len(s))],
            np.array([n for s in self.sizes for n in s], dtype=np.int64),
        )


class HeadGroup:
    """What a feature set's ``head`` function reads: a group of heads of one layer of a text.

    Attributes
    ----------
    att : Attention
        The layer's heads as the model computed them (weights (1, H, n, n)).
    W : ndarray of shape (H, n, n)
        ``att``'s weights.
    real : Attention
        ``att`` with special tokens dropped (rows renormalized) when ``drop_special`` asks
        for it and a set that sees it is computed; else ``att`` itself.
    Wr : ndarray of shape (H, nr, nr)
        ``real``'s weights.
    device_weights, dev_real : torch.Tensor or None
        ``W`` and ``Wr`` on the model's device (a GPU) when the layer came from there.
    D : ndarray of shape (H, nr, nr) or None
        The token distances of ``Wr`` when a set reads their diagrams (else None).
    boundary : int or None
        The character where the response starts (pairs), else None.
    drop_special : bool
        The setting (a set that drops the special tokens itself reads it).
    st : dict
        The settings (:meth:`~attntopo.features.FeatureSettings.st`).
    """

    __slots__ = (
        "att",
        "W",
        "real",
        "Wr",
        "device_weights",
        "dev_real",
        "D",
        "boundary",
        "drop_special",
        "st",
    )

    def __init__(self, **values: Any) -> None:
        for k, v in values.items():
            setattr(self, k, v)

    def prompt_mask(self) -> np.ndarray:
        """The prompt's tokens among the non-special tokens (:func:`prompt_mask`)."""
        return prompt_mask(self.att.special, self.att.offsets, self.boundary)

    def device_content(self) -> Any:
        """``device_weights`` without the special tokens, rows renormalized (on the device)."""
        return _drop_on_device(self.device_weights, ~self.att.special)


class ChunkFeatures:
    """The feature rows of a chunk of texts, fed one layer of one text at a time.

    Parameters
    ----------
    n_texts : int
        Texts of the chunk (indexed 0..n_texts-1 in :meth:`add`).
    boundaries : list of int or None
        Per text, the character where the response starts (``prompt`` set), else None.
    st : dict
        Checked settings (:meth:`attntopo.features.FeatureSettings.st`).
    drop_special : bool, engine, n_jobs, submit, maxdim, js_diagrams
        As in :func:`attntopo.features._compute.chunk_start`.
    order : sequence of (layer, head), optional
        The heads of a row, in the order its values are wanted (:func:`head_order`; the
        column names are made from the same list).  Every value is kept under the
        ``(layer, head)`` of the weights it was computed from (``att.layers``,
        ``att.heads``), whatever order the layers and heads come in (a forward pass hands
        them over in model order), and :meth:`finish` places it at its key's position in
        ``order``.  None: the order in which text 0's heads came.

    Every text must get the same heads (any order).
    """

    def __init__(
        self,
        n_texts: int,
        boundaries: list[int | None],
        st: dict,
        drop_special: bool,
        engine: str | None,
        n_jobs: int | None,
        *,
        submit: Callable[..., Any] | None = None,
        maxdim: int = 1,
        js_diagrams: bool = False,
        order: Sequence[tuple[int, int]] | None = None,
    ) -> None:
        self.n_texts = n_texts
        self.order = None if order is None else [(int(a), int(b)) for a, b in order]
        # per text, the (layer, head) of each value in the order it came: every set appends
        # one value per head in this order (the persistence batches keep it too)
        self.keys: list[list[tuple[int, int]]] = [[] for _ in range(n_texts)]
        self.boundaries = boundaries
        self.st = st
        self.sets = list(st["sets"])
        self.specs = [FEATURE_SETS[s] for s in self.sets]
        self.metric = st.get("metric", "jensen_shannon")
        self.drop_special = drop_special
        self.js_diagrams = js_diagrams
        self.need_js = js_diagrams or any(s.on_distances for s in self.specs)
        self.blocks: list[dict[str, list[np.ndarray]]] = [
            {s: [] for s in self.sets} for _ in range(n_texts)
        ]
        # the token distances' diagrams (shared by the sets that read them), and one batch of
        # each set that makes matrices of its own (``barcode``)
        self.js = _Persistence(n_texts, maxdim, engine, n_jobs, submit) if self.need_js else None
        self.own = {
            s.name: _Persistence(n_texts, 1, engine, n_jobs, submit)
            for s in self.specs
            if s.matrices is not None
        }
        # the sets of one block per text (``zigzag``): per text, what each layer gave, by layer
        self.per_layer: dict[str, list[dict[int, Any]]] = {
            s.name: [{} for _ in range(n_texts)] for s in self.specs if s.per_text
        }

    def _batches(self) -> list[_Persistence]:
        return ([self.js] if self.js is not None else []) + list(self.own.values())

    def add(self, t: int, att: Attention, *, device_weights: Any = None) -> None:
        """One layer of text ``t``: ``att`` holds that layer alone, weights (1, H, n, n).

        ``device_weights``: the same weights as a torch.Tensor of shape (H, n, n) on the
        model's device (e.g. a GPU), or None; when given, the prompt score and the
        Jensen–Shannon distances are computed there, and only their results cross to the host;
        the layer's matrices then go to the persistence engines at once (through ``submit``:
        H1 of this layer on the CPU while the device computes the next one; at most two
        batches waiting), the same diagrams as in batches by size.  The heads are taken in
        groups of :func:`heads_per_group` (one group unless the text is long).
        """
        _, H, n, _ = att.weights.shape
        for name, kept in self.per_layer.items():  # these read the whole layer
            kept[t][int(att.layers[0])] = FEATURE_SETS[name].layer(att, self.st, self.drop_special)
        per = heads_per_group(n, H)
        if per >= H:
            self._add(t, att, device_weights)
        else:
            for h0 in range(0, H, per):
                group = _heads(att, h0, h0 + per)
                dev = device_weights[h0 : h0 + per] if device_weights is not None else None
                self._add(t, group, dev)
                del group, dev
        if device_weights is not None:
            # the device does the next layer meanwhile: this layer's persistence starts now
            for p in self._batches():
                p.flush()

    def _add(self, t: int, att: Attention, device_weights: Any = None) -> None:
        """:meth:`add` for a group of heads of one layer: every set appends per head."""
        _, H, n, _ = att.weights.shape
        layer = int(att.layers[0])
        self.keys[t].extend((layer, int(h)) for h in att.heads)
        # the sets that see the attention with special tokens dropped read one copy of the
        # layer; the others (prompt alone on the host takes its tokens a head at a time) none
        whole = (
            device_weights is not None
            or self.need_js
            or any(s.drops_special and not s.per_text for s in self.specs)
        )
        dropping = self.drop_special and bool(att.special.any())
        real = att.drop_special() if (dropping and whole) else att
        nr = real.n_tokens
        Wr = real.weights.reshape(H, nr, nr)
        dev_real = None
        if device_weights is not None:
            dev_real = (
                _drop_on_device(device_weights, ~att.special) if real is not att else device_weights
            )
        D = None
        if self.need_js:
            if dev_real is not None:
                from ..distances import token_distances_tensor

                D_dev = token_distances_tensor(dev_real, metric=self.metric)
                D = D_dev.cpu().numpy()
                del D_dev
            else:
                D = token_distances(Wr, metric=self.metric)
            for M in D:
                self.js.add(t, M)
        group = HeadGroup(
            att=att,
            W=att.weights.reshape(H, n, n),
            real=real,
            Wr=Wr,
            device_weights=device_weights,
            dev_real=dev_real,
            D=D,
            boundary=self.boundaries[t],
            drop_special=self.drop_special,
            st=self.st,
        )
        for spec in self.specs:
            if spec.matrices is not None:
                for M in spec.matrices(group):
                    self.own[spec.name].add(t, M)
            elif spec.head is not None:
                self.blocks[t][spec.name].append(spec.head(group))

    def add_attention(
        self, t: int, att: Attention, *, on_layer: Callable[[], Any] | None = None
    ) -> None:
        """Every layer of an :class:`~attntopo.attention.Attention`, one after the other
        (``on_layer()`` called after each: progress)."""
        for i in range(att.weights.shape[0]):
            self.add(t, _one_layer(att, i))
            if on_layer is not None:
                on_layer()

    def start(self) -> None:
        """Hand the distances still waiting to the engines (the chunk has all its layers)."""
        for p in self._batches():
            p.flush()

    def finish(self) -> tuple[np.ndarray, list[Any] | None]:
        """Wait for the persistence batches; ``(rows, diagrams)`` as ``chunk_start`` gives,
        each text's heads in :attr:`order`."""
        n_texts, sets = self.n_texts, self.sets
        perms = self._permutations()
        dgms = None
        if self.js is not None:
            dgms, sizes = self.js.diagrams()
        for spec in self.specs:
            if spec.diagrams is None:
                continue
            d, n = (dgms, sizes) if spec.on_distances else self.own[spec.name].diagrams()
            for t, part in enumerate(np.split(spec.diagrams(d, n, self.st), n_texts)):
                self.blocks[t][spec.name] = [part]
        for name, kept in self.per_layer.items():
            # through the layers in the model's order, whatever order they came or were asked in
            for t in range(n_texts):
                layers = [v for _, v in sorted(kept[t].items())]
                self.blocks[t][name] = [FEATURE_SETS[name].text(layers, self.st)]
                kept[t] = {}
        # one row per text: for each set, the heads of ``order``, quantities within a head;
        # a value goes where its own (layer, head) is (a set of one block per text: as it is)
        rows = (
            np.stack(
                [
                    np.concatenate(
                        [
                            np.concatenate(self.blocks[t][s], axis=0).ravel()
                            if FEATURE_SETS[s].per_text
                            else np.concatenate(self.blocks[t][s], axis=0)
                            .reshape(len(perms[t]), -1)[perms[t]]
                            .ravel()
                            for s in sets
                        ]
                    )
                    for t in range(n_texts)
                ]
            )
            if sets
            else np.zeros((n_texts, 0))
        )
        if dgms is not None and self.js_diagrams:
            per = [len(k) for k in self.keys]
            starts = np.cumsum([0] + per)
            dgms = [dgms[starts[t] + j] for t in range(n_texts) for j in perms[t]]
        return rows, (dgms if self.js_diagrams else None)

    def _permutations(self) -> list[np.ndarray]:
        """Per text, the positions (in the order its heads came) of :attr:`order`'s heads."""
        order = self.order if self.order is not None else (self.keys[0] if self.keys else [])
        out = []
        for t, keys in enumerate(self.keys):
            where = {k: j for j, k in enumerate(keys)}
            if len(where) != len(keys) or sorted(where) != sorted(order):
                raise InvalidInputError(
                    f"text {t} of a chunk got heads {_names(keys)}, expected {_names(order)}: "
                    "every text of one table must cover the same heads, each once"
                )
            out.append(np.array([where[k] for k in order], dtype=np.int64))
        return out


def head_order(layers: Sequence[int], heads: Sequence[int]) -> list[tuple[int, int]]:
    """The ``(layer, head)`` keys of a feature row, layer-major in the order given (the
    user's order is the display order: :func:`~attntopo.features.features` with
    ``layers=[4, 1]`` gives layer 4's columns first, each named from the head it was
    computed for).

    >>> head_order([4, 1], [0, 3])
    [(4, 0), (4, 3), (1, 0), (1, 3)]
    """
    return [(int(a), int(b)) for a in layers for b in heads]


def _names(keys: Sequence[tuple[int, int]]) -> str:
    shown = ", ".join(f"L{a}H{b}" for a, b in list(keys)[:6])
    return f"[{shown}{', …' if len(keys) > 6 else ''}]"


def _heads(att: Attention, a: int, b: int) -> Attention:
    """Heads ``a:b`` of a one-layer ``att`` (its weights a view)."""
    from dataclasses import replace

    return replace(att, weights=att.weights[:, a:b], heads=tuple(att.heads[a:b]))


def _one_layer(att: Attention, i: int) -> Attention:
    """Layer ``i`` of ``att`` as an Attention of one layer (its weights a view)."""
    from dataclasses import replace

    return replace(att, weights=att.weights[i : i + 1], layers=(att.layers[i],))


def _drop_on_device(w: Any, keep: np.ndarray) -> Any:
    """:meth:`Attention.drop_special` of a tensor (H, n, n) on its device: rows and columns of
    ``keep`` only, rows renormalized in float64 and rounded to float32 as there."""
    import torch

    idx = torch.as_tensor(np.flatnonzero(keep), device=w.device)
    sub = w.index_select(-2, idx).index_select(-1, idx).to(torch.float64)
    s = sub.sum(-1, keepdim=True)
    if bool((s <= 0).any()):
        raise InvalidInputError(
            "a kept token attends only to removed tokens, so its row cannot be renormalized"
        )
    return (sub / s).to(torch.float32)
