"""Variable writes are all or nothing (a graph call, an optimizer step) and
read-modify-writes are atomic across threads."""
import sys
import threading

import numpy as np
import pytest

import engine as en


def _boom(t):
    raise RuntimeError("python side failed")


# ---- a graph call that fails part way writes nothing ----------------------------------
def test_graph_failing_in_py_function_leaves_earlier_assign_undone():
    a, b = en.Variable(1.0), en.Variable(2.0)

    @en.function
    def f(x):
        a.assign_add(x)
        y = en.py_function(_boom, [x], en.TensorSpec((), "float64"))
        b.assign(y)
        return y

    with pytest.raises(RuntimeError, match="python side failed"):
        f(en.tensor(5.0))
    assert float(a) == 1.0 and float(b) == 2.0


def test_graph_run_time_shape_error_after_assign_add_leaves_it_undone():
    v = en.Variable(np.zeros(3))
    count = en.Variable(0)

    @en.function(input_signature=[en.TensorSpec((None,), "float64")])
    def f(x):
        v.assign_add(en.sum(x))
        count.assign_add(1)
        return x + v.read()         # (n,) + (3,): fails at run time unless n is 1 or 3

    f(en.tensor([1.0, 2.0, 3.0]))
    assert v.numpy().tolist() == [6.0, 6.0, 6.0] and int(count) == 1
    with pytest.raises(ValueError):
        f(en.tensor([1.0, 2.0, 3.0, 4.0]))
    assert v.numpy().tolist() == [6.0, 6.0, 6.0] and int(count) == 1


def test_reads_after_a_write_in_the_call_see_it_and_the_call_commits_together():
    a = en.Variable(1.0)
    seen = []

    def look(t):
        seen.append(float(a))        # an eager read inside the graph call
        return t

    @en.function
    def f(x):
        a.assign(x)
        y = en.py_function(look, [x], en.TensorSpec((), "float64"))
        return a.read() * 10.0 + y

    assert float(f(en.tensor(3.0))) == 33.0
    assert seen == [3.0] and float(a) == 3.0


def test_failure_inside_a_loop_body_undoes_writes_of_earlier_iterations():
    v = en.Variable(0.0)

    @en.function
    def f(n):
        def body(i):
            v.assign_add(1.0)
            # the third iteration fails
            en.py_function(lambda t: _boom(t) if int(t) == 2 else t, [i],
                           en.TensorSpec((), "int64"))
            return (i + 1,)
        return en.while_loop(lambda i: i < n, body, (en.tensor(0),))

    f(en.tensor(2))
    assert float(v) == 2.0
    with pytest.raises(RuntimeError, match="python side failed"):
        f(en.tensor(5))
    assert float(v) == 2.0


def test_failed_scatter_update_call_restores_rows_written_in_place():
    cache = en.Variable(np.zeros((4, 2)))

    @en.function
    def f(i, rows):
        cache.scatter_update(i, rows)
        en.py_function(_boom, [i], en.TensorSpec((), "int64"))
        return i

    @en.function
    def g(i, rows):
        cache.scatter_update(i, rows)
        return i

    g(en.tensor(1), en.tensor([1.0, 1.0]))
    kept = cache.read()                        # an earlier read keeps its values
    with pytest.raises(RuntimeError):
        f(en.tensor(2), en.tensor([5.0, 6.0]))
    expect = [[0, 0], [1, 1], [0, 0], [0, 0]]
    assert cache.numpy().tolist() == expect and kept.numpy().tolist() == expect
    del kept
    with pytest.raises(RuntimeError):
        f(en.tensor(3), en.tensor([7.0, 8.0]))  # nothing else holds the array: in place
    assert cache.numpy().tolist() == expect


def test_an_inner_call_that_fails_and_is_caught_does_not_undo_the_outer_writes():
    a, b = en.Variable(0.0), en.Variable(0.0)
    inner = en.function(lambda x: (b.assign(x), en.py_function(_boom, [x],
                                                               en.TensorSpec((), "float64")))[1])

    def guarded(t):
        try:
            inner(t)
        except RuntimeError:
            pass
        return t

    @en.function
    def outer(x):
        a.assign(x)
        return en.py_function(guarded, [x], en.TensorSpec((), "float64"))

    outer(en.tensor(4.0))
    assert float(a) == 4.0 and float(b) == 0.0


def test_eager_all_or_nothing_block_undoes_on_error():
    from engine.transaction import all_or_nothing
    a, b = en.Variable([1.0, 2.0]), en.Variable(3.0)
    with pytest.raises(ZeroDivisionError):
        with all_or_nothing():
            a.assign([5.0, 5.0])
            b.assign_add(1.0)
            assert float(b) == 4.0
            1 / 0
    assert a.numpy().tolist() == [1.0, 2.0] and float(b) == 3.0


# ---- an optimizer step is all or nothing --------------------------------------------------
@pytest.mark.parametrize("make", [lambda: en.optim.Adam(lr=0.1),
                                  lambda: en.optim.SGD(lr=0.1, momentum=0.9)])
def test_optimizer_step_stopped_by_check_numerics_changes_nothing(make):
    w1, w2 = en.Variable([1.0, 2.0]), en.Variable([3.0])
    opt = make()
    opt.step([en.tensor([1.0, 1.0]), en.tensor([1.0])], [w1, w2])
    state = [v.numpy().copy() for v in opt.variables()] + [w1.numpy().copy(), w2.numpy().copy()]
    with en.debug.check_numerics():
        with pytest.raises(en.NumericsError):
            opt.step([en.tensor([1.0, 1.0]), en.tensor([np.nan])], [w1, w2])
    after = [v.numpy() for v in opt.variables()] + [w1.numpy(), w2.numpy()]
    assert all(np.array_equal(x, y) for x, y in zip(state, after))
    assert int(opt.iterations) == 1
    opt.step([en.tensor([1.0, 1.0]), en.tensor([1.0])], [w1, w2])    # and it goes on
    assert int(opt.iterations) == 2


# ---- read-modify-write is atomic across threads -------------------------------------------
@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)      # switch threads as often as possible
    yield
    sys.setswitchinterval(old)


def _hammer(fn, threads=8, calls=4000):
    def work():
        for _ in range(calls):
            fn()
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def test_eager_assign_add_from_threads_loses_nothing(fast_switching):
    v = en.Variable(0.0)
    _hammer(lambda: v.assign_add(1.0))
    assert float(v) == 32000.0


def test_graph_assign_add_from_threads_loses_nothing(fast_switching):
    v = en.Variable(0.0)
    f = en.function(lambda: v.assign_add(1.0).read())
    _hammer(f)
    assert float(v) == 32000.0


def test_graph_and_eager_writers_together_lose_nothing(fast_switching):
    v = en.Variable(np.zeros(2))
    f = en.function(lambda: v.assign_sub(en.ones(2)).read())
    threads = [threading.Thread(target=_hammer, args=(f, 2, 2000)),
               threading.Thread(target=_hammer, args=(lambda: v.assign_add(np.ones(2) * 2.0),
                                                      2, 2000))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert v.numpy().tolist() == [4000.0, 4000.0]
