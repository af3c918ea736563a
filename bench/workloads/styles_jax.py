"""The ``styles`` models in JAX: ``jax.jit(jax.value_and_grad(loss))``, the recurrent ones
over ``lax.scan`` (``tanh_unrolled``: a Python loop inside the ``jit``). See
:mod:`bench.workloads.styles_data`. JAX has no LSTM layer, so ``lstm_module`` is the
layer's math (PyTorch's ``LSTMCell``: two products, two biases, gates i, f, g, o).
"""
import math

import numpy as np

from .styles_data import HEADS, LN_EPS, RECURRENT


def _layer_norm(jnp, a, gamma, beta):
    mu = a.mean(axis=-1, keepdims=True)
    var = ((a - mu) ** 2).mean(axis=-1, keepdims=True)
    return (a - mu) / jnp.sqrt(var + LN_EPS) * gamma + beta


def _cells(jax, jnp):
    sig = jax.nn.sigmoid

    def lstm_concat(carry, x, p):
        h, c = carry
        w, b = p
        i, f, g, o = jnp.split(jnp.concatenate([x, h], axis=1) @ w + b, 4, axis=1)
        c = sig(f) * c + sig(i) * jnp.tanh(g)
        return sig(o) * jnp.tanh(c), c

    def lstm_eight(carry, x, p):
        h, c = carry
        wi, ui, bi, wf, uf, bf, wo, uo, bo, wg, ug, bg = p
        i, f = sig(x @ wi + h @ ui + bi), sig(x @ wf + h @ uf + bf)
        o, g = sig(x @ wo + h @ uo + bo), jnp.tanh(x @ wg + h @ ug + bg)
        c = f * c + i * g
        return o * jnp.tanh(c), c

    def lstm_module(carry, x, p):
        h, c = carry
        w_ih, w_hh, b_ih, b_hh = p
        i, f, g, o = jnp.split(x @ w_ih + b_ih + h @ w_hh + b_hh, 4, axis=1)
        c = sig(f) * c + sig(i) * jnp.tanh(g)
        return sig(o) * jnp.tanh(c), c

    def gru_gates(h, x, p):
        wz, uz, bz, wr, ur, br, wh, uh, bh = p
        z, r = sig(x @ wz + h @ uz + bz), sig(x @ wr + h @ ur + br)
        c = jnp.tanh(x @ wh + (r * h) @ uh + bh)
        return (1.0 - z) * h + z * c

    def tanh_ln(h, x, p):
        w, u, b, gamma, beta = p
        return jnp.tanh(_layer_norm(jnp, x @ w + h @ u + b, gamma, beta))

    def tanh_cell(h, x, p):
        w, u, b = p
        return jnp.tanh(x @ w + h @ u + b)
    return {"lstm_concat": lstm_concat, "lstm_eight": lstm_eight, "lstm_module": lstm_module,
            "gru_gates": gru_gates, "tanh_ln": tanh_ln, "tanh_unrolled": tanh_cell}


def _recurrent_loss(jax, jnp, model):
    cell = _cells(jax, jnp)[model]

    def hidden(carry):
        return carry[0] if isinstance(carry, tuple) else carry

    def loss(p, xs, targets):
        h = jnp.zeros((xs.shape[1], 64), xs.dtype)
        carry = (h, h) if model.startswith("lstm") else h
        if model == "tanh_unrolled":
            outs = []
            for t in range(xs.shape[0]):
                carry = cell(carry, xs[t], p)
                outs.append(carry)
            hs = jnp.stack(outs)
        else:
            def body(carry, x):
                carry = cell(carry, x, p)
                return carry, hidden(carry)
            _, hs = jax.lax.scan(body, carry, xs)
        return jnp.mean((hs - targets) ** 2)
    return loss


def _cnn_loss(jax, jnp):
    def conv(a, w):
        return jax.lax.conv_general_dilated(a, w, (1, 1), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def pool(a):
        return jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                     "VALID")

    def loss(p, images, labels):
        w1, b1, w2, b2, wl, bl = p
        a = pool(jax.nn.relu(conv(images, w1) + b1))
        a = pool(jax.nn.relu(conv(a, w2) + b2))
        logp = jax.nn.log_softmax(a.reshape(a.shape[0], -1) @ wl + bl, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))
    return loss


def _transformer_loss(jax, jnp):
    def loss(p, x, target):
        g1, be1, wqkv, bqkv, wo, bo, g2, be2, w1, b1, w2, b2 = p
        batch, seq, d = x.shape
        q, k, v = jnp.split(_layer_norm(jnp, x, g1, be1) @ wqkv + bqkv, 3, axis=-1)
        heads = lambda a: a.reshape(batch, seq, HEADS, -1).transpose(0, 2, 1, 3)  # noqa: E731
        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ jnp.swapaxes(k, -1, -2) / math.sqrt(d // HEADS)
        att = jax.nn.softmax(scores, axis=-1) @ v
        x = x + att.transpose(0, 2, 1, 3).reshape(batch, seq, d) @ wo + bo
        y = x + jax.nn.gelu(_layer_norm(jnp, x, g2, be2) @ w1 + b1, approximate=False) @ w2 + b2
        return jnp.mean((y - target) ** 2)
    return loss


def make_step(model, params, inputs):
    """``() -> (loss, grads)``: the jitted value and gradient, waited for."""
    import jax
    import jax.numpy as jnp

    if model in RECURRENT:
        loss = _recurrent_loss(jax, jnp, model)
    else:
        loss = (_cnn_loss if model == "cnn" else _transformer_loss)(jax, jnp)
    fn = jax.jit(jax.value_and_grad(loss))
    p = tuple(jax.device_put(a) for a in params)
    args = [jax.device_put(a) for a in inputs]
    return lambda: jax.block_until_ready(fn(p, *args))


def to_numpy(out):
    loss, grads = out
    return np.asarray(loss), [np.asarray(g) for g in grads]
