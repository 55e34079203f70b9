"""The hallucination benchmark without a model: the fact base, the prompts, and the labels on
hand-written answers (and, as a property, on answers built from any prompt's own values)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.datasets import hallucination_qa
from attntopo.datasets._facts import (
    QUESTIONS,
    context_question,
    countries,
    find_value,
    label_answer,
)
from attntopo.datasets._hallucination import _batch_of
from attntopo.errors import InvalidInputError

pytest.importorskip("countryinfo")


def _label(answer, context, world=None, entity="France", question="capital"):
    return label_answer(
        answer,
        context_value=context,
        world_value=world or context,
        entity=entity,
        question=question,
    )


def test_the_fact_base_holds_real_countries():
    by_name = {c.name: c for c in countries()}
    assert len(by_name) > 200
    assert (by_name["France"].capital, by_name["France"].currency) == ("Paris", "EUR")
    assert by_name["Japan"].capital == "Tokyo" and by_name["Japan"].currency == "JPY"
    assert all(len(c.currency) == 3 and c.currency.isupper() for c in countries())


@pytest.mark.parametrize(
    "answer, context, world, entity, question, expected",
    [
        # the context's value, however it is written
        (
            "The capital of France is Paris.",
            "Paris",
            None,
            "France",
            "capital",
            ("faithful", "context"),
        ),
        ("paris", "Paris", None, "France", "capital", ("faithful", "context")),
        ("The answer is: Bogota.", "Bogotá", None, "Colombia", "capital", ("faithful", "context")),
        (
            "The currency code of Germany is EUR.",
            "EUR",
            None,
            "Germany",
            "currency",
            ("faithful", "context"),
        ),
        # counterfactual context: the world's value is a hallucination
        (
            "The capital of Romania is Bucharest.",
            "Basseterre",
            "Bucharest",
            "Romania",
            "capital",
            ("hallucinated", "world"),
        ),
        (
            "The capital of Slovakia is Bratislava.",
            "Nassau",
            "Bratislava",
            "Slovakia",
            "capital",
            ("hallucinated", "world"),
        ),
        # another value of the same kind, or none
        (
            "The answer is: Plymouth.",
            "Port Moresby",
            None,
            "Papua New Guinea",
            "capital",
            ("hallucinated", "other"),
        ),
        (
            "The currency code of Ukraine is EUR.",
            "UAH",
            None,
            "Ukraine",
            "currency",
            ("hallucinated", "other"),
        ),
        (
            "Saint Helena is a country in Sub-Saharan Africa.",
            "Jamestown",
            None,
            "Saint Helena",
            "capital",
            ("hallucinated", "none"),
        ),
        (
            "The currency code of Japan is YEN.",
            "JPY",
            None,
            "Japan",
            "currency",
            ("hallucinated", "none"),
        ),
        ("", "Paris", None, "France", "capital", ("hallucinated", "none")),
        # both the context's value and another: ambiguous
        (
            "Its capital is Paris, not Berlin.",
            "Paris",
            None,
            "France",
            "capital",
            ("ambiguous", "both"),
        ),
        (
            "The capital is Lyon in the context, Paris in the world.",
            "Lyon",
            "Paris",
            "France",
            "capital",
            ("ambiguous", "both"),
        ),
        # a currency code is matched case-sensitively: ALL is the lek, "all" is a word
        (
            "I do not know all of them.",
            "ALL",
            None,
            "Albania",
            "currency",
            ("hallucinated", "none"),
        ),
        (
            "The currency code of Albania is ALL.",
            "ALL",
            None,
            "Albania",
            "currency",
            ("faithful", "context"),
        ),
        # whole words only: Kingstown is not Kingston
        (
            "The capital is Kingstown.",
            "Kingston",
            None,
            "Jamaica",
            "capital",
            ("hallucinated", "other"),
        ),
        # the asked name is no answer, a value inside it neither (Bissau in Guinea-Bissau) ...
        (
            "The capital of Guinea-Bissau is Dakar.",
            "Bissau",
            None,
            "Guinea-Bissau",
            "capital",
            ("hallucinated", "other"),
        ),
        (
            "The capital of Guinea-Bissau is Bissau.",
            "Bissau",
            None,
            "Guinea-Bissau",
            "capital",
            ("faithful", "context"),
        ),
        # ... but a name inside the value is the value
        (
            "The capital of San Marino is City of San Marino.",
            "City of San Marino",
            None,
            "San Marino",
            "capital",
            ("faithful", "context"),
        ),
        (
            "The capital of Kuwait is Kuwait City.",
            "Kuwait City",
            None,
            "Kuwait",
            "capital",
            ("faithful", "context"),
        ),
        (
            "The capital of Kuwait is Kuwait.",
            "Kuwait City",
            None,
            "Kuwait",
            "capital",
            ("hallucinated", "none"),
        ),
        (
            "The capital of Mexico is Mexico City.",
            "Nouméa",
            "Mexico City",
            "Mexico",
            "capital",
            ("hallucinated", "world"),
        ),
        # a value inside a longer one is that one (Victoria, the Seychelles' capital)
        (
            "The capital of Hong Kong is City of Victoria.",
            "City of Victoria",
            None,
            "Hong Kong",
            "capital",
            ("faithful", "context"),
        ),
        (
            "The capital of Holy See (Vatican City State) is Vatican City State.",
            "Vatican City State",
            None,
            "Holy See (Vatican City State)",
            "capital",
            ("faithful", "context"),
        ),
        # the context's value is the asked name (a counterfactual context)
        (
            "The capital of Vatican City State is Vatican City State.",
            "Vatican City State",
            "Vatican City",
            "Vatican City State",
            "capital",
            ("faithful", "context"),
        ),
        (
            "The capital of Vatican City State is Vatican City.",
            "Vatican City State",
            "Vatican City",
            "Vatican City State",
            "capital",
            ("ambiguous", "both"),
        ),
        (
            "The capital of Holy See (Vatican City State) is Rome.",
            "Vatican City State",
            None,
            "Holy See (Vatican City State)",
            "capital",
            ("hallucinated", "other"),
        ),
    ],
)
def test_labels_of_hand_written_answers(answer, context, world, entity, question, expected):
    assert _label(answer, context, world, entity, question) == expected


def test_find_value_spans():
    assert find_value("Paris, paris and PARIS-Nord", "Paris", kind="capital") == [
        (0, 5),
        (6, 11),
        (16, 21),
    ]
    assert find_value("EUR or eur or EURO", "EUR", kind="currency") == [(0, 3)]


def test_a_bad_question_kind_is_one_line():
    with pytest.raises(
        InvalidInputError, match=r"question must be one of \['capital', 'currency'\]"
    ):
        _label("Paris", "Paris", question="language")


@settings(max_examples=40, deadline=None)
@given(
    index=st.integers(0, 10_000),
    seed=st.integers(0, 50),
    n_entities=st.integers(1, 30),
    counterfactual=st.booleans(),
    question=st.sampled_from(sorted(QUESTIONS)),
)
def test_prompts_state_the_context_value_and_their_answers_label_as_built(
    index, seed, n_entities, counterfactual, question
):
    q = context_question(
        index, seed=seed, n_entities=n_entities, counterfactual=counterfactual, question=question
    )
    assert len(q.entities) == n_entities == len(set(q.entities))
    assert q.entities[q.position] == q.entity
    text = q.messages[1]["content"]
    line = text.split("\n")[1 + q.position]
    assert line.startswith(f"{q.entity} is a country")
    word = "capital" if question == "capital" else "currency code"
    assert f"Its {word} is {q.context_value}." in line
    assert text.endswith(QUESTIONS[question].format(name=q.entity))
    assert (q.context_value != q.world_value) == counterfactual
    if counterfactual:  # a value no country of the context has
        others = [getattr(c, question) for c in countries() if c.name in q.entities]
        assert q.context_value not in others
    same = context_question(
        index, seed=seed, n_entities=n_entities, counterfactual=counterfactual, question=question
    )
    assert same == q  # fixed by (seed, index)

    def lab(answer):
        return label_answer(
            answer,
            context_value=q.context_value,
            world_value=q.world_value,
            entity=q.entity,
            question=question,
        )

    asked = QUESTIONS[question].format(name=q.entity).removeprefix("What is ").rstrip("?")
    assert lab(f"The {asked} is {q.context_value}.") == ("faithful", "context")
    if counterfactual:
        assert lab(f"The {asked} is {q.world_value}.") == ("hallucinated", "world")
        assert lab(f"{q.context_value} or {q.world_value}") == ("ambiguous", "both")
    assert lab(f"The {asked} is unknown.") == ("hallucinated", "none")


def test_batches_are_fixed_by_the_index():
    assert _batch_of(3, 6, 4) == [3, 9, 15, 21]
    assert _batch_of(21, 6, 4) == [3, 9, 15, 21]
    assert _batch_of(24, 6, 4) == [24, 30, 36, 42]
    assert _batch_of(5, 1, 1) == [5]
    seen = sorted(i for b in {tuple(_batch_of(i, 6, 4)) for i in range(48)} for i in b)
    assert seen == list(range(48))  # a partition


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"n": 0}, "n must be an int >= 1"),
        ({"counterfactual_share": 1.5}, "counterfactual_share must be in [0, 1], got 1.5"),
        ({"counterfactual_share": -0.1}, "counterfactual_share must be"),
        ({"lengths": ()}, "lengths must be a non-empty list of ints in [1, "),
        ({"lengths": (0, 4)}, "lengths must be a non-empty list of ints in [1, "),
        ({"lengths": (4, 10_000)}, "lengths must be a non-empty list of ints in [1, "),
        ({"questions": ("capital", "anthem")}, "questions must be a non-empty list of"),
        ({"max_new_tokens": 0}, "max_new_tokens must be an int >= 1"),
        ({"batch_size": 0}, "batch_size must be an int >= 1"),
        ({"generate": "yes"}, "generate must be"),
        ({"lengths": None}, "lengths must be a non-empty list of ints in [1, "),
        ({"questions": None}, "questions must be a non-empty list of"),
        ({"memory": 5}, "memory must be a folder (str or path) or a joblib.Memory, got int"),
    ],
)
def test_bad_settings_are_one_line_before_any_model(kwargs, words, tmp_path):
    with pytest.raises(InvalidInputError) as e:
        hallucination_qa(**{"n": 2, "memory": tmp_path, **kwargs})
    assert words in str(e.value) and "\n" not in str(e.value)


def test_nothing_cached_and_no_generation_is_one_line(tmp_path):
    with pytest.raises(InvalidInputError, match="no pair of these settings is cached yet"):
        hallucination_qa(n=2, memory=tmp_path, generate=False)


def _hand_made():
    from attntopo.datasets import HallucinationQA

    cols = {
        "entity": np.array(["France", "Peru", "France"], dtype=object),
        "n_entities": np.array([1, 4, 2]),
    }
    lp = [np.array([-0.1, -2.0]), np.array([-0.5]), np.array([-1.0, -1.0, -3.0])]
    return HallucinationQA(
        ["p0", "p1", "p2"],
        ["Paris", "Lima, Quito", "Lyon"],
        ["faithful", "ambiguous", "hallucinated"],
        cols,
        lp,
        [np.abs(v) for v in lp],
        {"model": "smollm2", "seed": 0},
    )


def test_the_container_selects_groups_and_reads_short():
    d = _hand_made()
    assert d.y.tolist() == [0, -1, 1] and d.groups.tolist() == [0, 1, 0]
    assert d.counts() == {"ambiguous": 1, "faithful": 1, "hallucinated": 1}
    b = d.binary()
    assert b.pairs() == [("p0", "Paris"), ("p2", "Lyon")] and b.y.tolist() == [0, 1]
    assert b.columns["n_entities"].tolist() == [1, 2] and len(b.token_logprobs[1]) == 3
    assert d.subset([2, 0]).answers == ["Lyon", "Paris"]
    assert repr(d) == (
        "HallucinationQA(3 pairs: ambiguous 1, faithful 1, hallucinated 1; smollm2, seed 0)"
    )
    df = d.to_pandas()
    assert list(df.columns[:3]) == ["prompt", "label", "answer"] and len(df) == 3


@pytest.mark.parametrize(
    "keep, words",
    [
        (np.ones(2, dtype=bool), "a mask of 2 values for 3 pairs"),
        ([0, 3], "indices in [-3, 3), got 3"),
        ([1.5], "integer indices or a boolean mask"),
        (["a"], "integer indices or a boolean mask"),
        ([[0, 1]], "integer indices or a boolean mask"),
    ],
)
def test_subset_of_bad_indices_is_one_line(keep, words):
    """They were numpy's IndexError, a list's, or (1.5) silently pair 1."""
    with pytest.raises(InvalidInputError) as e:
        _hand_made().subset(keep)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_end_of_turn_tokens():
    from types import SimpleNamespace

    from attntopo.datasets._hallucination import _end_of_turn

    chatml = SimpleNamespace(
        get_vocab=lambda: {"<|im_end|>": 2, "<|endoftext|>": 0},
        convert_tokens_to_ids=lambda t: 2,
        eos_token_id=0,
    )
    assert _end_of_turn(chatml, SimpleNamespace()) == [2]
    llama = SimpleNamespace(get_vocab=lambda: {"<|eot_id|>": 9}, eos_token_id=7)
    config = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[7, 9]))
    assert _end_of_turn(llama, config) == [7, 9]
    assert _end_of_turn(llama, SimpleNamespace()) == [7]
    bare = SimpleNamespace(get_vocab=dict, eos_token_id=None)
    with pytest.raises(InvalidInputError, match="the model names no end-of-turn token"):
        _end_of_turn(bare, SimpleNamespace())
