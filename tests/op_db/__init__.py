"""The op database: one :class:`OpInfo` per registered op, plus the composites.

The suites in ``tests/`` loop over these entries (PyTorch's OpInfo pattern):
``test_ops_numeric`` compares each op with its numpy reference and its shape
rule, ``test_ops_grad`` checks gradients by finite differences, and
``test_op_db_complete`` fails when a registered op has no entry here.

A sample holds numpy arrays and Python scalars; the suites turn the arrays
into tensors before calling the engine and hand them unchanged to the numpy
reference. Sample values are drawn inside each op's domain (positive inputs
for ``log``, away from the kink of ``abs``, no ties for ``maximum``...), so
the same samples serve the numeric and the gradient suites.

Example:
    >>> info = OPS_BY_NAME["exp"]
    >>> s = next(iter(info.sample_inputs(np.dtype("float64"), np.random.default_rng(0))))
    >>> s.args[0].dtype
    dtype('float64')
"""
import numpy as np

import engine as en

from op_db_core import *  # noqa: F401,F403
from op_db_core import _op_dtypes  # noqa: F401


def _string_input():
    # The floating functions take every dtype (ints and bools become floats, as in
    # numpy); an array the engine has no dtype for is still refused, naming the op.
    return [ErrorInput(Sample(("a",)), en.DTypeError)]


# Unary math: values inside each function's domain and away from kinks.
unary("neg", np.negative)
unary("abs", np.abs, make_nonzero)
unary("sign", np.sign, make_nonzero)
unary("exp", np.exp, error_inputs=_string_input)
unary("log", np.log, make_positive, error_inputs=_string_input)
unary("log1p", np.log1p, lambda rng, s, d: make(rng, s, d, -0.5, 3.0), error_inputs=_string_input)
unary("expm1", np.expm1, error_inputs=_string_input)
unary("sqrt", np.sqrt, make_positive, error_inputs=_string_input)
unary("square", np.square)
unary("reciprocal", np.reciprocal, make_nonzero)
unary("sin", np.sin, error_inputs=_string_input)
unary("cos", np.cos, error_inputs=_string_input)
unary("tanh", np.tanh, error_inputs=_string_input)
unary("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), lambda rng, s, d: make(rng, s, d, -6, 6))
unary("relu", lambda x: np.maximum(x, 0), make_nonzero)
add(OpInfo("sigmoid_grad", en.ops.sigmoid_grad, lambda y, g: g * y * (1.0 - y),
           binary_samples(lambda rng, s, d: make(rng, s, d, 0.05, 0.95) if np.dtype(d).kind == "f"
                          else make(rng, s, d), mixed=False),
           _op_dtypes("sigmoid_grad"), error_inputs=binary_errors))

# Binary arithmetic, with broadcasting, Python scalars and dtype promotion.
binary("add", np.add)
binary("sub", np.subtract)
binary("mul", np.multiply)
binary("div", np.true_divide, make, make_nonzero)
binary("pow", np.power, make_positive, lambda rng, s, d: make(rng, s, d, 0 if np.dtype(d).kind in "iu" else -2, 2))
binary("maximum", np.maximum, make_distinct, lambda rng, s, d: make_distinct(rng, s, d, 0.25))
binary("minimum", np.minimum, make_distinct, lambda rng, s, d: make_distinct(rng, s, d, 0.25))

# Comparisons and logic: integer-valued inputs so that equal values occur.
_coarse = lambda rng, s, d: make(rng, s, d, -2, 2).round().astype(d)  # noqa: E731
for _name, _ref in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                    ("less_equal", np.less_equal), ("greater", np.greater),
                    ("greater_equal", np.greater_equal), ("logical_and", np.logical_and),
                    ("logical_or", np.logical_or)]:
    binary(_name, _ref, _coarse, _coarse, supports_grad=False)
unary("logical_not", np.logical_not, _coarse, supports_grad=False)


