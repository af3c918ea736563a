"""Graph mode, one subpackage per stage; a stage imports only the stages before it
(``tests/project/test_layering.py`` checks it):

1. ``ir/`` -- Graph and Node, structural ops, graph queries, signatures, printers;
2. ``passes/`` -- structural rewrites, one a file;
3. ``lowering/`` -- the pipeline, the steps that pick or build a lowering (fusion,
   compiled regions, memory planning), the Python source writer and executor, and each
   compiled lowering in its own folder (``numba/``, ``c/``);
4. ``control/`` -- cond, while_loop, scan, subgraphs, the graph interpreter, effects;
5. ``chunked/`` -- a traced graph run chunk by chunk on Dask arrays;
6. ``jit/`` -- ``en.function``, the tracer, one compiled trace, AutoGraph;
7. ``export/`` -- the native format, loading it, ONNX.

Control flow comes after lowering because a body is compiled like any graph; the chunked
runner comes before the jit because ``en.function`` picks it for Dask arguments.
"""
import engine  # noqa: F401  (load the core first: graph builds on it)
from .ir.graph import Graph, Node  # noqa: F401
from .ir.signature import TensorSpec  # noqa: F401
from .jit.function import Function, function, run_functions_eagerly  # noqa: F401
from .jit.tracer import is_tracing  # noqa: F401
from .control.control_flow import cond, scan, while_loop  # noqa: F401
from .control import bounded_loops as _bounded_loops  # noqa: F401  (while_loop's max_steps)
from .control.effects import print, py_function  # noqa: F401
