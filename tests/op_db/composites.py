"""Op-database entries for the composites (public functions made of registered ops);
convolution and pooling are in ``op_db.conv``, the activations and the other
neural-network composites in ``op_db.nn``."""
import numpy as np

import engine as en

from op_db.core import F64, FLOATS, NUMERIC, ErrorInput, OpInfo, Sample, composite, make


def _dot_samples(dtype, rng):
    for sx, sy in [((3,), (3,)), ((0,), (0,)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((), ()),
                   ((), (2, 3)), ((2, 3), ()), ((3,), (3, 2)), ((2, 3, 4), (5, 4, 2)),
                   ((3,), (2, 3, 4)), ((2, 0), (0, 3)), ((0,), (0, 2))]:
        yield Sample((make(rng, sx, dtype), make(rng, sy, dtype)))


def _outer_samples(dtype, rng):
    for sx, sy in [((3,), (4,)), ((0,), (2,)), ((2, 2), (3,)), ((), (2,))]:
        yield Sample((make(rng, sx, dtype), make(rng, sy, dtype)))


composite(OpInfo("dot", en.dot, np.dot, _dot_samples, NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError,
                                                  "matmul"),
                                       ErrorInput(Sample((np.ones((2, 3)), np.ones((2, 3)))),
                                                  en.ShapeError, "matmul"),
                                       ErrorInput(Sample((np.ones((2, 3, 4)), np.ones((2, 3, 4)))),
                                                  en.ShapeError, "dot")]))
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


def _np_cross_entropy(logits, labels, axis=-1, weight=None, ignore_index=None,
                      reduction="mean", label_smoothing=0.0):
    """PyTorch's definition as one weighted sum over classes: the target is the label's
    one-hot (or the given probabilities) mixed with the uniform distribution."""
    n_classes = logits.shape[axis]
    logp = np.moveaxis(_np_log_softmax(logits, axis=axis), axis, -1)      # (..., C)
    w = np.ones(n_classes) if weight is None else weight.astype(np.float64)
    if labels.dtype.kind in "iu":
        valid = labels != ignore_index
        safe = np.where(valid, labels, 0)
        target = np.eye(n_classes)[safe]
    else:
        target = np.moveaxis(labels, axis, -1)
        valid, safe = np.ones(target.shape[:-1], bool), None
    target = (1.0 - label_smoothing) * target + label_smoothing / n_classes
    per = -np.sum(target * w * logp, axis=-1) * valid
    if reduction == "none":
        return per
    if reduction == "sum":
        return np.sum(per)
    if safe is None:
        return np.mean(per)
    return np.sum(per) / np.sum(w[safe] * valid)


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
    # PyTorch's options: class weights, ignored labels, reductions, label smoothing.
    weight = rng.uniform(0.5, 2.0, size=3).astype(dtype)
    labels = np.array([0, -100, 2, 1, 2])
    # (The weights go as an argument, so the back-end suites move them with the inputs.)
    ignored = dict(ignore_index=-100)      # PyTorch's modules' value
    yield Sample((make(rng, (5, 3), dtype), labels, -1, weight), ignored, desc="weighted")
    yield Sample((make(rng, (5, 3), dtype), labels), dict(ignored, reduction="sum"))
    yield Sample((make(rng, (5, 3), dtype), labels, -1, weight), dict(ignored, reduction="none"))
    yield Sample((make(rng, (5, 3), dtype), np.array([0, 1, 1, 2, 0]), -1, weight),
                 dict(ignore_index=1, label_smoothing=0.2), desc="smoothed")
    yield Sample((make(rng, (5, 3), dtype), labels), dict(ignored, label_smoothing=0.3,
                                                          reduction="none"))
    yield Sample((make(rng, (2, 3, 4), dtype), rng.integers(0, 3, size=(2, 4))),
                 dict(axis=1, label_smoothing=0.1, reduction="sum"))
    yield Sample((make(rng, (4, 3), dtype), probs, -1, weight), dict(label_smoothing=0.25),
                 desc="smoothed weighted probabilities")
    yield Sample((make(rng, (4, 3), dtype), probs), dict(reduction="none"))


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
                                en.DTypeError, "cross_entropy"),
                     ErrorInput(Sample((np.ones((2, 3)), np.array([0, 1])), dict(reduction="avg")),
                                en.DomainError, "cross_entropy"),
                     ErrorInput(Sample((np.ones((2, 3)), np.array([0, 1])),
                                       dict(label_smoothing=1.5)), en.DomainError,
                                "cross_entropy"),
                     ErrorInput(Sample((np.ones((2, 3)), np.array([0, 1])),
                                       dict(weight=np.ones(2))), en.ShapeError, "cross_entropy"),
                     ErrorInput(Sample((np.ones((2, 3)), np.array([0, 5])),
                                       dict(ignore_index=5, weight=np.ones(4))),
                                en.ShapeError, "cross_entropy")]))


# fori_loop: a loop of a step that reads its index, against the same loop on numpy. The
# weight rides in the loop value: a captured one would get its gradient summed over the
# steps in another order in a graph (a scan adds the steps' stack) than eagerly (the tape
# adds step by step), which is not bitwise equal (test_graph_mode).
def _fori_loop(x, w):
    def step(i, vw):
        v, w = vw
        return v * w + en.sin(v) * en.cast(i, v.dtype), w
    return en.fori_loop(0, 3, step, (x, w))[0]


def _np_fori_loop(x, w):
    v = x
    for i in range(3):
        v = (v * w + np.sin(v) * np.asarray(i, x.dtype)).astype(x.dtype)
    return v


def _fori_loop_samples(dtype, rng):
    for sx, sw in [((3,), (3,)), ((2, 3), (3,)), ((), ()), ((2, 2), ())]:
        yield Sample((make(rng, sx, dtype, -1.0, 1.0), make(rng, sw, dtype, -1.0, 1.0)))


def _fori_loop_grad_samples(rng):
    for sample in _fori_loop_samples(F64, rng):
        # A second-order gradient in a graph sums a scan's per-step terms as a stack
        # (graph/control/control_flow.py, _scan_vjp), eagerly the tape adds them one by
        # one: equal to rounding, not bitwise, so test_graph_mode compares order 1 only
        # (test_ops_grad checks order 2 against finite differences).
        sample.max_grad_order = 1
        yield sample


composite(OpInfo("fori_loop", _fori_loop, _np_fori_loop, _fori_loop_samples, FLOATS,
                 grad_samples=_fori_loop_grad_samples))