def _where_samples(dtype, rng):
    cases = [((), (), ()), ((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()), ((3, 1), (1, 4), (3, 4)),
             ((), (2, 3), (2, 1)), ((0, 3), (3,), (1, 3))]
    for sc, sx, sy in cases:
        yield Sample((make(rng, sc, BOOL), make(rng, sx, dtype), make(rng, sy, dtype)))
    s = scalar_of(dtype)
    yield Sample((make(rng, (2, 3), BOOL), make(rng, (2, 3), dtype), s), desc="python scalar")


add(OpInfo("where", en.where, np.where, _where_samples, _op_dtypes("where"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones(3), np.ones(3), np.ones(3))), en.DTypeError),
               ErrorInput(Sample((np.ones(3, bool), np.ones(2), np.ones(3))), en.ShapeError)]))


# Creation ops take no tensor inputs: the sample's dtype is the dtype asked for.
CREATION_SHAPES = [(), (3,), (2, 3), (0,), (2, 0, 4)]


def _creation_samples(dtype, rng):
    for shape in CREATION_SHAPES:
        yield Sample((), dict(shape=shape, dtype=dtype))
    yield Sample((), dict(shape=4, dtype=dtype), desc="int shape")


def _full_samples(dtype, rng):
    for sample in _creation_samples(dtype, rng):
        sample.kwargs["value"] = scalar_of(dtype) if dtype != BOOL else False
        yield sample
    yield Sample((), dict(shape=(2,), value=3), desc="dtype from an int value")
    yield Sample((), dict(shape=(2,), value=0.5), desc="dtype from a float value")


# A dtype no engine op takes (a string dtype).
UNSUPPORTED = "U1"


def _creation_errors(**extra):
    return lambda: [ErrorInput(Sample((), dict(shape=(2, -1), dtype=F64, **extra)), en.ShapeError),
                    ErrorInput(Sample((), dict(shape=(2, 3), dtype=UNSUPPORTED, **extra)),
                               en.DTypeError, "unsupported dtype")]


add(OpInfo("zeros", en.zeros, np.zeros, _creation_samples, ALL, supports_grad=False,
           error_inputs=_creation_errors()))
add(OpInfo("ones", en.ones, np.ones, _creation_samples, ALL, supports_grad=False,
           error_inputs=_creation_errors()))
add(OpInfo("full", en.full, lambda shape, value, dtype=None: np.full(shape, value, dtype=dtype),
           _full_samples, ALL, supports_grad=False, error_inputs=_creation_errors(value=1)))


def _arange_samples(dtype, rng):
    if dtype in INTS:
        cases = [dict(start=5), dict(start=2, stop=9), dict(start=9, stop=2, step=-2),
                 dict(start=3, stop=3), dict(start=5, stop=0)]
    else:
        cases = [dict(start=0.0, stop=1.0, step=0.25), dict(start=-1.5, stop=2.0, step=0.5),
                 dict(start=2.0, stop=-1.0, step=-0.75), dict(start=4.0), dict(start=1, stop=2.5)]
    for kwargs in cases:
        yield Sample((), dict(kwargs, dtype=dtype))
    yield Sample((), dict(start=1, stop=7, step=2), desc="int64 from int arguments")
    yield Sample((), dict(start=0, stop=1.0, step=0.5), desc="float64 from a float argument")


def _arange_ref(start, stop=None, step=1, dtype=None):
    return np.arange(start, stop, step, dtype=dtype)


def _eye_samples(dtype, rng):
    for kwargs in [dict(n=3), dict(n=2, m=4), dict(n=4, m=2, k=1), dict(n=3, k=-1),
                   dict(n=0), dict(n=2, m=0), dict(n=3, k=5)]:
        yield Sample((), dict(kwargs, dtype=dtype))


