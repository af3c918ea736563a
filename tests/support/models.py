"""Small traced models with float32 variables (an MLP, an autoencoder, a GRU cell), built
from a seeded generator, for the save/load and ONNX export tests; and the LSTM written as
one product of ``concat([x, h])`` split into four gates, a tanh RNN with its gradients
by hand, and a tanh RNN with a direction in its weights (forward mode, HVPs), which the
scan passes' tests run.

Example:
    >>> import numpy as np
    >>> mlp, (x,) = make_mlp(np.random.default_rng(0))
    >>> mlp(x).shape
    (5, 3)
"""
import numpy as np

import engine as en


def f32_input(rng, *shape):
    """A float32 tensor of standard normal values."""
    return en.tensor(rng.standard_normal(shape).astype("float32"))


def seeded_variable(rng, name, *shape, scale=0.3):
    """A float32 variable of normal values with standard deviation ``scale``."""
    return en.Variable((rng.standard_normal(shape) * scale).astype("float32"), name=name)


def make_mlp(rng):
    w1, b1 = seeded_variable(rng, "w1", 6, 16), seeded_variable(rng, "b1", 16)
    w2, b2 = seeded_variable(rng, "w2", 16, 3), seeded_variable(rng, "b2", 3)

    @en.function
    def mlp(x):
        return en.relu(x @ w1 + b1) @ w2 + b2
    return mlp, (f32_input(rng, 5, 6),)


def make_autoencoder(rng):
    enc = [seeded_variable(rng, "enc_w0", 12, 8), seeded_variable(rng, "enc_b0", 8), seeded_variable(rng, "enc_w1", 8, 3),
           seeded_variable(rng, "enc_b1", 3)]
    dec = [seeded_variable(rng, "dec_w0", 3, 8), seeded_variable(rng, "dec_b0", 8), seeded_variable(rng, "dec_w1", 8, 12),
           seeded_variable(rng, "dec_b1", 12)]

    @en.function
    def autoencoder(x):
        h = en.tanh(x @ enc[0] + enc[1])
        code = h @ enc[2] + enc[3]
        h = en.relu(code @ dec[0] + dec[1])
        recon = en.sigmoid(h @ dec[2] + dec[3])
        return recon, en.mean(en.square(recon - x))
    return autoencoder, (en.tensor(rng.uniform(size=(4, 12)).astype("float32")),)


def make_gru_cell(rng, hidden=8, features=3):
    shapes = {"W": (features, hidden), "U": (hidden, hidden), "b": (hidden,)}
    p = {k + g: seeded_variable(rng, k + g, *shapes[k]) for g in "zrh" for k in "WUb"}

    @en.function
    def gru_cell(h, x):
        z = en.sigmoid(x @ p["Wz"] + h @ p["Uz"] + p["bz"])
        r = en.sigmoid(x @ p["Wr"] + h @ p["Ur"] + p["br"])
        candidate = en.tanh(x @ p["Wh"] + (r * h) @ p["Uh"] + p["bh"])
        return (1.0 - z) * h + z * candidate
    return gru_cell, (f32_input(rng, 4, hidden), f32_input(rng, 4, features))


def concat_lstm_states(w, b, xs):
    """Each step's ``h`` of an LSTM over ``xs`` (steps, batch, inputs) written as one
    product ``concat([x, h]) @ w + b`` split into its four gates, from zero states."""
    def step(carry, x):
        h, c = carry
        i, f, g, o = en.split(en.concat([x, h], axis=1) @ w + b, 4, axis=1)
        c = en.sigmoid(f) * c + en.sigmoid(i) * en.tanh(g)
        h = en.sigmoid(o) * en.tanh(c)
        return (h, c), h
    zeros = en.zeros((xs.shape[1], w.shape[1] // 4), dtype=xs.dtype)
    return en.scan(step, (zeros, zeros), xs)[1]


def concat_lstm_loss(wt, bias, xs):
    """The sum of squares of :func:`concat_lstm_states`: a scalar loss to differentiate."""
    hs = concat_lstm_states(wt, bias, xs)
    return en.sum(hs * hs)


def numpy_concat_lstm_loss(wt, bias, xs):
    """:func:`concat_lstm_loss` in numpy (float64 loops): the reference for its gradients
    by finite differences."""
    def sig(z):
        return 1.0 / (1.0 + np.exp(-z))
    h = c = np.zeros((xs.shape[1], wt.shape[1] // 4))
    total = 0.0
    for x in xs:
        i, f, g, o = np.split(np.concatenate([x, h], axis=1) @ wt + bias, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        total += np.sum(h * h)
    return total


def tanh_rnn_loss(w, u, b, xs):
    """A tanh RNN over ``xs`` (steps, batch, inputs) from a zero state: the mean of its
    states squared."""
    h0 = en.zeros((xs.shape[1], u.shape[0]), dtype=xs.dtype)
    _, hs = en.scan(lambda h, x: (en.tanh(x @ w + h @ u + b),) * 2, h0, xs)
    return en.mean(hs ** 2.0)


def numpy_tanh_rnn_grads(w, u, b, xs):
    """The gradients of :func:`tanh_rnn_loss` in ``w``, ``u`` and ``b`` by
    backpropagation through time written out in float64 numpy: the reference."""
    w, u, b, xs = (a.astype(np.float64) for a in (w, u, b, xs))
    h = np.zeros((xs.shape[1], u.shape[0]))
    hs, prev = [], []
    for x in xs:
        prev.append(h)
        h = np.tanh(x @ w + h @ u + b)
        hs.append(h)
    n = len(hs) * hs[0].size
    dw, du, db, dh = np.zeros_like(w), np.zeros_like(u), np.zeros_like(b), np.zeros_like(h)
    for t in reversed(range(len(hs))):
        dz = (dh + 2.0 * hs[t] / n) * (1.0 - hs[t] ** 2)
        dw += xs[t].T @ dz
        du += prev[t].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ u.T
    return dw, du, db


def rnn_direction_problem(dtype, seed=0, steps=6, batch=3, hidden=4, inputs=3, w_scale=0.5):
    """``([W, U, b, xs], [tW, tU, tb])``: a tanh RNN's weights, inputs (steps, batch,
    inputs) and a random direction in the weights, as numpy arrays of ``dtype``."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((hidden, hidden)) * w_scale
    u = rng.standard_normal((inputs, hidden)) * 0.5
    b = rng.standard_normal(hidden) * 0.1
    xs = rng.standard_normal((steps, batch, inputs))
    direction = [rng.standard_normal(a.shape) for a in (w, u, b)]
    return [a.astype(dtype) for a in (w, u, b, xs)], [a.astype(dtype) for a in direction]


def mean_square_rnn_loss(w, u, b, xs):
    """``h <- tanh(h @ W + x @ U + b)`` over ``xs`` from zeros: the mean over steps and
    examples of ``sum(h * h)`` (the transforms bench's RNN)."""
    def step(h, x):
        h = en.tanh(h @ w + x @ u + b)
        return h, en.sum(h * h)
    _, ys = en.scan(step, en.zeros((xs.shape[1], w.shape[0]), dtype=xs.dtype), xs)
    return en.sum(ys) / (xs.shape[0] * xs.shape[1])
