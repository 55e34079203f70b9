""":func:`features`: texts → attention → every feature set, chunk by chunk, → a FeatureTable.

Besides ``__all__``, the names here without a leading underscore (``set_columns``,
``set_quantities``, ``chunk_start``, ``stream_into``, ``ChunkFeatures``, ``join_pair``,
``answer_check``, ``PERSISTENCE_SETS``, ``threads_beside_workers``) are
what :mod:`attntopo.corpus` builds on: the corpus engine streams each batch's forward pass, layer by
layer, into this module's ``ChunkFeatures`` (``stream_into``), so a store holds the same feature
values as :func:`features` by construction (one path, also for the diagrams a store keeps).  They
are not part of the public API (the module is private).
"""

from __future__ import annotations

import datetime as _dt
import os
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any, Callable, Sequence

import numpy as np

from .._progress import NO_PROGRESS, ProgressOption, Reporter, check_progress, make_reporter
from .._threads import torch_threads
from .._validation import check_choice, check_positive_int
from .._version import __version__
from ..attention import Attention
from ..errors import EmptyTextError, InvalidInputError
from ._layers import MODEL_SETS, ChunkFeatures, head_order, prompt_mask
from ._registry import DEFAULT_SETS, FEATURE_SETS
from ._settings import FeatureSettings, resolve_settings
from ._table import FeatureTable, column_name, model_column

__all__ = ["FEATURE_SETS", "DEFAULT_SETS", "FeatureSettings", "features", "feature_names"]

_ON_EMPTY = ("raise", "skip")
#: Sets whose diagrams come from persistence_batch.
PERSISTENCE_SETS = tuple(name for name, s in FEATURE_SETS.items() if s.persistence)
#: Sets that need (prompt, response) pairs.
PAIR_SETS = tuple(name for name, s in FEATURE_SETS.items() if s.input == "pair")


# ------------------------------------------------------------------ settings
def set_quantities(set_name: str, st: dict) -> list[str]:
    """The quantity names of one head of a set (:attr:`FeatureSet.quantities`)."""
    return FEATURE_SETS[set_name].quantities(st)


def set_columns(layers: Sequence[int], heads: Sequence[int], st: dict) -> list[str]:
    """Column names: set by set, the heads of :func:`head_order` (the layers and heads in the
    order given), quantities within a head; :class:`ChunkFeatures` given the same
    ``order`` puts every value under its own head's name.  A set of :data:`MODEL_SETS` is
    one block ``L*H*.{set}.{quantity}`` (all the chosen layers and heads together)."""
    out: list[str] = []
    for s in st["sets"]:
        name = FEATURE_SETS[s].column(st)  # the token distances' sets: after the metric
        if s in MODEL_SETS:
            out += [model_column(name, q) for q in set_quantities(s, st)] if layers else []
            continue
        out += [
            column_name(layer, head, name, q)
            for layer, head in head_order(layers, heads)
            for q in set_quantities(s, st)
        ]
    return out


def feature_names(
    model: Any = "minilm",
    *,
    settings: FeatureSettings | None = None,
    **setting_values: Any,
) -> list[str]:
    """The column names :func:`features` returns for these settings, without computing anything.

    ``model`` is an alias, hub id, folder or a loaded :class:`~attntopo.models.AttentionModel`
    (its layer and head counts decide the names; a name loads the model, cached).  The
    settings are a :class:`FeatureSettings` or its fields as keywords, as in :func:`features`.
    """
    from ..attention import resolve_indices
    from ..models import AttentionModel, check_selection, load_model

    fs = resolve_settings(settings, owner="feature_names()", **setting_values)
    check_selection(model, layers=fs.layers, heads=fs.heads)  # before the weights load
    m = model if isinstance(model, AttentionModel) else load_model(model)
    li = resolve_indices(fs.layers, m.n_layers, "layer")
    hi = resolve_indices(fs.heads, m.n_heads, "head")
    return set_columns(li, hi, fs.st())


