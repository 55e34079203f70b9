"""The inputs of :func:`attntopo.features.evaluate_detectors` and
:func:`~attntopo.features.balanced_subsample`, checked: labels, feature blocks, covariates,
groups and strata, heads, rows.  Each bad input is one :class:`InvalidInputError` line, before
scikit-learn or numpy sees it."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._validation import check_int
from ..errors import InvalidInputError
from ._table import FeatureTable, parse_column


def _binary(y: Any, name: str) -> np.ndarray:
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be one label per pair (1-D), got shape {arr.shape}")
    if arr.dtype == object and all(
        isinstance(v, (int, float, np.number, np.bool_)) for v in arr.tolist()
    ):
        arr = arr.astype(np.float64)  # 0/1 as Python numbers (an object column)
    if arr.dtype == bool:
        arr = arr.astype(int)
    if arr.dtype.kind not in "iuf":
        values = set(map(str, arr.tolist()))
    else:
        values = set(np.unique(arr).tolist()) if arr.size else set()
    if arr.dtype.kind not in "iuf" or not values <= {0, 1}:
        shown = sorted(map(str, values))[:4]
        ambiguous = (
            "; -1 marks an ambiguous pair in HallucinationQA.y: its .binary() leaves them out"
            if arr.dtype.kind in "iuf" and -1 in values and values <= {-1, 0, 1}
            else ""
        )
        raise InvalidInputError(
            f"{name} must hold 0 and 1 (1: the event to detect, e.g. hallucinated), got values "
            f"{', '.join(shown)}{ambiguous}"
        )
    if values != {0, 1}:
        raise InvalidInputError(
            f"{name} holds a single class ({next(iter(values), 'none')}): "
            "an AUC needs positives and negatives"
        )
    return arr.astype(int)


def _block(X: Any, name: str, n: int) -> tuple[np.ndarray, list[str] | None]:
    """A detector's values (n, p) float64 and its column names (None for a plain array)."""
    if isinstance(X, FeatureTable):
        values, names = X.values, list(X.columns)
    elif hasattr(X, "columns") and hasattr(X, "to_numpy"):
        values, names = _frame_values(X, name), [str(c) for c in X.columns]
    else:
        try:
            values = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInputError(f"{name}: not a table of numbers") from None
        if values.ndim == 1:
            values = values[:, None]
        names = None
    if values.ndim != 2 or values.shape[0] != n or values.shape[1] == 0:
        raise InvalidInputError(
            f"{name} has shape {values.shape}; expected ({n}, columns), one row per labelled pair"
        )
    values = np.where(np.isfinite(values), values, np.nan)
    return values, names


def _frame_values(X: Any, name: str) -> np.ndarray:
    """A DataFrame's values as float64; a column that is not numbers is named."""
    try:
        return X.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        pass
    for k, column in enumerate(X.columns):
        try:
            X.iloc[:, k].to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            first = next((v for v in X.iloc[:, k].tolist() if isinstance(v, str)), None)
            example = f" ({first!r})" if first is not None else ""
            raise InvalidInputError(
                f"{name}: column {str(column)!r} holds a value that is not a number{example}; "
                "pass the feature columns only"
            ) from None
    raise InvalidInputError(f"{name}: not a table of numbers")


def _codes(values: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``; values that cannot be sorted together
    (None among strings, strings among numbers) are one line naming their types."""
    try:
        return np.unique(values, return_inverse=True)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in np.asarray(values, dtype=object).tolist()})
        raise InvalidInputError(
            f"{name} mixes {', '.join(kinds)} values, which cannot be sorted together: give "
            "values of one type (e.g. fill the missing ones)"
        ) from None


def _named_blocks(blocks: Any, what: str, n: int) -> dict[str, tuple[np.ndarray, list | None]]:
    if isinstance(blocks, Mapping):
        items = list(blocks.items())
    else:
        items = [("detector", blocks)]
    if not items:
        raise InvalidInputError(f"no {what} given")
    out = {}
    for name, X in items:
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"{what} names must be non-empty strings, got {name!r}")
        out[name] = _block(X, f"{what} {name!r}", n)
    return out


def _covariates(covariates: Any, n: int) -> tuple[np.ndarray | None, list[str]]:
    if covariates is None:
        return None, []
    if isinstance(covariates, Mapping):
        if not covariates:
            return None, []
        cols = [_block(v, f"covariate {k!r}", n) for k, v in covariates.items()]
        if any(c[0].shape[1] != 1 for c in cols):
            raise InvalidInputError("each covariate must be one value per pair (1-D)")
        return np.hstack([c[0] for c in cols]), [str(k) for k in covariates]
    values, names = _block(covariates, "covariates", n)
    return values, names or [f"covariate{k}" for k in range(values.shape[1])]


def _check_some_values(
    blocks: Mapping[str, Any], cov: np.ndarray | None, cov_names: list[str], rows: np.ndarray
) -> None:
    """Every detector and covariate has a finite value on the evaluated rows (a column of
    missing values among others is imputed: it scores as a constant)."""
    empty = [f"detector {d!r}" for d, (v, _) in blocks.items() if not np.isfinite(v[rows]).any()]
    if cov is not None:
        empty += [
            f"covariate {c!r}"
            for k, c in enumerate(cov_names)
            if not np.isfinite(cov[rows, k]).any()
        ]
    if empty:
        raise InvalidInputError(
            f"{empty[0]} has no finite value on the {rows.size} evaluated pairs (every value NaN "
            "or infinite): nothing to score"
        )


def _head_counts(heads: Any, detectors: dict) -> dict[str, int | None]:
    if heads is None:
        return {d: None for d in detectors}
    if isinstance(heads, Mapping):
        unknown = [k for k in heads if k not in detectors]
        if unknown:
            raise InvalidInputError(
                f"heads names {unknown}, which are not detectors ({', '.join(detectors)})"
            )
        out = {d: heads.get(d) for d in detectors}
        for d, k in out.items():
            if k is not None:
                check_int(k, f"heads[{d!r}]", lo=1)
        explicit = set(d for d, k in out.items() if k is not None)
    else:
        k = check_int(heads, "heads", lo=1)
        out = {d: k for d in detectors}
        explicit = set()
    for d in list(out):
        if out[d] is None:
            continue
        names = detectors[d][1]
        has_heads = names is not None and any(
            parse_column(c)[0] is not None for c in names if _is_feature_name(c)
        )
        if not has_heads:
            if d in explicit:
                raise InvalidInputError(
                    f"heads for detector {d!r}: its columns name no heads (choosing heads needs "
                    "columns 'L<layer>H<head>.<set>.<quantity>', a FeatureTable or DataFrame)"
                )
            out[d] = None  # heads=int applies to the detectors with per-head columns
    return out


def _is_feature_name(c: str) -> bool:
    try:
        parse_column(c)
    except InvalidInputError:
        return False
    return True


def _rows(subset: Any, n: int) -> np.ndarray:
    if subset is None:
        return np.arange(n)
    arr = np.asarray(subset)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise InvalidInputError(f"subset is a mask of {arr.shape}, expected ({n},)")
        return np.flatnonzero(arr)
    if (
        arr.ndim != 1
        or arr.dtype.kind not in "iu"
        or (arr.size and (arr.min() < 0 or arr.max() >= n))
    ):
        raise InvalidInputError(f"subset must be row indices in 0..{n - 1} or a boolean mask")
    if np.unique(arr).size != arr.size:
        raise InvalidInputError("subset repeats rows")
    return np.sort(arr)
