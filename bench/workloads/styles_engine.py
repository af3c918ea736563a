"""The ``styles`` models written with the engine (see :mod:`bench.workloads.styles_data`).

``step(model, mode, params, inputs)`` gives a function computing ``(loss, grads)``:
mode ``graph`` is one ``en.function`` of ``en.value_and_grad`` (the recurrent
models loop with ``en.scan``, ``tanh_unrolled`` with a Python loop in the trace),
mode ``eager`` runs the same Python eagerly.

Example:
    >>> from bench.workloads import styles_data
    >>> params, inputs = styles_data.make("tanh_ln", quick=True)
    >>> loss, grads = make_step("tanh_ln", "graph", params, inputs)()
    >>> len(grads), float(loss) > 0
    (5, True)
"""
import numpy as np

import engine as en

from .rnn import lstm_cell
from .styles_data import HEADS, LN_EPS


# ---- recurrent cells: (carry, x, p) -> carry; the output is carry's h -------------------------
def lstm_concat(carry, x, p):
    h, c = carry
    w, b = p
    i, f, g, o = en.split(en.concat([x, h], axis=1) @ w + b, 4, axis=1)
    c = en.sigmoid(f) * c + en.sigmoid(i) * en.tanh(g)
    return en.sigmoid(o) * en.tanh(c), c


# The LSTM with eight separate products is the rnn workload's own cell (same parameters).
lstm_eight = lstm_cell


def gru_gates(h, x, p):
    wz, uz, bz, wr, ur, br, wh, uh, bh = p
    z = en.sigmoid(x @ wz + h @ uz + bz)
    r = en.sigmoid(x @ wr + h @ ur + br)
    c = en.tanh(x @ wh + (r * h) @ uh + bh)
    return (1.0 - z) * h + z * c


def _layer_norm(a, gamma, beta):
    """Layer norm over the last axis, written out (no layer or fused op)."""
    mu = en.mean(a, axis=-1, keepdims=True)
    var = en.mean((a - mu) ** 2.0, axis=-1, keepdims=True)
    return (a - mu) / en.sqrt(var + LN_EPS) * gamma + beta


def tanh_ln(h, x, p):
    w, u, b, gamma, beta = p
    return en.tanh(_layer_norm(x @ w + h @ u + b, gamma, beta))


def tanh_cell(h, x, p):
    w, u, b = p
    return en.tanh(x @ w + h @ u + b)


_CELLS = {"lstm_concat": lstm_concat, "lstm_eight": lstm_eight, "gru_gates": gru_gates,
          "tanh_ln": tanh_ln, "tanh_unrolled": tanh_cell}
_LSTMS = ("lstm_concat", "lstm_eight", "lstm_module")


def _zeros_carry(model, xs):
    h0 = en.zeros((xs.shape[1], 64), dtype=xs.dtype)
    return (h0, en.zeros((xs.shape[1], 64), dtype=xs.dtype)) if model in _LSTMS else h0


def _recurrent_loss(model):
    cell = _CELLS[model]

    def hidden(carry):
        return carry[0] if isinstance(carry, tuple) else carry

    def loss(p, xs, targets):
        carry = _zeros_carry(model, xs)
        if model == "tanh_unrolled":
            outs = []
            for t in range(xs.shape[0]):
                carry = cell(carry, xs[t], p)
                outs.append(carry)
            hs = en.stack(outs)
        else:
            def body(carry, x):
                carry = cell(carry, x, p)
                return carry, hidden(carry)
            _, hs = en.scan(body, carry, xs)
        return en.mean((hs - targets) ** 2.0)
    return loss


def _module_loss(params):
    """The LSTM as layers: ``en.nn.RNN(en.nn.LSTMCell)``, its variables set to ``params``;
    the gradient is taken with respect to the module's variables."""
    cell = en.nn.LSTMCell(64, 64)
    for var, value in zip((cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh), params):
        var.assign(value)
    rnn = en.nn.RNN(cell, batch_first=False)
    variables = [v for _, v in rnn.named_variables()]

    def loss(xs, targets):
        with en.GradientTape() as tape:
            hs, _ = rnn(xs)
            value = en.mean((hs - targets) ** 2.0)
        return value, tape.gradient(value, variables)
    return loss


# ---- CNN and transformer block ------------------------------------------------------------
def cnn_loss(p, images, labels):
    w1, b1, w2, b2, wl, bl = p
    a = en.max_pool2d(en.relu(en.conv2d(images, w1, padding="same") + b1), 2)
    a = en.max_pool2d(en.relu(en.conv2d(a, w2, padding="same") + b2), 2)
    logits = en.reshape(a, (a.shape[0], -1)) @ wl + bl
    picked = en.take_along_axis(en.log_softmax(logits, axis=-1),
                                en.reshape(labels, (-1, 1)), axis=1)
    return -en.mean(picked)


def _heads(a, batch, seq):
    return en.transpose(en.reshape(a, (batch, seq, HEADS, -1)), (0, 2, 1, 3))


def transformer_loss(p, x, target):
    g1, be1, wqkv, bqkv, wo, bo, g2, be2, w1, b1, w2, b2 = p
    batch, seq, d = x.shape
    q, k, v = en.split(_layer_norm(x, g1, be1) @ wqkv + bqkv, 3, axis=-1)
    q, k, v = _heads(q, batch, seq), _heads(k, batch, seq), _heads(v, batch, seq)
    scores = q @ en.swapaxes(k, -1, -2) * float(1.0 / np.sqrt(d // HEADS))   # a Python float: no float64 promotion
    att = en.softmax(scores, axis=-1) @ v
    att = en.reshape(en.transpose(att, (0, 2, 1, 3)), (batch, seq, d))
    x = x + att @ wo + bo
    y = x + en.gelu(_layer_norm(x, g2, be2) @ w1 + b1) @ w2 + b2
    return en.mean((y - target) ** 2.0)


def make_step(model, mode, params, inputs):
    """``() -> (loss, grads)`` for ``model`` in ``mode`` ("graph" or "eager")."""
    args = [en.tensor(a) for a in inputs]
    if model == "lstm_module":
        fn = _module_loss(params)
        fn = en.function(fn) if mode == "graph" else fn
        return lambda: fn(*args)
    loss = {"cnn": cnn_loss, "transformer": transformer_loss}.get(model) or \
        _recurrent_loss(model)
    fn = en.value_and_grad(loss)
    fn = en.function(fn) if mode == "graph" else fn
    p = tuple(en.tensor(a) for a in params)
    return lambda: fn(p, *args)


def to_numpy(out):
    """``(loss, [grads])`` as numpy arrays."""
    loss, grads = out
    return np.asarray(loss), [np.asarray(g) for g in grads]
