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
import sys as _sys

from . import _layout
_layout.install_source_finder()   # engine.graph, engine.eager in a source checkout

from . import dtypes
from .config import config
from .default_dtype import get_default_dtype, set_default_dtype
from .dtypes import (bool_, complex64, complex128, float16, float32, float64, int8, int16, int32,
                     int64, uint8, uint16, uint32, uint64)
from .errors import (BackendError, ChunkError, DTypeError, EngineError, LoadError,
                     NotDifferentiableError, NumericsError, ShapeError, TracingError,
                     UnsupportedError, VerificationError)
from . import modes
from .errors import DomainError, ScalarOverflowError, ShapeTypeError  # noqa: F401
from .errors import (ArgumentTypeError, InvalidArgumentError, MissingFileError,  # noqa: F401
                     UnimplementedError)
from .modes import apply
from .op import REGISTRY, Op
from . import backend
from .tensor import Tensor, tensor
from .tensor import TensorOps as _TensorOps
from . import torch_spellings as _torch_spellings
from .compute import compute
from .variable import Variable
from . import ops
from .ops import *  # noqa: F401,F403  (the op functions: en.add, en.matmul, ...)
from .ops import abs, pow, sum, max, min  # noqa: F401
# The linear-algebra namespace; absolute, because ``from .ops import *`` above bound the
# name ``linalg`` to the ops module engine.ops.linalg (matmul).
import engine.linalg as linalg  # noqa: E402
import engine.fft as fft  # noqa: E402
from .autodiff import GradientTape, custom_gradient, grad, value_and_grad
from .transforms.base import TransformFallbackWarning
from .transforms.batching import vmap
from .transforms import batching_loops as _batching_loops  # noqa: F401,E402 (vmap's loops)
from .transforms.forward import custom_jvp, jvp, linearize
from .transforms.jacobians import hessian, jacfwd, jacrev, vjp
from .transforms.checkpoint import checkpoint, checkpoint_name
from .transforms.checkpoint import policies as checkpoint_policies
from . import debug
from . import warning_location
warning_location.install()   # numpy's warnings inside kernels name the user's line
from .interop import einops_hook as _einops_hook
_einops_hook.install()   # einops knows tensors once (if ever) it is imported
from . import random
from . import optim, data  # noqa: E402
# The layers package; an absolute import, because ``from .ops import *`` above bound the name
# ``nn`` to engine.ops.nn (the softmax/cross_entropy module, still reachable as en.softmax).
import engine.nn as nn  # noqa: E402
from .training_checkpoint import TrainingCheckpoint  # noqa: E402
# The eager interpreter is the default mode; graph mode (the tracer, the compiler and
# networkx) is imported on first use of a name below, so ``import engine`` stays light.
from engine.eager.mode import EAGER as _EAGER  # noqa: E402
modes.set_default_mode(_EAGER)

# ``en.<name>`` -> the graph-mode module that defines it, imported by ``__getattr__`` the
# first time the name is read; the value is then bound here, so later reads are plain
# module attributes (``en.function`` costs nothing after the first).
_GRAPH_NAMES = {
    "Function": "jit.function", "function": "jit.function",
    "run_functions_eagerly": "jit.function",
    "TensorSpec": "ir.signature", "is_tracing": "jit.tracer",
    "cond": "control.control_flow", "scan": "control.control_flow",
    "while_loop": "control.control_flow", "fori_loop": "control.bounded_loops",
    "print": "control.effects", "py_function": "control.effects",
    "save": "export.native", "load": "export.load", "export_onnx": "export.onnx_export",
}
_GRAPH_MODULES = {"autograph": "jit.autograph"}


def __getattr__(name):
    """Import the graph-mode module defining ``name`` on first use (PEP 562)."""
    if name in _GRAPH_NAMES:
        value = getattr(_importlib.import_module(f"{__name__}.graph.{_GRAPH_NAMES[name]}"), name)
    elif name in _GRAPH_MODULES:
        value = _importlib.import_module(f"{__name__}.graph.{_GRAPH_MODULES[name]}")
    else:   # en.cat, en.no_grad: the error names the engine's spelling
        raise _torch_spellings.missing_attribute(__name__, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_GRAPH_NAMES) | set(_GRAPH_MODULES))


