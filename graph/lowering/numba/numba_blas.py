"""One BLAS thread while a numba-compiled region runs: see ``graph/lowering/scipy_blas.py``,
shared with the C lowering (re-exported here for the numba lowering's readers).

Example:
    >>> one_thread(abs)(-2)
    2
"""
from ..scipy_blas import _set_local, one_thread

__all__ = ["_set_local", "one_thread"]
