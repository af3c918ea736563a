"""The C leading-axes sum (graph/lowering/c/c_colsum.py) behind sum and mean over two or
more leading axes (engine/ops/reduce.py): against each column's exact sum (math.fsum)
over many shapes, float32 and float64, never less accurate than numpy's row after row
sum; NaN and infinities; the same bits on one thread or the C pool's; keepdims and out=,
eager and graph mode; numpy's sum where the kernel must not run."""
import math

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import hot_swap
from engine.graph.lowering.c import c_colsum, c_compiler, c_pool
from engine.ops import native
from engine.ops import reduce as red
from support.compilers import record_c_builds, unbuilt

pytestmark = pytest.mark.skipif(not c_colsum.installed(), reason="no C compiler")

ROWS = [1, 2, 7, 31, 32, 33, 64, 65, 100, 257, 1000, 1024, 1025, 4097, 5000]
WIDTHS = [1, 2, 3, 5, 15, 16, 17, 31, 64, 100, 192, 255, 256, 300]


def _values(rng, rows, t, dtype):
    """(rows, t) values over six decades and both signs (sums lose bits in any order)."""
    x = rng.standard_normal((rows, t)) * 10.0 ** rng.uniform(-3, 3, (rows, t))
    return x.astype(dtype)


def _exact(x):
    """Each column's sum, correctly rounded to float64 (and to x's dtype)."""
    sums = np.array([math.fsum(col) for col in x.T.astype(np.float64).tolist()])
    return sums, sums.astype(x.dtype)


def _check_accuracy(x, got, parts=1):
    """``got`` against the columns' exact sums: a float32 sum rounded once; a float64 one
    within its order's bound (32 rows in order, then halves, then the parts). Returns the errors of its columns and of numpy's row after
    row sum's, in ulps of the exact sums."""
    exact, rounded = _exact(x)
    err = np.abs(got.astype(np.float64) - exact)
    numpy_sum = np.sum(x, axis=0)
    numpy_err = np.abs(numpy_sum.astype(np.float64) - exact)
    magnitude = np.abs(x.astype(np.float64)).sum(axis=0)
    rows, t = x.shape
    if x.dtype == np.float32:
        # the float32 nearest the exact sum, or (the exact sum within float64's error of
        # a tie) its neighbour on the tie
        assert (err <= 0.5 * np.spacing(np.abs(rounded)).astype(np.float64) * (1 + 1e-6)
                + magnitude * 1e-12).all()
        assert err.max() <= max(numpy_err.max(), float(np.spacing(np.abs(rounded).max())))
    else:
        bound = (32 + math.log2(rows) + parts) * 2.0 ** -53 * magnitude
        assert (err <= bound).all()
    ulp = np.spacing(np.abs(rounded)).astype(np.float64)
    return err / ulp, numpy_err / ulp


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_columns_against_their_exact_sums(dtype):
    """Every shape within its bound; over the long columns (1000 rows or more, where
    numpy adds row after row: a single column it sums pairwise), less error than numpy's
    in all (single columns' errors are luck)."""
    rng = np.random.default_rng(7)
    ours, numpys = 0.0, 0.0
    for i, rows in enumerate(ROWS):
        for t in WIDTHS[i % 3::3]:
            x = _values(rng, rows, t, dtype)
            for parts in (1, 2, 3):
                got = c_colsum.sum_leading(x, parts)
                assert got.shape == (t,) and got.dtype == x.dtype
                err, numpy_err = _check_accuracy(x, got, parts)
                if rows >= 1000 and t > 1:
                    ours, numpys = ours + err.sum(), numpys + numpy_err.sum()
    assert ours < numpys


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_cancelling_columns_stay_accurate(dtype):
    """200000 rows of 0.1 (numpy's row after row sum drifts by hundreds of ulps, the
    kernel's stays within a few) and of values that cancel."""
    rng = np.random.default_rng(3)
    x = np.full((200_000, 8), 0.1, dtype)
    x[:, 4:] = _values(rng, 200_000, 4, dtype)
    for parts in (1, 2):
        err, numpy_err = _check_accuracy(x, c_colsum.sum_leading(x, parts), parts)
        assert err[:4].max() <= 4 and numpy_err[:4].min() > 100
        assert err[4:].sum() <= numpy_err[4:].sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_bits_do_not_depend_on_threads(dtype, monkeypatch):
    c_pool.ready()                        # (a fresh cache: the pool's library builds)
    hot_swap.wait_for_compiles()
    assert c_pool.ready()
    rng = np.random.default_rng(5)
    split = []
    real = c_pool.run_parts

    def counted(entry, pointers, bounds):
        code = real(entry, pointers, bounds)
        split.append(code)
        return code
    monkeypatch.setattr(c_pool, "run_parts", counted)
    for rows, t in ((5000, 64), (4097, 17), (100, 300), (3, 16)):
        x = _values(rng, rows, t, dtype)
        for parts in (2, 3):
            alone = c_colsum.sum_leading(x, parts, threads=False)
            np.testing.assert_array_equal(c_colsum.sum_leading(x, parts), alone)
    assert split.count(0) >= 6            # the pool ran the parts (it was not busy)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values(dtype):
    x = np.ones((300, 6), dtype)
    x[7, 0] = np.nan                                     # NaN
    x[3, 1], x[200, 1] = np.inf, -np.inf                 # inf - inf: NaN
    x[10, 2] = np.inf
    x[299, 3] = -np.inf
    x[:, 4] = -0.0                                       # sums to zero
    x[:2, 5] = np.finfo(dtype).max                       # overflows
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.sum(x, axis=0)
        for parts in (1, 2):
            got = c_colsum.sum_leading(x, parts)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_array_equal(got[1:5] == want[1:5], [False, True, True, True])
            assert got[5] == np.inf and got[4] == 0.0