# ------------------------------------------------------------------ inputs
def _is_pair(item: Any) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item)


def _is_pair_list(item: Any) -> bool:
    return isinstance(item, list) and _is_pair(tuple(item))


def _items(texts: Any) -> tuple[list[Any], bool]:
    """The input as a list, and whether it was a single item."""
    if isinstance(texts, (str, Attention)) or hasattr(texts, "diagrams"):
        return [texts], True
    if isinstance(texts, (list, tuple)):
        if not texts:
            raise EmptyTextError("no texts given: pass a string or a non-empty list of strings")
        # a pair as json.load gives it, ["prompt", "answer"], is the pair ("prompt", "answer")
        return [tuple(x) if _is_pair_list(x) else x for x in texts], False
    raise InvalidInputError(
        "texts must be a string, a list of strings or (prompt, response) pairs, an Attention or "
        f"an Analysis, got {type(texts).__name__}"
    )


def _empty(item: Any) -> str | None:
    """What of ``item`` is empty or only whitespace (``"text"``, ``"prompt"``, ``"answer"``,
    ``"prompt and answer"``), or None."""
    if isinstance(item, str):
        return None if item.strip() else "text"
    if _is_pair(item):
        parts = [p for p, s in zip(("prompt", "answer"), item) if not s.strip()]
        return " and ".join(parts) or None
    return None


def _check_item(k: int, item: Any) -> None:
    if isinstance(item, (str, Attention)) or _is_pair(item) or hasattr(item, "attention"):
        return
    raise InvalidInputError(
        f"texts[{k}] is a {type(item).__name__}{_size(item)}: each item must be a string, a "
        "(prompt, response) pair of strings (a tuple or a 2-item list), an Attention or an Analysis"
    )


def _size(item: Any) -> str:
    return f" of {len(item)} items" if isinstance(item, (list, tuple)) else ""


def join_pair(prompt: str, response: str) -> tuple[str, int]:
    """The pair as one text, and the character where the response part starts."""
    sep = "" if (prompt[-1:].isspace() or response[:1].isspace()) else " "
    return prompt + sep + response, len(prompt)


def answer_check(
    bounds: Sequence[int | None],
    *,
    label: Callable[[int], str] | None = None,
    sets: Sequence[str] = (),
) -> Callable[[int, Attention], None]:
    """A :func:`stream_into` ``check`` for joined pairs (``bounds[k]``: where text ``k``'s
    answer starts, None for a single text): refuse a text whose answer kept no token, and,
    when one of ``sets`` (the sets asked for) ``needs_prompt_tokens`` (the ``prompt`` set's
    score attaches the answer to the prompt's tokens), one whose prompt kept no token but
    special ones.  ``label(k)`` prefixes the message (``"texts[3]: "``)."""
    prompt_tokens = any(FEATURE_SETS[s].needs_prompt_tokens for s in sets)

    def check(k: int, att: Attention) -> None:
        b = bounds[k]
        if b is None:
            return
        mask = _prompt_mask(att, b)
        if not np.any(~mask):
            raise InvalidInputError(
                (label(k) if label else "")
                + "the answer has no token after the prompt (was it truncated?)"
            )
        if prompt_tokens and not np.any(mask):
            raise InvalidInputError(
                (label(k) if label else "")
                + "the prompt kept no token but special ones (the tokenizer dropped its "
                "characters), so the prompt score has nothing to attach the answer to"
            )

    return check


# ------------------------------------------------------------------ compute
def _prompt_mask(att: Attention, boundary: int) -> np.ndarray:
    """Prompt tokens among the non-special tokens (those starting before ``boundary``)."""
    return prompt_mask(att.special, att.offsets, boundary)


def chunk_rows(
    atts: list[Attention],
    boundaries: list[int | None],
    st: dict,
    drop_special: bool,
    engine: str | None,
    n_jobs: int | None,
) -> np.ndarray:
    """Feature rows of a chunk of texts, shape (len(atts), n_features)."""
    return chunk_start(atts, boundaries, st, drop_special, engine, n_jobs)()[0]


