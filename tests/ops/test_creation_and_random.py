"""``arange`` / ``eye`` against numpy (dtypes and errors), and the random ops: seeds,
keys and generator streams reproducible, the key op pure, moments and errors."""

import numpy as np
import pytest

import engine as en


# ---- arange / eye ------------------------------------------------------------------------
@pytest.mark.parametrize("args", [(5,), (2, 9), (9, 2, -2), (0.0, 1.0, 0.1), (1, -3, -0.7),
                                  (0.5, 3), (-1.5, 2.2, 0.3), (3, 3), (5, 1)])
def test_arange_matches_numpy(args):
    got, want = en.arange(*args), np.arange(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want)


def test_arange_dtype_and_errors():
    assert en.arange(4, dtype="float32").dtype == np.float32
    np.testing.assert_array_equal(en.arange(4, dtype="float32").numpy(), np.arange(4.0))
    assert en.arange(0.0, 3.0, dtype="int32").numpy().tolist() == [0, 1, 2]
    with pytest.raises(en.ShapeError):
        en.arange(0, 5, 0)
    with pytest.raises(en.ShapeError):
        en.arange(0, float("inf"))


def test_eye():
    np.testing.assert_array_equal(en.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(en.eye(2, 4, dtype="int32", k=1).numpy(), np.eye(2, 4, 1, dtype=np.int32))
    assert en.eye(2, dtype="float32").dtype == np.float32
    with pytest.raises(en.ShapeError):
        en.eye(-1)


# ---- random ---------------------------------------------------------------------------------
def test_random_seeds_are_reproducible():
    a = en.random.normal((3, 4), seed=5)
    b = en.random.normal((3, 4), seed=5)
    c = en.random.normal((3, 4), seed=6)
    assert a.dtype == np.float32 and a.shape == (3, 4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    u = en.random.uniform((1000,), minval=-2.0, maxval=3.0, dtype="float64", seed=1)
    assert u.dtype == np.float64 and -2.0 <= u.numpy().min() and u.numpy().max() < 3.0


def test_random_key_op_is_pure():
    key = en.tensor(np.array([3, 7], dtype=np.int64))
    a = en.random.normal_from_key(key, (5,), dtype="float64")
    b = en.random.normal_from_key(key, (5,), dtype="float64")
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    want = np.random.default_rng([3, 7]).standard_normal(5)
    np.testing.assert_array_equal(a.numpy(), want)
    assert en.random.random_normal_op.random and not en.random.random_normal_op.differentiable


def test_generator_streams():
    g1, g2 = en.random.Generator(11), en.random.Generator(11)
    first = [g1.normal((4,)).numpy() for _ in range(3)]
    second = [g2.normal((4,)).numpy() for _ in range(3)]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])
    assert g1.state.numpy().tolist() == [11, 3] and not g1.state.trainable
    en.random.set_seed(4)
    a = en.random.uniform((3,))
    en.random.set_seed(4)
    np.testing.assert_array_equal(a.numpy(), en.random.uniform((3,)).numpy())


def test_random_moments_and_errors():
    z = en.random.normal((20000,), mean=2.0, stddev=3.0, dtype="float64", seed=0).numpy()
    assert abs(z.mean() - 2.0) < 0.1 and abs(z.std() - 3.0) < 0.1
    with pytest.raises(en.DTypeError):
        en.random.normal((2,), dtype="int32", seed=0)
    with pytest.raises(en.DTypeError):
        en.random.normal_from_key(en.tensor([1.0, 2.0]), (2,))
    with pytest.raises(en.ShapeError):
        en.random.uniform((-1,), seed=0)
