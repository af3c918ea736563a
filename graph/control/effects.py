"""Explicit graph breaks and printing: :func:`py_function` and :func:`print`.

Both run at graph *run* time (not trace time) and keep their program order.
"""
import builtins
import sys

import numpy as np

from engine.errors import EngineError, NotDifferentiableError, ShapeError, DTypeError
from engine.lifting import as_array, caller_can_write
from engine.modes import apply, current_mode, default_mode, use_mode
from engine.op import Op, declare
from engine.tensor import Tensor, wrap

from ..ir.graph_ops import _structural
from ..ir.signature import TensorSpec


class _PyFn:
    """A Python callable inside node params (compared by identity)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __repr__(self):
        return f"<python {getattr(self.fn, '__name__', 'function')}>"


def _check_outputs(name, outs, specs):
    if len(outs) != len(specs):
        raise EngineError(f"py_function {name}: returned {len(outs)} values, output_spec "
                          f"says {len(specs)}")
    arrays = []
    for i, (o, spec) in enumerate(zip(outs, specs)):
        a = o._value if isinstance(o, Tensor) else as_array(o, spec.dtype)
        if isinstance(o, np.ndarray) and caller_can_write(o) and np.may_share_memory(a, o):
            a = a.copy()     # an array the Python side keeps (and may write) must not leak
        if a.dtype != spec.dtype:
            raise DTypeError(f"py_function {name}: output {i} has dtype {a.dtype}, "
                             f"output_spec says {spec}")
        if not spec.matches(wrap(a)):
            raise ShapeError(f"py_function {name}: output {i} has shape {a.shape}, "
                             f"output_spec says {spec}")
        arrays.append(a)
    return arrays


def _run_python(fn, arrays, specs):
    with use_mode(default_mode()):   # run time: values are concrete
        outs = fn.fn(*[wrap(np.asarray(a)) for a in arrays])
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    return _check_outputs(getattr(fn.fn, "__name__", "fn"), outs, specs)


def _py_impl(*arrays, fn, specs):
    return tuple(_run_python(fn, arrays, specs))


def _py_eval(*avals, fn, specs):
    return tuple((s.shape, s.dtype) for s in specs)


def _py_vjp(gs, outs, *inputs, fn, specs):
    raise NotDifferentiableError(
        f"py_function {fn!r} has no gradient: wrap it with en.custom_gradient to give it one")


py_function_op = _structural(Op("py_function", _py_impl, _py_eval, _py_vjp,
                                multiple_results=True, side_effects=True,
                                doc="Run Python on concrete values at graph run time."))
declare(py_function_op, onnx=None)


def py_function(fn, inputs, output_spec):
    """Call ``fn(*inputs)`` on concrete tensors, also inside a traced function (at run time).

    ``output_spec`` is a :class:`TensorSpec` or a list of them; a single spec
    gives a single tensor back.

    Example:
        >>> import engine as en, numpy as np
        >>> f = en.function(lambda x: en.py_function(
        ...     lambda t: np.sort(t.numpy()), [x], en.TensorSpec((3,), "float64")))
        >>> f(en.tensor([3.0, 1.0, 2.0])).numpy().tolist()
        [1.0, 2.0, 3.0]
    """
    single = isinstance(output_spec, TensorSpec)
    specs = (output_spec,) if single else tuple(output_spec)
    inputs = list(inputs)
    mode = current_mode()
    if mode.is_concrete:
        tensors = mode.lift(inputs)
        arrays = _run_python(_PyFn(fn), [t._value for t in tensors], specs)
        outs = [wrap(a) for a in arrays]
    else:
        outs = list(apply(py_function_op, *inputs, fn=_PyFn(fn), specs=specs))
    return outs[0] if single else outs


def _print_impl(*arrays, template, sep, end, file):
    values = iter(arrays)
    parts = [str(np.asarray(next(values))) if piece is None else piece for piece in template]
    builtins.print(*parts, sep=sep, end=end, file=file or sys.stdout)
    return ()


def _print_eval(*avals, template, sep, end, file):
    return ()


print_op = _structural(Op("print", _print_impl, _print_eval, None, multiple_results=True,
                          side_effects=True, doc="Print values when the graph runs."))
declare(print_op, onnx=None)


def print(*values, sep=" ", end="\n", file=None):
    """Print tensors (and other values) when the op runs: at once eagerly, at run time in graphs.

    Example:
        >>> import engine as en
        >>> en.print("x =", en.tensor([1, 2]))
        x = [1 2]
    """
    tensors = [v for v in values if isinstance(v, Tensor) or hasattr(v, "assign")]
    template = tuple(None if (isinstance(v, Tensor) or hasattr(v, "assign")) else str(v)
                     for v in values)
    if current_mode().is_concrete:
        arrays = [t.numpy() for t in tensors]
        _print_impl(*arrays, template=template, sep=sep, end=end, file=file)
        return None
    apply(print_op, *tensors, template=template, sep=sep, end=end, file=file)
    return None
