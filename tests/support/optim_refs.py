"""numpy references of the optimizers and learning-rate schedules, written from
torch.optim's documented algorithms (the independent reference for en.optim's tests).

Example:
    >>> import numpy as np
    >>> ref_adagrad(np.array([1.0]), [np.array([2.0])], lr=0.5).round(6).tolist()
    [0.5]
"""
import math

import numpy as np


def ref_adamw(w, grads, lr, b1=0.9, b2=0.999, eps=1e-8, wd=1e-2, lrs=None):
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        a = lr if lrs is None else lrs[t - 1]
        w = w * (1 - a * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - a / (1 - b1 ** t) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return w


def ref_rmsprop(w, grads, lr, alpha=0.99, eps=1e-8, momentum=0.0, centered=False, wd=0.0):
    v, gavg, buf = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        g = g + wd * w
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            gavg = alpha * gavg + (1 - alpha) * g
            avg = np.sqrt(v - gavg * gavg) + eps
        else:
            avg = np.sqrt(v) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            w = w - lr * buf
        else:
            w = w - lr * g / avg
    return w


def ref_adagrad(w, grads, lr, lr_decay=0.0, wd=0.0, init=0.0, eps=1e-10):
    s = np.full_like(w, init)
    for t, g in enumerate(grads, start=1):
        g = g + wd * w
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        w = w - clr * g / (np.sqrt(s) + eps)
    return w


def ref_schedule(kind, t):
    if kind == "step":
        return 0.1 * 0.5 ** (t // 3)
    if kind == "exp":
        return 0.1 * 0.8 ** (t / 4)
    if kind == "exp_stair":
        return 0.1 * 0.8 ** (t // 4)
    if kind == "cosine":
        return 0.1 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 7) / 7)))
    if kind == "warmup":   # 3 warm-up steps from 0.25 * 0.1, then the step decay from its 0
        return 0.1 * (0.25 + 0.75 * t / 3) if t < 3 else ref_schedule("step", t - 3)
    raise AssertionError(kind)
