"""Tolerances for numbers that come out of a float32 forward pass.

The derivation is in tests/README.md ("Tolerances for float32 forward passes"); this module
only evaluates it.  Use these whenever a test compares numbers derived from two *different*
forward-pass computations (a padded batch and a single text, a prefix run and a full run,
the CLI and the library, our pass and a direct transformers pass).  The same computation
saved and reloaded is compared exactly, and float64 numbers that attntopo computes from the
same input keep their strict tolerances.

Typical use::

    from _tolerances import for_model
    tol = for_model(minilm)
    np.testing.assert_allclose(batch.weights, single.weights, atol=tol.weights_atol, rtol=0)
    np.testing.assert_allclose(D_batch, D_single, atol=tol.distance_atol, rtol=0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: unit roundoff of float32 (round to nearest): |fl(x) - x| <= U |x| for normal x
U = 2.0**-24
#: smallest normal float32; below it relative error bounds fail (gradual underflow)
TINY = 2.0**-126
#: accuracy of one Jensen–Shannon distance that attntopo computes in float64 (the
#: distances module documents about 1e-11 in the worst case, just above its refinement cutoff)
JS_EVAL_ATOL = 1e-10


def logit_error(n_layers: int, width: int, head_dim: int) -> float:
    """Absolute error of one attention logit after a float32 forward pass (error model).

    ``n_layers · sqrt(width) · sqrt(head_dim) · U``: each layer's inner products (length at
    most ``width``) carry a relative error ``sqrt(width) · U`` (probabilistic rounding
    model), the layers' errors add up, and logits ``q·k / sqrt(head_dim)`` of vectors with
    entries of order 1 have the scale ``sqrt(head_dim)``.
    """
    return n_layers * math.sqrt(width) * math.sqrt(head_dim) * U


def softmax_rounding(n_tokens: int) -> float:
    """Relative error the float32 softmax adds itself: a sum of ``n`` terms, exp and division."""
    return (math.sqrt(n_tokens) + 4) * U


def js_distance_bound(eta: float, n: int, alpha: float = 0.0) -> float:
    """Largest base-2 Jensen–Shannon distance between two distributions on ``n`` points with
    ``|p_i - q_i| <= eta · max(p_i, q_i) + alpha`` for every ``i`` (proof in tests/README.md).

    ``sqrt(eta² (1 + n alpha / 2) / (2 - eta) + 1.5 n alpha)``, at most 1 (capped there).
    """
    if not 0 <= eta <= 1:
        raise ValueError(f"eta must be in [0, 1], got {eta}")
    js = eta**2 * (1 + n * alpha / 2) / (2 - eta) + 1.5 * n * alpha
    return min(1.0, math.sqrt(js))


def js_distance_bound_tv(atol: float, n: int) -> float:
    """Largest base-2 Jensen–Shannon distance between distributions on ``n`` points that differ
    by at most ``atol`` in every entry: ``d <= sqrt(TV) <= sqrt(n · atol / 2)`` (proven, but
    loose: it is what an absolute tolerance alone gives; see tests/README.md)."""
    return min(1.0, math.sqrt(n * atol / 2))


def distance_atol(weights_rtol: float, n: int, alpha: float = 4 * TINY) -> float:
    """Tolerance for JS distances (base 2, float64) computed from two sets of weights that
    agree within ``weights_rtol`` (relative) and ``alpha`` (absolute, underflow).

    ``|d(p, q) - d(p', q')| <= d(p, p') + d(q, q')`` (JS distance is a metric), each term
    bounded by :func:`js_distance_bound`, plus attntopo's own float64 evaluation of both.
    """
    return 2 * js_distance_bound(weights_rtol, n, alpha) + 2 * JS_EVAL_ATOL


def diagram_atol(dist_atol: float, max_value: float = 1.0) -> float:
    """Tolerance for the bottleneck distance between the Rips diagrams of two distance
    matrices that agree within ``dist_atol`` (stability: ``d_B <= ||D - D'||_inf``), plus
    the engines' float32 rounding of filtration values up to ``max_value`` on each side.

    It also bounds every birth, death, minimum-spanning-tree edge, single-linkage merge
    height and median of those (all 1-Lipschitz in ``||D - D'||_inf``) of matched points."""
    return dist_atol + 2 * U * max_value


@dataclass(frozen=True)
class ForwardTolerance:
    """Tolerances for one model (see :func:`forward_tolerance`)."""

    n_layers: int
    width: int
    head_dim: int
    n_tokens: int
    #: absolute error of one logit in one float32 pass
    logit_atol: float
    #: one pass against exact arithmetic: |w - w_exact| <= pass_rtol · w_exact + TINY
    pass_rtol: float
    #: one pass against exact arithmetic: |w - w_exact| <= pass_atol
    pass_atol: float
    #: two passes: |w - w'| <= weights_atol
    weights_atol: float
    #: two passes: |w - w'| <= weights_rtol · max(w, w') + 4 TINY
    weights_rtol: float
    #: two passes: JS distances (base 2) from the two sets of weights
    distance_atol: float
    #: two passes: bottleneck distance between their diagrams (and births/deaths, MST edges, scales)
    diagram_atol: float
    #: two passes: a bottleneck distance between two diagrams,
    #: computed on each side (triangle inequality)
    bottleneck_atol: float


def forward_tolerance(
    n_layers: int, width: int, head_dim: int, n_tokens: int = 512
) -> ForwardTolerance:
    """Tolerances for comparing two float32 forward passes of one model on the same input.

    Parameters
    ----------
    n_layers : int
        Transformer layers.
    width : int
        Longest inner product in a layer: ``max(hidden_size, intermediate_size)``.
    head_dim : int
        Size of one attention head's query/key vectors.
    n_tokens : int
        Longest input compared (the softmax sums this many terms).
    """
    dz = logit_error(n_layers, width, head_dim)
    s = softmax_rounding(n_tokens)
    # softmax: |p'_j / p_j - 1| <= exp(2 ||dz||_inf) - 1 and |p' - p| <= ||dz||_inf / 2
    rho = math.expm1(2 * dz) + s
    pass_atol = dz / 2 + s
    eta = 2 * rho / (1 - rho)
    dist = distance_atol(eta, n_tokens)
    dgm = diagram_atol(dist)
    return ForwardTolerance(
        n_layers=n_layers,
        width=width,
        head_dim=head_dim,
        n_tokens=n_tokens,
        logit_atol=dz,
        pass_rtol=rho,
        pass_atol=pass_atol,
        weights_atol=2 * pass_atol,
        weights_rtol=eta,
        distance_atol=dist,
        diagram_atol=dgm,
        bottleneck_atol=2 * dgm,
    )


def for_model(model, n_tokens: int | None = None) -> ForwardTolerance:
    """:func:`forward_tolerance` from a loaded attntopo model's configuration."""
    cfg = model.hf_model.config
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    width = max(cfg.hidden_size, getattr(cfg, "intermediate_size", 0) or 0)
    return forward_tolerance(
        model.n_layers, width, head_dim, n_tokens or min(model.max_length, 512)
    )


#: the packaged models (6 layers, 384/1536, 12 heads of 32; 30 layers, 576/1536, 9 heads of 64)
MINILM = forward_tolerance(6, 1536, 32)
SMOLLM2 = forward_tolerance(30, 1536, 64)
#: attention weights of two MiniLM passes (padded batch vs single text, AVX-512 vs SSE4.2 …)
ATTENTION_ATOL = MINILM.weights_atol


# ------------------------------------------------------------------ low-precision passes
#: base-2 JS distance between softmax(z) and softmax(z + δ) is at most range(δ) times this
#: (proof in tests/README.md, "Low-precision forward passes": JS ≤ J/4 ≤ range(δ)²/8 nats)
SOFTMAX_JS_LIPSCHITZ = 1 / math.sqrt(8 * math.log(2))
#: (unit roundoff, smallest subnormal) of the weights' dtypes
LOW_FORMATS = {
    "bfloat16": (2.0**-8, 2.0**-133),
    "float16": (2.0**-11, 2.0**-24),
    "float32": (U, 2.0**-149),
}


def low_precision_logit_range(z_low, mag_low, z_ref, dtype: str, head_dim: int, causal: bool):
    """Per row, the range of the logit perturbation that takes the float32 pass's attention row
    to the ``dtype`` pass's: ``range_j(z_low − z_ref) + 2 max_j ν_ij + 2 log((1+u)/(1−u)) +
    2 t32`` (see :func:`low_precision_row_distance_bound`, which this is the core of), in
    logit units.  Every weight of the low row is the float32 row's times ``exp(t_j)`` (up to a
    common factor) with ``range(t) <=`` this, for weights in the normal range of ``dtype``.
    Arrays as in :func:`low_precision_row_distance_bound`; returns shape (..., n)."""
    import numpy as np

    from attntopo.models import row_sum_tolerance

    u, _ = LOW_FORMATS[dtype]
    n = z_low.shape[-1]
    keep = np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)
    dz = z_low - z_ref
    gam = head_dim * U / (1 - head_dim * U)
    # the float32 pass rounds its logits too (2U|z| + γ mag): counted with the low pass's
    nu = (2 * u + u * u + 2 * U) * np.abs(z_low) + 2 * gam * (1 + u) ** 2 * mag_low
    spread = np.where(keep, dz, -np.inf).max(-1) - np.where(keep, dz, np.inf).min(-1)
    return (
        spread
        + 2 * np.where(keep, nu, 0.0).max(-1)
        + 2 * math.log((1 + u) / (1 - u))
        + 2 * row_sum_tolerance("float32", n)
    )


def low_precision_row_distance_bound(
    z_low, mag_low, z_ref, dtype: str, head_dim: int, causal: bool
):
    """Per row, a bound on the base-2 JS distance between the attention row of a pass in
    ``dtype`` and that of a float32 pass of the same model, from their captured logits.

    Parameters
    ----------
    z_low, z_ref : ndarray of shape (..., n, n)
        ``scaling · Q Kᵀ`` of the captured queries and keys of each pass, in float64.
    mag_low : ndarray of shape (..., n, n)
        ``scaling · |Q| |K|ᵀ`` of the low-precision pass.
    dtype : {"bfloat16", "float16"}
    head_dim : int
    causal : bool
        Only keys ``j <= i`` count in row ``i``.

    Returns
    -------
    ndarray of shape (..., n)
        ``L_sm · (range_j(z_low − z_ref) + 2 max_j ν_ij + 2 log((1+u)/(1−u)) + 2 t32) + sqrt(n s)``
        with ``L_sm = 1/sqrt(8 ln 2)`` (:data:`SOFTMAX_JS_LIPSCHITZ`), ``ν = (2u + u²)|z_low| +
        γ_d(2^-24)(1+u)² mag_low`` (the low pass rounds its logits), ``t32`` the float32 row-sum
        tolerance (the float32 softmax and renormalization of both passes), ``s`` the smallest
        subnormal of ``dtype`` (a float16 weight below 2^-14 is rounded absolutely).
    """
    _, sub = LOW_FORMATS[dtype]
    n = z_low.shape[-1]
    eff = low_precision_logit_range(z_low, mag_low, z_ref, dtype, head_dim, causal)
    return SOFTMAX_JS_LIPSCHITZ * eff + math.sqrt(n * sub)


def low_precision_subset_bounds(
    z_low, mag_low, z_ref, keep, dtype: str, head_dim: int, causal: bool
):
    """Bounds for the rows of tokens ``keep`` renormalized over ``keep`` (what the ``prompt``
    set and ``drop_special`` score: :func:`attntopo.attention.renormalized_subset`), between
    a ``dtype`` pass and a float32 pass, from the captured logits of all ``n`` tokens.

    Restricting a row to ``keep`` and dividing it by its kept sum is a softmax over the kept
    logits, so the logit-perturbation argument holds on the subset, with one more float32
    rounding of every weight in each pass (``2 log((1+U)/(1−U))`` more range).  A float16
    weight below ``2^-14`` is rounded absolutely (by at most ``s/2``); the renormalization
    divides that by the row's kept mass ``m``, so the ℓ1 error is at most ``m_s · s / m``
    (``m_s`` kept weights) and the JS distance at most ``sqrt(m_s s / m)``.  ``m`` is bounded
    below from the low pass's logits: its exact kept mass times ``exp(−(2 max ν + 2 log((1+u)/
    (1−u)) + 2 t32))`` (the relative roundings of its weights), less ``n s / 2``.

    Returns
    -------
    logit_range : ndarray of shape (..., m_s)
        Per kept row, the range ``R`` of the logit perturbation: each kept weight of the low row
        is the float32 row's times a factor in ``[exp(−R), exp(R)]`` (normal range of dtype).
    absolute : ndarray of shape (..., m_s)
        Per kept row, the most an entry moves besides that relative factor (``m_s s / m``).
    distance : ndarray of shape (..., m_s)
        Per kept row, a bound on the base-2 JS distance between the two renormalized rows.
    """
    import numpy as np

    u, sub = LOW_FORMATS[dtype]
    keep = np.asarray(keep)
    n, m_s = z_low.shape[-1], keep.size
    z_l, g_l, z_r = (a[..., keep, :][..., :, keep] for a in (z_low, mag_low, z_ref))
    R = low_precision_logit_range(z_l, g_l, z_r, dtype, head_dim, causal) + 2 * math.log(
        (1 + U) / (1 - U)
    )
    # the low pass's exact softmax over all keys, and the mass of the kept ones (causal: j <= i)
    allowed = np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)
    z = np.where(allowed, z_low, -np.inf)
    w = np.exp(z - z.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    mass = w[..., keep, :][..., :, keep].sum(-1)
    nu_full = low_precision_logit_range(z_low, mag_low, z_low, dtype, head_dim, causal)
    mass_lo = mass * np.exp(-nu_full[..., keep]) - n * sub / 2
    if not (mass_lo > 0).all():
        raise AssertionError("a kept row's mass is not bounded away from 0: no bound")
    absolute = m_s * sub / mass_lo
    return R, absolute, SOFTMAX_JS_LIPSCHITZ * R + np.sqrt(absolute)
