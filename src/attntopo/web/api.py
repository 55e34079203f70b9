"""The explorer's JSON API: request/response models and routes.

Routes (all JSON; errors are ``{"error": "one line"}``):

``GET  /api/health``   liveness, version, limits, running analyses, cache statistics
``GET  /api/models``   the models this server offers, the metrics
``POST /api/analyze``  one text: per-head summary of every head, and one head in full
``POST /api/compare``  two texts: per-head diagram distances and shared simplices, and one
                       head of both texts in full, with the tokens they share

One head "in full" is everything the page draws without asking the server again: the token
distance matrix (edges are its entries: an edge ``i–j`` is born at ``D[i][j]``), the
triangles with their births (earliest first), the attention matrix, the persistence
diagram, an MDS layout of the tokens, a suggested scale and the record of attntopo's one ε
slider (``slider``: per token pair the first of about 1000 slider scales that reaches its
distance; the encoding and the widget are those of the reports' threshold graphs, see
``attntopo/plots/slider.py`` and ``plots/assets/scale_slider.js``).  Moving the page's
threshold slider only reads these.  Results are cached per (model, text(s), metric, maxdim,
settings): changing the layer or head reuses the model run.
"""

# no `from __future__ import annotations`: FastAPI resolves the request models, built inside
# build_router from the server settings, from the route signatures at definition time

import logging
import math
import re
import time
from typing import Any, Literal, Optional

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .. import __version__
from ..constants import METRICS
from ..errors import AttntopoError, TextTooLongError
from ..io import json_safe
from ._errors import JobError, error_response
from ._state import ServerState, Settings

__all__ = ["build_router", "compare_head_payload", "head_payload", "text_payload", "triangles_upto"]

log = logging.getLogger("attntopo.web")

Metric = Literal[METRICS]  # type: ignore[valid-type]
_DIGITS = 6  # decimals of the matrices sent to the page
_SHARED_DETAIL_MAX = 40  # pairs and shared simplices are listed up to this many shared tokens
SLIDER_STEPS = 1000  # quantile scales of the explorer's ε slider (plus the suggested scale)
_SLIDER_DOC = (
    "attntopo's one ε slider (as in the reports): scales (increasing), start (the index "
    "of the suggested scale), and per token pair i < j (triu order) the index of the first "
    "scale that reaches its distance, base64 uint8/uint16 LE (steps, dtype)"
)


# ------------------------------------------------------------------------ models
class ErrorResponse(BaseModel):
    error: str = Field(..., description="One line saying what was wrong and what is allowed.")


# every status a route can answer is documented (an in-process schemathesis run checks it)
_ANY_ROUTE: dict = {
    400: {
        "description": "A Host header this server does not answer to (DNS-rebinding "
        "protection); for POST also malformed JSON or an input the library "
        "refuses (the message says why)",
        "model": ErrorResponse,
    },
    408: {
        "description": "The request's head (--header-timeout) or body (--body-timeout) did "
        "not arrive in time; the connection is closed",
        "model": ErrorResponse,
    },
    413: {
        "description": "A request body over the limit (two texts of --max-chars), counted as "
        "it arrives; the connection is closed",
        "model": ErrorResponse,
    },
    500: {
        "description": "An unexpected failure (the details are in the server log)",
        "model": ErrorResponse,
    },
}
_IN_A_WORKER: dict = {
    503: {
        "description": "Too many analyses running (--max-concurrent; retry after Retry-After "
        "seconds), or the server is shutting down",
        "model": ErrorResponse,
    },
    504: {"description": "Took longer than --timeout", "model": ErrorResponse},
}
_ERRORS: dict = {
    **_ANY_ROUTE,
    422: {"description": "An invalid field (the message names it)", "model": ErrorResponse},
    **_IN_A_WORKER,
}


class TextData(BaseModel):
    text: str
    n_tokens: int
    tokens: list[str] = Field(..., description="Tokens as the tokenizer produced them.")
    labels: list[str] = Field(..., description="Readable labels (the text each token covers).")
    special: list[bool] = Field(..., description="Special tokens ([CLS], [SEP], <s>, …).")
    truncated: bool


