"""The distributions of :class:`engine.random.Generator` beyond ``normal`` and ``uniform``:
``integers``, ``permutation``, ``choice``, ``bernoulli``, ``categorical`` and
``truncated_normal``, with numpy ``Generator``'s names and arguments where
numpy has the method.

Each is written in engine ops over the generator's uniform draws, so it runs
eagerly, traces into graphs (the same seed gives the same numbers in both) and
needs no rules of its own. ``bernoulli(p)`` and ``categorical(logits)`` draw
with the shape of their input, so they work in a trace of unknown batch size.

Example:
    >>> import engine as en
    >>> g = en.random.Generator(0)
    >>> g.integers(0, 10, size=5).shape, g.permutation(4).dtype
    ((5,), dtype('int64'))
"""
import math
import operator
from collections.abc import Callable

import numpy as np

from . import default_dtype, dtypes, ops
from .errors import ArgumentTypeError, InvalidArgumentError, ShapeError
from .ops.creation import check_shape
from .tensor import Tensor, tensor


def _size(size):
    return () if size is None else check_shape("size", size)


def _int(who, label, value):
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{who}: {label} must be an int, got {type(value).__name__} "
                                f"{value!r:.60}") from None


def _concrete(x):
    """``x``'s numpy value when it is known now (not a traced tensor), else None."""
    if isinstance(x, Tensor):
        return None if x._value is None else x.numpy()
    return np.asarray(x)


