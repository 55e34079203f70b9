"""Attention rows of a low-precision forward pass, made float32 distributions.

A softmax row of a ``bfloat16`` model sums to 1 only within about ``2^-8``: every weight is
rounded to 8 significant bits after the softmax.  :func:`normalize_rows` checks each row's
sum against :func:`row_sum_tolerance`, the most that the arithmetic of a softmax in that
dtype can explain, and divides it by its sum in float64, so every analysis receives rows
that are distributions to float32 precision, whatever the model's dtype.

The bound (the derivation is in tests/README.md, "Low-precision forward passes")
------------------------------------------------------------------------------------
Let ``u = eps/2`` be the unit roundoff of the weights' dtype (``2^-8`` bfloat16, ``2^-11``
float16, ``2^-24`` float32), ``u_a = min(u, 2^-24)`` that of the softmax's accumulation
(PyTorch's CPU and CUDA softmax kernels accumulate half and bfloat16 inputs in float32, and
the eager attention of Llama, Mistral, Qwen and Gemma calls ``softmax(..., dtype=float32)``
then casts), ``s`` the dtype's smallest subnormal and ``γ_k(v) = k v / (1 − k v)``.

1. The softmax computes ``ê_j ≈ exp(z_j − max z)``, then ``Ŝ = fl(Σ ê_j)``, then
   ``p̃_j = fl(ê_j / Ŝ)``.  Whatever the errors of the ``ê_j``, ``Σ ê_j / Ŝ = 1/(1 + θ)``
   with ``|θ| ≤ γ_{n−1}(u_a)`` (any summation order), and the divisions add ``u_a`` each:
   ``|Σ p̃_j − 1| ≤ γ_{n+1}(u_a)``.  Errors of the exponentials cancel in the row sum.
2. Rounding each ``p̃_j ≥ 0`` to the dtype: ``|p̂_j − p̃_j| ≤ u p̃_j`` for normal values and
   ``≤ s/2`` for subnormal ones, so ``|Σ p̂_j − Σ p̃_j| ≤ u Σ p̃_j + n s/2``.  The weights'
   relative errors add up *weighted by the weights*, which sum to 1: the rounding moves
   the sum by at most ``u``, not ``n·u``.
3. Our check sums in float64: ``γ_n(2^-53)``.

Together::

    |Σ_j p̂_j − 1| ≤ γ_{n+1}(u_a) + u (1 + γ_{n+1}(u_a)) + n s / 2 + γ_n(2^-53)

bfloat16 at ``n = 1024``: ``3.97e-3`` (``u = 3.91e-3`` dominates); float16: ``5.8e-4``;
float32: ``6.1e-5``.  A row off by more was not produced by a softmax accumulated in at
least float32 precision and is refused.  Zeros stay exactly zero (``0 / S = 0``): the masked
future of a causal model is preserved.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Any

import numpy as np

from .._threads import torch_threads
from ..errors import InvalidInputError, InvalidMatrixError

__all__ = ["normalize_rows", "row_sum_tolerance", "weights_dtype"]

#: unit roundoff of the softmax's accumulation: float32 at least (see the module notes)
_ACC_UNIT = 2.0**-24
#: unit roundoff of float64, for the check's own sum
_F64_UNIT = 2.0**-53
#: float64 temporaries per block of :func:`normalize_rows` (elements, 8 MiB)
_BLOCK_ELEMENTS = 1 << 20

_NAMES = {
    "float64": "float64",
    "double": "float64",
    "float32": "float32",
    "float": "float32",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
}


#: (unit roundoff u = 2^-p for p significand bits, smallest subnormal) of each format
_FORMATS = {
    "float64": (2.0**-53, 2.0**-1074),
    "float32": (2.0**-24, 2.0**-149),
    "float16": (2.0**-11, 2.0**-24),
    "bfloat16": (2.0**-8, 2.0**-133),
}


def weights_dtype(dtype: Any) -> str:
    """The name (``"float64"``, ``"float32"``, ``"float16"``, ``"bfloat16"``) of a floating
    dtype given as a name, a torch dtype or a NumPy dtype; torch is not imported."""
    if isinstance(dtype, str):
        key = dtype
    elif type(dtype).__name__ == "dtype" and type(dtype).__module__ == "torch":
        key = str(dtype).replace("torch.", "")
    else:
        try:
            key = (
                np.dtype(dtype).name
                if dtype is not None and not isinstance(dtype, (bool, int))
                else ""
            )
        except TypeError:
            key = ""
    name = _NAMES.get(key)
    if name is None:
        raise InvalidInputError(
            f"dtype must be 'float64', 'float32', 'float16' or 'bfloat16' (or a torch or NumPy "
            f"dtype); got {dtype!r}"
        )
    return name


def _gamma(k: int, unit: float) -> float:
    ku = k * unit
    return ku / (1.0 - ku) if ku < 1.0 else math.inf


def row_sum_tolerance(dtype: Any, n: int) -> float:
    """Largest ``|Σ_j w_j − 1|`` that rounding explains for one softmax row of ``n`` weights.

    ``γ_{n+1}(u_a) + u (1 + γ_{n+1}(u_a)) + n s / 2 + γ_n(2^-53)`` with ``u`` the unit
    roundoff of ``dtype``, ``u_a = min(u, 2^-24)`` that of the softmax's accumulation,
    ``s`` the smallest subnormal of ``dtype`` and ``γ_k(v) = k v / (1 − k v)`` (derivation in
    the module notes and tests/README.md).

    Parameters
    ----------
    dtype : torch.dtype or {"float64", "float32", "float16", "bfloat16"}
        The dtype the weights came out of the forward pass in.
    n : int >= 1
        Entries in the row (keys).

    Returns
    -------
    float
        The tolerance (bfloat16, n = 1024: 3.97e-3; float16: 5.8e-4; float32: 6.1e-5).
    """
    u, subnormal = _FORMATS[weights_dtype(dtype)]
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidInputError(f"n must be an int >= 1 (entries in a row); got {n!r}")
    n = int(n)
    acc = min(u, _ACC_UNIT)
    g = _gamma(n + 1, acc)
    return g + u * (1 + g) + n * subnormal / 2 + _gamma(n, _F64_UNIT)


def normalize_rows(w, *, dtype: Any = None, what: str = "attention", out: Any = None):
    """Rows of attention weights divided by their sums in float64, returned as float32.

    Parameters
    ----------
    w : torch.Tensor of shape (..., n, n)
        Attention weights as the forward pass returned them (any device, any float dtype);
        row ``i`` of each matrix is query ``i``'s softmax over the ``n`` keys.
    dtype : torch.dtype or str, optional
        The dtype the softmax's output was rounded to; ``w.dtype`` by default (give it when
        ``w`` was already cast up).  Sets the tolerance, :func:`row_sum_tolerance`.
    what : str
        How messages name the input.
    out : torch.Tensor of shape (..., n, n), float32, optional
        Where the result goes, on ``w``'s device; ``w`` itself when it is float32 (normalized
        in place: each block is read before it is written).  A new tensor by default.

    Returns
    -------
    torch.Tensor of shape (..., n, n), float32, on ``w``'s device (``out`` when given)
        ``w / w.sum(-1)`` computed in float64 then rounded once to float32: each row sums to
        1 within float32 rounding; zeros (a causal model's masked future) stay exactly 0.

    Raises
    ------
    InvalidMatrixError
        An entry is NaN, infinite or negative, or a row sums to 1 off by more than
        :func:`row_sum_tolerance` (``dtype``, n) allows: not a softmax row.
    InvalidInputError
        ``w`` is not a floating tensor of shape (..., n, n).
    """
    import torch

    if not isinstance(w, torch.Tensor) or not w.is_floating_point():
        raise InvalidInputError(f"{what} must be a floating torch tensor; got {type(w).__name__}")
    if w.ndim < 2 or w.shape[-1] != w.shape[-2]:
        raise InvalidInputError(f"{what} must have shape (..., n, n); got {tuple(w.shape)}")
    dt = weights_dtype(w.dtype if dtype is None else dtype)
    lead, n = tuple(w.shape[:-2]), int(w.shape[-1])
    if out is None:
        out = torch.empty(w.shape, dtype=torch.float32, device=w.device)
    elif (
        not isinstance(out, torch.Tensor)
        or out.shape != w.shape
        or out.dtype != torch.float32
        or out.device != w.device
    ):
        raise InvalidInputError(
            f"out must be a float32 tensor of shape {tuple(w.shape)} on {w.device}"
        )
    if n == 0 or w.numel() == 0:
        return out
    tol = row_sum_tolerance(dt, n)
    # MPS has no float64: the float64 arithmetic runs on the CPU there
    work_device = torch.device("cpu") if w.device.type == "mps" else w.device
    # a 3-D tensor is used as it is (a strided view of a padded batch stays a view)
    src = w.detach() if w.ndim == 3 else w.detach().reshape(-1, n, n)
    dst = out if out.ndim == 3 else out.view(-1, n, n)
    # on the CPU, one torch thread: each pass below reads a few MiB once, and with two threads
    # every pass ends at a barrier where the first thread waits for the second, which another
    # busy process may hold off its core for a whole time slice (measured under load: ~8 ms a
    # pass with two threads, 0.1-0.3 ms with one; the same numbers: rows are summed alone)
    with torch_threads(1) if work_device.type == "cpu" else nullcontext():
        _normalize_blocks(src, dst, n, lead, tol, dt, work_device, what)
    return out


def _normalize_blocks(
    src, dst, n: int, lead: tuple, tol: float, dt: str, work_device, what: str
) -> None:
    """:func:`normalize_rows`' loop over blocks of matrices (``src``, ``dst``: (B, n, n))."""
    import torch

    step = max(1, _BLOCK_ELEMENTS // (n * n))
    for b0 in range(0, src.shape[0], step):
        block = src[b0 : b0 + step].to(work_device, torch.float64, copy=True)
        lo, hi = torch.aminmax(block)
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise InvalidMatrixError(f"{what} contains NaN or inf; a softmax gives neither")
        if lo < 0.0:
            raise InvalidMatrixError(
                f"{what} has a negative weight ({lo:.3g}); a softmax gives none"
            )
        sums = block.sum(-1, keepdim=True)
        dev = (sums - 1.0).abs()
        worst = int(dev.argmax())
        if float(dev.reshape(-1)[worst]) > tol:
            flat = b0 * n + worst
            where = f"matrix {tuple(int(i) for i in _unravel(flat // n, lead))}, " if lead else ""
            raise InvalidMatrixError(
                f"{what}: {where}row {flat % n} sums to {float(sums.reshape(-1)[worst]):.6g}, "
                f"not 1 within {tol:.3g} (the most rounding of a {dt} "
                f"softmax over {n} keys explains): these are not softmax rows"
            )
        # in place: the float64 block is the only temporary of its size
        block.div_(sums)
        dst[b0 : b0 + step].copy_(block)
        del block


def _unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for size in reversed(shape):
        out.append(index % size)
        index //= size
    return tuple(reversed(out))