add(OpInfo("arange", en.arange, _arange_ref, _arange_samples, NUMERIC, supports_grad=False,
           error_inputs=lambda: [
               ErrorInput(Sample((), dict(start=0, stop=5, step=0)), en.ShapeError),
               ErrorInput(Sample((), dict(start=0.0, stop=float("inf"))), en.ShapeError),
               ErrorInput(Sample((), dict(start="a")), en.ShapeError),
               ErrorInput(Sample((), dict(start=3, dtype=UNSUPPORTED)), en.DTypeError, "unsupported dtype")]))
add(OpInfo("eye", en.eye, lambda n, m=None, k=0, dtype=F64: np.eye(n, m, k, dtype=dtype),
           _eye_samples, ALL, supports_grad=False,
           error_inputs=lambda: [
               ErrorInput(Sample((), dict(n=-1)), en.ShapeError),
               ErrorInput(Sample((), dict(n=2, m=-3)), en.ShapeError),
               ErrorInput(Sample((), dict(n=2, dtype=UNSUPPORTED)), en.DTypeError, "unsupported dtype")]))
unary("zeros_like", np.zeros_like)
unary("ones_like", np.ones_like)


def _cast_samples(dtype, rng):
    for target in ALL:
        yield Sample((make(rng, (2, 3), dtype),), dict(dtype=target))
    yield Sample((make(rng, (), dtype),), dict(dtype=F64))
    yield Sample((make(rng, (0, 2), dtype),), dict(dtype=I32))
    yield Sample((make(rng, (3,), dtype),), dict(dtype="float32"), desc="dtype by name")


def _cast_grad_samples(rng):
    # A float32 result would round away the finite differences; int results have
    # no gradient to check.
    yield Sample((make(rng, (2, 3), F64),), dict(dtype=F64))
    yield Sample((make(rng, (), F64),), dict(dtype=F64))


add(OpInfo("cast", en.cast, lambda x, dtype: np.asarray(x).astype(dtype), _cast_samples,
           _op_dtypes("cast"), grad_samples=_cast_grad_samples,
           error_inputs=lambda: [ErrorInput(Sample((np.ones(2),), dict(dtype=UNSUPPORTED)),
                                            en.DTypeError, "unsupported dtype")]))



# Reductions.
def _prod_grad_samples(rng):
    yield from reduce_samples(lambda rng, s, d: make_nonzero(rng, s, d, 0.5, 1.5))(F64, rng)
    # prod is multilinear, so it is smooth at zeros too: one zero, two zeros.
    x = make_nonzero(rng, (3, 4), F64, 0.5, 1.5)
    x[1, 2] = 0.0
    y = x.copy()
    y[1, 0] = 0.0
    cases = [(x, None, False, "one zero"), (x, 1, False, "one zero in a row"),
             (y, 1, True, "two zeros in a row"), (y, None, False, "two zeros")]
    for z, axis, keepdims, desc in cases:
        yield Sample((z,), dict(axis=axis, keepdims=keepdims), desc=desc)


_small = lambda rng, s, d: make(rng, s, d, -1.5, 1.5)  # noqa: E731  (products stay small)
add(OpInfo("sum", en.sum, np_reduce(np.sum), reduce_samples(), _op_dtypes("sum"),
           error_inputs=reduce_errors()))
add(OpInfo("mean", en.mean, np_reduce(np.mean), reduce_samples(empty_reduce=False),
           _op_dtypes("mean"), error_inputs=reduce_errors()))
add(OpInfo("prod", en.prod, np_reduce(np.prod), reduce_samples(_small), _op_dtypes("prod"),
           error_inputs=reduce_errors(), grad_samples=_prod_grad_samples))
add(OpInfo("max", en.max, np_reduce(np.max), reduce_samples(make_distinct, empty_reduce=False),
           _op_dtypes("max"), error_inputs=reduce_errors(empty_reduce=False)))
add(OpInfo("min", en.min, np_reduce(np.min), reduce_samples(make_distinct, empty_reduce=False),
           _op_dtypes("min"), error_inputs=reduce_errors(empty_reduce=False)))


