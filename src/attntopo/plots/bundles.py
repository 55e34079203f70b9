"""Figure bundles: the named figures of one result, drawn by one piece of code for every caller.

``attntopo analyze/compare/timeline/heads --plots`` write a bundle's files into the result
folder (in the same atomic step as the result: ``result.save(DIR, extra_files=bundle.files(…))``);
:func:`attntopo.report.report_html` lays out the same bundle's interactive figures.

>>> import attntopo as at
>>> from attntopo.plots import analysis_bundle
>>> a = at.analyze("Quantum information theory allows us to study attention")
>>> b = analysis_bundle(a, heads=[(1, 2)])
>>> sorted(b.figures())[:3]                      # matplotlib figures, by file stem
['L01_H02_attention', 'L01_H02_barcode', 'L01_H02_diagram']
>>> files = b.files(formats=["png", "html"])             # {"figures/L01_H02_diagram.png": bytes, …,
...                                              #  "figures/report.html": bytes}
>>> a.save("quantum", extra_files=files)         # doctest: +SKIP

Names are file stems: a head's figures start with :func:`head_tag` (``L01_H02_…``).  Static
figures are matplotlib, interactive ones plotly; each bundle draws only what is asked for.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Sequence

from ..errors import InvalidInputError
from ._style import metric_name
from .export import FORMATS, figure_to_bytes, figures_to_html

__all__ = [
    "Bundle",
    "analysis_bundle",
    "comparison_bundle",
    "timeline_bundle",
    "head_space_bundle",
    "head_tag",
]

Figures = dict  # file stem -> matplotlib or plotly figure, in drawing order


def head_tag(layer: int, head: int) -> str:
    """The file-name prefix of one head's figures: ``L01_H02`` (0-based model indices)."""
    return f"L{int(layer):02d}_H{int(head):02d}"


class Bundle:
    """The figures of one result, drawn on demand and named like the files they become.

    Parameters
    ----------
    draw : callable
        ``draw(interactive: bool) -> dict[str, Figure]``: matplotlib figures (``False``) or
        plotly figures (``True``) by file stem.
    page : str, optional
        With a page name (``"report.html"``) the interactive figures go into one HTML page;
        without, each becomes its own ``STEM.html``.
    title : str
        Title of that page.
    heads : list of (layer, head)
        The heads drawn in full (their figures' names start with :func:`head_tag`).
    """

    def __init__(
        self,
        draw: Callable[[bool], Figures],
        *,
        page: str | None = None,
        title: str = "attntopo figures",
        heads: Sequence[tuple[int, int]] = (),
    ) -> None:
        self._draw = draw
        self.page = page
        self.title = title
        self.heads = list(heads)

    def figures(self, *, interactive: bool = False) -> Figures:
        """``{file stem: figure}``: matplotlib figures, or plotly figures with ``interactive``."""
        return self._draw(bool(interactive))

    def files(
        self, *, formats: Iterable[str] = ("png",), folder: str = "figures"
    ) -> dict[str, bytes]:
        """Every figure rendered to the bytes of its file, ``{"figures/STEM.png": bytes, …}``.

        Parameters
        ----------
        formats : iterable of str
            Any of ``png``, ``svg``, ``pdf`` (each static figure in each) and ``html``
            (the interactive figures: one page, or one file each).
        folder : str
            Folder of the files inside the result folder (``""``: none).

        Returns
        -------
        dict of str to bytes
            Ready for ``result.save(DIR, extra_files=…)``, which writes them atomically with
            the result, or for :func:`attntopo.io.atomic_write_bytes`.
        """
        fmts = list(dict.fromkeys(str(f).lower().lstrip(".") for f in formats))
        bad = [f for f in fmts if f not in FORMATS]
        if bad:
            raise InvalidInputError(
                f"unknown figure format {bad[0]!r}; allowed: {', '.join(FORMATS)}"
            )
        prefix = f"{folder.rstrip('/')}/" if folder else ""
        out: dict[str, bytes] = {}
        static = [f for f in fmts if f != "html"]
        if static:
            for name, fig in self.figures().items():
                for fmt in static:
                    out[f"{prefix}{name}.{fmt}"] = figure_to_bytes(fig, fmt)
        if "html" in fmts:
            figs = self.figures(interactive=True)
            if self.page is not None:
                if figs:
                    out[prefix + self.page] = figures_to_html(list(figs.values()), title=self.title)
            else:
                for name, fig in figs.items():
                    out[f"{prefix}{name}.html"] = figure_to_bytes(fig, "html")
        return out


# ---------------------------------------------------------------------- analysis
def _default_stat(analysis: Any) -> str:
    return f"max_persistence_h{analysis.ranking_dim}"  # H0 when most heads have no H1 bar


def _analysis_heads(
    analysis: Any, heads: Sequence[tuple[int, int]] | None, n: int
) -> list[tuple[int, int]]:
    if heads is None:
        from .._html import default_heads

        return default_heads(analysis, n=n)
    out = []
    for pair in heads:
        try:
            layer, head = pair
        except (TypeError, ValueError):
            raise InvalidInputError(f"heads must be (layer, head) pairs, got {pair!r}") from None
        i, j = analysis.position(layer, head)
        out.append((analysis.layers[i], analysis.heads[j]))
    return list(dict.fromkeys(out))


