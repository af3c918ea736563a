"""A GRU whose cell is compiled with ``en.function`` while everything else stays eager.

The cell is the hot inner step: it runs once per time step, so it is traced
once and then runs as a compiled graph. The sequence loop, the loss, the
gradient tape and the SGD update are ordinary eager Python, easy to read and
to debug. Under the tape each cell call is recorded as one op whose gradient
is a compiled backward function.

Run it with ``python examples/rnn_cell_mixed.py``; the loss goes down.
"""
import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import engine as en

HIDDEN, FEATURES, STEPS, BATCH = 8, 3, 10, 16


def make_params(rng):
    """GRU weights as trainable variables: update gate z, reset gate r, candidate h."""
    shapes = {"W": (FEATURES, HIDDEN), "U": (HIDDEN, HIDDEN), "b": (HIDDEN,)}
    return {kind + gate: en.Variable(rng.standard_normal(shapes[kind]) * 0.3, name=kind + gate)
            for gate in "zrh" for kind in "WUb"}


def make_cell(p):
    @en.function
    def gru_cell(h, x):
        z = en.sigmoid(x @ p["Wz"] + h @ p["Uz"] + p["bz"])
        r = en.sigmoid(x @ p["Wr"] + h @ p["Ur"] + p["br"])
        candidate = en.tanh(x @ p["Wh"] + (r * h) @ p["Uh"] + p["bh"])
        return (1.0 - z) * h + z * candidate
    return gru_cell


def make_data(rng):
    """Sequences whose target is a running, decaying sum of their features."""
    xs = rng.standard_normal((STEPS, BATCH, FEATURES))
    target = np.zeros((BATCH, HIDDEN))
    mix = rng.standard_normal((FEATURES, HIDDEN)) * 0.5
    for x in xs:
        target = 0.7 * target + np.tanh(x @ mix) * 0.3
    return xs, target


def main(epochs=30, lr=0.5):
    rng = np.random.default_rng(0)
    params = make_params(rng)
    cell = make_cell(params)
    xs, target = make_data(rng)
    target = en.tensor(target)
    losses = []
    for epoch in range(epochs):
        with en.GradientTape() as tape:
            h = en.zeros((BATCH, HIDDEN))
            for x in xs:                      # the loop stays in Python
                h = cell(h, en.tensor(x))     # the cell runs as a compiled graph
            loss = en.mean((h - target) ** 2.0)
        grads = tape.gradient(loss, list(params.values()))
        for var, g in zip(params.values(), grads):
            var.assign_sub(lr * g)            # plain eager SGD
        losses.append(float(loss))
        if epoch % 5 == 0 or epoch == epochs - 1:
            print(f"epoch {epoch:3d}  loss {losses[-1]:.6f}")
    print(f"cell traced {cell.trace_count} time(s) for {epochs * STEPS} calls; "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    main()
