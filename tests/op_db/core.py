"""Building blocks of the op database: samples, entries, value makers, sample
generators and the helpers that register an entry (see ``op_db``)."""
import dataclasses
from typing import Callable, Optional

import numpy as np

import engine as en

F32, F64 = np.dtype("float32"), np.dtype("float64")
I32, I64 = np.dtype("int32"), np.dtype("int64")
BOOL = np.dtype("bool")
FLOATS = (F32, F64)
INTS = (I32, I64)
NUMERIC = FLOATS + INTS
ALL = NUMERIC + (BOOL,)


@dataclasses.dataclass
class Sample:
    """One call: ``op(*args, **kwargs)``; numpy arrays in ``args`` become tensors."""
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    desc: str = ""

    def __repr__(self):
        parts = [f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else repr(a)
                 for a in self.args]
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"Sample({', '.join(parts)}{'; ' + self.desc if self.desc else ''})"


@dataclasses.dataclass
class ErrorInput:
    """A call that must raise ``error``; the message must contain ``match``
    (the op's name when ``match`` is None)."""
    sample: Sample
    error: type
    match: Optional[str] = None


def _no_errors():
    return ()


@dataclasses.dataclass
class OpInfo:
    """Everything the suites need to test one op.

    * ``op``: the public engine function, called as ``op(*args, **kwargs)``;
    * ``ref``: the numpy reference, called the same way on numpy values;
    * ``sample_inputs(dtype, rng)``: the samples for one dtype;
    * ``dtypes``: the dtypes the op claims (for a registered op, its ``Op.dtypes``);
    * ``error_inputs()``: calls that must fail (dtypes outside ``dtypes`` are
      added automatically by the numeric suite);
    * ``supports_grad``: checked by finite differences, with ``grad_samples(rng)``
      (float64 samples in the op's smooth domain; defaults to the float64
      ``sample_inputs``); ``grad_skip`` says why a differentiable op is not.
    """
    name: str
    op: Callable
    ref: Callable
    sample_inputs: Callable
    dtypes: tuple
    error_inputs: Callable = _no_errors
    supports_grad: bool = True
    grad_samples: Optional[Callable] = None
    grad_skip: str = ""
    composite: bool = False
    random: bool = False  # draws from a key: also checked for determinism and moments

    def samples_for_grad(self, rng):
        if self.grad_samples is not None:
            return list(self.grad_samples(rng))
        return list(self.sample_inputs(F64, rng))


# ---- value makers ------------------------------------------------------------
def make(rng, shape, dtype, low=-3.0, high=3.0):
    """Random values of ``dtype`` in ``[low, high]`` (ints: whole numbers in that range)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(int(np.ceil(low)), int(np.floor(high)) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def make_nonzero(rng, shape, dtype, low=0.5, high=3.0):
    """Values with magnitude in ``[low, high]`` and a random sign (away from 0 kinks)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.ones(shape, dtype=bool)
    mag = make(rng, shape, dtype, max(low, 1) if dtype.kind in "iu" else low, high)
    sign = np.where(rng.random(shape) < 0.5, -1, 1).astype(dtype)
    return np.asarray(mag * sign, dtype=dtype)


def make_positive(rng, shape, dtype, low=0.5, high=3.0):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.ones(shape, dtype=bool)
    return make(rng, shape, dtype, max(low, 1) if dtype.kind in "iu" else low, high)


