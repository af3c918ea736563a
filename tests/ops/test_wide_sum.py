"""Sums over two or more leading axes onto a short trailing block (engine/ops/reduce.py's
rows side by side: a convolution's bias gradient), against float64 numpy, eagerly and in
a graph, with keepdims, out buffers, strided inputs and row counts the width does not
divide."""
import numpy as np
import pytest

import engine as en
from engine.ops import reduce as red

CASES = [((64, 28, 28, 16), (0, 1, 2)), ((64, 14, 14, 32), (0, 1, 2)), ((301, 71, 3), (0, 1)),
         ((40, 30, 7, 5), (0, 1, 2)), ((50, 60, 2, 3), (0, 1))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axes", CASES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_leading_axes_sum_matches_float64(shape, axes, dtype, keepdims):
    assert red._wide(shape, np.dtype(dtype), axes)             # the side-by-side form runs
    x = np.random.default_rng(len(shape)).random(shape).astype(dtype)
    want = x.astype(np.float64).sum(axis=axes, keepdims=keepdims)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for got in (en.sum(en.tensor(x), axis=axes, keepdims=keepdims),
                en.function(lambda t: en.sum(t, axis=axes, keepdims=keepdims))(en.tensor(x)),
                en.mean(en.tensor(x), axis=axes, keepdims=keepdims) *
                float(np.prod([shape[a] for a in axes]))):
        assert got.shape == want.shape and got.dtype == dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=tol)


def test_rows_side_by_side_are_more_accurate_than_row_after_row():
    x = np.full((250, 250, 16), 0.1, np.float32)
    exact = 0.1 * 250 * 250
    wide = red._blocked_sum(x, axis=(0, 1))
    assert np.abs(wide - exact).max() < np.abs(np.add.reduce(x, axis=(0, 1)) - exact).max()
    np.testing.assert_allclose(wide, exact, rtol=1e-5)


def test_strided_input_and_out_buffer():
    base = np.random.default_rng(2).standard_normal((40, 50, 12)).astype(np.float32)
    x = base[:, :, ::2]                                       # not C-contiguous
    out = np.empty(6, np.float32)
    assert red._blocked_sum(x, axis=(0, 1), out=out) is out
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=(0, 1)), rtol=1e-5)


def test_other_sums_keep_numpys_reduce():
    assert not red._wide((64, 28, 28, 16), np.dtype(np.float32), (1, 2))     # not leading
    assert not red._wide((64, 28, 28, 4096), np.dtype(np.float32), (0, 1, 2))  # long rows
    assert not red._wide((4, 4, 3), np.dtype(np.float32), (0, 1))           # small
    assert not red._wide((64, 28, 28, 16), np.dtype(np.int32), (0, 1, 2))   # integers
