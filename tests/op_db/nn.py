"""Op-database entries for the activation ops (``engine/ops/activations.py``) and the
neural-network composites (losses, normalization, lookup), against numpy formulas
written here from the papers' / PyTorch's definitions."""
import math

import numpy as np

import engine as en

from op_db.core import (F64, FLOATS, I64, INTS, ErrorInput, OpInfo, Sample, add, composite, make,
                        make_nonzero, op_dtypes, unary_samples)


def _f64(fn):
    """A reference computed in float64 and returned in the first input's dtype."""
    def ref(x, *args, **kwargs):
        args = [a.astype(F64) if isinstance(a, np.ndarray) and a.dtype in FLOATS else a
                for a in args]
        return np.asarray(fn(np.asarray(x, F64), *args, **kwargs)).astype(np.asarray(x).dtype)
    return ref


# ---- activations (registered elementwise ops) ---------------------------------------------------
def _param_samples(maker, variants):
    """Every unary sample shape with default params, then each params variant."""
    base = unary_samples(maker)

    def gen(dtype, rng):
        yield from base(dtype, rng)
        for kwargs in variants:
            yield Sample((maker(rng, (3, 4), dtype),), dict(kwargs), desc="params")
    return gen


def _wide(rng, shape, dtype):
    """Values away from 0 (the kinks) and wide enough to reach softplus' linear part."""
    return make_nonzero(rng, shape, dtype, 0.1, 8.0)


def _activation_errors(name, bad_params):
    return lambda: [ErrorInput(Sample((np.ones(3, np.int64),)), en.DTypeError, name)] + [
        ErrorInput(Sample((np.ones(3),), kw), err, name) for kw, err in bad_params]


def _erf(x):
    return np.vectorize(math.erf, otypes=[F64])(x)


add(OpInfo("silu", en.silu, _f64(lambda x: x / (1.0 + np.exp(-x))),
           unary_samples(lambda rng, s, d: make(rng, s, d, -6, 6)), op_dtypes("silu"),
           error_inputs=_activation_errors("silu", [])))
add(OpInfo("leaky_relu", en.leaky_relu,
           _f64(lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x)),
           _param_samples(make_nonzero, [dict(negative_slope=0.2), dict(negative_slope=-1.5)]),
           op_dtypes("leaky_relu"), error_inputs=_activation_errors(
               "leaky_relu", [(dict(negative_slope="a"), en.DTypeError)])))
add(OpInfo("elu", en.elu, _f64(lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x))),
           _param_samples(make_nonzero, [dict(alpha=0.5), dict(alpha=2.0)]), op_dtypes("elu"),
           error_inputs=_activation_errors("elu", [(dict(alpha=None), en.DTypeError)])))
add(OpInfo("softplus", en.softplus,
           _f64(lambda x, beta=1.0, threshold=20.0:
                np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)),
           _param_samples(_wide, [dict(beta=2.0, threshold=3.0), dict(beta=0.5),
                                  dict(beta=-1.0, threshold=2.0)]),
           op_dtypes("softplus"), error_inputs=_activation_errors(
               "softplus", [(dict(beta=0.0), en.DomainError)])))
add(OpInfo("gelu", en.gelu,
           _f64(lambda x, approximate="none": 0.5 * x * (1.0 + (
               np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)) if approximate == "tanh"
               else _erf(x / math.sqrt(2.0))))),
           _param_samples(make, [dict(approximate=form) for form in ("tanh", "none")
                                 if form in en.ops.activations._GELU_FORMS]), op_dtypes("gelu"),
           error_inputs=_activation_errors("gelu", [(dict(approximate="fast"),
                                                     en.DomainError)])))


# ---- losses ---------------------------------------------------------------------------------------
def _np_reduce(loss, reduction):
    return loss if reduction == "none" else (loss.sum() if reduction == "sum" else loss.mean())


def _np_nll(logp, target, weight=None, ignore_index=None, reduction="mean", axis=-1):
    logp = np.moveaxis(logp, axis, -1)
    safe = np.where(target == ignore_index, 0, target)
    picked = np.take_along_axis(logp, safe[..., None], axis=-1)[..., 0]
    w = np.ones(logp.shape[-1], logp.dtype) if weight is None else weight.astype(logp.dtype)
    w = w[safe] * (target != ignore_index)
    loss = -picked * w
    if reduction == "mean":
        return np.asarray(loss.sum() / w.sum())
    return np.asarray(_np_reduce(loss, reduction))