def chunk_start(
    atts: list[Attention],
    boundaries: list[int | None],
    st: dict,
    drop_special: bool,
    engine: str | None,
    n_jobs: int | None,
    submit: Callable[..., Future] | None = None,
    *,
    maxdim: int = 1,
    js_diagrams: bool = False,
) -> Callable[[], tuple[np.ndarray, list[Any] | None]]:
    """Start a chunk's feature rows; the returned function finishes them.

    The attention is taken layer by layer (:class:`~attntopo.features._layers.ChunkFeatures`).
    The persistence batches (``js``, ``barcode``) go to ``submit`` (an executor's, run in a
    background thread, whose worker processes then compute them while this thread goes on
    with the other sets and the next chunk) or run here when it is None.  Calling the
    returned function waits for them and gives ``(rows, diagrams)``: the rows, shape
    (len(atts), n_features), sets in ``st["sets"]``'s order; with ``js_diagrams``, the
    Jensen–Shannon diagrams of every head (text-major, layer-major within a text, homology
    dimensions 0..``maxdim``; computed also when no JS set is asked for: the corpus store's
    ``keep_diagrams``), else None.  ``maxdim`` is the JS persistence's top dimension (the
    ``js`` set reads H0 and H1).
    """
    chunk = ChunkFeatures(
        len(atts),
        boundaries,
        st,
        drop_special,
        engine,
        n_jobs,
        submit=submit,
        maxdim=maxdim,
        js_diagrams=js_diagrams,
    )
    for t, att in enumerate(atts):
        chunk.add_attention(t, att)
    chunk.start()
    return chunk.finish


def stream_into(
    chunk: ChunkFeatures,
    m: Any,
    texts: list[str],
    positions: list[int],
    *,
    layers: Any = None,
    heads: Any = None,
    truncate: bool = False,
    check: Callable[[int, Attention], None] | None = None,
    forward_threads: int | None = None,
    on_layer: Callable[[], Any] | None = None,
) -> list[Any]:
    """Feed ``chunk`` the texts run through the model ``m``, layer by layer.

    :meth:`AttentionModel.stream` hands each layer over during the forward pass; it becomes a
    one-layer :class:`Attention` (host float32: the weights :meth:`AttentionModel.attention`
    would give) for text ``positions[k]`` of the chunk, and, on a GPU, the prompt score and the
    distances are computed from the device tensor.  No step holds all layers.  ``check(k,
    att)`` is called on each text's first layer (e.g. to refuse a pair whose response was
    cut).  ``forward_threads``: torch threads of the forward pass itself (at most; the
    features of each layer run on the threads the caller had).  ``on_layer()`` is called
    once a layer of a text is in the chunk (progress: a long text moves layer by layer).
    Returns the texts' encodings.
    """
    import torch

    from ..attention import resolve_indices

    hi = tuple(resolve_indices(heads, m.n_heads, "head"))
    encs = m._encode(texts, truncate=truncate)
    first: set[int] = set()

    def take(k: int, layer: int, w: Any) -> None:
        e = encs[k]
        att = Attention(
            weights=w.cpu().numpy()[None],
            tokens=e.tokens,
            offsets=e.offsets,
            special=np.array(e.special, dtype=bool),
            causal=m.causal,
            model=m.name,
            text=e.text,
            token_ids=np.array(e.ids, dtype=np.int64),
            layers=(layer,),
            heads=hi,
            truncated=e.truncated,
        )
        if k not in first:
            first.add(k)
            if check is not None:
                check(k, att)
        with torch_threads(outer):
            chunk.add(positions[k], att, device_weights=w if w.device.type != "cpu" else None)
        if on_layer is not None:
            on_layer()

    outer = torch.get_num_threads()
    with torch_threads(forward_threads, at_most=True) if forward_threads else nullcontext():
        m.stream(texts, take, layers=layers, heads=heads, truncate=truncate)
    return encs


