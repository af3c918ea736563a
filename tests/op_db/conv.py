"""Op-database entries for convolution and pooling (NHWC), checked against direct loops
over the output positions written here: padding ("valid", "same", explicit pads),
strides, dilation, groups, PyTorch's ceil_mode and count_include_pad rules."""
import numpy as np

import engine as en

from op_db.core import (F64, FLOATS, ErrorInput, OpInfo, Sample, add, composite, make,
                        make_distinct, op_dtypes)


def _pairs(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _explicit(padding):
    """An explicit padding argument as ((top, bottom), (left, right)); strings unchanged."""
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return ((padding, padding), (padding, padding))
    if all(isinstance(p, int) for p in padding):
        return tuple((p, p) for p in padding)
    return tuple(tuple(p) for p in padding)


def _dim(size, k, s, padding, d=1, ceil_mode=False):
    """(out, pad before, pad after) along one dim, from TensorFlow's and PyTorch's docs."""
    ek = d * (k - 1) + 1
    if padding == "same":
        out = -(-size // s)
        total = max((out - 1) * s + ek - size, 0)
        return out, total // 2, total - total // 2
    before, after = (0, 0) if padding == "valid" else padding
    length = size + before + after
    if ceil_mode:
        out = -(-(length - ek) // s) + 1
        if (out - 1) * s >= size + before:
            out -= 1
    else:
        out = (length - ek) // s + 1
    return out, before, max(after, (out - 1) * s + ek - size - before)


def _geometry(hw, khw, strides, padding, dilation=(1, 1), ceil_mode=False):
    padding = _explicit(padding)
    per_dim = (padding, padding) if isinstance(padding, str) else padding
    return [_dim(hw[i], khw[i], strides[i], per_dim[i], dilation[i], ceil_mode) for i in range(2)]


def _padded(x, geo, fill=0.0):
    (_, t, b), (_, left, r) = geo
    return np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)), constant_values=fill)


def _windows(geo, khw, strides, dilation):
    """(i, j, index of the window's taps in the padded input) for every output position."""
    (oh, _, _), (ow, _, _) = geo
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * strides[0], i * strides[0] + dilation[0] * (khw[0] - 1) + 1,
                         dilation[0])
            cols = slice(j * strides[1], j * strides[1] + dilation[1] * (khw[1] - 1) + 1,
                         dilation[1])
            yield i, j, (slice(None), rows, cols)


def _groups(c, o, groups):
    cg, og = c // groups, o // groups
    return [(slice(k * cg, (k + 1) * cg), slice(k * og, (k + 1) * og)) for k in range(groups)]


def _conv2d_ref(x, w, stride=1, padding="valid", dilation=1, groups=1):
    strides, dilation, khw = _pairs(stride), _pairs(dilation), w.shape[:2]
    geo = _geometry(x.shape[1:3], khw, strides, padding, dilation)
    xp = _padded(x, geo)
    out = np.zeros((x.shape[0], geo[0][0], geo[1][0], w.shape[3]), np.result_type(x, w))
    for i, j, win in _windows(geo, khw, strides, dilation):
        for cs, os_ in _groups(x.shape[3], w.shape[3], groups):
            out[:, i, j, os_] = np.einsum("nhwc,hwco->no", xp[win][..., cs], w[..., os_])
    return out


def _conv2d_bp_input_ref(g, w, input_hw, stride=1, padding="valid", dilation=1, groups=1):
    strides, dilation, khw = _pairs(stride), _pairs(dilation), w.shape[:2]
    geo = _geometry(input_hw, khw, strides, padding, dilation)
    c = w.shape[2] * groups
    dxp = _padded(np.zeros((g.shape[0],) + tuple(input_hw) + (c,), np.result_type(g, w)), geo)
    for i, j, win in _windows(geo, khw, strides, dilation):
        for cs, os_ in _groups(c, w.shape[3], groups):
            dxp[win][..., cs] += np.einsum("no,hwco->nhwc", g[:, i, j, os_], w[..., os_])
    (_, t, _), (_, left, _) = geo
    return dxp[:, t:t + input_hw[0], left:left + input_hw[1]]


