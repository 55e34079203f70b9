"""Two models' head spaces on the same texts, compared, with a bootstrap over the texts.

:func:`compare_models` → :class:`ModelComparison`: the two head-space diagrams compared per
homology dimension (bottleneck, Wasserstein), and a bootstrap over texts that says whether
the difference is more than text-sampling noise (see :func:`compare_models`).

With ``paper_compat="notebook"`` the head spaces are the founding paper's heads notebook's
(``topology_of_attention_heads``: heads summed over layers, natural-log JS summed over
tokens) and :attr:`ModelComparison.paper_bottleneck` is the notebook's one number: the
bottleneck distance between the two diagrams' finite bars, H0 and H1 pooled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Sequence

import numpy as np

from .._progress import ProgressOption, reports
from .._validation import (
    check_int,
    check_maxdim,
    check_nonneg_int,
    check_paper_compat,
    check_wasserstein_p,
)
from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError, ResultFormatError
from ..io import json_safe
from ..topology import Diagram, persistence_batch
from ..topology.diagram_distances import bottleneck, wasserstein
from ._head_space import _HEAD_PAPER_HINT, HEAD_PAPER_MODES, HeadSpace, head_space
from ._provenance import make_provenance, stored_paper_mode
from ._result import Columns, Result, nest, read_array, unnest

__all__ = ["ModelComparison", "compare_models", "DIAGRAM_DISTANCES"]

#: Diagram distances reported by :func:`compare_models`.
DIAGRAM_DISTANCES = ("bottleneck", "wasserstein")


@dataclass(eq=False)
class ModelComparison(Result):
    """Two models' head spaces on the same texts, compared (see :func:`compare_models`).

    Attributes
    ----------
    a, b : HeadSpace
        The two head spaces (normalized distances, mean over texts; with
        ``paper_compat="notebook"`` the heads notebook's spaces, see :func:`compare_models`).
    bottleneck, wasserstein : ndarray of shape (maxdim + 1,)
        Observed distances between the two head-space diagrams, per homology dimension
        (Wasserstein of order :attr:`p`; L∞ ground metric, as
        :func:`attntopo.topology.wasserstein`).
    p : float
        Wasserstein order.
    n_boot : int
        Bootstrap replicates (0: no test).
    seed : int or None
        Seed of the resampling.
    null : dict of str to ndarray of shape (2, n_boot, maxdim + 1)
        Within-model distances, per diagram distance: ``null[name][0]`` for model A,
        ``[1]`` for model B (between the diagrams of two independent bootstrap resamples of
        the texts).
    boot : dict of str to ndarray of shape (n_boot, maxdim + 1)
        Between-model distances on each replicate's first resample (same texts for both
        models): the bootstrap distribution of the observed statistic.
    paper_compat : False or "notebook"
        The founding-paper recipe of the head spaces (see :func:`compare_models`).
    paper_bottleneck : float or None
        With ``paper_compat="notebook"``: the heads notebook's model-vs-model number, the
        bottleneck distance between the two diagrams with infinite bars dropped and the
        dimensions 0..maxdim pooled into one diagram (``None`` otherwise).
    provenance : dict
    """

    a: HeadSpace
    b: HeadSpace
    bottleneck: np.ndarray
    wasserstein: np.ndarray
    p: float
    n_boot: int
    seed: int | None
    null: dict[str, np.ndarray]
    boot: dict[str, np.ndarray]
    paper_compat: str | bool = False
    paper_bottleneck: float | None = None
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = "head_space_comparison"

    @property
    def maxdim(self) -> int:
        return min(self.a.maxdim, self.b.maxdim)

    def observed(self, *, name: str = "wasserstein") -> np.ndarray:
        """Observed between-model distances, ndarray of shape (maxdim + 1,)."""
        if name not in DIAGRAM_DISTANCES:
            raise InvalidInputError(
                f"name must be one of {', '.join(DIAGRAM_DISTANCES)}, got {name!r}"
            )
        return self.bottleneck if name == "bottleneck" else self.wasserstein

    def _null(self, name: str) -> np.ndarray:
        self.observed(name=name)
        if self.n_boot == 0:
            raise InvalidInputError(
                "no bootstrap was run (n_boot=0): run compare_models with n_boot > 0"
            )
        return self.null[name].reshape(-1, self.maxdim + 1)  # pooled over both models

    def p_values(self, *, name: str = "wasserstein") -> np.ndarray:
        """Per dimension: ``(1 + #{null >= observed}) / (1 + #null)`` with the null pooled
        over both models' within-model bootstrap distances (ties within 1e-12 count)."""
        null = self._null(name)
        obs = self.observed(name=name)
        return (1.0 + (null >= obs[None, :] - 1e-12).sum(0)) / (1.0 + null.shape[0])

    def z_scores(self, *, name: str = "wasserstein") -> np.ndarray:
        """Per dimension: ``(observed − mean(null)) / std(null)``
        (``inf`` if the null is constant)."""
        null = self._null(name)
        obs = self.observed(name=name)
        mu, sd = null.mean(0), null.std(0, ddof=1) if null.shape[0] > 1 else np.zeros(null.shape[1])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (obs - mu) / sd
        return np.where(sd > 0, z, np.where(obs > mu, np.inf, 0.0))

    def interval(self, *, name: str = "wasserstein", level: float = 0.95) -> np.ndarray:
        """Percentile bootstrap interval of the between-model distance: (maxdim + 1, 2)."""
        self._null(name)
        if not 0 < level < 1:
            raise InvalidInputError(f"level must be in (0, 1), got {level!r}")
        q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
        return np.percentile(self.boot[name], q, axis=0).T

    def summary(self) -> Columns:
        """One row per homology dimension: the columns of :meth:`summary_rows` (``dim``, the
        observed distances and, with a bootstrap, the null, z-scores, p-values, intervals)."""
        rows = self.summary_rows()
        return Columns({k: np.array([r[k] for r in rows]) for k in rows[0]})

    def summary_rows(self) -> list[dict]:
        """One row per homology dimension: observed distances and, with a bootstrap, the
        within-model null (mean, std per model), z-score, p-value and 95% interval."""
        rows = []
        for d in range(self.maxdim + 1):
            r: dict[str, Any] = {"dim": d}
            for name in DIAGRAM_DISTANCES:
                r[name] = float(self.observed(name=name)[d])
                if self.n_boot:
                    nu = self.null[name]
                    r[f"{name}_null_mean_a"] = float(nu[0, :, d].mean())
                    r[f"{name}_null_mean_b"] = float(nu[1, :, d].mean())
                    r[f"{name}_null_std"] = (
                        float(nu[:, :, d].std(ddof=1)) if nu[:, :, d].size > 1 else 0.0
                    )
                    r[f"{name}_z"] = float(self.z_scores(name=name)[d])
                    r[f"{name}_p"] = float(self.p_values(name=name)[d])
                    lo, hi = self.interval(name=name)[d]
                    r[f"{name}_ci_low"], r[f"{name}_ci_high"] = float(lo), float(hi)
            rows.append(r)
        return rows

    def __repr__(self) -> str:
        return (
            f"ModelComparison({self.a.model!r} {self.a.n_points} heads vs {self.b.model!r} "
            f"{self.b.n_points} heads, texts={self.a.n_texts}, n_boot={self.n_boot}, "
            f"bottleneck={np.round(self.bottleneck, 4).tolist()}, "
            f"wasserstein={np.round(self.wasserstein, 4).tolist()})"
        )

    def to_dict(self) -> dict:
        """Plain JSON-safe data: the bootstrap settings and one row per dimension
        (:meth:`summary_rows`) — the ``comparison`` of ``attntopo heads --json``."""
        doc = {
            "n_boot": self.n_boot,
            "seed": self.seed,
            "wasserstein_p": self.p,
            "dims": self.summary_rows(),
        }
        if self.paper_compat:
            doc.update(paper_compat=self.paper_compat, paper_bottleneck=self.paper_bottleneck)
        return json_safe(doc)

    # --------------------------------------------------------------- storage
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta: dict = {}
        arrays: dict[str, np.ndarray] = {}
        nest(meta, arrays, "a", self.a)
        nest(meta, arrays, "b", self.b)
        arrays["bottleneck"] = self.bottleneck
        arrays["wasserstein"] = self.wasserstein
        for name in DIAGRAM_DISTANCES:
            arrays[f"null_{name}"] = self.null[name]
            arrays[f"boot_{name}"] = self.boot[name]
        meta.update(
            {
                "p": self.p,
                "n_boot": self.n_boot,
                "seed": self.seed,
                "paper_compat": self.paper_compat,
                "paper_bottleneck": self.paper_bottleneck,
                "provenance": self.provenance,
            }
        )
        return meta, arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: dict) -> "ModelComparison":
        a = unnest(meta, arrays, "a", HeadSpace)
        b = unnest(meta, arrays, "b", HeadSpace)
        if a is None or b is None:
            raise ResultFormatError("a model comparison must hold both head spaces")
        D = min(a.maxdim, b.maxdim) + 1
        n_boot = int(meta["n_boot"])
        return cls(
            a=a,
            b=b,
            bottleneck=read_array(
                arrays, "bottleneck", kind="f", shape=(D,), finite=True, nonneg=True
            ),
            wasserstein=read_array(
                arrays, "wasserstein", kind="f", shape=(D,), finite=True, nonneg=True
            ),
            p=float(meta["p"]),
            n_boot=n_boot,
            seed=None if meta.get("seed") is None else int(meta["seed"]),
            null={
                n: read_array(arrays, f"null_{n}", kind="f", shape=(2, n_boot, D), nonneg=True)
                for n in DIAGRAM_DISTANCES
            },
            boot={
                n: read_array(arrays, f"boot_{n}", kind="f", shape=(n_boot, D), nonneg=True)
                for n in DIAGRAM_DISTANCES
            },
            paper_compat=stored_paper_mode(meta.get("paper_compat", False)),
            paper_bottleneck=None
            if meta.get("paper_bottleneck") is None
            else float(meta["paper_bottleneck"]),
            provenance=dict(meta.get("provenance", {})),
        )


