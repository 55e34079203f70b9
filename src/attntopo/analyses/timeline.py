"""Topology in time (the old module path; the code is in :mod:`._timeline` and
:mod:`._timeline_result`).

Every name this module offered is still importable from it.
"""

from ._timeline import timeline
from ._timeline_result import Change, Slice, Timeline, Vine

__all__ = ["Timeline", "Slice", "Vine", "Change", "timeline"]