def make_distinct(rng, shape, dtype, offset=0.0):
    """Float values on a grid of step 0.5 (plus ``offset`` and a little noise), all
    different within the array and at least 0.05 away from values made with an
    offset of 0.25: no ties for max/min and their gradients."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == BOOL or dtype.kind in "iu":
        return make(rng, shape, dtype)
    grid = (rng.permutation(max(n, 1))[:n] - n // 2) * 0.5
    noise = rng.uniform(-0.1, 0.1, size=n)
    return (grid + offset + noise).reshape(shape).astype(dtype)


def scalar_of(dtype):
    """A Python scalar of the same kind as ``dtype`` (weakly typed by the engine)."""
    dtype = np.dtype(dtype)
    return True if dtype == BOOL else (2 if dtype.kind in "iu" else 1.5)


# ---- sample generators -----------------------------------------------------------
UNARY_SHAPES = [(), (5,), (2, 3), (2, 1, 3), (0,), (2, 0, 3)]
BINARY_SHAPES = [((), ()), ((4,), (4,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)),
                 ((3, 1, 2), (4, 1)), ((), (2, 3)), ((0, 3), (1, 3)), ((2, 0), (2, 1))]


def unary_samples(maker=make):
    def gen(dtype, rng):
        for shape in UNARY_SHAPES:
            yield Sample((maker(rng, shape, dtype),))
        # Non-contiguous input (a transposed view).
        yield Sample((np.ascontiguousarray(maker(rng, (3, 4), dtype)).T,), desc="transposed")
    return gen


def binary_samples(make_x=make, make_y=make, scalars=True, mixed=True):
    def gen(dtype, rng):
        for sx, sy in BINARY_SHAPES:
            yield Sample((make_x(rng, sx, dtype), make_y(rng, sy, dtype)))
        if scalars:
            s = scalar_of(dtype)
            yield Sample((make_x(rng, (2, 3), dtype), s), desc="python scalar")
            yield Sample((s, make_y(rng, (3,), dtype)), desc="python scalar first")
        if mixed and dtype in NUMERIC:
            other = {F32: I32, F64: F32, I32: I64, I64: I32}[dtype]
            yield Sample((make_x(rng, (2, 3), dtype), make_y(rng, (3,), other)),
                         desc=f"promotion with {other}")
    return gen


def binary_errors():
    return [ErrorInput(Sample((np.ones((2, 3)), np.ones((4,)))), en.ShapeError),
            ErrorInput(Sample((np.ones((2, 3)), np.ones((3, 2)))), en.ShapeError)]


REDUCE_CASES = [((), None, False), ((), None, True), ((5,), None, False), ((5,), 0, True),
                ((5,), -1, False), ((2, 3, 4), None, False), ((2, 3, 4), None, True),
                ((2, 3, 4), 1, False), ((2, 3, 4), -1, True), ((2, 3, 4), (0, 2), False),
                ((2, 3, 4), (-1, 0), True), ((2, 3, 4), (), False), ((2, 3), [1], False)]
EMPTY_OK = [((0, 3), 0, False), ((2, 0), None, True), ((0, 3), 1, False)]  # reduce over empty
EMPTY_KEPT = [((0, 3), 1, False), ((2, 0, 3), (0, 2), True)]                # empty axis kept


def reduce_samples(maker=make, empty_reduce=True):
    def gen(dtype, rng):
        cases = REDUCE_CASES + (EMPTY_OK if empty_reduce else EMPTY_KEPT)
        for shape, axis, keepdims in cases:
            yield Sample((maker(rng, shape, dtype),), dict(axis=axis, keepdims=keepdims))
    return gen


def np_reduce(fn):
    """numpy reduction taking ``axis`` as the engine does (a list means a tuple)."""
    def ref(x, axis=None, keepdims=False):
        return fn(x, axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdims)
    return ref


def reduce_errors(empty_reduce=True):
    errs = [ErrorInput(Sample((np.ones((2, 3)),), dict(axis=2)), en.ShapeError),
            ErrorInput(Sample((np.ones((2, 3)),), dict(axis=-3)), en.ShapeError),
            ErrorInput(Sample((np.ones((2, 3)),), dict(axis=(0, 0))), en.ShapeError),
            ErrorInput(Sample((np.ones((2, 3)),), dict(axis=(1, -1))), en.ShapeError),
            ErrorInput(Sample((np.float64(1.0),), dict(axis=0)), en.ShapeError)]
    if not empty_reduce:
        errs.append(ErrorInput(Sample((np.ones((0, 3)),), dict(axis=0)), en.ShapeError))
        errs.append(ErrorInput(Sample((np.ones((2, 0)),), dict(axis=None)), en.ShapeError))
    return lambda: errs


# ---- the registered ops -------------------------------------------------------------
OP_DB = []


def add(info):
    """Register the entry of a registered op."""
    OP_DB.append(info)
    return info


# ---- composites: public functions made of registered ops ------------------------------
COMPOSITES = []


def composite(info):
    """Register the entry of a composite (a public function made of registered ops)."""
    info.composite = True
    COMPOSITES.append(info)
    return info


def op_dtypes(name):
    """The dtypes of ``ALL`` that the registered op ``name`` takes."""
    return tuple(d for d in ALL if d in (en.REGISTRY[name].dtypes or ALL))


def unary(name, ref, maker=make, **kw):
    return add(OpInfo(name, getattr(en, name), ref, unary_samples(maker), op_dtypes(name), **kw))


def binary(name, ref, make_x=make, make_y=make, **kw):
    return add(OpInfo(name, getattr(en, name), ref, binary_samples(make_x, make_y),
                      op_dtypes(name), error_inputs=binary_errors, **kw))


# ---- samples of ``op(x, **params)`` from a table of cases ------------------------------
def with_params(cases, maker=make):
    """Samples ``op(x, **params)`` for ``(shape_of_x, params)`` cases."""
    def gen(dtype, rng):
        for shape, params in cases:
            yield Sample((maker(rng, shape, dtype),), dict(params))
    return gen


def error_cases(cases):
    """Error inputs ``op(ones(shape), **params)`` raising ``error`` (its message matching
    ``match`` where given), from ``(shape, params, error[, match])`` cases."""
    return lambda: [ErrorInput(Sample((np.ones(shape),), dict(params)), error, *match)
                    for shape, params, error, *match in cases]


# ---- calling an entry -------------------------------------------------------------------
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
