"""Float32 sums down the leading axis stay accurate (numpy adds those row by row)."""
import numpy as np
import pytest

import engine as en


@pytest.mark.parametrize("rows", [1023, 5000, 60001])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_and_mean_over_many_rows_in_float32(rows, keepdims):
    rng = np.random.default_rng(rows)
    x = (rng.random((rows, 7)) * 0.2).astype(np.float32)
    exact = x.astype(np.float64).sum(axis=0, keepdims=keepdims)
    t = en.tensor(x)
    for label, fn in [("eager", lambda a: (en.sum(a, axis=0, keepdims=keepdims),
                                          en.mean(a, axis=0, keepdims=keepdims))),
                      ("graph", en.function(lambda a: (en.sum(a, axis=0, keepdims=keepdims),
                                                       en.mean(a, axis=0, keepdims=keepdims))))]:
        total, mean = fn(t)
        assert total.dtype == mean.dtype == np.float32, label
        assert total.shape == exact.shape, label
        # A few float32 ulps, where a row-by-row sum of 60001 rows is off by ~1e-4 relative.
        np.testing.assert_allclose(total.numpy(), exact, rtol=4e-6, err_msg=label)
        np.testing.assert_allclose(mean.numpy(), exact / rows, rtol=4e-6, err_msg=label)


def test_blocked_sum_writes_into_a_given_buffer():
    x = np.full((3000, 4), 0.1, np.float32)
    out = np.empty(4, np.float32)
    got = en.ops.sum_op.out_impl(x, axis=(0,), keepdims=False, out=out)
    assert got is out
    np.testing.assert_allclose(out, 300.0, rtol=4e-6)