def _conv2d_bp_filter_ref(x, g, kernel_hw, stride=1, padding="valid", dilation=1, groups=1):
    strides, dilation, khw = _pairs(stride), _pairs(dilation), _pairs(kernel_hw)
    geo = _geometry(x.shape[1:3], khw, strides, padding, dilation)
    xp = _padded(x, geo)
    cg = x.shape[3] // groups
    dw = np.zeros(khw + (cg, g.shape[3]), np.result_type(x, g))
    for i, j, win in _windows(geo, khw, strides, dilation):
        for cs, os_ in _groups(x.shape[3], g.shape[3], groups):
            dw[..., os_] += np.einsum("nhwc,no->hwco", xp[win][..., cs], g[:, i, j, os_])
    return dw


def _conv_transpose2d_ref(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """PyTorch's output size, then the input gradient of the convolution of that size."""
    strides, dilation, extra = _pairs(stride), _pairs(dilation), _pairs(output_padding)
    pads = _explicit(padding)
    hw = []
    for i in range(2):
        if pads == "same":
            hw.append(x.shape[1 + i] * strides[i])
            continue
        before, after = (0, 0) if pads == "valid" else pads[i]
        hw.append((x.shape[1 + i] - 1) * strides[i] - before - after
                  + dilation[i] * (w.shape[i] - 1) + 1 + extra[i])
    return _conv2d_bp_input_ref(x, w, tuple(hw), stride, padding, dilation, groups)


# (input shape, filter size, stride, padding, dilation, groups): odd sizes, strides and
# "same" padding with an uneven split, explicit (and uneven) pads, dilations, groups
# (depthwise too), a 1x1 window, and empty batches.
CONV_CASES = [((1, 5, 5, 2), (3, 3), 1, "valid", 1, 1), ((2, 5, 4, 1), (2, 3), (2, 1), "same", 1, 1),
              ((1, 4, 6, 2), (3, 2), 2, "same", 1, 1), ((1, 3, 3, 1), (1, 1), 1, "valid", 1, 1),
              ((0, 4, 4, 2), (2, 2), 2, "valid", 1, 1), ((2, 5, 6, 2), (2, 3), 1, "same", 1, 1),
              ((0, 4, 4, 2), (3, 3), 1, "same", 1, 1),
              ((1, 5, 6, 2), (3, 3), 1, 1, 1, 1), ((2, 5, 5, 2), (2, 3), 2, (1, 2), 1, 1),
              ((1, 6, 5, 4), (3, 2), (2, 1), ((0, 2), (1, 0)), 1, 2),
              ((1, 7, 7, 2), (3, 3), 1, "valid", 2, 1), ((1, 6, 7, 3), (2, 3), (1, 2), 2, (2, 1), 3),
              ((2, 5, 5, 4), (3, 3), 2, "same", 2, 2), ((1, 5, 5, 2), (3, 3), 1, 4, 1, 1)]


def _conv_samples(which):
    def gen(dtype, rng):
        for xs, khw, stride, padding, dilation, groups in CONV_CASES:
            o = 3 * groups
            w = make(rng, khw + (xs[3] // groups, o), dtype, -1, 1)
            geo = _geometry(xs[1:3], khw, _pairs(stride), padding, _pairs(dilation))
            g = make(rng, (xs[0], geo[0][0], geo[1][0], o), dtype, -1, 1)
            x = make(rng, xs, dtype, -1, 1)
            params = dict(stride=stride, padding=padding)
            if (dilation, groups) != (1, 1):
                params.update(dilation=dilation, groups=groups)
            if which == "conv2d":
                yield Sample((x, w), params)
            elif which == "input":
                yield Sample((g, w), dict(params, input_hw=xs[1:3]))
            elif which == "filter":
                yield Sample((x, g), dict(params, kernel_hw=khw))
            elif which == "transpose" and not isinstance(padding, str) \
                    and 3 - 1 - 2 * max(_explicit(padding)[0]) + khw[0] > 0:
                s = _pairs(stride)
                extra = (s[0] - 1, 0)     # the largest output padding, then none
                # The transpose runs from the convolution's output back to its input size.
                yield Sample((make(rng, (xs[0], 3, 4, xs[3]), dtype, -1, 1),
                              make(rng, khw + (o // groups, xs[3]), dtype, -1, 1)),
                             dict(params, output_padding=extra))
        if which == "transpose":
            w = make(rng, (3, 3, 2, 4), dtype, -1, 1)
            yield Sample((make(rng, (1, 3, 4, 4), dtype), w), dict(stride=2, padding="same"))
            yield Sample((make(rng, (1, 3, 4, 4), dtype), w), dict(stride=(2, 1), padding="valid"))
    return gen


# ---- pooling references ---------------------------------------------------------------------
def _pool_args(pool_size, strides, dilation):
    pool_size = _pairs(pool_size)
    return pool_size, pool_size if strides is None else _pairs(strides), _pairs(dilation)


def _never_wins(dtype):
    """The pad of a max pooling reference: below every value of ``dtype``."""
    return np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else -np.inf


def _pool_argmax(x, pool_size, strides, padding, dilation=(1, 1), ceil_mode=False):
    """For every window: (out index, position in the input of its first max)."""
    geo = _geometry(x.shape[1:3], pool_size, strides, padding, dilation, ceil_mode)
    xp = _padded(x, geo, _never_wins(x.dtype))
    (_, t, _), (_, left, _) = geo
    for i, j, win in _windows(geo, pool_size, strides, dilation):
        block = xp[win]                                      # (N, KH, KW, C)
        for n in range(x.shape[0]):
            for c in range(x.shape[3]):
                a, b = np.unravel_index(np.argmax(block[n, :, :, c]), pool_size)
                yield (n, i, j, c), (n, i * strides[0] + a * dilation[0] - t,
                                     j * strides[1] + b * dilation[1] - left, c)


def _pooled_shape(x, pool_size, strides, padding, dilation=(1, 1), ceil_mode=False):
    geo = _geometry(x.shape[1:3], pool_size, strides, padding, dilation, ceil_mode)
    return (x.shape[0], geo[0][0], geo[1][0], x.shape[3])


def _max_pool_ref(x, pool_size=2, strides=None, padding="valid", dilation=1, ceil_mode=False,
                  return_indices=False):
    pool_size, strides, dilation = _pool_args(pool_size, strides, dilation)
    geo = _geometry(x.shape[1:3], pool_size, strides, padding, dilation, ceil_mode)
    xp = _padded(x, geo, _never_wins(x.dtype))
    out = np.zeros(_pooled_shape(x, pool_size, strides, padding, dilation, ceil_mode), x.dtype)
    for i, j, win in _windows(geo, pool_size, strides, dilation):
        out[:, i, j] = xp[win].max(axis=(1, 2))
    if not return_indices:
        return out
    idx = np.zeros(out.shape, np.int64)
    for at, (_, h, w, _) in _pool_argmax(x, pool_size, strides, padding, dilation, ceil_mode):
        idx[at] = h * x.shape[2] + w
    return out, idx


def _pool_grad_ref(x, g, pool_size, strides, padding, dilation=(1, 1), ceil_mode=False):
    dx = np.zeros(x.shape, np.result_type(x, g))
    for out_at, in_at in _pool_argmax(x, pool_size, strides, padding, dilation, ceil_mode):
        dx[in_at] += g[out_at]
    return dx


def _pool_gather_ref(x, u, pool_size, strides, padding, dilation=(1, 1), ceil_mode=False):
    out = np.zeros(_pooled_shape(x, pool_size, strides, padding, dilation, ceil_mode),
                   np.result_type(x, u))
    for out_at, in_at in _pool_argmax(x, pool_size, strides, padding, dilation, ceil_mode):
        out[out_at] = u[in_at]
    return out


def _pool_indices_ref(x, **params):
    return _max_pool_ref(x, return_indices=True, **params)[1]


def _avg_pool_ref(x, pool_size=2, strides=None, padding="valid", ceil_mode=False,
                  count_include_pad=True):
    """Each window's sum over the zero-padded input, divided by its size: the positions
    inside the input, plus the explicit pads (not ceil_mode's) when they count."""
    pool_size, strides, _ = _pool_args(pool_size, strides, 1)
    geo = _geometry(x.shape[1:3], pool_size, strides, padding, (1, 1), ceil_mode)
    xp = _padded(x, geo)
    counted = np.zeros(xp.shape[1:3])
    explicit = _explicit(padding)
    (_, t, _), (_, left, _) = geo
    if count_include_pad and not isinstance(explicit, str):
        (pt, pb), (pl, pr) = explicit
        counted[:pt + x.shape[1] + pb, :pl + x.shape[2] + pr] = 1
    else:
        counted[t:t + x.shape[1], left:left + x.shape[2]] = 1
    out = np.zeros((x.shape[0], geo[0][0], geo[1][0], x.shape[3]), x.dtype)
    for i, j, win in _windows(geo, pool_size, strides, (1, 1)):
        out[:, i, j] = xp[win].sum(axis=(1, 2)) / counted[win[1], win[2]].sum()
    return out


def _avg_pool_grad_ref(g, input_hw, **params):
    """The adjoint of the (linear) average pooling: its transposed matrix applied to g."""
    n, c = g.shape[0], g.shape[3]
    size = int(np.prod(input_hw))
    basis = np.eye(size).reshape(size, 1, *input_hw, 1)
    columns = np.stack([_avg_pool_ref(b, **params)[0, ..., 0] for b in basis])  # (HW, OH, OW)
    dx = np.einsum("kij,nijc->nkc", columns, g.astype(F64)).reshape(n, *input_hw, c)
    return dx.astype(g.dtype)


# (input shape, pool size, strides, padding, dilation, ceil_mode): the TensorFlow
# paddings, explicit pads, dilations and PyTorch's ceil_mode (with a window that would
# start in the padding dropped).
POOL_CASES = [((1, 5, 5, 2), (3, 3), 1, "valid", 1, False),
              ((2, 5, 4, 1), (2, 3), (2, 1), "same", 1, False),
              ((1, 4, 6, 2), (3, 2), 2, "same", 1, False), ((1, 3, 3, 1), (1, 1), 1, "valid", 1, False),
              ((0, 4, 4, 2), (2, 2), 2, "valid", 1, False), ((1, 4, 4, 1), (2, 2), None, "valid", 1, False),
              ((2, 5, 6, 2), (3, 3), 2, 1, 1, True), ((1, 6, 6, 2), (2, 2), 2, 0, 1, True),
              ((1, 8, 7, 2), (2, 2), 3, 1, 1, True), ((1, 7, 9, 2), (3, 2), (2, 3), (1, 1), 1, False),
              ((1, 7, 7, 2), (3, 3), 2, ((1, 0), (0, 1)), 1, True)]
MAX_POOL_CASES = POOL_CASES + [((1, 7, 9, 2), (3, 2), (2, 3), (1, 1), (2, 1), True),
                               ((1, 6, 6, 1), (2, 2), 1, "valid", 2, False)]


def _pool_kwargs(pool_size, stride, padding, dilation, ceil_mode):
    kw = dict(pool_size=pool_size, strides=stride, padding=padding)
    if dilation != 1:
        kw["dilation"] = dilation
    if ceil_mode:
        kw["ceil_mode"] = True
    return kw


def _op_kwargs(kw):
    """The op's own params (what en.max_pool2d passes on) for the gradient ops."""
    out = dict(kw)
    out["strides"] = out["pool_size"] if out["strides"] is None else _pairs(out["strides"])
    out["padding"] = _explicit(out["padding"])
    out["pool_size"] = _pairs(out["pool_size"])
    if "dilation" in out:
        out["dilation"] = _pairs(out["dilation"])
    return out


def _pool_samples(which):
    def gen(dtype, rng):
        for xs, khw, stride, padding, dilation, ceil_mode in MAX_POOL_CASES:
            x = make_distinct(rng, xs, dtype)
            kw = _pool_kwargs(khw, stride, padding, dilation, ceil_mode)
            if which in ("pool", "indices"):
                yield Sample((x,), kw)
                continue
            kw = _op_kwargs(kw)
            shape = _pooled_shape(x, kw["pool_size"], kw["strides"], kw["padding"],
                                  kw.get("dilation", (1, 1)), ceil_mode)
            other = make(rng, shape if which == "grad" else xs, dtype)
            yield Sample((x, other), kw)
        if which == "pool":
            yield Sample((make_distinct(rng, (1, 5, 4, 2), dtype),),
                         dict(pool_size=2, padding=1, return_indices=True), desc="indices")
    return gen


def _avg_samples(which):
    def gen(dtype, rng):
        for xs, khw, stride, padding, _, ceil_mode in POOL_CASES:
            for include in (True, False):
                if not include and isinstance(padding, str):
                    continue
                kw = _pool_kwargs(khw, stride, padding, 1, ceil_mode)
                kw["count_include_pad"] = include
                x = make(rng, xs, dtype)
                if which == "pool":
                    yield Sample((x,), kw)
                    continue
                kw = dict(_op_kwargs(kw), ceil_mode=ceil_mode)
                shape = _pooled_shape(x, kw["pool_size"], kw["strides"], kw["padding"],
                                      (1, 1), ceil_mode)
                yield Sample((make(rng, shape, dtype),), dict(kw, input_hw=xs[1:3]))
    return gen


# ---- errors ------------------------------------------------------------------------------------------
def _conv_errors(shapes, mismatched, params):
    """Rank 3 instead of 4, bad padding, zero stride, negative pads, zero dilation, and a
    second input whose channels do not match the first's (shape ``mismatched``)."""
    def errors():
        a, b = (np.ones(s) for s in shapes)
        return [ErrorInput(Sample((np.ones((5, 5, 2)), b), params), en.ShapeError),
                ErrorInput(Sample((a, b), dict(params, padding="full")), en.ShapeError),
                ErrorInput(Sample((a, b), dict(params, stride=0)), en.ShapeError),
                ErrorInput(Sample((a, b), dict(params, padding=-1)), en.ShapeError),
                ErrorInput(Sample((a, b), dict(params, padding=(1, 2, 3))), en.ShapeError),
                ErrorInput(Sample((a, b), dict(params, dilation=0)), en.ShapeError),
                ErrorInput(Sample((a, b), dict(params, groups=0)), en.ShapeError),
                ErrorInput(Sample((a, np.ones(mismatched)), params), en.ShapeError)]
    return errors


def _pool_grad_op(name):
    """A public-style function for a pooling gradient op (they have none of their own)."""
    return lambda *args, **kw: en.apply(en.REGISTRY[name], *args, **kw)


add(OpInfo("conv2d", en.conv2d, _conv2d_ref, _conv_samples("conv2d"), op_dtypes("conv2d"),
           error_inputs=lambda: _conv_errors([(1, 5, 5, 2), (3, 3, 2, 4)], (3, 3, 3, 4), {})() + [
               ErrorInput(Sample((np.ones((1, 2, 2, 1)), np.ones((3, 3, 1, 1)))), en.ShapeError),
               ErrorInput(Sample((np.ones((1, 5, 5, 4)), np.ones((3, 3, 2, 3))), dict(groups=2)),
                          en.ShapeError, "divisible"),
               ErrorInput(Sample((np.ones((1, 5, 5, 4)), np.ones((3, 3, 2, 4))), dict(groups=3)),
                          en.ShapeError, "groups"),
               ErrorInput(Sample((np.ones((1, 5, 5, 1)), np.ones((3, 3, 1, 1))), dict(dilation=3)),
                          en.ShapeError, "window 7")]))
add(OpInfo("conv2d_backprop_input", en.ops.conv2d_backprop_input, _conv2d_bp_input_ref,
           _conv_samples("input"), op_dtypes("conv2d_backprop_input"),
           error_inputs=_conv_errors([(1, 3, 3, 4), (3, 3, 2, 4)], (3, 3, 2, 5),
                                     dict(input_hw=(5, 5)))))
add(OpInfo("conv2d_backprop_filter", en.ops.conv2d_backprop_filter, _conv2d_bp_filter_ref,
           _conv_samples("filter"), op_dtypes("conv2d_backprop_filter"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones((1, 5, 5, 2)), np.ones((1, 2, 2, 4))),
                                 dict(kernel_hw=(3, 3))), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 5, 5, 2)), np.ones((1, 3, 3, 4))),
                                 dict(kernel_hw=(3, 3))), en.ShapeError),
               ErrorInput(Sample((np.ones((5, 5, 2)), np.ones((1, 3, 3, 4))),
                                 dict(kernel_hw=(3, 3))), en.ShapeError),
               ErrorInput(Sample((np.ones((1, 5, 5, 3)), np.ones((1, 3, 3, 4))),
                                 dict(kernel_hw=(3, 3), groups=2)), en.ShapeError)]))