class HeadData(BaseModel):
    layer: int
    head: int
    n_tokens: int
    distances: list[list[float]] = Field(
        ..., description="(n, n) token distance matrix; edge i–j is born at distances[i][j]."
    )
    attention: list[list[float]] = Field(..., description="(n, n) attention weights, row = query.")
    diagram: dict[str, list[list[Any]]] = Field(
        ...,
        description="Persistence diagram: {'h0': [[birth, death], …], 'h1': …}; "
        "death may be 'inf'.",
    )
    diagram_summary: dict[str, dict[str, Any]]
    triangles: list[list[float]] = Field(
        ..., description="[i, j, k, birth] with birth = longest side, earliest first."
    )
    triangles_complete_to: Any = Field(
        ..., description="Every triangle born at or below this scale is listed ('inf': all)."
    )
    n_triangles_sent: int
    layout: list[list[float]] = Field(..., description="(n, 2) MDS coordinates of the tokens.")
    scale: float = Field(..., description="A scale where the threshold graph is informative.")
    max_distance: float
    slider: Optional[dict[str, Any]] = Field(
        None,
        description=_SLIDER_DOC + ": n, scales, start, steps, dtype, max_edges, max_triangles "
        "(/api/analyze; null in /api/compare, whose head has one for both texts).",
    )


class AnalyzeResponse(BaseModel):
    kind: Literal["analysis"]
    model: dict[str, Any] = Field(..., description="The model's description (layers, heads, …).")
    settings: dict[str, Any]
    text: TextData
    layers: list[int]
    heads: list[int]
    summary: dict[str, list[Any]] = Field(
        ..., description="Per-head summary columns (layer-major, length layers × heads)."
    )
    ranking: dict[str, Any] = Field(
        ...,
        description="The default ranking of heads (auto_head, the page's grid): stat "
        "(max_persistence), dim (the highest homology dimension in which no value is "
        "shared by more than half of the heads), column.",
    )
    selected: Optional[list[int]] = Field(None, description="[layer, head] of `head`, if any.")
    head: Optional[HeadData] = None
    cached: bool
    elapsed_s: float


class CompareHead(BaseModel):
    layer: int
    head: int
    scale: float = Field(..., description="The scale at which shared simplices are compared.")
    a: HeadData
    b: HeadData
    report: dict[str, Any] = Field(
        ...,
        description="Diagram distances per dimension, counts at the scale, and (up to 40 "
        "shared tokens) every pair's edge births/connection scales and the "
        "simplices present in both texts.",
    )
    slider: dict[str, Any] = Field(
        ...,
        description=_SLIDER_DOC + ", for both texts on one set of scales: scales, labels, start, "
        "panels (per text: n, rep = the shared tokens' positions, steps, dtype), "
        "shared (m, steps, dtype: a pair of shared tokens is an edge in both texts), "
        "max_edges, max_triangles.",
    )


class CompareResponse(BaseModel):
    kind: Literal["comparison"]
    model: dict[str, Any]
    settings: dict[str, Any]
    a: TextData
    b: TextData
    shared_tokens: list[dict[str, Any]] = Field(
        ..., description="Tokens in both texts: key, and the token positions a, b in each."
    )
    layers: list[int]
    heads: list[int]
    summary: dict[str, list[Any]] = Field(
        ...,
        description="Per-head columns: scale, diagram distances (bottleneck, wasserstein1, "
        "wasserstein2 per dimension; shared_* between the shared tokens' "
        "diagrams), shared edge/triangle counts.",
    )
    summary_a: dict[str, list[Any]]
    summary_b: dict[str, list[Any]]
    ranking: dict[str, Any] = Field(
        ...,
        description="What the heads are ranked by: by (bottleneck), dim (the highest homology "
        "dimension in which no distance is shared by more than half of the heads), "
        "column, default, rule.",
    )
    most_similar_heads: list[list[Any]] = Field(
        ...,
        description="The 5 most similar heads: [layer, head, value, rank, n_tied]; equal values "
        "share the smallest rank of their group (n_tied > 1).",
    )
    most_different_heads: list[list[Any]]
    selected: Optional[list[int]] = None
    head: Optional[CompareHead] = None
    cached: bool
    elapsed_s: float


class ModelEntry(BaseModel):
    name: str
    description: str
    default: bool
    packaged: bool
    loaded: bool
    n_layers: Optional[int] = None
    n_heads: Optional[int] = None
    causal: Optional[bool] = None
    note: str = ""


class ModelsResponse(BaseModel):
    default: str
    models: list[ModelEntry]
    metrics: list[str]
    max_chars: int


