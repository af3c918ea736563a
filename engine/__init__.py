"""A dual-mode array engine: eager numpy execution and traced, optimized graphs.

This file is the public facade and the one place that wires the layers: the
core (everything else under ``engine/``) imports neither the eager
interpreter (``eager/``) nor graph mode (``graph/``); the facade imports all
three and registers eager execution as the default mode.

Example:
    >>> import engine as en
    >>> x = en.tensor([1.0, 2.0, 3.0])
    >>> float(en.grad(lambda x: en.sum(x * x))(x)[1])
    4.0
"""
from . import dtypes
from .config import config
from .dtypes import bool_, float32, float64, int32, int64
from .errors import (BackendError, DTypeError, EngineError, LoadError, NotDifferentiableError,
                     NumericsError, ShapeError, TracingError)
from . import modes
from .errors import DomainError, ScalarOverflowError, ShapeTypeError  # noqa: F401
from .modes import apply
from .op import REGISTRY, Op
from . import backend
from .tensor import Tensor, tensor
from .variable import Variable
from . import ops
from .ops import *  # noqa: F401,F403  (the op functions: en.add, en.matmul, ...)
from .ops import abs, pow, sum, max, min  # noqa: F401
from .autodiff import GradientTape, custom_gradient, grad, value_and_grad
from . import debug
from . import random
from . import optim, data  # noqa: E402
# The layers package; an absolute import, because ``from .ops import *`` above bound the name
# ``nn`` to engine.ops.nn (the softmax/cross_entropy module, still reachable as en.softmax).
import engine.nn as nn  # noqa: E402
# The modes, imported module by module so that ``import eager`` or ``import graph``
# first works too (their packages import this facade first).
from eager.mode import EAGER as _EAGER  # noqa: E402
modes.set_default_mode(_EAGER)
from graph.function import Function, function, run_functions_eagerly  # noqa: E402
from graph.signature import TensorSpec  # noqa: E402
from graph.tracer import is_tracing  # noqa: E402
from graph.control_flow import cond, scan, while_loop  # noqa: E402
nn.recurrent.use_scan(scan)   # RNN's loop: one scan node when traced
from graph import autograph  # noqa: E402
from graph.effects import print, py_function  # noqa: E402
from graph.export import save  # noqa: E402
from graph.load import load  # noqa: E402
from graph.onnx_export import export_onnx  # noqa: E402

__all__ = [name for name in dir() if not name.startswith("_")]
