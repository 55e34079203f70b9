"""Country facts from ``countryinfo``, context questions built from them, answers labelled.

The fact base is the JSON that the ``countryinfo`` package ships inside itself (one file per
country, read at run time, nothing downloaded).  Everything here is pure: no model, no cache.

A *context* is a list of short country descriptions (one per entity); the *question* asks one
fact (its capital or its currency) of one of them.  In a counterfactual context the asked fact
of the asked entity is replaced by another country's value, so the faithful answer is the
context's value and the world's value is a hallucination.

Labels (:func:`label_answer`) are computed from the answer's text, never guessed:

* ``faithful``: the context's value is in the answer and no other value of the same kind;
* ``hallucinated``: the context's value is not in the answer (another value of the same kind
  instead, the world's value in a counterfactual context, or no value at all);
* ``ambiguous``: the context's value and another value of the same kind are both there (a
  copied list, "X, not Y").
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError, MissingDependencyError

__all__ = [
    "QUESTIONS",
    "Country",
    "ContextQuestion",
    "countries",
    "context_question",
    "label_answer",
    "find_value",
]

#: The kinds of question: the fact asked, and its wording.
QUESTIONS = {
    "capital": "What is the capital of {name}?",
    "currency": "What is the currency code of {name}?",
}

_SYSTEM = (
    "Answer the question using only the facts given in the context, "
    "even where they differ from what you know."
)


@dataclass(frozen=True)
class Country:
    """One entity of the fact base."""

    name: str
    capital: str
    currency: str
    region: str
    demonym: str
    languages: tuple[str, ...]


@dataclass(frozen=True)
class ContextQuestion:
    """One prompt before the model sees it.

    Attributes
    ----------
    entities : tuple of str
        The countries described in the context, in order.
    entity : str
        The country asked about.
    position : int
        Its index in ``entities``.
    question : str
        The kind of question (a key of :data:`QUESTIONS`).
    counterfactual : bool
        Whether the context gives another country's value for the asked fact.
    context_value : str
        The asked fact as the context states it (the faithful answer).
    world_value : str
        The asked fact in the fact base.
    messages : tuple of dict
        The chat messages (system, user) that the model's chat template turns into the prompt.
    """

    entities: tuple[str, ...]
    entity: str
    position: int
    question: str
    counterfactual: bool
    context_value: str
    world_value: str
    messages: tuple[dict, ...]


def _data_folder() -> Path:
    spec = importlib.util.find_spec("countryinfo")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            "the hallucination benchmark needs the countryinfo package (its fact base): "
            "pip install 'attntopo[datasets]'"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _clean(value) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return " ".join(str(value or "").split())


@lru_cache(maxsize=1)
def countries() -> tuple[Country, ...]:
    """The countries of the fact base that have a name, a capital, a currency and a region,
    sorted by name (a capital or currency shared by several countries stays on each)."""
    out: dict[str, Country] = {}
    for path in sorted(_data_folder().glob("*.json")):
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        name, capital = _clean(row.get("name")), _clean(row.get("capital"))
        currency, region = _clean(row.get("currencies")), _clean(row.get("subregion"))
        if not (name and capital and currency and region) or _fold(capital) == _fold(name):
            continue  # a city-state's capital is its name: the question would answer itself
        if not re.fullmatch(r"[A-Z]{3}", currency):
            continue
        out[name] = Country(
            name,
            capital,
            currency,
            region,
            _clean(row.get("demonym")),
            tuple(row.get("languages") or ()),
        )
    return tuple(out[k] for k in sorted(out))


def fact_base_digest() -> str:
    """A hash of the facts used (part of the cache key: another countryinfo, another key)."""
    text = json.dumps([c.__dict__ for c in countries()], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(c: Country, capital: str, currency: str) -> str:
    """One entity's description in the context (about 30 tokens)."""
    people = f" Its demonym is {c.demonym}." if c.demonym else ""
    return (
        f"{c.name} is a country in {c.region}. Its capital is {capital}. "
        f"Its currency code is {currency}.{people}"
    )