def features(
    texts: Any,
    model: Any = "minilm",
    *,
    settings: FeatureSettings | None = None,
    truncate: bool = False,
    on_empty: str = "raise",
    batch_size: int = 16,
    n_jobs: int | None = None,
    progress: ProgressOption = None,
    **setting_values: Any,
) -> FeatureTable:
    """Topological features of texts: one row per text, named columns per head and set.

    Parameters
    ----------
    texts : str, list, Attention or Analysis
        A text, a list of texts, a list of ``(prompt, response)`` pairs (tuples, or 2-item
        lists as ``json.load`` gives them; needed by the ``prompt`` and ``lookback`` sets;
        other sets see the pair joined into one text), or attention already
        computed (an :class:`~attntopo.attention.Attention`, an
        :class:`~attntopo.analyses.Analysis`, or a list of them; ``model`` is then unused).
    model : str or AttentionModel
        Alias (``"minilm"``, ``"smollm2"``), hub id, folder or a loaded model.
    settings : FeatureSettings, optional
        Every feature setting in one record: the sets, layers and heads, the metric, the sets'
        parameters, ``drop_special``, ``min_persistence``, the persistence ``engine``
        (:class:`FeatureSettings` says what each does).
    **setting_values
        The same settings as keywords (``sets=("js",)``, ``layers=[0]``, ``metric=…``),
        checked against the one list of them (``SETTING_NAMES``: another name is a
        TypeError); one given beside ``settings`` must agree with it, else
        :class:`~attntopo.errors.InvalidInputError`.  A setting not given (or None) takes its
        default (``sets``: :data:`DEFAULT_SETS`).
    truncate : bool
        Cut texts longer than the model's context instead of raising.
    on_empty : {"raise", "skip"}
        An empty text in a list raises :class:`~attntopo.errors.EmptyTextError` naming its
        index, or is skipped (its index is listed in :attr:`FeatureTable.skipped`).
    batch_size : int
        Texts per chunk: attention, distances and diagrams of a chunk are freed once its rows
        are computed, so memory does not grow with the number of texts.
    n_jobs : int, optional
        Persistence worker processes (see :func:`attntopo.topology.persistence_batch`).
    progress : bool, callable or None, default None
        One bar for the whole run: ``None`` a bar on a terminal or in Jupyter (not in pipes or
        tests), ``True``/``False`` always/never, or ``callback(done, total, stage)`` (see
        :mod:`attntopo._progress`).  Units: per text, one per layer as that layer's features
        are computed (during the forward pass: one long text moves too) and one when its row
        is done (the persistence diagrams, in worker processes, are waited for then);
        stages ``"loading model"`` (when a name is given) and ``"texts"``.

    Returns
    -------
    FeatureTable
        ``values`` of shape (n_texts, n_features) and the column names
        ``L{layer}H{head}.{set}.{quantity}``.

    Raises
    ------
    InvalidInputError
        Unknown set (the message lists the valid ones), bad settings, a ``prompt`` set without
        pairs, a pair whose response has no token.
    EmptyTextError
        An empty text (``on_empty="raise"``), or no text at all.
    """
    fs = resolve_settings(settings, owner="features()", **setting_values)
    st, layers, heads, drop_special, engine = (
        fs.st(),
        fs.layers,
        fs.heads,
        fs.drop_special,
        fs.engine,
    )
    on_empty = check_choice(on_empty, "on_empty", _ON_EMPTY)
    batch_size = check_positive_int(batch_size, "batch_size", allow_none=False)
    progress = check_progress(progress)
    items, _ = _items(texts)
    for k, item in enumerate(items):
        _check_item(k, item)
    pair_sets = [s for s in st["sets"] if s in PAIR_SETS]
    if pair_sets:
        for k, item in enumerate(items):
            if not _is_pair(item):
                raise InvalidInputError(
                    f"the {pair_sets[0]} set needs (prompt, response) pairs of strings; texts[{k}] "
                    f"is a {type(item).__name__}"
                )
    skipped = [k for k, item in enumerate(items) if _empty(item)]
    if skipped and on_empty == "raise":
        k = skipped[0]
        what = _empty(items[k])
        whose = (
            f"texts[{k}] is"
            if what == "text"
            else (f"texts[{k}]'s {what} {'is' if ' and ' not in what else 'are'}")
        )
        raise EmptyTextError(
            f"{whose} empty or only whitespace ({len(skipped)} empty in all): remove "
            f"{'it' if what == 'text' else 'the pair'} or pass on_empty='skip'"
        )
    keep = [k for k in range(len(items)) if k not in set(skipped)]
    if not keep:
        raise EmptyTextError(f"all {len(items)} texts are empty: nothing to compute")
    if any(isinstance(items[k], str) or _is_pair(items[k]) for k in keep):
        from ..models import check_selection

        check_selection(model, layers=layers, heads=heads)  # before the weights load

    with make_reporter(progress, description="features") as reporter:
        return _features(
            items,
            keep,
            skipped,
            model,
            layers,
            heads,
            truncate,
            batch_size,
            st,
            drop_special,
            engine,
            n_jobs,
            reporter,
        )


