"""The shared argument checks of attntopo._validation and the option sets of constants."""

from __future__ import annotations

import math
from typing import get_args

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attntopo import constants
from attntopo._validation import (
    check_bool,
    check_choice,
    check_dim,
    check_dims,
    check_index,
    check_indices,
    check_int,
    check_maxdim,
    check_metric,
    check_nonneg_int,
    check_number,
    check_positive_int,
    check_scale,
    check_simplex_dim,
    check_threshold,
    check_wasserstein_p,
    is_int,
)
from attntopo.errors import DeviceError, InvalidInputError, OutOfRangeError

BOOLS = [True, False, np.bool_(True), np.bool_(False)]
NOT_NUMBERS = [*BOOLS, "0.5", b"1", None, [1.0], np.array([1.0]), object(), float("nan"), np.nan]


# ----------------------------------------------------------------------- integers
@given(st.integers(-5, 10), st.integers(0, 12), st.integers(-20, 20))
def test_check_int_accepts_exactly_the_range(lo, width, v):
    hi = lo + width
    inside = lo <= v <= hi
    for value in (v, np.int64(v), np.int32(v), np.uint8(v) if v >= 0 else v):
        if inside:
            out = check_int(value, "k", lo=lo, hi=hi)
            assert out == v and type(out) is int
        else:
            with pytest.raises(InvalidInputError, match="^k must be"):
                check_int(value, "k", lo=lo, hi=hi)


@pytest.mark.parametrize("bad", [*BOOLS, 1.0, np.float64(2.0), "1", None, [1]])
def test_integers_reject_bools_floats_and_text(bad):
    assert not is_int(bad)
    for check in (
        lambda v: check_int(v, "k"),
        lambda v: check_nonneg_int(v, "k"),
        lambda v: check_maxdim(v),
        lambda v: check_simplex_dim(v, "k"),
        lambda v: check_dim(v, 2, "k"),
    ):
        with pytest.raises(InvalidInputError, match=r"^(k|maxdim) must be .*, got "):
            check(bad)


def test_small_ranges_are_listed_large_ones_bounded():
    with pytest.raises(InvalidInputError, match=r"^maxdim must be 0, 1 or 2, got 3$"):
        check_maxdim(3)
    with pytest.raises(InvalidInputError, match=r"^maxdim must be an int in 0..3 \(cost\), got 4$"):
        check_maxdim(4, hi=3, hint="cost")
    with pytest.raises(InvalidInputError, match=r"^maxdim must be an int >= 0, got -1$"):
        check_maxdim(-1, hi=None)
    with pytest.raises(InvalidInputError, match=r"^n must be an int in 0..9, got 10$"):
        check_int(10, "n", lo=0, hi=9)
    assert check_maxdim(np.int64(7), hi=None) == 7


def test_int_check_can_raise_out_of_range():
    with pytest.raises(OutOfRangeError, match="t0 must be an int in 3..9"):
        check_int(2, "t0", lo=3, hi=9, error=OutOfRangeError)


@given(st.one_of(st.none(), st.integers(-3, 5)))
def test_positive_int_none_means_default(v):
    if v is None:
        assert check_positive_int(v, "n_threads", 4) == 4
        with pytest.raises(InvalidInputError, match="^n_threads must be an int >= 1, got None"):
            check_positive_int(v, "n_threads", allow_none=False)
    elif v >= 1:
        assert check_positive_int(np.int16(v), "n_threads") == v
    else:
        with pytest.raises(InvalidInputError, match="^n_threads must be None or an int >= 1"):
            check_positive_int(v, "n_threads")


def test_simplex_dim_names_the_simplices():
    assert [check_simplex_dim(k) for k in (1, 2, 3)] == [1, 2, 3]
    for bad in (0, 4, True):
        with pytest.raises(InvalidInputError, match=r"1 \(edges\), 2 \(triangles\) or 3"):
            check_simplex_dim(bad)


def test_dims():
    assert check_dims(None, 2) == [0, 1, 2]
    assert check_dims(1, 2) == [1]
    assert check_dims((2, 0), 2) == [2, 0]
    for bad in ([3], [True], "01", [], 1.0):
        with pytest.raises(InvalidInputError, match="^dims"):
            check_dims(bad, 2)
    with pytest.raises(
        InvalidInputError, match=r"^dim must be a homology dimension in 0..1, got 2$"
    ):
        check_dim(2, 1)


# ----------------------------------------------------------------------- numbers
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_threshold_is_positive_or_inf(x):
    for value in (x, np.float64(x)):
        if float(value) > 0:
            assert check_threshold(value) == float(value)
        else:
            with pytest.raises(
                InvalidInputError, match=r"^threshold must be a positive number or inf"
            ):
                check_threshold(value)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_scale_rules(x):
    def accepted(**kw):
        try:
            check_scale(x, "eps", **kw)
            return True
        except InvalidInputError as exc:
            assert str(exc).startswith("eps must be ")
            return False

    assert accepted() == (x >= 0)
    assert accepted(allow_zero=False) == (x > 0)
    assert accepted(allow_inf=False) == (0 <= x < math.inf)
    assert accepted(allow_zero=False, allow_inf=False) == (0 < x < math.inf)


