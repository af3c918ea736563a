"""``en.config.numerics = "bitwise"`` over the op database: every op's samples, float32
and float64, give eager mode's bits in a traced function lowered by numpy, C and numba.

Each op is followed by ``* 2.0`` (exact) so that an elementwise op forms a fused region
with it. Under "bitwise" a compiled lowering takes a region only where every member is
exact arithmetic (graph/lowering/bitwise.py): those regions must really be compiled
(the C and numba checks would otherwise compare numpy with numpy), and the others
must stay on the numpy kernels. The C lowering writes such a small graph whole, as one
C function (``"c"``), where the transcendental functions call numpy's own loops
(graph/lowering/c/c_bitwise.py); with whole graphs declined (``"c_fused"``) it writes
the fused kernels.
"""
import warnings

import numpy as np
import pytest

import engine as en
from engine.op import REGISTRY
from op_db import ALL_ENTRIES, F32, F64, seeded_rng
from support.bitwise import assert_same_bits, compiled_backends, fused_backends, numerics
from support.compilers import import_numba, skip_without_c_compiler
from support.programs import flat

# Samples per op and dtype under the numpy lowering (every op), and under C and numba
# (the ops they may write): enough to meet every op, few enough to keep the suite fast.
SAMPLES, COMPILED_SAMPLES = 2, 1
# Ops whose exact form C writes under "bitwise" (the rest need integers, complex or
# helpers of numba_math, see tests/graph/lowering/c/test_c_fused.py).
C_AT_LEAST = {"add", "sub", "mul", "div", "neg", "abs", "maximum", "minimum", "relu",
              "square", "sqrt", "where", "floor", "ceil"}
# Functions no compiled kernel computes as numpy does: kept on the numpy kernels, except
# in a whole graph in C, which calls numpy's own loops for them.
INEXACT = {"exp", "tanh", "sigmoid", "log", "erf", "sin", "power"}
C_NUMPY_LOOPS = {"exp", "tanh", "sigmoid", "log", "sin", "pow", "log1p", "arctan2"}
# numba compiles a region in about a third of a second: it checks these only.
NUMBA_OPS = C_AT_LEAST | INEXACT


def _twice(info, sample):
    def run(*tensors):
        it = iter(tensors)
        args = [next(it) if isinstance(a, np.ndarray) else a for a in sample.args]
        outs = flat(info.op(*args, **sample.kwargs))
        return tuple(en.logical_not(o) if o.dtype == en.bool_ else
                     o * 2.0 if o.dtype.kind in "fc" else o for o in outs)
    return run


def _exact_elementwise(info):
    op = REGISTRY.get(info.name)
    if op is None or info.composite or not op.elementwise or \
            op.rules.get("scalar_form") is None:
        return False
    return op


def _cases(dtype, per_op, only=None, arrays_only=False):
    """``(info, sample, tensors)``: ``per_op`` samples of each entry (``arrays_only``:
    those with an array of at least one dimension, which a compiled kernel loops over)."""
    for info in ALL_ENTRIES:
        if info.random or dtype not in info.dtypes or (only and not only(info)):
            continue
        taken = 0
        for sample in info.sample_inputs(dtype, seeded_rng(info.name, dtype, "bitwise")):
            arrays = [a for a in sample.args if isinstance(a, np.ndarray)]
            if not arrays or (arrays_only and max(a.ndim for a in arrays) == 0):
                continue
            yield info, sample, [en.tensor(a) for a in arrays]
            taken += 1
            if taken == per_op:
                break


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_every_op_traced_gives_eager_bits(dtype):
    checked = set()
    with numerics("bitwise", "numpy"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info, sample, tensors in _cases(dtype, SAMPLES):
            run = _twice(info, sample)
            want = run(*tensors)
            assert_same_bits(en.function(run)(*tensors), want, f"{info.name} on {sample}")
            checked.add(info.name)
    # (a guard against the database's samples drifting away from what is checked)
    assert len(checked) >= 320, len(checked)


@pytest.mark.parametrize("lowering", ["c", "c_fused", "numba"])
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_ops_in_compiled_kernels_give_eager_bits(lowering, dtype):
    if lowering.startswith("c"):
        skip_without_c_compiler()   # the numpy lowering's test above still runs
    if lowering == "numba":
        import_numba()
    def writable(info):
        return _exact_elementwise(info) and (lowering != "numba" or info.name in NUMBA_OPS)

    name = "c" if lowering == "c_fused" else lowering
    # (c_fused: no graph is small enough to be written whole)
    limit = {"whole_graph_small_elements": 0, "whole_graph_max_elements": 0} \
        if lowering == "c_fused" else {}
    compiled, kept = set(), set()
    with numerics("bitwise", name), en.config.cost.override(**limit):
        for info, sample, tensors in _cases(dtype, COMPILED_SAMPLES, writable,
                                              arrays_only=True):
            run = _twice(info, sample)
            f = en.function(run)
            assert_same_bits(f(*tensors), run(*tensors), f"{info.name} on {sample} ({lowering})")
            if name in fused_backends(f, tensors) + compiled_backends(f, tensors):
                compiled.add(info.name)
            else:
                kept.add(info.name)
    assert C_AT_LEAST <= compiled, sorted(C_AT_LEAST - compiled)
    if lowering == "c":
        # A whole graph in C calls numpy's loops for the transcendental functions.
        assert C_NUMPY_LOOPS <= compiled, sorted(C_NUMPY_LOOPS - compiled)
        return
    # A transcendental function never runs in a compiled kernel under "bitwise".
    assert not compiled & INEXACT, sorted(compiled & INEXACT)
    assert {"exp", "tanh", "log"} <= kept
