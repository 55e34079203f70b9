"""The error model behind tests/_tolerances.py, checked on the packaged models: every float32
pass (single text and padded batch) of the texts the suite compares across computations lies
within the per-pass bounds of a float64 pass of the same weights (exact for this purpose).

This checks the model's assumptions about these weights (how errors grow through the layers,
the scale of the logits); the bounds themselves come from the analysis in tests/README.md,
not from these measurements."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from _tolerances import MINILM, SMOLLM2, TINY, for_model

pytestmark = [pytest.mark.slow, pytest.mark.forward_compare]

TEXTS = [
    "Quantum information theory allows us to study attention using entanglement",
    "Classical information theory studies entropy and coding of messages",
    "The old lighthouse keeper climbed the stairs, trimmed the wick, and watched the sea.",
    "In 1905, Einstein published four papers that changed physics forever!",
    "Short one.",
]


def _check_against_float64(model, texts):
    tol = for_model(model)
    ids = [model.tokenize(t).ids for t in texts]
    ref_model = copy.deepcopy(model.hf_model).double()
    batch = model.forward_ids(ids)
    worst_abs = worst_rel = 0.0
    for x, b in zip(ids, batch):
        with torch.inference_mode():
            out = ref_model(
                input_ids=torch.tensor([x]),
                attention_mask=torch.ones(1, len(x), dtype=torch.long),
                output_attentions=True,
            )
        exact = torch.stack(out.attentions, 1)[0].numpy()
        for w in (model.forward_ids([x])[0], b):
            err = np.abs(w.astype(np.float64) - exact)
            assert err.max() <= tol.pass_atol, (len(x), err.max(), tol.pass_atol)
            assert np.all(err <= tol.pass_rtol * exact + TINY), (len(x), tol.pass_rtol)
            big = exact > TINY
            worst_abs = max(worst_abs, err.max())
            worst_rel = max(worst_rel, float((err[big] / exact[big]).max()))
    return tol, worst_abs, worst_rel


def test_minilm_float32_within_the_model(minilm):
    tol, worst_abs, worst_rel = _check_against_float64(minilm, TEXTS)
    assert tol == MINILM
    # the bound is not vacuous: the errors are real float32 round-off (well above zero)
    assert worst_abs > 10 * 2.0**-24 and worst_rel > 0


@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_smollm2_float32_within_the_model(smollm2):
    tol, worst_abs, _ = _check_against_float64(
        smollm2, TEXTS[:3] + ["The capital of France is Paris."]
    )
    assert tol == SMOLLM2 and worst_abs > 10 * 2.0**-24
