"""One text through the whole pipeline (the old module path; the code is in :mod:`._analysis`).

``from attntopo.analyses.text import Analysis, analyze`` keeps working.
"""

from ..constants import SUMMARY_STATS
from ._analysis import Analysis, analyze
from ._provenance import package_versions

__all__ = ["Analysis", "analyze", "SUMMARY_STATS", "package_versions"]
