"""Reverse-mode ``vjp`` and the Jacobian transforms ``jacfwd``, ``jacrev``, ``hessian``.

``jacfwd`` maps ``jvp`` over the basis of the input space with :func:`vmap`
(one batched forward pass), ``jacrev`` maps the VJP over the basis of the
output space (one batched backward pass), and ``hessian`` is ``jacfwd`` of
``jacrev`` (forward over reverse), as in JAX.
"""
import functools

from .. import dtypes, ops
from ..autodiff.tape import GradientTape
from ..conversion import user_function
from ..errors import DTypeError, EngineError, ShapeError
from ..modes import current_mode
from ..pytree import flatten, unflatten
from .batching import vmap
from .forward import jvp

_FLOATS = dtypes.FLOATS


def _lift(x):
    return current_mode().lift([x])[0]


def vjp(f, *primals, has_aux=False):
    """``(f(*primals), vjp_fn)``: ``vjp_fn(cotangent)`` is the vector-Jacobian product,
    one cotangent per primal (the structure of ``primals``). ``vjp_fn`` may be called
    many times (and mapped with ``vmap``).

    Example:
        >>> import engine as en
        >>> y, vjp_fn = en.vjp(lambda x: x * x, en.tensor(3.0))
        >>> float(vjp_fn(en.tensor(1.0))[0])
        6.0
    """
    leaves, tree = flatten(tuple(primals))
    # Each float primal is its own variable (a fresh tensor of its array), also where
    # one tensor is passed twice or captured by ``f``: partial derivatives, as in JAX.
    leaves = [ops.identity(x) if x.dtype in _FLOATS else x for x in map(_lift, leaves)]
    watched = [x for x in leaves if x.dtype in _FLOATS]
    with GradientTape(persistent=True) as tape:
        tape.watch(watched)
        result = user_function(f)(*unflatten(tree, leaves))
    out, aux = result if has_aux else (result, None)
    o_leaves, o_tree = flatten(out)
    o_leaves = [_lift(o) for o in o_leaves]

    def vjp_fn(cotangent):
        c_leaves, c_tree = flatten(cotangent)
        if c_tree != o_tree:
            raise ShapeError(f"vjp: the cotangent has structure {c_tree}, the output {o_tree}")
        for c, o in zip(c_leaves, o_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise ShapeError(f"vjp: a cotangent has shape {tuple(c.shape)} for an output "
                                 f"of shape {tuple(o.shape)}")
        # Complex outputs take complex cotangents (JAX's convention; see complex_vjp).
        pairs = [(o, _lift(c)) for o, c in zip(o_leaves, c_leaves)
                 if o.dtype in _FLOATS or o.dtype in dtypes.COMPLEX]
        grads = tape.gradient([o for o, _ in pairs], watched,
                              output_gradients=[c for _, c in pairs]) if pairs else []
        by_id = {id(x): g for x, g in zip(watched, grads)}
        res = [ops.zeros_like(x) if by_id.get(id(x)) is None else by_id[id(x)]
               for x in leaves]
        return unflatten(tree, res)
    if has_aux:
        return out, vjp_fn, aux
    return out, vjp_fn


def _argnums(name, argnums, n):
    multiple = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if multiple else (argnums,)
    for i in nums:
        if not isinstance(i, int) or not -n <= i < n:
            raise EngineError(f"{name}: argnums {argnums} out of range for {n} positional "
                              f"arguments")
    return tuple(i % n for i in nums), multiple


def _float_arg(name, x, i):
    x = _lift(x)
    if x.dtype not in _FLOATS:
        raise DTypeError(f"{name}: argument {i} must be floating-point to be differentiated, "
                         f"got dtype {x.dtype}")
    return x


def _basis(x):
    """The standard basis of ``x``'s space: shape ``(x.size,) + x.shape``."""
    n = x.size
    return ops.reshape(ops.eye(n, dtype=x.dtype), (n,) + tuple(x.shape))


def jacfwd(f, argnums=0):
    """The Jacobian of ``f`` by forward mode: ``J[out_idx + in_idx]``, shape
    ``out.shape + in.shape`` (a tuple over ``argnums`` when it is a tuple; the
    structure of ``f``'s output for several outputs).

    Example:
        >>> import engine as en
        >>> en.jacfwd(lambda x: x * x)(en.tensor([1.0, 2.0])).numpy().tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    name = f"jacfwd({getattr(f, '__name__', 'f')})"

    @functools.wraps(f)
    def jac(*args):
        nums, multiple = _argnums(name, argnums, len(args))
        values = list(args)
        for i in nums:
            values[i] = _float_arg(name, values[i], i)
        per_arg = []
        for i in nums:
            x = values[i]

            def push(t, i=i):
                tangents = [t if j == i else _zero_tangent(a) for j, a in enumerate(values)]
                return jvp(f, tuple(values), tuple(tangents))[1]
            cols = vmap(push)(_basis(x))       # (n_in,) + out.shape per output leaf
            leaves, tree = flatten(cols)
            per_arg.append((tree, [_columns_to_jacobian(c, x) for c in leaves]))
        results = [unflatten(tree, leaves) for tree, leaves in per_arg]
        return tuple(results) if multiple else results[0]
    return jac


def _zero_tangent(a):
    leaves, tree = flatten(a)
    return unflatten(tree, [ops.zeros_like(_lift(v)) for v in leaves])


def _columns_to_jacobian(cols, x):
    """``(n_in,) + out.shape`` -> ``out.shape + x.shape``."""
    out_nd = cols.ndim - 1
    moved = ops.transpose(cols, tuple(range(1, out_nd + 1)) + (0,)) if out_nd else cols
    return ops.reshape(moved, tuple(cols.shape[1:]) + tuple(x.shape))


def jacrev(f, argnums=0):
    """The Jacobian of ``f`` by reverse mode (one batched backward pass over the
    output's basis); the same layout as :func:`jacfwd`.

    Example:
        >>> import engine as en
        >>> en.jacrev(lambda x: x * x)(en.tensor([1.0, 2.0])).numpy().tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    name = f"jacrev({getattr(f, '__name__', 'f')})"

    @functools.wraps(f)
    def jac(*args):
        nums, multiple = _argnums(name, argnums, len(args))
        values = list(args)
        for i in nums:
            values[i] = _float_arg(name, values[i], i)
        fixed = {j: a for j, a in enumerate(values) if j not in nums}
        run = user_function(f)   # converted inside a converting trace

        def g(*xs):
            call = [fixed[j] if j in fixed else None for j in range(len(values))]
            for i, x in zip(nums, xs):
                call[i] = x
            return run(*call)
        out, vjp_fn = vjp(g, *[values[i] for i in nums])
        o_leaves, o_tree = flatten(out)
        # One entry per output leaf, each a tuple over argnums when argnums is one.
        per_out = [_rows_for(vjp_fn, o_leaves, o_tree, k, nums, values)
                   for k in range(len(o_leaves))]
        return unflatten(o_tree, [tuple(p) if multiple else p[0] for p in per_out])
    return jac


def _rows_for(vjp_fn, o_leaves, o_tree, k, nums, args):
    """The Jacobian of output leaf ``k`` for each differentiated argument."""
    o = _lift(o_leaves[k])

    def pull(u):
        cts = [u if j == k else ops.zeros_like(_lift(v)) for j, v in enumerate(o_leaves)]
        return vjp_fn(unflatten(o_tree, cts))
    rows = vmap(pull)(_basis(o))         # one (n_out,) + x.shape per differentiated arg
    return [ops.reshape(r, tuple(o.shape) + tuple(args[i].shape)) for r, i in zip(rows, nums)]


def hessian(f, argnums=0):
    """The Hessian of scalar ``f``: ``jacfwd(jacrev(f))`` (forward over reverse), shape
    ``in.shape + in.shape``.

    Example:
        >>> import engine as en
        >>> en.hessian(lambda x: en.sum(x ** 3.0))(en.tensor([1.0, 2.0])).numpy().tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    return jacfwd(jacrev(f, argnums), argnums)