def _arg_samples(dtype, rng):
    cases = [((5,), None, False), ((5,), 0, True), ((2, 3, 4), None, False),
             ((2, 3, 4), None, True), ((2, 3, 4), 1, False), ((2, 3, 4), -1, True),
             ((0, 3), 1, False), ((), None, False)]
    for shape, axis, keepdims in cases:
        # Coarse values: ties occur, and the first index must win as in numpy.
        yield Sample((make(rng, shape, dtype, -2, 2).round().astype(dtype),),
                     dict(axis=axis, keepdims=keepdims))


def _arg_errors():
    one = lambda **kw: Sample((np.ones((2, 3)),), kw)  # noqa: E731
    return [ErrorInput(one(axis=(0, 1), keepdims=False), en.ShapeError),
            ErrorInput(one(axis=2, keepdims=False), en.ShapeError),
            ErrorInput(Sample((np.ones((0, 3)),), dict(axis=0)), en.ShapeError),
            ErrorInput(Sample((np.ones((0, 3)),), dict(axis=None)), en.ShapeError)]


for _name in ("argmax", "argmin"):
    add(OpInfo(_name, getattr(en, _name), getattr(np, _name), _arg_samples, _op_dtypes(_name),
               supports_grad=False, error_inputs=_arg_errors))


# Shape ops.
def _with(cases, maker=make):
    """Samples ``op(x, **params)`` for ``(shape_of_x, params)`` cases."""
    def gen(dtype, rng):
        for shape, params in cases:
            yield Sample((maker(rng, shape, dtype),), dict(params))
    return gen


def _errors(cases):
    return lambda: [ErrorInput(Sample((np.ones(shape),), dict(params)), error)
                    for shape, params, error in cases]


add(OpInfo("reshape", en.reshape, np.reshape, _with([
    ((6,), dict(shape=(2, 3))), ((2, 3), dict(shape=(3, -1))), ((2, 3, 4), dict(shape=(-1,))),
    ((1,), dict(shape=())), ((), dict(shape=(1, 1))), ((0, 3), dict(shape=(3, 0))),
    ((0, 3), dict(shape=(-1, 3))), ((2, 3), dict(shape=(3, 2)))]), _op_dtypes("reshape"),
    error_inputs=_errors([((6,), dict(shape=(4,)), en.ShapeError),
                          ((6,), dict(shape=(-1, -1)), en.ShapeError),
                          ((6,), dict(shape=(4, -1)), en.ShapeError),
                          ((6,), dict(shape=(-2, -3)), en.ShapeError)])))
add(OpInfo("transpose", en.transpose, np.transpose, _with([
    ((2, 3), dict(axes=None)), ((2, 3, 4), dict(axes=None)), ((2, 3, 4), dict(axes=(1, 0, 2))),
    ((2, 3, 4), dict(axes=(-1, 0, 1))), ((), dict(axes=None)), ((0, 3), dict(axes=(1, 0))),
    ((5,), dict(axes=(0,)))]), _op_dtypes("transpose"),
    error_inputs=_errors([((2, 3), dict(axes=(0, 0)), en.ShapeError),
                          ((2, 3), dict(axes=(0,)), en.ShapeError),
                          ((2, 3), dict(axes=(0, 1, 2)), en.ShapeError)])))
add(OpInfo("broadcast_to", en.broadcast_to, np.broadcast_to, _with([
    ((3,), dict(shape=(2, 3))), ((), dict(shape=(2, 2))), ((2, 1), dict(shape=(2, 3))),
    ((2, 1), dict(shape=(4, 2, 5))), ((0,), dict(shape=(2, 0))), ((1,), dict(shape=(0,))),
    ((2, 3), dict(shape=(2, 3)))]), _op_dtypes("broadcast_to"),
    error_inputs=_errors([((3,), dict(shape=(4,)), en.ShapeError),
                          ((2, 3), dict(shape=(3,)), en.ShapeError),
                          ((2, 3), dict(shape=(3, 3)), en.ShapeError)])))
add(OpInfo("expand_dims", en.expand_dims, np.expand_dims, _with([
    ((3,), dict(axis=0)), ((3,), dict(axis=1)), ((3,), dict(axis=-1)), ((2, 3), dict(axis=-2)),
    ((), dict(axis=0)), ((0, 2), dict(axis=1)),
    # numpy's tuple of axes: positions in the result
    ((2, 3), dict(axis=(0, 3))), ((3,), dict(axis=(-1, 0))), ((2,), dict(axis=(2, 1))),
    ((), dict(axis=(0, 1)))]), _op_dtypes("expand_dims"),
    error_inputs=_errors([((3,), dict(axis=2), en.ShapeError),
                          ((3,), dict(axis=-3), en.ShapeError),
                          ((3,), dict(axis=(0, 0)), en.ShapeError),
                          ((3,), dict(axis=(0, 3)), en.ShapeError),
                          ((3,), dict(axis=(0, 1.0)), en.ShapeError)])))
add(OpInfo("squeeze", en.squeeze, np.squeeze, _with([
    ((1, 3, 1), dict(axis=None)), ((1, 3, 1), dict(axis=0)), ((1, 3, 1), dict(axis=-1)),
    ((1, 3, 1), dict(axis=(0, 2))), ((1,), dict(axis=None)), ((3,), dict(axis=None)),
    ((1, 0), dict(axis=0)), ((), dict(axis=None))]), _op_dtypes("squeeze"),
    error_inputs=_errors([((1, 3), dict(axis=1), en.ShapeError),
                          ((1, 3), dict(axis=2), en.ShapeError)])))



# Shape helpers the VJPs use when dims are only known at run time.
def _broadcast_like_samples(dtype, rng):
    for sx, sl in [((3,), (2, 3)), ((), (2, 2)), ((2, 1), (2, 3)), ((1,), (0,)), ((2, 3), (2, 3))]:
        yield Sample((make(rng, sx, dtype), make(rng, sl, dtype)))
    yield Sample((make(rng, (2, 1), dtype), make(rng, (2, 4), BOOL)), desc="like of another dtype")


def _count_ref(x, axes=None, dtype=F64):
    axes = range(x.ndim) if axes is None else [axes] if isinstance(axes, int) else axes
    return np.asarray(int(np.prod([x.shape[a] for a in axes])), dtype=dtype)


def _count_samples(dtype, rng):
    for shape, axes, out in [((2, 3, 4), None, F64), ((2, 3, 4), (0, 2), F32), ((2, 3), -1, I64),
                             ((0, 3), 1, F64), ((), None, I32)]:
        yield Sample((make(rng, shape, dtype),), dict(axes=axes, dtype=out))


add(OpInfo("broadcast_like", en.ops.broadcast_like, lambda x, like: np.broadcast_to(x, like.shape),
           _broadcast_like_samples, _op_dtypes("broadcast_like"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones(3), np.ones((2, 4)))), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 3)), np.ones(3))), en.ShapeError)]))
add(OpInfo("count", en.ops.count, _count_ref, _count_samples, _op_dtypes("count"),
           error_inputs=_errors([((2, 3), dict(axes=2), en.ShapeError),
                                 ((2, 3), dict(axes=(0, 0)), en.ShapeError)])))


# Matrix product.
def _matmul_samples(dtype, rng):
    pairs = [((2, 3), (3, 4)), ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)),
             ((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (3, 3, 2)), ((4,), (2, 4, 3)),
             ((2, 3, 4), (4,)), ((2, 0), (0, 3)), ((0, 3), (3, 2)), ((1, 1), (1, 1))]
    for sx, sy in pairs:
        yield Sample((make(rng, sx, dtype), make(rng, sy, dtype)))


