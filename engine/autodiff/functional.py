"""Functional gradients: :func:`grad` and :func:`value_and_grad`, nestable to any order."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import dtypes, ops
from ..conversion import user_function
from ..errors import EngineError, NotDifferentiableError, expect_callable
from ..pytree import flatten, unflatten
from ..tensor import Tensor, tensor
from ..variable import Variable
from .tape import GradientTape


def _is_value(x):
    return isinstance(x, (Tensor, Variable))


def _as_source(x, i, name):
    if isinstance(x, Variable):
        return x
    t = x if isinstance(x, Tensor) else tensor(x)
    if t.dtype not in dtypes.FLOATS:
        raise NotDifferentiableError(
            f"{name}: argument {i} must be real floating-point to be differentiated, "
            f"got dtype {t.dtype}")
    # A fresh tensor of the same array is the variable: the partial derivative, also
    # where the caller's tensor is another argument too or captured by ``f``
    # (``grad(lambda a: sum(a * x))(x)`` is ``x``, as in JAX, not ``2 x``).
    return ops.identity(t)


def value_and_grad(f: Callable[..., Any], argnums: int | tuple[int, ...] | list[int] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """Make a function returning ``(f(*args), df/dargs[argnums])``.

    ``f`` must return a scalar (or ``(scalar, aux)`` with ``has_aux=True``;
    then the result is ``((value, aux), grads)``). ``argnums`` is an int or a
    tuple of ints. An argument may be a tuple, list or dict of tensors; its gradient
    has the same structure. Arguments that do not affect the value get zero gradients.
    Works to any order: ``en.grad(en.grad(f))``.

    Example:
        >>> import engine as en
        >>> value, g = en.value_and_grad(lambda x: x ** 3.0)(2.0)
        >>> float(value), float(g)
        (8.0, 12.0)
    """
    expect_callable("value_and_grad", "f", f)
    multiple = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)
    name = getattr(f, "__name__", "f")

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        for i in nums:
            if not -len(args) <= i < len(args):
                raise EngineError(f"value_and_grad({name}): argnums {argnums} out of range "
                                  f"for {len(args)} positional arguments")
        call_args = list(args)
        sources: list[Tensor | Variable] = []
        trees = []
        for i in nums:
            # An argument may be a tuple/list/dict of tensors (the parameters of a model).
            leaves, tree = flatten(call_args[i], is_leaf=_is_value)
            leaves = [_as_source(x, i, f"grad({name})") for x in leaves]
            call_args[i] = unflatten(tree, leaves)
            trees.append((tree, len(sources), len(leaves)))
            sources += leaves
        with GradientTape() as tape:
            tape.watch(sources)
            result = user_function(f)(*call_args, **kwargs)
        value, aux = result if has_aux else (result, None)
        if not isinstance(value, Tensor):
            value = tensor(value)
        if value.shape != ():
            raise EngineError(f"grad({name}): the function must return a scalar, got shape "
                              f"{value.shape}; sum it, or use GradientTape for non-scalar targets")
        grads = tape.gradient(value, sources)
        grads = [ops.zeros_like(s.read() if isinstance(s, Variable) else s) if g is None else g
                 for s, g in zip(sources, grads)]
        per_arg = [unflatten(tree, grads[at:at + n]) for tree, at, n in trees]
        g = tuple(per_arg) if multiple else per_arg[0]
        return ((value, aux) if has_aux else value), g
    return wrapped


def grad(f: Callable[..., Any], argnums: int | tuple[int, ...] | list[int] = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """Make a function returning the gradient of scalar ``f`` w.r.t. ``args[argnums]``.

    Example:
        >>> import engine as en
        >>> d2 = en.grad(en.grad(en.sin))
        >>> round(float(d2(0.5)), 6) == round(-float(en.sin(0.5)), 6)
        True
    """
    expect_callable("grad", "f", f)
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapped
