"""Op-database entries of the ops the function transformations add (hooked into
``op_db`` by one import): ``optimization_barrier``, which ``en.checkpoint``
puts before a recomputation."""

import engine as en

from op_db.core import OpInfo, Sample, add, make, op_dtypes


def _barrier_samples(dtype, rng):
    yield Sample((make(rng, (2, 3), dtype),))
    yield Sample((make(rng, (2, 3), dtype), make(rng, (4,), dtype)), desc="after one value")
    yield Sample((make(rng, (), dtype), make(rng, (3,), dtype), make(rng, (2, 2), dtype)),
                 desc="after two values")
    yield Sample((make(rng, (0, 3), dtype), make(rng, (1,), dtype)), desc="empty")


add(OpInfo("optimization_barrier", en.optimization_barrier, lambda x, *after: x,
           _barrier_samples, op_dtypes("optimization_barrier")))
