"""Options after the data are keyword-only in every public signature (docs/api.md, Names).

``at.persistence(D, maxdim=1)``, never ``at.persistence(D, 1)``: a call reads the same in every
notebook, and an option can be added, renamed or reordered without changing what an old call
means.  The rule the test holds: a parameter without a default is the call's data (the text,
the texts, the attention, the matrix, the two things compared, the path) and may be
positional; a parameter with a default is an option and comes after ``*``, unless
``POSITIONAL`` below names it.  Records (dataclasses, whose fields are what they hold) and
exceptions are not calls with options and are left out.
"""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from _public import public_callables, signature

#: Parameters with a default that may still be positional, and why: the whole exception list.
#: name -> (where, why); where "method": only in a method of a public class.
POSITIONAL = {
    "model": (
        "any",
        "the model the data goes through: analyze(text, 'minilm'); None loads "
        "the default model, so it has a default and is still data",
    ),
    "model_a": ("any", "the two models compared: compare_models(texts, 'minilm', 'smollm2')"),
    "model_b": ("any", "the two models compared: compare_models(texts, 'minilm', 'smollm2')"),
    "spec": ("any", "the model id, the data of load_model('minilm') and describe_model"),
    "y": ("any", "scikit-learn's protocol: Pipeline calls fit(X, y) positionally"),
    "input_features": (
        "method",
        "scikit-learn's protocol: Pipeline and FeatureUnion call "
        "get_feature_names_out(input_features) positionally",
    ),
    "layer": ("method", "one head's key in a result, like att[layer, head]: r.diagram(0, 3)"),
    "head": ("method", "one head's key in a result, like att[layer, head]: r.diagram(0, 3)"),
}


def _allowed(name: str, owner) -> bool:
    where = POSITIONAL.get(name, (None,))[0]
    return where == "any" or (where == "method" and owner is not None)


def _options_before_star():
    wrong = {}
    for qual, obj, owner in public_callables():
        if inspect.isclass(obj) and (
            dataclasses.is_dataclass(obj) or issubclass(obj, BaseException)
        ):
            continue
        sig = signature(obj)
        if sig is None:
            continue
        bad = [
            p.name
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is not p.empty
            and not _allowed(p.name, owner)
        ]
        if bad:
            wrong[qual] = bad
    return wrong


def test_options_after_the_data_are_keyword_only():
    wrong = _options_before_star()
    assert not wrong, "options that are not keyword-only (put them after *): " + "; ".join(
        f"{q}({', '.join(ps)})" for q, ps in sorted(wrong.items())
    )


def test_the_walk_sees_the_known_calls():
    """The walk reaches lazily loaded names, subpackages' names and methods (a walk that saw
    nothing would pass the test above)."""
    seen = {q for q, _, _ in public_callables()}
    for must in (
        "attntopo.token_distances",
        "attntopo.persistence",
        "attntopo.head_distances",
        "attntopo.complex_at",
        "attntopo.hardmax.simulate_text",
        "attntopo.features.features",
        "attntopo.plots.plot_diagram",
        "attntopo.Analysis.diagram",
        "attntopo.sklearn.AttentionFeatures.fit",
    ):
        assert must in seen, must


@pytest.mark.parametrize(
    "call, args, option",
    [
        ("token_distances", (np.full((1, 1, 3, 3), 1 / 3),), "jensen_shannon"),
        ("persistence", (np.zeros((2, 2)),), 1),
    ],
)
def test_an_option_given_by_position_is_a_type_error(call, args, option):
    import attntopo as at

    with pytest.raises(TypeError, match="positional argument"):
        getattr(at, call)(*args, option)