def _features(
    items: list[Any],
    keep: list[int],
    skipped: list[int],
    model: Any,
    layers: Any,
    heads: Any,
    truncate: bool,
    batch_size: int,
    st: dict,
    drop_special: bool,
    engine: str | None,
    n_jobs: int | None,
    reporter: Reporter,
) -> FeatureTable:
    """:func:`features` once its inputs are checked, reporting to an open ``reporter``."""
    m = None
    if any(isinstance(items[k], str) or _is_pair(items[k]) for k in keep):
        from ..models import AttentionModel, load_model

        m = model if isinstance(model, AttentionModel) else load_model(model, progress=reporter)
    reporter.stage("texts")

    # persistence in worker processes overlaps the rest: one background thread feeds the pool
    # while this one runs the next forward pass (on the cores the workers leave it) and the
    # other sets; at most two chunks are alive at a time
    overlap = n_jobs != 1 and any(s in st["sets"] for s in PERSISTENCE_SETS)
    executor = ThreadPoolExecutor(1, thread_name_prefix="attntopo-features") if overlap else None
    try:
        rows, row_texts, layer_ids, head_ids = _run_chunks(
            items,
            keep,
            m,
            layers,
            heads,
            truncate,
            batch_size,
            st,
            drop_special,
            engine,
            n_jobs,
            executor.submit if executor is not None else None,
            threads_beside_workers(n_jobs) if overlap else None,
            reporter,
        )
    finally:
        if executor is not None:
            executor.shutdown(wait=True)
    settings = dict(st)
    settings.update(
        model=(m.name if m is not None else rows and _first_model(items, keep)),
        layers=list(layer_ids or ()),
        heads=list(head_ids or ()),
        drop_special=drop_special,
        truncate=truncate,
    )
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return FeatureTable(
        values=np.concatenate(rows, axis=0),
        columns=tuple(set_columns(layer_ids or (), head_ids or (), st)),
        index=np.array(keep, dtype=np.int64),
        texts=row_texts,
        skipped=tuple(skipped),
        settings=settings,
        provenance={"attntopo": __version__, "created": created},
    )


