"""The js_per_token set: the js quantities that grow with the text, divided by its token count
(the points of the JS space: every token, or the non-special ones with drop_special=True)."""

from __future__ import annotations

import numpy as np
import pytest

from _feature_refs import random_attention, synthetic_attention
from attntopo.features import DEFAULT_SCALES, features


@pytest.mark.parametrize("drop_special", [False, True])
def test_per_token_columns_are_the_js_totals_over_n(drop_special):
    rng = np.random.default_rng(1)
    atts = []
    for n in (5, 9, 14):
        W = random_attention(rng, 2, n, sharpness=3.0).reshape(1, 2, n, n)
        special = np.zeros(n, dtype=bool)
        special[[0, -1]] = True  # [CLS] ... [SEP]: left out with drop_special=True
        atts.append(synthetic_attention(W, special=special))
    table = features(atts, sets=("js", "js_per_token"), drop_special=drop_special, n_jobs=1)
    df = table.to_pandas()
    expected_q = ["h0.total_persistence", "h1.n_bars", "h1.total_persistence"] + [
        f"h1.betti_{e:g}" for e in DEFAULT_SCALES
    ]
    per_token = [c for c in table.columns if ".js_per_token." in c]
    assert per_token == [f"L0H{h}.js_per_token.{q}_per_token" for h in range(2) for q in expected_q]
    for t, n in enumerate((5, 9, 14)):
        real = n - 2 if drop_special else n
        for h in range(2):
            for q in expected_q:
                got = df[f"L0H{h}.js_per_token.{q}_per_token"].iloc[t]
                assert got == df[f"L0H{h}.js.{q}"].iloc[t] / real
    # the H0 bar count is the token count itself: every head, every text
    for h in range(2):
        np.testing.assert_array_equal(
            df[f"L0H{h}.js.h0.n_bars"].to_numpy(), [3, 7, 12] if drop_special else [5, 9, 14]
        )
