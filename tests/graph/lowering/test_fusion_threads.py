"""Fused kernels walked by several threads (``en.config.fusion_threads``, ``graph/lowering/parallel.py``):
the same results as numpy, and the same bits whatever the thread count."""
import signal
import threading
import time

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import parallel
from engine.graph.lowering.parallel import row_bounds, run_split
from support.paths import REPO


def _loss_and_grad(z, b, x):
    def loss(z):
        y = en.sigmoid(z + b)
        return en.mean(en.square(y - x))
    return en.value_and_grad(loss)(z)


def test_a_large_kernel_gives_numpys_answer_and_the_same_bits_on_any_thread_count(threads):
    rng = np.random.default_rng(0)
    shape = (3001, 250)   # 750,250 elements: the block loop, 4 blocks
    z, x = rng.standard_normal(shape).astype(np.float32), rng.random(shape).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    f = en.function(_loss_and_grad)
    args = [en.tensor(a) for a in (z, b, x)]
    y = 1.0 / (1.0 + np.exp(-(z.astype(np.float64) + b)))
    d = y - x
    want_loss, want_grad = np.mean(d * d), 2.0 * d / d.size * y * (1.0 - y)
    answers = []
    for n in (1, 2, 3, 4):
        threads(n)
        loss, grad = f(*args)
        np.testing.assert_allclose(float(loss), want_loss, rtol=1e-6)
        np.testing.assert_allclose(grad.numpy(), want_grad, rtol=1e-4, atol=1e-10)
        answers.append((float(loss), grad.numpy().copy()))
    for loss, grad in answers[1:]:
        assert loss == answers[0][0]
        np.testing.assert_array_equal(grad, answers[0][1])
    assert len(parallel._workers) >= 3   # four threads ran: the caller and three workers


