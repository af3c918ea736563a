"""Eager mode recycles large freed arrays, but never one that something still refers to."""
import gc
import weakref

import numpy as np
import pytest

import engine as en
from engine.eager import buffer_cache

SHAPE = (600, 600)          # 2.9 MB in float64: large enough to take part


@pytest.fixture(autouse=True)
def fresh_cache():
    buffer_cache.clear()
    yield
    buffer_cache.clear()


@pytest.mark.parametrize("shape", [SHAPE, (200, 200)], ids=["2.9MB", "320KB"])
def test_a_dead_tensor_array_is_reused_by_the_next_op_of_its_size(shape):
    # 320 KB is above the allocator's mapping threshold too: arrays of a few
    # hundred KiB churn pages as much as big ones when they are not recycled.
    x = en.tensor(np.full(shape, 2.0))
    y = x * 3.0
    address = y.numpy().__array_interface__["data"][0]
    del y
    gc.collect()
    assert buffer_cache.cached_bytes() == np.prod(shape) * 8
    z = x + 1.0
    assert z.numpy().__array_interface__["data"][0] == address
    np.testing.assert_array_equal(z.numpy(), np.full(shape, 3.0))
    assert buffer_cache.cached_bytes() == 0


def test_a_recycled_array_is_recycled_again():
    # A buffer that served one op must come back when that op's result dies,
    # or each buffer serves once and a loop allocates afresh every iteration.
    x = en.tensor(np.full(SHAPE, 2.0))
    y = x * 3.0
    address = y.numpy().__array_interface__["data"][0]
    del y
    for k in range(4):
        z = x + float(k)
        assert z.numpy().__array_interface__["data"][0] == address
        np.testing.assert_array_equal(z.numpy(), np.full(SHAPE, 2.0 + k))
        del z
        gc.collect()
        assert buffer_cache.cached_bytes() == 600 * 600 * 8


def test_a_recycled_array_serves_only_its_own_shape_and_dtype():
    x = en.tensor(np.full(SHAPE, 2.0))
    y = x * 3.0
    address = y.numpy().__array_interface__["data"][0]
    del y
    flat = en.reshape(x, (-1,)) * 2.0                 # same bytes, another shape
    single = en.cast(x, "float32") * 2.0              # another dtype
    for other in (flat, single):
        assert other.numpy().__array_interface__["data"][0] != address
    np.testing.assert_array_equal(flat.numpy(), np.full(360000, 4.0))
    np.testing.assert_array_equal(single.numpy(), np.full(SHAPE, 4.0, np.float32))
    z = x + 1.0                                       # the same shape and dtype
    assert z.numpy().__array_interface__["data"][0] == address


def test_arrays_still_viewed_by_the_user_are_never_reused():
    x = en.tensor(np.full(SHAPE, 2.0))
    y = x * 3.0
    kept = y.numpy()            # a view that outlives the tensor
    row = np.asarray(y)[0]
    del y
    for k in range(5):
        x * float(k)            # ops of the same size, results dropped at once
    np.testing.assert_array_equal(kept, np.full(SHAPE, 6.0))
    np.testing.assert_array_equal(row, np.full(600, 6.0))


def test_arrays_shared_with_another_tensor_are_never_reused():
    x = en.tensor(np.full(SHAPE, 2.0))
    y = x * 3.0
    alias = en.identity(y)      # same array, another tensor
    del y
    for k in range(3):
        x * float(k)
    np.testing.assert_array_equal(alias.numpy(), np.full(SHAPE, 6.0))


def test_an_array_a_dead_variable_held_read_only_is_not_reused():
    # assign shares the tensor's array with the variable, which marks it read-only;
    # the variable dying first must not leave that array for the next result.
    v = en.Variable(np.ones(SHAPE))
    x = en.ones(SHAPE) * 3.0
    v.assign(x)
    del v, x
    gc.collect()
    y = en.ones(SHAPE) * 5.0
    np.testing.assert_array_equal(y.numpy(), np.full(SHAPE, 5.0))
    assert buffer_cache.cached_bytes() == 0


def test_small_arrays_and_a_zero_limit_do_not_take_part():
    x = en.tensor(np.ones(10))
    del x
    small = en.ones((10,)) * 2.0
    del small
    assert buffer_cache.cached_bytes() == 0
    previous = en.config.eager_cache_bytes
    en.config.eager_cache_bytes = 0
    try:
        big = en.tensor(np.ones(SHAPE)) * 2.0
        del big
        assert buffer_cache.cached_bytes() == 0
    finally:
        en.config.eager_cache_bytes = previous


def test_gradients_are_unchanged_by_recycling():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(SHAPE)
    w = en.tensor(a)
    loss = lambda w: en.sum(en.sigmoid(w * 2.0) ** 2.0)   # noqa: E731
    first = en.grad(loss)(w).numpy().copy()
    for _ in range(3):                                       # later calls reuse arrays
        again = en.grad(loss)(w).numpy()
        np.testing.assert_array_equal(again, first)
    s = 1.0 / (1.0 + np.exp(-2.0 * a))
    np.testing.assert_allclose(first, 2.0 * s * s * (1.0 - s) * 2.0, rtol=1e-12)


def _step(rows):
    """A few large eager ops on arrays of ``rows`` x 300 float64 (>= 234 KiB each)."""
    x = en.tensor(np.full((rows, 300), 0.5))
    y = en.tanh(x * 2.0) + 1.0
    np.testing.assert_allclose(y.numpy(), np.tanh(np.full((rows, 300), 1.0)) + 1.0)
    return y.numpy().__array_interface__["data"][0]


def test_after_160_shapes_only_the_most_recently_wanted_ones_keep_arrays():
    for rows in range(100, 260):
        _step(rows)
    gc.collect()
    kept = {shape for shape, dtype in buffer_cache._free if buffer_cache._free[(shape, dtype)]}
    recent = {(rows, 300) for rows in range(252, 260)}
    assert kept <= recent and kept
    assert buffer_cache.cached_bytes() <= sum(3 * r * 300 * 8 for r, _ in recent)
    # Before the bound it held every shape: 160 of them, about 90 MB here.


def test_arrays_of_a_shape_that_stops_recurring_are_given_back():
    for _ in range(3):
        _step(400)
    pool = buffer_cache._free[((400, 300), np.dtype(np.float64))]
    refs = [weakref.ref(a) for a in pool]
    assert refs
    del pool
    for rows in range(500, 500 + en.config.eager_cache_shapes):
        _step(rows)                 # eight other shapes wanted since
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)   # freed, not just unlisted
    assert ((400, 300), np.dtype(np.float64)) not in buffer_cache._free


def test_a_loop_over_a_few_shapes_keeps_recycling():
    shapes = [300, 301, 302, 303]
    first = {r: _step(r) for r in shapes}
    for _ in range(3):
        for r in shapes:
            assert _step(r) == first[r]   # the same memory, round after round


def test_the_shape_bound_is_configurable():
    previous = en.config.eager_cache_shapes
    en.config.eager_cache_shapes = 1
    try:
        _step(300)
        _step(301)
        assert ((300, 300), np.dtype(np.float64)) not in buffer_cache._free
        assert buffer_cache._free.get(((301, 300), np.dtype(np.float64)))
    finally:
        en.config.eager_cache_shapes = previous