def _log_probs(rng, shape, dtype, axis=-1):
    z = make(rng, shape, F64)
    z = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z.astype(dtype)


def _nll_samples(dtype, rng):
    yield Sample((_log_probs(rng, (5, 3), dtype), rng.integers(0, 3, 5)))
    w = make(rng, (3,), dtype, 0.5, 2.0)
    for reduction in ("mean", "sum", "none"):
        yield Sample((_log_probs(rng, (4, 3), dtype), np.array([0, 2, -100, 1]), w),
                     dict(reduction=reduction, ignore_index=-100),
                     desc="weights, an ignored example")
    yield Sample((_log_probs(rng, (2, 4, 3, 3), dtype, 1), rng.integers(0, 4, (2, 3, 3))),
                 dict(axis=1, ignore_index=2), desc="NCHW, class 2 ignored")
    yield Sample((_log_probs(rng, (4,), dtype), np.array(3)), desc="one example")


def _nll_errors():
    logp, t = np.zeros((2, 3)), np.array([0, 1])
    return [ErrorInput(Sample((logp, np.array([0, 3]))), en.ShapeError, "nll_loss"),
            ErrorInput(Sample((logp, np.array([0, 1, 2]))), en.ShapeError, "nll_loss"),
            ErrorInput(Sample((logp, t.astype(F64))), en.DTypeError, "nll_loss"),
            ErrorInput(Sample((logp.astype(I64), t)), en.DTypeError, "nll_loss"),
            ErrorInput(Sample((logp, t, np.ones(2))), en.ShapeError, "nll_loss"),
            ErrorInput(Sample((logp, t), dict(reduction="avg")), en.DomainError, "nll_loss"),
            ErrorInput(Sample((logp, t), dict(axis=2)), en.ShapeError, "nll_loss")]


def _np_bce(p, y, weight=None, reduction="mean"):
    loss = -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log(1 - p), -100))
    return np.asarray(_np_reduce(loss if weight is None else loss * weight, reduction))


def _np_bce_logits(z, y, weight=None, pos_weight=None, reduction="mean"):
    p = 1.0 / (1.0 + np.exp(-z))
    pw = 1.0 if pos_weight is None else pos_weight
    loss = -(pw * y * np.log(p) + (1 - y) * np.log(1 - p))
    return np.asarray(_np_reduce(loss if weight is None else loss * weight, reduction))


def _bce_samples(logits):
    def gen(dtype, rng):
        x = (lambda s: make(rng, s, dtype, -4, 4)) if logits else \
            (lambda s: make(rng, s, dtype, 0.05, 0.95))
        y = lambda s: make(rng, s, dtype, 0, 1)   # noqa: E731  (soft labels)
        yield Sample((x((4, 3)), y((4, 3))))
        yield Sample((x((6,)), (y((6,)) > 0.5).astype(dtype)), dict(reduction="sum"),
                     desc="hard labels")
        yield Sample((x((2, 3)), y((2, 3)), make(rng, (3,), dtype, 0.5, 2)),
                     dict(reduction="none"), desc="weight")
        if logits:
            yield Sample((x((4, 3)), y((4, 3)), None, make(rng, (3,), dtype, 0.5, 3)),
                         desc="pos_weight")
    return gen


def _bce_errors(name):
    return lambda: [
        ErrorInput(Sample((np.full(3, 0.5), np.ones(4))), en.ShapeError, name),
        ErrorInput(Sample((np.full(3, 0.5), np.ones(3, I64))), en.DTypeError, name),
        ErrorInput(Sample((np.full(3, 0.5), np.ones(3)), dict(reduction=None)), en.DomainError,
                   name)]


composite(OpInfo("nll_loss", en.nll_loss, _f64(_np_nll), _nll_samples, FLOATS,
                 error_inputs=_nll_errors))
composite(OpInfo("binary_cross_entropy", en.binary_cross_entropy, _f64(_np_bce),
                 _bce_samples(False), FLOATS, error_inputs=_bce_errors("binary_cross_entropy")))
composite(OpInfo("binary_cross_entropy_with_logits", en.binary_cross_entropy_with_logits,
                 _f64(_np_bce_logits), _bce_samples(True), FLOATS,
                 error_inputs=_bce_errors("binary_cross_entropy_with_logits")))


