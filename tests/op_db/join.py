"""Op-database entries for joining and splitting (``engine/ops/join.py``): inputs come
as a list, ``split`` returns a tuple."""
import numpy as np

import engine as en

from op_db.core import (I32, I64, NUMERIC, ErrorInput, OpInfo, Sample, add, error_cases, make,
                        op_dtypes)


def _concat_samples(dtype, rng):
    cases = [([(2, 3), (1, 3)], 0), ([(2, 3), (2, 1), (2, 2)], 1), ([(2, 3), (2, 3)], -1),
             ([(4,)], 0), ([(0, 3), (2, 3)], 0), ([(2, 0), (2, 0)], 1)]
    for shapes, axis in cases:
        yield Sample(([make(rng, s, dtype) for s in shapes],), dict(axis=axis))
    if dtype in NUMERIC:
        other = I32 if dtype != I32 else I64
        yield Sample(([make(rng, (2,), dtype), make(rng, (3,), other)],), dict(axis=0),
                     desc=f"promotion with {other}")


def _stack_samples(dtype, rng):
    for shapes, axis in [([(2, 3), (2, 3)], 0), ([(2, 3)] * 3, 1), ([(2, 3)] * 2, -1),
                         ([(), ()], 0), ([(0, 2), (0, 2)], 1)]:
        yield Sample(([make(rng, s, dtype) for s in shapes],), dict(axis=axis))


def _split_samples(dtype, rng):
    for shape, spec, axis in [((6,), 3, 0), ((4, 6), 2, 1), ((5, 2), [2, 3], 0),
                              ((5, 2), [1, -1, 2], 0), ((3, 4), [0, 4], -1), ((3, 4), 1, 0),
                              ((0, 4), 2, 1)]:
        yield Sample((make(rng, shape, dtype),), dict(num_or_sizes=spec, axis=axis))


def _split_ref(x, num_or_sizes, axis=0):
    if isinstance(num_or_sizes, int):
        return np.split(x, num_or_sizes, axis=axis)
    sizes = list(num_or_sizes)
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


add(OpInfo("concat", en.concat, lambda tensors, axis=0: np.concatenate(tensors, axis=axis),
           _concat_samples, op_dtypes("concat"), error_inputs=lambda: [
               ErrorInput(Sample(([np.ones((2, 3)), np.ones((2, 4))],), dict(axis=0)),
                          en.ShapeError),
               ErrorInput(Sample(([np.ones((2, 3)), np.ones(3)],), dict(axis=0)), en.ShapeError),
               ErrorInput(Sample(([np.ones(2), np.ones(2)],), dict(axis=1)), en.ShapeError),
               ErrorInput(Sample(([np.float64(1), np.float64(2)],)), en.ShapeError),
               ErrorInput(Sample(([],)), en.ShapeError)]))
add(OpInfo("stack", en.stack, lambda tensors, axis=0: np.stack(tensors, axis=axis),
           _stack_samples, op_dtypes("stack"), error_inputs=lambda: [
               ErrorInput(Sample(([np.ones((2, 3)), np.ones((3, 2))],)), en.ShapeError),
               ErrorInput(Sample(([np.ones(2), np.ones(2)],), dict(axis=2)), en.ShapeError),
               ErrorInput(Sample(([],)), en.ShapeError)]))
add(OpInfo("split", en.split, _split_ref, _split_samples, op_dtypes("split"),
           error_inputs=error_cases([((5,), dict(num_or_sizes=2), en.ShapeError),
                                 ((5,), dict(num_or_sizes=[2, 2]), en.ShapeError),
                                 ((5,), dict(num_or_sizes=[-1, -1]), en.ShapeError),
                                 ((5,), dict(num_or_sizes=[4, -1, 3]), en.ShapeError),
                                 ((5,), dict(num_or_sizes=0), en.ShapeError),
                                 ((), dict(num_or_sizes=1), en.ShapeError),
                                 ((4,), dict(num_or_sizes=2, axis=1), en.ShapeError)])))