add(OpInfo("matmul", en.matmul, np.matmul, _matmul_samples, _op_dtypes("matmul"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones((2, 3)), np.ones((4, 2)))), en.ShapeError),
               ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError),
               ErrorInput(Sample((np.float64(1.0), np.ones(3))), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 2, 3)), np.ones((3, 3, 2)))), en.ShapeError)]))

# Identity-like ops. stop_gradient's gradient is zero by definition, which
# finite differences cannot see; test_ops_grad checks it directly.
unary("identity", lambda x: x)
unary("stop_gradient", lambda x: x, supports_grad=False,
      grad_skip="the gradient is zero by definition; checked in test_ops_grad")


# Joining and splitting: inputs come as a list, split returns a tuple.
def _concat_samples(dtype, rng):
    cases = [([(2, 3), (1, 3)], 0), ([(2, 3), (2, 1), (2, 2)], 1), ([(2, 3), (2, 3)], -1),
             ([(4,)], 0), ([(0, 3), (2, 3)], 0), ([(2, 0), (2, 0)], 1)]
    for shapes, axis in cases:
        yield Sample(([make(rng, s, dtype) for s in shapes],), dict(axis=axis))
    if dtype in NUMERIC:
        other = I32 if dtype != I32 else I64
        yield Sample(([make(rng, (2,), dtype), make(rng, (3,), other)],), dict(axis=0),
                     desc=f"promotion with {other}")


def _stack_samples(dtype, rng):
    for shapes, axis in [([(2, 3), (2, 3)], 0), ([(2, 3)] * 3, 1), ([(2, 3)] * 2, -1),
                         ([(), ()], 0), ([(0, 2), (0, 2)], 1)]:
        yield Sample(([make(rng, s, dtype) for s in shapes],), dict(axis=axis))


def _split_samples(dtype, rng):
    for shape, spec, axis in [((6,), 3, 0), ((4, 6), 2, 1), ((5, 2), [2, 3], 0),
                              ((5, 2), [1, -1, 2], 0), ((3, 4), [0, 4], -1), ((3, 4), 1, 0),
                              ((0, 4), 2, 1)]:
        yield Sample((make(rng, shape, dtype),), dict(num_or_sizes=spec, axis=axis))


def _split_ref(x, num_or_sizes, axis=0):
    if isinstance(num_or_sizes, int):
        return np.split(x, num_or_sizes, axis=axis)
    sizes = list(num_or_sizes)
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


add(OpInfo("concat", en.concat, lambda tensors, axis=0: np.concatenate(tensors, axis=axis),
           _concat_samples, _op_dtypes("concat"), error_inputs=lambda: [
               ErrorInput(Sample(([np.ones((2, 3)), np.ones((2, 4))],), dict(axis=0)),
                          en.ShapeError),
               ErrorInput(Sample(([np.ones((2, 3)), np.ones(3)],), dict(axis=0)), en.ShapeError),
               ErrorInput(Sample(([np.ones(2), np.ones(2)],), dict(axis=1)), en.ShapeError),
               ErrorInput(Sample(([np.float64(1), np.float64(2)],)), en.ShapeError),
               ErrorInput(Sample(([],)), en.ShapeError)]))
add(OpInfo("stack", en.stack, lambda tensors, axis=0: np.stack(tensors, axis=axis),
           _stack_samples, _op_dtypes("stack"), error_inputs=lambda: [
               ErrorInput(Sample(([np.ones((2, 3)), np.ones((3, 2))],)), en.ShapeError),
               ErrorInput(Sample(([np.ones(2), np.ones(2)],), dict(axis=2)), en.ShapeError),
               ErrorInput(Sample(([],)), en.ShapeError)]))