@pytest.mark.parametrize("bad", NOT_NUMBERS)
def test_numbers_reject_bools_text_arrays_and_nan(bad):
    for check in (
        check_threshold,
        check_scale,
        check_wasserstein_p,
        lambda v: check_number(v, "x"),
    ):
        with pytest.raises(InvalidInputError, match=" must be .*, got "):
            check(bad)


def test_number_accepts_numpy_and_int_scalars_as_float():
    for v in (1, np.int64(1), np.float32(1.0), np.array(1.0)):
        out = check_number(v, "x")
        assert out == 1.0 and type(out) is float


def test_none_only_where_allowed():
    assert check_scale(None, allow_none=True) is None
    assert check_threshold(None, allow_none=True) is None
    with pytest.raises(InvalidInputError, match=r"or None \(adaptive\), got 'x'"):
        check_scale("x", "threshold", allow_inf=False, allow_none=True, hint="adaptive")


def test_units_and_hints_are_in_the_message():
    with pytest.raises(
        InvalidInputError,
        match=r"^eps must be a number >= 0 \(inf allowed; "
        r"a scale in head-distance units\), got -1$",
    ):
        check_scale(-1, unit="head-distance units")
    with pytest.raises(InvalidInputError, match=r"a distance in JS units; usual 0.3"):
        check_threshold(0, unit="JS units", hint="usual 0.3")


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_wasserstein_p(x):
    if 1 <= x < math.inf:
        assert check_wasserstein_p(x) == x
    else:
        with pytest.raises(InvalidInputError, match=r"^p must be a finite number >= 1 "):
            check_wasserstein_p(x)


# ----------------------------------------------------------------------- flags, choices
@pytest.mark.parametrize("v", BOOLS)
def test_bool_accepts_python_and_numpy_bools(v):
    out = check_bool(v, "flag")
    assert out is bool(v)


@pytest.mark.parametrize("bad", [0, 1, np.int64(1), 1.0, "True", None, [True]])
def test_bool_rejects_everything_else(bad):
    with pytest.raises(InvalidInputError, match=r"^flag must be True or False, got "):
        check_bool(bad, "flag")


def test_choice_is_exact_and_lists_the_options():
    assert check_choice("match", "infinite", constants.INFINITE_BARS) == "match"
    for bad in ("Match", " match", None, 1, ("match",)):
        with pytest.raises(
            InvalidInputError,
            match=r"^unknown infinite-bar handling .*; allowed: 'match', 'ignore'$",
        ):
            check_choice(bad, "infinite", constants.INFINITE_BARS, what="infinite-bar handling")


def test_metric():
    for m in constants.METRICS:
        assert check_metric(m) == m
    with pytest.raises(
        InvalidInputError, match=r"^unknown metric 'js'; allowed: 'jensen_shannon', "
    ):
        check_metric("js")


# ----------------------------------------------------------------------- indices
@given(st.integers(1, 12), st.integers(-30, 30))
def test_index_like_python_indexing(size, i):
    if -size <= i < size:
        assert check_index(i, size, "layer") == list(range(size))[i]
        assert check_index(np.int64(i), size, "layer") == list(range(size))[i]
    else:
        with pytest.raises(OutOfRangeError, match=rf"^layer {i} is out of range: .* 0..{size - 1}"):
            check_index(i, size, "layer")


@pytest.mark.parametrize("bad", [True, np.bool_(False), 1.0, "0", None])
def test_index_rejects_non_integers(bad):
    with pytest.raises(OutOfRangeError, match=r"^head must be an integer in 0..11"):
        check_index(bad, 12, "head")


def test_indices_selection_forms():
    assert check_indices(None, 3, "head") == (0, 1, 2)
    assert check_indices(-1, 3, "head") == (2,)
    assert check_indices([0, -1], 3, "head") == (0, 2)
    assert check_indices(slice(1, None), 3, "head") == (1, 2)
    assert check_indices(np.array([2, 0]), 3, "head") == (2, 0)
    with pytest.raises(InvalidInputError, match="distinct"):
        check_indices([0, -3], 3, "head")
    for bad in ([], slice(5, None), "01", 1.5):
        with pytest.raises(OutOfRangeError, match="head"):
            check_indices(bad, 3, "head")


