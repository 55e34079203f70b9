"""torch's intra-op thread count for the length of a block: the one helper every layer uses.

torch has one process-wide thread count (``torch.set_num_threads``); attntopo changes it only
inside a ``with`` block and restores it at the block's end.  Two uses:

* ``torch_threads(n)``: exactly ``n`` threads (the distance kernels run one torch thread per
  Python worker thread; hardmax training runs on one thread);
* ``torch_threads(n, at_most=True)``: at most ``n`` (a forward pass beside busy persistence
  workers: never more threads than the cores they leave, never more than the caller set).

``n=None`` leaves the count alone.  torch is not imported here: when it is not loaded yet there
is nothing to change (``at_most``) or it is imported (exact ``n``).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

__all__ = ["torch_threads"]


@contextmanager
def torch_threads(n: int | None, *, at_most: bool = False) -> Iterator[None]:
    """Run torch's intra-op work on ``n`` threads (``at_most``: on at most ``n``) inside the
    block; the previous count is restored at its end, also after an error."""
    if n is None:
        yield
        return
    torch = sys.modules.get("torch")
    if torch is None:
        if at_most:
            yield
            return
        import torch
    old = torch.get_num_threads()
    change = old > n if at_most else old != n
    if change:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if change:
            torch.set_num_threads(old)
