"""PyTorch's in-place initializers (``torch.nn.init``): ``uniform_``, ``normal_``,
``trunc_normal_``, ``constant_``, ``zeros_``, ``ones_``, ``xavier_uniform_``,
``xavier_normal_``, ``kaiming_uniform_``, ``kaiming_normal_``, ``orthogonal_`` and
``calculate_gain``. Reached as ``en.nn.init.xavier_uniform_`` and so on.

Each overwrites a Variable (or a tensor) with new values of its dtype and
returns it. ``generator`` is an ``en.random.Generator``, an int seed, or None
for the default stream (reproducible after ``en.random.set_seed``).

Fans are PyTorch's: a weight ``(out, in, *kernel)`` has ``fan_in = in *
prod(kernel)`` and ``fan_out = out * prod(kernel)``, the layout of PyTorch's
layers and of this package's PyTorch-named ones (``Conv2d.weight``). The
engine's own layers keep ``(in, out)`` (``Linear``) and ``(*kernel, in, out)``
(``Conv2D``): pass ``layout="engine"`` for those, or fan_in and fan_out trade
places.

Example:
    >>> import engine as en
    >>> conv = en.nn.Conv2d(3, 8, 3, generator=0)
    >>> w = en.nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu",
    ...                                generator=1)
    >>> w is conv.weight, round(float(en.std(w)), 1)      # std sqrt(2 / (8 * 9)) = 0.17
    (True, 0.2)
"""
import math

import numpy as np

from ..errors import InvalidArgumentError, ShapeError
from ..random import Generator, default_generator
from ..variable import Variable


def _gen(generator):
    if generator is None:
        return default_generator()
    return Generator(generator) if isinstance(generator, int) else generator


def _write(tensor, values):
    """Overwrite ``tensor`` in place with ``values`` (cast to its dtype); return it."""
    values = np.asarray(values).astype(tensor.dtype, copy=False)
    if isinstance(tensor, Variable):
        tensor.assign(values)
    else:
        tensor[...] = values
    return tensor


def _shape(name, tensor):
    shape = getattr(tensor, "shape", None)
    if shape is None or not hasattr(tensor, "dtype"):
        raise InvalidArgumentError(f"nn.init.{name}: expected a Variable or tensor, got "
                                   f"{type(tensor).__name__}")
    if np.dtype(tensor.dtype).kind != "f":
        raise InvalidArgumentError(f"nn.init.{name}: expected a floating-point tensor, got "
                                   f"dtype {tensor.dtype}")
    return tuple(int(d) for d in shape)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table): 1 for linear and
    sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu
    (slope ``param``, default 0.01), 3/4 for selu.

    Example:
        >>> import engine as en
        >>> round(en.nn.init.calculate_gain("leaky_relu", 0.2), 4)
        1.3868
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise InvalidArgumentError(f"nn.init.calculate_gain: negative slope {slope!r} is "
                                       f"not a number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise InvalidArgumentError(f"nn.init.calculate_gain: unsupported nonlinearity "
                               f"{nonlinearity!r}")


def _fans(name, shape, layout):
    if layout not in ("torch", "engine"):
        raise InvalidArgumentError(f"nn.init.{name}: layout must be 'torch' or 'engine', got "
                                   f"{layout!r}")
    if len(shape) < 2:
        raise ShapeError(f"nn.init.{name}: fan in and fan out need a weight of at least two "
                         f"dimensions, got shape {shape}")
    if layout == "torch":          # (out, in, *kernel)
        receptive = int(np.prod(shape[2:]))
        return shape[1] * receptive, shape[0] * receptive
    receptive = int(np.prod(shape[:-2]))   # (in, out) or (*kernel, in, out)
    return shape[-2] * receptive, shape[-1] * receptive


def _uniform(shape, low, high, generator):
    return _gen(generator).uniform(shape, low, high, dtype="float64").numpy()


