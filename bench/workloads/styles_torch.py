"""The ``styles`` models in PyTorch eager (see :mod:`bench.workloads.styles_data`).

The same math as :mod:`bench.workloads.styles_engine`, in PyTorch's layouts: the CNN
runs NCHW (its filters and the linear layer's rows permuted once, so the loss is
the same), ``lstm_module`` is ``torch.nn.LSTMCell`` stepped in a loop.
"""
import math

import numpy as np

from .styles_data import HEADS, LN_EPS, RECURRENT


def _cells(torch):
    def lstm_concat(carry, x, p):
        h, c = carry
        w, b = p
        i, f, g, o = torch.chunk(torch.cat([x, h], dim=1) @ w + b, 4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def lstm_eight(carry, x, p):
        h, c = carry
        wi, ui, bi, wf, uf, bf, wo, uo, bo, wg, ug, bg = p
        i = torch.sigmoid(x @ wi + h @ ui + bi)
        f = torch.sigmoid(x @ wf + h @ uf + bf)
        o = torch.sigmoid(x @ wo + h @ uo + bo)
        g = torch.tanh(x @ wg + h @ ug + bg)
        c = f * c + i * g
        return o * torch.tanh(c), c

    def gru_gates(h, x, p):
        wz, uz, bz, wr, ur, br, wh, uh, bh = p
        z = torch.sigmoid(x @ wz + h @ uz + bz)
        r = torch.sigmoid(x @ wr + h @ ur + br)
        c = torch.tanh(x @ wh + (r * h) @ uh + bh)
        return (1.0 - z) * h + z * c

    def tanh_ln(h, x, p):
        w, u, b, gamma, beta = p
        return torch.tanh(_layer_norm(torch, x @ w + h @ u + b, gamma, beta))

    def tanh_cell(h, x, p):
        w, u, b = p
        return torch.tanh(x @ w + h @ u + b)
    return {"lstm_concat": lstm_concat, "lstm_eight": lstm_eight, "gru_gates": gru_gates,
            "tanh_ln": tanh_ln, "tanh_unrolled": tanh_cell}


def _layer_norm(torch, a, gamma, beta):
    mu = a.mean(dim=-1, keepdim=True)
    var = ((a - mu) ** 2).mean(dim=-1, keepdim=True)
    return (a - mu) / torch.sqrt(var + LN_EPS) * gamma + beta


def _recurrent_loss(torch, model, params):
    if model == "lstm_module":
        cell = torch.nn.LSTMCell(64, 64)
        with torch.no_grad():
            for mine, value in zip((cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh),
                                   params):
                mine.copy_(torch.from_numpy(np.ascontiguousarray(value.T)))
        weights = list(cell.parameters())

        def loss(xs, targets):
            h = c = torch.zeros((xs.shape[1], 64))
            outs = []
            for x in xs:
                h, c = cell(x, (h, c))
                outs.append(h)
            return ((torch.stack(outs) - targets) ** 2).mean()
        return loss, weights
    cell = _cells(torch)[model]
    weights = [torch.tensor(a, requires_grad=True) for a in params]

    def loss(xs, targets):
        h = torch.zeros((xs.shape[1], 64))
        carry = (h, h) if model.startswith("lstm") else h
        outs = []
        for x in xs:
            carry = cell(carry, x, weights)
            outs.append(carry[0] if isinstance(carry, tuple) else carry)
        return ((torch.stack(outs) - targets) ** 2).mean()
    return loss, weights


def _cnn_loss(torch, params):
    w1, b1, w2, b2, wl, bl = params
    F = torch.nn.functional
    oihw = lambda w: np.ascontiguousarray(w.transpose(3, 2, 0, 1))         # noqa: E731
    # The engine flattens (H, W, C); NCHW flattens (C, H, W): permute the rows once.
    wl = np.ascontiguousarray(wl.reshape(7, 7, 32, 10).transpose(2, 0, 1, 3).reshape(-1, 10))
    weights = [torch.tensor(a, requires_grad=True) for a in (oihw(w1), b1, oihw(w2), b2, wl, bl)]

    def loss(images, labels):
        k1, c1, k2, c2, lw, lb = weights
        a = F.max_pool2d(F.relu(F.conv2d(images, k1, c1, padding=1)), 2)
        a = F.max_pool2d(F.relu(F.conv2d(a, k2, c2, padding=1)), 2)
        return F.cross_entropy(a.reshape(a.shape[0], -1) @ lw + lb, labels)
    return loss, weights


def _transformer_loss(torch, params):
    weights = [torch.tensor(a, requires_grad=True) for a in params]
    F = torch.nn.functional

    def loss(x, target):
        g1, be1, wqkv, bqkv, wo, bo, g2, be2, w1, b1, w2, b2 = weights
        batch, seq, d = x.shape
        q, k, v = (_layer_norm(torch, x, g1, be1) @ wqkv + bqkv).chunk(3, dim=-1)
        heads = lambda a: a.reshape(batch, seq, HEADS, -1).transpose(1, 2)   # noqa: E731
        q, k, v = heads(q), heads(k), heads(v)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // HEADS), dim=-1) @ v
        x = x + att.transpose(1, 2).reshape(batch, seq, d) @ wo + bo
        y = x + F.gelu(_layer_norm(torch, x, g2, be2) @ w1 + b1) @ w2 + b2
        return ((y - target) ** 2).mean()
    return loss, weights


def make_step(model, params, inputs):
    """``() -> (loss, grads)`` in PyTorch eager autograd."""
    import torch

    if model in RECURRENT:
        loss, weights = _recurrent_loss(torch, model, params)
        args = [torch.from_numpy(a) for a in inputs]
    elif model == "cnn":
        loss, weights = _cnn_loss(torch, params)
        images, labels = inputs
        args = [torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))),
                torch.from_numpy(labels)]
    else:
        loss, weights = _transformer_loss(torch, params)
        args = [torch.from_numpy(a) for a in inputs]

    def step():
        value = loss(*args)
        return value, torch.autograd.grad(value, weights)
    return step


def to_numpy(out):
    loss, grads = out
    return loss.detach().numpy(), [g.detach().numpy() for g in grads]


def engine_layout(model, grads):
    """The gradients in the engine's layouts (``styles_data``'s), to compare them."""
    if model == "lstm_module":
        return [g.T if g.ndim == 2 else g for g in grads]
    if model == "cnn":
        k1, c1, k2, c2, lw, lb = grads
        hwio = lambda k: k.transpose(2, 3, 1, 0)                            # noqa: E731
        lw = lw.reshape(32, 7, 7, 10).transpose(1, 2, 0, 3).reshape(-1, 10)
        return [hwio(k1), c1, hwio(k2), c2, lw, lb]
    return grads