def test_out_takes_the_sums_in_any_shape_of_that_size():
    x = _values(np.random.default_rng(1), 640, 12, np.float32)
    kept = np.full((1, 12), 7.0, np.float32)
    assert c_colsum.sum_leading(x, 1, out=kept) is kept
    np.testing.assert_array_equal(kept[0], c_colsum.sum_leading(x, 1))
    strided = np.zeros((12, 2), np.float32)[:, 0]        # not contiguous: copied in
    assert c_colsum.sum_leading(x, 1, out=strided) is strided
    np.testing.assert_array_equal(strided, kept[0])


@pytest.fixture
def counted(monkeypatch):
    """Calls of the native leading-axes sum, and the part counts it was given."""
    calls = []
    table = dict(native.KERNELS[c_colsum.NAME])
    for dtype, fn in native.KERNELS[c_colsum.NAME].items():
        def wrapped(x, parts, out=None, threads=True, fn=fn):
            calls.append(parts)
            return fn(x, parts, out=out, threads=threads)
        table[dtype] = wrapped
    monkeypatch.setitem(native.KERNELS, c_colsum.NAME, table)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape,axis", [((32, 32, 64), (0, 1)), ((64, 28, 28, 16), (0, 1, 2)),
                                        ((64, 14, 14, 32), (0, 1, 2)), ((19, 70, 5, 3), (0, 1))])
def test_sum_and_mean_use_the_kernel_eagerly_and_in_graphs(counted, shape, axis, keepdims,
                                                           dtype):
    rng = np.random.default_rng(2)
    lead = len(axis)
    x = _values(rng, int(np.prod(shape[:lead])), int(np.prod(shape[lead:])), dtype)
    t = en.tensor(x.reshape(shape))
    exact = _exact(x)[0].reshape(((1,) * lead if keepdims else ()) + shape[lead:])
    for op, scale in ((en.sum, 1), (en.mean, x.shape[0])):
        traced = en.function(lambda v, op=op: op(v, axis=axis, keepdims=keepdims))
        eager = op(t, axis=axis, keepdims=keepdims).numpy()
        assert eager.shape == exact.shape and eager.dtype == dtype
        np.testing.assert_allclose(eager, exact / scale, rtol=1e-6 if dtype == np.float32
                                   else 1e-13, atol=1e-30)
        for _ in range(2):
            np.testing.assert_array_equal(traced(t).numpy(), eager)
    assert len(counted) == 6
    assert counted[0] == red._leading_sum_parts(x.size)


