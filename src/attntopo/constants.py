"""Names shared by every stage, importable without torch (the CLI needs them at start-up)."""

__all__ = ["METRICS", "SUMMARY_STATS"]

#: Row distances accepted by ``metric=`` (see :mod:`attntopo.distances`).
METRICS: tuple[str, ...] = ("jensen_shannon", "hellinger", "fisher_rao", "total_variation")

#: Per-dimension statistics of a diagram in summary tables (see :meth:`Diagram.summary`).
SUMMARY_STATS: tuple[str, ...] = (
    "n_bars",
    "n_infinite",
    "total_persistence",
    "max_persistence",
    "persistence_entropy",
)
