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


def check_gradients_in_dtype(got, f, arrays, argnums, dtype):
    """``got``, the gradients of scalar ``f`` w.r.t. ``arrays[i]`` for each of ``argnums``
    computed in ``dtype``, against central differences of ``f`` at the arrays in float64
    (tolerance 2e-3 for float32, 1e-6 for float64); each has ``dtype``."""
    in64 = [np.asarray(a, dtype=np.float64) for a in arrays]
    tol = 2e-3 if np.dtype(dtype) == np.float32 else 1e-6
    for gv, i in zip(got, argnums):
        gv = np.asarray(gv)
        assert gv.dtype == dtype
        np.testing.assert_allclose(gv, numeric_grad(f, in64, i), rtol=tol, atol=tol)


def grad_checker(rng):
    """``check_grads(f, *args, order=1)``: en.grad of ``sum(f(*args) * c)`` against
    finite differences, the cotangents ``c`` drawn from ``rng``.

    Example:
        >>> import numpy as np
        >>> check_grads = grad_checker(np.random.default_rng(0))
        >>> check_grads(lambda x: en.sin(x) * x, np.array([0.5, -1.0]), order=2)
    """
    def check_grads(f, *args, order=1, rtol=1e-5, atol=1e-6):
        """Compare en.grad of ``sum(f(*args) * c)`` with finite differences.

        With ``order=2`` the first-order gradient (dotted with another random
        cotangent) is differentiated again, which exercises each VJP's own VJP.
        """
        args = [en.tensor(np.asarray(a, dtype=np.float64)) for a in args]
        out = f(*args)
        c = en.tensor(rng.standard_normal(out.shape))

        def scalar(*a):
            return en.sum(f(*a) * c)
        target = scalar
        if order == 2:
            cs = [en.tensor(rng.standard_normal(a.shape)) for a in args]

            def target(*a):
                gs = en.grad(scalar, argnums=tuple(range(len(a))))(*a)
                return sum(en.sum(g * ci) for g, ci in zip(gs, cs))
        grads = en.grad(target, argnums=tuple(range(len(args))))(*args)
        for i, g in enumerate(grads):
            num = numeric_grad(target, args, i)
            np.testing.assert_allclose(g.numpy(), num, rtol=rtol, atol=atol,
                                       err_msg=f"gradient of argument {i}")
    return check_grads
