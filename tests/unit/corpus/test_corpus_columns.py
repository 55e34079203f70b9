"""The store's feature columns built from a (n, k) value matrix (``feature_arrays``, one
shared validity bitmap over a transposed copy) against pyarrow's own construction column by
column (``pa.array(values[:, j], mask=...)``), and the packed round trip."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attntopo.corpus._work import PACKED_FEATURES, _packed_array, feature_arrays, unpack_features

# k >= 1: a store always has feature columns (at least one set, layer and head)
_values = st.tuples(st.integers(1, 9), st.integers(1, 7)).flatmap(
    lambda nk: st.tuples(
        hnp.arrays(
            np.float64, nk, elements=st.floats(allow_nan=True, allow_infinity=True, width=64)
        ),
        hnp.arrays(np.bool_, nk[0]),
    )
)


@settings(max_examples=150, deadline=None)
@given(_values)
def test_feature_arrays_equal_pyarrow_column_by_column(case):
    values, missing = case
    got = feature_arrays(values, missing)
    assert len(got) == values.shape[1]
    for j, a in enumerate(got):
        want = pa.array(values[:, j], pa.float64(), mask=missing)
        a.validate(full=True)
        _same(a, want)


def _same(a: pa.Array, want: pa.Array) -> None:
    """Equal as columns: type, nulls in the same places, the same values elsewhere (a NaN
    equal to a NaN, which ``pa.Array.equals`` does not grant)."""
    assert a.type == want.type and len(a) == len(want) and a.null_count == want.null_count
    assert a.is_null().to_pylist() == want.is_null().to_pylist()
    valid = ~np.asarray(want.is_null().to_pylist(), dtype=bool)
    np.testing.assert_array_equal(
        a.to_numpy(zero_copy_only=False)[valid], want.to_numpy(zero_copy_only=False)[valid]
    )


@settings(max_examples=100, deadline=None)
@given(_values)
def test_packed_values_unpack_to_the_same_columns(case):
    values, missing = case
    n, k = values.shape
    cols = [f"f{j}" for j in range(k)]
    status = pa.array(["failed" if m else "ok" for m in missing])
    schema = pa.schema(
        [pa.field("status", pa.string())] + [pa.field(c, pa.float64()) for c in cols]
    )
    packed = pa.table({"status": status, PACKED_FEATURES: _packed_array(values)})
    got = unpack_features(packed, cols, schema)
    assert got.schema.equals(schema) and got.column("status").combine_chunks().equals(status)
    for j, c in enumerate(cols):
        _same(got.column(c).combine_chunks(), pa.array(values[:, j], pa.float64(), mask=missing))
