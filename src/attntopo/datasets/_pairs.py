"""Minimal pairs of English sentences (acceptable / unacceptable), generated from templates.

BLiMP's method (Warstadt et al. 2020): each phenomenon is a template with slots, filled from
small hand-written vocabularies; the two sentences of a pair differ in one place that decides
acceptability.  The templates and word lists below were written for attntopo; no data set is
copied.  Phenomena:

``agreement_relative_clause``  the verb agrees with its subject across a relative clause
                               ("The pilot that the doctors admire smiles." / "… smile.")
``determiner_noun``            this/these and the noun's number ("… this chair." / "… this chairs.")
``anaphor``                    a reflexive agrees with its antecedent ("Mary hurt herself." /
                               "Mary hurt himself.")
``past_participle``            irregular participle after "had" ("… had broken …" / "… had broke …")
``transitivity``               a transitive verb takes an object, an intransitive one does not
                               ("… found the key." / "… arrived the key.")
``adjective_order``            an attributive adjective precedes the noun ("The old doctor …" /
                               "The doctor old …")
``npi_licensing``              "ever" needs a licensing negation ("No teacher has ever …" /
                               "The teacher has ever …")
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from .._validation import check_nonneg_int, check_positive_int
from ..errors import InvalidInputError
from ._files import read_columns
from ._types import TextDataset

__all__ = ["PHENOMENA", "MinimalPairs", "minimal_pairs"]

# ------------------------------------------------------------------ vocabularies
_PEOPLE = [
    ("author", "authors"),
    ("pilot", "pilots"),
    ("teacher", "teachers"),
    ("doctor", "doctors"),
    ("senator", "senators"),
    ("farmer", "farmers"),
    ("dancer", "dancers"),
    ("lawyer", "lawyers"),
    ("student", "students"),
    ("singer", "singers"),
    ("painter", "painters"),
    ("manager", "managers"),
    ("waiter", "waiters"),
    ("nurse", "nurses"),
    ("officer", "officers"),
    ("baker", "bakers"),
    ("minister", "ministers"),
    ("surgeon", "surgeons"),
    ("customer", "customers"),
    ("artist", "artists"),
]
_TRANSITIVE_PRESENT = [
    ("likes", "like"),
    ("admires", "admire"),
    ("hates", "hate"),
    ("knows", "know"),
    ("trusts", "trust"),
    ("helps", "help"),
    ("sees", "see"),
    ("meets", "meet"),
]
_INTRANSITIVE_PRESENT = [
    ("laughs", "laugh"),
    ("smiles", "smile"),
    ("sleeps", "sleep"),
    ("waits", "wait"),
    ("leaves", "leave"),
    ("swims", "swim"),
    ("complains", "complain"),
    ("travels", "travel"),
    ("sings", "sing"),
    ("works", "work"),
]
_THINGS = [
    ("book", "books"),
    ("chair", "chairs"),
    ("window", "windows"),
    ("car", "cars"),
    ("picture", "pictures"),
    ("song", "songs"),
    ("table", "tables"),
    ("letter", "letters"),
    ("house", "houses"),
    ("computer", "computers"),
    ("dress", "dresses"),
    ("glass", "glasses"),
    ("box", "boxes"),
    ("church", "churches"),
    ("knife", "knives"),
    ("shelf", "shelves"),
]
_SEEING_PAST = [
    "saw",
    "found",
    "liked",
    "bought",
    "cleaned",
    "sold",
    "noticed",
    "painted",
    "fixed",
    "opened",
]
_WOMEN = ["Mary", "Anna", "Sarah", "Laura", "Emma", "Lucy", "Rachel", "Helen", "Julia", "Carla"]
_MEN = ["John", "David", "Peter", "Tom", "James", "Mark", "Paul", "Daniel", "Steven", "Robert"]
_REFLEXIVE_PAST = [
    "hurt",
    "saw",
    "praised",
    "blamed",
    "described",
    "criticized",
    "helped",
    "admired",
    "introduced",
    "questioned",
]
# verb: (simple past, past participle, objects that fit)
_IRREGULAR = {
    "break": ("broke", "broken", ["window", "cup", "vase", "record"]),
    "write": ("wrote", "written", ["letter", "report", "poem", "speech"]),
    "eat": ("ate", "eaten", ["apple", "cake", "sandwich", "soup"]),
    "take": ("took", "taken", ["bus", "money", "photo", "train"]),
    "forget": ("forgot", "forgotten", ["password", "address", "umbrella", "answer"]),
    "hide": ("hid", "hidden", ["key", "money", "letter", "present"]),
    "drive": ("drove", "driven", ["truck", "car", "bus", "tractor"]),
    "choose": ("chose", "chosen", ["color", "winner", "hotel", "menu"]),
    "steal": ("stole", "stolen", ["bicycle", "painting", "money", "car"]),
    "see": ("saw", "seen", ["movie", "ocean", "accident", "play"]),
    "throw": ("threw", "thrown", ["ball", "stone", "bottle", "party"]),
    "draw": ("drew", "drawn", ["map", "picture", "line", "circle"]),
    "sing": ("sang", "sung", ["song", "anthem", "hymn", "ballad"]),
    "drink": ("drank", "drunk", ["coffee", "water", "milk", "tea"]),
    "wear": ("wore", "worn", ["coat", "hat", "uniform", "dress"]),
    "begin": ("began", "begun", ["lesson", "meeting", "project", "trip"]),
}
_TRANSITIVE_PAST = [
    "found",
    "visited",
    "cleaned",
    "described",
    "bought",
    "repaired",
    "opened",
    "carried",
    "noticed",
    "painted",
]
_INTRANSITIVE_PAST = [
    "arrived",
    "fell",
    "disappeared",
    "slept",
    "laughed",
    "smiled",
    "died",
    "vanished",
    "waited",
    "sneezed",
]
_OBJECTS = ["key", "house", "car", "box", "garden", "office", "bridge", "letter", "table", "door"]
_ADJECTIVES = [
    "old",
    "young",
    "tall",
    "quiet",
    "busy",
    "tired",
    "happy",
    "clever",
    "angry",
    "famous",
]
_PARTICIPLES = [
    ("visited", "museum"),
    ("seen", "ocean"),
    ("read", "report"),
    ("met", "mayor"),
    ("cleaned", "kitchen"),
    ("climbed", "mountain"),
    ("fixed", "roof"),
    ("painted", "fence"),
    ("opened", "safe"),
    ("written", "novel"),
]


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


# ------------------------------------------------------------------ phenomena
def _agreement() -> Iterator[tuple[str, str]]:
    for (s_sg, s_pl), (o_sg, o_pl), (t_sg, t_pl), (v_sg, v_pl) in itertools.product(
        _PEOPLE, _PEOPLE, _TRANSITIVE_PRESENT, _INTRANSITIVE_PRESENT
    ):
        if s_sg == o_sg:
            continue
        # singular subject, plural noun inside the clause, and the reverse
        yield (
            f"The {s_sg} that the {o_pl} {t_pl} {v_sg}.",
            f"The {s_sg} that the {o_pl} {t_pl} {v_pl}.",
        )
        yield (
            f"The {s_pl} that the {o_sg} {t_sg} {v_pl}.",
            f"The {s_pl} that the {o_sg} {t_sg} {v_sg}.",
        )


def _determiner() -> Iterator[tuple[str, str]]:
    for name, verb, (sg, pl) in itertools.product(_WOMEN + _MEN, _SEEING_PAST, _THINGS):
        yield (f"{name} {verb} this {sg}.", f"{name} {verb} this {pl}.")
        yield (f"{name} {verb} these {pl}.", f"{name} {verb} these {sg}.")


def _anaphor() -> Iterator[tuple[str, str]]:
    for verb in _REFLEXIVE_PAST:
        for name in _WOMEN:
            yield (f"{name} {verb} herself.", f"{name} {verb} himself.")
        for name in _MEN:
            yield (f"{name} {verb} himself.", f"{name} {verb} herself.")
        for _, pl in _PEOPLE:
            yield (f"The {pl} {verb} themselves.", f"The {pl} {verb} himself.")


def _participle() -> Iterator[tuple[str, str]]:
    for (sg, _), (past, part, objects) in itertools.product(_PEOPLE, _IRREGULAR.values()):
        for obj in objects:
            yield (f"The {sg} had {part} the {obj}.", f"The {sg} had {past} the {obj}.")


def _transitivity() -> Iterator[tuple[str, str]]:
    for (sg, _), good, bad, obj in itertools.product(
        _PEOPLE, _TRANSITIVE_PAST, _INTRANSITIVE_PAST, _OBJECTS
    ):
        yield (f"The {sg} {good} the {obj}.", f"The {sg} {bad} the {obj}.")


def _adjective_order() -> Iterator[tuple[str, str]]:
    for adj, (sg, _), verb, obj in itertools.product(
        _ADJECTIVES, _PEOPLE, _TRANSITIVE_PAST, _OBJECTS
    ):
        yield (f"The {adj} {sg} {verb} the {obj}.", f"The {sg} {adj} {verb} the {obj}.")


def _npi() -> Iterator[tuple[str, str]]:
    for (sg, _), (part, obj) in itertools.product(_PEOPLE, _PARTICIPLES):
        yield (f"No {sg} has ever {part} the {obj}.", f"The {sg} has ever {part} the {obj}.")
        yield (f"No {sg} has ever {part} this {obj}.", f"Every {sg} has ever {part} this {obj}.")


_GENERATORS: dict[str, Callable[[], Iterator[tuple[str, str]]]] = {
    "agreement_relative_clause": _agreement,
    "determiner_noun": _determiner,
    "anaphor": _anaphor,
    "past_participle": _participle,
    "transitivity": _transitivity,
    "adjective_order": _adjective_order,
    "npi_licensing": _npi,
}
#: The phenomena :func:`minimal_pairs` can generate.
PHENOMENA: tuple[str, ...] = tuple(_GENERATORS)


@dataclass(frozen=True)
class MinimalPairs:
    """Acceptable / unacceptable sentence pairs.

    Attributes
    ----------
    good, bad : list of str
        ``good[i]`` is acceptable, ``bad[i]`` its unacceptable twin.
    phenomenon : list of str
        The phenomenon of each pair.
    info : dict
        Settings (seed, counts).
    """

    good: list[str]
    bad: list[str]
    phenomenon: list[str]
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.good)

    def __iter__(self) -> Iterator[tuple[str, str, str]]:
        return iter(zip(self.good, self.bad, self.phenomenon))

    def as_texts(self) -> TextDataset:
        """Both sentences of every pair as labelled texts (1 acceptable, 0 not), pair = group."""
        n = len(self.good)
        return TextDataset(
            texts=list(self.good) + list(self.bad),
            labels=[1] * n + [0] * n,
            groups=list(range(n)) * 2,
            name="minimal_pairs",
            info=dict(self.info),
        )


def minimal_pairs(
    *,
    phenomena: Sequence[str] | None = None,
    n_per_phenomenon: int = 200,
    seed: int = 0,
    file: str | os.PathLike | None = None,
) -> MinimalPairs:
    """Minimal pairs from attntopo's templates (BLiMP's method), or from your own file.

    Parameters
    ----------
    phenomena : sequence of str, optional
        Which phenomena (:data:`PHENOMENA`); all by default (7 × 200 = 1,400 pairs).
    n_per_phenomenon : int
        Pairs per phenomenon, drawn without repetition from all fillings of its template.
    seed : int
        Seed of the draw (the same seed gives the same pairs).
    file : path, optional
        A CSV or JSONL file with columns ``good``, ``bad`` and ``phenomenon`` instead.

    Raises
    ------
    InvalidInputError
        Unknown phenomenon (the message lists them) or more pairs asked than a template gives.
    """
    if file is not None:
        rows = read_columns(file, ("good", "bad", "phenomenon"))
        for r in rows:
            for c in ("good", "bad"):
                if not isinstance(r[c], str) or not r[c].strip():
                    raise InvalidInputError(f"{file}: line {r['_line']}: the {c!r} value is empty")
        return MinimalPairs(
            [r["good"] for r in rows],
            [r["bad"] for r in rows],
            [str(r["phenomenon"]) for r in rows],
            {"path": str(file)},
        )
    if phenomena is None:
        chosen = list(PHENOMENA)
    else:
        chosen = [phenomena] if isinstance(phenomena, str) else list(phenomena)
        unknown = [p for p in chosen if p not in _GENERATORS]
        if unknown or not chosen:
            raise InvalidInputError(
                f"unknown phenomena {unknown or chosen}; available: {', '.join(PHENOMENA)}"
            )
    k = check_positive_int(n_per_phenomenon, "n_per_phenomenon", allow_none=False)
    rng = np.random.default_rng(check_nonneg_int(seed, "seed"))
    good: list[str] = []
    bad: list[str] = []
    labels: list[str] = []
    for name in chosen:
        pool = list(dict.fromkeys(_GENERATORS[name]()))  # distinct pairs, template order
        if k > len(pool):
            raise InvalidInputError(
                f"phenomenon {name!r} gives {len(pool)} distinct pairs, fewer than "
                f"n_per_phenomenon={k}"
            )
        for i in np.sort(rng.choice(len(pool), size=k, replace=False)):
            good.append(pool[i][0])
            bad.append(pool[i][1])
            labels.append(name)
    return MinimalPairs(
        good, bad, labels, {"phenomena": chosen, "n_per_phenomenon": k, "seed": seed}
    )
