"""A fused kernel's scratch buffers: a numpy ufunc writes over an input that dies there,
other kernels get a buffer of their own, and a value result in the middle of a
multi-output kernel does not keep the buffers after it from being reused. Values
are checked against numpy."""
import re

import numpy as np
import pytest

import engine as en
from support.pass_helpers import concrete, concurrent_mismatches, fused_nodes, tensors

# (700, 400) has more than 2^18 elements: the kernel walks it in row blocks; (4, 8) is
# one block, the small path.
SHAPES = [(4, 8), (700, 400)]


def _slots(node):
    """The scratch buffers a fused node's kernel source names."""
    return set(re.findall(r"scratch_\w+?_\d+", node.meta["kernel_source"]))


def _chain(x, y):
    return en.tanh(((x * y + 1.0) * x - y) * 0.5)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_chain_of_ufuncs_runs_in_one_scratch_buffer(shape):
    """Every value of the chain dies at the op that reads it, so each op writes over its
    input: one buffer for the whole chain, not two taking turns."""
    x, y = tensors(shape, shape, seed=3)
    f, c = concrete(_chain, x, y)
    (node,) = fused_nodes(c.graph)
    assert len(_slots(node)) == 1, node.meta["kernel_source"]
    a, b = x.numpy(), y.numpy()
    np.testing.assert_allclose(f(x, y).numpy(), np.tanh(((a * b + 1.0) * a - b) * 0.5),
                               rtol=1e-13)


def _block_writes(node):
    """``[(op name, its argument names, the buffer it writes)]`` per member line of the
    kernel's block loop (``tK = kK(a0, t1, out=scratch_..[:b] ...)  # op``)."""
    found = re.findall(r"(t\d+) = k\d+\(([^=]*), out=(\w+)\[.*# (\w+)",
                       node.meta["kernel_source"])
    slot_of = {name: slot for name, _, slot, _ in found}
    return [(op, [slot_of.get(a.strip(), a.strip()) for a in args.split(",")], slot)
            for _, args, slot, op in found]


def _sigmoid_grad_chain(y, g):
    # sigmoid_grad's kernel copies an input that is also its output.
    return en.sigmoid(en.ops.sigmoid_grad(y * 0.5, g)) * g


def test_a_kernel_that_copies_aliased_inputs_never_writes_over_them():
    shape = (700, 400)
    y, g = tensors(shape, shape, seed=4, low=0.1, high=0.9)
    f, c = concrete(_sigmoid_grad_chain, y, g)
    (node,) = fused_nodes(c.graph)
    writes = _block_writes(node)
    (args, slot), = [(args, slot) for op, args, slot in writes if op == "sigmoid_grad"]
    assert slot not in args, node.meta["kernel_source"]
    assert [op for op, _, _ in writes] == ["mul", "sigmoid_grad", "sigmoid", "mul"]
    a, b = y.numpy() * 0.5, g.numpy()
    s = a * (1 - a) * b
    np.testing.assert_allclose(f(y, g).numpy(), b / (1 + np.exp(-s)), rtol=1e-13)


def _value_in_the_middle(x, y):
    a = x * y
    t = en.exp(a)                  # a result of the kernel, and read again below
    u = (t + 1.0) * a - y
    return en.sum(t), en.tanh(u * 0.5)


@pytest.mark.parametrize("shape", SHAPES)
def test_buffers_are_reused_after_a_value_result_in_the_middle(shape):
    """The members after ``exp`` (a value result, written into its own output) reuse the
    buffers of the values that die: two scratch buffers, where counting the members
    without the result had left five."""
    x, y = tensors(shape, shape, seed=5, low=-1.0, high=1.0)
    f, c = concrete(_value_in_the_middle, x, y)
    (node,) = fused_nodes(c.graph)
    assert len(_slots(node)) <= 2, node.meta["kernel_source"]
    a, b = x.numpy(), y.numpy()
    t = np.exp(a * b)
    total, value = f(x, y)
    np.testing.assert_allclose(total.numpy(), t.sum(), rtol=1e-12)
    np.testing.assert_allclose(value.numpy(), np.tanh(((t + 1.0) * (a * b) - b) * 0.5),
                               rtol=1e-13)


def _unrolled(h, u, b):
    # Five steps, each a product and one small kernel (an add, a tanh, a square, a sub
    # and a mul): scratch buffers of one shape and dtype in every step.
    for _ in range(5):
        h = en.tanh(h @ u + b) * (1.0 - h * h)
    return h


def _unrolled_reference(h, u, b):
    for _ in range(5):
        h = np.tanh(h @ u + b) * (1.0 - h * h)
    return h


def test_small_kernels_of_one_shape_share_their_scratch_buffers():
    """One free list for the graph's small kernels of a shape and scratch dtypes: after a
    call it holds one set, which every step used in turn (and stays in cache)."""
    h, a, b = tensors((32, 64), (64, 64), (64,), seed=6, low=-0.3, high=0.3)
    f, c = concrete(_unrolled, h, a, b)
    kernels = fused_nodes(c.graph)
    assert len(kernels) == 5
    pools = {id(n.op.out_impl.__globals__["small_scratch"]) for n in kernels}
    assert len(pools) == 1
    got = f(h, a, b).numpy()
    assert len(kernels[0].op.out_impl.__globals__["small_scratch"]) == 1
    np.testing.assert_allclose(got, _unrolled_reference(h.numpy(), a.numpy(), b.numpy()),
                               rtol=1e-12, atol=1e-14)


def test_concurrent_calls_never_share_a_scratch_set():
    h0, a, b = tensors((32, 64), (64, 64), (64,), seed=7, low=-0.3, high=0.3)
    f = en.function(_unrolled)
    f(h0, a, b)
    starts = [tensors((32, 64), seed=20 + k, low=-0.9, high=0.9)[0] for k in range(4)]
    wants = [_unrolled_reference(s.numpy(), a.numpy(), b.numpy()) for s in starts]
    errors = concurrent_mismatches(lambda h: f(h, a, b).numpy(), starts, wants, 300,
                                   1e-12, 1e-14)
    assert not errors, f"threads {errors} read another call's scratch"
