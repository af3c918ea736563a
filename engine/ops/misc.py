"""Identity-like ops: ``stop_gradient`` and ``identity``."""
from .. import dtypes
from ..modes import apply
from ..op import Op, declare, register
from ._define import call

def _same_generic(be, x):
    return x


def _view(x):
    """``x``'s memory as a new array object: eager mode sees a view of the input (a write
    through the result reaches x, as PyTorch's ``detach()``)."""
    return x.view() if hasattr(x, "view") else x


def _copy(x):
    """A new array with ``x``'s values: ``identity`` (en.copy, en.tensor of a tensor) makes
    memory a write cannot share with x."""
    return x.copy() if hasattr(x, "copy") else x


stop_gradient_op = register(Op(
    "stop_gradient", _view, lambda x: x, lambda g, out, x: (None,), n_inputs=1,
    generic=_same_generic,
    elementwise=True, dtypes=dtypes.ALL,
    doc="The value of ``x``, treated as a constant by autodiff."))
declare(stop_gradient_op, onnx=("node", "Identity"))
identity_op = register(Op(
    "identity", _copy, lambda x: x, lambda g, out, x: (g,), n_inputs=1,
    generic=_same_generic,
    elementwise=True, dtypes=dtypes.ALL, doc="The value of ``x`` unchanged."))
declare(identity_op, onnx=("node", "Identity"))

stop_gradient = call(stop_gradient_op)
identity = call(identity_op)


# ---- forward mode (see engine.op.RULE_KINDS; both batch as elementwise ops) ----------------
declare(stop_gradient_op, jvp=lambda primals, tangents, out: None)
declare(identity_op, jvp=lambda primals, tangents, out: tangents[0])


# ---- optimization_barrier -------------------------------------------------------------------------
def _barrier_impl(x, *after):
    return _view(x)


optimization_barrier_op = register(Op(
    "optimization_barrier", _barrier_impl, lambda x, *after: x,
    lambda g, out, x, *after: (g,) + (None,) * len(after), generic=lambda be, x, *after: x,
    dtypes=dtypes.ALL,
    doc="``x``, computed only after ``after`` exist (and never merged with another "
        "computation of ``x``): what ``en.checkpoint`` puts before a recomputation."))
declare(optimization_barrier_op, onnx=None,
        jvp=lambda primals, tangents, out: tangents[0],
        batch=lambda size, args, dims: (args[0], dims[0]))


def optimization_barrier(x, *after):
    """``x`` itself, as a value that depends on ``after`` too: in a traced function its
    users run after ``after`` is computed, and common-subexpression elimination never
    merges them with the same computation on ``x`` elsewhere (JAX's
    ``optimization_barrier``; ``en.checkpoint`` fences its recomputation with it).

    Example:
        >>> import engine as en
        >>> float(en.optimization_barrier(en.tensor(2.0), en.tensor(5.0)))
        2.0
    """
    return apply(optimization_barrier_op, x, *after)
