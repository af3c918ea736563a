"""Error classes and the helper that names the user's source line.

Every error the engine raises derives from :class:`EngineError`. Shape and
dtype errors also derive from the builtin ``ValueError`` / ``TypeError`` so
that code written against numpy's exceptions keeps working.
"""
import contextvars
import os
import sys
import types

from . import _layout

# The engine's own source folders: engine/ and, in a source checkout, the modes' graph/
# and eager/ beside it (installed, they are inside engine/).
_PACKAGE_DIRS = tuple(folder + os.sep for folder in
                      (_layout.PACKAGE_DIR, *_layout.subpackage_dirs().values()))


class EngineError(Exception):
    """Base class of every error raised by the engine."""


class ShapeError(EngineError, ValueError):
    """Input shapes do not fit the op (rank, size or broadcasting)."""


class AxisError(ShapeError, IndexError):
    """An axis is out of range for the input's rank; an ``IndexError`` too, as
    numpy's ``AxisError`` is and the Array API standard asks."""


class IndexShapeError(ShapeError, IndexError):
    """An index does not fit the indexed tensor (out of range, a mask of the wrong
    length); an ``IndexError`` too, as numpy's and PyTorch's."""


class DTypeError(EngineError, TypeError):
    """Input dtypes do not fit the op, or the dtype is not supported."""


class ShapeTypeError(ShapeError, TypeError):
    """A shape, dimension or axis is not an integer (``en.ones((2.5,))``); numpy
    raises ``TypeError`` here, so this is one too."""


class DomainError(EngineError, ValueError):
    """An input value is outside what the op accepts (an integer to a negative
    integer power)."""


class ScalarOverflowError(EngineError, OverflowError):
    """A Python integer does not fit the dtype it must take beside a tensor
    (``int32_tensor + 2**40``; numpy raises ``OverflowError`` too)."""


class NotDifferentiableError(EngineError):
    """A gradient was requested through an op that has none."""


class NumericsError(EngineError, FloatingPointError):
    """An op produced NaN or Inf while numerics checking was on."""


class TracingError(EngineError):
    """Something that needs a concrete value was asked of a traced tensor."""


class BackendError(EngineError, TypeError):
    """Tensors of different array back ends met in one op (the engine never copies
    between back ends on its own: use ``t.to(name)``), or an op has no kernel on a
    back end."""


class ChunkError(EngineError):
    """A chunk of chunked (Dask) data failed in a function run per chunk; the message
    names the chunk and the user's line."""


class LoadError(EngineError):
    """A saved graph file is malformed or unsafe to load."""


class VerificationError(LoadError):
    """A saved function's reference outputs (``en.save(..., reference=True)``) are not
    reproduced within the stored tolerance where it is loaded."""


class UnsupportedError(EngineError, TypeError):
    """The engine does not implement what was asked of it: a numpy function, ufunc
    method or keyword called on tensors (``np.median(t)``, ``np.exp(t, out=a)``).
    A ``TypeError``, as numpy's own "no implementation found" is."""


class UnsupportedAttributeError(UnsupportedError, AttributeError):
    """An ndarray attribute tensors refuse on purpose (``t.strides``, ``t.flags``): the
    message says why and points to ``t.numpy()``. An ``AttributeError`` too, so
    ``hasattr(t, "strides")`` and ``getattr(t, "base", None)`` keep working."""


class InvalidArgumentError(EngineError, ValueError):
    """An argument's value is not one the function accepts (a negative learning rate,
    an unknown option name); a ``ValueError``, as Python's own functions raise."""


class ArgumentTypeError(EngineError, TypeError):
    """An argument of the wrong kind (a number where a branch function is expected,
    a tensor where a tuple of loop variables is); a ``TypeError``."""


class MissingFileError(EngineError, FileNotFoundError):
    """A file or folder the engine was asked to read does not exist (``load_mnist``);
    a ``FileNotFoundError``."""


class SharingError(EngineError, BufferError):
    """A tensor's memory cannot be shared as asked (DLPack: a copy refused, a device
    the engine does not have)."""


class UnimplementedError(EngineError, NotImplementedError):
    """A method a subclass must define was not (``Module.forward``, a back end's kernels)."""


def expect_callable(who, what, value):
    """Raise :class:`ArgumentTypeError`, naming the caller's line, unless ``value`` is callable.

    Example:
        >>> expect_callable("cond", "true_fn", 1)
        Traceback (most recent call last):
          ...
        engine.errors.ArgumentTypeError: cond: true_fn must be a function, got int 1
          at ...
    """
    if not callable(value):
        raise ArgumentTypeError(f"{who}: {what} must be a function, got "
                                f"{type(value).__name__} {value!r:.60}\n"
                                f"  at {format_location(user_frame())}")


def is_engine_file(filename):
    """True when ``filename`` belongs to the engine's own packages."""
    return filename.startswith(_PACKAGE_DIRS)


def user_frame(depth=1):
    """Return ``(filename, lineno, function)`` of the innermost caller outside the engine.

    Example:
        >>> def forward():            # a user's function (here, this example's own)
        ...     return user_frame()
        >>> forward()[2]
        'forward'

        From a user's file it reads like ``('/home/me/model.py', 12, 'forward')``.
    """
    frame: types.FrameType | None = sys._getframe(depth)
    while frame is not None and is_engine_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    return (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


# While a backward pass runs the gradient rule of a TRACED op: ``(source, op name)`` of
# that forward op. The tracer gives the nodes the rule adds the forward op's line, so a
# backward node in a graph (a report of en.debug.compare, a NaN found in a compiled
# gradient) names the user's line whose gradient it computes, not the en.grad call.
GRADIENT_OF: contextvars.ContextVar[tuple | None] = contextvars.ContextVar(
    "engine_gradient_of", default=None)


def format_location(loc):
    """Format a ``user_frame`` tuple as ``file:line in function``."""
    if loc is None:
        return "<unknown location>"
    filename, lineno, func = loc
    return f"{filename}:{lineno} in {func}"


def describe_inputs(avals):
    """Describe input abstract values as ``float32[3,4], int64[]`` for error messages."""
    return ", ".join(describe_aval(a) for a in avals)


def describe_args(args):
    """Describe op arguments for an error message: tensors and arrays as
    ``float32[3,4]``, anything else by its repr (``int 1099511627776``)."""
    parts = []
    for a in args:
        shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
        if shape is not None and dtype is not None:
            parts.append(describe_aval((shape, dtype)))
        else:
            parts.append(f"{type(a).__name__} {a!r}")
    return ", ".join(parts)


def describe_aval(aval):
    shape, dtype = aval
    dims = ",".join("?" if d is None else str(d) for d in shape)
    return f"{dtype}[{dims}]"
