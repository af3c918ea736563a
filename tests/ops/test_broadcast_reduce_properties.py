"""Property tests (hypothesis, derandomized): broadcasting and reductions against numpy."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine as en

SETTINGS = settings(derandomize=True, max_examples=100, deadline=None)
BINARY = {"add": (en.add, np.add), "mul": (en.mul, np.multiply),
          "maximum": (en.maximum, np.maximum), "sub": (en.sub, np.subtract)}
REDUCTIONS = {"sum": (en.sum, np.sum), "mean": (en.mean, np.mean), "max": (en.max, np.max),
              "min": (en.min, np.min), "prod": (en.prod, np.prod)}

shape_pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                min_side=0, max_side=3)
seeds = st.integers(0, 2**32 - 1)


def values(rng, shape, dtype="float64"):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int32", "int64"):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    # Distinct-ish floats: ties between maximum's inputs have probability zero.
    return rng.uniform(-2.0, 2.0, size=shape).astype(dtype)


def unbroadcast_np(g, shape):
    """Sum ``g`` down to ``shape``, the numpy way (the reference for gradients)."""
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)


@SETTINGS
@given(shapes=shape_pairs, seed=seeds, name=st.sampled_from(sorted(BINARY)),
       dtype=st.sampled_from(["float64", "float32", "int64", "int32"]))
def test_binary_broadcasting_matches_numpy(shapes, seed, name, dtype):
    (sx, sy), out_shape = shapes
    rng = np.random.default_rng(seed)
    x, y = values(rng, sx, dtype), values(rng, sy, dtype)
    fn, ref = BINARY[name]
    out = fn(en.tensor(x), en.tensor(y))
    expected = ref(x, y)
    assert out.shape == expected.shape == out_shape
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(out), expected)


@SETTINGS
@given(shapes=shape_pairs, seed=seeds, name=st.sampled_from(sorted(BINARY)))
def test_binary_broadcasting_gradients(shapes, seed, name):
    """Gradients have the inputs' shapes and equal the broadcast cotangent summed back."""
    (sx, sy), out_shape = shapes
    rng = np.random.default_rng(seed)
    x, y = values(rng, sx), values(rng, sy)
    c = rng.standard_normal(out_shape)
    fn, _ = BINARY[name]
    gx, gy = en.grad(lambda a, b: en.sum(fn(a, b) * c), argnums=(0, 1))(en.tensor(x), en.tensor(y))
    xb, yb = np.broadcast_to(x, out_shape), np.broadcast_to(y, out_shape)
    dx, dy = {"add": (c, c), "sub": (c, -c), "mul": (c * yb, c * xb),
              "maximum": (c * (xb > yb), c * (yb > xb))}[name]
    assert gx.shape == sx and gy.shape == sy
    np.testing.assert_allclose(np.asarray(gx), unbroadcast_np(dx, sx), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(gy), unbroadcast_np(dy, sy), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, min_side=0, max_side=3),
       seed=seeds)
def test_where_broadcasting(shapes, seed):
    (sc, sx, sy), out_shape = shapes
    rng = np.random.default_rng(seed)
    cond, x, y = values(rng, sc, "bool"), values(rng, sx), values(rng, sy)
    c = rng.standard_normal(out_shape)
    out = en.where(cond, en.tensor(x), en.tensor(y))
    np.testing.assert_array_equal(np.asarray(out), np.where(cond, x, y))
    assert out.shape == out_shape
    gx, gy = en.grad(lambda a, b: en.sum(en.where(cond, a, b) * c), argnums=(0, 1))(
        en.tensor(x), en.tensor(y))
    condb = np.broadcast_to(cond, out_shape)
    assert gx.shape == sx and gy.shape == sy
    np.testing.assert_allclose(np.asarray(gx), unbroadcast_np(np.where(condb, c, 0.0), sx))
    np.testing.assert_allclose(np.asarray(gy), unbroadcast_np(np.where(condb, 0.0, c), sy))


@st.composite
def reduction_cases(draw):
    """A shape, an axis spec (None, int or tuple, possibly negative) and keepdims."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]) if nd else st.just("none"))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-nd, nd - 1))
    else:
        picked = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd))
        axis = tuple(a - nd if draw(st.booleans()) else a for a in picked)
    return shape, axis, draw(st.booleans())


@SETTINGS
@given(case=reduction_cases(), seed=seeds, name=st.sampled_from(sorted(REDUCTIONS)),
       dtype=st.sampled_from(["float64", "float32", "int64", "int32"]))
def test_reductions_match_numpy(case, seed, name, dtype):
    shape, axis, keepdims = case
    x = values(np.random.default_rng(seed), shape, dtype)
    fn, ref = REDUCTIONS[name]
    out = fn(en.tensor(x), axis=axis, keepdims=keepdims)
    expected = np.asarray(ref(x, axis=axis, keepdims=keepdims))
    assert out.shape == expected.shape, (shape, axis, keepdims)
    assert out.dtype == expected.dtype
    if expected.dtype.kind == "f":
        rtol = 1e-6 if expected.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(np.asarray(out), expected, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(np.asarray(out), expected)


@SETTINGS
@given(case=reduction_cases(), seed=seeds)
def test_sum_gradient_is_broadcast_cotangent(case, seed):
    shape, axis, keepdims = case
    rng = np.random.default_rng(seed)
    x = values(rng, shape)
    out_shape = np.sum(x, axis=axis, keepdims=keepdims).shape
    c = rng.standard_normal(out_shape)
    g = en.grad(lambda a: en.sum(en.sum(a, axis=axis, keepdims=keepdims) * c))(en.tensor(x))
    kept = np.sum(x, axis=axis, keepdims=True).shape
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(c.reshape(kept), shape))
