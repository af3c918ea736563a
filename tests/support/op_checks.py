"""Checks shared by the suites that loop over the op database: comparing an engine result
with numpy's, and finding and replacing the float arrays of a sample's arguments.

Example:
    >>> import numpy as np
    >>> leaf_paths((np.ones(2), [np.ones(3), 2.0]), np.dtype("float64"))
    [(0,), (1, 0)]
"""
import numpy as np

from op_db import F32, F64, to_engine

# (rtol, atol) per result dtype; ints and bools must match exactly.
TOLS = {F64: (1e-7, 1e-12), F32: (1.3e-6, 1e-5)}
# Complex results (the transforms) as their components' precision.
TOLS.update({np.dtype("complex128"): TOLS[F64], np.dtype("complex64"): TOLS[F32]})


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def assert_matches(actual, expected, where):
    """``actual`` (engine result) equals ``expected`` (numpy) in shape, dtype and value."""
    actual, expected = as_list(actual), as_list(expected)
    assert len(actual) == len(expected), (
        f"{where}: {len(actual)} results, numpy gives {len(expected)}")
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{where}: shape {a.shape}, numpy gives {e.shape}"
        assert a.dtype == e.dtype, f"{where}: dtype {a.dtype}, numpy gives {e.dtype}"
        if a.dtype in TOLS:
            rtol, atol = TOLS[a.dtype]
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(a, e, err_msg=where)


def leaf_paths(args, dtype):
    """Where the numpy arrays of ``dtype`` are in ``args``: ``(i,)``, or ``(i, j)``
    inside a list argument (``concat``'s tensors)."""
    paths = []
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)):
            paths += [(i, j) for j, b in enumerate(a)
                      if isinstance(b, np.ndarray) and b.dtype == dtype]
        elif isinstance(a, np.ndarray) and a.dtype == dtype:
            paths.append((i,))
    return paths


def get_leaf(args, path):
    return args[path[0]] if len(path) == 1 else args[path[0]][path[1]]


def with_leaves(args, paths, values):
    """The sample's arguments as engine values, with ``values`` at ``paths``."""
    return replace_leaves([to_engine(a) for a in args], paths, values)


def replace_leaves(args, paths, values):
    """A copy of the list ``args`` with ``values`` at ``paths`` (see :func:`leaf_paths`)."""
    args = list(args)
    for path, v in zip(paths, values):
        if len(path) == 1:
            args[path[0]] = v
        else:
            inner = list(args[path[0]])
            inner[path[1]] = v
            args[path[0]] = inner
    return args
