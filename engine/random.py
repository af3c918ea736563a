"""Random numbers as pure ops on an explicit key, and a stateful :class:`Generator`.

The ops ``random_normal`` and ``random_uniform`` take one input, an int64
*key* tensor ``[seed, counter]``, and draw with
``np.random.default_rng([seed, counter])``: the same key always gives the same
numbers, so the ops are pure and can be traced, cached and re-run.

``random_uniform_like`` draws with the shape of a second input, read when the
op runs, so a graph traced for an unknown batch size draws as many numbers as
the batch has (the same numbers as ``random_uniform`` of that shape).

A :class:`Generator` keeps its key in a non-trainable ``Variable`` and bumps
the counter after every draw (``normal``, ``uniform``, ``uniform_like``, and
``integers``, ``permutation``, ``choice``, ``bernoulli``, ``categorical``,
``truncated_normal`` from :mod:`engine.random_draws`), so the same seed gives
the same stream of numbers, in eager mode and in graphs alike (reads and
assigns of variables are traced like any other op).

Example:
    >>> import engine as en
    >>> a = en.random.normal((2,), seed=1)
    >>> b = en.random.normal((2,), seed=1)
    >>> bool((a.numpy() == b.numpy()).all())
    True
"""
# Imported under private names: ``dir(en.random)`` shows only what the module offers.
import operator as _operator

import numpy as _np

from . import default_dtype as _default_dtype
from . import dtypes as _dtypes
from .errors import (ArgumentTypeError as _ArgumentTypeError, DTypeError as _DTypeError,
                     InvalidArgumentError as _InvalidArgumentError,
                     describe_inputs as _describe_inputs)
from .modes import apply as _apply
from .op import Op as _Op, declare as _declare, register as _register
from .ops.creation import check_shape as _check_shape
from .random_draws import Draws as _Draws
from .variable import Variable as _Variable

__all__ = ["Generator", "default_generator", "normal", "normal_from_key", "set_seed", "uniform",
           "uniform_from_key", "uniform_like_from_key"]

_KEY_DTYPE = _dtypes.int64


def _check_key(name, key):
    shape, dt = key
    if dt != _KEY_DTYPE or len(shape) != 1 or shape[0] not in (2, None):
        raise _DTypeError(f"{name}: the key must be an int64 tensor of shape (2,) "
                          f"([seed, counter]), got {_describe_inputs([key])}")


def _rng(key):
    # SeedSequence takes non-negative integers: reinterpret the int64 bits.
    return _np.random.default_rng(_np.asarray(key, dtype=_np.int64).view(_np.uint64))


def _random_eval(name):
    def abstract_eval(key, *, shape, dtype, **_):
        _check_key(name, key)
        dt = _dtypes.as_dtype(dtype)
        if dt not in _dtypes.FLOATS:
            raise _DTypeError(f"{name}: dtype must be float32 or float64, got {dt}")
        return (_check_shape(name, shape), dt)
    return abstract_eval


def _normal_impl(key, *, shape, dtype, mean, stddev):
    z = _rng(key).standard_normal(shape, dtype=dtype)
    if stddev != 1.0:
        z *= dtype.type(stddev)
    if mean != 0.0:
        z += dtype.type(mean)
    return z


def _uniform_impl(key, *, shape, dtype, minval, maxval):
    u = _rng(key).random(shape, dtype=dtype)
    if (minval, maxval) != (0.0, 1.0):
        u *= dtype.type(maxval - minval)
        u += dtype.type(minval)
    return u


def _drawn_on_host(impl):
    """A random op's kernel on any back end: the key's stream is numpy's generator
    by definition (the same key gives the same numbers everywhere), so the draw
    happens on the host and moves to the back end through its conversions."""
    def kernel(be, key, **params):
        return be.from_numpy(impl(be.to_numpy(key), **params))
    kernel.__name__ = f"{impl.__name__}_on_host"
    return kernel


random_normal_op = _register(_Op(
    "random_normal", _normal_impl, _random_eval("random_normal"), None, random=True,
    generic=_drawn_on_host(_normal_impl),
    differentiable=False, n_inputs=1, dtypes=_dtypes.FLOATS,
    doc="Normal samples drawn from an int64 key [seed, counter] (same key, same numbers)."))
_declare(random_normal_op, onnx=None)  # ONNX draws other numbers than the engine
random_uniform_op = _register(_Op(
    "random_uniform", _uniform_impl, _random_eval("random_uniform"), None, random=True,
    generic=_drawn_on_host(_uniform_impl),
    differentiable=False, n_inputs=1, dtypes=_dtypes.FLOATS,
    doc="Uniform samples in [minval, maxval) drawn from an int64 key [seed, counter]."))
_declare(random_uniform_op, onnx=None)  # ONNX draws other numbers than the engine


def _uniform_like_eval(key, like, *, dtype, **_):
    _check_key("random_uniform_like", key)
    dt = _dtypes.as_dtype(dtype)
    if dt not in _dtypes.FLOATS:
        raise _DTypeError(f"random_uniform_like: dtype must be float32 or float64, got {dt}")
    return (tuple(like[0]), dt)     # the shape may hold None: a trace of unknown batch


def _uniform_like_impl(key, like, *, dtype, minval, maxval):
    # The same numbers as random_uniform with shape like.shape: a draw of an unknown
    # batch size in a graph matches the eager one.
    return _uniform_impl(key, shape=tuple(like.shape), dtype=dtype, minval=minval, maxval=maxval)