def _diagram_distances(
    x: Diagram, y: Diagram, maxdim: int, p: float
) -> tuple[np.ndarray, np.ndarray]:
    b = np.array([bottleneck(x, y, dim=d) for d in range(maxdim + 1)], dtype=np.float64)
    w = np.array([wasserstein(x, y, p=p, dim=d) for d in range(maxdim + 1)], dtype=np.float64)
    return b, w


def pooled_finite_bottleneck(x: Diagram, y: Diagram, maxdim: int) -> float:
    """The heads notebook's model-vs-model number: the bottleneck distance between two
    diagrams with their infinite bars dropped and dimensions ``0..maxdim`` pooled into one
    set of (birth, death) points (what its ``convert_diagram_to_numpy_array`` +
    ``gudhi.bottleneck_distance`` compute).  Pooling lets an H0 bar match an H1 bar."""
    px, py = (np.concatenate([z.finite(d) for d in range(maxdim + 1)]) for z in (x, y))
    return float(bottleneck(px, py))


def _checked_head_space(model: HeadSpace, name: str, paper: Any, maxdim: int) -> HeadSpace:
    """A head space given to :func:`compare_models`, checked: built as the comparison needs
    (the paper's mode, normalized, reduced by the mean) and up to ``maxdim``."""
    if paper:
        if model.paper_compat != paper or model.reduce != "mean":
            raise InvalidInputError(
                f"{name} must be a head space with paper_compat={paper!r} and reduce='mean' (got "
                f"paper_compat={model.paper_compat!r}, reduce={model.reduce!r})"
            )
    else:
        if model.paper_compat:
            raise InvalidInputError(
                f"{name} is the paper's head space (paper_compat={model.paper_compat!r}): pass "
                f"paper_compat={model.paper_compat!r} to compare_models"
            )
        if not model.normalize or model.reduce != "mean":
            raise InvalidInputError(
                f"{name} must be a head space with normalize=True and reduce='mean' (got "
                f"normalize={model.normalize}, reduce={model.reduce!r})"
            )
    if model.maxdim < maxdim:
        raise InvalidInputError(f"{name} has maxdim {model.maxdim} < {maxdim}")
    return model


