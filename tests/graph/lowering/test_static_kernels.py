"""Kernels picked once from a node's traced shapes and dtypes (the ``static_kernel`` rule):
the generated source calls np.dot or np.matmul itself where the generic matrix-product
kernel would test the same things on every call. Values are checked against numpy."""
import numpy as np
import pytest

import engine as en
from engine.ops import native


def _source(fn, *args, **options):
    f = en.function(fn, **options)
    return f, f.source_for(*args)


def _arrays(*shapes, dtypes=None, seed=0):
    rng = np.random.default_rng(seed)
    dtypes = dtypes or ["float32"] * len(shapes)
    return [rng.uniform(-1, 1, s).astype(d) for s, d in zip(shapes, dtypes)]


def _tanh_of_product(a, b):
    return en.tanh(a @ b)       # the product is an intermediate: a planned buffer


@pytest.mark.parametrize("shapes, kernel", [
    (((32, 64), (64, 64)), "k_np_dot("),           # small: np.dot into the buffer
    (((256, 128), (128, 64)), "k_np_matmul("),     # 2^21 multiply-adds: np.matmul
])
def test_a_planned_2d_product_calls_numpy_directly(shapes, kernel):
    a, b = _arrays(*shapes)
    # (2^21 multiply-adds is also where chunked_products may take a product: not here)
    with en.config.cost.override(chunked_product_min_work=1 << 40):
        f, source = _source(_tanh_of_product, en.tensor(a), en.tensor(b))
    assert kernel in source and "k_matmul" not in source, source
    np.testing.assert_allclose(f(en.tensor(a), en.tensor(b)).numpy(), np.tanh(a @ b),
                               rtol=2e-6, atol=1e-6)


def test_a_returned_2d_product_calls_np_dot():
    a, b = _arrays((5, 3), (3, 4))
    f, source = _source(lambda a, b: a @ b, en.tensor(a), en.tensor(b))
    assert "k_np_dot(" in source, source
    np.testing.assert_allclose(f(en.tensor(a), en.tensor(b)).numpy(), a @ b, rtol=1e-6)


def test_mixed_dtypes_into_a_buffer_take_np_matmul():
    """np.dot writes only into an ``out`` of its operands' own dtype."""
    a, b = _arrays((8, 6), (6, 5), dtypes=["float32", "float64"])
    f, source = _source(_tanh_of_product, en.tensor(a), en.tensor(b))
    assert "k_np_matmul(" in source and "k_np_dot(" not in source, source
    got = f(en.tensor(a), en.tensor(b)).numpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.tanh(a.astype(np.float64) @ b), rtol=1e-12)


def test_batched_and_unknown_shapes_keep_the_generic_kernel():
    a, b = _arrays((3, 8, 6), (3, 6, 5))
    f, source = _source(_tanh_of_product, en.tensor(a), en.tensor(b))
    assert "k_matmul_out(" in source and "k_np_" not in source, source
    np.testing.assert_allclose(f(en.tensor(a), en.tensor(b)).numpy(), np.tanh(a @ b),
                               rtol=2e-6, atol=1e-6)

    spec = [en.TensorSpec((None, 6), "float32"), en.TensorSpec((6, 5), "float32")]
    g = en.function(_tanh_of_product, input_signature=spec)
    for n in (1, 7):
        x, y = _arrays((n, 6), (6, 5), seed=n)
        assert "k_np_" not in g.source_for(en.tensor(x), en.tensor(y))
        np.testing.assert_allclose(g(en.tensor(x), en.tensor(y)).numpy(), np.tanh(x @ y),
                                   rtol=2e-6, atol=1e-6)


def test_products_written_into_a_stack_keep_the_generic_kernel():
    """Parts a stack's placement writes in place are views of its array, not buffers of
    their own (along another axis they would not be C-contiguous): the generic kernel
    tests each call what it writes into."""
    a, b, c = _arrays((4, 6), (6, 5), (6, 5))

    def fn(a, b, c):
        return en.tanh(en.stack([a @ b, a @ c], axis=0))

    args = [en.tensor(v) for v in (a, b, c)]
    f, source = _source(fn, *args)
    assert source.count("k_matmul_out(") == 2 and "_cc0[1]" in source, source
    np.testing.assert_allclose(f(*args).numpy(), np.tanh(np.stack([a @ b, a @ c])),
                               rtol=2e-6, atol=1e-6)


