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
__version__ = "0.1.0"

import importlib as _importlib

from . import _layout
_layout.install_source_finder()   # engine.graph, engine.eager in a source checkout

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
# The linear-algebra namespace; absolute, because ``from .ops import *`` above bound the
# name ``linalg`` to the ops module engine.ops.linalg (matmul).
import engine.linalg as linalg  # noqa: E402
from .autodiff import GradientTape, custom_gradient, grad, value_and_grad
from . import debug
from . import random
from . import optim, data  # noqa: E402
# The layers package; an absolute import, because ``from .ops import *`` above bound the name
# ``nn`` to engine.ops.nn (the softmax/cross_entropy module, still reachable as en.softmax).
import engine.nn as nn  # noqa: E402
# The eager interpreter is the default mode; graph mode (the tracer, the compiler and
# networkx) is imported on first use of a name below, so ``import engine`` stays light.
from engine.eager.mode import EAGER as _EAGER  # noqa: E402
modes.set_default_mode(_EAGER)

# ``en.<name>`` -> the graph-mode module that defines it, imported by ``__getattr__`` the
# first time the name is read; the value is then bound here, so later reads are plain
# module attributes (``en.function`` costs nothing after the first).
_GRAPH_NAMES = {
    "Function": "function", "function": "function", "run_functions_eagerly": "function",
    "TensorSpec": "signature", "is_tracing": "tracer",
    "cond": "control_flow", "scan": "control_flow", "while_loop": "control_flow",
    "print": "effects", "py_function": "effects",
    "save": "export", "load": "load", "export_onnx": "onnx_export",
}
_GRAPH_MODULES = {"autograph": "autograph"}


def __getattr__(name):
    """Import the graph-mode module defining ``name`` on first use (PEP 562)."""
    if name in _GRAPH_NAMES:
        value = getattr(_importlib.import_module(f"{__name__}.graph.{_GRAPH_NAMES[name]}"), name)
    elif name in _GRAPH_MODULES:
        value = _importlib.import_module(f"{__name__}.graph.{_GRAPH_MODULES[name]}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_GRAPH_NAMES) | set(_GRAPH_MODULES))


def _scan(fn, init, xs, **kwargs):
    """``en.scan``, looked up when an RNN first loops (not when the engine is imported)."""
    return __getattr__("scan")(fn, init, xs, **kwargs)


nn.recurrent.use_scan(_scan)   # RNN's loop: one scan node when traced

__all__ = sorted(name for name in __dir__() if not name.startswith("_"))