def _uniform_like_on_host(be, key, like, **params):
    return be.from_numpy(_uniform_like_impl(be.to_numpy(key), _np.empty(tuple(like.shape), "b1"),
                                            **params))


random_uniform_like_op = _register(_Op(
    "random_uniform_like", _uniform_like_impl, _uniform_like_eval, None, random=True,
    generic=_uniform_like_on_host, differentiable=False, n_inputs=2, dtypes=_dtypes.FLOATS,
    doc="Uniform samples of the shape of a second input (only its shape is read), from an "
        "int64 key [seed, counter]: draws whose shape is known only when the graph runs."))
_declare(random_uniform_like_op, onnx=None)  # ONNX draws other numbers than the engine


def _key_for_seed(seed):
    # operator.index: an int (or numpy integer), never a float or a numeric string
    try:
        seed = _operator.index(seed)
    except TypeError:
        raise _ArgumentTypeError(f"Generator: seed must be an int, got {type(seed).__name__} "
                                 f"{seed!r:.60}") from None
    if not -2**63 <= seed < 2**63:
        raise _InvalidArgumentError(f"Generator: seed {seed} does not fit in int64")
    return _np.array([seed, 0], dtype=_np.int64)


def normal_from_key(key, shape, mean=0.0, stddev=1.0, dtype=None):
    """Normal samples from an explicit int64 key ``[seed, counter]`` (pure)."""
    return _apply(random_normal_op, key, shape=_check_shape("normal", shape),
                  dtype=_default_dtype.model_float(dtype),
                  mean=float(mean), stddev=float(stddev))


def uniform_from_key(key, shape, minval=0.0, maxval=1.0, dtype=None):
    """Uniform samples in ``[minval, maxval)`` from an explicit int64 key (pure)."""
    return _apply(random_uniform_op, key, shape=_check_shape("uniform", shape),
                  dtype=_default_dtype.model_float(dtype),
                  minval=float(minval), maxval=float(maxval))


def uniform_like_from_key(key, like, minval=0.0, maxval=1.0, dtype=None):
    """Uniform samples of ``like``'s shape from an explicit int64 key (pure); the same
    numbers as :func:`uniform_from_key` with ``like.shape``, also for a traced ``like``
    of unknown batch size."""
    return _apply(random_uniform_like_op, key, like,
                  dtype=_default_dtype.model_float(dtype),
                  minval=float(minval), maxval=float(maxval))


class Generator(_Draws):
    """A stream of random numbers: the same ``seed`` gives the same stream.

    The state is a non-trainable int64 ``Variable`` ``[seed, counter]``; each
    draw uses the current state as the key, then adds one to the counter.

    Example:
        >>> import engine as en
        >>> g1, g2 = en.random.Generator(7), en.random.Generator(7)
        >>> bool((g1.normal((3,)).numpy() == g2.normal((3,)).numpy()).all())
        True
    """

    def __init__(self, seed):
        self.state = _Variable(_key_for_seed(seed), name="rng_state", trainable=False)

    def _next_key(self):
        key = self.state.read()
        self.state.assign_add(_np.array([0, 1], dtype=_np.int64))
        return key

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=None):
        """Normal samples of ``shape`` with ``mean`` and ``stddev``."""
        return normal_from_key(self._next_key(), shape, mean, stddev, dtype)

    def uniform(self, shape, minval=0.0, maxval=1.0, dtype=None):
        """Uniform samples of ``shape`` in ``[minval, maxval)``."""
        return uniform_from_key(self._next_key(), shape, minval, maxval, dtype)

    def uniform_like(self, like, minval=0.0, maxval=1.0, dtype=None):
        """Uniform samples of ``like``'s shape (known or not until a graph runs)."""
        return uniform_like_from_key(self._next_key(), like, minval, maxval, dtype)

    def reset(self, seed):
        """Restart the stream as if the generator were made with ``seed``."""
        self.state.assign(_key_for_seed(seed))

    def __repr__(self):
        seed, counter = (int(v) for v in self.state.numpy())
        return f"<Generator seed={seed} counter={counter}>"


# Seeded from the OS at import; call set_seed for a reproducible default stream.
_default = Generator(int(_np.random.SeedSequence().generate_state(1, _np.uint64)[0] >> 1))


def default_generator():
    """The generator that draws when no ``seed`` is given."""
    return _default


def set_seed(seed):
    """Restart the default generator from ``seed`` (makes unseeded draws reproducible).

    Example:
        >>> import engine as en
        >>> en.random.set_seed(0); a = en.random.uniform((2,))
        >>> en.random.set_seed(0); b = en.random.uniform((2,))
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """
    _default.reset(seed)


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples from a normal distribution, float32 unless ``dtype`` or
    ``en.set_default_dtype`` says otherwise.

    With an integer ``seed`` the result is fixed (key ``[seed, 0]``); without
    one, the default generator draws the next numbers of its stream.

    Example:
        >>> import engine as en
        >>> en.random.normal((2, 3), seed=0).shape
        (2, 3)
    """
    if seed is None:
        return _default.normal(shape, mean, stddev, dtype)
    return normal_from_key(_key_for_seed(seed), shape, mean, stddev, dtype)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples from the uniform distribution on ``[minval, maxval)``.

    Seeds work as in :func:`normal`.

    Example:
        >>> import engine as en
        >>> float(en.random.uniform((), seed=3)) < 1.0
        True
    """
    if seed is None:
        return _default.uniform(shape, minval, maxval, dtype)
    return uniform_from_key(_key_for_seed(seed), shape, minval, maxval, dtype)
