"""``simulate``: run the hardmax dynamics and keep everything it did, as a result object."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from ..analyses.building import Columns, Result, make_provenance, read_array
from ..errors import ResultFormatError
from ..io import json_safe
from ._dynamics import (
    Tolerances,
    check_alpha,
    check_spd,
    check_steps,
    check_tokens,
    point_labels,
    run_dynamics,
    tolerances,
)
from ._polytope import PolytopePosition, polytope_position

__all__ = ["HardmaxSimulation", "simulate", "KIND"]

KIND = "hardmax_simulation"


@dataclass(eq=False)
class HardmaxSimulation(Result):
    """The hardmax dynamics run on ``n`` tokens in ``R^d`` for ``steps`` steps.

    Made by :func:`simulate` (or :func:`attntopo.hardmax.simulate_text` for a model's tokens).
    Step ``k`` is the configuration after ``k`` layers; step 0 is ``Z0``.

    Attributes
    ----------
    trajectories : ndarray of shape (steps + 1, n, d), float64
        Position of every token at every step.
    leaders : ndarray of shape (steps + 1, n), bool
        ``leaders[k, i]``: token ``i`` attends only to itself at step ``k`` (only to tokens at
        its own point; see :mod:`attntopo.hardmax` on floating point).
    A : ndarray of shape (d, d), float64
        The symmetric positive definite matrix of the attention scores ``⟨A z_i, z_j⟩``.
    alpha : float
        Step size ``α > 0``.
    rtol, cluster_tol : float
        The relative tie and coincidence tolerances of the run.
    tokens : list of str or None
        A label per token (a model's token labels), or None for plain arrays.
    source : dict
        How ``Z0`` and ``A`` were made (``{"kind": "array"}``, or the model, text, layer, head
        and the construction of ``A`` for :func:`simulate_text`).
    provenance : dict
        Versions and creation time (not compared by ``==``).
    """

    kind: ClassVar[str] = KIND

    trajectories: np.ndarray
    leaders: np.ndarray
    A: np.ndarray
    alpha: float
    rtol: float
    cluster_tol: float
    tokens: list[str] | None = None
    source: dict = field(default_factory=lambda: {"kind": "array"})
    provenance: dict = field(default_factory=dict)

    # ----------------------------------------------------------------- shape
    @property
    def steps(self) -> int:
        """Number of steps (layers) applied."""
        return int(self.trajectories.shape[0] - 1)

    @property
    def n_tokens(self) -> int:
        return int(self.trajectories.shape[1])

    @property
    def dim(self) -> int:
        """``d``, the dimension of the token space."""
        return int(self.trajectories.shape[2])

    @property
    def scale(self) -> float:
        """``R = max_i ‖z_i^0‖``, the unit of both tolerances."""
        return float(np.max(np.linalg.norm(self.trajectories[0], axis=1)))

    @property
    def same_point(self) -> float:
        """Distance at or below which two tokens are one point: ``cluster_tol · R``."""
        return self.cluster_tol * self.scale

    @property
    def final(self) -> np.ndarray:
        """Positions after the last step, ``(n, d)``."""
        return self.trajectories[-1]

    # ---------------------------------------------------------------- clusters
    @cached_property
    def cluster_labels(self) -> np.ndarray:
        """``(steps + 1, n)`` int: the cluster (point) of each token at each step.

        Clusters are the connected components of "closer than ``cluster_tol · R``", numbered
        by their first token.
        """
        return np.stack([point_labels(Z, self.same_point) for Z in self.trajectories])

    @property
    def labels(self) -> np.ndarray:
        """``(n,)`` int: the cluster each token ends in (at the last step)."""
        return self.cluster_labels[-1]

    @property
    def n_clusters(self) -> np.ndarray:
        """``(steps + 1,)`` int: the number of distinct points at each step."""
        return self.cluster_labels.max(axis=1) + 1

    @property
    def n_leaders(self) -> np.ndarray:
        """``(steps + 1,)`` int: the number of leader tokens at each step."""
        return self.leaders.sum(axis=1)

    @property
    def limit_points(self) -> np.ndarray:
        """``(m, d)``: the distinct points at the last step (mean of each cluster's tokens)."""
        lab = self.labels
        return np.stack([self.final[lab == c].mean(axis=0) for c in range(int(lab.max()) + 1)])

    @property
    def leader_indices(self) -> np.ndarray:
        """Indices of the leaders at the last step."""
        return np.flatnonzero(self.leaders[-1])

    @property
    def leader_points(self) -> np.ndarray:
        """``(l, d)``: the distinct positions of the last step's leaders."""
        idx = self.leader_indices
        if idx.size == 0:
            return np.zeros((0, self.dim))
        lab = self.labels[idx]
        return np.stack([self.final[idx[lab == c]].mean(axis=0) for c in np.unique(lab)])

    @property
    def movement(self) -> np.ndarray:
        """``(steps + 1,)``: the largest distance a token moved in each step (``nan`` at step 0)."""
        d = np.linalg.norm(np.diff(self.trajectories, axis=0), axis=2).max(axis=1)
        return np.concatenate([[np.nan], d])

    @property
    def converged(self) -> bool:
        """The last step moved no token farther than ``cluster_tol · R``."""
        if self.steps == 0:
            return False
        return bool(self.movement[-1] <= self.same_point)

    def clusters(self) -> list[dict]:
        """The final clusters: ``{"cluster", "point", "members", "leaders", "labels"}`` each."""
        out = []
        pts = self.limit_points
        lead = self.leaders[-1]
        for c in range(pts.shape[0]):
            members = np.flatnonzero(self.labels == c)
            out.append(
                {
                    "cluster": c,
                    "point": pts[c].tolist(),
                    "members": members.tolist(),
                    "leaders": members[lead[members]].tolist(),
                    "labels": None if self.tokens is None else [self.tokens[i] for i in members],
                }
            )
        return out

    def followed_leaders(self, *, step: int = -1) -> list[tuple[int, ...]]:
        """For each token, the leaders it is heading to at ``step``:
        those reachable in the attention graph.

        Edges go from ``i`` to every ``j ∈ C_i`` (recomputed from the positions at ``step`` with
        the run's tolerances); a leader reaches itself.  In general position a token reaches one
        leader — the one it converges to — long before it gets there, which is what a classifier
        with few layers needs: after ``K = 8`` steps the followers are close to their leaders but
        not yet at their points.
        """
        from ._dynamics import attention_sets, tolerances

        Z = self.trajectories[step]
        C = attention_sets(
            Z, self.A, tolerances(self.trajectories[0], self.A, self.rtol, self.cluster_tol)
        )
        reach = C.copy()
        for _ in range(max(1, int(np.ceil(np.log2(max(2, self.n_tokens)))))):
            reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
        lead = self.leaders[step]
        return [
            tuple(int(j) for j in np.flatnonzero(reach[i] & lead)) for i in range(self.n_tokens)
        ]

    def attention_clusters(self, *, step: int = -1) -> list[dict]:
        """Tokens grouped by the leaders they follow at ``step`` (:meth:`followed_leaders`).

        Returns ``[{"leaders": [...], "members": [...], "labels": [...] or None}, …]``, the
        largest group first; tokens that reach no leader form groups by what they reach (empty).
        """
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, key in enumerate(self.followed_leaders(step=step)):
            groups.setdefault(key, []).append(i)
        out = [
            {
                "leaders": list(k),
                "members": v,
                "labels": None if self.tokens is None else [self.tokens[i] for i in v],
            }
            for k, v in groups.items()
        ]
        return sorted(out, key=lambda g: (-len(g["members"]), g["members"][0]))

    def polytope(self) -> PolytopePosition:
        """Where the limit points lie relative to the polytope spanned by the last leaders.

        Returns
        -------
        PolytopePosition
            One entry per limit point (:attr:`limit_points`) relative to
            ``conv(leader_points)``; see :func:`attntopo.hardmax.polytope_position`.

        Raises
        ------
        InvalidInputError
            There is no leader at the last step (only possible when all tokens coincide).
        """
        from ..errors import InvalidInputError

        V = self.leader_points
        if V.shape[0] == 0:
            raise InvalidInputError(
                "there is no leader at the last step, so no polytope to compare with"
            )
        return polytope_position(self.limit_points, V, tol=max(self.cluster_tol, 1e-12))

    # ------------------------------------------------------------- topology
    def diagrams(self, *, maxdim: int = 0, engine: str | None = None) -> list:
        """The persistence diagram of the token cloud at each step (Euclidean distances).

        Parameters
        ----------
        maxdim : int, default 0
            Highest homology dimension (0: the clusters at every scale).
        engine : str, optional
            As in :func:`attntopo.persistence`.

        Returns
        -------
        list of Diagram
            ``steps + 1`` diagrams.  H0 deaths are the edge lengths of a minimum spanning tree
            of the tokens; bars of zero length (tokens at the same point) are dropped, so H0
            has as many bars as there are distinct points (one of them infinite).
        """
        from scipy.spatial.distance import pdist, squareform

        from ..topology import persistence

        return [
            persistence(squareform(pdist(Z)), maxdim=maxdim, engine=engine)
            for Z in self.trajectories
        ]

    # -------------------------------------------------------------- protocol
    def summary(self) -> Columns:
        """One row per step: ``step``, ``n_leaders``, ``n_clusters``, ``movement``, ``diameter``."""
        from scipy.spatial.distance import pdist

        diam = np.array(
            [float(pdist(Z).max()) if self.n_tokens > 1 else 0.0 for Z in self.trajectories]
        )
        return Columns(
            {
                "step": np.arange(self.steps + 1),
                "n_leaders": self.n_leaders,
                "n_clusters": self.n_clusters,
                "movement": self.movement,
                "diameter": diam,
            }
        )

    def token_table(self) -> Columns:
        """One row per token: ``token``, ``label``, ``cluster`` (final), ``leader`` (final),
        ``leader_at_start`` and ``first_leader_step`` (``-1``: never a leader)."""
        lead = self.leaders
        first = np.where(lead.any(axis=0), lead.argmax(axis=0), -1)
        labels = self.tokens if self.tokens is not None else [str(i) for i in range(self.n_tokens)]
        return Columns(
            {
                "token": np.arange(self.n_tokens),
                "label": np.asarray(labels, dtype=str),
                "cluster": self.labels,
                "leader": lead[-1],
                "leader_at_start": lead[0],
                "first_leader_step": first,
            }
        )

    def to_dict(self) -> dict:
        """Plain JSON-safe data: settings, per-step table,
        final clusters and leaders (no trajectories)."""
        eig = np.linalg.eigvalsh(self.A)
        return json_safe(
            {
                "kind": self.kind,
                "n_tokens": self.n_tokens,
                "dim": self.dim,
                "steps": self.steps,
                "alpha": self.alpha,
                "rtol": self.rtol,
                "cluster_tol": self.cluster_tol,
                "scale": self.scale,
                "A_eigenvalues": {"min": float(eig[0]), "max": float(eig[-1])},
                "converged": self.converged,
                "source": self.source,
                "tokens": self.tokens,
                "per_step": self.summary().rows(),
                "leaders": self.leader_indices.tolist(),
                "clusters": self.clusters(),
                "provenance": self.provenance,
            }
        )

    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {
            "alpha": self.alpha,
            "rtol": self.rtol,
            "cluster_tol": self.cluster_tol,
            "tokens": self.tokens,
            "source": self.source,
            "provenance": self.provenance,
        }
        return meta, {"trajectories": self.trajectories, "leaders": self.leaders, "A": self.A}

    @classmethod
    def _from_payload(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> "HardmaxSimulation":
        traj = read_array(arrays, "trajectories", kind="f", ndim=3, finite=True)
        T, n, d = traj.shape
        if T < 1 or n < 1 or d < 1:
            raise ResultFormatError(
                f"array 'trajectories' must have shape (steps + 1, n, d) >= 1, got {traj.shape}"
            )
        leaders = read_array(arrays, "leaders", kind="b", shape=(T, n))
        A = read_array(arrays, "A", kind="f", shape=(d, d), finite=True)
        tokens = meta.get("tokens")
        if tokens is not None and (
            not isinstance(tokens, list)
            or len(tokens) != n
            or not all(isinstance(t, str) for t in tokens)
        ):
            raise ResultFormatError(f"'tokens' must be null or a list of {n} strings")
        nums = {}
        for key in ("alpha", "rtol", "cluster_tol"):
            v = meta.get(key)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not np.isfinite(v)
                or v < 0
            ):
                raise ResultFormatError(f"{key!r} must be a finite number >= 0, got {v!r}")
            nums[key] = float(v)
        source = meta.get("source", {"kind": "array"})
        if not isinstance(source, dict):
            raise ResultFormatError("'source' must be an object")
        return cls(
            trajectories=traj,
            leaders=leaders,
            A=A,
            tokens=tokens,
            source=source,
            provenance=dict(meta.get("provenance") or {}),
            **nums,
        )

    def __repr__(self) -> str:
        return (
            f"HardmaxSimulation(n={self.n_tokens}, d={self.dim}, steps={self.steps}, "
            f"alpha={self.alpha:g}, leaders={int(self.n_leaders[-1])}, "
            f"clusters={int(self.n_clusters[-1])}, converged={self.converged})"
        )


# --------------------------------------------------------------------- simulate
def simulate(
    Z0: Any,
    *,
    A: Any = None,
    alpha: float = 1.0,
    steps: int = 50,
    rtol: float | None = None,
    cluster_tol: float | None = None,
    tokens: Sequence[str] | None = None,
    source: Mapping[str, Any] | None = None,
) -> HardmaxSimulation:
    """Run the hardmax attention dynamics on tokens ``Z0``.

    ``z_i ← z_i/(1+α) + α/(1+α) · mean_{j ∈ C_i} z_j`` with
    ``C_i = argmax_j ⟨A z_i, z_j⟩`` (ties averaged), ``steps`` times, all tokens at once.
    Ties within a relative tolerance count as ties, and a follower that has reached its
    leader's point is counted once, with the leader (:mod:`attntopo.hardmax._dynamics`), so a
    token exactly tied stays tied as in exact arithmetic.

    Parameters
    ----------
    Z0 : array-like of shape (n, d)
        Initial tokens, one per row (numpy arrays, nested lists, torch tensors).
    A : array-like of shape (d, d), optional
        Symmetric positive definite; default the identity.
    alpha : float, default 1.0
        Step size ``α > 0``.
    steps : int, default 50
        Layers to apply (>= 0).
    rtol : float, optional
        Relative tie tolerance (default ``max(1e-12, 4 d u)``); see :mod:`attntopo.hardmax`.
    cluster_tol : float, optional
        Tokens closer than ``cluster_tol · max_i ‖z_i^0‖`` are one point (default 1e-8).
    tokens : sequence of str, optional
        A label per token, kept in the result.
    source : mapping, optional
        How ``Z0`` and ``A`` were made, kept in the result (default ``{"kind": "array"}``).

    Returns
    -------
    HardmaxSimulation
        Trajectories ``(steps + 1, n, d)``, leaders ``(steps + 1, n)``, clusters and limit
        points.

    Raises
    ------
    InvalidMatrixError
        ``Z0`` not a finite ``(n, d)`` array; ``A`` not ``(d, d)`` (a dimension mismatch), not
        symmetric or not positive definite.
    InvalidInputError
        ``alpha <= 0`` (or not a finite number), ``steps`` not an int >= 0, bad tolerances,
        ``tokens`` of the wrong length.

    Examples
    --------
    >>> import numpy as np
    >>> r = simulate(np.random.default_rng(0).normal(size=(20, 2)), alpha=1.0, steps=60)
    >>> r.trajectories.shape, bool(r.converged)
    ((61, 20, 2), True)
    """
    from ..errors import InvalidInputError

    Z = check_tokens(Z0)
    n, d = Z.shape
    A_ = check_spd(A, d)
    a = check_alpha(alpha)
    k = check_steps(steps)
    tol: Tolerances = tolerances(Z, A_, rtol, cluster_tol)
    if tokens is not None:
        tokens = [str(t) for t in tokens]
        if len(tokens) != n:
            raise InvalidInputError(
                f"tokens must have one label per row of Z0 ({n}), got {len(tokens)}"
            )
    run = run_dynamics(Z, A_, a, k, tol)
    src = dict(source) if source is not None else {"kind": "array"}
    settings = {"alpha": a, "steps": k, "rtol": tol.rtol, "cluster_tol": tol.cluster_tol}
    result = HardmaxSimulation(
        trajectories=run.trajectories,
        leaders=run.leaders,
        A=A_,
        alpha=a,
        rtol=tol.rtol,
        cluster_tol=tol.cluster_tol,
        tokens=tokens,
        source=src,
        provenance=make_provenance(
            src.get("model_info") or {"name": src.get("model", "")}, settings=settings
        ),
    )
    result.__dict__["cluster_labels"] = run.labels  # the run computed them already
    return result
