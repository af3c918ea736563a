"""Loops that reverse mode can differentiate in a graph: a ``while_loop`` with a
static bound (``max_steps=``) and :func:`fori_loop`.

A ``while_loop`` node runs until its condition fails, so its trip count, and so
the carries a backward pass would need, are known only at run time: it has no
gradient. With a static bound ``max_steps`` the loop becomes a ``scan`` of
``max_steps`` steps whose step is ``cond(active, body, identity)``: ``active``
turns false, for good, the first time the condition fails. The scan keeps each
step's carry (its VJP needs them) and differentiates as any scan does, to any
order and under every transformation. Storing the carries was chosen over
re-running the loop from checkpoints: it is what a scan does already, its
memory is that of the same loop written as an ``en.scan`` (the bound times the
carry), and wrapping the loop in ``en.checkpoint`` trades that memory for a
second forward pass. A step past the end costs the condition and the identity
branch only. The bounded loop stops after ``max_steps`` steps in every mode,
even where the condition still holds.

Under ``vmap`` with a batched condition every example runs every step, each
frozen at its own trip count by a select (``where(active, body(v), v)``). An
example's gradient must not see the steps after its end, but the select's VJP
multiplies the body's derivatives there by zero, and a body evaluated past an
example's end can give infinities (``sqrt(v - 1)`` once ``v < 1``): zero times
infinity is NaN. So the body of a frozen example runs on the values of its last
running step (a carry ``safe``, where the body was valid), and its result is
dropped: its derivatives there are finite, and the example's gradient is that
of its own loop. (An example whose loop never runs is evaluated on its initial
values.)
"""
import operator

from engine import ops
from engine.conversion import user_function
from engine.errors import (ArgumentTypeError, InvalidArgumentError, ShapeError,
                           describe_inputs, expect_callable, format_location, user_frame)
from engine.modes import current_mode
from engine.pytree import flatten, unflatten
from engine.tensor import Tensor, tensor
from engine.transforms.batching import BatchMode, BatchTensor

from .control_flow import BOUNDED_WHILE, cond, scan, while_loop


def _static_int(who, what, value):
    """``value`` as a Python int when it is one (a numpy integer too), else None."""
    if isinstance(value, bool):
        raise ArgumentTypeError(f"{who}: {what} must be an integer, got bool {value}\n"
                                f"  at {format_location(user_frame())}")
    if isinstance(value, Tensor):   # a bound known only at run time in a graph
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _runs_now(mode):
    """Whether values exist now under ``mode`` (eager, or a transformation over eager)."""
    while getattr(mode, "transforms", False) and hasattr(mode, "parent"):
        mode = mode.parent
    return bool(mode.is_concrete)


def _as_tuple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


def _lift_each(leaves):
    # One leaf at a time: a Python int counter stays an integer, as it does eagerly.
    mode = current_mode()
    return [mode.lift([leaf])[0] for leaf in leaves]


def _under_vmap(mode):
    while mode is not None:
        if isinstance(mode, BatchMode):
            return True
        mode = getattr(mode, "parent", None)
    return False


def _batched_step(cond_fn, body, max_steps, vals):
    """The bounded loop under ``vmap``: a scan whose step runs the body on each example's
    values while its condition holds, and on the values of its last running step after
    (``safe``; see the module docstring), keeping the values it stopped at."""
    def step(carry, _):
        active, safe, vs = carry
        active = ops.logical_and(active, cond_fn(*vs))
        if not isinstance(active, BatchTensor):   # one condition for the batch
            return (active, safe, cond(active, body, lambda *a: tuple(a), *vs)), ()
        flat_vs, tree = flatten(vs)
        ins = [ops.where(active, v, s) for v, s in zip(flat_vs, flatten(safe)[0])]
        out = flatten(body(*unflatten(tree, ins)))[0]
        new = [ops.where(active, o, v) for o, v in zip(out, flat_vs)]
        return (active, unflatten(tree, ins), unflatten(tree, new)), ()
    (_, _, vals), _ = scan(step, (tensor(True), vals, vals), None, length=max_steps)
    return vals


def check_max_steps(max_steps):
    """``max_steps`` as a non-negative Python int, or an error naming ``while_loop``."""
    n = _static_int("while_loop", "max_steps", max_steps)
    if n is None:
        raise ArgumentTypeError(f"while_loop: max_steps must be a Python int (a static bound), "
                                f"got {type(max_steps).__name__}\n"
                                f"  at {format_location(user_frame())}")
    if n < 0:
        raise InvalidArgumentError(f"while_loop: max_steps must be >= 0, got {n}\n"
                                   f"  at {format_location(user_frame())}")
    return n


