"""The C row reductions (graph/lowering/c/c_rows.py) behind max, min, sum and mean over the
last axis (engine/ops/reduce.py), against numpy: every row length 1..300 and a few long
ones, float32 and float64, NaN, infinities and signed zeros; the sum and mean bit for bit
(numpy's pairwise order), max and min equal (the sign of a zero extreme held with both
signs is numpy's SIMD width's choice, see c_rows); keepdims and out=, eager and graph
mode, and numpy's kernels where the kernels must not run."""
import numpy as np
import pytest

import engine as en
from engine.graph.lowering import hot_swap
from engine.graph.lowering.pipeline import DEFAULT_PIPELINE
from engine.graph.lowering.c import c_compiler, c_rows
from engine.ops import native
from engine.ops import reduce as red
from support.compilers import record_c_builds, unbuilt

pytestmark = pytest.mark.skipif(not c_rows.installed(), reason="no C compiler")

KERNELS = {"max": (c_rows.reduce_last_max, np.max), "min": (c_rows.reduce_last_min, np.min),
           "sum": (c_rows.reduce_last_sum, np.add.reduce)}
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])


def _rows(rng, rows, n, dtype, specials=0):
    """(rows, n) values spread over six decades and both signs (sums lose bits in every
    order but numpy's), ``specials`` of them NaN, +-inf or +-0."""
    x = rng.standard_normal((rows, n)) * 10.0 ** rng.uniform(-3, 3, (rows, n))
    if specials:
        x.flat[rng.integers(0, x.size, specials)] = rng.choice(SPECIALS, specials)
    return x.astype(dtype)