class Draws:
    """The distributions a :class:`~engine.random.Generator` draws, from its ``uniform``."""

    # Defined by the Generator: draws of a shape, and of another tensor's shape.
    uniform: Callable[..., Tensor]
    uniform_like: Callable[..., Tensor]

    def integers(self, low, high=None, size=None, dtype="int64", endpoint=False):
        """Random integers in ``[low, high)`` (``[low, high]`` with ``endpoint``), as
        ``numpy.random.Generator.integers``; ``integers(n)`` draws from ``[0, n)``.

        Example:
            >>> import engine as en
            >>> v = en.random.Generator(1).integers(5, size=(2, 3)).numpy()
            >>> v.shape, bool(((0 <= v) & (v < 5)).all())
            ((2, 3), True)
        """
        if high is None:
            low, high = 0, low
        low, high = _int("integers", "low", low), _int("integers", "high", high)
        high += 1 if endpoint else 0
        dt = dtypes.as_dtype(dtype)
        if dt not in dtypes.INTS:
            raise ArgumentTypeError(f"integers: dtype must be an integer dtype, got {dt}")
        if low >= high:
            raise InvalidArgumentError(f"integers: low >= high (low={low}, high="
                                       f"{high - (1 if endpoint else 0)}, endpoint={endpoint})")
        info = np.iinfo(dt)
        if low < info.min or high - 1 > info.max:
            raise InvalidArgumentError(f"integers: the range [{low}, {high}) does not fit {dt}")
        span = high - low
        if span > 2 ** 53:       # drawn from float64 uniforms: every integer must be one
            raise InvalidArgumentError(f"integers: a range of {span} values is over 2**53")
        u = self.uniform(_size(size), dtype="float64")
        # min(): u * span may round up to span for a large span
        k = ops.minimum(ops.floor(ops.mul(u, float(span))), float(span - 1))
        return ops.cast(ops.add(k, float(low)), dt)

    def permutation(self, x, axis=0):
        """A random order of ``arange(x)`` (``x`` an int), or of ``x`` along ``axis``
        (a copy), as ``numpy.random.Generator.permutation``.

        Example:
            >>> import engine as en
            >>> sorted(en.random.Generator(0).permutation(5).numpy().tolist())
            [0, 1, 2, 3, 4]
        """
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            n = int(x)
            if n < 0:
                raise InvalidArgumentError(f"permutation: n must be >= 0, got {n}")
            return self._order(n)
        x = x if isinstance(x, Tensor) else tensor(x)
        if x.ndim == 0:
            raise ShapeError("permutation: x must be an int or an array of rank >= 1, got a scalar")
        n = x.shape[axis]
        if n is None:
            raise ShapeError(f"permutation: the length of axis {axis} must be known, got shape "
                             f"{x.shape}")
        return ops.take(x, self._order(n), axis=axis)

    def _order(self, n):
        # float64 keys: ties (probability ~n**2 / 2**53) keep the stable sort's order.
        return ops.argsort(self.uniform((n,), dtype="float64"))

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        """Random entries of ``a`` (an array, along ``axis``) or of ``arange(a)`` (an int),
        as ``numpy.random.Generator.choice``: with or without replacement, uniformly or
        with probabilities ``p`` (1-D, summing to 1). Without replacement the result is in
        random order; ``shuffle=False`` is accepted (numpy leaves the order unspecified
        then).

        Example:
            >>> import engine as en
            >>> g = en.random.Generator(2)
            >>> g.choice(3, size=4, p=[0.0, 0.0, 1.0]).numpy()
            array([2, 2, 2, 2])
            >>> sorted(g.choice(en.tensor([10, 20, 30]), 3, replace=False).numpy().tolist())
            [10, 20, 30]
        """
        pool = None
        if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
            n = int(a)
        else:
            pool = a if isinstance(a, Tensor) else tensor(a)
            if pool.ndim == 0:
                raise ShapeError("choice: a must be an int or an array of rank >= 1")
            n = pool.shape[axis]
        if n is None or n <= 0:
            raise InvalidArgumentError(f"choice: a must be a non-empty population, got {n} "
                                       "entries")
        shape = _size(size)
        if p is not None:
            p = self._probabilities(p, n)
        if replace:
            if p is None:
                idx = self.integers(0, n, size=shape)
            else:
                cdf = ops.cumsum(p)
                u = ops.mul(self.uniform(shape, dtype="float64"), cdf[-1])
                idx = ops.minimum(ops.searchsorted(cdf, u, side="right"), n - 1)
        else:
            k = int(np.prod(shape, dtype=np.int64))
            if k > n:
                raise InvalidArgumentError(f"choice: cannot take a larger sample ({k}) than the "
                                           f"population ({n}) when replace is False")
            keys = _gumbel(self.uniform((n,), dtype="float64"))
            if p is not None:      # Gumbel top-k: weighted sampling without replacement
                keys = ops.add(keys, ops.log(p))
            idx = ops.reshape(ops.argsort(keys, descending=True)[:k], shape)
        return idx if pool is None else ops.take(pool, idx, axis=axis)

    @staticmethod
    def _probabilities(p, n):
        value = _concrete(p)
        if value is not None:
            if value.shape != (n,):
                raise ShapeError(f"choice: p must be 1-D with one entry per choice ({n}), got "
                                 f"shape {value.shape}")
            if (value < 0).any() or not math.isclose(float(value.sum()), 1.0, abs_tol=1e-8):
                raise InvalidArgumentError("choice: probabilities must be non-negative and sum "
                                           f"to 1, got sum {float(value.sum())}")
            return tensor(value, dtype="float64")
        return ops.cast(p, "float64")

    def bernoulli(self, p, size=None, dtype=None):
        """1 with probability ``p``, else 0 (PyTorch's ``bernoulli``): ``p`` a number or an
        array; the result has ``size`` or, by default, ``p``'s shape (known or not until
        a graph runs), and ``p``'s float dtype unless ``dtype`` says otherwise.

        Example:
            >>> import engine as en
            >>> en.random.Generator(0).bernoulli(en.tensor([0.0, 1.0, 1.0])).numpy()
            array([0., 1., 1.])
        """
        p = p if isinstance(p, Tensor) else tensor(p)
        if p.dtype not in dtypes.FLOATS:
            p = ops.cast(p, "float64")
        value = _concrete(p)
        if value is not None and ((value < 0) | (value > 1)).any():
            raise InvalidArgumentError("bernoulli: p must be in [0, 1]")
        u = (self.uniform_like(p, dtype=p.dtype) if size is None
             else self.uniform(_size(size), dtype=p.dtype))
        return ops.cast(ops.less(u, p), dtype or p.dtype)

    def categorical(self, logits, num_samples=None, axis=-1):
        """Indices drawn with probabilities ``softmax(logits)`` along ``axis`` (the Gumbel-max
        trick); one per row, or ``num_samples`` per row on a new last axis. The batch
        dimensions may be unknown until a graph runs.

        Example:
            >>> import engine as en
            >>> logits = en.log(en.tensor([[1e-9, 1.0], [1.0, 1e-9]]))
            >>> en.random.Generator(0).categorical(logits).numpy()
            array([1, 0])
        """
        logits = logits if isinstance(logits, Tensor) else tensor(logits)
        if logits.ndim == 0:
            raise ShapeError("categorical: logits must have a category axis, got a scalar")
        if logits.dtype not in dtypes.FLOATS:
            logits = ops.cast(logits, "float64")
        logits = ops.moveaxis(logits, axis, -1)
        if num_samples is not None:
            k = _int("categorical", "num_samples", num_samples)
            zeros = ops.zeros((k, 1), dtype=logits.dtype)
            logits = ops.add(ops.expand_dims(logits, -2), zeros)
        return ops.argmax(ops.add(logits, _gumbel(self.uniform_like(logits, dtype=logits.dtype))),
                          axis=-1)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, low=-2.0, high=2.0, dtype=None):
        """Normal samples of ``mean`` and ``stddev`` restricted to ``[low, high]`` (absolute
        bounds, as PyTorch's ``trunc_normal_``), by the inverse of the normal CDF.

        Bounds more than about 6 ``stddev`` from the mean lose precision (float64 CDF).

        Example:
            >>> import engine as en
            >>> v = en.random.Generator(0).truncated_normal((1000,), low=-1.0, high=1.0).numpy()
            >>> bool((v >= -1).all() and (v <= 1).all())
            True
        """
        if not stddev > 0 or not low < high:
            raise InvalidArgumentError(f"truncated_normal: need stddev > 0 and low < high, got "
                                       f"stddev={stddev}, low={low}, high={high}")
        a, b = (low - mean) / stddev, (high - mean) / stddev
        u = self.uniform(check_shape("truncated_normal", shape), _cdf(a), _cdf(b), "float64")
        z = ops.zeros_like(u)
        # Newton on cdf(z) = u from 0: the CDF is concave on the side of the root, so the
        # steps approach it from one side; clipping keeps them in [a, b].
        for _ in range(30):
            pdf = ops.mul(ops.exp(ops.mul(ops.square(z), -0.5)), 1.0 / math.sqrt(2 * math.pi))
            cdf = ops.mul(ops.add(ops.erf(ops.mul(z, 1.0 / math.sqrt(2.0))), 1.0), 0.5)
            z = ops.clip(ops.sub(z, ops.divide(ops.sub(cdf, u), ops.maximum(pdf, 1e-300))), a, b)
        out = ops.add(ops.mul(z, float(stddev)), float(mean))
        return ops.cast(out, default_dtype.model_float(dtype))


def _cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def _gumbel(u):
    return ops.negative(ops.log(ops.negative(ops.log(u))))
