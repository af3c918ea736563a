"""Op-database entry for ``matmul`` (``engine/ops/linalg.py``); einsum, the other
products and ``engine.linalg`` are in ``op_db.linalg``."""
import numpy as np

import engine as en

from op_db.core import ErrorInput, OpInfo, Sample, add, make, op_dtypes


# Matrix product.
def _matmul_samples(dtype, rng):
    pairs = [((2, 3), (3, 4)), ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)),
             ((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (3, 3, 2)), ((4,), (2, 4, 3)),
             ((2, 3, 4), (4,)), ((2, 0), (0, 3)), ((0, 3), (3, 2)), ((1, 1), (1, 1))]
    for sx, sy in pairs:
        yield Sample((make(rng, sx, dtype), make(rng, sy, dtype)))


add(OpInfo("matmul", en.matmul, np.matmul, _matmul_samples, op_dtypes("matmul"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones((2, 3)), np.ones((4, 2)))), en.ShapeError),
               ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError),
               ErrorInput(Sample((np.float64(1.0), np.ones(3))), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 2, 3)), np.ones((3, 3, 2)))), en.ShapeError)]))