composite(OpInfo("conv_transpose2d", en.conv_transpose2d, _conv_transpose2d_ref,
                 _conv_samples("transpose"), FLOATS, error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((1, 3, 3, 2)), np.ones((3, 3, 4, 2))),
                                       dict(stride=2, output_padding=2)), en.ShapeError,
                                "output_padding"),
                     ErrorInput(Sample((np.ones((1, 3, 3, 2)), np.ones((3, 3, 4, 2))),
                                       dict(stride=2, padding="same", output_padding=1)),
                                en.ShapeError, "output_padding"),
                     ErrorInput(Sample((np.ones((3, 3, 2)), np.ones((3, 3, 4, 2)))), en.ShapeError,
                                "conv_transpose2d"),
                     ErrorInput(Sample((np.ones((1, 3, 3, 3)), np.ones((3, 3, 4, 2)))),
                                en.ShapeError, "conv2d_backprop_input"),
                     ErrorInput(Sample((np.ones((1, 1, 1, 2)), np.ones((1, 1, 4, 2))),
                                       dict(padding=1)), en.ShapeError, "conv_transpose2d")]))


def _pool_errors(name):
    return lambda: [
        ErrorInput(Sample((np.ones((4, 4, 1)),)), en.ShapeError, name),
        ErrorInput(Sample((np.ones((1, 1, 4, 1)),), dict(pool_size=2)), en.ShapeError, name),
        ErrorInput(Sample((np.ones((1, 4, 4, 1)),), dict(padding="full")), en.ShapeError, name),
        ErrorInput(Sample((np.ones((1, 4, 4, 1)),), dict(pool_size=0)), en.ShapeError, name),
        ErrorInput(Sample((np.ones((1, 4, 4, 1)),), dict(pool_size=2, padding=2)), en.ShapeError,
                   "half the window"),
        ErrorInput(Sample((np.ones((1, 4, 4, 1)),), dict(ceil_mode="yes")), en.DomainError, name)]