def test_the_part_count_follows_the_shape_and_the_thresholds():
    assert red._leading_sum_parts(32 * 32 * 256) == 1
    assert red._leading_sum_parts(64 * 28 * 28 * 16) == 2
    with en.config.cost.override(colsum_part_elements=1000, colsum_max_parts=3):
        assert red._leading_sum_parts(2500) == 2 and red._leading_sum_parts(10 ** 6) == 3
        assert red._leading_sum_parts(999) == 1


def test_out_eager_kernel_writes_the_buffer(counted):
    x = _values(np.random.default_rng(4), 64 * 28 * 28, 16, np.float32).reshape(64, 28, 28, 16)
    want = red.sum_op.impl(x, axis=(0, 1, 2), keepdims=True)
    out = np.empty((1, 1, 1, 16), np.float32)
    assert red.sum_op.out_impl(x, axis=(0, 1, 2), keepdims=True, out=out) is out
    np.testing.assert_array_equal(out, want)
    assert len(counted) == 2
    wider = np.empty(16, np.float64)             # another dtype: the numpy path's
    red.sum_op.out_impl(x, axis=(0, 1, 2), keepdims=False, out=wider)
    np.testing.assert_allclose(wider, _exact(x.reshape(-1, 16))[0], rtol=1e-5)
    assert len(counted) == 2


@pytest.mark.parametrize("x", [
    np.ones((64, 32, 16), np.float16),                                  # another dtype
    np.arange(64 * 32 * 16, dtype=np.float32).reshape(16, 32, 64).T,    # strided
    np.ones((4, 4, 16), np.float32),                                    # too few values
], ids=["float16", "strided", "small"])
def test_other_inputs_keep_numpys_sum(counted, x):
    got = red.sum_op.impl(x, axis=(0, 1), keepdims=False)
    np.testing.assert_allclose(got, np.sum(x.astype(np.float64), axis=(0, 1)), rtol=1e-3)
    assert not counted


def test_axis_zero_keeps_its_blocked_sum(counted):
    """LeadingSum (graph/passes/scan_sums.py) reproduces the axis-0 sum's bits."""
    x = _values(np.random.default_rng(6), 2048, 16, np.float32)
    s = red.LeadingSum(2048, (16,), x.dtype)
    for i, row in enumerate(x):
        s.add(i, row)
    np.testing.assert_array_equal(red.sum_op.impl(x, axis=0, keepdims=False), s.total())
    assert not counted


def test_the_numpy_lowering_and_bitwise_numerics_keep_numpys_sum(counted):
    x = _values(np.random.default_rng(8), 1024, 64, np.float32).reshape(32, 32, 64)
    for setting, value in (("lowering", "numpy"), ("numerics", "bitwise")):
        before = getattr(en.config, setting)
        try:
            setattr(en.config, setting, value)
            en.sum(en.tensor(x), axis=(0, 1))
        finally:
            setattr(en.config, setting, before)
    assert not counted


def test_numpy_sums_while_the_library_builds(monkeypatch, tmp_path):
    """A fresh cache: the first call starts the build on the background compile thread
    (with the C lowering's flags) and numpy's sum answers; once built, the kernel."""
    flags = record_c_builds(monkeypatch, tmp_path)
    unbuilt(monkeypatch, c_colsum.LIBRARY)
    x = _values(np.random.default_rng(10), 1024, 32, np.float32)
    assert c_colsum.sum_leading(x, 1) is None
    got = en.sum(en.tensor(x.reshape(32, 32, 32)), axis=(0, 1)).numpy()
    np.testing.assert_allclose(got, _exact(x)[0], rtol=1e-5)
    hot_swap.wait_for_compiles()
    assert c_compiler.FLAGS in flags
    _check_accuracy(x, c_colsum.sum_leading(x, 1))