def _same(got, want, kind):
    """Equal values and shapes, NaN where numpy has NaN; a sum's bits (its NaN's sign
    and payload aside: which NaN an inf - inf gives is the compiler's choice of operand
    order, numpy's as much as this kernel's)."""
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fine = ~np.isnan(want)
    np.testing.assert_array_equal(got[fine], want[fine])
    if kind == "sum":
        np.testing.assert_array_equal(np.signbit(got[fine]), np.signbit(want[fine]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_each_row_length_matches_numpy(kind, dtype):
    rng = np.random.default_rng(7)
    kernel, reduce = KERNELS[kind]
    for n in list(range(1, 301)) + [511, 1031, 4099]:
        for rows, specials in ((1, 0), (7, 0), (5, 3)):
            x = _rows(rng, rows, n, dtype, specials)
            with np.errstate(invalid="ignore"):
                _same(kernel(x), reduce(x, axis=-1), kind)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_long_row_sums_as_numpy_does(dtype):
    x = _rows(np.random.default_rng(3), 2, 1 << 20, dtype)
    _same(c_rows.reduce_last_sum(x), np.add.reduce(x, axis=-1), "sum")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values(dtype):
    x = np.array([[np.inf, -np.inf] + [1.0] * 14,             # no NaN: the extremes are infs
                  [1.0] * 15 + [np.nan],                       # a NaN in the tail
                  [np.nan] + [1.0] * 15,                       # a NaN in the first vector
                  [-np.inf] * 16,
                  [-0.0] * 16,                                 # sums to +0.0 as numpy's
                  [3.0e38, 3.0e38] + [-3.0e38] * 14], dtype)   # float32 sums overflow
    with np.errstate(invalid="ignore", over="ignore"):
        for kind, (kernel, reduce) in KERNELS.items():
            _same(kernel(x), reduce(x, axis=-1), kind)
    assert c_rows.reduce_last_max(x)[0] == np.inf and c_rows.reduce_last_min(x)[0] == -np.inf


def test_a_zero_extreme_is_a_zero():
    x = np.where(np.random.default_rng(5).random((64, 37)) < 0.5, -0.0, 0.0)
    x[:, 3] = -1.0
    assert (c_rows.reduce_last_max(x) == 0.0).all()
    assert (c_rows.reduce_last_min(x) == -1.0).all()


def test_out_takes_the_rows_results_in_any_shape_of_that_size():
    x = _rows(np.random.default_rng(1), 12, 40, np.float32)
    kept = np.full((12, 1), 7.0, np.float32)
    assert c_rows.reduce_last_max(x, out=kept) is kept
    np.testing.assert_array_equal(kept, np.max(x, axis=-1, keepdims=True))
    wider = np.zeros((12, 1), np.float64)                      # another dtype: copied in
    assert c_rows.reduce_last_sum(x, out=wider) is wider
    np.testing.assert_array_equal(wider, np.add.reduce(x, axis=-1, keepdims=True))


@pytest.fixture
def counted(monkeypatch):
    """Calls of each native row kernel, by name; ``(name, "out")`` counts those given a
    buffer to write into."""
    calls = dict.fromkeys(c_rows.NAMES, 0)
    for name in c_rows.NAMES:
        table = dict(native.KERNELS[name])
        for dtype, fn in native.KERNELS[name].items():
            def wrapped(x, out=None, fn=fn, name=name):
                calls[name] += 1
                if out is not None:
                    calls[name, "out"] = calls.get((name, "out"), 0) + 1
                return fn(x, out)
            table[dtype] = wrapped
        monkeypatch.setitem(native.KERNELS, name, table)
    return calls


REDUCTIONS = [(en.max, np.max, "reduce_last_max"), (en.min, np.min, "reduce_last_min"),
              (en.sum, np.sum, "reduce_last_sum"), (en.mean, np.mean, "reduce_last_sum")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape,axis", [((32, 4, 32, 32), -1), ((32, 32, 64), 2),
                                        ((2048, 3), (1,)), ((8, 512), None)])
def test_ops_use_the_kernels_eagerly_and_in_graphs(counted, shape, axis, keepdims, dtype):
    x = _rows(np.random.default_rng(2), int(np.prod(shape[:-1])), shape[-1], dtype)
    x = x.reshape(shape)
    t = en.tensor(x)
    for op, numpy_op, name in REDUCTIONS:
        if axis is None:        # all axes: the kernels sum a vector only
            x, t = x.reshape(-1), t.reshape(-1)
            if name != "reduce_last_sum":
                continue
        want = np.asarray(numpy_op(x, axis=axis, keepdims=keepdims))
        before = counted[name]
        traced = en.function(lambda v, op=op: op(v, axis=axis, keepdims=keepdims))
        for got in (op(t, axis=axis, keepdims=keepdims), traced(t), traced(t)):
            _same(got.numpy(), want, "sum")
        assert counted[name] == before + 3, name


def test_a_graph_writes_into_its_buffers_through_out(counted):
    """softmax's max and sum and a layer norm's means, traced: the results equal eager
    mode's, which equal numpy's reductions composed as the ops compose them."""
    x = _rows(np.random.default_rng(4), 32 * 4 * 32, 32, np.float32).reshape(32, 4, 32, 32)

    def f(v):
        s = en.softmax(v, axis=-1)
        return s, en.layer_norm(v * 2.0, (32,)) + s
    # (row_regions would make each softmax and layer norm one kernel of its own.)
    traced = en.function(f, passes=[p for p in DEFAULT_PIPELINE if p != "row_regions"])
    t = en.tensor(x)
    eager = f(t)
    for _ in range(3):
        for got, want in zip(traced(t), eager):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    np.testing.assert_array_equal(eager[0].numpy(), e / np.sum(e, axis=-1, keepdims=True))
    assert counted["reduce_last_max"] >= 4 and counted["reduce_last_sum"] >= 12
    assert counted["reduce_last_max", "out"] >= 3 and counted["reduce_last_sum", "out"] >= 9


def _numpy_kernels_only(counted, x):
    for op, numpy_op, _ in REDUCTIONS:
        got = op(en.tensor(x), axis=-1, keepdims=True).numpy()
        np.testing.assert_array_equal(got, numpy_op(x, axis=-1, keepdims=True))
    assert not any(counted.values()), counted


def test_the_numpy_lowering_and_bitwise_numerics_keep_numpys_kernels(counted):
    x = _rows(np.random.default_rng(6), 256, 32, np.float32)
    for setting, value in (("lowering", "numpy"), ("numerics", "bitwise")):
        before = getattr(en.config, setting)
        try:
            setattr(en.config, setting, value)
            _numpy_kernels_only(counted, x)
        finally:
            setattr(en.config, setting, before)


@pytest.mark.parametrize("x", [
    np.ones((256, 32), np.float16),                               # another dtype
    np.ones((256, 32), np.int32),
    np.arange(8192.0, dtype=np.float32).reshape(32, 256).T,       # strided
    np.ones((8, 16), np.float32),                                 # fewer values than the minimum
    np.ones((4, 4096), np.float32),                               # rows longer than max's
], ids=["float16", "int32", "strided", "small", "long"])
def test_other_inputs_keep_numpys_kernels(counted, x):
    """The ops' kernels themselves (a tensor holds a C-contiguous copy; a graph's value
    may be a strided view)."""
    for op, numpy_op, name in ((red.max_op, np.max, "reduce_last_max"),
                               (red.min_op, np.min, "reduce_last_min"),
                               (red.sum_op, np.sum, "reduce_last_sum"),
                               (red.mean_op, np.mean, "reduce_last_sum")):
        if name == "reduce_last_sum" and x.shape == (4, 4096):
            continue                                               # (sums take long rows)
        want = np.asarray(numpy_op(x, axis=-1))
        got = op.impl(x, axis=-1, keepdims=False)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert not any(counted.values()), counted


def test_an_out_of_another_dtype_keeps_numpys_kernels(counted):
    """numpy reduces in the dtype of ``out`` (a float32 sum into float64 sums in float64)."""
    x = _rows(np.random.default_rng(9), 256, 32, np.float32)
    out = np.empty(256, np.float64)
    red.sum_op.out_impl(x, axis=-1, keepdims=False, out=out)
    np.testing.assert_array_equal(out, np.add.reduce(x, axis=-1, dtype=np.float64))
    assert not any(counted.values()), counted
    same = np.empty((256, 1), np.float32)
    red.max_op.out_impl(x, axis=-1, keepdims=True, out=same)
    np.testing.assert_array_equal(same, np.max(x, axis=-1, keepdims=True))
    assert counted["reduce_last_max"] == 1


def test_other_axes_keep_numpys_kernels(counted):
    x = _rows(np.random.default_rng(8), 64, 32, np.float32).reshape(8, 8, 32)
    for axis in (0, 1, (1, 2), None):
        for op, numpy_op, _ in REDUCTIONS:
            got = op(en.tensor(x), axis=axis).numpy()
            np.testing.assert_allclose(got, numpy_op(x, axis=axis), rtol=1e-6)
    assert not any(counted.values()), counted


def test_the_thresholds_decide(counted):
    x = np.ones((64, 32), np.float32)
    with en.config.cost.override(row_reduce_min_elements=x.size + 1):
        en.max(en.tensor(x), axis=-1)
    assert counted["reduce_last_max"] == 0
    with en.config.cost.override(row_reduce_min_elements=x.size, row_extreme_max_length=31):
        en.max(en.tensor(x), axis=-1)
        en.sum(en.tensor(x), axis=-1)
    assert counted["reduce_last_max"] == 0 and counted["reduce_last_sum"] == 1


def test_the_static_sum_kernel_leaves_rows_to_the_blocked_sum():
    rows = ((256, 32), np.dtype(np.float32))
    assert red._sum_static_kernel([rows], ((256,), rows[1]), {"axis": -1}, False) is None
    other = ((256, 32), np.dtype(np.int64))
    assert red._sum_static_kernel([other], ((256,), other[1]), {"axis": -1}, False) == \
        np.add.reduce


def test_numpy_reduces_while_the_library_builds(monkeypatch, tmp_path):
    """A fresh cache: the first call starts the build on the background compile thread
    (with the C lowering's flags) and numpy's kernel answers; once built, the kernel."""
    flags = record_c_builds(monkeypatch, tmp_path)
    unbuilt(monkeypatch, c_rows.LIBRARY)
    x = _rows(np.random.default_rng(10), 128, 32, np.float32)
    assert c_rows.reduce_last_max(x) is None
    np.testing.assert_array_equal(en.max(en.tensor(x), axis=-1).numpy(), np.max(x, axis=-1))
    hot_swap.wait_for_compiles()
    assert flags == [c_compiler.FLAGS]
    _same(c_rows.reduce_last_max(x), np.max(x, axis=-1), "max")
