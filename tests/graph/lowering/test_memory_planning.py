"""Memory planning: buffers reused across nodes and calls, never aliasing what the caller holds."""
import numpy as np
import pytest

import engine as en
from support.pass_helpers import (as_arrays, assert_matches, assert_same_bits, concrete,
                                  concurrent_mismatches, fused_nodes, tensors)


# ---- memory planning ----------------------------------------------------------------------------
W64 = tensors((64, 64), seed=11)[0] / 8.0


def _chain(x):
    a = x @ W64
    b = en.tanh(a) @ W64
    c = en.relu(b) @ W64
    d = en.sigmoid(c) * 2.0 + 1.0
    return en.sum(d @ W64, axis=0)


def test_memory_report_plans_and_reuses_buffers():
    (x,) = tensors((64, 64))
    f = en.function(_chain)
    report = f.memory_report(x)
    assert set(report) >= {"buffers", "buffer_bytes", "planned_nodes", "bytes_reused", "in_place",
                           "unplanned_peak_bytes"}
    assert report["planned_nodes"] >= 4 and report["buffers"] >= 1
    assert report["buffer_bytes"] <= report["unplanned_peak_bytes"]
    assert report["bytes_reused"] > 0
    assert report["in_place"] >= 1
    plan = f.graph_for(x).memory_plan
    assert report["buffer_bytes"] == sum(plan.slots)   # byte buffers, shared by views
    assert all(plan.slots[s] >= np.prod(shape) * np.dtype(d).itemsize
               for s, shape, d in plan.views)
    assert_matches(f(x), en.function(_chain, optimize=False)(x), "planned chain")


def test_memory_report_without_planning():
    (x,) = tensors((64, 64))
    report = en.function(_chain, passes=["cleanup", "fusion"]).memory_report(x)
    assert report["buffers"] == 0 and report["bytes_reused"] == 0
    assert report["unplanned_peak_bytes"] > 0 and "off" in report["note"]


def _check_results_survive_later_calls(fn, make_args, what, calls=3):
    """Results of earlier calls keep their values and share no memory with later results."""
    f = en.function(fn)
    u = en.function(fn, optimize=False)
    kept = []
    for k in range(calls):
        args = make_args(k)
        out = f(*args)
        assert_matches(out, u(*args), f"{what}, call {k}")
        kept.append((as_arrays(out), [a.copy() for a in as_arrays(out)]))
    for k, (arrays, copies) in enumerate(kept):
        for j, (a, saved) in enumerate(zip(arrays, copies)):
            assert np.array_equal(a, saved, equal_nan=True), (
                f"{what}: output {j} of call {k} changed after later calls: a buffer of the "
                f"memory plan was handed to the caller")
    for k in range(calls):
        for k2 in range(k + 1, calls):
            for j, a in enumerate(kept[k][0]):
                for j2, b in enumerate(kept[k2][0]):
                    if a.size and b.size:
                        assert not np.shares_memory(a, b), (
                            f"{what}: output {j} of call {k} shares memory with output {j2} "
                            f"of call {k2}")


def _x64(k):
    return tensors((64, 64), seed=100 + k)


def test_results_are_never_aliased_by_a_later_call_chain():
    _check_results_survive_later_calls(_chain, _x64, "matmul chain")


def test_results_that_are_views_of_intermediates_are_not_aliased():
    def views(x):
        a = en.tanh(x @ W64)
        b = a @ W64
        return en.reshape(b, (32, 128)), en.transpose(en.exp(b) @ W64), en.reshape(a, (4096,))

    _check_results_survive_later_calls(views, _x64, "reshape/transpose views")


def test_returned_intermediate_also_used_inside_is_not_aliased():
    def shared(x):
        a = x @ W64               # returned and used again
        b = en.tanh(a) @ W64
        c = en.relu(b) * a
        return a, en.sum(c @ W64), c

    _check_results_survive_later_calls(shared, _x64, "returned intermediate")


def test_elementwise_outputs_and_in_place_chains_are_not_aliased():
    def elementwise(x):
        a = x @ W64
        b = en.tanh(a)                # may be computed in place over a
        c = b @ W64
        return en.exp(c), en.transpose(b)

    _check_results_survive_later_calls(elementwise, _x64, "in-place chain")


def test_results_under_a_gradient_tape_are_not_aliased():
    f = en.function(_chain)
    kept = []
    for k in range(3):
        (x,) = _x64(k)
        with en.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
            loss = en.sum(y * y)
        g = tape.gradient(loss, x)
        kept.append([(a, a.copy()) for a in as_arrays((y, g))])
    for k, pairs in enumerate(kept):
        for a, saved in pairs:
            assert np.array_equal(a, saved), f"a result of call {k} changed after later calls"
    assert not np.shares_memory(kept[0][0][0], kept[1][0][0])


def test_in_place_updates_never_touch_the_callers_arrays():
    rng = np.random.default_rng(5)
    raw = rng.standard_normal((64, 64))
    saved = raw.copy()
    frozen = rng.standard_normal((64, 64))
    frozen.flags.writeable = False            # a tensor wraps read-only arrays without a copy
    frozen_saved = frozen.copy()

    def fn(x, y):
        a = en.tanh(x)                        # elementwise on an input
        b = en.exp(y) + a                     # and on the other
        c = (b @ W64) * 2.0
        return en.sum(c, axis=1), en.relu(x) - y

    f = en.function(fn)
    x, y = en.tensor(raw), en.tensor(frozen)
    for _ in range(2):
        assert_matches(f(x, y), en.function(fn, optimize=False)(x, y), "inputs")
    assert np.array_equal(raw, saved) and np.array_equal(x.numpy(), saved)
    assert np.array_equal(frozen, frozen_saved) and np.array_equal(y.numpy(), frozen_saved)