class HealthResponse(BaseModel):
    status: Literal["ok"]
    version: str
    uptime_s: float
    running: int
    max_concurrent: int
    max_chars: int
    timeout_s: float
    cache: dict[str, int]
    loaded_models: list[str]


# "give both layer and head, or neither", in JSON Schema (so that a generated request that
# follows the schema is one the server accepts): both integers, or neither one given non-null
_LAYER_AND_HEAD = [
    {
        "required": ["layer", "head"],
        "properties": {"layer": {"type": "integer"}, "head": {"type": "integer"}},
    },
    {"properties": {"layer": {"type": "null"}, "head": {"type": "null"}}},
]


# a text must hold something besides whitespace (check_text: str.strip()). In the schema: one
# character outside Python's whitespace, spelled as \uXXXX escapes so that every regex engine
# reads it alike (`\s` differs: ECMAScript's and Rust's leave out U+001C..U+001F, which
# str.isspace() counts; a randomized fuzz run found that). The server checks it itself, with a
# clearer message than a pattern's.
_WHITESPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())  # none above U+3000
_NOT_BLANK = {"pattern": "[^" + "".join(f"\\u{ord(c):04x}" for c in _WHITESPACE) + "]"}


def _request_models(settings: Settings):
    """Request models whose limits come from the server's settings."""
    max_chars = settings.max_chars

    def check_text(v: str, name: str) -> str:
        if not v.strip():
            raise ValueError(f"{name} is empty or only whitespace: give at least one word")
        return v

    class _Common(BaseModel):
        # strict: a JSON value of the wrong type is refused (422 naming the field) instead of
        # coerced ("yes" -> True, true -> 1, 1.0 -> 1); an integer is still a valid number
        model_config = ConfigDict(
            extra="forbid", strict=True, json_schema_extra={"anyOf": _LAYER_AND_HEAD}
        )

        model: Optional[str] = Field(
            None,
            max_length=300,
            description="A name from GET /api/models (default: the server's --model).",
        )
        metric: Metric = Field("jensen_shannon", description="Distance between attention rows.")
        maxdim: int = Field(1, ge=0, le=2, description="Highest homology dimension.")
        layer: Optional[int] = Field(
            None,
            ge=-4096,
            le=4096,
            description="Layer of the head returned in full "
            "(0-based; negatives count from the end).",
        )
        head: Optional[int] = Field(None, ge=-4096, le=4096, description="Head returned in full.")
        auto_head: bool = Field(
            False,
            description="Without layer/head: return the most persistent head in full (the "
            "largest finite H1 bar; of text A for /api/compare).",
        )
        drop_special: bool = Field(False, description="Remove special tokens and renormalize rows.")
        truncate: bool = Field(
            False,
            description="Cut a text with more tokens than the model takes to the model's "
            "limit instead of refusing it (TextData.truncated says if it was).",
        )

        @model_validator(mode="after")
        def _both(self):
            if (self.layer is None) != (self.head is None):
                raise ValueError("give both layer and head, or neither")
            return self

    class AnalyzeRequest(_Common):
        """One text; every head is analysed (the summary covers all of them)."""

        text: str = Field(
            ...,
            min_length=1,
            max_length=max_chars,
            description="The text.",
            json_schema_extra=_NOT_BLANK,
        )

        @field_validator("text")
        @classmethod
        def _text(cls, v: str) -> str:
            return check_text(v, "text")

    class CompareRequest(_Common):
        """Two texts compared head by head."""

        text_a: str = Field(
            ...,
            min_length=1,
            max_length=max_chars,
            description="The first text.",
            json_schema_extra=_NOT_BLANK,
        )
        text_b: str = Field(
            ...,
            min_length=1,
            max_length=max_chars,
            description="The second text.",
            json_schema_extra=_NOT_BLANK,
        )
        scale: Optional[float] = Field(
            None,
            ge=0,
            allow_inf_nan=False,
            description="Scale at which shared edges/triangles are counted (default: per head, "
            "the median H0 death of both texts).",
        )

        @field_validator("text_a")
        @classmethod
        def _a(cls, v: str) -> str:
            return check_text(v, "text_a")

        @field_validator("text_b")
        @classmethod
        def _b(cls, v: str) -> str:
            return check_text(v, "text_b")

    return AnalyzeRequest, CompareRequest