add(OpInfo("split", en.split, _split_ref, _split_samples, _op_dtypes("split"),
           error_inputs=_errors([((5,), dict(num_or_sizes=2), en.ShapeError),
                                 ((5,), dict(num_or_sizes=[2, 2]), en.ShapeError),
                                 ((5,), dict(num_or_sizes=[-1, -1]), en.ShapeError),
                                 ((5,), dict(num_or_sizes=[4, -1, 3]), en.ShapeError),
                                 ((5,), dict(num_or_sizes=0), en.ShapeError),
                                 ((), dict(num_or_sizes=1), en.ShapeError),
                                 ((4,), dict(num_or_sizes=2, axis=1), en.ShapeError)])))


# Indexing. Index arrays given as numpy arrays reach the engine as int tensors
# (index inputs of the op); lists stay lists; boolean masks are converted by the engine.
def _tensor_index(index):
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(en.tensor(i) if isinstance(i, np.ndarray) else i for i in items)
    return items if isinstance(index, tuple) else items[0]


def _getitem_samples(dtype, rng):
    x = make(rng, (4, 3, 5), dtype)
    mask = np.array([True, False, True, True])
    for index in [1, -1, (slice(None), 2), (slice(1, 3), slice(None, None, -2)),
                  (Ellipsis, 0), (None, 2, Ellipsis, None), (slice(3, 1),),
                  ([0, 3, 3],), (np.array([[0, 1], [2, 3]]),), (slice(None), [2, 0], [1, 4]),
                  ([0, 1], slice(None), [4, 4]), (1, slice(None), np.array([0, 2])),
                  (mask,), (mask, slice(None), 2), (np.array([], dtype=np.int64),),
                  (slice(None), np.array(-1))]:
        yield Sample((x,), dict(index=index))
    yield Sample((make(rng, (), dtype),), dict(index=(None, Ellipsis)), desc="0-d input")
    yield Sample((make(rng, (0, 3), dtype),), dict(index=(slice(None), 1)), desc="0-size input")


def _scatter_add_samples(dtype, rng):
    x = make(rng, (4, 3), dtype)
    for index, ushape in [((1,), (3,)), ((slice(1, 3),), (2, 3)), ([0, 2, 0], (3, 3)),
                          ((np.array([1, 1, 3]), np.array([0, 0, 2])), (3,)),
                          ((slice(None), 1), ()), ((Ellipsis, [2, 2]), (4, 1)),
                          (np.array([], dtype=np.int64), (0, 3))]:
        yield Sample((x, make(rng, ushape, dtype)), dict(index=index))


def _scatter_add_ref(x, updates, index):
    out = np.array(x, copy=True)
    np.add.at(out, index, updates)
    return out


add(OpInfo("getitem", lambda x, index: en.ops.getitem(x, _tensor_index(index)),
           lambda x, index: x[index], _getitem_samples, _op_dtypes("getitem"),
           error_inputs=_errors([((4, 3), dict(index=(4,)), en.ShapeError),
                                 ((4, 3), dict(index=(0, 0, 0)), en.ShapeError),
                                 ((4, 3), dict(index=(np.array([0, 4]),)), en.ShapeError),
                                 ((4, 3), dict(index=(np.array([0.5]),)), en.DTypeError),
                                 ((4, 3), dict(index=(np.array([True, False]),)), en.ShapeError),
                                 ((4, 3), dict(index=([0, 1], [0, 1, 2])), en.ShapeError)])))
add(OpInfo("scatter_add",
           lambda x, updates, index: en.scatter_add(x, _tensor_index(index), updates),
           _scatter_add_ref, _scatter_add_samples, _op_dtypes("scatter_add"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(2)), dict(index=(1,))), en.ShapeError),
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(3)), dict(index=(5,))), en.ShapeError),
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(3)), dict(index=(np.array([7]),))),
                          en.ShapeError),
               ErrorInput(Sample((np.zeros((4, 3), np.int64), np.ones(3)), dict(index=(1,))),
                          en.DTypeError)]))


