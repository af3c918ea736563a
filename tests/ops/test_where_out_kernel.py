"""``where``'s out= kernel (engine/ops/compare.py): numpy's ``where`` written into ``out``,
also when ``out`` is one of the inputs (graph mode's memory planning reuses buffers)."""
import numpy as np
import pytest

from engine.ops.compare import where_op


@pytest.mark.parametrize("alias", [None, "x", "y", "cond"])
def test_where_out_matches_numpy_whatever_out_aliases(alias):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7))
    y = rng.standard_normal((5, 7))
    cond = (rng.standard_normal((5, 7)) > 0).astype(np.float64)
    want = np.where(cond, x, y)
    out = {"x": x, "y": y, "cond": cond, None: np.empty_like(x)}[alias]
    got = where_op.out_impl(cond, x, y, out=out)
    assert got is out
    np.testing.assert_array_equal(got, want)


def test_where_out_broadcasts_and_casts_like_numpy():
    cond = np.array([True, False, True])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.empty((2, 3), np.float32)
    where_op.out_impl(cond, x, np.float32(-1.0), out=out)
    np.testing.assert_array_equal(out, np.where(cond, x, np.float32(-1.0)))