def test_row_bounds_cover_the_rows_in_whole_blocks():
    for n, rows, threads in [(1000, 250, 2), (1000, 250, 3), (10, 3, 8), (7, 7, 2), (0, 1, 2),
                             (60000, 334, 2), (5, 1, 4)]:
        bounds = row_bounds(n, rows, threads)
        blocks = -(-n // rows)
        assert bounds[0] == 0 and bounds[-1] == n
        assert len(bounds) - 1 == max(1, min(threads, blocks))
        assert all(lo < hi for lo, hi in zip(bounds, bounds[1:])) or n == 0
        assert all(b % rows == 0 for b in bounds[:-1])
        sizes = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
        assert max(sizes) - min(sizes) <= rows   # shares differ by at most one block


def test_run_split_runs_the_parts_on_different_threads_in_order():
    seen = []

    def part(lo, hi):
        seen.append(threading.get_ident())
        return list(range(lo, hi))
    assert run_split(part, [0, 2, 5, 6]) == [[0, 1], [2, 3, 4], [5]]
    assert len(set(seen)) == 3 and threading.get_ident() in seen


def test_an_error_in_a_worker_part_is_raised_after_every_part_has_finished():
    finished = []

    def part(lo, hi):
        if lo == 4:
            raise ValueError("part 4 failed")
        finished.append(lo)

    with pytest.raises(ValueError, match="part 4 failed"):
        run_split(part, [0, 4, 8, 12])
    assert sorted(finished) == [0, 8]
    # The pool is free again afterwards.
    assert run_split(lambda lo, hi: hi - lo, [0, 1, 3]) == [1, 2]


def test_a_split_inside_a_split_runs_on_its_own_thread():
    def inner(lo, hi):
        return threading.get_ident()

    def outer(lo, hi):
        ids = run_split(inner, [lo, (lo + hi) // 2, hi])
        return ids, threading.get_ident()

    for ids, me in run_split(outer, [0, 4, 8]):
        assert ids == [me, me]   # the pool was busy: no threads of its own


def test_workers_run_in_the_callers_context(threads):
    # numpy's errstate lives in a context variable: an overflow in the worker's
    # rows must raise just as one in the caller's rows does.
    x = np.full((2000, 300), 1.0, np.float32)
    x[1500:] = 100.0            # exp overflows only in the second half of the rows
    f = en.function(lambda x: en.exp(x) * 2.0 + 1.0)
    for n in (1, 2):
        threads(n)
        with np.errstate(over="raise"):
            with pytest.raises(FloatingPointError, match="overflow"):
                f(en.tensor(x))


def _interrupt_main_thread_later(*delays):
    """Sends SIGINT to the main thread after each delay (seconds), from a timer thread."""
    def fire():
        for d in delays:
            time.sleep(d)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    timer = threading.Thread(target=fire, daemon=True)
    timer.start()
    return timer


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
def test_ctrl_c_during_a_split_is_raised_only_after_every_part_has_finished():
    # Two SIGINTs 20 ms apart: the first while the caller runs its own rows, the
    # second while it waits for the worker. The worker's rows must be written
    # when the KeyboardInterrupt arrives, and the pool must work afterwards.
    out = np.zeros(2)

    def part(lo, hi):
        if lo == 0:
            timer[0] = _interrupt_main_thread_later(0.0, 0.02)
            time.sleep(0.01)
        else:
            time.sleep(0.25)
            out[lo] = 1.0
    timer = [None]
    # The premise is Python's own Ctrl-C handler (KeyboardInterrupt), whatever an
    # earlier test or library in this process left installed.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_split(part, [0, 1, 2])
    finally:
        signal.signal(signal.SIGINT, before)
    timer[0].join()
    assert out[1] == 1.0
    assert not parallel._busy.locked()
    assert run_split(lambda lo, hi: list(range(lo, hi)), [0, 2, 5]) == [[0, 1], [2, 3, 4]]


_CTRL_C_SCRIPT = r"""
import signal, sys, threading, time
import numpy as np
import engine as en
from engine.graph.lowering import parallel

en.config.fusion_threads = 2
x = np.random.default_rng(0).standard_normal(1 << 23).astype(np.float32)
want = 3.0 / (1.0 + np.exp(-(2.0 * x.astype(np.float64) + 1.0))) - x
f = en.function(lambda x: en.sigmoid(x * 2.0 + 1.0) * 3.0 - x)
t = en.tensor(x)
f(t)

# Ctrl-C raises KeyboardInterrupt while a call of f is under way or unwinding
# ("armed"); one that lands in this script's own bookkeeping is only counted, so
# that a slow machine cannot make the script fail where the engine did nothing wrong.
state = {"armed": False, "late": 0}

def on_sigint(signum, frame):
    if state["armed"]:    # also while an earlier interrupt unwinds the call
        raise KeyboardInterrupt
    state["late"] += 1

signal.signal(signal.SIGINT, on_sigint)

def two_sigints(sent):
    for d in (0.005, 0.02):
        time.sleep(d)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    sent.set()

interrupted = 0
for trial in range(12):
    sent = threading.Event()
    timer = threading.Thread(target=two_sigints, args=(sent,))
    timer.start()
    while not sent.is_set():
        try:
            state["armed"] = True
            f(t)
            state["armed"] = False
        except KeyboardInterrupt:
            state["armed"] = False   # first: no call (so no signal handler) before it
            interrupted += 1
    state["armed"] = False
    timer.join()
    time.sleep(0.01)
    assert not parallel._busy.locked(), "the pool is still busy after the calls"
    for _ in range(3):
        got = f(t).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
print("interrupted", interrupted, "late", state["late"])
"""


def test_ctrl_c_in_a_threaded_kernel_leaves_the_pool_usable_and_the_answers_right():
    # In a child process with a timeout: a broken pool hangs in join.
    import subprocess
    import sys
    root = REPO
    done = subprocess.run([sys.executable, "-c", _CTRL_C_SCRIPT], cwd=root, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    words = done.stdout.split()
    assert int(words[words.index("interrupted") + 1]) >= 12   # each trial was, at least once
