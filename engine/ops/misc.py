"""Identity-like ops: ``stop_gradient`` and ``identity``."""
from .. import dtypes
from ..op import Op, declare, register
from ._define import call

def _same_generic(be, x):
    return x


stop_gradient_op = register(Op(
    "stop_gradient", lambda x: x, lambda x: x, lambda g, out, x: (None,), n_inputs=1,
    generic=_same_generic,
    elementwise=True, dtypes=dtypes.ALL,
    doc="The value of ``x``, treated as a constant by autodiff."))
declare(stop_gradient_op, onnx=("node", "Identity"))
identity_op = register(Op(
    "identity", lambda x: x, lambda x: x, lambda g, out, x: (g,), n_inputs=1,
    generic=_same_generic,
    elementwise=True, dtypes=dtypes.ALL, doc="The value of ``x`` unchanged."))
declare(identity_op, onnx=("node", "Identity"))

stop_gradient = call(stop_gradient_op)
identity = call(identity_op)


# ---- forward mode (see engine.op.RULE_KINDS; both batch as elementwise ops) ----------------
declare(stop_gradient_op, jvp=lambda primals, tangents, out: None)
declare(identity_op, jvp=lambda primals, tangents, out: tangents[0])
