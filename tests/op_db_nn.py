"""Op-database entries for convolution and pooling (checked against direct loops)
and for the composites (public functions made of registered ops)."""
import numpy as np

import engine as en

from op_db_core import *  # noqa: F401,F403
from op_db_core import _op_dtypes  # noqa: F401


# Convolution and pooling (NHWC), against direct loops over the output positions.
def _tf_pads(size, k, s, padding):
    if padding == "valid":
        return (size - k) // s + 1, 0
    out = -(-size // s)
    return out, max((out - 1) * s + k - size, 0) // 2


def _conv_geometry(hw, khw, strides, padding):
    (oh, pt), (ow, pl) = (_tf_pads(hw[i], khw[i], strides[i], padding) for i in range(2))
    return oh, ow, pt, pl


def _padded(x, hw, khw, strides, oh, ow, pt, pl, fill=0.0):
    hp = max((oh - 1) * strides[0] + khw[0], hw[0] + pt)
    wp = max((ow - 1) * strides[1] + khw[1], hw[1] + pl)
    xp = np.full((x.shape[0], hp, wp, x.shape[3]), fill, dtype=np.result_type(x, fill))
    xp[:, pt:pt + hw[0], pl:pl + hw[1]] = x
    return xp


def _windows_ref(oh, ow, khw, strides):
    for i in range(oh):
        for j in range(ow):
            yield i, j, (slice(None), slice(i * strides[0], i * strides[0] + khw[0]),
                         slice(j * strides[1], j * strides[1] + khw[1]))


def _pairs(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv2d_ref(x, w, stride=1, padding="valid"):
    strides, khw = _pairs(stride), w.shape[:2]
    oh, ow, pt, pl = _conv_geometry(x.shape[1:3], khw, strides, padding)
    xp = _padded(x, x.shape[1:3], khw, strides, oh, ow, pt, pl)
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]), np.result_type(x, w))
    for i, j, win in _windows_ref(oh, ow, khw, strides):
        out[:, i, j] = np.einsum("nhwc,hwco->no", xp[win], w)
    return out


def _conv2d_bp_input_ref(g, w, input_hw, stride=1, padding="valid"):
    strides, khw = _pairs(stride), w.shape[:2]
    oh, ow, pt, pl = _conv_geometry(input_hw, khw, strides, padding)
    dxp = _padded(np.zeros((g.shape[0],) + tuple(input_hw) + (w.shape[2],), np.result_type(g, w)),
                  input_hw, khw, strides, oh, ow, pt, pl)
    for i, j, win in _windows_ref(oh, ow, khw, strides):
        dxp[win] += np.einsum("no,hwco->nhwc", g[:, i, j], w)
    return dxp[:, pt:pt + input_hw[0], pl:pl + input_hw[1]]


def _conv2d_bp_filter_ref(x, g, kernel_hw, stride=1, padding="valid"):
    strides, khw = _pairs(stride), _pairs(kernel_hw)
    oh, ow, pt, pl = _conv_geometry(x.shape[1:3], khw, strides, padding)
    xp = _padded(x, x.shape[1:3], khw, strides, oh, ow, pt, pl)
    dw = np.zeros(khw + (x.shape[3], g.shape[3]), np.result_type(x, g))
    for i, j, win in _windows_ref(oh, ow, khw, strides):
        dw += np.einsum("nhwc,no->hwco", xp[win], g[:, i, j])
    return dw


# (input shape, filter/pool size, stride, padding): odd sizes, strides and "same"
# padding with an uneven split, a 1x1 window, and an empty batch.
CONV_CASES = [((1, 5, 5, 2), (3, 3), 1, "valid"), ((2, 5, 4, 1), (2, 3), (2, 1), "same"),
              ((1, 4, 6, 2), (3, 2), 2, "same"), ((1, 3, 3, 1), (1, 1), 1, "valid"),
              ((0, 4, 4, 2), (2, 2), 2, "valid"), ((2, 5, 6, 2), (2, 3), 1, "same"),
              ((0, 4, 4, 2), (3, 3), 1, "same")]


