"""Limited-memory BFGS, written so that one step can be traced into a graph.

The parameters are treated as one flat vector: the flattened variables laid
end to end (one ``concat`` of the gradients per step when there are several
variables). The history of the last ``m`` pairs ``s = x_new - x_old`` and
``y = g_new - g_old`` is a ring buffer of slots, grouped ``k`` slots to a
chunk variable of shape ``(2k, n)`` (``s`` rows, then ``y`` rows) holding a
few MB at most. Storing a pair rewrites one chunk, never the whole history
(a variable's value is an immutable array, so rewriting an ``(m, n)`` buffer
would copy and page in all of it every step), while the products with the
history and the final sum still take one matrix product per chunk.

The direction uses the compact form of the two-loop recursion (Byrd, Nocedal
and Schnabel 1994). With ``R`` the upper triangle (oldest to newest) of
``s_i·y_j``, ``D`` its diagonal and ``gamma = s·y / y·y`` of the newest pair,
the two loops of Nocedal and Wright's Alg. 7.4 compute exactly

    alpha = R⁻¹ (S g)
    c     = R⁻ᵀ (D alpha - gamma (Y g - Y Yᵀ alpha))
    H g   = gamma g - gamma Yᵀ alpha + Sᵀ c

so a step needs the products of every stored vector with ``g`` and the new
``y`` (one pass over the history), small ``(m, m)`` algebra, and the sum
``Yᵀ a + Sᵀ c`` (a second pass): the same two passes as the loops, but
``O(1)`` ops for the small part instead of ``O(m)`` sequential ones. The
small state (``R⁻¹``, ``Y Yᵀ``, ``D``) is kept in float64 variables in slot
order and updated by one row and column per stored pair: dropping the oldest
pair from an upper-triangular ``R`` leaves the inverse of the rest as the
rest of the inverse, and appending the newest column ``[c; d]`` gives the new
inverse column ``[-R⁻¹ c / d; 1 / d]``. No reordering by age is needed,
since only matrix products with ``R⁻¹`` are taken.

Traceability. There is no Python ``if`` on a tensor value in a trace: the
pair is written into its chunk under :func:`en.cond` (a binary tree over the
slot index, so only the chosen chunk is rewritten at run time), the small
state is updated with ``where``, slots not yet filled have zero rows and
columns in ``R⁻¹`` (so they contribute nothing), and chunks with no stored
pair are skipped under ``cond``. Eagerly the slot and the number of stored
pairs are known, so the same choices are plain Python.

Conventions follow ``torch.optim.LBFGS`` (with ``line_search_fn=None``):
``s`` is the step actually taken (``t d``), ``gamma = s·y / y·y`` of the
newest stored pair, and the very first step is ``-g`` scaled by
``min(1, 1 / sum|g|) lr``. One difference: a pair is stored when
``s·y > curvature_eps * y·y`` (scale-free), where PyTorch asks ``s·y > 1e-10``.

Reference: Nocedal and Wright, *Numerical Optimization*, 2nd ed., Alg. 7.4–7.5
and §7.2 (compact representation).
"""
import math

import numpy as np

from .. import ops
from ..errors import EngineError
from ..tensor import Tensor, tensor
from ..variable import Variable
from .base import Optimizer, _as_grad_list, _as_var_list, as_dtype

