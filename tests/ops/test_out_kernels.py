"""Every op's ``out_impl`` writes what its ``impl`` returns.

Memory planning, fusion and eager mode's recycled arrays all call
``out_impl(*arrays, out=buffer)`` instead of ``impl``; a kernel that differs
would change results only in those modes. For every op call made while
running the op database, the out kernel is run into a fresh buffer and, for
elementwise ops, over each input it could overwrite in place (memory planning
hands an elementwise op an input that dies there as its output).
"""
import numpy as np
import pytest

from engine.eager.mode import EAGER
from engine.modes import use_mode
from engine.op import REGISTRY
from op_db import ALL_ENTRIES, call_engine, seeded_rng


class OutKernelSpy:
    """Runs every op eagerly and records the calls of ops that have an out kernel."""

    name = "out-kernel-spy"
    is_concrete = True    # it runs every op eagerly (composites may ask)

    def __init__(self):
        self.calls = []

    def apply(self, op, args, params):
        out = EAGER.apply(op, args, params)
        if op.out_impl is not None and not op.multiple_results:
            arrays = [t._value for t in EAGER.lift(args)]
            self.calls.append((op, arrays, params, np.array(out.numpy(), copy=True)))
        return out


def _entries():
    for info in ALL_ENTRIES:
        for dtype in info.dtypes:
            yield pytest.param(info, dtype, id=f"{info.name}-{dtype}")


def _same(got, want, where):
    assert got.shape == want.shape and got.dtype == want.dtype, where
    np.testing.assert_array_equal(got, want, err_msg=where)


@pytest.mark.parametrize("info,dtype", list(_entries()))
def test_out_kernel_matches_impl(info, dtype):
    spy = OutKernelSpy()
    with use_mode(spy), np.errstate(all="ignore"):
        for sample in info.sample_inputs(dtype, seeded_rng(info.name, dtype)):
            call_engine(info, sample)
    own = REGISTRY.get(info.name)
    if not info.composite and own is not None and own.out_impl is not None:
        assert any(c[0] is own for c in spy.calls), f"{info.name}: its out kernel never ran"
    for op, arrays, params, want in spy.calls:
        where = f"{op.name} {[(a.shape, a.dtype.name) for a in arrays]} {params}"
        with np.errstate(all="ignore"):
            buffer = np.empty(want.shape, want.dtype)
            result = op.out_impl(*[a.copy() for a in arrays], out=buffer, **params)
            assert result is buffer or np.shares_memory(result, buffer), where
            _same(buffer, want, where + " (fresh buffer)")
            if not op.elementwise:
                continue
            for k, a in enumerate(arrays):
                if a.shape != want.shape or a.dtype != want.dtype:
                    continue
                inputs = [b.copy() for b in arrays]
                op.out_impl(*inputs, out=inputs[k], **params)
                _same(inputs[k], want, where + f" (written over input {k})")


def test_the_matmul_out_kernel_takes_any_output_numpy_matmul_takes():
    # The 2-D fast path (np.dot) needs a C-contiguous out of the product's dtype; a
    # column-major out, a wider out dtype and stacked operands go to np.matmul.
    rng = np.random.default_rng(0)
    x, y = rng.random((5, 4)), rng.random((4, 3))
    out_impl = REGISTRY["matmul"].out_impl
    for out in (np.empty((5, 3)), np.empty((5, 3), order="F"), np.empty((5, 3), np.complex128)):
        assert out_impl(x, y, out=out) is out
        np.testing.assert_allclose(out, x @ y, rtol=1e-14)
    # Above en.config.cost.dot_out_max_work multiply-adds every product goes to np.matmul, faster there.
    big_x, big_y = rng.random((128, 64)), rng.random((64, 64)).T
    out = np.empty((128, 64))
    assert out_impl(big_x, big_y, out=out) is out
    np.testing.assert_allclose(out, big_x @ big_y, rtol=1e-14)
    stacked = rng.random((2, 5, 4))
    out = np.empty((2, 5, 3))
    np.testing.assert_allclose(out_impl(stacked, y, out=out), stacked @ y, rtol=1e-14)
    with pytest.raises(ValueError):
        out_impl(x, y, out=np.empty((5, 4)))
