"""The lowerings the engine ships, registered in the order "auto" tries them.

A new lowering is one folder under ``graph/lowering/`` holding a :class:`~.plugin.Lowering`
subclass, one line here (or a ``plugin.register`` call of its own, for one kept outside
the engine) and its tests; see the docs page "Writing a lowering".

Example:
    >>> list(registered())
    ['numpy', 'c', 'numba', 'numba_ufunc']
"""
from .c import c_colsum, c_rows, c_window
from .c.lowering import CLowering
from .numba.lowering import NumbaLowering, NumbaUfuncLowering
from .numpy_lowering import NumpyLowering
from .plugin import register, registered
from . import window_threads

for _lowering in (NumpyLowering(), CLowering(), NumbaLowering(), NumbaUfuncLowering()):
    register(_lowering)
c_window.install()      # the window ops' C kernels (engine/ops/native.py)
c_rows.install()        # reductions over a short last axis (engine/ops/reduce.py)
c_colsum.install()      # sums over the leading axes (engine/ops/reduce.py)
window_threads.install()    # the threads convolutions split their images over

__all__ = ["registered"]
