"""Limited-memory BFGS, written so that one step can be traced into a graph.

The parameters are treated as one flat vector: the flattened variables laid
end to end. The history is kept per variable as blocks of that vector (``S``
and ``Y`` of shape ``(history, n_i)`` for a variable of ``n_i`` elements), so
no concatenation or splitting is needed: every inner product of flat vectors
is the sum of the per-block products, and every ``(history, n) @ (n,)``
product is one matmul per block.

Traceability. The history is a ring buffer: a new pair ``(s, y)`` is written
into slot ``slot`` with ``en.where`` (no indexing). The two-loop recursion
needs the pairs newest-to-oldest, an order that depends on ``slot``; instead
of reordering the big buffers, it works on small products of them (the Gram
matrices ``S Yᵀ`` and ``Y Yᵀ`` and the vectors ``S g`` and ``Y g``), which
are reordered with an ``(m, m)`` permutation matrix built from ``slot`` with
elementwise ops. The recursion then runs on ``(m,)`` vectors in a fixed,
unrolled order over the ``m`` history positions, with slots not yet filled
masked out (their ``rho`` is 0), and the direction is put together at the
end with two matmuls per block. There is no Python ``if`` on a tensor value.

Cost per step, with ``n`` parameters and history ``m``: about ``2 m² n``
for the Gram matrices plus ``8 m n`` for the rest, and O(m) small ops.

Reference: Nocedal and Wright, *Numerical Optimization*, 2nd ed., Alg. 7.4–7.5.
"""
import numpy as np

from .. import ops
from ..errors import EngineError
from ..tensor import Tensor, tensor
from ..variable import Variable
from .base import Optimizer, _as_grad_list, _as_var_list, as_dtype