def _scan(fn, init, xs, **kwargs):
    """``en.scan``, looked up when an RNN first loops (not when the engine is imported)."""
    return __getattr__("scan")(fn, init, xs, **kwargs)


nn.recurrent.use_scan(_scan)   # RNN's loop: one scan node when traced
# The window ops' C kernels (engine/ops/native.py) come with the lowerings, on first use.
ops.native.set_loader(lambda: _importlib.import_module(f"{__name__}.graph.lowering.registry"))
debug._use_function(lambda: __getattr__("Function"))   # en.debug.compare compiles with it


# ---- the public namespace ----------------------------------------------------------------------
# ``engine.__all__`` is built from names, so an op function a family adds (``en.ops.NAME``) is
# public at once; everything else the imports above bound (modules such as ``en.ops.reduce``,
# ``numpy``, registry entries ``NAME_op``, helpers) is removed from the module, so ``en`` holds
# the public API only. tests/project/test_public_api.py pins the result against
# tests/project/public_api.txt.
# A public module or object of this facade that is not an op function goes in _PUBLIC_FACADE
# (a graph-mode one in _GRAPH_NAMES above).
_PUBLIC_FACADE = {
    # errors
    "BackendError", "ChunkError", "DTypeError", "DomainError", "EngineError", "LoadError",
    "NotDifferentiableError", "NumericsError", "ScalarOverflowError", "ShapeError",
    "ShapeTypeError", "TracingError", "UnsupportedError", "ArgumentTypeError",
    "InvalidArgumentError", "MissingFileError", "UnimplementedError", "VerificationError",
    # arrays, dtypes, the op registry and modes
    "Tensor", "tensor", "Variable", "dtypes", "bool_", "float32", "float64", "int32", "int64",
    "int8", "int16", "uint8", "uint16", "uint32", "uint64", "float16", "complex64", "complex128",
    "broadcast_shapes", "config", "Op", "REGISTRY", "apply", "backend", "ops", "compute",
    "set_default_dtype", "get_default_dtype",
    # numpy's index-trick objects (concatenation by brackets)
    "r_", "c_",
    # autodiff and the function transformations
    "GradientTape", "custom_gradient", "grad", "value_and_grad",
    "jvp", "linearize", "vjp", "vmap", "jacfwd", "jacrev", "hessian", "custom_jvp",
    "TransformFallbackWarning", "checkpoint", "checkpoint_name", "checkpoint_policies",
    # packages
    "debug", "random", "optim", "data", "nn", "errors", "linalg", "fft",
    # resumable training
    "TrainingCheckpoint",
}
# Functions of the op families that are helpers, not numpy/Array API functions: they stay
# reachable as ``en.ops.NAME`` (the VJP-only ops are registry entries with op-database rows).
_NOT_PUBLIC = {
    "unary", "binary", "call", "unbroadcast", "check_shape", "at_user_line", "int_tuple",
    "int_beside", "normalize_axis", "normalize_axes", "reduced_shape", "size_of",
    "describe_args", "describe_inputs", "current_mode", "declare", "register",
    "sigmoid_grad", "broadcast_like", "broadcast_to_shape_of", "count", "getitem",
    "conv2d_backprop_input", "conv2d_backprop_filter",
}


def _is_public(name, value):
    if name.startswith("_") or name in _NOT_PUBLIC:
        return False
    if name in _PUBLIC_FACADE:
        # en.linalg / en.fft are namespaces of their own, never the op family engine.ops.linalg
        return not getattr(value, "__name__", "").startswith("engine.ops.")
    return (callable(value) and not isinstance(value, (type, Op))
            and getattr(ops, name, None) is value)


__all__ = sorted({name for name, value in globals().items() if _is_public(name, value)}
                 | set(_GRAPH_NAMES) | set(_GRAPH_MODULES))
for _name in [n for n in globals() if not n.startswith("_") and n not in __all__]:
    del globals()[_name]
del _name, _is_public

# PyTorch's spellings (dim=, keepdim=, x.backward(), en.cat) raise errors naming the
# engine's; the table and where it is consulted: engine/torch_spellings.py.
_torch_spellings.install([_sys.modules[__name__], linalg, fft, nn.functional],
                        Tensor.__mro__[:-1], _TensorOps)
_torch_spellings.translating_init(Variable)