def _run_chunks(
    items: list[Any],
    keep: list[int],
    m: Any,
    layers: Any,
    heads: Any,
    truncate: bool,
    batch_size: int,
    st: dict,
    drop_special: bool,
    engine: str | None,
    n_jobs: int | None,
    submit: Callable[..., Future] | None,
    forward_threads: int | None,
    reporter: Reporter = NO_PROGRESS,
) -> tuple[list[np.ndarray], list[str], tuple | None, tuple | None]:
    """Every chunk's rows, the texts, and the layer and head ids (see :func:`features`).

    Texts go through the model layer by layer (:func:`stream_into`): a chunk never holds all
    layers' attention; attention already computed is read layer by layer too.
    """
    from ..attention import resolve_indices

    rows: list[np.ndarray] = []
    row_texts: list[str] = []
    layer_ids = head_ids = None
    if m is not None:
        model_ids = (
            tuple(resolve_indices(layers, m.n_layers, "layer")),
            tuple(resolve_indices(heads, m.n_heads, "head")),
        )
        n_layers = len(model_ids[0])
    else:  # every Attention covers the same heads (checked below)
        first = items[keep[0]]
        first = first if isinstance(first, Attention) else first.attention
        n_layers = len(resolve_indices(layers, first.n_layers, "layer"))
    # per text, one unit per layer as its features are computed, one when its row is done
    reporter.add_total(len(keep) * (n_layers + 1))

    def one_layer() -> None:
        reporter.advance()

    pending: Callable[[], tuple[np.ndarray, Any]] | None = None
    for start in range(0, len(keep), batch_size):
        idx = keep[start : start + batch_size]
        bounds: list[int | None] = []
        given: list[tuple[int, Attention]] = []
        to_run, run_pos = [], []
        for p, k in enumerate(idx):
            item = items[k]
            if isinstance(item, str):
                to_run.append(item)
                run_pos.append(p)
                bounds.append(None)
            elif _is_pair(item):
                text, b = join_pair(*item)
                to_run.append(text)
                run_pos.append(p)
                bounds.append(b)
            else:
                att = item if isinstance(item, Attention) else item.attention
                if layers is not None or heads is not None:
                    att = att.select(layers=layers, heads=heads)
                given.append((p, att))
                bounds.append(None)
        ids = model_ids if to_run else (tuple(given[0][1].layers), tuple(given[0][1].heads))
        if layer_ids is None:
            layer_ids, head_ids = ids
        for p, a in given:
            if (tuple(a.layers), tuple(a.heads)) != (layer_ids, head_ids):
                raise InvalidInputError(
                    f"texts[{idx[p]}] holds other layers/heads than texts[{keep[0]}]: every "
                    "Attention of one table must cover the same heads"
                )
        if to_run and model_ids != (layer_ids, head_ids):
            raise InvalidInputError(
                f"texts[{idx[run_pos[0]]}] is run on other layers/heads than texts[{keep[0]}]: "
                "every Attention of one table must cover the same heads"
            )
        chunk = ChunkFeatures(
            len(idx),
            bounds,
            st,
            drop_special,
            engine,
            n_jobs,
            submit=submit,
            order=head_order(layer_ids, head_ids),
        )
        for p, a in given:
            chunk.add_attention(p, a, on_layer=one_layer)
        texts_of = [""] * len(idx)
        for p, a in given:
            texts_of[p] = a.text

        check = answer_check(
            [bounds[p] for p in run_pos],
            label=lambda j, run_pos=run_pos, idx=idx: f"texts[{idx[run_pos[j]]}]: ",
            sets=st["sets"],
        )
        if to_run:
            encs = stream_into(
                chunk,
                m,
                to_run,
                run_pos,
                layers=layers,
                heads=heads,
                truncate=truncate,
                check=check,
                forward_threads=forward_threads,
                on_layer=one_layer,
            )
            for p, e in zip(run_pos, encs):
                texts_of[p] = e.text
        chunk.start()
        if pending is not None:
            rows.append(pending()[0])  # the previous chunk's persistence ran meanwhile
            reporter.advance(rows[-1].shape[0])
        pending = chunk.finish
        row_texts.extend(texts_of)
        del chunk
    if pending is not None:
        rows.append(pending()[0])
        reporter.advance(rows[-1].shape[0])
    return rows, row_texts, layer_ids, head_ids


def threads_beside_workers(n_jobs: int | None) -> int:
    """torch threads for a forward pass that runs beside the persistence workers."""
    cpus = os.cpu_count() or 1
    workers = cpus if n_jobs in (None, -1) else int(n_jobs)
    return max(1, cpus - workers)


def _first_model(items: list[Any], keep: list[int]) -> str:
    item = items[keep[0]]
    att = item if isinstance(item, Attention) else item.attention
    return att.model
