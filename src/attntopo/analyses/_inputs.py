"""What every analysis accepts: texts run through a model, or attentions already computed.

The analyses take either strings (and a model: an alias, a hub id, a folder or a loaded
:class:`~attntopo.models.AttentionModel`) or :class:`~attntopo.attention.Attention` objects
of one model, never a mix.  These helpers turn either into attentions, with the same checks
and the same messages everywhere.
"""

from __future__ import annotations

from typing import Any, Sequence

from .._progress import NO_PROGRESS, Reporter
from ..attention import Attention, resolve_index, resolve_indices
from ..errors import InvalidInputError, OutOfRangeError

__all__ = [
    "load",
    "attentions_of",
    "texts_or_attentions",
    "as_attentions",
    "positions_of",
    "head_position",
    "MIXED",
]

#: The message for a list that mixes strings and Attention objects.
MIXED = "give texts as all strings or all Attention objects, not a mix"


def load(model: Any, progress: Any = False, layers: Any = None, heads: Any = None):
    """A loaded :class:`~attntopo.models.AttentionModel`: ``model`` itself, or
    :func:`~attntopo.load_model` of an alias, hub id or folder (reporting to ``progress``),
    once ``layers`` and ``heads`` are checked against its configuration (one line before the
    weights load: :func:`~attntopo.models.check_selection`)."""
    from ..models import AttentionModel, check_selection, load_model

    if isinstance(model, AttentionModel):
        return model
    check_selection(model, layers=layers, heads=heads)
    return load_model(model, progress=progress)


def positions_of(sel: Any, ids: Sequence[int], what: str) -> tuple[int, ...] | None:
    """Positions in an Attention's ``layers`` (or ``heads``) of the model indices ``sel``.

    ``sel`` is what ``layer=``/``head=`` accept (an int, a sequence, a slice; negatives count
    from the end of the model's ``max(ids) + 1``); ``None`` gives ``None`` (all).

    Raises
    ------
    OutOfRangeError
        An index the Attention does not hold.
    """
    if sel is None:
        return None
    ids = list(ids)
    wanted = resolve_indices(sel, max(ids) + 1, what)
    missing = [x for x in wanted if x not in ids]
    if missing:
        raise OutOfRangeError(
            f"{what} {missing[0]} is not in this Attention; it holds {what}s {ids}"
        )
    return tuple(ids.index(x) for x in wanted)


def attentions_of(
    texts: Sequence[Any],
    model: Any,
    layer: Any,
    head: Any,
    drop_special: bool,
    truncate: bool,
    reporter: Reporter = NO_PROGRESS,
) -> tuple[list[Attention], dict]:
    """The attentions of several texts (one batched pass) and the model's description.

    ``texts`` are all strings (run through ``model``) or all Attention objects of one model
    with the same layers and heads (``model`` ignored; ``layer``/``head`` select among the
    heads they hold, ``drop_special`` applies).  Loading the model and the forward pass
    (one unit per text, added to its total here) report to ``reporter``.
    """
    if all(isinstance(t, Attention) for t in texts):
        atts = list(texts)
        first = atts[0]
        for t in atts[1:]:
            if t.layers != first.layers or t.heads != first.heads or t.model != first.model:
                raise InvalidInputError(
                    "Attention inputs must come from one model with the same layers and heads"
                )
        if layer is not None or head is not None:
            atts = [
                t.select(
                    layers=positions_of(layer, t.layers, "layer"),
                    heads=positions_of(head, t.heads, "head"),
                )
                for t in atts
            ]
        if drop_special:
            atts = [t if t.special_dropped else t.drop_special() for t in atts]
        return atts, {
            "name": first.model,
            "n_layers": max(first.layers) + 1,
            "n_heads": max(first.heads) + 1,
        }
    if any(isinstance(t, Attention) for t in texts):
        raise InvalidInputError(MIXED)
    m = load(model, reporter, layer, head)
    reporter.add_total(m.progress_units(len(texts)))  # the forward pass, layer by layer
    atts = m.attention(
        list(texts),
        drop_special=drop_special,
        truncate=truncate,
        layers=layer,
        heads=head,
        progress=reporter,
    )
    return list(atts), m.info()


def texts_or_attentions(
    texts_or_atts: Any, model: Any, reporter: Reporter = NO_PROGRESS
) -> tuple[list[Any], bool, Any]:
    """``(items, is_attention, loaded model or None)`` for a text, an Attention or a list of either
    (loading the model reports to ``reporter``)."""
    if isinstance(texts_or_atts, (str, Attention)):
        items = [texts_or_atts]
    else:
        try:
            items = list(texts_or_atts)
        except TypeError:
            raise InvalidInputError(
                f"give a text, a list of texts, an Attention or a list of Attentions; got "
                f"{type(texts_or_atts).__name__}"
            ) from None
    if not items:
        raise InvalidInputError("no texts given: pass a string or a non-empty list of strings")
    if all(isinstance(t, Attention) for t in items):
        return items, True, None
    if not all(isinstance(t, str) for t in items):
        raise InvalidInputError(MIXED)
    return items, False, load(model, reporter)


def as_attentions(att: Any) -> list[Attention]:
    """An Attention or a non-empty list of them, as a list (no model involved)."""
    if isinstance(att, Attention):
        return [att]
    if isinstance(att, (list, tuple)) and att and all(isinstance(a, Attention) for a in att):
        return list(att)
    raise InvalidInputError(
        "give an Attention or a non-empty list of Attentions (from model.attention(text)); "
        f"got {type(att).__name__}"
    )


def head_position(
    layer: Any, head: Any, layers: Sequence[int], heads: Sequence[int], model: dict | None = None
) -> tuple[int, int]:
    """Positions ``(i, j)`` in a result's arrays of model layer ``layer``, head ``head``.

    ``layers``/``heads`` are the model indices the result holds; ``model`` its provenance's
    model description (its ``n_layers``/``n_heads`` resolve negative indices; default: the
    largest index held + 1).

    Raises
    ------
    OutOfRangeError
        An index out of the model's range, or a head that was not analysed.
    """
    info = model or {}
    li = resolve_index(layer, info.get("n_layers", max(layers) + 1), "layer")
    hi = resolve_index(head, info.get("n_heads", max(heads) + 1), "head")
    if li not in layers:
        raise OutOfRangeError(f"layer {layer} was not analysed; analysed layers: {list(layers)}")
    if hi not in heads:
        raise OutOfRangeError(f"head {head} was not analysed; analysed heads: {list(heads)}")
    return tuple(layers).index(li), tuple(heads).index(hi)
