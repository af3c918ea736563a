"""Graph mode: the tracer, the IR, lowering to Python source, and the executor."""
import engine  # noqa: F401  (load the core first: graph builds on it)
from .ir.graph import Graph, Node  # noqa: F401
from .ir.signature import TensorSpec  # noqa: F401
from .jit.function import Function, function, run_functions_eagerly  # noqa: F401
from .jit.tracer import is_tracing  # noqa: F401
from .control.control_flow import cond, scan, while_loop  # noqa: F401
from .control.effects import print, py_function  # noqa: F401
