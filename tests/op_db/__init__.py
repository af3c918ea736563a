"""The op database: one :class:`OpInfo` per registered op, plus the composites.

The suites in ``tests/`` loop over these entries (PyTorch's OpInfo pattern):
``test_ops_numeric`` compares each op with its numpy reference and its shape
rule, ``test_ops_grad`` checks gradients by finite differences, and
``test_op_db_complete`` fails when a registered op has no entry here.

A sample holds numpy arrays and Python scalars; the suites turn the arrays
into tensors before calling the engine and hand them unchanged to the numpy
reference. Sample values are drawn inside each op's domain (positive inputs
for ``log``, away from the kink of ``abs``, no ties for ``maximum``...), so
the same samples serve the numeric and the gradient suites.

The building blocks live in ``op_db.core``; each other module holds the entries
of one family of ``engine/ops`` and registers them when imported. They are
imported below in a fixed order, which is the order of ``OP_DB`` and
``COMPOSITES`` (parametrized tests number their cases by it).

Example:
    >>> import numpy as np
    >>> info = OPS_BY_NAME["exp"]
    >>> s = next(iter(info.sample_inputs(np.dtype("float64"), np.random.default_rng(0))))
    >>> s.args[0].dtype
    dtype('float64')
"""
from op_db.core import (ALL, BOOL, COMPOSITES, F32, F64, FLOATS, I32, I64, INTS, NUMERIC,  # noqa: F401
                        OP_DB, ErrorInput, OpInfo, Sample, call_engine, call_ref, seeded_rng,
                        to_engine)

# Registration order: the entries of the original single-file database, then the rest.
from op_db import elementwise, creation, reduce, shape_ops, matmul, misc  # noqa: F401,E402,I001
from op_db import join, indexing, random_ops, composites, linalg, transforms  # noqa: F401,E402,I001
from op_db import nn, conv, numpy_names, manipulation, math_functions, fft  # noqa: F401,E402,I001
from op_db import numpy_ufuncs  # noqa: F401,E402,I001
from op_db import select_scatter  # noqa: F401,E402,I001
from op_db import numpy_functions  # noqa: F401,E402,I001
from op_db import windows_scans  # noqa: F401,E402,I001
from op_db import statistics  # noqa: F401,E402,I001
from op_db import attention  # noqa: F401,E402,I001
from op_db import conv_nd, nn_layers_functional  # noqa: F401,E402,I001

OPS_BY_NAME = {info.name: info for info in OP_DB}
ALL_ENTRIES = OP_DB + COMPOSITES
