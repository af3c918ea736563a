"""Seeded weight initializers: Glorot/Xavier, He/Kaiming, orthogonal, zeros.

Each takes a shape, a dtype and an :class:`engine.random.Generator` and
returns a numpy array (layers wrap it in a Variable). The same seed gives the
same weights. Fans follow the layouts of this engine's layers: a dense
weight is ``(in, out)``, a convolution filter ``(kh, kw, in, out)``, so
``fan_in = prod(shape[:-1])`` and ``fan_out = shape[-1] * prod(shape[:-2])``.

PyTorch's in-place initializers (``xavier_uniform_``, ``kaiming_normal_``,
``trunc_normal_`` ...) live here too (see :mod:`engine.nn.init_torch`).

Example:
    >>> import engine as en
    >>> g = en.random.Generator(0)
    >>> w = en.nn.init.glorot_uniform((64, 32), generator=g)
    >>> bool(abs(w).max() <= (6 / (64 + 32)) ** 0.5), w.dtype
    (True, dtype('float32'))
"""
import math

import numpy as np

from .. import default_dtype
from ..errors import InvalidArgumentError, ShapeError
from ..random import Generator, default_generator
# PyTorch's in-place forms (xavier_uniform_ ...), under their names here.
from .init_torch import (calculate_gain, constant_, kaiming_normal_, kaiming_uniform_,  # noqa: F401
                         normal_, ones_, orthogonal_, trunc_normal_, uniform_, xavier_normal_,
                         xavier_uniform_, zeros_)


def fans(shape):
    """``(fan_in, fan_out)`` for a dense ``(in, out)`` or conv ``(kh, kw, in, out)`` weight."""
    shape = tuple(int(d) for d in shape)
    if len(shape) < 1:
        raise ShapeError(f"init: a weight needs at least one dimension, got shape {shape}")
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


def _generator(generator):
    if generator is None:
        return default_generator()
    if isinstance(generator, int):
        return Generator(generator)
    return generator


def _uniform(shape, bound, dtype, generator):
    dt = default_dtype.model_float(dtype)
    return _generator(generator).uniform(tuple(shape), -bound, bound, dtype=dt).numpy()


def _normal(shape, std, dtype, generator):
    dt = default_dtype.model_float(dtype)
    return _generator(generator).normal(tuple(shape), 0.0, std, dtype=dt).numpy()


def glorot_uniform(shape, dtype=None, generator=None, gain=1.0):
    """Uniform on ``[-a, a]``, ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot and Bengio).

    ``generator`` is an ``en.random.Generator``, an int seed, or None (the
    default stream). PyTorch's ``xavier_uniform_``, Keras's ``GlorotUniform``.
    """
    fan_in, fan_out = fans(shape)
    return _uniform(shape, gain * math.sqrt(6.0 / (fan_in + fan_out)), dtype, generator)


def glorot_normal(shape, dtype=None, generator=None, gain=1.0):
    """Normal with std ``gain * sqrt(2 / (fan_in + fan_out))`` (PyTorch's ``xavier_normal_``)."""
    fan_in, fan_out = fans(shape)
    return _normal(shape, gain * math.sqrt(2.0 / (fan_in + fan_out)), dtype, generator)


def he_uniform(shape, dtype=None, generator=None):
    """Uniform on ``[-a, a]``, ``a = sqrt(6 / fan_in)`` (He et al.; for ReLU layers).

    PyTorch's ``kaiming_uniform_(nonlinearity="relu")``, Keras's ``HeUniform``.
    """
    fan_in, _ = fans(shape)
    return _uniform(shape, math.sqrt(6.0 / fan_in), dtype, generator)


def he_normal(shape, dtype=None, generator=None):
    """Normal with std ``sqrt(2 / fan_in)`` (PyTorch's ``kaiming_normal_``, not truncated)."""
    fan_in, _ = fans(shape)
    return _normal(shape, math.sqrt(2.0 / fan_in), dtype, generator)


def lecun_uniform(shape, dtype=None, generator=None):
    """Uniform on ``[-a, a]``, ``a = sqrt(1 / fan_in)``: PyTorch's default for Linear/Conv."""
    fan_in, _ = fans(shape)
    return _uniform(shape, math.sqrt(1.0 / fan_in), dtype, generator)


def orthogonal(shape, dtype=None, generator=None, gain=1.0):
    """A (semi-)orthogonal matrix (Saxe et al.): the Q of a QR of a normal draw, sign-fixed.

    The weight is seen as a ``(prod(shape[:-1]), shape[-1])`` matrix; its
    columns (or rows, when there are more columns) are orthonormal, times ``gain``.

    Example:
        >>> import engine as en
        >>> q = en.nn.init.orthogonal((4, 4), dtype="float64", generator=1)
        >>> bool(abs(q.T @ q - np.eye(4)).max() < 1e-12)
        True
    """
    shape = tuple(int(d) for d in shape)
    if len(shape) < 2:
        raise ShapeError(f"orthogonal: needs a weight of at least two dimensions, got {shape}")
    rows, cols = int(np.prod(shape[:-1])), shape[-1]
    a = _normal((max(rows, cols), min(rows, cols)), 1.0, "float64", generator)
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))           # make the decomposition unique (Mezzadri, 2007)
    if rows < cols:
        q = q.T
    return (gain * q).reshape(shape).astype(default_dtype.model_float(dtype))


def zeros(shape, dtype=None, generator=None):
    """All zeros (biases)."""
    return np.zeros(tuple(shape), dtype=default_dtype.model_float(dtype))


def ones(shape, dtype=None, generator=None):
    """All ones (normalization scales)."""
    return np.ones(tuple(shape), dtype=default_dtype.model_float(dtype))


INITIALIZERS = {"glorot_uniform": glorot_uniform, "xavier_uniform": glorot_uniform,
                "glorot_normal": glorot_normal, "xavier_normal": glorot_normal,
                "he_uniform": he_uniform, "kaiming_uniform": he_uniform,
                "he_normal": he_normal, "kaiming_normal": he_normal,
                "lecun_uniform": lecun_uniform, "orthogonal": orthogonal,
                "zeros": zeros, "ones": ones}


def get(init):
    """An initializer from its name (``"he_uniform"``, ``"xavier_normal"``, ...) or a callable."""
    if callable(init):
        return init
    try:
        return INITIALIZERS[init]
    except (KeyError, TypeError):
        raise InvalidArgumentError(f"unknown initializer {init!r}; known: {sorted(INITIALIZERS)}") from None