def test_a_sum_numpy_reduces_in_one_call_is_called_directly():
    x, = _arrays((32, 64))
    # (rows the native row kernel would take keep the generic kernel, which picks it at
    # each call: engine/ops/reduce.py; here numpy's reduction is the one)
    with en.config.cost.override(row_reduce_min_elements=x.size + 1):
        f, source = _source(lambda x: en.sum(x * x, axis=1), en.tensor(x))
        assert "k_np_reduce(" in source and "k_sum" not in source, source
        np.testing.assert_allclose(f(en.tensor(x)).numpy(), (x * x).sum(axis=1), rtol=1e-6)
    f, source = _source(lambda x: en.sum(x * x, axis=1), en.tensor(x))
    native_rows = native.kernel("reduce_last_sum", np.float32) is not None   # (a C compiler)
    assert ("k_sum" in source) == native_rows, source
    assert ("k_np_reduce(" in source) != native_rows, source
    np.testing.assert_allclose(f(en.tensor(x)).numpy(), (x * x).sum(axis=1), rtol=1e-6)


def test_sums_the_generic_kernel_does_otherwise_keep_it():
    """A long leading axis is summed in blocks of rows; a full sum into a fresh result
    is a 0-d array; an int32 sum is int64: the generic kernel does each of these."""
    from engine.ops.reduce import BLOCKED_FROM_ROWS
    rows, = _arrays((BLOCKED_FROM_ROWS + 3, 4))
    f, source = _source(lambda x: en.sum(x, axis=0), en.tensor(rows))
    assert "k_sum" in source and "k_np_reduce" not in source, source
    np.testing.assert_allclose(f(en.tensor(rows)).numpy(), rows.astype(np.float64).sum(axis=0),
                               rtol=1e-5)

    x, = _arrays((5, 6))
    f, source = _source(lambda x: en.sum(x), en.tensor(x))
    assert "k_sum" in source and "k_np_reduce" not in source, source
    got = f(en.tensor(x)).numpy()
    assert isinstance(got, np.ndarray) and got.shape == ()
    np.testing.assert_allclose(got, x.astype(np.float64).sum(), rtol=1e-6)

    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    f, source = _source(lambda x: en.sum(x, axis=1), en.tensor(ints))
    assert "k_sum" in source and "k_np_reduce" not in source, source
    got = f(en.tensor(ints)).numpy()
    assert got.dtype == np.int64 and got.tolist() == ints.sum(axis=1).tolist()


def test_a_fresh_sigmoid_grad_writes_its_three_passes_without_tests():
    from engine.ops import sigmoid_grad
    y, g = _arrays((32, 64), (64,), dtypes=["float32", "float64"])
    f, source = _source(lambda y, g: sigmoid_grad(y, g), en.tensor(y), en.tensor(g))
    assert "k_sigmoid_grad_fresh(" in source, source
    got = f(en.tensor(y), en.tensor(g)).numpy()
    assert got.dtype == np.float64 and got.shape == (32, 64)
    np.testing.assert_allclose(got, (1 - y.astype(np.float64)) * y * g, rtol=1e-6)


def test_a_sigmoid_grad_into_a_planned_buffer_keeps_the_generic_kernel():
    """A planned buffer may be an input's that dies there: the generic kernel tests."""
    from engine.ops import sigmoid_grad
    y, g, u = _arrays((8, 6), (8, 6), (6, 5))
    f, source = _source(lambda y, g, u: sigmoid_grad(y, g) @ u,
                        *(en.tensor(v) for v in (y, g, u)))
    assert "k_sigmoid_grad_out(" in source and "fresh" not in source, source
    np.testing.assert_allclose(f(*(en.tensor(v) for v in (y, g, u))).numpy(),
                               ((1 - y) * y * g) @ u, rtol=1e-5, atol=1e-6)
