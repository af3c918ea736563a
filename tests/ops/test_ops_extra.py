"""Focused checks for concat/stack/split, indexing, arange/eye, random, the nn
composites, conv2d and max_pool2d: numpy references, finite-difference
gradients (float64, first and second order) and error cases."""
import itertools
import warnings

import numpy as np
import pytest

import engine as en
from support.finite_diff import numeric_grad
from engine.ops.indexing import getitem_op, index_shape, parse_index
from engine.tensor import traced

RNG = np.random.default_rng(0)


# ---- helpers -------------------------------------------------------------------


def check_grads(f, *args, order=1, rtol=1e-5, atol=1e-6):
    """Compare en.grad of ``sum(f(*args) * c)`` with finite differences.

    With ``order=2`` the first-order gradient (dotted with another random
    cotangent) is differentiated again, which exercises each VJP's own VJP.
    """
    args = [en.tensor(np.asarray(a, dtype=np.float64)) for a in args]
    out = f(*args)
    c = en.tensor(RNG.standard_normal(out.shape))

    def scalar(*a):
        return en.sum(f(*a) * c)
    target = scalar
    if order == 2:
        cs = [en.tensor(RNG.standard_normal(a.shape)) for a in args]

        def target(*a):
            gs = en.grad(scalar, argnums=tuple(range(len(a))))(*a)
            return sum(en.sum(g * ci) for g, ci in zip(gs, cs))
    grads = en.grad(target, argnums=tuple(range(len(args))))(*args)
    for i, g in enumerate(grads):
        num = numeric_grad(target, args, i)
        np.testing.assert_allclose(g.numpy(), num, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of argument {i}")


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


# ---- nn composites ----------------------------------------------------------------------------
def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_family_matches_numpy():
    x = RNG.standard_normal((3, 4)) * 5
    for axis in (0, 1, -1):
        np.testing.assert_allclose(en.softmax(x, axis).numpy(), np_softmax(x, axis), rtol=1e-12)
        np.testing.assert_allclose(en.log_softmax(x, axis).numpy(), np.log(np_softmax(x, axis)),
                                   rtol=1e-12, atol=1e-12)
    big = np.array([1000.0, 1000.0, -1000.0])
    np.testing.assert_allclose(en.softmax(big).numpy(), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(float(en.logsumexp(big)), 1000.0 + np.log(2.0))
    for axis, keep in [(None, False), (0, True), ((0, 1), False), (1, False)]:
        want = np.log(np.sum(np.exp(x), axis=axis, keepdims=keep))
        got = en.logsumexp(x, axis=axis, keepdims=keep)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    with np.errstate(divide="ignore"):
        assert float(en.logsumexp(np.array([-np.inf, -np.inf]))) == -np.inf
    assert en.softmax(np.ones(3, np.float32)).dtype == np.float32


def test_losses_match_numpy():
    p, t = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(float(en.mse(p, t)), np.mean((p - t) ** 2))
    labels = np.array([0, 2, 1, 2])
    want = -np.mean(np.log(np_softmax(p))[np.arange(4), labels])
    np.testing.assert_allclose(float(en.cross_entropy(p, labels)), want)
    onehot = np.eye(3)[labels]
    np.testing.assert_allclose(float(en.cross_entropy(p, onehot)), want)
    # the class axis elsewhere, and extra batch dims
    np.testing.assert_allclose(float(en.cross_entropy(p.T, labels, axis=0)), want)
    q = RNG.standard_normal((2, 5, 3))
    lab = RNG.integers(0, 3, size=(2, 5))
    want = -np.mean(np.take_along_axis(np.log(np_softmax(q)), lab[..., None], -1))
    np.testing.assert_allclose(float(en.cross_entropy(q, lab)), want)


def test_loss_errors():
    p = RNG.standard_normal((4, 3))
    with pytest.raises(en.ShapeError):
        en.cross_entropy(p, np.array([0, 1, 2]))
    with pytest.raises(en.ShapeError):
        en.cross_entropy(p, np.array([0, 1, 2, 3]))
    with pytest.raises(en.ShapeError):
        en.cross_entropy(p, np.ones((4, 2)))
    with pytest.raises(en.DTypeError):
        en.softmax(np.array([1, 2]))


def test_nn_gradients():
    x = RNG.standard_normal((3, 4))
    check_grads(lambda x: en.softmax(x, axis=0), x)
    check_grads(lambda x: en.log_softmax(x), x)
    check_grads(lambda x: en.logsumexp(x, axis=1), x)
    check_grads(lambda x: en.softmax(x), x, order=2)
    labels = np.array([0, 3, 1])
    check_grads(lambda x: en.cross_entropy(x, labels), x)
    probs = np_softmax(RNG.standard_normal((3, 4)))
    check_grads(lambda x, p: en.cross_entropy(x, p), x, probs)
    check_grads(lambda x, t: en.mse(x, t), x, probs)


# ---- conv2d / max_pool2d --------------------------------------------------------------------------
def _tf_pads(size, k, s, padding):
    if padding == "valid":
        return (size - k) // s + 1, 0
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2


def ref_conv2d(x, w, stride, padding):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    oh, pt = _tf_pads(h, kh, sh, padding)
    ow, pl = _tf_pads(wd, kw, sw, padding)
    out = np.zeros((n, oh, ow, o))
    for i, j in itertools.product(range(oh), range(ow)):
        for a, b in itertools.product(range(kh), range(kw)):
            r, q = i * sh + a - pt, j * sw + b - pl
            if 0 <= r < h and 0 <= q < wd:
                out[:, i, j] += x[:, r, q] @ w[a, b]
    return out


def ref_max_pool(x, pool, strides, padding):
    n, h, wd, c = x.shape
    oh, pt = _tf_pads(h, pool[0], strides[0], padding)
    ow, pl = _tf_pads(wd, pool[1], strides[1], padding)
    out = np.full((n, oh, ow, c), -np.inf)
    for i, j in itertools.product(range(oh), range(ow)):
        for a, b in itertools.product(range(pool[0]), range(pool[1])):
            r, q = i * strides[0] + a - pt, j * strides[1] + b - pl
            if 0 <= r < h and 0 <= q < wd:
                out[:, i, j] = np.maximum(out[:, i, j], x[:, r, q])
    return out


CONV_CASES = [((2, 5, 6, 3), (3, 3, 3, 4), 1, "valid"), ((2, 5, 6, 3), (3, 3, 3, 4), 1, "same"),
              ((1, 7, 6, 2), (3, 2, 2, 3), 2, "same"), ((1, 7, 8, 2), (2, 3, 2, 1), (2, 3), "valid"),
              ((1, 4, 4, 1), (1, 1, 1, 2), 3, "same"), ((2, 6, 5, 2), (4, 4, 2, 2), 2, "same")]


@pytest.mark.parametrize("xs,ws,stride,padding", CONV_CASES)
def test_conv2d_matches_reference(xs, ws, stride, padding):
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    got = en.conv2d(x, w, stride=stride, padding=padding)
    np.testing.assert_allclose(got.numpy(), ref_conv2d(x, w, stride, padding), rtol=1e-10, atol=1e-12)
    got32 = en.conv2d(x.astype(np.float32), w.astype(np.float32), stride, padding)
    assert got32.dtype == np.float32


@pytest.mark.parametrize("xs,ws,stride,padding", CONV_CASES)
def test_conv2d_gradients(xs, ws, stride, padding):
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    check_grads(lambda x, w: en.conv2d(x, w, stride, padding), x, w)


@pytest.mark.parametrize("xs,ws,stride,padding", CONV_CASES[1:3])
def test_conv2d_second_order(xs, ws, stride, padding):
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    check_grads(lambda x, w: en.conv2d(x, w, stride, padding), x, w, order=2, rtol=1e-4, atol=1e-5)


def test_conv2d_errors():
    with pytest.raises(en.ShapeError, match="channels"):
        en.conv2d(np.ones((1, 4, 4, 3)), np.ones((3, 3, 2, 1)))
    with pytest.raises(en.ShapeError):
        en.conv2d(np.ones((4, 4, 3)), np.ones((3, 3, 3, 1)))
    with pytest.raises(en.ShapeError, match="larger"):
        en.conv2d(np.ones((1, 2, 4, 3)), np.ones((3, 3, 3, 1)))
    with pytest.raises(en.ShapeError, match="padding"):
        en.conv2d(np.ones((1, 4, 4, 3)), np.ones((3, 3, 3, 1)), padding="full")
    with pytest.raises(en.DTypeError):
        en.conv2d(np.ones((1, 4, 4, 3), np.int64), np.ones((3, 3, 3, 1), np.int64))


POOL_CASES = [((2, 4, 6, 3), 2, None, "valid"), ((1, 5, 5, 2), 3, 2, "same"),
              ((1, 5, 7, 2), (2, 3), (1, 2), "valid"), ((1, 6, 5, 1), 3, 1, "same")]


@pytest.mark.parametrize("xs,pool,strides,padding", POOL_CASES)
def test_max_pool_matches_reference_and_gradients(xs, pool, strides, padding):
    x = RNG.standard_normal(xs)
    p = (pool, pool) if isinstance(pool, int) else pool
    s = p if strides is None else ((strides, strides) if isinstance(strides, int) else strides)
    got = en.max_pool2d(x, pool, strides, padding)
    np.testing.assert_array_equal(got.numpy(), ref_max_pool(x, p, s, padding))
    check_grads(lambda x: en.max_pool2d(x, pool, strides, padding), x)
    check_grads(lambda x: en.max_pool2d(x, pool, strides, padding) ** 2.0, x, order=2)


def test_max_pool_ties_go_to_the_first_maximum():
    x = en.tensor(np.ones((1, 2, 2, 1)))
    g = en.grad(lambda x: en.sum(en.max_pool2d(x)))(x)
    np.testing.assert_array_equal(g.numpy()[0, :, :, 0], [[1.0, 0.0], [0.0, 0.0]])


def test_max_pool_errors():
    with pytest.raises(en.ShapeError):
        en.max_pool2d(np.ones((1, 1, 4, 1)), 2)
    with pytest.raises(en.ShapeError):
        en.max_pool2d(np.ones((4, 4, 1)))
    with pytest.raises(en.DTypeError):
        en.max_pool2d(np.ones((1, 4, 4, 1), np.bool_))
    with pytest.raises(en.NotDifferentiableError):      # integers pool, without a gradient
        en.grad(lambda x: en.sum(en.max_pool2d(x)))(np.ones((1, 4, 4, 1), np.int32))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_of_extreme_inputs_is_quiet_and_right(dtype):
    # exp(-x) overflows below -88 (float32) / -709 (float64): the result is 0
    # there, as numpy gives it, with no warning.
    x = np.array([-1e4, -750.0, -100.0, -30.0, 0.0, 30.0, 1e4], dtype)
    want = np.exp(-np.logaddexp(0.0, -x.astype(np.float64)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager = en.sigmoid(x).numpy()
        traced = en.function(lambda t: en.sigmoid(t) * 1.5)(x).numpy() / 1.5
    tiny = np.finfo(dtype).tiny
    for got in (eager, traced):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=tiny)
        assert got[0] == 0.0
