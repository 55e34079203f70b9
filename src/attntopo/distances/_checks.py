"""Argument checks and input handling of the distance functions: settings, the input as a
tensor, one validating pass over the values, rows made distributions in float64."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch

from .._validation import check_metric, check_number, check_positive_int
from ..errors import InvalidInputError, InvalidMatrixError

_DEFAULT_CHUNK_ELEMENTS = 1 << 26  # ≈ 0.5 GiB of float64 temporaries
_NEG_TOL = 1e-6  # entries down to -_NEG_TOL are round-off and clipped to 0
_SUM_TOL = 1e-3  # rows must sum to 1 within this tolerance
_RENORM_TOL = 1e-13  # rows summing to 1 within this are not rescaled


def _check_settings(
    metric: Any, base: Any, chunk_elements: Any, dtype: Any, n_jobs: Any, metrics: Any
) -> tuple[str, float, int, int | None]:
    """Checked ``(metric, base, budget, threads)`` of the public distance functions
    (``metrics``: the names allowed, :data:`~attntopo.distances.DISTANCES`)."""
    metric = check_metric(metric, metrics)
    base = _check_base(base)
    budget = check_positive_int(chunk_elements, "chunk_elements", _DEFAULT_CHUNK_ELEMENTS)
    if dtype not in (torch.float64, torch.float32):
        raise InvalidInputError(f"dtype must be torch.float64 or torch.float32; got {dtype!r}")
    threads = check_positive_int(n_jobs, "n_jobs", None)
    return metric, base, budget, threads


def _check_base(base: Any) -> float:
    return check_number(
        base,
        "base",
        lo=1.0,
        lo_open=True,
        hint="2 gives distances in [0, 1], math.e the natural log",
    )


def _as_tensor(att: Any) -> torch.Tensor:
    x = att.weights if hasattr(att, "weights") else att
    if isinstance(x, torch.Tensor):
        t = x.detach()
        if t.is_complex() or t.dtype == torch.bool:
            raise InvalidInputError(f"attention must hold real numbers; got torch dtype {t.dtype}")
        if not t.is_floating_point():
            t = t.to(torch.float64)
        return t
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as exc:
        detail = str(exc).replace("\n", " ")
        raise InvalidInputError(
            "attention must be an array of shape [..., n, n] "
            f"(ragged or non-numeric input): {detail}"
        ) from None
    if a.dtype.kind not in "fiu" or a.dtype == np.float16:
        if a.dtype == np.float16:
            a = a.astype(np.float32)
        else:
            raise InvalidInputError(f"attention must hold real numbers; got dtype {a.dtype}")
    if a.dtype.kind in "iu":
        a = a.astype(np.float64)
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    a = np.ascontiguousarray(a)
    with warnings.catch_warnings():  # read-only arrays are fine: the input is only read
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(a)


def _as_vector(v: Any, name: str) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=np.float64)
    except (ValueError, TypeError):
        raise InvalidInputError(f"{name} must be a 1-D array of real numbers") from None
    if a.ndim != 1 or a.size == 0:
        raise InvalidInputError(f"{name} must be a non-empty 1-D array; got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise InvalidMatrixError(
            f"{name} contains NaN or inf; only finite probabilities are allowed"
        )
    if np.min(a) < -_NEG_TOL:
        raise InvalidMatrixError(
            f"{name} has a negative entry ({np.min(a):.3g}); probabilities must be >= 0"
        )
    a = np.clip(a, 0.0, None)
    s = float(a.sum())
    if abs(s - 1.0) > _SUM_TOL:
        raise InvalidMatrixError(
            f"{name} sums to {s:.6g}, not 1 within {_SUM_TOL:g}; renormalize it (v / v.sum()) first"
        )
    return a / s if abs(s - 1.0) > _RENORM_TOL else a


def _validate(
    x3: torch.Tensor,
    lead: tuple[int, ...],
    paper_compat: str | None,
    budget: int,
    need_support: bool,
    noun: str = "attention",
) -> tuple[torch.Tensor | None, bool]:
    """Check values chunk by chunk; return the (m, k) union of row supports (JS only)
    and whether no entry is negative.  ``noun`` names the input in messages."""
    batch, n, k = x3.shape
    step = max(1, min(batch, budget // max(1, 2 * n * k)))
    support = torch.zeros((n, k), dtype=torch.bool, device=x3.device) if need_support else None
    nonneg = True
    for h0 in range(0, batch, step):
        c = x3[h0 : h0 + step]
        lo_t, hi_t = torch.aminmax(c)  # NaN propagates; one pass instead of isfinite + min
        lo, hi = float(lo_t), float(hi_t)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise InvalidMatrixError(f"{noun} contains NaN or inf; only finite values are allowed")
        if paper_compat:
            continue
        nonneg = nonneg and lo >= 0.0
        if lo < -_NEG_TOL:
            raise InvalidMatrixError(
                f"{noun} has a negative entry ({lo:.3g}); entries must be >= 0 "
                f"(down to -{_NEG_TOL:g} is clipped as round-off)"
            )
        sums = c.sum(-1, dtype=torch.float64)
        dev = (sums - 1.0).abs()
        worst = int(dev.argmax())
        if float(dev.reshape(-1)[worst]) > _SUM_TOL:
            s = float(sums.reshape(-1)[worst])
            matrix = tuple(int(i) for i in np.unravel_index(h0 + worst // n, lead)) if lead else ()
            where = f"matrix {matrix}, row {worst % n}" if lead else f"row {worst % n}"
            raise InvalidMatrixError(
                f"{noun} {where} sums to {s:.6g}, not 1 within {_SUM_TOL:g}; rows must be "
                f"probability distributions: renormalize them first (x / x.sum(-1, keepdims=True))"
            )
        if support is not None:
            if lo > 0.0:  # no zeros in this chunk: every key is in the support
                support.fill_(True)
            else:
                support |= (c > 0).any(0)
    if support is not None and paper_compat:
        support.fill_(True)  # softmax rows have no zeros
    return support, nonneg


def _prepare(xc: torch.Tensor, paper_compat: str | None, nonneg: bool = False) -> torch.Tensor:
    """Float64 copy of a chunk of matrices with rows that are distributions.

    ``nonneg``: the caller has checked that no entry is negative (the clamp is skipped).
    """
    P = xc.to(torch.float64, copy=True)
    if paper_compat:
        return torch.softmax(P, dim=-1)
    if not nonneg:
        P.clamp_(min=0.0)
    sums = P.sum(-1, keepdim=True)
    # rows already within round-off of 1 are used as given (dividing would perturb
    # near-identical rows by more than their difference); the others are rescaled
    off = (sums - 1.0).abs() > _RENORM_TOL
    if bool(off.any()):  # dividing by 1 changes nothing: skip the pass when no row is off
        P.div_(torch.where(off, sums, 1.0))
    return P
