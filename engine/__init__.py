"""A dual-mode array engine: eager numpy execution and traced, optimized graphs.

Example:
    >>> import engine as en
    >>> x = en.tensor([1.0, 2.0, 3.0])
    >>> float(en.grad(lambda x: en.sum(x * x))(x)[1])
    4.0
"""
from . import dtypes
from .config import config
from .dtypes import bool_, float32, float64, int32, int64
from .errors import (DTypeError, EngineError, LoadError, NotDifferentiableError,
                     NumericsError, ShapeError, TracingError)
from .modes import apply
from .op import REGISTRY, Op
from .tensor import Tensor, tensor
from .variable import Variable
from . import ops
from .ops import *  # noqa: F401,F403  (the op functions: en.add, en.matmul, ...)
from .ops import abs, pow, sum, max, min  # noqa: F401
import eager as _eager  # noqa: F401  (installs eager mode as the default)
from .autodiff import GradientTape, custom_gradient, grad, value_and_grad
from . import debug
from . import random
from . import optim, data  # noqa: E402
# Graph mode, imported module by module so that ``import graph`` first works too.
from graph.function import Function, function, run_functions_eagerly  # noqa: E402
from graph.signature import TensorSpec  # noqa: E402
from graph.tracer import is_tracing  # noqa: E402
from graph.control_flow import cond, scan, while_loop  # noqa: E402
from graph.effects import print, py_function  # noqa: E402
from graph.export import save  # noqa: E402
from graph.load import load  # noqa: E402
from graph.onnx_export import export_onnx  # noqa: E402

__all__ = [name for name in dir() if not name.startswith("_")]