_F8 = np.float64   # the small (m, m) algebra runs in float64 whatever the parameters' dtype
_CHUNK_BYTES = 8 << 20   # the most history one chunk variable holds (beyond one pair)
_CHUNK_BALANCE = 25_000  # elements copied per step that cost about as much as one chunk's ops


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
            (keeps the inverse Hessian estimate positive definite). PyTorch
            tests ``s·y > 1e-10`` instead, an absolute threshold that stops
            storing pairs near a minimum in float64; the two agree whenever
            ``y·y`` is near 1 or the curvature is far from the threshold.

    The line search is traceable: candidates are chosen with ``en.where``.
    Eagerly it stops at the first accepted step length; while tracing, the
    ``max_backtracks`` loss evaluations are all unrolled into the graph (the
    result is the same). The very first step is scaled by
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
        self._sizes = [int(np.prod(v.shape, dtype=np.int64)) for v in var_list]
        n = sum(self._sizes)
        # Pairs are stored k to a chunk variable of shape (2k, n): rows 0..k-1 hold
        # s, rows k..2k-1 hold y. Storing a pair rewrites one chunk (a few MB at
        # most), while the products and the final sum are one matmul per chunk.
        # Storing a pair costs ~k n (the chunk is rewritten) and every chunk costs a
        # few ops a step (~m / k of them): k ~ sqrt(m _CHUNK_BALANCE / n) balances the two.
        k = int(round(math.sqrt(_CHUNK_BALANCE * m / max(n, 1))))
        k = self._k = max(1, min(m, k, _CHUNK_BYTES // max(1, 2 * n * np.dtype(dt).itemsize)))
        self._nchunks = -(-m // k)
        mp = self._nchunks * k    # slot-indexed sizes; slots m..mp-1 (padding) stay empty

        def var(name, value):
            return Variable(value, name=f"{self.name}/{name}", trainable=False)
        self._chunks = [var(f"history{c}", np.zeros((2 * k, n), dtype=dt))
                        for c in range(self._nchunks)]
        self._prev_s = var("prev_s", np.zeros(n, dtype=dt))   # the step last taken, t d
        self._prev_g = var("prev_g", np.zeros(n, dtype=dt))   # the gradient it was taken from
        self._rinv = var("rinv", np.zeros((mp, mp), dtype=_F8))  # R⁻¹ in slot order (0 where unused)
        self._yy = var("yy", np.zeros((mp, mp), dtype=_F8))      # y_i·y_j in slot order
        self._sy = var("sy", np.zeros(mp, dtype=_F8))            # s_i·y_i by slot (D)
        self._gamma = var("gamma", np.asarray(1.0, dtype=_F8))  # s·y / y·y of the newest pair
        self._slot = var("slot", np.asarray(0, dtype=np.int64))    # ring-buffer slot written next
        self._count = var("count", np.asarray(0, dtype=np.int64))  # pairs stored (<= history)
        self.step_size = var("step_size", np.asarray(0.0, dtype=dt))  # the step length last taken
        self._ages = np.arange(mp, dtype=np.int64)
        self._vars = var_list
        for v in var_list:
            self._slots[id(v)] = (v, {})
        return self

    def slot(self, var, name):
        """The history ``"s"`` or ``"y"`` of ``var``, ``(history, *var.shape)`` in slot order."""
        if name not in ("s", "y") or self._vars is None or id(var) not in self._slots:
            return super().slot(var, name)
        i = [id(v) for v in self._vars].index(id(var))
        lo, k = sum(self._sizes[:i]), self._k
        part = 0 if name == "s" else k
        rows = [self._chunks[j // k].read()[part + j % k, lo:lo + self._sizes[i]]
                for j in range(self.history)]
        return ops.stack([ops.reshape(r, var.shape) for r in rows])

    def variables(self):
        out = [self.iterations]
        if self._vars is not None:
            out += self._chunks + [self._prev_s, self._prev_g, self._rinv, self._yy, self._sy,
                                   self._gamma, self._slot, self._count, self.step_size]
        return out

    def reset(self):
        """Forget the history (the next step is a scaled gradient step)."""
        if self._vars is None:
            return
        for v in self.variables():
            v.assign(np.zeros(v.shape, dtype=v.dtype))
        self._gamma.assign(np.asarray(1.0, dtype=_F8))

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
        flat = [as_dtype(ops.reshape(g, (-1,)), dt) for g in grads]
        g = flat[0] if len(flat) == 1 else ops.concat(flat)
        xs = [v.read() for v in vars]
        first = ops.equal(self.iterations, 0)

        # The new pair: s is the step taken last time, y the change of gradient.
        s = self._prev_s.read()
        y = g - self._prev_g.read()
        sy = ops.matmul(s, y)
        yy = ops.matmul(y, y)
        accept = ops.logical_and(ops.logical_not(first), ops.greater(sy, yy * self.curvature_eps))
        slot, count = self._slot.read(), self._count.read()
        self._store(s, y, slot, accept)
        count_new = ops.where(accept, ops.minimum(count + 1, self.history), count)

        Sg, Yg, Sy, Yy = self._products(g, y, count_new)        # (mp,) each, slot order
        gamma = self._update_small(Sy, Yy, sy, yy, slot, count, accept)
        self._count.assign(count_new)

        # The compact two-loop recursion (see the module docstring).
        rinv = self._rinv.read()
        alpha = ops.matmul(rinv, Sg)
        base = (Yg - ops.matmul(self._yy.read(), alpha)) * gamma
        c = ops.matmul(self._sy.read() * alpha - base, rinv)    # R⁻ᵀ (D alpha - base)
        direction = self._combine(g, ops.cast(-gamma, dt), ops.cast(alpha * gamma, dt),
                                  ops.cast(c, dt), count_new)
        # The first step, with no history, is scaled as in PyTorch.
        gnorm1 = ops.sum(ops.abs(g))
        scale = ops.where(first, 1.0 / ops.maximum(gnorm1, 1.0), 1.0)
        direction = direction * scale

        self._prev_g.assign(g)
        if self.line_search:
            t = self._backtrack(vars, xs, g, direction, loss_fn, loss)
        else:
            t = tensor(np.asarray(self.lr, dtype=dt))
        step = direction * t
        self._move(vars, xs, step)
        self._prev_s.assign(step)
        self.step_size.assign(t)

    def _store(self, s, y, slot, accept):
        """Write the pair into ring slot ``slot`` if ``accept``; rewrites one chunk."""
        m, k = self.history, self._k
        s, y = ops.reshape(s, (1, -1)), ops.reshape(y, (1, -1))

        def write(i):
            c, r = divmod(i, k)
            old = self._chunks[c].read()
            parts = [old[:r], s, old[r + 1:k + r], y, old[k + r + 1:]]
            self._chunks[c].assign(ops.concat([p for p in parts if p.shape[0]]))
            return tensor(np.int64(0))

        known_accept, known_slot = _concrete(accept), _concrete(slot)
        if known_accept is not None and known_slot is not None:
            if bool(known_accept):
                write(int(known_slot))
        else:
            def switch(lo, hi):                # a binary tree of conds over the slot index
                if hi - lo == 1:
                    return write(lo)
                mid = (lo + hi) // 2
                return _cond(ops.less(slot, mid), lambda: switch(lo, mid),
                             lambda: switch(mid, hi))

            _cond(accept, lambda: switch(0, m), lambda: tensor(np.int64(0)))
        self._slot.assign(ops.where(accept, ops.where(ops.equal(slot, m - 1), 0, slot + 1), slot))

    def _live_chunks(self, count, c):
        """Whether chunk ``c`` holds a stored pair: a Python bool when known, else a tensor."""
        known = _concrete(count)
        if known is not None:
            return int(known) > c * self._k
        return ops.greater(count, c * self._k)

    def _products(self, g, y, count):
        """``S g, Y g, S y, Y y``: four ``(mp,)`` float64 tensors in slot order.

        Chunks with no stored pair are skipped (under a ``cond`` while
        tracing) and give zeros. Two matrix-vector products per chunk are
        faster than one product with an ``(n, 2)`` matrix.
        """
        k, nc = self._k, self._nchunks
        zeros = ops.zeros((2 * k,), g.dtype)
        by_g, by_y = [], []
        for c, chunk in enumerate(self._chunks):
            live = self._live_chunks(count, c)
            if live is True:
                pg, py = ops.matmul(chunk, g), ops.matmul(chunk, y)
            elif live is False:
                pg = py = zeros
            else:
                pg, py = _cond(live, lambda chunk=chunk: (ops.matmul(chunk, g), ops.matmul(chunk, y)),
                               lambda: (zeros, zeros))
            by_g.append(pg)
            by_y.append(py)
        out = []
        for parts in (by_g, by_y):
            p = parts[0] if nc == 1 else ops.concat(parts)                 # (nc * 2k,)
            p = ops.reshape(ops.transpose(ops.reshape(p, (nc, 2, k)), (1, 0, 2)), (2, nc * k))
            p = as_dtype(p, _F8)
            out += [p[0], p[1]]
        return out[0], out[1], out[2], out[3]

    def _update_small(self, s_y, y_y, sy, yy, slot, count, accept):
        """Update ``R⁻¹``, ``Y Yᵀ``, ``D`` and gamma for the pair just stored; returns gamma.

        ``s_y[i] = s_i·y`` and ``y_y[i] = y_i·y`` with the new ``y``, read
        after the pair was stored in ``slot``.
        """
        sy, yy = as_dtype(sy, _F8), as_dtype(yy, _F8)
        e = ops.cast(ops.equal(self._ages, slot), _F8)              # the slot written
        keep = 1.0 - e
        others = ops.cast(ops.less(self._ages, count), _F8) * keep   # older pairs still kept
        d = ops.where(accept, sy, 1.0)
        keep2 = ops.outer(keep, keep)
        # R⁻¹: drop the evicted pair's row and column, append the new column.
        r0 = self._rinv.read() * keep2
        col = ops.matmul(r0, s_y * others) * (-1.0 / d) + e * (1.0 / d)
        rinv = r0 + ops.outer(col, e)
        yrow = y_y * (others + e)
        yym = self._yy.read() * keep2 + ops.outer(e, yrow) + ops.outer(yrow * keep, e)
        diag = self._sy.read() * keep + e * d
        gamma = ops.where(accept, sy / ops.where(accept, yy, 1.0), self._gamma.read())
        self._rinv.assign(ops.where(accept, rinv, self._rinv))
        self._yy.assign(ops.where(accept, yym, self._yy))
        self._sy.assign(ops.where(accept, diag, self._sy))
        self._gamma.assign(gamma)
        return gamma

    def _combine(self, g, g_coef, y_coefs, s_coefs, count):
        """``g_coef g + Yᵀ y_coefs - Sᵀ s_coefs``: one matmul per chunk holding pairs."""
        k, nc = self._k, self._nchunks
        coefs = ops.stack([-s_coefs, y_coefs])                    # (2, mp), as in a chunk
        coefs = ops.reshape(ops.transpose(ops.reshape(coefs, (2, nc, k)), (1, 0, 2)), (nc, 2 * k))
        rows = [coefs[0]] if nc == 1 else [ops.reshape(r, (-1,)) for r in ops.split(coefs, nc)]
        out = g * g_coef
        for c, (chunk, row) in enumerate(zip(self._chunks, rows)):
            live = self._live_chunks(count, c)
            if live is True:
                out = out + ops.matmul(row, chunk)
            elif live is not False:
                out = _cond(live, lambda out=out, row=row, chunk=chunk: out + ops.matmul(row, chunk),
                            lambda out=out: out)
        return out

    def _backtrack(self, vars, xs, g, direction, loss_fn, loss):
        """Armijo backtracking; returns the chosen step length (a tensor)."""
        dt = self._dtype
        if loss is None:
            loss = loss_fn()
        f0 = as_dtype(_as_tensor(loss), dt)
        slope = ops.matmul(g, direction)                                  # g·d < 0
        lengths = [self.lr * 0.5 ** j for j in range(self.max_backtracks)]
        chosen = tensor(np.asarray(lengths[-1], dtype=dt))                # if none passes
        found = tensor(False)
        for t in lengths:
            self._move(vars, xs, direction * t)
            f = as_dtype(_as_tensor(loss_fn()), dt)
            ok = ops.less_equal(f, f0 + slope * (self.c1 * t))
            chosen = ops.where(ops.logical_and(ok, ops.logical_not(found)), t, chosen)
            found = ops.logical_or(found, ok)
            if _known_true(found):
                break        # eager shortcut; traced, every candidate is evaluated
        return chosen

    def _move(self, vars, xs, step):
        """Set every variable to its value in ``xs`` plus its piece of the flat ``step``."""
        pieces = [step] if len(vars) == 1 else ops.split(step, self._sizes)
        for v, x, p in zip(vars, xs, pieces):
            v.assign(as_dtype(x + ops.reshape(p, v.shape), v.dtype))


def _as_tensor(x):
    if isinstance(x, Variable):
        return x.read()
    return x if isinstance(x, Tensor) else tensor(x)


def _cond(pred, true_fn, false_fn):
    from graph.control_flow import cond    # graph mode imports engine, not the reverse
    return cond(pred, true_fn, false_fn)


def _concrete(t):
    """The numpy value of a concrete tensor, ``None`` while tracing."""
    return getattr(t, "_value", None)


def _known_true(t):
    """True only for a concrete tensor whose value is true (False while tracing)."""
    value = _concrete(t)
    return value is not None and bool(value)
