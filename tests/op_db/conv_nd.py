"""Op-database entries for the 1-D and 3-D convolutions and their transposes
(``en.nn.functional.conv1d`` ...: composites over ``conv2d``). The references
are direct numpy sums over the filter taps, for any number of spatial dims,
independent of the engine's way (a conv2d per depth tap)."""
import itertools

import numpy as np

import engine as en

from op_db.core import FLOATS, ErrorInput, OpInfo, Sample, composite, make

F = en.nn.functional


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _span(k, d):
    return d * (k - 1) + 1


def _resolve_pads(padding, sizes, ks, strides, dilations):
    n = len(sizes)
    if padding == "valid":
        return [(0, 0)] * n
    if padding == "same":
        out = []
        for size, k, s, d in zip(sizes, ks, strides, dilations):
            total = max((-(-size // s) - 1) * s + _span(k, d) - size, 0)
            out.append((total // 2, total - total // 2))
        return out
    if isinstance(padding, (tuple, list)) and isinstance(padding[0], (tuple, list)):
        return [tuple(p) for p in padding]
    return [(p, p) for p in _tuple(padding, n)]


def np_conv(x, w, stride=1, padding="valid", dilation=1, groups=1):
    """Channels-last N-d cross-correlation: x (N, *S, C), w (*K, C // groups, O)."""
    n = x.ndim - 2
    ks, strides, dils = w.shape[:n], _tuple(stride, n), _tuple(dilation, n)
    pads = _resolve_pads(padding, x.shape[1:-1], ks, strides, dils)
    xp = np.pad(x.astype(np.float64), [(0, 0)] + list(pads) + [(0, 0)])
    outs = [(xp.shape[1 + i] - _span(ks[i], dils[i])) // strides[i] + 1 for i in range(n)]
    cg, o = w.shape[-2], w.shape[-1]
    og = o // groups
    y = np.zeros((x.shape[0],) + tuple(outs) + (o,))
    for tap in itertools.product(*[range(k) for k in ks]):
        index = (slice(None),) + tuple(slice(t * d, t * d + s * (m - 1) + 1, s)
                                       for t, d, s, m in zip(tap, dils, strides, outs))
        window = xp[index]
        for j in range(groups):
            y[..., j * og:(j + 1) * og] += (window[..., j * cg:(j + 1) * cg]
                                            @ w[tap][:, j * og:(j + 1) * og])
    return y.astype(x.dtype)


def np_conv_transpose(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """Channels-last N-d transposed convolution: x (N, *S, C), w (*K, O // groups, C);
    every input pixel adds its filter, scaled, at ``i * stride + tap * dilation``."""
    n = x.ndim - 2
    ks, strides, dils = w.shape[:n], _tuple(stride, n), _tuple(dilation, n)
    extras = _tuple(output_padding, n)
    sizes = x.shape[1:-1]
    full = [(s_ - 1) * s + _span(k, d) for s_, s, k, d in zip(sizes, strides, ks, dils)]
    if padding == "same":
        outs = [s_ * s for s_, s in zip(sizes, strides)]
        pads = [(max(f - o, 0) // 2, 0) for f, o in zip(full, outs)]
    else:
        pads = _resolve_pads(padding, sizes, ks, strides, dils)
        outs = [f - b - a + e for f, (b, a), e in zip(full, pads, extras)]
    og, c = w.shape[-2], w.shape[-1]
    cg = c // groups
    y = np.zeros((x.shape[0],) + tuple(max(f, p[0] + o) for f, p, o in zip(full, pads, outs))
                 + (og * groups,))
    for tap in itertools.product(*[range(k) for k in ks]):
        index = (slice(None),) + tuple(slice(t * d, t * d + s * (m - 1) + 1, s)
                                       for t, d, s, m in zip(tap, dils, strides, sizes))
        for j in range(groups):
            y[index + (slice(j * og, (j + 1) * og),)] += (
                x[..., j * cg:(j + 1) * cg].astype(np.float64) @ w[tap][:, j * cg:(j + 1) * cg].T)
    crop = (slice(None),) + tuple(slice(b, b + o) for (b, _), o in zip(pads, outs))
    return y[crop].astype(x.dtype)


# (input shape, filter shape, kwargs)
CONV1D_CASES = [((2, 7, 3), (3, 3, 4), {}),
                ((1, 9, 4), (3, 2, 6), dict(stride=2, padding=1, dilation=2, groups=2)),
                ((2, 6, 2), (4, 2, 3), dict(padding="same")),
                ((1, 8, 1), (2, 1, 2), dict(padding=((2, 1),), stride=3))]
CONV3D_CASES = [((1, 4, 5, 5, 2), (3, 3, 3, 2, 3), {}),
                ((2, 5, 4, 6, 4), (2, 3, 2, 2, 4), dict(stride=(2, 1, 2), padding=1, groups=2)),
                ((1, 5, 5, 5, 1), (3, 3, 3, 1, 2), dict(padding="same", dilation=(2, 1, 1))),
                ((1, 6, 5, 4, 2), (2, 2, 2, 2, 2), dict(padding=((1, 0), (0, 1), (1, 1)),
                                                        stride=2))]
TRANSPOSE1D_CASES = [((2, 4, 3), (3, 2, 3), {}),
                     ((1, 5, 4), (3, 3, 4), dict(stride=2, padding=1, output_padding=1,
                                                 groups=2)),
                     ((1, 4, 2), (2, 2, 2), dict(stride=3, dilation=2, padding=2))]
TRANSPOSE3D_CASES = [((1, 2, 3, 3, 2), (2, 2, 2, 3, 2), {}),
                     ((1, 3, 2, 3, 4), (3, 3, 2, 1, 4), dict(stride=2, padding=1,
                                                             output_padding=(1, 0, 1), groups=2)),
                     ((2, 2, 2, 2, 1), (2, 3, 2, 2, 1), dict(stride=(3, 1, 2), dilation=(2, 1, 1),
                                                             padding=(1, 0, 0)))]


def _samples(cases):
    def gen(dtype, rng):
        for xs, ws, kw in cases:
            yield Sample((make(rng, xs, dtype), make(rng, ws, dtype, -1.0, 1.0)), dict(kw))
    return gen


def _errors(name, x, w, transposed=False):
    def errors():
        a, b = np.ones(x), np.ones(w)
        bad_channels = np.ones(x[:-1] + (x[-1] + 1,))
        out = [ErrorInput(Sample((a[0], b)), en.ShapeError, name),
               ErrorInput(Sample((bad_channels, b)), en.ShapeError, name),
               ErrorInput(Sample((a, b), dict(stride=0)), en.ShapeError, name),
               ErrorInput(Sample((a, b), dict(padding="full")), en.ShapeError, name),
               ErrorInput(Sample((a, b), dict(groups=0)), en.ShapeError, name),
               ErrorInput(Sample((a.astype(np.int64), b)), en.DTypeError, name)]
        if transposed:
            out.append(ErrorInput(Sample((a, b), dict(stride=2, output_padding=2)),
                                  en.ShapeError, "output_padding"))
        return out
    return errors


composite(OpInfo("conv1d", F.conv1d, np_conv, _samples(CONV1D_CASES), FLOATS,
                 error_inputs=_errors("conv1d", (1, 5, 2), (3, 2, 4))))
composite(OpInfo("conv3d", F.conv3d, np_conv, _samples(CONV3D_CASES), FLOATS,
                 error_inputs=_errors("conv3d", (1, 3, 3, 3, 2), (2, 2, 2, 2, 4))))
composite(OpInfo("conv_transpose1d", F.conv_transpose1d, np_conv_transpose,
                 _samples(TRANSPOSE1D_CASES), FLOATS,
                 error_inputs=_errors("conv_transpose1d", (1, 5, 2), (3, 4, 2), True)))
composite(OpInfo("conv_transpose3d", F.conv_transpose3d, np_conv_transpose,
                 _samples(TRANSPOSE3D_CASES), FLOATS,
                 error_inputs=_errors("conv_transpose3d", (1, 3, 3, 3, 2), (2, 2, 2, 4, 2),
                                      True)))
