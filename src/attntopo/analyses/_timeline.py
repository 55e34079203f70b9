"""Topology in time: how the attention geometry of a text changes as its tokens arrive.

:func:`timeline` runs a text through a model and, for every prefix length ``t``, computes
the prefix's attention (one head), its token-distance matrix and its Vietoris–Rips
persistence diagram — a *time slice* — and returns a :class:`~._timeline_result.Timeline`,
which measures how the slices change (coherence, vineyards, two-parameter persistence).

Prefixes and special tokens
---------------------------
The text is tokenized once, exactly as :meth:`AttentionModel.tokenize` does:
``lead + content + trail`` where ``lead``/``trail`` are the special tokens the tokenizer
puts before/after every input (BERT: ``[CLS]`` … ``[SEP]``; SmolLM2: none).  The prefix
of length ``t`` is **the input the model would get for the first ``t − len(lead) −
len(trail)`` content tokens**: ``lead + content[:k] + trail``.  So ``t`` counts model input
tokens, specials included, and runs from ``len(lead) + len(trail) + 1`` (one content token)
to ``n`` (the whole text).  For BERT, slice ``t`` is ``[CLS]`` + the first ``t − 2``
content tokens + ``[SEP]``; for SmolLM2 it is simply the first ``t`` tokens.  Tokens are
never re-tokenized: a prefix is a prefix of the token sequence, not of the string.

* Causal models without trailing specials (SmolLM2, GPT-2, Llama): a row never sees
  later tokens, so the prefix's attention is the top-left ``t × t`` block of **one**
  forward pass of the whole text (a separate run of the prefix agrees within float32
  round-off, ≈1e-6), and its distances are the top-left block of one distance matrix.
* Every other case (bidirectional models like BERT/MiniLM, where each new token changes
  every row; or a template with trailing specials): every prefix is run through the
  model, in right-padded batches with attention masks (padding never leaks).

With ``drop_special=True`` special tokens are removed from each slice and rows
renormalized (:meth:`Attention.drop_special`); ``t`` still counts model input tokens.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._progress import NO_PROGRESS, ProgressOption, Reporter, reports
from .._validation import check_maxdim, check_metric, check_wasserstein_p
from ..attention import Attention, resolve_indices
from ..constants import DEFAULT_MODEL
from ..distances import token_distances
from ..errors import EmptyTextError, InvalidInputError, OutOfRangeError
from ..topology import persistence_batch
from ..topology.diagram_distances import bottleneck, matching
from ._inputs import load, positions_of
from ._provenance import make_provenance
from ._timeline_result import Change, Slice, Timeline, Vine

__all__ = ["timeline", "Timeline", "Slice", "Vine", "Change"]

# bound on the float32 attention elements materialised per batched forward pass
_BATCH_ELEMENTS = 24 * 2**20


def _special_runs(special: Sequence[bool]) -> tuple[int, int]:
    n = len(special)
    lead = 0
    while lead < n and special[lead]:
        lead += 1
    trail = 0
    while trail < n - lead and special[n - 1 - trail]:
        trail += 1
    return lead, trail


def _forward_prefixes(
    model, id_lists: list[list[int]], li, hi, reporter: Reporter = NO_PROGRESS
) -> list[np.ndarray]:
    """Forward each id list (batched by a memory bound); weights of the chosen heads.
    ``reporter`` advances by the prefixes of each batch."""
    out: list[np.ndarray] = []
    per_text = model.n_layers * model.n_heads
    start = 0
    while start < len(id_lists):
        stop = start + 1
        while stop < len(id_lists):
            n_max = max(len(x) for x in id_lists[start : stop + 1])
            if (stop + 1 - start) * per_text * n_max * n_max > _BATCH_ELEMENTS:
                break
            stop += 1
        ws = model.forward_ids(id_lists[start:stop], layers=li, heads=hi)
        out.extend(np.ascontiguousarray(w) for w in ws)
        reporter.advance(stop - start)
        start = stop
    return out


def _coherence(slices: list[Slice], maxdim: int, p: float, reporter: Reporter = NO_PROGRESS):
    S = len(slices)
    bn = np.zeros((max(S - 1, 0), maxdim + 1))
    ws = np.zeros((max(S - 1, 0), maxdim + 1))
    matchings: list[list[np.ndarray]] = [[] for _ in range(maxdim + 1)]
    for k in range(S - 1):
        a, b = slices[k].diagram, slices[k + 1].diagram
        for d in range(maxdim + 1):
            bn[k, d] = bottleneck(a, b, dim=d)
            val, pairs = matching(a, b, metric="wasserstein", p=p, dim=d)
            ws[k, d] = val
            matchings[d].append(np.asarray(pairs, dtype=np.int64).reshape(-1, 2))
        reporter.advance()
    return bn, ws, matchings


def _check_t0(t0: Any, t_min: int, n: int) -> int:
    """The first prefix length: ``t_min`` (one content token) by default, else checked."""
    if t0 is None:
        return t_min
    if isinstance(t0, bool) or not isinstance(t0, (int, np.integer)) or not t_min <= t0 <= n:
        raise OutOfRangeError(
            f"t0 must be an int in {t_min}..{n} (prefix length in model tokens, specials "
            f"included; {t_min} = one content token), got {t0!r}"
        )
    return int(t0)


def _prefix_attentions(
    src: dict, ts: list[int], positions: list[np.ndarray], t_min: int, drop_special: bool, progress
) -> list[Attention]:
    """The attention of every prefix, weights of shape (n_sel_layers, n_sel_heads, t, t): blocks
    of the full pass of a causal model, else one forward pass per prefix (batched)."""
    n, n_lead, n_trail = src["n"], src["n_lead"], src["n_trail"]
    if src["full"] is not None:
        weights = [src["full"][:, :, :t, :t] for t in ts]
    else:
        ids = src["ids"]
        lead, trail, content = ids[:n_lead], ids[n - n_trail :], ids[n_lead : n - n_trail]
        id_lists = [lead + content[: t - t_min + 1] + trail for t in ts]
        progress.stage("attention")
        weights = _forward_prefixes(src["model"], id_lists, src["li"], src["hi"], progress)
    special, token_ids = src["special"], src["token_ids"]
    atts = []
    for pos, w in zip(positions, weights):
        a = Attention(
            weights=w,
            tokens=[src["tokens"][i] for i in pos],
            offsets=[src["offsets"][i] for i in pos],
            special=special[pos],
            causal=src["causal"],
            model=src["name"],
            text=src["text"],
            token_ids=None if token_ids is None else token_ids[pos],
            layers=src["li"],
            heads=src["hi"],
            truncated=src["truncated"],
        )
        atts.append(a.drop_special() if drop_special else a)
    return atts


def _prefix_distances(
    atts: list[Attention], one_pass: bool, metric: str, progress
) -> list[np.ndarray]:
    """Token distances of every prefix: blocks of one matrix for a growing causal text (its
    rows never change), else one matrix per slice."""
    if one_pass:
        D_full = token_distances(atts[-1], metric=metric, progress=progress)
        return [D_full[:, :, : a.n_tokens, : a.n_tokens] for a in atts]
    return [token_distances(a, metric=metric, progress=progress) for a in atts]


@reports("timeline")  # progress arrives as an open Reporter
def timeline(
    text: str | Attention,
    model: Any = DEFAULT_MODEL,
    *,
    layers: int | Sequence[int] | None = None,
    heads: int | Sequence[int] | None = None,
    metric: str = "jensen_shannon",
    maxdim: int = 1,
    t0: int | None = None,
    drop_special: bool = False,
    p: float = 1.0,
    engine: str | None = None,
    truncate: bool = False,
    n_jobs: int | None = None,
    progress: ProgressOption = None,
) -> Timeline | list[Timeline]:
    """Time slices of a text's attention topology, one per prefix length.

    Parameters
    ----------
    text : str or Attention
        The text.  Its tokenization is computed once; prefixes are prefixes of the token
        sequence, with the model's special tokens around them (see the module docstring).
        An :class:`Attention` of a **causal** model (all its rows, special tokens kept) is
        used as is, without a model: its top-left blocks are the prefixes.
    model : str or AttentionModel
        ``"minilm"`` (bidirectional), ``"smollm2"`` (causal), any hub id or folder, or a
        loaded model.  Ignored when ``text`` is an Attention.
    layers, heads : int, list of int, or None
        Model indices, 0-based (negatives allowed).  One layer and one head give one
        :class:`Timeline`; a list (or ``None`` for all) gives a list of timelines in
        layer-major order, computed from the same forward passes and one persistence batch.
        Default: all heads, as in every analysis (``layers=0, heads=0`` for one timeline).
    metric : str
        Token distance (:data:`attntopo.distances.METRICS`).
    maxdim : {0, 1, 2}
        Highest homology dimension.
    t0 : int, optional
        First prefix length (model input tokens, specials included).  Default and
        smallest: one content token (``1`` for SmolLM2, ``3`` for BERT: [CLS] x [SEP]).
    drop_special : bool
        Remove special tokens from every slice and renormalize rows.
    p : float
        Order of the Wasserstein distances and of the matching that builds the vines.
    engine : str, optional
        Persistence engine.
    truncate : bool
        Cut texts longer than the model's context instead of raising.
    n_jobs : int, optional
        Worker processes for persistence (default: all cores).
    progress : bool, callable or None, default None
        One progress bar for the whole run: ``None`` a bar on a terminal or in Jupyter,
        ``True``/``False``, or a callback ``callback(done, total, stage)`` (see
        :mod:`attntopo._progress`).  Units: forward passes' texts (``"attention"``: one, or
        one per prefix), matrices (``"distances"``, ``"persistence"``: per slice and head)
        and pairs of consecutive slices per head (``"vines"``).

    Returns
    -------
    Timeline or list of Timeline

    Raises
    ------
    InvalidInputError
        Bad settings, or an Attention of a bidirectional model (its prefixes need their
        own forward passes: pass the text and the model).
    OutOfRangeError
        Bad ``layers``, ``heads`` or ``t0``.

    Notes
    -----
    Cost: causal models need one forward pass; bidirectional models one per prefix
    (batched), which dominates for long texts.  Persistence of all slices runs in one
    :func:`~attntopo.topology.persistence_batch` call.
    """
    layer, head = layers, heads
    metric = check_metric(metric)
    maxdim = check_maxdim(maxdim)
    p = check_wasserstein_p(p)
    single = layer is not None and head is not None and np.ndim(layer) == 0 and np.ndim(head) == 0
    if isinstance(text, Attention):
        src = _from_attention(text, layer, head)
    elif isinstance(text, str):
        src = _from_model(text, model, layer, head, truncate, progress)
    else:
        raise InvalidInputError(f"text must be a string or an Attention, got {type(text).__name__}")
    n, n_lead, n_trail = src["n"], src["n_lead"], src["n_trail"]
    t_min = n_lead + n_trail + 1
    t0 = _check_t0(t0, t_min, n)
    ts = list(range(t0, n + 1))
    positions = [
        np.array(list(range(n_lead + t - t_min + 1)) + list(range(n - n_trail, n)), dtype=np.int64)
        for t in ts
    ]
    one_pass = src["full"] is not None
    li, hi = src["li"], src["hi"]
    S, L, H = len(ts), len(li), len(hi)
    # prefixes' forward passes, distances (one pass: of the full text only), persistence, vines
    progress.add_total(
        (0 if one_pass else S) + (L * H if one_pass else S * L * H) + S * L * H + L * H * (S - 1)
    )

    atts = _prefix_attentions(src, ts, positions, t_min, drop_special, progress)
    dists = _prefix_distances(atts, one_pass, metric, progress)

    # ---- all diagrams in one batch, slice-major then layer, head
    mats = [d[i, j] for d in dists for i in range(L) for j in range(H)]
    dgms = persistence_batch(
        mats, maxdim=int(maxdim), engine=engine, n_jobs=n_jobs, progress=progress
    )
    used_engine = dgms[0].engine if dgms else (engine or "")

    # ---- one Timeline per head: its slices and the vines between them
    prov = make_provenance(
        src["info"],
        settings={
            "metric": metric,
            "engine": used_engine,
            "t0": t0,
            "drop_special": bool(drop_special),
            "truncate": truncate,
            "wasserstein_p": p,
        },
    )
    common = dict(
        tokens=list(src["tokens"]),
        offsets=[tuple(o) for o in src["offsets"]],
        special=src["special"],
        token_ids=src["token_ids"],
        text=src["text"],
        model=src["name"],
        causal=src["causal"],
        metric=metric,
        maxdim=int(maxdim),
        engine=used_engine,
        drop_special=bool(drop_special),
        p=p,
        n_lead=n_lead,
        n_trail=n_trail,
        one_pass=one_pass,
        truncated=src["truncated"],
    )
    progress.stage("vines")
    out = []
    for i, lay in enumerate(li):
        for j, hd in enumerate(hi):
            slices = []
            for k, (t, pos, a, d) in enumerate(zip(ts, positions, atts, dists)):
                keep = ~src["special"][pos] if drop_special else np.ones(pos.size, dtype=bool)
                slices.append(
                    Slice(
                        t=t,
                        token=int(n_lead + t - t_min),
                        positions=pos[keep],
                        attention=a.select(layers=[i], heads=[j]),
                        distances=np.ascontiguousarray(d[i, j]),
                        diagram=dgms[(k * L + i) * H + j],
                    )
                )
            bn, ws, matchings = _coherence(slices, int(maxdim), p, progress)
            out.append(
                Timeline(
                    slices=slices,
                    layer=int(lay),
                    head=int(hd),
                    bottleneck=bn,
                    wasserstein=ws,
                    matchings=matchings,
                    provenance=dict(prov),
                    **common,
                )
            )
    return out[0] if single else out


def _from_model(
    text: str, model: Any, layer, head, truncate: bool, reporter: Reporter = NO_PROGRESS
) -> dict:
    """Tokenize once; run the whole text once if a causal model allows one pass (loading and
    that pass report to ``reporter``)."""
    m = load(model, reporter, layer, head)
    enc = m.tokenize(text, truncate=truncate)
    ids, n = list(enc.ids), len(enc.ids)
    n_lead, n_trail = _special_runs(enc.special)
    if n - n_lead - n_trail < 1:
        raise EmptyTextError(
            "the text has no tokens besides special tokens: give at least one word"
        )
    li = resolve_indices(layer, m.n_layers, "layer")
    hi = resolve_indices(head, m.n_heads, "head")
    full = None
    if m.causal and n_trail == 0:
        # rows never see the future: every prefix is a top-left block of this one pass
        reporter.add_total(1)
        reporter.stage("attention")
        full = np.ascontiguousarray(m.forward_ids([ids], layers=li, heads=hi)[0])
        reporter.advance()
    return dict(
        n=n,
        n_lead=n_lead,
        n_trail=n_trail,
        ids=ids,
        full=full,
        model=m,
        li=li,
        hi=hi,
        tokens=list(enc.tokens),
        offsets=list(enc.offsets),
        special=np.array(enc.special, dtype=bool),
        token_ids=np.array(ids, dtype=np.int64),
        causal=m.causal,
        name=m.name,
        text=text,
        truncated=enc.truncated,
        info=m.info(),
    )


def _from_attention(att: Attention, layer, head) -> dict:
    """A causal Attention already holds every prefix: its top-left blocks."""
    if not att.causal:
        raise InvalidInputError(
            "an Attention of a bidirectional model cannot give its prefixes (every new token "
            "changes every row): pass the text and the model, e.g. timeline(text, model='minilm')"
        )
    if att.special_dropped:
        raise InvalidInputError(
            "this Attention had its special tokens dropped; pass the full one and drop_special=True"
        )
    n = att.n_tokens
    n_lead, n_trail = _special_runs(att.special.tolist())
    if n - n_lead - n_trail < 1:
        raise EmptyTextError("the attention has no tokens besides special tokens")
    if n_trail:
        raise InvalidInputError(
            "this causal Attention ends with special tokens, so its prefixes are not blocks of "
            "it: pass the text and the model instead"
        )

    lp = positions_of(layer, att.layers, "layer") or tuple(range(att.n_layers))
    hp = positions_of(head, att.heads, "head") or tuple(range(att.n_heads))
    full = np.ascontiguousarray(att.weights[np.ix_(lp, hp)])
    return dict(
        n=n,
        n_lead=n_lead,
        n_trail=0,
        ids=None,
        full=full,
        model=None,
        li=lp,
        hi=hp,
        layers=tuple(att.layers[i] for i in lp),
        heads=tuple(att.heads[i] for i in hp),
        tokens=list(att.tokens),
        offsets=list(att.offsets),
        special=np.asarray(att.special, dtype=bool),
        token_ids=None if att.token_ids is None else np.asarray(att.token_ids, dtype=np.int64),
        causal=True,
        name=att.model,
        text=att.text,
        truncated=att.truncated,
        info={"name": att.model, "causal": True},
    )
