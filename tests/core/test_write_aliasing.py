"""Aliasing cases for writable tensors: memory the engine reuses (the eager buffer cache,
a compiled function's recycled outputs and planned buffers, fused kernels) must never be
memory a live tensor can still be written through, and a write must never reach a tensor
that numpy would have kept apart. Each case is checked against numpy doing the same."""
import numpy as np

import engine as en

BIG = (512, 512)     # large enough for the eager buffer cache and output recycling


def test_a_view_keeps_its_memory_from_the_eager_buffer_cache():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(BIG)
    x = en.tensor(a)
    y = x * 2.0
    row = y[3]                     # a view of y's memory
    del y
    others = [x * 3.0 for _ in range(4)]     # results that could take y's freed memory
    row[0] = -7.0                  # must not land in one of them
    for k, other in enumerate(others):
        np.testing.assert_array_equal(other.numpy(), a * 3.0, err_msg=f"result {k}")
    want = a[3] * 2.0
    want[0] = -7.0
    np.testing.assert_array_equal(row.numpy(), want)


def test_a_numpy_view_keeps_its_memory_from_the_eager_buffer_cache():
    a = np.random.default_rng(1).standard_normal(BIG)
    x = en.tensor(a)
    y = x + 1.0
    held = np.asarray(y)
    del y
    z = x + 5.0
    held[0, 0] = 123.0
    np.testing.assert_array_equal(z.numpy(), a + 5.0)


def test_a_written_result_of_a_compiled_function_is_not_recycled():
    a = np.random.default_rng(2).standard_normal(BIG)
    f = en.function(lambda x: en.tanh(x) * 2.0)
    x = en.tensor(a)
    first = f(x)
    first[0, 0] = 99.0                 # the caller writes its result
    second = f(x)                      # the next call must not reuse first's memory
    np.testing.assert_allclose(second.numpy(), np.tanh(a) * 2.0)
    assert float(first[0, 0]) == 99.0
    third = f(x)
    second += 1.0
    np.testing.assert_allclose(third.numpy(), np.tanh(a) * 2.0)


def test_in_place_updates_in_a_compiled_loop_match_numpy():
    """Many writes and in-place operators in one traced function: memory planning and
    fusion see functional updates, and the result is numpy's."""
    def program(xp, x):
        acc = xp.zeros_like(x)
        for k in range(6):
            acc += x * k
            acc[k % 3] -= 1.0
            acc[:, ::2] *= 0.5
        acc[acc > 3.0] = 3.0
        return acc

    a = np.random.default_rng(3).standard_normal((4, 6))
    want = program(np, a.copy())
    got = en.function(lambda x: program(en, x))(en.tensor(a))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(program(en, en.tensor(a)).numpy(), want, rtol=1e-12)


def test_a_variable_read_written_leaves_the_variable_and_other_reads_alone():
    v = en.Variable(np.arange(4.0))
    r1, r2 = v.value(), v.value()
    r1 += 10.0
    np.testing.assert_array_equal(v.numpy(), np.arange(4.0))
    np.testing.assert_array_equal(r2.numpy(), np.arange(4.0))
    v.assign_add(np.ones(4))
    np.testing.assert_array_equal(r1.numpy(), np.arange(4.0) + 10.0)


def test_two_results_of_one_value_alias_as_the_eager_call_does():
    def twice(x):
        y = x * 2.0
        return y, y

    a = np.arange(3.0)
    p, q = twice(en.tensor(a))
    p[0] = -1.0
    eager_q = q.numpy().copy()
    gp, gq = en.function(twice)(en.tensor(a))
    gp[0] = -1.0
    np.testing.assert_array_equal(gq.numpy(), eager_q)       # the same value, as eagerly


def test_a_write_into_a_result_does_not_reach_the_argument_numpy_would_copy():
    a = np.arange(6.0).reshape(2, 3)
    for fn in [lambda x: x * 1.0, lambda x: en.exp(x), lambda x: x.astype("float32"),
               lambda x: en.concat([x, x]), lambda x: en.flip(x, axis=0) * 1.0]:
        for run in (fn, en.function(fn)):
            x = en.tensor(a)
            out = run(x)
            out[...] = 0.0
            np.testing.assert_array_equal(x.numpy(), a)


def test_no_kernel_returns_an_inputs_own_array():
    """Eager mode checks only results that are views (``base`` set) for memory shared with
    an input; a kernel returning an input's array itself would slip through, so every op
    of the op database is run on its samples and checked."""
    from op_db import OP_DB, call_engine
    rng = np.random.default_rng(0)
    found = []
    for info in OP_DB:
        for dtype in info.dtypes[:3]:
            for sample in list(info.sample_inputs(dtype, rng))[:6]:
                inputs = [en.tensor(a) if isinstance(a, np.ndarray) else a for a in sample.args]
                try:
                    out = info.op(*inputs, **sample.kwargs)
                except Exception:
                    continue
                outs = out if isinstance(out, (tuple, list)) else (out,)
                arrays = [getattr(t, "_value", None) for t in inputs]
                for o in outs:
                    value = getattr(o, "_value", None)
                    if value is not None and any(value is a for a in arrays if a is not None):
                        found.append(info.name)
    assert not found, f"ops whose result is an input's own array: {sorted(set(found))}"