def _conv_samples(which):
    def gen(dtype, rng):
        for xs, khw, stride, padding in CONV_CASES:
            o = 3
            w = make(rng, khw + (xs[3], o), dtype, -1, 1)
            oh, ow, _, _ = _conv_geometry(xs[1:3], khw, _pairs(stride), padding)
            g = make(rng, (xs[0], oh, ow, o), dtype, -1, 1)
            x = make(rng, xs, dtype, -1, 1)
            params = dict(stride=stride, padding=padding)
            if which == "conv2d":
                yield Sample((x, w), params)
            elif which == "input":
                yield Sample((g, w), dict(params, input_hw=xs[1:3]))
            else:
                yield Sample((x, g), dict(params, kernel_hw=khw))
    return gen


def _pool_kwargs(khw, stride, padding):
    return dict(pool_size=khw, strides=_pairs(stride), padding=padding)


def _pool_argmax(x, pool_size, strides, padding):
    """For every window: (out index, flat position in the padded input of its first max)."""
    oh, ow, pt, pl = _conv_geometry(x.shape[1:3], pool_size, strides, padding)
    xp = _padded(x, x.shape[1:3], pool_size, strides, oh, ow, pt, pl, -np.inf)
    for i, j, win in _windows_ref(oh, ow, pool_size, strides):
        block = xp[win]                                      # (N, KH, KW, C)
        for n in range(x.shape[0]):
            for c in range(x.shape[3]):
                a, b = np.unravel_index(np.argmax(block[n, :, :, c]), pool_size)
                yield (n, i, j, c), (n, i * strides[0] + a - pt, j * strides[1] + b - pl, c)


def _max_pool_ref(x, pool_size=2, strides=None, padding="valid"):
    pool_size = _pairs(pool_size)
    strides = pool_size if strides is None else _pairs(strides)
    oh, ow, pt, pl = _conv_geometry(x.shape[1:3], pool_size, strides, padding)
    xp = _padded(x, x.shape[1:3], pool_size, strides, oh, ow, pt, pl, -np.inf)
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    for i, j, win in _windows_ref(oh, ow, pool_size, strides):
        out[:, i, j] = xp[win].max(axis=(1, 2))
    return out


def _pool_grad_ref(x, g, pool_size, strides, padding):
    dx = np.zeros(x.shape, np.result_type(x, g))
    for out_at, in_at in _pool_argmax(x, pool_size, strides, padding):
        dx[in_at] += g[out_at]
    return dx


def _pool_gather_ref(x, u, pool_size, strides, padding):
    oh, ow, _, _ = _conv_geometry(x.shape[1:3], pool_size, strides, padding)
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), np.result_type(x, u))
    for out_at, in_at in _pool_argmax(x, pool_size, strides, padding):
        out[out_at] = u[in_at]
    return out


def _pool_samples(which):
    def gen(dtype, rng):
        for xs, khw, stride, padding in CONV_CASES + [((1, 4, 4, 1), (2, 2), None, "valid")]:
            x = make_distinct(rng, xs, dtype)
            if which == "pool":
                yield Sample((x,), dict(pool_size=khw, strides=stride, padding=padding))
                continue
            kw = _pool_kwargs(khw, khw if stride is None else stride, padding)
            oh, ow, _, _ = _conv_geometry(xs[1:3], khw, kw["strides"], padding)
            other = make(rng, (xs[0], oh, ow, xs[3]) if which == "grad" else xs, dtype)
            yield Sample((x, other), kw)
    return gen


def _conv_errors(shapes, mismatched, params):
    """Rank 3 instead of 4, bad padding, zero stride, and a second input whose
    channels do not match the first's (shape ``mismatched``)."""
    def errors():
        a, b = (np.ones(s) for s in shapes)
        return [ErrorInput(Sample((np.ones((5, 5, 2)), b), params), en.ShapeError),
                ErrorInput(Sample((a, b), dict(params, padding="full")), en.ShapeError),
                ErrorInput(Sample((a, b), dict(params, stride=0)), en.ShapeError),
                ErrorInput(Sample((a, np.ones(mismatched)), params), en.ShapeError)]
    return errors


def _pool_grad_op(name):
    """A public-style function for a pooling gradient op (they have none of their own)."""
    return lambda x, other, **kw: en.apply(en.REGISTRY[name], x, other, **kw)


