"""The Attention container without a model: indexing, selection, renormalization."""

from __future__ import annotations

import numpy as np
import pytest

from attntopo import Attention
from attntopo.errors import InvalidInputError, OutOfRangeError


def make(n=5, L=2, H=3, causal=False, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(n), size=(L, H, n)).astype(np.float32)
    if causal:
        w = np.tril(w)
        w /= w.sum(-1, keepdims=True)
    special = np.zeros(n, bool)
    special[0] = special[-1] = True
    text = "a b c d e f g h"[: 2 * n]
    return Attention(
        weights=w,
        tokens=[f"t{i}" for i in range(n)],
        offsets=[(2 * i, 2 * i + 1) for i in range(n)],
        special=special,
        causal=causal,
        model="test",
        text=text,
    )


def test_indexing_and_select():
    a = make()
    assert a.shape == (2, 3, 5, 5) and len(a) == 5
    np.testing.assert_array_equal(a[1, 2], a.weights[1, 2])
    np.testing.assert_array_equal(a[-1, -1], a.weights[1, 2])
    s = a.select(layers=[1], heads=[0, 2])
    assert s.layer_ids == (1,) and s.head_ids == (0, 2)
    assert s.layers == s.layer_ids and s.heads == s.head_ids  # the names results use
    # one selection vocabulary: int, sequence, slice, None; negatives count from the end
    assert a.select(layers=-1, heads=slice(1, None)).layers == (1,)
    assert a.select(layers=-1, heads=slice(1, None)).heads == (1, 2)
    assert a.select(heads=np.array([-1, 0])).heads == (2, 0)
    assert a.select().layers == (0, 1) and a.layers == (0, 1) and a.heads == (0, 1, 2)
    np.testing.assert_array_equal(s.weights[0, 1], a.weights[1, 2])
    with pytest.raises(OutOfRangeError, match=r"valid are 0\.\.2"):
        a[0, 3]
    with pytest.raises(OutOfRangeError):
        a.select(layers=[2])
    with pytest.raises(InvalidInputError):
        a.select(heads=[0, 0])


def test_drop_special_and_prefix():
    a = make(causal=True)
    d = a.drop_special()
    assert d.n_tokens == 3 and d.special_dropped
    np.testing.assert_allclose(d.weights.sum(-1), 1, atol=1e-6)
    p = a.prefix(3)
    # causal: the prefix's rows are the top-left block unchanged
    np.testing.assert_allclose(p.weights, a.weights[:, :, :3, :3], atol=1e-6)
    with pytest.raises(OutOfRangeError):
        a.prefix(0)


def test_bad_shapes():
    with pytest.raises(InvalidInputError):
        Attention(np.zeros((2, 2, 3, 4)), ["a"] * 3, [(0, 0)] * 3, np.zeros(3, bool), False, "m")
    with pytest.raises(InvalidInputError):
        Attention(np.zeros((2, 2, 3, 3)), ["a"] * 2, [(0, 0)] * 3, np.zeros(3, bool), False, "m")


def test_equality():
    assert make() == make()
    assert make() != make(seed=1)


def test_default_model_is_a_packaged_alias():
    from attntopo.constants import DEFAULT_MODEL
    from attntopo.models import ALIASES
    from attntopo.models import DEFAULT_MODEL as models_default

    assert models_default == DEFAULT_MODEL and DEFAULT_MODEL in ALIASES