def context_question(
    index: int, *, seed: int, n_entities: int, counterfactual: bool, question: str
) -> ContextQuestion:
    """The ``index``-th prompt of a benchmark: entities drawn by ``default_rng([seed, index])``,
    so a prompt depends on its index, never on how many others are asked for."""
    if question not in QUESTIONS:
        raise InvalidInputError(f"question must be one of {sorted(QUESTIONS)}, got {question!r}")
    pool = countries()
    if not 1 <= n_entities <= len(pool) - 1:
        raise InvalidInputError(f"n_entities must be in [1, {len(pool) - 1}], got {n_entities}")
    rng = np.random.default_rng([seed, index])
    picks = rng.choice(len(pool), size=n_entities, replace=False)
    position = int(rng.integers(n_entities))
    target = pool[int(picks[position])]
    world = getattr(target, question)
    value = world
    if counterfactual:
        # another country's value, none of the context's own values of this kind
        taken = {_fold(getattr(pool[int(p)], question)) for p in picks}
        others = sorted(
            {getattr(c, question) for c in pool if _fold(getattr(c, question)) not in taken}
        )
        value = others[int(rng.integers(len(others)))]
    lines = []
    for k, p in enumerate(picks):
        c = pool[int(p)]
        if k == position:
            cap = value if question == "capital" else c.capital
            cur = value if question == "currency" else c.currency
            lines.append(describe(c, cap, cur))
        else:
            lines.append(describe(c, c.capital, c.currency))
    user = (
        "Context:\n"
        + "\n".join(lines)
        + "\n\nQuestion: "
        + QUESTIONS[question].format(name=target.name)
    )
    messages = ({"role": "system", "content": _SYSTEM}, {"role": "user", "content": user})
    return ContextQuestion(
        tuple(pool[int(p)].name for p in picks),
        target.name,
        position,
        question,
        counterfactual,
        value,
        world,
        messages,
    )


def _fold(text: str) -> str:
    """Lower case, accents and punctuation away, one space between words."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    return " ".join(re.sub(r"[^\w]+", " ", text).split())


def find_value(answer: str, value: str, *, kind: str) -> list[tuple[int, int]]:
    """Where ``value`` occurs in ``answer`` as whole words: spans into :func:`_fold`'s text of
    the answer for capitals (case, accents and punctuation ignored); spans into the answer
    itself for currency codes (three capitals, matched case-sensitively, so the code ``ALL``
    is not the word "all")."""
    if kind == "currency":
        return [
            m.span() for m in re.finditer(rf"(?<![A-Za-z]){re.escape(value)}(?![A-Za-z])", answer)
        ]
    return _find(_fold(answer), value, question=kind)


def _find(text: str, value: str, *, question: str) -> list[tuple[int, int]]:
    """:func:`find_value` in a text already folded (capitals) and perhaps masked: spans into
    ``text`` itself (folding again would close the masked gaps and shift the spans)."""
    if question == "currency":
        return find_value(text, value, kind="currency")
    needle = _fold(value)
    if not needle:
        return []
    return [m.span() for m in re.finditer(rf"(?<!\w){re.escape(needle)}(?!\w)", text)]


def _inside(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return b[0] <= a[0] and a[1] <= b[1]


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    for a, b in spans:
        text = text[:a] + " " * (b - a) + text[b:]
    return text


def label_answer(
    answer: str, *, context_value: str, world_value: str, entity: str, question: str
) -> tuple[str, str]:
    """``(label, outcome)`` of one answer.

    ``label`` is ``"faithful"``, ``"hallucinated"`` or ``"ambiguous"`` (module docstring);
    ``outcome`` says what the answer holds: ``"context"`` (the context's value alone),
    ``"world"`` (the fact base's value where the context gave another), ``"other"`` (another
    value of the same kind), ``"none"`` (no value of that kind), ``"both"`` (the context's value
    and another: ambiguous).  The asked entity's own name is masked (Bissau inside
    Guinea-Bissau is no answer), except inside a longer value (Mexico inside Mexico City,
    San Marino inside City of San Marino); the context value's matches are masked before other
    values are looked for (Victoria inside City of Victoria).  Where the context's value is
    the asked name itself (a counterfactual context can give Vatican City State the capital
    "Vatican City State"), nothing is masked.
    """
    if question not in QUESTIONS:
        raise InvalidInputError(f"question must be one of {sorted(QUESTIONS)}, got {question!r}")
    text = answer if question == "currency" else _fold(answer)
    values = {getattr(c, question) for c in countries()} | {world_value, context_value}
    if question != "currency" and _fold(context_value) != _fold(entity):
        # the asked name is masked, so a value inside it goes too (Bissau in Guinea-Bissau);
        # a name inside a longer value is that value (Mexico in Mexico City)
        longer = [
            s
            for v in values
            if len(_fold(v)) > len(_fold(entity))
            for s in _find(text, v, question=question)
        ]
        text = _mask(
            text,
            [
                e
                for e in _find(text, entity, question=question)
                if not any(_inside(e, s) for s in longer)
            ],
        )
    hits = _find(text, context_value, question=question)
    rest = _mask(text, hits)
    others = sorted(
        v for v in values if _fold(v) != _fold(context_value) and _find(rest, v, question=question)
    )
    if hits:
        return ("ambiguous", "both") if others else ("faithful", "context")
    if world_value != context_value and _find(rest, world_value, question=question):
        return "hallucinated", "world"
    return "hallucinated", ("other" if others else "none")
