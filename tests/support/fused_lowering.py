"""Helpers shared by the tests of the compiled fused kernels (numba's and C's)."""
import numpy as np

import engine as en

from support.programs import flat


def fused_backends(graph):
    """The back end of each fused kernel of ``graph`` ("numpy", "numba", "c")."""
    return [n.meta.get("backend") for n in graph.nodes if n.op.name.startswith("fused")]


def run_lowered(fn, arrays, mode, threads=1):
    """``fn`` traced under ``en.config.lowering = mode`` and ``threads`` kernel threads and
    run on ``arrays``: ``(its results as numpy, its fused kernels' back ends)``."""
    en.config.lowering = mode
    en.config.fusion_threads = threads
    f = en.function(fn)
    tensors = [en.tensor(a) for a in arrays]
    return [o.numpy() for o in flat(f(*tensors))], fused_backends(f.graph_for(*tensors))


def region_of(fn, arrays):
    """``(members, inputs)``: the one fused region of ``fn`` traced on ``arrays`` with the
    cleanup passes only, for a kernel made by hand."""
    en.config.lowering = "numpy"
    graph = en.function(fn, passes=["cleanup"]).graph_for(*[en.tensor(a) for a in arrays])
    leaves = ("placeholder", "constant")
    members = [n for n in graph.topo_order() if n.op.name not in leaves]
    inputs = [n for n in graph.topo_order() if n.op.name in leaves]
    return members, inputs


def autoencoder_gradient_backends(mode, threads):
    """The autoencoder's loss and gradient (batch 500) under ``mode``, checked against the
    float64 gradient written by hand; returns its fused kernels' back ends."""
    from bench.workloads import autoencoder
    rng = np.random.default_rng(3)
    w = rng.uniform(-0.07, 0.07, (784, 196)).astype(np.float32)
    b1, b2 = (rng.uniform(-0.1, 0.1, n).astype(np.float32) for n in (196, 784))
    x = rng.random((500, 784)).astype(np.float32)
    vg = en.value_and_grad(autoencoder.engine_loss, argnums=(0, 1, 2))
    got, backends = run_lowered(vg, [w, b1, b2, x], mode, threads)
    want = autoencoder.numpy_loss_and_grad(*(a.astype(np.float64) for a in (w, b1, b2, x)))
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4 * np.abs(r).max())
    return backends


def sigmoid_times_three_case():
    """``(fn, a, b, three, want)``: the region ``sigmoid(a + b) * 3`` over (600, 200), its
    arrays and its float64 value, for kernels made by hand with :func:`region_of`."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((600, 200)).astype(np.float32)
    b = rng.standard_normal(200).astype(np.float32)
    want = 3.0 / (1.0 + np.exp(-(a.astype(np.float64) + b)))
    return (lambda a, b: en.sigmoid(a + b) * 3.0), a, b, np.float32(3.0), want


def check_partial_overlap_is_read_from_a_copy(kernel, a, b, three):
    """A result overlapping the kernel's input shifted by one row: the input is read from
    a copy, as numpy does, so the result is the shifted input's."""
    buf = np.concatenate([a, a[:1]])
    out = kernel.out_impl(buf[1:], b, three, buf[:-1])
    shifted = np.concatenate([a[1:], a[:1]]).astype(np.float64)
    np.testing.assert_allclose(out, 3.0 / (1.0 + np.exp(-(shifted + b))), rtol=2e-6)