def analysis_bundle(
    analysis: Any,
    *,
    heads: Sequence[tuple[int, int]] | None = None,
    n_heads: int = 3,
    stat: str | None = None,
) -> Bundle:
    """The figures of an :class:`~attntopo.Analysis`.

    Parameters
    ----------
    analysis : Analysis
    heads : list of (layer, head), optional
        Heads drawn in full (0-based, negatives count from the end); default: the ``n_heads``
        most persistent (:func:`attntopo.report.default_heads`: largest finite H1 bar).
    n_heads : int
        How many heads by default.
    stat : str, optional
        Summary column of the per-head figure (default ``max_persistence_h1``).

    Returns
    -------
    Bundle
        Static: ``head_grid`` and ``heads_{stat}`` (with more than one head), and per head
        ``{tag}_diagram``, ``_barcode``, ``_distances``, ``_attention``, ``_graph`` (threshold
        graph at the suggested scale) and ``_overview``.  Interactive (page ``report.html``):
        ``head_grid`` and per head ``{tag}_diagram``, ``_distances``, ``_graph`` (slider over ε,
        opening at the suggested scale, as the static ``_graph``).
    """
    chosen = _analysis_heads(analysis, heads, n_heads)
    stat = stat or _default_stat(analysis)
    a = analysis.attention

    def draw(interactive: bool) -> Figures:
        from . import interactive as PI
        from . import static as PS
        from ._layout import suggest_scale

        labels, special = a.labels, a.special
        dist = f"{metric_name(analysis.metric)} distance"
        figs: Figures = {}
        if len(analysis.layers) * len(analysis.heads) > 1:
            if interactive:
                figs["head_grid"] = PI.iplot_head_grid(analysis, stat=stat)
            else:
                figs["head_grid"] = PS.plot_head_grid(analysis)
                figs[f"heads_{stat}"] = PS.plot_head_stat(analysis, stat=stat)
        for layer, head in chosen:
            tag, t = head_tag(layer, head), f"layer {layer}, head {head}"
            dgm, D = analysis.diagram(layer, head), analysis.distance_matrix(layer, head)
            scale = suggest_scale(dgm, D)
            if interactive:
                figs[f"{tag}_diagram"] = PI.iplot_diagram(dgm, title=f"persistence diagram · {t}")
                figs[f"{tag}_distances"] = PI.iplot_distance_matrix(
                    D, labels=labels, title=f"{dist} · {t}"
                )
                figs[f"{tag}_graph"] = PI.iplot_threshold_graph(
                    D, labels=labels, special=special, title=t, scale=scale
                )
                continue
            i, j = analysis.position(layer, head)
            figs[f"{tag}_diagram"] = PS.plot_diagram(dgm, title=f"persistence diagram · {t}")
            figs[f"{tag}_barcode"] = PS.plot_barcode(dgm, title=f"barcode · {t}")
            figs[f"{tag}_distances"] = PS.plot_distance_matrix(
                D, labels=labels, title=f"{dist} · {t}"
            )
            figs[f"{tag}_attention"] = PS.plot_attention(
                a.weights[i, j], labels=labels, title=f"attention · {t}"
            )
            figs[f"{tag}_graph"] = PS.plot_threshold_graph(D, scale, labels=labels, special=special)
            figs[f"{tag}_overview"] = PS.plot_head_overview(analysis, layer, head, scale=scale)
        return figs

    return Bundle(
        draw,
        page="report.html",
        heads=chosen,
        title=f"attntopo · {a.model} · {a.n_tokens} tokens · "
        f"{metric_name(analysis.metric)} distance",
    )


# -------------------------------------------------------------------- comparison
def _comparison_heads(
    c: Any, heads: Sequence[tuple[int, int]] | None, n: int
) -> list[tuple[int, int]]:
    if heads is None:
        k = min(int(n), len(c.layers) * len(c.heads))
        return [(lay, hd) for lay, hd, _ in c.most_similar_heads(k=k)] if k > 0 else []
    out = []
    for layer, head in heads:
        i, j = c._pos(layer, head)
        out.append((c.layers[i], c.heads[j]))
    return list(dict.fromkeys(out))


