"""Graph mode: the tracer, the IR, lowering to Python source, and the executor."""
import engine  # noqa: F401  (load the core first: graph builds on it)
from .ir import Graph, Node  # noqa: F401
from .signature import TensorSpec  # noqa: F401
from .function import Function, function, run_functions_eagerly  # noqa: F401
from .tracer import is_tracing  # noqa: F401
from .control_flow import cond, scan, while_loop  # noqa: F401
from .effects import print, py_function  # noqa: F401
