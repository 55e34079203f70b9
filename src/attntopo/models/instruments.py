"""Forward-pass instruments: the declared interface of ``models`` for the theory diagnostics.

``attntopo.theory`` (depth, approx, context) needs more of a forward pass than attention: the
hidden states, the queries and keys, and passes with positions or the causal mask switched off.
It imports these instruments from here, never from the private modules behind them
(``tools/check_imports.py``, rule 3).

``forward_capture``        one forward pass keeping hidden states (and attention) per layer
``capture_qk``             the queries and keys of every head, checked against the model's attention
``one_blas_thread``        a block in which BLAS runs on one thread (reproducible float sums)
``transformer_layers``     the model's decoder/encoder layers, in order
``positional_mechanism``   how the model encodes positions (absolute, rotary, …)
``positions_off``,         context managers that switch positions / the causal mask off for the
``causal_mask_off``        positional and causal ablations of ``theory.context``
"""

from __future__ import annotations

from ._hidden import forward_capture
from ._positions import causal_mask_off, positional_mechanism, positions_off, transformer_layers
from ._qk import capture_qk, one_blas_thread

__all__ = [
    "forward_capture",
    "capture_qk",
    "one_blas_thread",
    "transformer_layers",
    "positional_mechanism",
    "positions_off",
    "causal_mask_off",
]
