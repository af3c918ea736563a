"""The chunked (Dask) path under ``en.config.numerics = "bitwise"``: sums over the rows
run after the chunks on the gathered rows (``graph/chunked/gather.py``), maxima stay
per chunk, and the results are eager mode's bits."""
import numpy as np
import pytest

import engine as en
from support.bitwise import assert_same_bits, numerics

da = pytest.importorskip("dask.array")


def _f(x, w):
    h = en.tanh(x @ w)
    return (en.sum(h * h), en.mean(h, axis=0), en.max(h, axis=0),
            en.transpose(x) @ h, h * 2.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sums_over_chunked_rows_give_eager_bits(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1000, 30)).astype(dtype)
    w = rng.standard_normal((30, 20)).astype(dtype)
    with numerics("bitwise"):
        want = _f(en.tensor(x), en.tensor(w))
        f = en.function(_f)
        got = f(en.tensor(da.from_array(x, chunks=(128, 30))), en.tensor(w))
        assert_same_bits([np.asarray(t.numpy()) for t in got], want, "chunked")
        concrete = f.get_concrete_function(en.tensor(da.from_array(x, chunks=(128, 30))),
                                           en.tensor(w))
    reduced = {n.op.name for n in concrete.plan.nodes("reduce")}
    assert reduced == {"max"}     # sums, the mean and the product gathered; max per chunk
