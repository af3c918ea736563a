"""A sequence model whose loop and branches are ordinary Python, compiled once by ``en.function``.

The whole forward pass is one ``en.function``: the ``for`` over the rows of the
input (time steps) becomes an ``en.scan``, the ``if`` that skips padding steps
becomes an ``en.cond``, both differentiable. Sequences of any length run through
the same graph (the time axis is ``None`` in the input signature), so the model
is traced once. A second function, the evaluation metric, has a ``while`` on a
tensor condition (how many steps until the prediction settles), a
``while_loop`` in the graph.

Run it with ``python examples/data_dependent_loop.py``; the loss goes down and
each function reports one trace.
"""
import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import engine as en

FEATURES, HIDDEN, BATCH = 3, 8, 16


def make_params(rng):
    return {"W": en.Variable(rng.standard_normal((FEATURES, HIDDEN)) * 0.3, name="W"),
            "U": en.Variable(rng.standard_normal((HIDDEN, HIDDEN)) * 0.3, name="U"),
            "V": en.Variable(rng.standard_normal((HIDDEN, 1)) * 0.3, name="V")}


def make_model(p):
    @en.function(input_signature=[en.TensorSpec((None, BATCH, FEATURES), "float64"),
                                  en.TensorSpec((BATCH, 1), "float64")])
    def loss(xs, target):
        h = en.zeros((BATCH, HIDDEN))
        for x in xs:                         # a scan over the time steps
            if en.sum(en.abs(x)) > 0.0:      # padding steps (all zeros) leave h alone
                h = en.tanh(x @ p["W"] + h @ p["U"])
        return en.mean((h @ p["V"] - target) ** 2.0)

    @en.function
    def settle_steps(h0, tol):
        """How many iterations of h = tanh(h @ U) until it moves less than tol."""
        h, steps = h0, 0
        delta = en.max(en.abs(en.tanh(h @ p["U"]) - h))
        while delta > tol and steps < 1000:
            new = en.tanh(h @ p["U"])
            delta = en.max(en.abs(new - h))
            h, steps = new, steps + 1
        return steps

    return loss, settle_steps


def make_batch(rng, length, pad):
    xs = rng.standard_normal((length, BATCH, FEATURES))
    xs[length - pad:] = 0.0                  # trailing padding
    target = np.tanh(xs.sum(axis=(0, 2)))[:, None] * 0.5
    return en.tensor(xs), en.tensor(target)


def main(epochs=30, lr=0.2, seed=0):
    rng = np.random.default_rng(seed)
    p = make_params(rng)
    loss, settle_steps = make_model(p)
    variables = list(p.values())
    batches = [make_batch(rng, length, pad) for length, pad in [(5, 0), (9, 3), (12, 4)]]
    history = []
    for epoch in range(epochs):
        total = 0.0
        for xs, target in batches:
            with en.GradientTape() as tape:
                value = loss(xs, target)
            grads = tape.gradient(value, variables)
            for v, g in zip(variables, grads):
                v.assign_sub(lr * g)
            total += float(value)
        history.append(total / len(batches))
    steps = int(settle_steps(en.tensor(rng.standard_normal((BATCH, HIDDEN))), 1e-6))
    print(f"loss {history[0]:.4f} -> {history[-1]:.4f} over {epochs} epochs "
          f"(sequences of length 5, 9 and 12)")
    print(f"the hidden map settles in {steps} steps")
    print(f"traces: loss {loss.trace_count}, settle_steps {settle_steps.trace_count}")
    return history, loss.trace_count, settle_steps.trace_count


if __name__ == "__main__":
    main()
