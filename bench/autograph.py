"""What converting Python control flow costs: trace time and per-call run time, converted code
against the same model written with en.cond / en.while_loop / en.scan by hand.

Three models with data-dependent control flow, each in two spellings:

- ``newton``: a ``while`` on a tensor tolerance with an ``if`` inside (damped steps);
- ``rnn``: a ``for`` over a tensor's rows (a scan) with an early exit on the norm;
- ``branches``: an ``elif`` chain on a tensor.

Times are CPU time of this process (time.process_time), which the other
loads of a shared machine disturb less than wall time. Trace time is the time to trace and compile one signature (a fresh ``en.function``
each time; the source conversion itself is cached per function and is reported
once, separately). Run time is one call of the compiled function. Variants are
timed in interleaved rounds (each once per round, in shuffled order) so drift
in the machine's speed hits both alike; the table shows medians.

Run it as ``python -m bench.autograph`` (``--quick`` for a short run).
"""
import argparse
import os
import random
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import engine as en


# ---- the models, converted (plain Python) ------------------------------------------------
def newton_converted(a, x):
    err = en.max(en.abs(x * x - a))
    steps = en.tensor(0)
    while err > 1e-10:
        step = 0.5 * (x - a / x)
        if en.max(en.abs(step)) > 10.0:
            step = step * 0.5
        x = x - step
        err = en.max(en.abs(x * x - a))
        steps = steps + 1
    return x, steps


def rnn_converted(xs, w, u):
    h = en.zeros((w.shape[1],))
    for x in xs:
        h = en.tanh(x @ w + h @ u)
        if en.sum(h * h) > 100.0:
            break
    return h


def branches_converted(x):
    s = en.sum(x)
    if s > 10.0:
        y = en.tanh(x) * 3.0
    elif s > 0.0:
        y = x * 2.0
    else:
        y = -x
    return y


# ---- the same, by hand ---------------------------------------------------------------------------
def newton_by_hand(a, x):
    def damp(step):
        return en.cond(en.max(en.abs(step)) > 10.0, lambda s: s * 0.5, lambda s: s, step)

    def body(x, err, steps):
        step = damp(0.5 * (x - a / x))
        x = x - step
        return x, en.max(en.abs(x * x - a)), steps + 1
    x, _, steps = en.while_loop(lambda x, err, steps: err > 1e-10, body,
                                (x, en.max(en.abs(x * x - a)), en.tensor(0)))
    return x, steps


def rnn_by_hand(xs, w, u):
    def step(carry, x):
        h, stopped = carry

        def advance(h):
            h = en.tanh(x @ w + h @ u)
            return h, en.sum(h * h) > 100.0
        h, stopped = en.cond(stopped, lambda h: (h, en.tensor(True)), advance, h)
        return (h, stopped), ()
    (h, _), _ = en.scan(step, (en.zeros((w.shape[1],)), en.tensor(False)), xs)
    return h


def branches_by_hand(x):
    s = en.sum(x)
    return en.cond(s > 10.0, lambda v: en.tanh(v) * 3.0,
                   lambda v: en.cond(s > 0.0, lambda u: u * 2.0, lambda u: -u, v), x)


def _inputs(rng):
    return {
        "newton": (en.tensor(rng.uniform(1, 50, size=16)), en.tensor(np.full(16, 30.0))),
        "rnn": (en.tensor(rng.normal(size=(40, 8))), en.tensor(rng.normal(size=(8, 16)) * 0.3),
                en.tensor(rng.normal(size=(16, 16)) * 0.3)),
        "branches": (en.tensor(rng.normal(size=64)),),
    }


MODELS = {"newton": (newton_converted, newton_by_hand),
          "rnn": (rnn_converted, rnn_by_hand),
          "branches": (branches_converted, branches_by_hand)}


def _trace_seconds(fn, args, autograph):
    f = en.function(fn, autograph=autograph)
    start = time.process_time()
    f.get_concrete_function(*args)
    return time.process_time() - start


def _run_seconds(f, args, number):
    start = time.process_time()
    for _ in range(number):
        f(*args)
    return (time.process_time() - start) / number


def measure(rounds=15, number=200, seed=0):
    """``{model: {"trace_ratio", "run_ratio", "trace_ms", "run_us", "convert_ms"}}``."""
    inputs = _inputs(np.random.default_rng(seed))
    out = {}
    for name, (conv, hand) in MODELS.items():
        args = inputs[name]
        start = time.process_time()
        en.autograph.to_code(conv)          # the one-time source conversion
        convert_ms = (time.process_time() - start) * 1e3
        compiled = {"converted": en.function(conv), "by_hand": en.function(hand)}
        got = {k: f(*args) for k, f in compiled.items()}   # warm both; check they agree
        a = got["converted"] if isinstance(got["converted"], tuple) else (got["converted"],)
        b = got["by_hand"] if isinstance(got["by_hand"], tuple) else (got["by_hand"],)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-12)
        trace = {"converted": [], "by_hand": []}
        run = {"converted": [], "by_hand": []}
        for _ in range(rounds):
            order = ["converted", "by_hand"]
            random.shuffle(order)
            for k in order:
                fn = conv if k == "converted" else hand
                trace[k].append(_trace_seconds(fn, args, autograph=(k == "converted")))
            random.shuffle(order)
            for k in order:
                run[k].append(_run_seconds(compiled[k], args, number))
        med = {k: statistics.median(v) for k, v in trace.items()}
        rmed = {k: statistics.median(v) for k, v in run.items()}
        out[name] = {"trace_ms": {k: v * 1e3 for k, v in med.items()},
                     "run_us": {k: v * 1e6 for k, v in rmed.items()},
                     "trace_ratio": med["converted"] / med["by_hand"],
                     "run_ratio": rmed["converted"] / rmed["by_hand"],
                     "convert_ms": convert_ms}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    rounds, number = (5, 50) if args.quick else (21, 300)
    results = measure(rounds=rounds, number=number)
    print(f"{'model':<10} {'trace converted':>16} {'trace by hand':>14} {'ratio':>6}   "
          f"{'run converted':>14} {'run by hand':>12} {'ratio':>6}   {'conversion':>10}")
    for name, r in results.items():
        print(f"{name:<10} {r['trace_ms']['converted']:>13.2f} ms {r['trace_ms']['by_hand']:>11.2f} ms"
              f" {r['trace_ratio']:>6.2f}   {r['run_us']['converted']:>11.1f} us "
              f"{r['run_us']['by_hand']:>9.1f} us {r['run_ratio']:>6.2f}   "
              f"{r['convert_ms']:>7.2f} ms")
    return results


if __name__ == "__main__":
    main()