# --------------------------------------------------------------------- payloads
def _matrix(M: np.ndarray) -> list:
    return np.round(np.asarray(M, dtype=np.float64), _DIGITS).tolist()


def text_payload(att) -> dict:
    return {
        "text": att.text,
        "n_tokens": int(att.n_tokens),
        "tokens": list(att.tokens),
        "labels": list(att.labels),
        "special": [bool(x) for x in att.special],
        "truncated": bool(att.truncated),
    }


def _triangle_count(A: np.ndarray) -> float:
    return float((np.matmul(A, A) * A).sum(dtype=np.float64) / 6.0)


def triangles_upto(D: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The earliest-born triangles of ``D``'s Rips filtration, at most ``cap`` of them.

    Returns ``(triangles (t, 3) int, births (t,), complete_to)``: every triangle born at or
    below ``complete_to`` is included (``inf``: all of them), sorted by birth.
    """
    from ..topology.complex import complex_at

    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    empty = (np.zeros((0, 3), dtype=np.int64), np.zeros(0), math.inf)
    if n < 3:
        return empty
    if cap <= 0:
        return empty[0], empty[1], -math.inf
    eps = math.inf
    if n * (n - 1) * (n - 2) // 6 > cap:
        vals = np.unique(D[np.triu_indices(n, 1)])
        off = ~np.eye(n, dtype=bool)

        def count(e: float) -> float:
            return _triangle_count(((D <= e) & off).astype(np.float32))

        lo, hi = -1, len(vals) - 1  # count(vals[hi]) > cap (all triangles) ; find the last k <= cap
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if count(vals[mid]) <= cap:
                lo = mid
            else:
                hi = mid
        if lo < 0:
            return empty[0], empty[1], float(vals[0]) - 1e-12 if vals[0] > 0 else -math.inf
        eps = float(vals[lo])
    cx = complex_at(D, eps, max_simplex_dim=2, max_simplices=max(cap, n * n))
    tris, births = cx.simplex_arrays[1], cx.birth_arrays[1]
    order = (
        np.lexsort((tris[:, 2], tris[:, 1], tris[:, 0], births))
        if len(births)
        else np.zeros(0, int)
    )
    return tris[order], births[order], eps


def head_payload(an, layer: int, head: int, max_triangles: int, *, slider: bool = True) -> dict:
    """Everything the page draws for one head of one text (see the module docs); ``slider``:
    with the one-text slider record (``False``: a comparison sends one for both texts)."""
    from ..plots import mds_layout, suggest_scale
    from ..plots.slider import graph_slider, slider_scales

    D = an.distance_matrix(layer, head)
    W = an.attention_matrix(layer, head)
    dgm = an.diagram(layer, head)
    i, j = an.position(layer, head)
    tris, births, complete = triangles_upto(D, max_triangles)
    tri_rows = (
        np.column_stack([tris.astype(np.float64), np.round(births, _DIGITS)]).tolist()
        if len(births)
        else []
    )
    n = D.shape[0]
    upper = D[np.triu_indices(n, 1)]
    scale = float(suggest_scale(dgm, D))
    record = None
    if slider:
        scales = slider_scales([D], SLIDER_STEPS, include=[scale] if scale > 0 else [])
        record = graph_slider(D, scales, int(np.argmin(np.abs(scales - scale))))
    return {
        "layer": int(an.layers[i]),
        "head": int(an.heads[j]),
        "n_tokens": int(n),
        "distances": _matrix(D),
        "attention": _matrix(W),
        "diagram": {f"h{d}": json_safe(np.asarray(dgm[d])) for d in range(dgm.maxdim + 1)},
        "diagram_summary": {f"h{d}": json_safe(v) for d, v in dgm.summary().items()},
        "triangles": [[int(a), int(b), int(c), float(e)] for a, b, c, e in tri_rows],
        "triangles_complete_to": json_safe(complete),
        "n_triangles_sent": len(tri_rows),
        "layout": _matrix(mds_layout(D)),
        "scale": scale,
        "max_distance": float(upper.max()) if upper.size else 0.0,
        "slider": record,
    }


def compare_head_payload(c, layer: int, head: int, max_triangles: int) -> dict:
    """One head of both texts in full: each text's head (without its own slider), the
    comparison's report and the two-text slider record on one set of scales."""
    from ..plots.slider import compare_slider, slider_scales

    i, j = c._pos(layer, head)
    scale = float(c.scale(layer, head))
    scales = slider_scales(
        [c.a.distances[i, j], c.b.distances[i, j]],
        SLIDER_STEPS,
        include=[scale] if scale > 0 else [],
    )
    return {
        "layer": int(layer),
        "head": int(head),
        "scale": scale,
        "a": head_payload(c.a, layer, head, max_triangles, slider=False),
        "b": head_payload(c.b, layer, head, max_triangles, slider=False),
        "report": _compare_report(c, layer, head),
        "slider": compare_slider(c, i, j, scales, int(np.argmin(np.abs(scales - scale)))),
    }


def _columns(table: dict) -> dict:
    return {k: json_safe(np.asarray(v)) for k, v in table.items()}


def _most_persistent(an) -> tuple[int, int]:
    layer, head, _ = an.most_persistent_heads(k=1)[0]  # in the analysis's ranking dimension
    return layer, head


def _compare_report(c, layer: int, head: int) -> dict:
    from ..constants import COUNT_NAMES, DISTANCE_NAMES

    i, j = c._pos(layer, head)
    out = {
        "scale": float(c.scales[i, j]),
        "diagram_distances": {n: c.diagram_distances[n][i, j].tolist() for n in DISTANCE_NAMES},
        "shared_diagram_distances": {
            n: c.shared_diagram_distances[n][i, j].tolist() for n in DISTANCE_NAMES
        },
        "counts": {n: int(c.counts[n][i, j]) for n in COUNT_NAMES},
    }
    if len(c.shared_tokens) <= _SHARED_DETAIL_MAX:
        lay, hd = c.layers[i], c.heads[j]
        out["pairs"] = c.pairs(lay, hd)
        out["shared_simplices"] = [
            {**s, "tokens": list(s["tokens"])} for s in c.shared_simplices(lay, hd)
        ]
    else:
        out["note"] = (
            f"{len(c.shared_tokens)} shared tokens: pairs and shared simplices are listed "
            f"only up to {_SHARED_DETAIL_MAX}"
        )
    return json_safe(out)


def _precheck(state: ServerState, name: str, layer: Optional[int], head: Optional[int]) -> None:
    """Refuse an out-of-range layer/head before the model loads or runs: the sizes come from
    the model's configuration (:func:`attntopo.models.check_selection`, as on the command line),
    or from the loaded model where its configuration cannot be read without loading it."""
    from types import SimpleNamespace

    from ..models import check_selection

    if layer is None or head is None:
        return
    info = state.loaded.get(name)
    model = (
        SimpleNamespace(name=name, n_layers=info["n_layers"], n_heads=info["n_heads"])
        if info
        else name
    )
    check_selection(model, layers=layer, heads=head)


def _model_info(state: ServerState, name: str, m) -> dict:
    from ..models import ALIASES

    info = m.info()
    info["description"] = ALIASES[name].description if name in ALIASES else name
    state.loaded[name] = info
    return info


def _run_analysis(state: ServerState, name: str, req) -> Any:
    """The model run behind /api/analyze (every head of the text)."""
    import attntopo as at

    m = state.settings.load(name)
    _model_info(state, name, m)
    return at.analyze(
        req.text,
        m,
        metric=req.metric,
        maxdim=req.maxdim,
        drop_special=req.drop_special,
        truncate=req.truncate,
        progress=False,
    )


def _run_comparison(state: ServerState, name: str, req) -> Any:
    """The model run behind /api/compare (both texts, every head)."""
    import attntopo as at

    m = state.settings.load(name)
    _model_info(state, name, m)
    return at.compare(
        req.text_a,
        req.text_b,
        m,
        metric=req.metric,
        maxdim=req.maxdim,
        scale=req.scale,
        drop_special=req.drop_special,
        truncate=req.truncate,
        progress=False,
    )


# ------------------------------------------------------------------------ routes
def too_long_message(e: TextTooLongError) -> str:
    """The library's too-many-tokens error with this interface's fix: the page's "truncate long
    texts" checkbox (``"truncate": true`` in a request), not the Python argument."""
    what = re.split(r"\s*[:;(,]\s*(?=[^:;(]*(?:truncat|shorten))", str(e), maxsplit=1)[0].rstrip(
        " .:;,"
    )
    return (
        f"{what}: shorten it, or tick “truncate long texts” to cut it to the model's limit "
        f'(API: "truncate": true)'
    )


# ------------------------------------------------------- what the routes answer
async def _in_worker(state: ServerState, fn, heavy: bool):
    """``fn()`` in a worker slot; a too-long text and an unexpected error become one JSON line."""
    try:
        return await state.run(fn, heavy=heavy)
    except TextTooLongError as e:
        return error_response(400, too_long_message(e))
    except (AttntopoError, JobError):
        raise
    except Exception as e:  # noqa: BLE001 - logged here; the client gets one generic line
        log.error("unexpected error in a computation", exc_info=e)
        return error_response(
            500,
            "internal error: the server could not complete this "
            "request (details are in the server log)",
        )


def _health(st: ServerState) -> dict:
    s = st.settings
    return {
        "status": "ok",
        "version": __version__,
        "uptime_s": round(time.time() - st.started, 3),
        "running": st.slots.running,
        "max_concurrent": s.max_concurrent,
        "max_chars": s.max_chars,
        "timeout_s": s.timeout,
        "cache": st.cache.stats(),
        "loaded_models": sorted(st.loaded),
    }


def _model_rows(st: ServerState) -> list[dict]:
    """One row per model the server offers (its default first), described without weights."""
    from ..models import ALIASES

    out = []
    default = st.allowed_models()[0]
    for name in st.allowed_models():
        row = {
            "name": name,
            "description": name,
            "default": name == default,
            "packaged": name in ALIASES,
            "loaded": name in st.loaded,
        }
        if name in st.loaded:
            info = st.loaded[name]
            row.update(n_layers=info["n_layers"], n_heads=info["n_heads"], causal=info["causal"])
        if name in ALIASES:
            row["description"] = ALIASES[name].description
            if "n_layers" not in row:
                try:
                    from ..models.describe import describe_alias

                    d = describe_alias(name)
                    row.update(
                        n_layers=d["n_layers"],
                        n_heads=d["n_heads"],
                        causal=d["causal"],
                        note=d.get("note") or "",
                    )
                except Exception as e:  # noqa: BLE001 - a description is optional
                    row["note"] = f"not described: {type(e).__name__}"
        out.append(row)
    return out


def _selected(an, req) -> Optional[tuple[int, int]]:
    """The (layer, head) a request shows in full: the one it names, the most persistent one
    with ``auto_head``, or None."""
    if req.layer is not None:
        i, j = an.position(req.layer, req.head)
        return an.layers[i], an.heads[j]
    return _most_persistent(an) if req.auto_head else None


def _analysis_payload(an, req, info: dict, cached: bool, max_triangles: int, t0: float) -> dict:
    """The /api/analyze answer for an analysis (see :class:`AnalyzeResponse`)."""
    sel = _selected(an, req)
    return {
        "kind": "analysis",
        "model": info,
        "settings": {
            "metric": an.metric,
            "maxdim": an.maxdim,
            "drop_special": req.drop_special,
            "truncate": req.truncate,
            "engine": an.engine,
        },
        "text": text_payload(an.attention),
        "layers": list(an.layers),
        "heads": list(an.heads),
        "summary": _columns(an.summary()),
        "ranking": {
            "stat": "max_persistence",
            "dim": an.ranking_dim,
            "column": f"max_persistence_h{an.ranking_dim}",
        },
        "selected": list(sel) if sel else None,
        "head": head_payload(an, sel[0], sel[1], max_triangles) if sel else None,
        "cached": cached,
        "elapsed_s": round(time.perf_counter() - t0, 4),
    }


def _comparison_payload(c, req, info: dict, cached: bool, max_triangles: int, t0: float) -> dict:
    """The /api/compare answer for a comparison (see :class:`CompareResponse`)."""
    sel = _selected(c.a, req)
    return {
        "kind": "comparison",
        "model": info,
        "settings": {
            "metric": c.metric,
            "maxdim": c.maxdim,
            "drop_special": req.drop_special,
            "truncate": req.truncate,
            "scale": c.given_scale,
            "engine": c.a.engine,
        },
        "a": text_payload(c.a.attention),
        "b": text_payload(c.b.attention),
        "shared_tokens": [s.to_dict() for s in c.shared_tokens],
        "layers": list(c.layers),
        "heads": list(c.heads),
        "summary": _columns(c.summary()),
        "summary_a": _columns(c.a.summary()),
        "summary_b": _columns(c.b.summary()),
        "ranking": c.ranking_info(),
        "most_similar_heads": json_safe(c.ranked_entries(5)),
        "most_different_heads": json_safe(c.ranked_entries(5, similar=False)),
        "selected": list(sel) if sel else None,
        "head": compare_head_payload(c, sel[0], sel[1], max_triangles) if sel else None,
        "cached": cached,
        "elapsed_s": round(time.perf_counter() - t0, 4),
    }


async def _cached_answer(st: ServerState, name: str, key: tuple, compute, payload, req) -> Response:
    """Compute (or take from the cache) the result behind ``key`` in a worker and answer with
    ``payload(result, req, model_info, cached, max_triangles, t0)``."""

    def job() -> dict:
        t0 = time.perf_counter()
        result, cached = st.cache.get_or_compute(key, compute)
        info = dict(st.loaded.get(name) or result.provenance.get("model", {}))
        return payload(result, req, info, cached, st.settings.max_triangles, t0)

    return _json(await _in_worker(st, job, heavy=key not in st.cache))


# ------------------------------------------------------------------------ routes
def build_router(settings: Settings) -> APIRouter:
    """The ``/api`` routes, with request limits taken from ``settings``."""
    AnalyzeRequest, CompareRequest = _request_models(settings)
    router = APIRouter(prefix="/api", tags=["explorer"])

    def state_of(request: Request) -> ServerState:
        return request.app.state.attntopo

    @router.get(
        "/health",
        response_model=HealthResponse,
        responses={**_ANY_ROUTE},
        summary="Is the server up; its limits",
    )
    async def health(request: Request):
        return _health(state_of(request))

    @router.get(
        "/models",
        response_model=ModelsResponse,
        responses={**_ANY_ROUTE, **_IN_A_WORKER},
        summary="Models this server offers",
    )
    async def models(request: Request):
        """The models the page may use: the packaged aliases installed on this machine and the
        server's ``--model``; layers × heads are read from configs without loading weights."""
        st = state_of(request)
        rows = await _in_worker(st, lambda: _model_rows(st), heavy=False)
        if not isinstance(rows, list):
            return rows
        return {
            "default": rows[0]["name"],
            "models": rows,
            "metrics": list(METRICS),
            "max_chars": st.settings.max_chars,
        }

    @router.post(
        "/analyze",
        response_model=AnalyzeResponse,
        responses={**_ERRORS},
        summary="Analyse one text: every head's summary, one head in full",
    )
    async def analyze(req: AnalyzeRequest, request: Request):  # type: ignore[valid-type]
        """Runs the model once per (model, text, metric, maxdim, drop_special) and caches the
        result; asking for another head of the same text reuses it.  `summary` has one entry
        per head (layer-major); `head` is the chosen head in full (or the most persistent one
        with `auto_head`), null without either."""
        st = state_of(request)
        name = st.check_model(req.model)
        _precheck(st, name, req.layer, req.head)
        key = ("analysis", name, req.text, req.metric, req.maxdim, req.drop_special, req.truncate)
        return await _cached_answer(
            st, name, key, lambda: _run_analysis(st, name, req), _analysis_payload, req
        )

    @router.post(
        "/compare",
        response_model=CompareResponse,
        responses={**_ERRORS},
        summary="Compare two texts head by head; one head of both in full",
    )
    async def compare(req: CompareRequest, request: Request):  # type: ignore[valid-type]
        """Both texts go through the model in one batch; per head: diagram distances
        (bottleneck, Wasserstein per homology dimension), shared tokens, shared edges and
        triangles at the head's scale.  Cached like /api/analyze."""
        st = state_of(request)
        name = st.check_model(req.model)
        _precheck(st, name, req.layer, req.head)
        key = (
            "comparison",
            name,
            req.text_a,
            req.text_b,
            req.metric,
            req.maxdim,
            req.drop_special,
            req.scale,
            req.truncate,
        )
        return await _cached_answer(
            st, name, key, lambda: _run_comparison(st, name, req), _comparison_payload, req
        )

    return router


def _json(result: Any) -> Response:
    """A computed payload as JSON, sent as is (the response models document it; validating
    large matrices again would only cost time)."""
    return result if isinstance(result, Response) else JSONResponse(result)
