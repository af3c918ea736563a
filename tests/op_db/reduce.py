"""Op-database entries for the reductions (``engine/ops/reduce.py``): sum, mean, prod,
max, min, argmax and argmin over every axis form, empty axes included."""
import numpy as np

import engine as en

from op_db.core import (F64, ErrorInput, OpInfo, Sample, add, make, make_distinct, make_nonzero,
                        np_reduce, op_dtypes, reduce_errors, reduce_samples)


# Reductions.
def _prod_grad_samples(rng):
    yield from reduce_samples(lambda rng, s, d: make_nonzero(rng, s, d, 0.5, 1.5))(F64, rng)
    # prod is multilinear, so it is smooth at zeros too: one zero, two zeros.
    x = make_nonzero(rng, (3, 4), F64, 0.5, 1.5)
    x[1, 2] = 0.0
    y = x.copy()
    y[1, 0] = 0.0
    cases = [(x, None, False, "one zero"), (x, 1, False, "one zero in a row"),
             (y, 1, True, "two zeros in a row"), (y, None, False, "two zeros")]
    for z, axis, keepdims, desc in cases:
        yield Sample((z,), dict(axis=axis, keepdims=keepdims), desc=desc)


_small = lambda rng, s, d: make(rng, s, d, -1.5, 1.5)  # noqa: E731  (products stay small)
add(OpInfo("sum", en.sum, np_reduce(np.sum), reduce_samples(), op_dtypes("sum"),
           error_inputs=reduce_errors()))
add(OpInfo("mean", en.mean, np_reduce(np.mean), reduce_samples(empty_reduce=False),
           op_dtypes("mean"), error_inputs=reduce_errors()))
add(OpInfo("prod", en.prod, np_reduce(np.prod), reduce_samples(_small), op_dtypes("prod"),
           error_inputs=reduce_errors(), grad_samples=_prod_grad_samples))
add(OpInfo("max", en.max, np_reduce(np.max), reduce_samples(make_distinct, empty_reduce=False),
           op_dtypes("max"), error_inputs=reduce_errors(empty_reduce=False)))
add(OpInfo("min", en.min, np_reduce(np.min), reduce_samples(make_distinct, empty_reduce=False),
           op_dtypes("min"), error_inputs=reduce_errors(empty_reduce=False)))


def _arg_samples(dtype, rng):
    cases = [((5,), None, False), ((5,), 0, True), ((2, 3, 4), None, False),
             ((2, 3, 4), None, True), ((2, 3, 4), 1, False), ((2, 3, 4), -1, True),
             ((0, 3), 1, False), ((), None, False)]
    for shape, axis, keepdims in cases:
        # Coarse values: ties occur, and the first index must win as in numpy.
        yield Sample((make(rng, shape, dtype, -2, 2).round().astype(dtype),),
                     dict(axis=axis, keepdims=keepdims))


def _arg_errors():
    one = lambda **kw: Sample((np.ones((2, 3)),), kw)  # noqa: E731
    return [ErrorInput(one(axis=(0, 1), keepdims=False), en.ShapeError),
            ErrorInput(one(axis=2, keepdims=False), en.ShapeError),
            ErrorInput(Sample((np.ones((0, 3)),), dict(axis=0)), en.ShapeError),
            ErrorInput(Sample((np.ones((0, 3)),), dict(axis=None)), en.ShapeError)]


for _name in ("argmax", "argmin"):
    add(OpInfo(_name, getattr(en, _name), getattr(np, _name), _arg_samples, op_dtypes(_name),
               supports_grad=False, error_inputs=_arg_errors))
