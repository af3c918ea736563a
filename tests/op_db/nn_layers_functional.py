"""Op-database entries for the stateless forms behind the PyTorch-named layers
(``engine/nn/norm_functional.py``, ``pool_functional.py``, ``loss_functions.py``):
group, instance and RMS normalization, adaptive pooling and the regression /
divergence losses, against numpy formulas written here from PyTorch's
definitions (adaptive windows by explicit loops over the output positions)."""
import itertools
import math

import numpy as np

import engine as en

from op_db.core import (F64, FLOATS, I64, ErrorInput, OpInfo, Sample, composite, make,
                        make_distinct)

F = en.nn.functional


def _f64(fn):
    """A reference computed in float64 and returned in the first input's dtype."""
    def ref(x, *args, **kwargs):
        args = [a.astype(F64) if isinstance(a, np.ndarray) and a.dtype in FLOATS else a
                for a in args]
        return np.asarray(fn(np.asarray(x, F64), *args, **kwargs)).astype(np.asarray(x).dtype)
    return ref


def _affine(y, weight, bias):
    return y * (1.0 if weight is None else weight) + (0.0 if bias is None else bias)


# ---- normalization ----------------------------------------------------------------------------
def _np_group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    out = np.empty_like(x)
    cg = x.shape[-1] // num_groups
    for n in range(x.shape[0]):
        for g in range(num_groups):
            block = x[n, ..., g * cg:(g + 1) * cg]
            out[n, ..., g * cg:(g + 1) * cg] = (block - block.mean()) / np.sqrt(block.var() + eps)
    return _affine(out, weight, bias)


def _np_instance_norm(x, weight=None, bias=None, eps=1e-5):
    return _np_group_norm(x, x.shape[-1], weight, bias, eps)


def _np_rms_norm(x, normalized_shape, weight=None, eps=None):
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    eps = np.finfo(np.float64).eps if eps is None else eps
    ms = np.mean(x * x, axis=tuple(range(x.ndim - k, x.ndim)), keepdims=True)
    return _affine(x / np.sqrt(ms + eps), weight, None)


def _group_norm_samples(dtype, rng):
    yield Sample((make(rng, (2, 5, 4), dtype), 2))
    yield Sample((make(rng, (3, 2, 3, 6), dtype), 3, make(rng, (6,), dtype),
                  make(rng, (6,), dtype)), dict(eps=0.01), desc="NHWC, affine")
    yield Sample((make(rng, (2, 4), dtype), 1), desc="no spatial axes")
    yield Sample((make(rng, (1, 3, 4), dtype), 4), desc="one channel a group")


def _instance_norm_samples(dtype, rng):
    yield Sample((make(rng, (2, 5, 3), dtype),))
    yield Sample((make(rng, (2, 3, 4, 2), dtype), make(rng, (2,), dtype), make(rng, (2,), dtype)),
                 desc="NHWC, affine")


def _rms_norm_samples(dtype, rng):
    yield Sample((make(rng, (3, 4), dtype), 4), dict(eps=1e-6))
    yield Sample((make(rng, (2, 3, 4), dtype), (3, 4), make(rng, (3, 4), dtype)),
                 dict(eps=1e-5), desc="two axes, weight")


composite(OpInfo("group_norm", F.group_norm, _f64(_np_group_norm), _group_norm_samples, FLOATS,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3, 4)), 3)), en.ShapeError, "group_norm"),
                     ErrorInput(Sample((np.ones((2, 4)), 2, np.ones(3))), en.ShapeError,
                                "group_norm"),
                     ErrorInput(Sample((np.ones(4), 2)), en.ShapeError, "group_norm"),
                     ErrorInput(Sample((np.ones((2, 4), I64), 2)), en.DTypeError, "group_norm")]))
composite(OpInfo("instance_norm", F.instance_norm, _f64(_np_instance_norm),
                 _instance_norm_samples, FLOATS, error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)),)), en.ShapeError, "instance_norm"),
                     ErrorInput(Sample((np.ones((2, 3, 4)), np.ones(3))), en.ShapeError,
                                "instance_norm")]))
composite(OpInfo("rms_norm", F.rms_norm, _f64(_np_rms_norm), _rms_norm_samples, FLOATS,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)), 4)), en.ShapeError, "rms_norm"),
                     ErrorInput(Sample((np.ones((2, 3)), 3, np.ones(2))), en.ShapeError,
                                "rms_norm"),
                     ErrorInput(Sample((np.ones(3, I64), 3)), en.DTypeError, "rms_norm")]))


# ---- adaptive pooling --------------------------------------------------------------------------
def _np_adaptive(reduce):
    def ref(x, output_size):
        spatial = x.shape[1:-1]
        sizes = output_size if isinstance(output_size, tuple) else (output_size,) * len(spatial)
        sizes = tuple(n if s is None else s for s, n in zip(sizes, spatial))
        out = np.empty((x.shape[0],) + sizes + (x.shape[-1],), x.dtype)
        for index in itertools.product(*[range(s) for s in sizes]):
            window = tuple(slice(math.floor(i * n / s), math.ceil((i + 1) * n / s))
                           for i, n, s in zip(index, spatial, sizes))
            out[(slice(None),) + index] = reduce(x[(slice(None),) + window],
                                                 axis=tuple(range(1, len(spatial) + 1)))
        return out
    return ref


