"""Joining, splitting and indexing beyond the op database: concat / stack / split and
``getitem`` / ``scatter_add`` against numpy, shape rules on random and unknown-dim
indexes, errors, and finite-difference gradients (float64, first and second order)."""

import numpy as np
import pytest

import engine as en
from engine.ops.indexing import getitem_op, index_shape, parse_index
from engine.tensor import traced
from support.finite_diff import grad_checker

RNG = np.random.default_rng(0)
check_grads = grad_checker(RNG)


# ---- concat / stack / split ---------------------------------------------------------
def test_concat_matches_numpy():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 5))
    np.testing.assert_array_equal(en.concat([a, b], axis=1).numpy(), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(en.concat([a, a], axis=-2).numpy(), np.concatenate([a, a], -2))
    out = en.concat([np.ones(2, np.float32), np.ones(3, np.float64)])
    assert out.dtype == np.float64 and out.shape == (5,)


def test_stack_and_split_match_numpy():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    for axis in (0, 1, 2, -1):
        np.testing.assert_array_equal(en.stack([a, b], axis).numpy(), np.stack([a, b], axis))
    x = RNG.standard_normal((6, 4))
    parts = en.split(x, 3)
    assert isinstance(parts, tuple) and len(parts) == 3
    for p, r in zip(parts, np.split(x, 3)):
        np.testing.assert_array_equal(p.numpy(), r)
    parts = en.split(x, [1, -1, 2], axis=1)
    assert [p.shape for p in parts] == [(6, 1), (6, 1), (6, 2)]
    np.testing.assert_array_equal(parts[1].numpy(), x[:, 1:2])


@pytest.mark.parametrize("call", [
    lambda: en.concat([np.ones((2, 3)), np.ones((3, 2))], axis=1),
    lambda: en.concat([np.ones((2, 3)), np.ones(3)]),
    lambda: en.concat([np.ones(()), np.ones(())]),
    lambda: en.concat([]),
    lambda: en.concat([np.ones(3)], axis=1),
    lambda: en.stack([np.ones(3), np.ones(4)]),
    lambda: en.split(np.ones(5), 2),
    lambda: en.split(np.ones(5), [2, 2]),
    lambda: en.split(np.ones(5), [-1, -1]),
    lambda: en.split(np.ones(5), [7, -1]),
])
def test_join_errors(call):
    with pytest.raises(en.ShapeError):
        call()


def test_join_gradients():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 2))
    check_grads(lambda a, b: en.concat([a, b, a], axis=1), a, b)
    check_grads(lambda a, b: en.stack([a, b * 2.0], axis=1), a, a)
    x = RNG.standard_normal((5, 2))
    check_grads(lambda x: en.split(x, [2, 3])[1] * 3.0, x)   # an unused output
    check_grads(lambda x: en.concat(list(en.split(x, [1, 4])[::-1])) ** 2.0, x)
    check_grads(lambda a, b: en.concat([a, b], axis=1) ** 3.0, a, b, order=2)


def test_join_with_unknown_dims():
    from engine.ops.join import concat_op, split_op, stack_op
    f32 = np.dtype("float32")
    assert concat_op.abstract_eval(((None, 3), f32), ((2, 3), f32), axis=0) == ((None, 3), f32)
    assert concat_op.abstract_eval(((None, 3), f32), ((None, 2), f32), axis=1) == ((None, 5), f32)
    assert stack_op.abstract_eval(((None, 3), f32), ((4, 3), f32), axis=0) == ((2, 4, 3), f32)
    assert split_op.abstract_eval(((None, 4), f32), num_or_sizes=2, axis=0) == \
        (((None, 4), f32), ((None, 4), f32))


# ---- indexing ---------------------------------------------------------------------------
X = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)

INDEXES = [
    1, -1, (1, 2), slice(None, None, -1), (slice(1, None), 2), (Ellipsis, 1), (None, 0),
    (0, None, slice(None, None, 2), Ellipsis, None), (slice(-2, None), slice(None, 1, -1)),
    [1, 0, 1], ([0, 1], [2, 0]), (slice(None), [0, 2]), (0, slice(None), [0, 1]),
    (Ellipsis, [1, 1, 3]), (slice(None), [0], Ellipsis, [0], slice(None)), (slice(None), [[0], [2]], [[1, 3]]),
    ([0, 1], None, [1, 2]), (None, [0, 1], [1, 2]), (1, [0, 2], slice(None), 4),
    (np.array([[1, 0]]), slice(None), np.array([3])), (slice(1, 3), np.array([0, 2, -1])),
    X[:, 0, 0, 0] > 50, (slice(None), X[0, :, :, 0] > 7), (Ellipsis, X[0, 0, 0] > 1),
    (np.int64(1), slice(None), [3, 2], np.array(1)), [], ([],),
]


