"""The typed contracts of an op: avals, kernels and the signature of each rule kind.

An :class:`engine.op.Op` holds kernels and rules that every mode and consumer
calls the same way; the types here say how (``engine/op.py``'s ``RULE_KINDS``
says what each rule means and who reads it). They are for readers and the type
checker (``python .ci/typecheck.py``); nothing here runs on the hot path.

:class:`Rules` is the ``op.rules`` table: one optional key per rule kind, with
the type its consumer expects (``tests/project/test_contracts.py`` checks that it
names the same kinds as ``RULE_KINDS`` and that every registered op's rules fit).

Example:
    >>> from engine.op import REGISTRY
    >>> rules: Rules = REGISTRY["exp"].rules
    >>> rules["onnx"], rules["scalar_form"]
    (('node', 'Exp'), 'np.exp({0})')
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypedDict, Union

import numpy as np

#: A shape: one size per axis; ``None`` for a size known only at run time (in a trace).
Shape = tuple[Union[int, None], ...]
#: An abstract value: what a shape rule sees of an input, ``(shape, dtype)``.
Aval = tuple[Shape, np.dtype]
#: A shape as the public functions take it: a size, or a sequence of sizes.
ShapeLike = Union[int, Sequence[int]]
#: A dtype as the public functions take it: an engine dtype (``en.float32``), a numpy
#: dtype or scalar type, or its name (``"float32"``).
DTypeLike = Any
#: An op's keyword parameters, as ``apply(op, *inputs, **params)`` passes them.
Params = dict[str, Any]

#: A kernel, ``impl(*arrays, **params) -> array`` (a tuple of arrays for an op of
#: several results); ``out_impl(*arrays, out=buffer, **params)`` writes into ``out``.
Kernel = Callable[..., Any]
#: An op's public function, ``f(*inputs, **params)`` (``en.add``): ``apply`` for one op.
OpFunction = Callable[..., Any]
#: A kernel written once against an array namespace: the name of a namespace function
#: (``"add"``) or ``f(backend, *arrays, **params)``.
GenericKernel = Union[str, Callable[..., Any]]


# The rules below are functions with the op's own parameter names (``vjp(g, out, x, *,
# axis)``), so their types say what is passed positionally and returned; a Protocol with
# ``**params: Any`` would reject every concrete rule.

#: The shape and dtype rule: ``abstract_eval(*avals, **params)`` -> the result's aval (one
#: per result for an op of several); raises ShapeError / DTypeError on bad input.
AbstractEval = Callable[..., Any]
#: The backward rule, in engine ops: ``vjp(g, out, *inputs, **params)`` -> one cotangent
#: (or None) per input; with ``op.vjp_needs``, also ``needs=`` (a bool per input).
Vjp = Callable[..., Sequence[Any]]
#: The ``jvp`` rule: ``f(primals, tangents, out, **params)`` -> the tangent of ``out`` (a
#: tuple for several results); a tangent is None where it is zero.
Jvp = Callable[..., Any]
#: The ``batch`` rule (vmap): ``f(size, args, dims, **params)`` -> ``(out, dim)``, or
#: NotImplemented to run the call by the fallback.
BatchRule = Callable[..., Any]


#: ``scalar_form``: a format string over the inputs, or ``f(input_avals, out_dtype)``;
#: None: not compiled.
ScalarForm = Union[str, Callable[[Sequence[Aval], np.dtype], Union[str, None]], None]
#: ``python_form``: ``f(input_avals, params)`` -> a Python expression, or None.
PythonForm = Callable[[Sequence[Aval], Params], Union[str, None]]
#: ``static_kernel``: ``f(input_avals, out_aval, params, into_buffer)`` -> a kernel, or None.
StaticKernel = Callable[[Sequence[Aval], Aval, Params, bool], Union[Kernel, None]]
#: ``chunks``: ``f(axes, in_avals, out_aval, params)`` -> a chunk rule, or None.
ChunkRule = Callable[..., Any]
#: ``load_check``: ``f(in_avals, params, declared, where)``; raises LoadError.
LoadCheck = Callable[..., None]


class Rules(TypedDict, total=False):
    """``op.rules``: what each consumer needs to know about the op (see ``RULE_KINDS``)."""

    onnx: Union[tuple[Any, ...], None]
    scalar_form: ScalarForm
    numba_form: str
    python_form: PythonForm
    static_kernel: StaticKernel
    shape_only: bool
    fold_cost: str
    positional_out: bool
    side_effects_of: Callable[[Params], bool]
    may_overwrite: dict[int, list[int]]
    chunks: ChunkRule
    load_check: LoadCheck
    absent_cotangents: bool
    unread_stacks: bool
    bodies: tuple[str, ...]
    dead_results: str
    summed_results: bool
    jvp: Jvp
    complex_vjp: bool
    batch: BatchRule