def _where_over_condition(a, b, x, y):
    c = en.greater(a, b)                       # a planned bool buffer...
    k = en.sum(en.cast(c, "float64"))          # ...read elsewhere first, so not fused into w
    w = en.where(c, en.logical_not(x), y)      # ...and dying here: a candidate to write over
    return en.sum(en.cast(en.reshape(w, (12,)), "float64")) + k


@pytest.mark.parametrize("passes", [None, ["memory_planning"]], ids=["default", "planning only"])
def test_in_place_where_never_overwrites_its_condition(passes):
    """Writing ``where``'s result over its dying bool condition must not change the result.

    ``where``'s out kernel copies ``y`` into ``out`` first; when ``out`` is the condition's
    buffer, the condition is gone before it is read."""
    rng = np.random.default_rng(0)
    args = [en.tensor(rng.standard_normal((3, 4))), en.tensor(rng.standard_normal((3, 4))),
            en.tensor(rng.random((3, 4)) < 0.5), en.tensor(rng.random((3, 4)) < 0.5)]
    f = en.function(_where_over_condition, passes=passes)
    want = en.function(_where_over_condition, optimize=False)(*args)
    assert_same_bits(f(*args), want,
                     f"where computed in place over its condition (memory plan "
                     f"{f.memory_report(*args)}):\n{f.source_for(*args)}")


def test_planned_buffers_never_exceed_the_unplanned_peak():
    """A chain of matmuls with shrinking shapes: each value dies as the next is made, so no
    more than two are ever live; a plan that keeps one buffer per shape holds them all."""
    rng = np.random.default_rng(1)
    ws = [en.tensor(rng.standard_normal(s)) for s in [(256, 128), (128, 64), (64, 32), (32, 16)]]

    def shrink(x):
        for w in ws:
            x = x @ w
        return en.sum(x)

    x = en.tensor(rng.standard_normal((64, 256)))
    f = en.function(shrink)
    report = f.memory_report(x)
    assert_matches(f(x), en.function(shrink, optimize=False)(x), "shrinking chain")
    assert report["buffer_bytes"] <= report["unplanned_peak_bytes"], (
        f"the memory plan holds {report['buffer_bytes']} bytes of buffers, more than the "
        f"{report['unplanned_peak_bytes']}-byte peak without a plan: buffers are only reused "
        f"for values of exactly the same shape and dtype\n{report}\n{f.source_for(x)}")


def test_concurrent_calls_use_their_own_buffers():
    f = en.function(_chain)
    u = en.function(_chain, optimize=False)
    inputs = [_x64(k)[0] for k in range(4)]
    want = [u(x).numpy() for x in inputs]
    errors = concurrent_mismatches(lambda x: f(x).numpy(), inputs, want, 25, 1e-6, 1e-9)
    assert not errors, f"threads {errors} saw another call's buffers"


def _small_regions(x, y):
    a = en.tanh(x * y)                                  # used twice: needs scratch
    b = en.exp(a) * a - y
    t = en.sin(b)
    c = en.where(en.greater(t, y), t * t, y)            # a bool value and t*t in place
    return en.cast(c > 0.1, "float32") + c, en.sqrt(en.abs(x)) + 1.0


@pytest.mark.parametrize("shape", [(), (8,), (3, 5)])
def test_small_fused_kernels_match_and_never_alias(shape):
    """Small traced shapes run a generated kernel that allocates its result and computes
    chains in it: bit for bit as unoptimized, and no result is reused by a later call."""
    def make(k):
        return tensors(shape, shape, seed=30 + k)

    args = make(0)
    f, c = concrete(_small_regions, *args)
    assert len(fused_nodes(c.graph)) >= 2
    assert "_fresh(" in f.source_for(*args) or all(
        "_fresh(" in n.meta["kernel_source"] for n in fused_nodes(c.graph))
    assert_same_bits(f(*args), en.function(_small_regions, optimize=False)(*args), "small")
    _check_results_survive_later_calls(_small_regions, make, f"small fused kernels {shape}")


def test_small_fused_kernel_keeps_its_dtype_when_numpy_would_pick_another():
    """The first op of a small kernel makes the result array itself; should numpy pick
    another dtype for the values it is given (as for a weakly typed Python scalar), the
    kernel computes into an array of the traced dtype instead, as with ``out=``."""
    x = en.tensor(np.linspace(0.1, 0.9, 8).astype(np.float32))
    f, c = concrete(lambda x: en.exp(x * x) + 1.0, x)
    (node,) = fused_nodes(c.graph)
    wide = np.linspace(0.1, 0.9, 8)                   # float64, not the traced float32
    got = node.op.impl(wide, np.float32(1.0))
    assert got.dtype == np.float32
    want = np.empty(8, np.float32)
    np.multiply(wide, wide, out=want)
    np.exp(want, out=want)
    np.add(want, np.float32(1.0), out=want)
    np.testing.assert_array_equal(got, want)
