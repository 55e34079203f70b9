"""What other subpackages build their results with: the declared interface of ``analyses``.

``compress``, ``hardmax``, ``theory`` and ``corpus`` make result kinds of their own (or read
head labels) with the same machinery as the analyses; they import it from here, never from the
private modules behind it (``tools/check_imports.py``, rule 3).  Everything here follows the
result protocol of design.md:

``Result``, ``Columns``     the base class of every result and its ``summary()`` table
``read_array``              a checked read of one stored array (kind, shape, finiteness)
``make_provenance``         the provenance record every result carries (model, settings, versions)
``package_versions``        the versions of attntopo and the libraries behind a number
``head_features``,          per-head attention statistics and the rule labelling a head's type
``label_heads``             (:func:`attntopo.head_types`), for diagnostics that label heads too
"""

from __future__ import annotations

from ._head_types import head_features, label_heads
from ._provenance import make_provenance, package_versions
from ._result import Columns, Result, read_array

__all__ = [
    "Result",
    "Columns",
    "read_array",
    "make_provenance",
    "package_versions",
    "head_features",
    "label_heads",
]