add(OpInfo("conv2d", en.conv2d, _conv2d_ref, _conv_samples("conv2d"), _op_dtypes("conv2d"),
           error_inputs=lambda: _conv_errors([(1, 5, 5, 2), (3, 3, 2, 4)], (3, 3, 3, 4), {})() + [
               ErrorInput(Sample((np.ones((1, 2, 2, 1)), np.ones((3, 3, 1, 1)))), en.ShapeError)]))
add(OpInfo("conv2d_backprop_input", en.ops.conv2d_backprop_input, _conv2d_bp_input_ref,
           _conv_samples("input"), _op_dtypes("conv2d_backprop_input"),
           error_inputs=_conv_errors([(1, 3, 3, 4), (3, 3, 2, 4)], (3, 3, 2, 5),
                                     dict(input_hw=(5, 5)))))
add(OpInfo("conv2d_backprop_filter", en.ops.conv2d_backprop_filter, _conv2d_bp_filter_ref,
           _conv_samples("filter"), _op_dtypes("conv2d_backprop_filter"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones((1, 5, 5, 2)), np.ones((1, 2, 2, 4))),
                                 dict(kernel_hw=(3, 3))), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 5, 5, 2)), np.ones((1, 3, 3, 4))),
                                 dict(kernel_hw=(3, 3))), en.ShapeError),
               ErrorInput(Sample((np.ones((5, 5, 2)), np.ones((1, 3, 3, 4))),
                                 dict(kernel_hw=(3, 3))), en.ShapeError)]))
add(OpInfo("max_pool2d", en.max_pool2d, _max_pool_ref, _pool_samples("pool"),
           _op_dtypes("max_pool2d"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones((4, 4, 1)),)), en.ShapeError),
               ErrorInput(Sample((np.ones((1, 1, 4, 1)),), dict(pool_size=2)), en.ShapeError),
               ErrorInput(Sample((np.ones((1, 4, 4, 1)),), dict(padding="full")), en.ShapeError),
               ErrorInput(Sample((np.ones((1, 4, 4, 1)),), dict(pool_size=0)), en.ShapeError)]))
add(OpInfo("max_pool2d_grad", _pool_grad_op("max_pool2d_grad"), _pool_grad_ref,
           _pool_samples("grad"), _op_dtypes("max_pool2d_grad"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones((1, 4, 4, 1)), np.ones((1, 3, 3, 1))),
                                 _pool_kwargs((2, 2), 2, "valid")), en.ShapeError)]))
add(OpInfo("max_pool2d_gather", _pool_grad_op("max_pool2d_gather"), _pool_gather_ref,
           _pool_samples("gather"), _op_dtypes("max_pool2d_gather"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones((1, 4, 4, 1)), np.ones((1, 2, 2, 1))),
                                 _pool_kwargs((2, 2), 2, "valid")), en.ShapeError)]))


# ---- composites: public functions made of registered ops ------------------------------
COMPOSITES = []


def composite(info):
    info.composite = True
    COMPOSITES.append(info)
    return info


def _dot_samples(dtype, rng):
    for sx, sy in [((3,), (3,)), ((0,), (0,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((), ())]:
        yield Sample((make(rng, sx, dtype), make(rng, sy, dtype)))


def _dot_ref(x, y):
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        return np.dot(x, y)
    return np.sum(np.multiply(x, y))


def _outer_samples(dtype, rng):
    for sx, sy in [((3,), (4,)), ((0,), (2,)), ((2, 2), (3,)), ((), (2,))]:
        yield Sample((make(rng, sx, dtype), make(rng, sy, dtype)))


composite(OpInfo("dot", en.dot, _dot_ref, _dot_samples, NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError,
                                                  "matmul")]))
composite(OpInfo("outer", en.outer, lambda x, y: np.outer(x, y), _outer_samples, NUMERIC))


# Neural-network helpers. References are the textbook formulas in float64
# (cast back), on inputs small enough not to overflow; a large-input sample
# checks the engine's stable forms against shifted references.
def _in_float64(fn):
    """Run a reference in float64 and give the result the first input's dtype."""
    def ref(x, *args, **kwargs):
        args = [a.astype(F64) if isinstance(a, np.ndarray) and a.dtype in FLOATS else a
                for a in args]
        return np.asarray(fn(np.asarray(x, dtype=F64), *args, **kwargs)).astype(x.dtype)
    return ref