# ----------------------------------------------------------------------- constants
def test_option_tuples_are_their_literal_types():
    pairs = [
        (constants.Metric, constants.METRICS),
        (constants.EngineName, constants.ENGINE_NAMES),
        (constants.DiagramMetric, constants.DIAGRAM_METRICS),
        (constants.InfiniteBars, constants.INFINITE_BARS),
        (constants.MultiBackend, constants.MULTI_BACKENDS),
        (constants.PlotFormat, constants.PLOT_FORMATS),
        (constants.SummaryStat, constants.SUMMARY_STATS),
        (constants.PaperMode, constants.PAPER_MODES),
    ]
    for lit, values in pairs:
        assert get_args(lit) == values and len(set(values)) == len(values)


def test_engine_names_are_the_registry_keys():
    from attntopo.topology import ENGINES

    assert tuple(ENGINES) == constants.ENGINE_NAMES


def test_check_texts_one_rule_for_every_text_list():
    from attntopo._validation import check_texts
    from attntopo.errors import EmptyTextError

    assert check_texts("a b") == ["a b"] and check_texts(("x", "y")) == ["x", "y"]
    for bad, err, msg in [
        (3, InvalidInputError, "got int"),
        ([], EmptyTextError, "no texts"),
        (["ok", 1], InvalidInputError, r"texts\[1\] must be a string"),
        (["ok", "  "], EmptyTextError, r"texts\[1\] is empty"),
    ]:
        with pytest.raises(err, match=msg):
            check_texts(bad)


# ----------------------------------------------------------------- device and dtype
def test_check_device_accepts_what_this_machine_has():
    import torch

    from attntopo._validation import check_device

    assert check_device(None) == "cpu" and check_device("cpu") == "cpu"
    cuda = torch.cuda.is_available() and torch.cuda.device_count() > 0
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    assert check_device("auto") == ("cuda:0" if cuda else "mps" if mps else "cpu")
    if cuda:
        assert check_device("cuda") == "cuda" and check_device("cuda:0") == "cuda:0"
        n = torch.cuda.device_count()
        with pytest.raises(
            DeviceError, match=rf"^device 'cuda:{n}': this machine has {n} CUDA GPU"
        ):
            check_device(f"cuda:{n}")
    else:
        for dev in ("cuda", "cuda:0", "cuda:1"):
            with pytest.raises(
                DeviceError,
                match=rf"^device '{dev}': this machine has no CUDA GPU .*use cpu or auto$",
            ):
                check_device(dev)
    if not mps:
        with pytest.raises(DeviceError, match=r"^device 'mps': this machine has no Apple GPU"):
            check_device("mps")


@pytest.mark.parametrize(
    "bad",
    ["gpu", "CPU", "cuda:", "cuda:-1", "cuda:x", "", " cpu", "tpu", 0, None.__class__, ["cpu"]],
)
def test_check_device_refuses_unknown_devices_in_one_line(bad):
    from attntopo._validation import check_device

    with pytest.raises(
        DeviceError,
        match=r"^unknown --device .*; allowed: cpu, cuda, cuda:N \(a GPU number\), mps or auto$",
    ):
        check_device(bad, "--device")
    assert issubclass(DeviceError, InvalidInputError)  # generic handlers keep working


def test_check_dtype_names_and_what_the_cpu_runs():
    import torch

    from attntopo._validation import DTYPES, check_dtype

    assert check_dtype(None) == "float32"
    for dt in DTYPES:  # this torch runs all three on the CPU: the probe ran them
        assert check_dtype(dt, "cpu") == dt
        x = torch.ones((2, 3), dtype=getattr(torch, dt))
        assert float(torch.softmax(x @ x.T, -1).sum()) == 2.0
    for bad in ("float64", "fp16", "half", "Float32", None.__class__, 16):
        with pytest.raises(
            DeviceError, match=r"^unknown dtype .*; allowed: float32, float16, bfloat16$"
        ):
            check_dtype(bad, "cpu")


def test_a_dtype_the_device_cannot_run_is_refused():
    # the probe runs real operations on the device: a device that cannot compute them (the
    # meta device computes no values) is named with torch's reason, in one line
    from attntopo._validation import _dtype_unsupported, check_dtype

    why = _dtype_unsupported("bfloat16", "meta")
    assert why.startswith("torch ") and "bfloat16 kernels" in why and "\n" not in why
    with pytest.raises(
        DeviceError, match=r"^dtype 'bfloat16' cannot run on meta: torch .*; use float32$"
    ):
        check_dtype("bfloat16", "meta")


def test_check_unicode_names_the_byte_that_is_not_utf8():
    from attntopo._validation import check_texts, check_unicode

    assert check_unicode("naïve café") == "naïve café"
    with pytest.raises(InvalidInputError, match=r"character 2 is '\\udcff' \(byte 0xff, not UTF-8"):
        check_unicode("ab\udcff")
    with pytest.raises(InvalidInputError, match=r"texts\[1\] .* \(a lone surrogate\)"):
        check_texts(["ok", "x\ud800"])