# Random ops: pure functions of an int64 key [seed, counter]; the reference
# draws from the same numpy generator.
def _key_rng(key):
    return np.random.default_rng(np.asarray(key, dtype=np.int64).view(np.uint64))


def _normal_ref(key, shape, mean=0.0, stddev=1.0, dtype=F32):
    dtype = np.dtype(dtype)
    z = _key_rng(key).standard_normal(shape, dtype=dtype)
    return (z * dtype.type(stddev) + dtype.type(mean)).astype(dtype)


def _uniform_ref(key, shape, minval=0.0, maxval=1.0, dtype=F32):
    dtype = np.dtype(dtype)
    u = _key_rng(key).random(shape, dtype=dtype)
    return (u * dtype.type(maxval - minval) + dtype.type(minval)).astype(dtype)


def _random_samples(low_kw, high_kw):
    def gen(dtype, rng):
        for key, shape, params in [([0, 0], (3, 4), {}), ([7, 3], (), {}), ([1, 2], (0, 5), {}),
                                   ([-5, 9], (5,), {low_kw: -2.0, high_kw: 3.0}),
                                   ([2**40, 1], 6, {low_kw: 1.5})]:
            yield Sample((np.array(key, dtype=np.int64),), dict(shape=shape, dtype=dtype, **params))
    return gen


def _random_errors(public):
    return lambda: [
        ErrorInput(Sample((np.array([0.0, 1.0]),), dict(shape=(2,))), en.DTypeError),
        ErrorInput(Sample((np.array([0, 1, 2]),), dict(shape=(2,))), en.DTypeError),
        ErrorInput(Sample((np.array([0, 1]),), dict(shape=(2, -1))), en.ShapeError, f"{public}:")]


add(OpInfo("random_normal", en.random.normal_from_key, _normal_ref,
           _random_samples("mean", "stddev"), _op_dtypes("random_normal"), supports_grad=False,
           random=True, error_inputs=_random_errors("normal")))
add(OpInfo("random_uniform", en.random.uniform_from_key, _uniform_ref,
           _random_samples("minval", "maxval"), _op_dtypes("random_uniform"), supports_grad=False,
           random=True, error_inputs=_random_errors("uniform")))


# Convolution, pooling and the composites live in op_db_nn* and op_db_conv (they add to OP_DB).
from op_db_nn import COMPOSITES  # noqa: E402
import op_db_linalg  # noqa: E402,F401  (einsum, products, engine.linalg)
import op_db_transforms  # noqa: E402,F401  (optimization_barrier)
import op_db_nn2  # noqa: E402,F401  (activations, losses, normalization)
import op_db_conv  # noqa: E402,F401  (convolution and pooling)
import op_db_numpy_names  # noqa: E402,F401  (all, any)
import op_db_shape  # noqa: E402,F401  (cumulative, sorting, manipulation, statistics)
import op_db_elementwise  # noqa: E402,F401  (elementwise math, bitwise ops and their composites)
import op_db_fft  # noqa: E402,F401  (real, imag, conj and the Fourier transforms)


# ---- finishing -------------------------------------------------------------------------
OPS_BY_NAME = {info.name: info for info in OP_DB}
ALL_ENTRIES = OP_DB + COMPOSITES


def to_engine(value):
    """Turn a sample's numpy arrays (also inside lists and tuples) into tensors."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return en.tensor(np.asarray(value))
    if isinstance(value, (list, tuple)):
        return type(value)(to_engine(v) for v in value)
    return value


def call_engine(info, sample):
    return info.op(*[to_engine(a) for a in sample.args], **sample.kwargs)


def call_ref(info, sample):
    return info.ref(*sample.args, **sample.kwargs)


def seeded_rng(*parts):
    """A generator seeded from a name (stable across runs and Python hash seeds)."""
    return np.random.default_rng([sum(ord(c) * (i + 1) for i, c in enumerate(str(p)))
                                  for p in parts])