def _np_logsumexp(x, axis=None, keepdims=False):
    axis = tuple(axis) if isinstance(axis, list) else axis
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _np_log_softmax(x, axis=-1):
    return x - _np_logsumexp(x, axis=axis, keepdims=True)


def _np_cross_entropy(logits, labels, axis=-1):
    logp = _np_log_softmax(logits, axis=axis)
    if labels.dtype.kind in "iu":
        onehot = np.moveaxis(np.eye(logits.shape[axis], dtype=logits.dtype)[labels], -1, axis)
        labels = onehot
    return np.mean(-np.sum(labels * logp, axis=axis))


def _axis_samples(cases):
    def gen(dtype, rng):
        for shape, kwargs in cases:
            yield Sample((make(rng, shape, dtype),), dict(kwargs))
        yield Sample((make(rng, (2, 3), dtype) + dtype.type(500),), dict(cases[0][1]),
                     desc="large inputs")
    return gen


def _mse_samples(dtype, rng):
    for sx, sy in [((4,), (4,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((), ())]:
        yield Sample((make(rng, sx, dtype), make(rng, sy, dtype)))


def _cross_entropy_samples(dtype, rng):
    yield Sample((make(rng, (4, 3), dtype), np.array([0, 2, 1, 2])), desc="int labels")
    yield Sample((make(rng, (2, 3, 5), dtype), rng.integers(0, 3, size=(2, 5))), dict(axis=1))
    probs = rng.dirichlet(np.ones(3), size=4).astype(dtype)
    yield Sample((make(rng, (4, 3), dtype), probs), desc="probability labels")
    yield Sample((make(rng, (3,), dtype), np.array(1)), desc="one example")


_float_only = lambda name, x: [ErrorInput(Sample((x,)), en.DTypeError, name)]  # noqa: E731

composite(OpInfo("softmax", en.softmax, _in_float64(_np_softmax), _axis_samples(
    [((2, 3), dict(axis=-1)), ((4,), {}), ((2, 3, 2), dict(axis=1)), ((0, 3), dict(axis=1))]),
    FLOATS, error_inputs=lambda: _float_only("softmax", np.ones(3, np.int64)) + [
        ErrorInput(Sample((np.ones((2, 3)),), dict(axis=2)), en.ShapeError, "max")]))
composite(OpInfo("log_softmax", en.log_softmax, _in_float64(_np_log_softmax), _axis_samples(
    [((2, 3), dict(axis=0)), ((4,), {}), ((2, 3, 2), dict(axis=-1)), ((0, 3), {})]),
    FLOATS, error_inputs=lambda: _float_only("log_softmax", np.ones(3, np.int32))))
composite(OpInfo("logsumexp", en.logsumexp, _in_float64(_np_logsumexp), _axis_samples(
    [((2, 3), dict(axis=None)), ((2, 3), dict(axis=1, keepdims=True)), ((4,), dict(axis=0)),
     ((2, 3, 2), dict(axis=(0, 2))), ((2, 3, 2), dict(axis=[-1], keepdims=False)), ((), {})]),
    FLOATS, error_inputs=lambda: _float_only("logsumexp", np.array([True]))))
composite(OpInfo("mse", en.mse, lambda p, t: np.mean(np.square(p - t)), _mse_samples, FLOATS,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError,
                                                  "sub")]))
composite(OpInfo("cross_entropy", en.cross_entropy, _in_float64(_np_cross_entropy),
                 _cross_entropy_samples, FLOATS, error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)), np.array([0, 3]))), en.ShapeError,
                                "cross_entropy"),
                     ErrorInput(Sample((np.ones((2, 3)), np.array([0, 1, 2]))), en.ShapeError,
                                "cross_entropy"),
                     ErrorInput(Sample((np.ones((2, 3)), np.ones((2, 2)))), en.ShapeError,
                                "cross_entropy"),
                     ErrorInput(Sample((np.float64(1.0), np.array(0))), en.ShapeError,
                                "cross_entropy"),
                     ErrorInput(Sample((np.ones((2, 3)), np.ones(2, bool))), en.DTypeError,
                                "cross_entropy"),
                     ErrorInput(Sample((np.ones((2, 3), np.int64), np.array([0, 1]))),
                                en.DTypeError, "cross_entropy")]))