class LBFGS(Optimizer):
    """L-BFGS with a fixed step or a backtracking (Armijo) line search.

    Args:
        lr: the step length (``line_search=None``), or the first step length
            tried by the line search.
        history: ``m``, the number of ``(s, y)`` pairs kept.
        line_search: ``None`` for a fixed step ``lr``, or ``"backtracking"``:
            try ``lr, lr/2, lr/4, ...`` (at most ``max_backtracks`` lengths)
            and take the first that satisfies the Armijo condition
            ``f(x + t d) <= f(x) + c1 * t * g·d``; if none does, the shortest
            is taken. The line search needs ``loss_fn`` to re-evaluate the
            loss: use :meth:`minimize`, or pass ``loss_fn`` and ``loss`` to
            :meth:`step`.
        c1: the Armijo constant.
        max_backtracks: how many step lengths the line search may try.
        curvature_eps: a pair is stored only when ``s·y > curvature_eps * y·y``
            (keeps the inverse Hessian estimate positive definite).

    The line search is traceable: candidates are chosen with ``en.where``.
    Eagerly it stops at the first accepted step length; while tracing, the
    ``max_backtracks`` loss evaluations are all unrolled into the graph (the
    result is the same). The very first step, with no history, is scaled by
    ``min(1, 1 / sum|g|)`` as in PyTorch's L-BFGS, so a unit step does not
    jump far on a steep start.

    Example:
        >>> import engine as en
        >>> x = en.Variable([3.0, -2.0])
        >>> opt = en.optim.LBFGS(history=5)
        >>> for _ in range(10):
        ...     _ = opt.minimize(lambda: en.sum((x - 1.0) ** 2.0), x)
        >>> x.numpy().round(6)
        array([1., 1.])
    """

    def __init__(self, lr=1.0, history=10, line_search=None, c1=1e-4, max_backtracks=10,
                 curvature_eps=1e-10, name="LBFGS"):
        if line_search not in (None, "backtracking"):
            raise ValueError(f"LBFGS: line_search must be None or 'backtracking', got {line_search!r}")
        if int(history) < 1:
            raise ValueError(f"LBFGS: history must be >= 1, got {history}")
        if int(max_backtracks) < 1:
            raise ValueError(f"LBFGS: max_backtracks must be >= 1, got {max_backtracks}")
        if lr <= 0:
            raise ValueError(f"LBFGS: lr must be > 0, got {lr}")
        super().__init__(name)
        self.lr = float(lr)
        self.history = int(history)
        self.line_search = line_search
        self.c1 = float(c1)
        self.max_backtracks = int(max_backtracks)
        self.curvature_eps = float(curvature_eps)
        self._vars = None

    # -- state ----------------------------------------------------------------
    def build(self, vars):
        """Create the history for ``vars``; an L-BFGS instance serves one variable list."""
        var_list = _as_var_list(vars, "LBFGS.build")
        if self._vars is not None:
            if len(var_list) != len(self._vars) or any(a is not b for a, b in zip(var_list, self._vars)):
                raise EngineError("LBFGS: this optimizer was built for another list of variables "
                                  f"({[v.name for v in self._vars]}); its history belongs to them. "
                                  "Make a new LBFGS for a different list")
            return self
        for v in var_list:
            if v.dtype.kind != "f":
                raise EngineError(f"LBFGS: variable {v.name!r} has dtype {v.dtype}; only "
                                  "floating-point variables can be optimized")
        self._dtype = dt = np.result_type(*[v.dtype for v in var_list])
        m = self.history
        super().build(var_list)          # per-variable blocks, via _create_state
        self._vars = var_list

        def scalar(name, value, dtype):
            return Variable(np.asarray(value, dtype=dtype), name=f"{self.name}/{name}",
                            trainable=False)
        self._gamma = scalar("gamma", 1.0, dt)           # y·s / y·y of the newest pair
        self._slot = scalar("slot", 0, np.int64)          # ring-buffer slot written next
        self._count = scalar("count", 0, np.int64)        # pairs stored (<= history)
        self.step_size = scalar("step_size", 0.0, dt)     # the step length last taken
        # Constants for the index arithmetic.
        self._ages = np.arange(m, dtype=np.int64)
        self._eye = np.eye(m, dtype=dt)
        return self

    def _create_state(self, var):
        n = int(np.prod(var.shape, dtype=np.int64))
        dt = self._dtype

        def zeros(name, shape):
            return Variable(np.zeros(shape, dtype=dt), name=f"{self.name}/{var.name}/{name}",
                            trainable=False)
        return {"s": zeros("s", (self.history, n)), "y": zeros("y", (self.history, n)),
                "prev_x": zeros("prev_x", (n,)), "prev_g": zeros("prev_g", (n,))}

    def variables(self):
        out = super().variables()
        if self._vars is not None:
            out += [self._gamma, self._slot, self._count, self.step_size]
        return out

    def reset(self):
        """Forget the history (the next step is a scaled gradient step)."""
        if self._vars is None:
            return
        for v in self.variables():
            v.assign(np.zeros(v.shape, dtype=v.dtype))
        self._gamma.assign(np.asarray(1.0, dtype=self._dtype))

    # -- stepping ---------------------------------------------------------------
    def step(self, grads, vars, loss_fn=None, loss=None):
        """One L-BFGS update from the gradient ``grads`` at the current ``vars``.

        With ``line_search="backtracking"``, ``loss_fn`` (no arguments, returns
        the loss at the variables' current values) and ``loss`` (its value at
        the current point; computed when omitted) are required.
        """
        var_list = _as_var_list(vars, "LBFGS.step")
        grad_list = _as_grad_list(grads, var_list, "LBFGS.step")
        if self.line_search and loss_fn is None:
            raise EngineError("LBFGS: line_search='backtracking' needs loss_fn to re-evaluate the "
                              "loss; use opt.minimize(loss_fn, vars) or "
                              "opt.step(grads, vars, loss_fn=loss_fn)")
        self.build(var_list)
        grad_list = [ops.zeros_like(v) if g is None else g for g, v in zip(grad_list, var_list)]
        self._update(grad_list, var_list, loss_fn, loss)
        self.iterations.assign_add(1)
        return vars

    def _minimize_step(self, loss_fn, loss, grads, var_list):
        self.step(grads, var_list, loss_fn=loss_fn, loss=loss)

    def _update(self, grads, vars, loss_fn, loss):
        dt = self._dtype
        blocks = [self._slots[id(v)][1] for v in vars]
        xs = [as_dtype(ops.reshape(v, (-1,)), dt) for v in vars]
        gs = [as_dtype(ops.reshape(g, (-1,)), dt) for g in grads]

        S, Y, count, newest = self._push_pair(blocks, xs, gs)
        direction = self._two_loop(S, Y, gs, count, newest)

        for b, x, g in zip(blocks, xs, gs):
            b["prev_x"].assign(x)
            b["prev_g"].assign(g)

        if self.line_search:
            t = self._backtrack(vars, xs, gs, direction, loss_fn, loss)
        else:
            t = tensor(np.asarray(self.lr, dtype=dt))
        self._move(vars, xs, direction, t)
        self.step_size.assign(t)

    def _push_pair(self, blocks, xs, gs):
        """Store ``s = x - prev_x``, ``y = g - prev_g`` if it has positive curvature."""
        m = self.history
        ss = [x - b["prev_x"] for b, x in zip(blocks, xs)]
        ys = [g - b["prev_g"] for b, g in zip(blocks, gs)]
        sy = _total(ops.matmul(s, y) for s, y in zip(ss, ys))
        yy = _total(ops.matmul(y, y) for y in ys)
        accept = ops.logical_and(ops.greater(self.iterations, 0),
                                 ops.greater(sy, yy * self.curvature_eps))

        slot = self._slot.read()
        row = ops.expand_dims(ops.logical_and(ops.equal(self._ages, slot), accept), 1)  # (m, 1)
        S, Y = [], []
        for b, s, y in zip(blocks, ss, ys):
            S.append(ops.where(row, ops.reshape(s, (1, -1)), b["s"]))
            Y.append(ops.where(row, ops.reshape(y, (1, -1)), b["y"]))
            b["s"].assign(S[-1])
            b["y"].assign(Y[-1])

        # accept implies y·y > 0, so the division is safe where it is used.
        self._gamma.assign(ops.where(accept, sy / ops.where(accept, yy, 1.0), self._gamma))
        after = ops.where(ops.equal(slot, m - 1), 0, slot + 1)
        slot_new = ops.where(accept, after, slot)
        count_new = ops.where(accept, ops.minimum(self._count + 1, m), self._count)
        self._slot.assign(slot_new)
        self._count.assign(count_new)
        newest = ops.where(ops.equal(slot_new, 0), m - 1, slot_new - 1)
        return S, Y, count_new, newest

    def _two_loop(self, S, Y, gs, count, newest):
        """The descent direction ``-H g`` from the stored pairs (two-loop recursion)."""
        m, dt = self.history, self._dtype
        # Gram products in slot order: SY[i, j] = s_i·y_j, YY[i, j] = y_i·y_j.
        SY = _total(ops.matmul(s, ops.transpose(y)) for s, y in zip(S, Y))
        YY = _total(ops.matmul(y, ops.transpose(y)) for y in Y)
        Sg = _total(ops.matmul(s, g) for s, g in zip(S, gs))
        Yg = _total(ops.matmul(y, g) for y, g in zip(Y, gs))

        # P[k, j] = 1 when slot j holds the pair of age k (age 0 = newest).
        idx = newest - self._ages
        idx = ops.where(ops.less(idx, 0), idx + m, idx)
        P = ops.cast(ops.equal(ops.expand_dims(idx, 1), ops.reshape(self._ages, (1, m))), dt)
        Pt = ops.transpose(P)
        SY = ops.matmul(ops.matmul(P, SY), Pt)
        YY = ops.matmul(ops.matmul(P, YY), Pt)
        Sg = ops.matmul(P, Sg)
        Yg = ops.matmul(P, Yg)
        valid = ops.cast(ops.less(self._ages, count), dt)
        sy = ops.sum(SY * self._eye, axis=1)                 # s_k·y_k by age
        rho = valid / ops.where(ops.greater(valid, 0), sy, 1.0)

        unit = [tensor(row) for row in self._eye]
        # First loop, newest to oldest: alpha_k = rho_k s_k·q, q -= alpha_k y_k,
        # with s_k·q = s_k·g - sum over newer l of alpha_l s_k·y_l.
        alpha = ops.zeros((m,), dt)
        for k in range(m):
            sq = ops.matmul(unit[k], Sg - ops.matmul(SY, alpha))
            alpha = alpha + unit[k] * (ops.matmul(unit[k], rho) * sq)
        gamma = self._gamma.read()
        # r = gamma q; second loop, oldest to newest: beta_k = rho_k y_k·r,
        # r += (alpha_k - beta_k) s_k; c collects the alpha_k - beta_k.
        base = (Yg - ops.matmul(YY, alpha)) * gamma          # y_k·(gamma q) by age
        c = ops.zeros((m,), dt)
        for k in reversed(range(m)):
            yr = ops.matmul(unit[k], base + ops.matmul(c, SY))
            beta = ops.matmul(unit[k], rho) * yr
            c = c + unit[k] * (ops.matmul(unit[k], alpha) - beta)

        # Back to slot order; r = gamma g - gamma Yᵀ alpha + Sᵀ c, direction -r.
        coef_y = ops.matmul(alpha, P) * gamma
        coef_s = ops.matmul(c, P)
        # With no history yet, scale the gradient step as PyTorch does.
        gnorm1 = _total(ops.sum(ops.abs(g)) for g in gs)
        first = ops.where(ops.equal(count, 0), 1.0 / ops.maximum(gnorm1, 1.0), 1.0)
        return [(ops.matmul(coef_y, y) - ops.matmul(coef_s, s) - g * gamma) * first
                for s, y, g in zip(S, Y, gs)]

    def _backtrack(self, vars, xs, gs, direction, loss_fn, loss):
        """Armijo backtracking; returns the chosen step length (a tensor)."""
        dt = self._dtype
        if loss is None:
            loss = loss_fn()
        f0 = as_dtype(_as_tensor(loss), dt)
        slope = _total(ops.matmul(g, d) for g, d in zip(gs, direction))    # g·d < 0
        lengths = [self.lr * 0.5 ** j for j in range(self.max_backtracks)]
        chosen = tensor(np.asarray(lengths[-1], dtype=dt))                # if none passes
        found = tensor(False)
        for t in lengths:
            self._move(vars, xs, direction, t)
            f = as_dtype(_as_tensor(loss_fn()), dt)
            ok = ops.less_equal(f, f0 + slope * (self.c1 * t))
            chosen = ops.where(ops.logical_and(ok, ops.logical_not(found)), t, chosen)
            found = ops.logical_or(found, ok)
            if _known_true(found):
                break        # eager shortcut; traced, every candidate is evaluated
        return chosen

    def _move(self, vars, xs, direction, t):
        for v, x, d in zip(vars, xs, direction):
            v.assign(as_dtype(ops.reshape(x + d * t, v.shape), v.dtype))


def _total(terms):
    terms = iter(terms)
    out = next(terms)
    for t in terms:
        out = out + t
    return out


def _as_tensor(x):
    if isinstance(x, Variable):
        return x.read()
    return x if isinstance(x, Tensor) else tensor(x)


def _known_true(t):
    """True only for a concrete tensor whose value is true (False while tracing)."""
    value = getattr(t, "_value", None)
    return value is not None and bool(value)