def bounded_while_loop(cond_fn, body_fn, loop_vars, max_steps):
    """``while_loop(cond_fn, body_fn, loop_vars, max_steps=max_steps)`` (see the module
    docstring); ``cond_fn`` and ``body_fn`` are converted already."""
    vals = tuple(loop_vars)
    mode = current_mode()
    if mode.is_concrete:
        for _ in range(max_steps):
            if not bool(cond_fn(*vals)):
                break
            vals = _as_tuple(body_fn(*vals))
        return type(loop_vars)(vals)
    if _runs_now(mode):
        # A transformation over eager values: its own while_loop with a step count in the
        # condition (vmap's stops each example at its own condition, or at the bound).
        def bounded_cond(k, *vs):
            return ops.logical_and(ops.less(k, max_steps), cond_fn(*vs))

        def bounded_body(k, *vs):
            return (ops.add(k, 1),) + _as_tuple(body_fn(*vs))
        out = while_loop(bounded_cond, bounded_body, (tensor(0),) + vals)
        return type(loop_vars)(out[1:])
    if max_steps == 0:
        return type(loop_vars)(vals)
    leaves, tree = flatten(vals)
    leaves = _lift_each(leaves)
    vals = unflatten(tree, leaves)
    avals = [(tuple(t.shape), t.dtype) for t in leaves]

    def body(*vs):
        out = _as_tuple(body_fn(*vs))
        got = [(tuple(t.shape), t.dtype) for t in _lift_each(flatten(out)[0])]
        if flatten(out)[1] != tree or got != avals:
            raise ShapeError(f"while_loop: the body must return loop variables of the same "
                             f"structure, shapes and dtypes: got {describe_inputs(got)} for "
                             f"{describe_inputs(avals)}")
        return out

    if _under_vmap(mode):
        # Also without a tape now: a scan body traced here is differentiated later.
        return type(loop_vars)(_batched_step(cond_fn, body, max_steps, vals))

    def step(carry, _):
        active, vs = carry
        active = ops.logical_and(active, cond_fn(*vs))
        return (active, cond(active, body, lambda *a: tuple(a), *vs)), ()

    (_, vals), _ = scan(step, (tensor(True), vals), None, length=max_steps)
    return type(loop_vars)(vals)


def fori_loop(lower, upper, body_fn, init_val):
    """``val = body_fn(i, val)`` for ``i`` from ``lower`` to ``upper - 1``; returns ``val``.

    JAX's ``fori_loop``. ``i`` is an int64 scalar tensor in every mode. With Python int
    bounds the loop is a ``scan`` of ``upper - lower`` steps, so reverse mode
    differentiates it in a graph; with tensor bounds in a graph it is a
    ``while_loop`` (forward mode only: for gradients give static bounds, or use
    ``while_loop(..., max_steps=)``). Eagerly it is a Python loop.

    Example:
        >>> import engine as en
        >>> float(en.fori_loop(0, 4, lambda i, v: v * 2.0 + i, en.tensor(1.0)))  # 2, 5, 12, 27
        27.0
    """
    expect_callable("fori_loop", "body_fn", body_fn)
    body_fn = user_function(body_fn)
    lo, hi = _static_int("fori_loop", "lower", lower), _static_int("fori_loop", "upper", upper)
    for what, v, n in (("lower", lower, lo), ("upper", upper, hi)):
        if n is None and not (isinstance(v, Tensor) and v.dtype.kind in "iu" and v.ndim == 0):
            raise ArgumentTypeError(
                f"fori_loop: {what} must be a Python int or an integer scalar tensor, got "
                f"{v._describe() if isinstance(v, Tensor) else type(v).__name__}\n"
                f"  at {format_location(user_frame())}")
    mode = current_mode()
    if _runs_now(mode):
        # The index lives on the loop values' back end (mixing back ends is an error).
        backend = next((t.backend for t in flatten(init_val)[0] if isinstance(t, Tensor)), None)
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fn(tensor(i, backend=backend), val)
        return val
    if lo is not None and hi is not None:
        if hi <= lo:
            return init_val

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fn(i, val)), ()
        (_, val), _ = scan(step, (tensor(lo), init_val), None, length=hi - lo)
        return val

    def body(i, val):
        return i + 1, body_fn(i, val)
    start = tensor(lo) if lo is not None else lower
    _, val = while_loop(lambda i, val: i < upper, body, (start, init_val))
    return val


BOUNDED_WHILE.append((bounded_while_loop, check_max_steps))