def comparison_bundle(
    comparison: Any,
    *,
    heads: Sequence[tuple[int, int]] | None = None,
    n_heads: int = 3,
    highlight: Any = None,
) -> Bundle:
    """The figures of a :class:`~attntopo.Comparison` of two texts.

    Parameters
    ----------
    comparison : Comparison
    heads : list of (layer, head), optional
        Heads drawn in full; default: the ``n_heads`` most similar (smallest bottleneck in
        :attr:`Comparison.ranking_dim`).
    n_heads : int
    highlight : str or list of str, optional
        Shared words highlighted in the threshold graphs.

    Returns
    -------
    Bundle
        Static: ``heads_bottleneck_h{d}`` per dimension and ``heads_shared_edges`` (with more
        than one head), per head ``{tag}_graphs`` and ``{tag}_diagrams``.  Interactive (page
        ``report.html``): ``heads`` and per head ``{tag}_graphs`` (slider) and ``{tag}_diagrams``.
    """
    c = comparison
    chosen = _comparison_heads(c, heads, n_heads)
    hl = highlight or None

    def draw(interactive: bool) -> Figures:
        from . import compare as PC

        figs: Figures = {}
        if len(c.layers) * len(c.heads) > 1:
            if interactive:
                figs["heads"] = PC.iplot_compare_heads(
                    c, name="bottleneck"
                )  # the ranking dimension
            else:
                for d in range(c.maxdim + 1):
                    figs[f"heads_bottleneck_h{d}"] = PC.plot_compare_heads(
                        c, name="bottleneck", dim=d
                    )
                figs["heads_shared_edges"] = PC.plot_compare_heads(c, name="shared_edges")
        for layer, head in chosen:
            tag = head_tag(layer, head)
            if interactive:
                figs[f"{tag}_graphs"] = PC.iplot_compare_graphs(
                    c, layer=layer, head=head, highlight=hl
                )
                figs[f"{tag}_diagrams"] = PC.iplot_compare_diagrams(c, layer=layer, head=head)
            else:
                figs[f"{tag}_graphs"] = PC.plot_compare_graphs(
                    c, layer=layer, head=head, highlight=hl
                )
                figs[f"{tag}_diagrams"] = PC.plot_compare_diagrams(c, layer=layer, head=head)
        return figs

    return Bundle(
        draw, page="report.html", title=f"attntopo compare · {c.a.attention.model}", heads=chosen
    )


# ---------------------------------------------------------------------- timeline
def timeline_bundle(timeline: Any) -> Bundle:
    """The figures of a :class:`~attntopo.Timeline`.

    Returns
    -------
    Bundle
        Static: ``timeline_overview``, ``timeline_diagrams``, ``coherence_bottleneck``,
        ``coherence_wasserstein`` and per dimension ``vineyard_h{d}`` and ``betti_h{d}``.
        Interactive: ``timeline`` (the diagrams animated over the arriving tokens, its own file).
    """
    tl = timeline

    def draw(interactive: bool) -> Figures:
        from . import timeline as PT

        if interactive:
            return {"timeline": PT.iplot_timeline(tl)}
        figs: Figures = {
            "timeline_overview": PT.plot_timeline_overview(tl, dim=min(1, tl.maxdim)),
            "timeline_diagrams": PT.plot_timeline_diagrams(tl),
            "coherence_bottleneck": PT.plot_coherence(tl, metric="bottleneck"),
            "coherence_wasserstein": PT.plot_coherence(tl, metric="wasserstein"),
        }
        for d in range(tl.maxdim + 1):
            figs[f"vineyard_h{d}"] = PT.plot_vineyard(tl, dim=d)
            figs[f"betti_h{d}"] = PT.plot_betti_heatmap(tl, dim=d)
        return figs

    return Bundle(draw)


# -------------------------------------------------------------------- head space
def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(name)).strip("_") or "model"


def head_space_bundle(spaces: Any, *, comparison: Any = None) -> Bundle:
    """The figures of one or more :class:`~attntopo.HeadSpace`
    and of a :class:`~attntopo.ModelComparison`.

    Parameters
    ----------
    spaces : HeadSpace or list of HeadSpace
        With several, each space's names start with its model's name (``minilm_head_…``).
    comparison : ModelComparison, optional

    Returns
    -------
    Bundle
        Static, per space: ``head_distances``, ``head_mds_layer``, ``head_barcode`` and, with
        head types, ``head_mds_type`` and ``head_types``; ``model_diagrams`` for the comparison.
        Interactive, per space: ``head_mds`` (its own file).
    """
    spaces = list(spaces) if isinstance(spaces, (list, tuple)) else [spaces]

    def draw(interactive: bool) -> Figures:
        from . import heads as PH

        figs: Figures = {}
        for hs in spaces:
            tag = "" if len(spaces) == 1 else f"{_safe_name(hs.model)}_"
            if interactive:
                figs[f"{tag}head_mds"] = PH.iplot_head_mds(
                    hs, color_by="type" if hs.types is not None else "layer"
                )
                continue
            figs[f"{tag}head_distances"] = PH.plot_head_distances(hs)
            figs[f"{tag}head_mds_layer"] = PH.plot_head_mds(hs, color_by="layer")
            figs[f"{tag}head_barcode"] = PH.plot_head_barcode(hs)
            if hs.types is not None:
                figs[f"{tag}head_mds_type"] = PH.plot_head_mds(hs, color_by="type")
                figs[f"{tag}head_types"] = PH.plot_head_types(hs.types)
        if comparison is not None and not interactive:
            figs["model_diagrams"] = PH.plot_model_diagrams(comparison)
        return figs

    return Bundle(draw)
