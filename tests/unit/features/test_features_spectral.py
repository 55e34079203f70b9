"""The spectral set (LapEigvals): the top-k eigenvalues of each head's in-degree Laplacian
L = D − A, against numpy.linalg.eigvals of the dense Laplacian built here by hand."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from _feature_refs import synthetic_attention
from attntopo.attention import Attention
from attntopo.features import SPECTRAL_K, features, spectral_features


def _laplacian_by_hand(A: np.ndarray, causal: bool) -> np.ndarray:
    n = A.shape[0]
    L = np.zeros((n, n))
    for i in range(n):
        attending = [u for u in range(n) if (u >= i or not causal)]  # rows that can see key i
        L[i, i] = sum(A[u, i] for u in attending) / len(attending)
    return L - A


def _matrix(seed: int, n: int, causal: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.gamma(0.3, size=(n, n)) + (rng.random((n, n)) < 0.2)
    if causal:
        A = np.tril(A)
        A[np.arange(n), np.arange(n)] += 1e-3
    return A / A.sum(axis=1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 24), st.booleans(), st.integers(0, 2**32 - 1))
def test_spectral_set_equals_numpy_eigvals_of_the_dense_laplacian(n, causal, seed):
    A = _matrix(seed, n, causal)
    lam = np.linalg.eigvals(_laplacian_by_hand(A, causal))
    want = np.zeros(SPECTRAL_K)
    top = np.sort(lam.real)[::-1][:SPECTRAL_K]
    want[: top.size] = top
    got = spectral_features(A[None], causal)[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    if causal:  # triangular: the eigenvalues are the diagonal d_ii - a_ii, all real
        assert np.abs(lam.imag).max() < 1e-9


def test_spectral_columns_from_features_on_a_causal_attention():
    n = 12
    W = np.stack([_matrix(s, n, True) for s in range(2)]).reshape(1, 2, n, n)
    att = synthetic_attention(W)
    att = Attention(
        weights=att.weights,
        tokens=att.tokens,
        offsets=att.offsets,
        special=att.special,
        causal=True,
        model="synthetic",
        text=att.text,
    )
    table = features([att], sets=("spectral",), n_jobs=1)
    assert list(table.columns[:2]) == ["L0H0.spectral.eig_1", "L0H0.spectral.eig_2"]
    assert table.shape == (1, 2 * SPECTRAL_K)
    for h in range(2):
        A = att.weights[0, h].astype(np.float64)
        diag = np.sort(np.diag(_laplacian_by_hand(A, True)))[::-1][:SPECTRAL_K]
        np.testing.assert_allclose(
            table.values[0, h * SPECTRAL_K : (h + 1) * SPECTRAL_K], diag, rtol=0, atol=1e-12
        )
