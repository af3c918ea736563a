"""What ``en.config.numerics = "bitwise"`` costs against the default ("fast"), per step.

    python -m bench.bitwise_cost [--batch 1000] [--rounds 7] [--calls 10]

Training steps of the bench's workloads, each one ``en.function`` under the default
lowering ("auto"): the autoencoder's loss and gradient (``bench/workloads/autoencoder.py``)
and the recurrent cells' 50-step scans with their gradients (``bench/workloads/rnn.py``,
the ``graph`` mode's function: GRU, LSTM and tanh RNN; ``--cells`` picks them). Both settings run in this one process, alternating: each round times
``--calls`` calls under "fast", then as many under "bitwise" (each setting keeps its own
trace, made before the rounds), and the table gives the medians over the rounds, their
ratio (the target: at most 1.3), whether the bitwise step gave eager mode's bits, and
what the default ("fast") trace compiled: whole graphs or scans as native functions
(``compiled_region`` nodes; under "bitwise" only the C lowering makes them, with numpy's
own kernels: ``graph/lowering/c/c_bitwise.py``) and C or numba fused kernels.
The last column is the default setting with ``en.config.lowering = "numpy"`` (nothing
compiled), for scale: what "bitwise" costs beyond giving up compiled code.
"""
import argparse
import statistics
import time

import numpy as np

import engine as en
from bench.workloads import autoencoder, rnn


def autoencoder_step(batch):
    args = autoencoder.Problem(batch).tensors()
    step = en.value_and_grad(autoencoder.engine_loss, argnums=(0, 1, 2))
    return step, args


CELLS = {"gru": rnn.gru_cell, "lstm": rnn.lstm_cell, "tanh": rnn.tanh_cell}


def recurrent_step(cell="gru"):
    """The recurrent workload's step for ``cell`` (the GRU's by default)."""
    problem = rnn.Problem({"steps": 50, "batch": 32, "hidden": 64, "features": 64,
                           "cell": cell})
    params, xs, targets = problem.arrays()
    p = tuple(en.tensor(a) for a in params)
    h0 = en.zeros((problem.batch, problem.hidden), dtype="float32")
    if cell == "lstm":
        h0 = (h0, en.zeros((problem.batch, problem.hidden), dtype="float32"))

    def loss_and_grads(p, xs, targets, h0):
        with en.GradientTape() as tape:
            tape.watch(list(p))
            loss = rnn._scan_loss(CELLS[cell], p, xs, targets, h0)
        return loss, tape.gradient(loss, list(p))
    return loss_and_grads, (p, en.tensor(xs), en.tensor(targets), h0)


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    return [np.asarray(value.numpy())]


def _per_call(fn, args, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls


def _compiled_parts(fn, args):
    """What the current trace of ``fn`` compiled: "N native, M C/numba kernels"."""
    nodes = fn.graph_for(*args).nodes
    native = sum(n.op.name == "compiled_region" for n in nodes)
    kernels = sum(n.meta.get("backend") in ("c", "numba") for n in nodes)
    return f"{native} native, {kernels} kernels"


def measure(step, args, rounds, calls):
    """``(fast seconds, bitwise seconds, bitwise gives eager's bits, what the fast trace
    compiled, fast seconds with the numpy lowering)`` per call: medians."""
    compiled = en.function(step)
    en.config.lowering = "numpy"      # read when a trace is made: this one compiles nothing
    plain = en.function(step)
    plain(*args)
    en.config.lowering = "auto"
    times = {"fast": [], "bitwise": [], "numpy": []}
    try:
        for mode in ("fast", "bitwise"):     # the traces, and the check of the bits
            en.config.numerics = mode
            got = _flat(compiled(*args))
            if mode == "fast":
                parts = _compiled_parts(compiled, args)
            if mode == "bitwise":
                want = _flat(step(*args))
                exact = all(np.array_equal(g, w, equal_nan=True) for g, w in zip(got, want))
            _per_call(compiled, args, 2)     # warm: buffers, kernels
        for _ in range(rounds):
            for mode in times:
                fn = plain if mode == "numpy" else compiled
                en.config.numerics = "fast" if mode == "numpy" else mode
                fn(*args)      # the first call after a switch looks the trace up again
                times[mode].append(_per_call(fn, args, calls))
    finally:
        en.config.numerics = "fast"
    return (statistics.median(times["fast"]), statistics.median(times["bitwise"]), exact, parts,
            statistics.median(times["numpy"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--cells", default="gru,lstm,tanh",
                        help="the recurrent cells timed, comma-separated (gru, lstm, tanh)")
    args = parser.parse_args(argv)
    rows = [(f"autoencoder, batch {args.batch}", *autoencoder_step(args.batch))]
    for cell in filter(None, args.cells.split(",")):
        name = {"gru": "GRU", "lstm": "LSTM", "tanh": "tanh RNN"}[cell]
        rows.append((f"{name} scan, 50 steps, batch 32, hidden 64", *recurrent_step(cell)))
    print(f"{'step':42} {'fast ms':>8} {'bitwise ms':>11} {'ratio':>6} {'eager bits':>11}  "
          f"{'fast compiled':22} {'fast, numpy lowering ms':>23}")
    for name, step, step_args in rows:
        fast, exact_s, exact, parts, plain = measure(step, step_args, args.rounds, args.calls)
        print(f"{name:42} {fast * 1e3:8.2f} {exact_s * 1e3:11.2f} {exact_s / fast:6.2f} "
              f"{'yes' if exact else 'NO':>11}  {parts:22} {plain * 1e3:23.2f}")


if __name__ == "__main__":
    main()