def _normal(shape, mean, std, generator):
    return _gen(generator).normal(shape, mean, std, dtype="float64").numpy()


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill ``tensor`` with draws uniform on ``[a, b)``."""
    return _write(tensor, _uniform(_shape("uniform_", tensor), a, b, generator))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill ``tensor`` with normal draws of mean ``mean`` and standard deviation ``std``."""
    return _write(tensor, _normal(_shape("normal_", tensor), mean, std, generator))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill ``tensor`` with normal draws kept inside ``[a, b]`` (absolute bounds, as in
    PyTorch): draws outside are redrawn.

    Example:
        >>> import engine as en
        >>> w = en.nn.init.trunc_normal_(en.Variable(en.zeros((50, 50))), std=1.0, a=-0.5,
        ...                              b=0.5, generator=0)
        >>> bool(abs(w.numpy()).max() <= 0.5)
        True
    """
    shape = _shape("trunc_normal_", tensor)
    if not a < b:
        raise InvalidArgumentError(f"nn.init.trunc_normal_: needs a < b, got a={a}, b={b}")
    gen = _gen(generator)
    out = np.empty(int(np.prod(shape)))
    missing = np.arange(out.size)
    for _ in range(1000):      # each round keeps the draws that landed inside
        if missing.size == 0:
            break
        draws = gen.normal((missing.size,), mean, std, dtype="float64").numpy()
        inside = (draws >= a) & (draws <= b)
        out[missing[inside]] = draws[inside]
        missing = missing[~inside]
    if missing.size:
        raise InvalidArgumentError(f"nn.init.trunc_normal_: [{a}, {b}] holds almost none of "
                                   f"a normal of mean {mean} and std {std}")
    return _write(tensor, out.reshape(shape))


def constant_(tensor, val):
    """Fill ``tensor`` with ``val``."""
    return _write(tensor, np.full(_shape("constant_", tensor), val))


def zeros_(tensor):
    """Fill ``tensor`` with zeros."""
    return constant_(tensor, 0.0)


def ones_(tensor):
    """Fill ``tensor`` with ones."""
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0, generator=None, *, layout="torch"):
    """Uniform on ``±gain * sqrt(6 / (fan_in + fan_out))`` (Glorot and Bengio)."""
    shape = _shape("xavier_uniform_", tensor)
    fan_in, fan_out = _fans("xavier_uniform_", shape, layout)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return _write(tensor, _uniform(shape, -bound, bound, generator))


def xavier_normal_(tensor, gain=1.0, generator=None, *, layout="torch"):
    """Normal with std ``gain * sqrt(2 / (fan_in + fan_out))``."""
    shape = _shape("xavier_normal_", tensor)
    fan_in, fan_out = _fans("xavier_normal_", shape, layout)
    return _write(tensor, _normal(shape, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)),
                                  generator))


def _kaiming_std(name, shape, a, mode, nonlinearity, layout):
    if mode not in ("fan_in", "fan_out"):
        raise InvalidArgumentError(f"nn.init.{name}: mode must be 'fan_in' or 'fan_out', got "
                                   f"{mode!r}")
    fan_in, fan_out = _fans(name, shape, layout)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None,
                     *, layout="torch"):
    """Uniform on ``±gain * sqrt(3 / fan)`` (He et al.), ``gain`` from ``nonlinearity``
    (and the negative slope ``a`` of a leaky ReLU), ``fan`` from ``mode``.

    Example:
        >>> import engine as en
        >>> w = en.nn.init.kaiming_uniform_(en.Variable(en.zeros((4, 6))), nonlinearity="relu",
        ...                                 generator=0)
        >>> bool(abs(w.numpy()).max() <= 1.0)                     # sqrt(2) * sqrt(3 / 6)
        True
    """
    shape = _shape("kaiming_uniform_", tensor)
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", shape, a, mode, nonlinearity,
                                          layout)
    return _write(tensor, _uniform(shape, -bound, bound, generator))


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None,
                    *, layout="torch"):
    """Normal with std ``gain / sqrt(fan)`` (He et al.)."""
    shape = _shape("kaiming_normal_", tensor)
    std = _kaiming_std("kaiming_normal_", shape, a, mode, nonlinearity, layout)
    return _write(tensor, _normal(shape, 0.0, std, generator))


def orthogonal_(tensor, gain=1.0, generator=None, *, layout="torch"):
    """A (semi-)orthogonal matrix times ``gain`` (Saxe et al.): the weight seen as
    ``(shape[0], rest)`` (PyTorch's; ``layout="engine"``: ``(rest, shape[-1])``) has
    orthonormal rows or columns, whichever are fewer.

    Example:
        >>> import engine as en
        >>> q = en.nn.init.orthogonal_(en.Variable(en.zeros((3, 5))), generator=0).numpy()
        >>> bool(abs(q @ q.T - np.eye(3)).max() < 1e-12)
        True
    """
    shape = _shape("orthogonal_", tensor)
    if len(shape) < 2:
        raise ShapeError(f"nn.init.orthogonal_: needs a weight of at least two dimensions, "
                         f"got shape {shape}")
    if layout == "engine":
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
    else:
        _fans("orthogonal_", shape, layout)      # checks the layout's name
        rows, cols = shape[0], int(np.prod(shape[1:]))
    a = _normal((max(rows, cols), min(rows, cols)), 0.0, 1.0, generator)
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))           # a unique decomposition (Mezzadri, 2007)
    if rows < cols:
        q = q.T
    return _write(tensor, (gain * q).reshape(shape))


__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_",
           "ones_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_"]
