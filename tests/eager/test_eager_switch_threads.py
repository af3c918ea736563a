"""``en.run_functions_eagerly`` is per thread: other threads keep running graphs."""
import threading

import engine as en


def _counting_function():
    calls = []
    f = en.function(lambda x: (calls.append(threading.current_thread().name), x * 2.0)[1])
    return f, calls


def test_switch_made_in_one_thread_is_not_seen_by_another():
    f, calls = _counting_function()
    x = en.tensor(1.0)
    f(x)                                   # traced: one Python call
    switch = en.run_functions_eagerly()    # made, not yet entered

    def other():
        for _ in range(5):
            assert float(f(x)) == 2.0

    t = threading.Thread(target=other, name="other")
    t.start()
    t.join(10)
    with switch:
        f(x)                               # this thread runs the body
    assert calls == ["MainThread", "MainThread"]
    assert not en.config.run_functions_eagerly


def test_interleaved_switches_in_two_threads_leave_nothing_on():
    f, calls = _counting_function()
    x = en.tensor(1.0)
    f(x)
    made_a, made_b, done_a = threading.Event(), threading.Event(), threading.Event()

    def a():
        switch = en.run_functions_eagerly()
        made_a.set()
        made_b.wait(10)
        with switch:
            f(x)
        done_a.set()

    def b():
        made_a.wait(10)
        switch = en.run_functions_eagerly()
        made_b.set()
        done_a.wait(10)
        with switch:
            f(x)

    threads = [threading.Thread(target=a, name="a"), threading.Thread(target=b, name="b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(calls) == ["MainThread", "a", "b"]
    assert not en.config.run_functions_eagerly and not en.config.run_functions_eagerly_global
    f(x)
    assert len(calls) == 3                 # the graph again


def test_plain_call_is_per_thread_and_global_switch_is_separate():
    f, calls = _counting_function()
    x = en.tensor(1.0)
    seen = []

    def worker():
        en.run_functions_eagerly(True)     # this thread only, until switched back
        f(x)
        seen.append(en.config.run_functions_eagerly)

    t = threading.Thread(target=worker, name="worker")
    t.start()
    t.join(10)
    f(x)
    f(x)
    assert calls == ["worker", "MainThread"] and seen == [True]
    en.config.run_functions_eagerly_global = True    # every thread
    try:
        t = threading.Thread(target=f, args=(x,), name="global")
        t.start()
        t.join(10)
        with en.run_functions_eagerly(False):        # a local setting overrides it
            f(x)
    finally:
        en.config.run_functions_eagerly_global = False
    assert calls == ["worker", "MainThread", "global"]
