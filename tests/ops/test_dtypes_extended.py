"""Every op-database entry on the dtypes beyond the core five that its op claims
(int8, int16, the unsigned ints, float16, complex64/128), against numpy.

The core suites (test_ops_numeric, test_backend_strict, ...) run the core dtypes;
this file runs the others eagerly and in a graph, with the same samples.
"""
import numpy as np
import pytest

import engine as en
from op_db import ALL, OP_DB, call_engine, call_ref, seeded_rng
from support.op_checks import as_list

EXTRA = sorted(en.dtypes.ALL - set(ALL), key=lambda d: d.name)
TOLS = {np.dtype("float16"): (2e-3, 2e-3), np.dtype("complex64"): (1e-5, 1e-6),
        np.dtype("complex128"): (1e-12, 1e-12), np.dtype("float32"): (1e-5, 1e-6),
        np.dtype("float64"): (1e-12, 1e-12)}


def _cases():
    for info in OP_DB:
        if info.composite or info.random or en.REGISTRY[info.name].dtypes is None:
            continue
        for dtype in EXTRA:
            if dtype in en.REGISTRY[info.name].dtypes:
                yield pytest.param(info, dtype, id=f"{info.name}-{dtype}")


def assert_close(actual, expected, where):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} vs {expected.shape}"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype}, numpy {expected.dtype}"
    if actual.dtype in TOLS:
        rtol, atol = TOLS[actual.dtype]
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=where)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


@pytest.mark.parametrize("info,dtype", list(_cases()))
def test_matches_numpy_on_more_dtypes(info, dtype):
    samples = list(info.sample_inputs(dtype, seeded_rng(info.name, dtype.name)))
    assert samples, f"{info.name}: no samples for {dtype}"
    for sample in samples:
        where = f"{info.name} on {sample}"
        with np.errstate(all="ignore"):
            expected = as_list(call_ref(info, sample))
            eager = as_list(call_engine(info, sample))
        for a, e in zip(eager, expected, strict=True):
            assert_close(a, e, where)
        arrays = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]
        if arrays:   # the arrays traced, every other argument fixed
            def f(*xs, sample=sample):
                args = list(sample.args)
                for i, x in zip(arrays, xs):
                    args[i] = x
                return info.op(*args, **sample.kwargs)
            with np.errstate(all="ignore"):
                graph = as_list(en.function(f)(*[en.tensor(sample.args[i]) for i in arrays]))
            for a, e in zip(graph, expected, strict=True):
                assert_close(a, e, where + " (graph)")
