"""Central finite differences: the independent reference for gradient tests."""
import numpy as np

import engine as en


def central_difference(f, x, eps=1e-6):
    """Gradient of the scalar numpy function ``f`` at ``x`` by central differences (float64)."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (float(f(up)) - float(f(down))) / (2 * eps)
    return g


def numeric_grad(f, args, i=0, eps=1e-6):
    """Gradient of scalar ``f(*args)`` (an engine function) w.r.t. ``args[i]``.

    Numpy arrays in ``args`` are passed as tensors; other arguments as they are.
    """
    def at(xi):
        call = [en.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        call[i] = en.tensor(xi)
        return f(*call)
    return central_difference(at, args[i], eps)
