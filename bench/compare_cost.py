"""What ``en.debug.compare`` costs on a training step, against one eager step.

    python -m bench.compare_cost [--batch 1000] [--repeats 5]

Two steps of the bench's workloads: the autoencoder's loss and gradient
(``bench/workloads/autoencoder.py``) and the GRU's 50-step scan with its gradient
(``bench/workloads/rnn.py``, the ``graph`` mode's function). For each: the median of an
eager step, of a comparison of that step (its trace, provenance and VJP-rule checks made
once, by the first comparison, as ``validate=N`` reuses them), their ratio (the target:
at most 5) and the first comparison's time.
"""
import argparse
import statistics
import time

import engine as en
from bench.workloads import autoencoder, rnn


def _median(fn, repeats):
    fn()      # warm: traces, caches, compiled kernels
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def autoencoder_step(batch):
    problem = autoencoder.Problem(batch)
    args = problem.tensors()
    step = en.value_and_grad(autoencoder.engine_loss, argnums=(0, 1, 2))
    compiled = en.function(step)
    return (lambda: step(*args)), (lambda: en.debug.compare(compiled, *args))


def gru_step():
    problem = rnn.Problem({"steps": 50, "batch": 32, "hidden": 64, "features": 64})
    eager, _ = rnn.make_mode("eager", problem)
    params, xs, targets = problem.arrays()
    p = tuple(en.tensor(a) for a in params)
    targets, xs = en.tensor(targets), en.tensor(xs)
    h0 = en.zeros((problem.batch, problem.hidden), dtype="float32")

    def loss_and_grads(p, xs, targets, h0):
        with en.GradientTape() as tape:
            tape.watch(list(p))
            loss = rnn._scan_loss(rnn.gru_cell, p, xs, targets, h0)
        return loss, tape.gradient(loss, list(p))
    compiled = en.function(loss_and_grads)
    return eager, (lambda: en.debug.compare(compiled, p, xs, targets, h0))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows = [(f"autoencoder, batch {args.batch}", *autoencoder_step(args.batch)),
            ("GRU scan, 50 steps, batch 32, hidden 64", *gru_step())]
    print(f"{'step':42} {'eager ms':>9} {'compare ms':>11} {'ratio':>6} {'first ms':>9}")
    for name, eager, compare in rows:
        start = time.perf_counter()
        report = compare()       # traces, optimizes with provenance, checks the VJP rules
        first = time.perf_counter() - start
        assert report.ok, str(report)
        e, c = _median(eager, args.repeats), _median(compare, args.repeats)
        print(f"{name:42} {e * 1e3:9.1f} {c * 1e3:11.1f} {c / e:6.2f} {first * 1e3:9.0f}")


if __name__ == "__main__":
    main()
