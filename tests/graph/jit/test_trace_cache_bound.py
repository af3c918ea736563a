"""The trace cache of ``en.function`` is bounded (least recently used dropped first,
``max_cached_traces`` / ``en.config.max_cached_traces``), and a dropped trace, or a
deleted ``en.function``, frees its graphs by reference counting alone: these tests
run with the cycle collector off."""
import contextlib
import gc
import warnings
import weakref

import numpy as np
import pytest

import engine as en


@contextlib.contextmanager
def _no_cycle_collector():
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _x(n):
    return en.tensor(np.arange(n, dtype=np.float32))


def _body(x):
    return en.tanh(x * 2.0) + 1.0


def _want(n):
    return np.tanh(np.arange(n, dtype=np.float32) * 2.0) + 1.0


def test_the_least_recently_used_trace_is_dropped_and_traced_again_when_called():
    f = en.function(_body, max_cached_traces=3)
    for n in (1, 2, 3):
        f(_x(n))
    f(_x(1))                     # 1 is now the most recent: 2 is the oldest
    assert f.trace_count == 3
    f(_x(4))                     # drops 2
    assert f.trace_count == 4
    for n in (1, 3, 4):
        np.testing.assert_allclose(f(_x(n)).numpy(), _want(n), rtol=1e-6)
    assert f.trace_count == 4    # kept: no retrace
    np.testing.assert_allclose(f(_x(2)).numpy(), _want(2), rtol=1e-6)
    assert f.trace_count == 5    # dropped: traced again
    assert len(f._cache) == 3 and len(f._fast) == 3


def test_a_repeated_signature_stays_cached_and_the_last_entry_never_runs_a_dropped_trace():
    f = en.function(_body, max_cached_traces=2)
    for _ in range(5):
        f(_x(7))
    f(_x(8))
    f(_x(9))                     # drops 7, the signature called last three calls ago
    assert f.trace_count == 3
    np.testing.assert_allclose(f(_x(7)).numpy(), _want(7), rtol=1e-6)
    assert f.trace_count == 4


def test_500_shapes_keep_only_the_configured_number_of_traces_and_free_the_rest():
    before = en.config.max_cached_traces
    en.config.max_cached_traces = 4
    try:
        f = en.function(_body, max_traces=1000)
        refs = []
        with _no_cycle_collector():
            for n in range(1, 501):
                np.testing.assert_allclose(f(_x(n)).numpy(), _want(n), rtol=1e-6)
                c = f.get_concrete_function(_x(n))
                refs.append((weakref.ref(c), weakref.ref(c.graph)))
                del c
            alive = [n for n, (c, g) in enumerate(refs, 1) if c() is not None or g() is not None]
        assert alive == [497, 498, 499, 500]
        assert len(f._cache) == 4 and len(f._fast) == 4
    finally:
        en.config.max_cached_traces = before


def test_a_trace_held_by_the_caller_still_runs_after_it_is_dropped():
    f = en.function(_body, max_cached_traces=1)
    c = f.get_concrete_function(_x(3))
    f(_x(4))
    assert len(f._cache) == 1
    np.testing.assert_allclose(c([_x(3)]).numpy(), _want(3), rtol=1e-6)


def test_the_retrace_warning_still_comes_once_past_max_traces():
    f = en.function(_body, max_traces=3, max_cached_traces=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (1, 2, 3):
            f(_x(n))
    with pytest.warns(UserWarning, match="input_signature"):
        f(_x(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(_x(1))                 # dropped, traced again (seen before: within budget)
    # The fourth signature ran eagerly (past the budget); the dropped one traced again.
    assert f.trace_count == 4
    np.testing.assert_allclose(f(_x(4)).numpy(), _want(4), rtol=1e-6)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "8"])
def test_a_bad_cache_bound_is_refused(bad):
    with pytest.raises(en.EngineError, match="max_cached_traces"):
        en.function(_body, max_cached_traces=bad)


def test_deleting_a_function_frees_its_graphs_without_the_cycle_collector():
    v = en.Variable(np.ones(3, np.float32))

    def body(x):
        y = en.cond(en.sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
        z = en.scan(lambda c, xi: (c * 1.5 + xi, c), y, en.ones((3, 3), dtype="float32"))[0]
        v.assign_add(z)
        return en.sum(en.tanh(z) * v)

    x = en.tensor(np.array([0.5, 1.0, 2.0], np.float32))
    with _no_cycle_collector():
        f = en.function(body)
        f(x)
        with en.GradientTape() as tape:   # builds the forward and backward graphs too
            tape.watch(x)
            out = f(x)
        tape.gradient(out, x)
        del tape, out
        c = f.get_concrete_function(x)
        refs = [weakref.ref(o) for o in (c, c.graph, c.unoptimized_graph, c.compiled)]
        del c
        assert all(r() is not None for r in refs)
        del f
        assert [r() for r in refs] == [None] * len(refs)


def test_the_cycle_collector_is_paused_while_a_trace_compiles_and_restored_after():
    # Full collections during a big compile walk every live object each time:
    # compiling 20,000 ops cost 1.5x per op what 2,000 did. Checked structurally.
    from engine.graph.jit import concrete
    seen = []
    passes = concrete._optimize

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return passes(*args, **kwargs)
    concrete._optimize = spy
    try:
        assert gc.isenabled()
        f = en.function(_body)
        f(_x(3))
        assert seen == [False] and gc.isenabled()
        with pytest.raises(ValueError):
            en.function(_body, passes=["no_such_pass"])(_x(4))
        assert gc.isenabled()
    finally:
        concrete._optimize = passes


def test_a_function_whose_calls_save_their_residuals_is_freed_without_the_collector():
    w = en.Variable(np.full((3, 3), 0.5, np.float32))

    def body(x):
        return en.sum(en.tanh(en.matmul(x, w)) * x)

    x = en.tensor(np.ones((2, 3), np.float32))
    with _no_cycle_collector():
        f = en.function(body)
        for _ in range(5):   # the third backward splits the graph, later calls save for it
            with en.GradientTape() as tape:
                tape.watch(x)
                out = f(x)
            tape.gradient(out, [x, w])
            del tape, out
        c = f.get_concrete_function(x)
        assert c._saving, "the later calls ran the split backward"
        refs = [weakref.ref(o) for o in (c, c.graph, c.compiled, c._saving,
                                         c._saving.cotangent, c._saving.forward[0])]
        del c
        assert all(r() is not None for r in refs)
        del f
        assert [r() for r in refs] == [None] * len(refs)