# ---- one_hot and embedding --------------------------------------------------------------------------
def _one_hot_samples(dtype, rng):
    yield Sample((rng.integers(0, 4, 5).astype(dtype),), dict(num_classes=4))
    yield Sample((rng.integers(0, 3, (2, 3)).astype(dtype),), dict(num_classes=3, dtype="float32"))
    yield Sample((np.array(2, dtype),), dict(num_classes=5))
    yield Sample((np.zeros((0,), dtype),), dict(num_classes=2), desc="empty")


def _np_one_hot(labels, num_classes=-1, dtype="int64"):
    n = int(labels.max()) + 1 if num_classes == -1 else num_classes
    return (labels[..., None] == np.arange(n)).astype(dtype)


composite(OpInfo("one_hot", en.one_hot, _np_one_hot, _one_hot_samples, INTS, supports_grad=False,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.array([0, 3]),), dict(num_classes=3)), en.ShapeError,
                                "one_hot"),
                     ErrorInput(Sample((np.array([0.0]),), dict(num_classes=3)), en.DTypeError,
                                "one_hot"),
                     ErrorInput(Sample((np.array([0]),), dict(num_classes=-2)), en.DomainError,
                                "one_hot")]))


def _embedding_samples(dtype, rng):
    w = make(rng, (5, 3), dtype)
    yield Sample((np.array([[0, 4, 4], [2, 1, 0]]), w))
    yield Sample((np.array(3), w), desc="one id")
    yield Sample((np.array([1, 0, 1, 3]), w), dict(padding_idx=1), desc="padding row")
    yield Sample((np.array([4, 0]), w), dict(padding_idx=-1))


def _np_embedding(ids, weight, padding_idx=None):
    return weight[ids]


def _embedding_grad_samples(rng):
    # The padding row is frozen by design (its gradient is zero, not the derivative),
    # so finite differences check the samples without one; test_nn_ops checks the freeze.
    return [s for s in _embedding_samples(F64, rng) if "padding_idx" not in s.kwargs]


composite(OpInfo("embedding", en.embedding, _np_embedding, _embedding_samples, FLOATS,
                 grad_samples=_embedding_grad_samples,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.array([0.0]), np.ones((3, 2)))), en.DTypeError,
                                "embedding"),
                     ErrorInput(Sample((np.array([0]), np.ones(3))), en.ShapeError, "embedding"),
                     ErrorInput(Sample((np.array([0]), np.ones((3, 2))), dict(padding_idx=3)),
                                en.ShapeError, "embedding")]))


# ---- normalization ------------------------------------------------------------------------------------
def _np_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    axes = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return y * (1 if weight is None else weight) + (0 if bias is None else bias)


def _layer_norm_samples(dtype, rng):
    yield Sample((make(rng, (4, 5), dtype), 5))
    yield Sample((make(rng, (2, 3, 4), dtype), (3, 4), make(rng, (3, 4), dtype),
                  make(rng, (3, 4), dtype)), desc="affine over two axes")
    yield Sample((make(rng, (3, 2), dtype), (2,), None, make(rng, (2,), dtype)), dict(eps=0.1))


def _np_batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None,
                   training=False, momentum=0.1, eps=1e-5):
    axes = tuple(range(x.ndim - 1))
    mean, var = (x.mean(axis=axes), x.var(axis=axes)) if training else (running_mean, running_var)
    y = (x - mean) / np.sqrt(var + eps)
    return y * (1 if weight is None else weight) + (0 if bias is None else bias)


def _batch_norm_samples(dtype, rng):
    c = 3
    stats = lambda: (make(rng, (c,), dtype), make(rng, (c,), dtype, 0.5, 2))  # noqa: E731
    yield Sample((make(rng, (6, c), dtype),), dict(training=True))
    yield Sample((make(rng, (2, 3, 2, c), dtype), *stats(), make(rng, (c,), dtype),
                  make(rng, (c,), dtype)), dict(training=True), desc="NHWC, affine")
    yield Sample((make(rng, (4, c), dtype), *stats()), dict(training=False), desc="inference")
    yield Sample((make(rng, (2, 2, c), dtype), *stats(), make(rng, (c,), dtype)),
                 dict(eps=0.01), desc="inference, weight")


composite(OpInfo("layer_norm", en.layer_norm, _f64(_np_layer_norm), _layer_norm_samples, FLOATS,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)), 4)), en.ShapeError, "layer_norm"),
                     ErrorInput(Sample((np.ones((2, 3)), 3, np.ones(2))), en.ShapeError,
                                "layer_norm"),
                     ErrorInput(Sample((np.ones((2, 3), I64), 3)), en.DTypeError, "layer_norm")]))