add(OpInfo("max_pool2d", en.max_pool2d, _max_pool_ref, _pool_samples("pool"),
           op_dtypes("max_pool2d"), error_inputs=_pool_errors("max_pool2d")))
add(OpInfo("max_pool2d_indices", _pool_grad_op("max_pool2d_indices"), _pool_indices_ref,
           lambda dtype, rng: (Sample(s.args, _op_kwargs(s.kwargs))
                               for s in _pool_samples("indices")(dtype, rng)),
           op_dtypes("max_pool2d_indices"), supports_grad=False, error_inputs=lambda: [
               ErrorInput(Sample((np.ones((4, 4, 1)),), _op_kwargs(
                   dict(pool_size=2, strides=None, padding="valid"))), en.ShapeError)]))
add(OpInfo("max_pool2d_grad", _pool_grad_op("max_pool2d_grad"), _pool_grad_ref,
           _pool_samples("grad"), op_dtypes("max_pool2d_grad"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones((1, 4, 4, 1)), np.ones((1, 3, 3, 1))),
                                 _op_kwargs(dict(pool_size=2, strides=2, padding="valid"))),
                          en.ShapeError)]))
add(OpInfo("max_pool2d_gather", _pool_grad_op("max_pool2d_gather"), _pool_gather_ref,
           _pool_samples("gather"), op_dtypes("max_pool2d_gather"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones((1, 4, 4, 1)), np.ones((1, 2, 2, 1))),
                                 _op_kwargs(dict(pool_size=2, strides=2, padding="valid"))),
                          en.ShapeError)]))
add(OpInfo("avg_pool2d", en.avg_pool2d, _avg_pool_ref, _avg_samples("pool"),
           op_dtypes("avg_pool2d"), error_inputs=_pool_errors("avg_pool2d")))
add(OpInfo("avg_pool2d_grad", _pool_grad_op("avg_pool2d_grad"), _avg_pool_grad_ref,
           _avg_samples("grad"), op_dtypes("avg_pool2d_grad"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones((1, 3, 3, 1)),), dict(
                   _op_kwargs(dict(pool_size=2, strides=2, padding="valid")), ceil_mode=False,
                   count_include_pad=True, input_hw=(4, 4))), en.ShapeError)]))
