"""``engine.linalg``: linear algebra, with numpy's ``numpy.linalg`` names and the Python
Array API's ``linalg`` extension.

Every function takes (stacks of) matrices in the last two axes, works in both
modes, and has gradients (of any order) where the result is differentiable:
the factorizations by their standard closed forms (see
``engine/ops/linalg_solve.py`` and ``engine/ops/linalg_spectral.py``, which
also state the degenerate-eigenvalue caveat), the rest as composites.

Example:
    >>> import engine as en
    >>> a = en.tensor([[2.0, 1.0], [1.0, 3.0]])
    >>> round(float(en.linalg.det(a)), 6), en.linalg.solve(a, en.tensor([3.0, 4.0])).numpy()
    (5.0, array([1., 1.]))
"""
from .ops.einsum import tensordot
from .ops.linalg import matmul, outer
from .ops.linalg_functions import (EighResult, LstsqResult, QRResult, SlogdetResult, SVDResult,
                                   cholesky, det, diagonal, eigh, eigvalsh, inv, lstsq,
                                   matrix_power, matrix_rank, multi_dot, pinv, qr, slogdet, solve,
                                   svd, svdvals, trace)
from .ops.linalg_norms import matrix_norm, norm, vector_norm
from .ops.products import cross, matrix_transpose, vecdot

__all__ = ["EighResult", "LstsqResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
           "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "lstsq", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm",
           "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace",
           "vecdot", "vector_norm"]
