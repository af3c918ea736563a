"""Op-database entries for the shape ops (``engine/ops/shape_ops.py``): reshape,
transpose, broadcast_to, expand_dims, squeeze, and the helpers the VJPs use when
dims are only known at run time (``broadcast_like``, ``count``)."""
import numpy as np

import engine as en

from op_db.core import (BOOL, F32, F64, I32, I64, ErrorInput, OpInfo, Sample, add, error_cases,
                        make, op_dtypes, with_params)


add(OpInfo("reshape", en.reshape, np.reshape, with_params([
    ((6,), dict(shape=(2, 3))), ((2, 3), dict(shape=(3, -1))), ((2, 3, 4), dict(shape=(-1,))),
    ((1,), dict(shape=())), ((), dict(shape=(1, 1))), ((0, 3), dict(shape=(3, 0))),
    ((0, 3), dict(shape=(-1, 3))), ((2, 3), dict(shape=(3, 2)))]), op_dtypes("reshape"),
    error_inputs=error_cases([((6,), dict(shape=(4,)), en.ShapeError),
                          ((6,), dict(shape=(-1, -1)), en.ShapeError),
                          ((6,), dict(shape=(4, -1)), en.ShapeError),
                          ((6,), dict(shape=(-2, -3)), en.ShapeError)])))
add(OpInfo("transpose", en.transpose, np.transpose, with_params([
    ((2, 3), dict(axes=None)), ((2, 3, 4), dict(axes=None)), ((2, 3, 4), dict(axes=(1, 0, 2))),
    ((2, 3, 4), dict(axes=(-1, 0, 1))), ((), dict(axes=None)), ((0, 3), dict(axes=(1, 0))),
    ((5,), dict(axes=(0,)))]), op_dtypes("transpose"),
    error_inputs=error_cases([((2, 3), dict(axes=(0, 0)), en.ShapeError),
                          ((2, 3), dict(axes=(0,)), en.ShapeError),
                          ((2, 3), dict(axes=(0, 1, 2)), en.ShapeError)])))
add(OpInfo("broadcast_to", en.broadcast_to, np.broadcast_to, with_params([
    ((3,), dict(shape=(2, 3))), ((), dict(shape=(2, 2))), ((2, 1), dict(shape=(2, 3))),
    ((2, 1), dict(shape=(4, 2, 5))), ((0,), dict(shape=(2, 0))), ((1,), dict(shape=(0,))),
    ((2, 3), dict(shape=(2, 3)))]), op_dtypes("broadcast_to"),
    error_inputs=error_cases([((3,), dict(shape=(4,)), en.ShapeError),
                          ((2, 3), dict(shape=(3,)), en.ShapeError),
                          ((2, 3), dict(shape=(3, 3)), en.ShapeError)])))
add(OpInfo("expand_dims", en.expand_dims, np.expand_dims, with_params([
    ((3,), dict(axis=0)), ((3,), dict(axis=1)), ((3,), dict(axis=-1)), ((2, 3), dict(axis=-2)),
    ((), dict(axis=0)), ((0, 2), dict(axis=1)),
    # numpy's tuple of axes: positions in the result
    ((2, 3), dict(axis=(0, 3))), ((3,), dict(axis=(-1, 0))), ((2,), dict(axis=(2, 1))),
    ((), dict(axis=(0, 1)))]), op_dtypes("expand_dims"),
    error_inputs=error_cases([((3,), dict(axis=2), en.ShapeError),
                          ((3,), dict(axis=-3), en.ShapeError),
                          ((3,), dict(axis=(0, 0)), en.ShapeError),
                          ((3,), dict(axis=(0, 3)), en.ShapeError),
                          ((3,), dict(axis=(0, 1.0)), en.ShapeError)])))
add(OpInfo("squeeze", en.squeeze, np.squeeze, with_params([
    ((1, 3, 1), dict(axis=None)), ((1, 3, 1), dict(axis=0)), ((1, 3, 1), dict(axis=-1)),
    ((1, 3, 1), dict(axis=(0, 2))), ((1,), dict(axis=None)), ((3,), dict(axis=None)),
    ((1, 0), dict(axis=0)), ((), dict(axis=None))]), op_dtypes("squeeze"),
    error_inputs=error_cases([((1, 3), dict(axis=1), en.ShapeError),
                          ((1, 3), dict(axis=2), en.ShapeError)])))



# Shape helpers the VJPs use when dims are only known at run time.
def _broadcast_like_samples(dtype, rng):
    for sx, sl in [((3,), (2, 3)), ((), (2, 2)), ((2, 1), (2, 3)), ((1,), (0,)), ((2, 3), (2, 3))]:
        yield Sample((make(rng, sx, dtype), make(rng, sl, dtype)))
    yield Sample((make(rng, (2, 1), dtype), make(rng, (2, 4), BOOL)), desc="like of another dtype")


def _count_ref(x, axes=None, dtype=F64):
    axes = range(x.ndim) if axes is None else [axes] if isinstance(axes, int) else axes
    return np.asarray(int(np.prod([x.shape[a] for a in axes])), dtype=dtype)


def _count_samples(dtype, rng):
    for shape, axes, out in [((2, 3, 4), None, F64), ((2, 3, 4), (0, 2), F32), ((2, 3), -1, I64),
                             ((0, 3), 1, F64), ((), None, I32)]:
        yield Sample((make(rng, shape, dtype),), dict(axes=axes, dtype=out))


add(OpInfo("broadcast_like", en.ops.broadcast_like, lambda x, like: np.broadcast_to(x, like.shape),
           _broadcast_like_samples, op_dtypes("broadcast_like"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones(3), np.ones((2, 4)))), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 3)), np.ones(3))), en.ShapeError)]))
add(OpInfo("count", en.ops.count, _count_ref, _count_samples, op_dtypes("count"),
           error_inputs=error_cases([((2, 3), dict(axes=2), en.ShapeError),
                                 ((2, 3), dict(axes=(0, 0)), en.ShapeError)])))