def _adaptive_samples(rank):
    cases = {1: [((2, 7, 3), 3), ((1, 8, 2), 4), ((2, 5, 1), 5), ((1, 3, 2), 5)],
             2: [((2, 7, 6, 3), (3, 4)), ((1, 8, 8, 2), 2), ((1, 5, 9, 1), (None, 4)),
                 ((2, 4, 4, 2), 1)]}[rank]

    def gen(dtype, rng):
        for shape, out in cases:
            yield Sample((make_distinct(rng, shape, dtype), out))
    return gen


def _adaptive_errors(name, rank):
    return lambda: [
        ErrorInput(Sample((np.ones((2,) * (rank + 1)), 2)), en.ShapeError, name),
        ErrorInput(Sample((np.ones((2,) * (rank + 2)), 0)), en.ShapeError, name),
        ErrorInput(Sample((np.ones((2,) * (rank + 2)), (2,) * (rank + 1))), en.ShapeError, name),
        ErrorInput(Sample((np.ones((2,) * (rank + 2), I64), 1)), en.DTypeError, name)]


for _name, _rank, _reduce in [("adaptive_avg_pool1d", 1, np.mean),
                              ("adaptive_avg_pool2d", 2, np.mean),
                              ("adaptive_max_pool1d", 1, np.max),
                              ("adaptive_max_pool2d", 2, np.max)]:
    composite(OpInfo(_name, getattr(F, _name), _np_adaptive(_reduce), _adaptive_samples(_rank),
                     FLOATS, error_inputs=_adaptive_errors(_name, _rank)))


# ---- regression and divergence losses ----------------------------------------------------------
def _reduced(per, reduction):
    return {"none": per, "sum": np.sum(per), "mean": np.mean(per)}[reduction]


def _np_l1(x, y, reduction="mean"):
    return _reduced(np.abs(x - y), reduction)


def _np_mse(x, y, reduction="mean"):
    return _reduced((x - y) ** 2, reduction)


def _np_huber(x, y, reduction="mean", delta=1.0):
    d = np.abs(x - y)
    return _reduced(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _np_smooth_l1(x, y, reduction="mean", beta=1.0):
    d = np.abs(x - y)
    if beta == 0:
        return _reduced(d, reduction)
    return _reduced(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _np_kl_div(x, t, reduction="mean", log_target=False):
    if log_target:
        per = np.exp(t) * (t - x)
    else:
        safe = np.where(t > 0, t, 1.0)
        per = np.where(t > 0, t * np.log(safe), 0.0) - t * x
    if reduction == "batchmean":
        return np.sum(per) / x.shape[0]
    return _reduced(per, reduction)


def _pair_samples(params):
    """Inputs and targets whose differences stay 0.1 away from the kinks at +-0.5, 1 and 2."""
    def gen(dtype, rng):
        for shape, kwargs in params:
            x = make(rng, shape, dtype)
            step = rng.choice([-2.6, -1.4, -0.8, -0.3, 0.2, 0.7, 1.3, 2.4], size=shape)
            yield Sample((x, (x + step).astype(dtype)), dict(kwargs))
    return gen


_REDUCTIONS = [((4, 3), {}), ((5,), dict(reduction="sum")), ((2, 3), dict(reduction="none"))]


def _kl_samples(dtype, rng):
    logq = np.log(rng.dirichlet(np.ones(4), size=3)).astype(dtype)
    p = rng.dirichlet(np.ones(4), size=3).astype(dtype)
    yield Sample((logq, p), dict(reduction="batchmean"))
    yield Sample((logq, p), dict(reduction="sum"))
    yield Sample((logq, np.log(p)), dict(reduction="none", log_target=True))
    yield Sample((logq, p))


def _kl_with_zero(dtype, rng):
    logq = np.log(rng.dirichlet(np.ones(3), size=2)).astype(dtype)
    yield from _kl_samples(dtype, rng)
    yield Sample((logq, np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]], dtype)),
                 dict(reduction="sum"), desc="zero targets")


def _loss_errors(name, **bad):
    return lambda: [
        ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError, name),
        ErrorInput(Sample((np.ones(3), np.ones(3)), dict(reduction="avg")), en.DomainError, name),
        ErrorInput(Sample((np.ones(3, I64), np.ones(3))), en.DTypeError, name)] + [
        ErrorInput(Sample((np.ones(3), np.ones(3)), {k: v}), en.DomainError, name)
        for k, v in bad.items()]


composite(OpInfo("l1_loss", F.l1_loss, _f64(_np_l1), _pair_samples(_REDUCTIONS), FLOATS,
                 error_inputs=_loss_errors("l1_loss")))
composite(OpInfo("mse_loss", F.mse_loss, _f64(_np_mse), _pair_samples(_REDUCTIONS), FLOATS,
                 error_inputs=_loss_errors("mse_loss")))
composite(OpInfo("huber_loss", F.huber_loss, _f64(_np_huber), _pair_samples(
    _REDUCTIONS + [((3, 4), dict(delta=0.5)), ((6,), dict(delta=2.0, reduction="none"))]),
    FLOATS, error_inputs=_loss_errors("huber_loss", delta=-1.0)))
composite(OpInfo("smooth_l1_loss", F.smooth_l1_loss, _f64(_np_smooth_l1), _pair_samples(
    _REDUCTIONS + [((3, 4), dict(beta=0.5)), ((6,), dict(beta=0.0, reduction="none"))]),
    FLOATS, error_inputs=_loss_errors("smooth_l1_loss", beta=-0.5)))
composite(OpInfo("kl_div", F.kl_div, _f64(_np_kl_div), _kl_with_zero, FLOATS,
                 grad_samples=lambda rng: _kl_samples(F64, rng),
                 error_inputs=_loss_errors("kl_div")))
