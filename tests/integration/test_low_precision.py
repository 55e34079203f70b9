"""Low-precision models (bfloat16, float16) in every analysis: rows renormalized in float64
within the derived tolerance (tests/README.md, "Low-precision forward passes")."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attntopo as at
from attntopo.models import row_sum_tolerance

pytestmark = pytest.mark.slow

TEXT = "Quantum information theory allows us to study attention using entanglement"


@pytest.fixture(scope="module", params=["bfloat16", "float16"])
def low_minilm(request):
    return at.load_model("minilm", dtype=request.param)


def test_minilm_low_precision_rows_are_float32_distributions(low_minilm):
    att = low_minilm.attention(TEXT)
    n = len(att.tokens)
    assert att.weights.dtype == np.float32
    # renormalized in float64, rounded once to float32
    np.testing.assert_allclose(att.weights.astype(np.float64).sum(-1), 1.0, atol=(n + 1) * 2.0**-24)
    # the raw rows of the model in its dtype are what the tolerance was derived for
    hf = low_minilm.hf_model
    ids = torch.tensor([att.token_ids.tolist()])
    with torch.inference_mode():
        raw = torch.stack(hf(input_ids=ids, output_attentions=True).attentions, 1)[0]
    assert raw.dtype == getattr(torch, low_minilm.dtype)
    dev = float((raw.double().sum(-1) - 1).abs().max())
    assert dev <= row_sum_tolerance(low_minilm.dtype, n)
    expected = (raw.double() / raw.double().sum(-1, keepdim=True)).float().numpy()
    np.testing.assert_array_equal(att.weights, expected)