def _bootstrap(
    a: HeadSpace,
    b: HeadSpace,
    n_boot: int,
    seed: int | None,
    maxdim: int,
    p: float,
    *,
    engine: str | None,
    n_jobs: int | None,
    progress: Any,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The bootstrap over texts (:func:`compare_models`): per diagram distance, the
    within-model null ``(2, n_boot, maxdim + 1)`` and the between-model replicates
    ``(n_boot, maxdim + 1)``."""
    T = a.n_texts
    null = {n: np.zeros((2, n_boot, maxdim + 1)) for n in DIAGRAM_DISTANCES}
    boot = {n: np.zeros((n_boot, maxdim + 1)) for n in DIAGRAM_DISTANCES}
    if n_boot:
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, T, size=(n_boot, 2, T))
        weights = np.stack([np.bincount(d, minlength=T) for d in draws.reshape(-1, T)]).reshape(
            n_boot, 2, T
        ) / float(T)
        mats = []
        for hs in (a, b):
            M = np.einsum("rst,tij->rsij", weights, hs.per_text)  # (n_boot, 2, N, N)
            M = (M + M.transpose(0, 1, 3, 2)) / 2.0
            idx = np.arange(M.shape[-1])
            M[..., idx, idx] = 0.0
            mats.append(M)
        flat = [m_ for M in mats for m_ in M.reshape(-1, *M.shape[2:])]
        dg = persistence_batch(flat, maxdim=maxdim, engine=engine, n_jobs=n_jobs, progress=progress)
        progress.stage("bootstrap distances")
        per = 2 * n_boot
        dA, dB = dg[:per], dg[per:]
        for r in range(n_boot):
            for s, dd in enumerate((dA, dB)):
                bb, ww = _diagram_distances(dd[2 * r], dd[2 * r + 1], maxdim, p)
                null["bottleneck"][s, r], null["wasserstein"][s, r] = bb, ww
            bb, ww = _diagram_distances(dA[2 * r], dB[2 * r], maxdim, p)
            boot["bottleneck"][r], boot["wasserstein"][r] = bb, ww
            progress.advance()
    return null, boot


@reports("compare models")  # progress arrives as an open Reporter
def compare_models(
    texts: str | Sequence[str] | None,
    model_a: Any = DEFAULT_MODEL,
    model_b: Any = "smollm2",
    *,
    maxdim: int = 1,
    n_boot: int = 100,
    seed: int | None = 0,
    p: float = 1.0,
    metric: str = "jensen_shannon",
    drop_special: bool = False,
    truncate: bool = False,
    engine: str | None = None,
    n_jobs: int | None = None,
    types: bool = True,
    paper_compat: Literal["notebook"] | bool | None = False,
    progress: ProgressOption = None,
) -> ModelComparison:
    """Compare two models' head spaces on the same texts.

    Both head spaces use normalized head distances (mean over tokens, then over texts), so
    that models with different tokenizers and numbers of heads are on one scale; their
    persistence diagrams are compared per homology dimension with the bottleneck and the
    Wasserstein (order ``p``) distances.

    **The bootstrap test.**  Let ``D_t`` be a model's head-distance matrix on text ``t``
    (``t = 1..T``) and ``D(S) = mean_{t in S} D_t`` for a multiset ``S`` of texts; the
    observed statistic is ``Δ = dist(dgm(D_A(all)), dgm(D_B(all)))``.  Each of the
    ``n_boot`` replicates draws two independent resamples ``I`` and ``J`` of ``T`` texts
    with replacement (``numpy.random.default_rng(seed)``, the same ``I, J`` for both
    models) and records, per dimension,

    * within model A: ``δ_A = dist(dgm(D_A(I)), dgm(D_A(J)))``, and the same for B
      (how far the diagram moves when only the choice of texts changes);
    * between models: ``dist(dgm(D_A(I)), dgm(D_B(I)))`` (the bootstrap distribution of
      ``Δ``, for a percentile interval).

    The null sample pools the ``2 · n_boot`` within-model distances; the p-value is
    ``(1 + #{δ >= Δ}) / (1 + 2 n_boot)`` and the z-score ``(Δ − mean δ) / std δ``.  A
    small p-value says the two models' head spaces differ by more than the variation that
    resampling the texts produces within one model.  It is a resampling heuristic, not an
    exact test: the null is only as rich as the ``T`` texts (use 10 or more; with ``T = 1``
    every resample is the same text and the null is 0), and it measures text-sampling
    noise, not the randomness of training.  Per-text matrices are computed once; each
    resample is a weighted sum of them, so a replicate costs four persistence diagrams
    (all computed in one parallel batch).

    Parameters
    ----------
    texts : str or list of str, or None
        The texts (run through both models).  ``None`` when both models are given as
        :class:`HeadSpace` objects.
    model_a, model_b : str, AttentionModel or HeadSpace
        Models (alias, hub id, folder, loaded model), or head spaces already built with
        :func:`head_space` (normalized, ``reduce="mean"``, on the same texts, with
        ``per_text`` kept).
    maxdim : {0, 1, 2}, default 1
    n_boot : int, default 100
        Bootstrap replicates (0: observed distances only).
    seed : int or None, default 0
        Seed of the resampling (``None``: fresh entropy).
    p : float, default 1.0
        Wasserstein order.
    metric, drop_special, truncate, engine, types
        As in :func:`head_space`.
    n_jobs : int, optional
        Worker processes for the bootstrap diagrams (default: all cores).
    paper_compat : {False, None, "notebook"}, default False
        ``"notebook"``: the founding paper's heads notebook (``topology_of_attention_heads``).
        Each model's head space is :func:`head_space` with ``paper_compat="notebook"``
        (raw rows, natural-log JS distance between heads of one layer summed over tokens,
        the layer matrices summed: one point per head index; several texts averaged), and
        :attr:`ModelComparison.paper_bottleneck` holds the notebook's number: the
        bottleneck distance between the two diagrams' finite bars, dimensions pooled
        (:func:`pooled_finite_bottleneck`; the notebook's diagrams hold H0 and H1, i.e.
        ``maxdim=1``).  The per-dimension distances and the bootstrap are attntopo's own,
        computed on those spaces.  Head spaces given directly must have been built with
        ``paper_compat="notebook"`` and ``reduce="mean"``.
    progress : bool, callable or None, default None
        One progress bar for the whole run: ``None`` a bar on a terminal or in a notebook,
        ``True``/``False``, or a callback ``callback(done, total, stage)`` (see
        :mod:`attntopo._progress`); each model's :func:`head_space` stages (``"loading
        model"``, ``"attention"``, ``"head distances"``, …, ``"head space"``), then
        ``"diagram distances"`` (one unit), and with ``n_boot``: ``"persistence"`` (four
        diagrams a replicate) and ``"bootstrap distances"`` (one unit a replicate).

    Returns
    -------
    ModelComparison
    """
    maxdim = check_maxdim(maxdim)
    n_boot = check_nonneg_int(n_boot, "n_boot", hint="0: no bootstrap")
    if seed is not None:
        seed = check_int(seed, "seed", lo=0, hint="or None for fresh entropy")
    p = check_wasserstein_p(p)
    paper = check_paper_compat(paper_compat, modes=HEAD_PAPER_MODES, hint=_HEAD_PAPER_HINT)

    def side(model: Any, name: str) -> HeadSpace:
        if isinstance(model, HeadSpace):
            return _checked_head_space(model, name, paper, maxdim)
        if texts is None:
            raise InvalidInputError(
                "texts are needed unless both models are given as HeadSpace objects"
            )
        return head_space(
            texts,
            model,
            normalize=paper is None,
            maxdim=maxdim,
            metric=metric,
            reduce="mean",
            drop_special=drop_special,
            truncate=truncate,
            engine=engine,
            types=types,
            paper_compat=paper,
            progress=progress,
        )

    a = side(model_a, "model_a")
    b = side(model_b, "model_b")
    if a.n_texts != b.n_texts or (a.texts and b.texts and a.texts != b.texts):
        raise InvalidInputError(
            "the two head spaces must be measured on the "
            f"same texts ({a.n_texts} vs {b.n_texts} texts)"
        )
    if n_boot and (a.per_text is None or b.per_text is None):
        raise InvalidInputError(
            "the bootstrap needs each text's matrix: build the head spaces with keep_per_text=True"
        )
    progress.add_total(
        1 + 5 * n_boot
    )  # the observed distances; per replicate 4 diagrams and 1 step
    progress.stage("diagram distances")
    bott, wass = _diagram_distances(a.diagram, b.diagram, maxdim, p)
    progress.advance()
    null, boot = _bootstrap(
        a, b, n_boot, seed, maxdim, p, engine=engine, n_jobs=n_jobs, progress=progress
    )
    prov = make_provenance(
        {
            "a": a.provenance.get("model", {"name": a.model}),
            "b": b.provenance.get("model", {"name": b.model}),
        },
        settings={
            "metric": a.metric,
            "engine": a.diagram.engine,
            "maxdim": maxdim,
            "p": p,
            "n_boot": n_boot,
            "seed": seed,
            "paper_compat": stored_paper_mode(paper),
        },
        test="bootstrap over texts: within-model null pooled over both models",
    )
    return ModelComparison(
        a=a,
        b=b,
        bottleneck=bott,
        wasserstein=wass,
        p=p,
        n_boot=n_boot,
        seed=seed,
        null=null,
        boot=boot,
        paper_compat=stored_paper_mode(paper),
        paper_bottleneck=pooled_finite_bottleneck(a.diagram, b.diagram, maxdim) if paper else None,
        provenance=prov,
    )