@pytest.mark.parametrize("index", INDEXES, ids=[repr(i)[:40] for i in INDEXES])
def test_getitem_matches_numpy(index):
    got = en.tensor(X)[index]
    want = X[index]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_shape_rule_matches_numpy_on_random_indexes():
    rng = np.random.default_rng(1)
    choices = [lambda d: int(rng.integers(-d, d)), lambda d: slice(None),
               lambda d: slice(int(rng.integers(-d, d)), None, int(rng.choice([-2, -1, 1, 3]))),
               lambda d: rng.integers(-d, d, size=int(rng.integers(1, 3))).tolist(),
               lambda d: None, lambda d: Ellipsis]
    for _ in range(400):
        items, dim, ell = [], 0, False
        while dim < X.ndim and rng.random() < 0.8:
            kind = int(rng.integers(len(choices)))
            if kind == 5 and ell:
                continue
            ell = ell or kind == 5
            item = choices[kind](X.shape[min(dim, X.ndim - 1)])
            items.append(item)
            dim += 0 if kind in (4, 5) else 1
        index = tuple(items)
        try:
            want = X[index]
        except IndexError:
            with pytest.raises(en.ShapeError):
                en.tensor(X)[index]
            continue
        got = en.tensor(X)[index]
        assert got.shape == want.shape, index
        np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_shape_rule_with_unknown_dims():
    f64 = np.dtype("float64")
    spec, arrays = parse_index((None, 3), (slice(None), 1))
    assert getitem_op.abstract_eval(((None, 3), f64), spec=spec) == ((None,), f64)
    spec, arrays = parse_index((None, 3), (slice(1, None), None, [0, 2]))
    avals = [(a.shape, a.dtype) for a in arrays]
    assert index_shape("getitem", ((None, 3), f64), avals, spec) == (None, 1, 2)
    spec, _ = parse_index((4, None), (Ellipsis, 0))
    assert getitem_op.abstract_eval(((4, None), f64), spec=spec) == ((4,), f64)


def test_getitem_index_tensors_are_inputs():
    idx = en.tensor([2, 0, 2])
    x = en.tensor(X[0, 0])
    np.testing.assert_array_equal(x[idx].numpy(), X[0, 0][[2, 0, 2]])
    spec, arrays = parse_index(x.shape, (idx,))
    assert spec == (("array", 0),) and arrays[0] is idx


@pytest.mark.parametrize("index", [5, -6, (0, 5), [0, 7], (slice(None), [-6]), (0, 0, 0, 0, 0)])
def test_getitem_out_of_range(index):
    with pytest.raises(en.ShapeError, match="getitem"):
        en.tensor(X[0, 0])[index] if not isinstance(index, tuple) or len(index) < 5 \
            else en.tensor(X)[index]


def test_getitem_bad_indexes():
    x = en.tensor(X)
    with pytest.raises(en.ShapeError, match="boolean index did not match"):
        x[np.array([True, False, True])]
    with pytest.raises(en.DTypeError):
        x[np.array([0.5])]
    with pytest.raises(en.ShapeError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(en.ShapeError):
        x["a"]


def test_traced_boolean_mask_is_refused():
    mask = traced((2,), np.dtype("bool"), None)
    with pytest.raises(en.TracingError, match="en.where"):
        en.tensor(X[:, 0, 0, 0])[mask]


def test_getitem_gradients_accumulate_repeated_indices():
    x = en.tensor([1.0, 2.0, 3.0])
    g = en.grad(lambda x: en.sum(x[[0, 0, 2, 0]] * en.tensor([1.0, 2.0, 3.0, 4.0])))(x)
    np.testing.assert_array_equal(g.numpy(), [7.0, 0.0, 3.0])
    a = RNG.standard_normal((3, 4))
    for index in [(1, slice(None, None, -2)), ([0, 2, 0], slice(1, 3)), (slice(None), [[0, 3], [3, 3]]),
                  (None, Ellipsis, 2), a > 0.2]:
        check_grads(lambda a: a[index] ** 2.0, a)
    check_grads(lambda a: en.exp(a[[2, 2], 1:] * a[0, :3]), a, order=2)


def test_scatter_add():
    out = en.scatter_add(en.zeros((3, 2)), [0, 0, 2], en.ones((3, 2)))
    want = np.zeros((3, 2))
    np.add.at(want, [0, 0, 2], 1.0)
    np.testing.assert_array_equal(out.numpy(), want)
    out = en.scatter_add(en.zeros((3, 2)), (slice(None), 1), 2.0)
    np.testing.assert_array_equal(out.numpy()[:, 1], [2.0, 2.0, 2.0])
    with pytest.raises(en.ShapeError):
        en.scatter_add(en.zeros((3, 2)), 0, en.ones(3))
    a, u = RNG.standard_normal((4, 3)), RNG.standard_normal((2, 3))
    check_grads(lambda a, u: en.scatter_add(a, [1, 1], u) ** 2.0, a, u)