composite(OpInfo("batch_norm", en.batch_norm, _f64(_np_batch_norm), _batch_norm_samples, FLOATS,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)),)), en.ShapeError, "batch_norm"),
                     ErrorInput(Sample((np.ones(3),), dict(training=True)), en.ShapeError,
                                "batch_norm"),
                     ErrorInput(Sample((np.ones((1, 3)),), dict(training=True)), en.ShapeError,
                                "batch_norm"),
                     ErrorInput(Sample((np.ones((2, 3)), np.ones(2), np.ones(2))), en.ShapeError,
                                "batch_norm"),
                     ErrorInput(Sample((np.ones((2, 3)),), dict(training=True, momentum=2.0)),
                                en.DomainError, "batch_norm")]))


# ---- interpolate ---------------------------------------------------------------------------------------
def _np_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """PyTorch's source positions, written out pixel by pixel."""
    n, h, w, c = x.shape
    if size is not None:
        oh, ow = (size, size) if isinstance(size, int) else size
        sh, sw = h / oh, w / ow
    else:
        fh, fw = (scale_factor,) * 2 if np.isscalar(scale_factor) else scale_factor
        oh, ow, sh, sw = int(np.floor(h * fh)), int(np.floor(w * fw)), 1 / fh, 1 / fw
    out = np.zeros((n, oh, ow, c), x.dtype)

    def source(d, scale, size, out_size):
        if mode == "nearest":
            return min(int(np.floor(d * scale)), size - 1)
        if mode == "nearest-exact":
            return min(int(np.floor((d + 0.5) * scale)), size - 1)
        if align_corners:
            return d * (size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return max((d + 0.5) * scale - 0.5, 0.0)

    for i in range(oh):
        for j in range(ow):
            si, sj = source(i, sh, h, oh), source(j, sw, w, ow)
            if mode != "bilinear":
                out[:, i, j] = x[:, si, sj]
                continue
            i0, j0 = min(int(np.floor(si)), h - 1), min(int(np.floor(sj)), w - 1)
            i1, j1 = min(i0 + 1, h - 1), min(j0 + 1, w - 1)
            a, b = si - i0, sj - j0
            out[:, i, j] = ((1 - a) * ((1 - b) * x[:, i0, j0] + b * x[:, i0, j1])
                            + a * ((1 - b) * x[:, i1, j0] + b * x[:, i1, j1]))
    return out


def _interpolate_samples(dtype, rng):
    x = make(rng, (2, 3, 4, 2), dtype)
    yield Sample((x,), dict(scale_factor=2))
    yield Sample((x,), dict(size=(5, 3)))
    yield Sample((x,), dict(size=(7, 6), mode="nearest-exact"))
    yield Sample((x,), dict(size=(5, 7), mode="bilinear"))
    yield Sample((x,), dict(size=(2, 3), mode="bilinear"), desc="down")
    yield Sample((x,), dict(scale_factor=(1.5, 2.5), mode="bilinear", align_corners=True))
    yield Sample((make(rng, (1, 1, 3, 1), dtype),), dict(size=(3, 5), mode="bilinear",
                                                        align_corners=True), desc="one row")


composite(OpInfo("interpolate", en.interpolate, _f64(_np_interpolate), _interpolate_samples,
                 FLOATS, error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((1, 2, 2, 1)),)), en.DomainError, "interpolate"),
                     ErrorInput(Sample((np.ones((1, 2, 2, 1)),), dict(size=2, scale_factor=2)),
                                en.DomainError, "interpolate"),
                     ErrorInput(Sample((np.ones((1, 2, 2, 1)),), dict(size=2, mode="bicubic")),
                                en.DomainError, "interpolate"),
                     ErrorInput(Sample((np.ones((2, 2, 1)),), dict(size=2)), en.ShapeError,
                                "interpolate"),
                     ErrorInput(Sample((np.ones((1, 2, 2, 1), I64),),
                                       dict(size=2, mode="bilinear")),
                                en.DTypeError, "interpolate"),
                     ErrorInput(Sample((np.ones((1, 2, 2, 1)),), dict(size=2, align_corners=True)),
                                en.DomainError, "align_corners"),
                     ErrorInput(Sample((np.ones((1, 2, 2, 1)),), dict(scale_factor=0.1)),
                                en.ShapeError, "interpolate")]))
