"""Measures of a drawn matplotlib figure, shared by the paper-figure tests of unit/plots_paper/
and integration/test_paper_figures_models.py."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Annotation


def drawn(fig):
    """Draw ``fig`` with the Agg renderer; return the renderer (window extents are then final)."""
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def token_labels_of(ax) -> list:
    """The token labels of an axes (annotations with text)."""
    return [t for t in ax.texts if isinstance(t, Annotation) and t.get_text()]


def overlapping_pairs(texts, renderer, tol: float = 1.0) -> list[tuple[str, str, float]]:
    """Pairs of texts whose boxes share more than ``tol`` square pixels, with that area."""
    boxes = [t.get_window_extent(renderer) for t in texts]
    out = []
    for i in range(len(boxes)):
        for j in range(i):
            a, b = boxes[i], boxes[j]
            w = min(a.x1, b.x1) - max(a.x0, b.x0)
            h = min(a.y1, b.y1) - max(a.y0, b.y0)
            if w > 0 and h > 0 and w * h > tol:
                out.append((texts[i].get_text(), texts[j].get_text(), w * h))
    return out
