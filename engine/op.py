"""The op registry: one :class:`Op` object per primitive.

An op holds everything every mode needs to know about it:

* ``impl(*arrays, **params)`` -- the numpy kernel (eager mode and compiled graphs),
* ``generic`` -- the kernel written once against an array namespace: the name
  of a namespace function (``"add"``) or ``f(backend, *arrays, **params)``;
  ``overrides`` maps a back-end name to its own kernel, and ``kernels`` is the
  table resolved from both when a back end is registered (``engine.backend``),
* ``abstract_eval(*avals, **params)`` -- shape and dtype rule; an aval is a
  ``(shape, dtype)`` pair, shapes may hold ``None`` for unknown dims; raises
  :class:`ShapeError` / :class:`DTypeError` on bad input,
* ``vjp(g, out, *inputs, **params)`` -- the backward rule written in engine
  ops, returning one cotangent (or ``None``) per input,
* flags read by passes and modes (elementwise, reduction, commutative, ...),
* optionally ``out_impl(*arrays, out=buf, **params)``, the kernel writing into a
  preallocated buffer (used by fusion and memory planning),
* ``rules``: what one consumer (an exporter, a pass, a back end) needs to know
  about the op, one entry per kind of :data:`RULE_KINDS`, declared with
  :func:`declare` in the op's own module, beside its definition. Rules are
  data (or a callable taking what it works on as arguments), so the core never
  imports the consumers that read them.

Modes and passes never switch on op names; they read these fields.

Example:
    >>> from engine.op import REGISTRY
    >>> REGISTRY["add"].commutative
    True
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from .contracts import AbstractEval, GenericKernel, Kernel, Params, Rules, Vjp
from .errors import ArgumentTypeError, EngineError

if TYPE_CHECKING:
    from typing_extensions import Unpack

REGISTRY: dict[str, Op] = {}


class Op:
    """One primitive operation. See the module docstring for the fields."""

    __slots__ = (
        "name", "impl", "abstract_eval", "vjp", "elementwise", "reduction",
        "commutative", "side_effects", "differentiable", "multiple_results",
        "random", "n_inputs", "dtypes", "doc", "out_impl", "vjp_needs",
        "generic", "overrides", "kernels", "rules",
    )
    name: str
    impl: Kernel | None
    abstract_eval: AbstractEval | None
    vjp: Vjp | None
    elementwise: bool
    reduction: bool
    commutative: bool
    side_effects: bool
    differentiable: bool
    multiple_results: bool
    random: bool
    n_inputs: int | None
    dtypes: Any
    doc: str
    out_impl: Kernel | None
    vjp_needs: bool
    generic: GenericKernel | None
    overrides: dict[str, Kernel]
    kernels: dict[str, Kernel]
    rules: Rules

    def __init__(self, name: str, impl: Kernel | None, abstract_eval: AbstractEval | None,
                 vjp: Vjp | None = None, *, elementwise: bool = False,
                 reduction: bool = False, commutative: bool = False, side_effects: bool = False,
                 differentiable: bool = True, multiple_results: bool = False,
                 random: bool = False, n_inputs: int | None = None, dtypes: Any = None,
                 doc: str = "", out_impl: Kernel | None = None, vjp_needs: bool = False,
                 generic: GenericKernel | None = None,
                 overrides: dict[str, Kernel] | None = None) -> None:
        self.name = name
        self.impl = impl
        self.abstract_eval = abstract_eval
        self.vjp = vjp
        self.elementwise = elementwise
        self.reduction = reduction
        self.commutative = commutative
        self.side_effects = side_effects
        self.differentiable = differentiable and vjp is not None
        self.multiple_results = multiple_results
        self.random = random
        self.n_inputs = n_inputs  # None: variadic
        self.dtypes = dtypes      # dtypes the op accepts, for the op database
        self.doc = doc
        # out_impl(*arrays, out=buffer, **params) writes the result into a given
        # array. Its presence also promises that impl returns a fresh array (never
        # a view of an input), which memory planning relies on.
        self.out_impl = out_impl
        # vjp_needs: the vjp takes ``needs=(bool per input)`` and returns None
        # for inputs that need no gradient, skipping their work (like PyTorch's
        # ctx.needs_input_grad). Called without it, every gradient is computed.
        self.vjp_needs = vjp_needs
        self.generic = generic
        self.overrides = dict(overrides or {})
        self.kernels = {}   # back-end name -> kernel, filled by engine.backend
        self.rules = {}           # kind -> rule; see RULE_KINDS and declare()

    def node_side_effects(self, params: Params) -> bool:
        """Whether a node of this op with ``params`` changes state or talks to the
        outside world (then it is never removed, merged, folded or reordered).
        Computed once per node, when the node is added to a graph."""
        if self.side_effects:
            return True
        rule = self.rules.get("side_effects_of")
        return rule is not None and bool(rule(params))

    def params_error(self, n_inputs: int, params: Params) -> ArgumentTypeError | None:
        """The error for ``params`` the op does not take (``en.exp(x, out=y)``, a misspelt
        keyword), naming the op and the keywords it does take; None when they fit, so a
        TypeError raised inside the shape rule itself is never mistaken for the user's.
        Called only after the shape rule raised a plain TypeError (no cost otherwise)."""
        if self.abstract_eval is None:
            return None
        try:
            signature = inspect.signature(self.abstract_eval)
        except (TypeError, ValueError):           # a rule without a signature to read
            return None
        try:
            signature.bind(*range(n_inputs), **params)
        except TypeError as err:
            taken = [p.name for p in signature.parameters.values()
                     if p.kind is inspect.Parameter.KEYWORD_ONLY]
            return ArgumentTypeError(
                f"{self.name}: {str(err).replace('missing a required', 'missing the')}; "
                f"op {self.name!r} takes {n_inputs} array argument(s) and "
                + (f"the keywords {', '.join(taken)}" if taken else "no keywords")
                + ("" if "out" not in params or "out" in taken else
                   f" (numpy's out=: write out[...] = en.{self.name}(...), or call numpy's "
                   f"function on the tensors, which takes out=)"))
        return None

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def __reduce__(self) -> tuple[Callable[[str], Op], tuple[str]]:
        # Ops are singletons: pickling (e.g. for multiprocessing) refers by name.
        return (lookup, (self.name,))


# What each kind of rule is; the consumer that reads it is named first.
RULE_KINDS: dict[str, str] = {
    "onnx": "ONNX export (graph/export/onnx_export.py): ``(pattern, *args)``, a pattern of "
            "``onnx_export.PATTERNS`` and its arguments, e.g. ``(\"node\", \"Exp\")``; "
            "None: the op has no ONNX equivalent (the exporter names it in its error)",
    "scalar_form": "numba fusion (graph/lowering/numba/): the op on "
                   "scalars, a format string over its inputs ``{0}, {1}, ...`` (converted to "
                   "the op's loop dtype first), where ONE, ZERO and HALF stand for 1, 0 and 0.5 "
                   "of that dtype, ``np`` is numpy, ``math`` the math module, and numba_math's "
                   "helpers (``floor_divide_``, ...) are in scope; or ``f(input_avals, "
                   "out_dtype) -> str or None`` choosing one by the types (None: not compiled)",
    "numba_form": "compiled lowering (graph/lowering/numba/numba_source.py): a pattern of "
                  "``numba_source.PATTERNS`` that writes the op in a numba function (non-"
                  "elementwise ops; elementwise ones use their scalar_form)",
    "python_form": "numpy lowering (graph/lowering/codegen.py): ``f(input_avals, params) -> str or "
                   "None``, the node as a Python expression over its inputs ``{0}, {1}, ...``, "
                   "written in place of the kernel call where the call is most of the cost (a "
                   "basic index of a static shape: 0.15 us against 0.9); None: the kernel call",
    "static_kernel": "numpy lowering (graph/lowering/codegen.py): ``f(input_avals, out_aval, params, "
                     "into_buffer) -> callable or None``, a kernel chosen once from the node's "
                     "static shapes and dtypes, called in place of ``impl`` (with "
                     "``into_buffer``: of ``out_impl``, writing into a planned C-contiguous "
                     "buffer of ``out_aval``) where the generic kernel's tests each call are "
                     "much of its cost (np.dot for a small 2-D product: 0.5-1 us of 3); None: "
                     "the generic kernel",
    "shape_only": "constant folding: True when the result depends only on the inputs' shapes "
                  "and dtypes, so the node folds once those shapes are static",
    "fold_cost": "constant folding's budget (graph/passes/fold_cost.py): a pattern of "
                 "``fold_cost.PATTERNS`` for an op whose work grows faster than its inputs "
                 "and result (a matrix product, im2col); others cost their elements",
    "positional_out": "fusion: True when ``out_impl`` takes the output array as its last "
                      "positional argument (generated code then skips keyword parsing)",
    "side_effects_of": "graph nodes: ``f(params) -> bool``, whether a node with these params "
                       "has side effects although the op itself has none (control flow: "
                       "one of its bodies has some); see Op.node_side_effects",
    "may_overwrite": "memory planning, for a kernel with several results: ``{result index: "
                     "[input positions]}``, the inputs whose buffer that result may take "
                     "over when they die at the kernel (it reads them only before writing "
                     "the result); set by fusion on the kernels it makes",
    "chunks": "chunked data (graph/chunked): ``f(axes, in_avals, out_aval, params)`` -> "
              "``engine.chunk_rules.rows(...)``/``reduce(...)``, or None when the op needs every "
              "row of the data at once; see engine/chunk_rules.py (elementwise ops need none)",
    "load_check": "graph loading (graph/export/load.py): ``f(in_avals, params, declared, where)``, "
                  "checks a loaded node's structure before ``abstract_eval`` runs and raises "
                  "LoadError naming ``where``",
    "absent_cotangents": "reverse mode (engine/autodiff/tape.py): True for an op of several "
                         "results whose VJP takes None for a result no gradient reached "
                         "(and does no work for it), where other ops get zeros",
    "unread_stacks": "scan stacks (graph/passes/scan_unread.py): True for a loop op that can "
                     "leave out the per-step stacks of carries and replayed values (random "
                     "draws) nothing reads (its ``unread`` param: carry ``k`` is ``k``, replayed "
                     "value ``k`` is ``n_carry + k``)",
    "bodies": "control flow's traced bodies (graph/passes/body_cleanup.py): the names of the "
              "params holding them (SubGraphs), which the cleanup passes optimize inside",
    "dead_results": "unread loop results (graph/passes/scan_dead_results.py, "
                    "while_dead_vars.py): the layout of the loop's results, ``\"scan\"`` "
                    "(carries, per-step results, stacks of carries and replayed values) or "
                    "``\"while_loop\"`` (loop variables), whose unread ones those passes remove",
    "summed_results": "scan sums (graph/passes/scan_sums.py): True for a loop op whose per-step "
                      "results it can add up over the steps itself (its ``summed`` param, the "
                      "results' indices) instead of stacking them",
    "jvp": "forward mode (engine/transforms/forward.py): ``f(primals, tangents, out, **params)"
           " -> tangent of out`` (a tuple for several results), written in engine ops; a "
           "tangent is None where it is zero. Ops without one use the double-VJP fallback",
    "complex_vjp": "autodiff (engine/recording.py, engine/autodiff/tape.py): True when the op's "
                   "``vjp`` (and forward rule) hold for complex values with JAX's convention (a "
                   "cotangent pairs with a tangent as ``Re(g * dz)``: holomorphic ops multiply by "
                   "their derivative, unconjugated). Gradients flow through complex values only "
                   "along such ops; any other op that a complex value with a gradient reaches "
                   "raises NotDifferentiableError naming it",
    "batch": "vmap (engine/transforms/batching.py): ``f(size, args, dims, **params) -> (out, "
             "dim)``: the op on ``args`` whose axis ``dims[i]`` (None: unbatched) is the batch "
             "axis of size ``size``; ``dim`` is the result's batch axis (tuples for several "
             "results), or NotImplemented to run this call by the fallback. Ops without one "
             "(and not elementwise or a reduction) run once per batch element and are stacked",
}


def declare(op: Op, **rules: Unpack[Rules]) -> Op:
    """Declare ``op``'s rules (keyword: a kind of :data:`RULE_KINDS`); returns ``op``.

    Example:
        >>> from engine.op import REGISTRY
        >>> REGISTRY["exp"].rules["onnx"]
        ('node', 'Exp')
    """
    for kind, rule in rules.items():
        if kind not in RULE_KINDS:
            raise EngineError(f"{op.name}: unknown rule kind {kind!r}; known: "
                              f"{', '.join(RULE_KINDS)}")
        op.rules[kind] = rule  # type: ignore[literal-required]  # (a kind checked above)
    return op


_ON_REGISTER: list[Callable[[Op], object]] = []


def on_register(hook: Callable[[Op], object]) -> Callable[[Op], object]:
    """Call ``hook(op)`` for every op registered from now on (the back ends resolve
    their kernel tables this way, without this module importing them)."""
    _ON_REGISTER.append(hook)
    return hook


def register(op: Op) -> Op:
    """Add ``op`` to the registry; names are unique."""
    if op.name in REGISTRY:
        raise EngineError(f"op {op.name!r} is already registered")
    REGISTRY[op.name] = op
    for hook in _ON_REGISTER:
        hook(op)
    return op


def lookup(name: str) -> Op:
    """Find a registered op by name (used by graph loading; never imports anything)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise EngineError(f"unknown op {name!r}") from None


def freeze(value: Any) -> Hashable:
    """Make a params value hashable (lists -> tuples, dicts -> sorted tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    return value


def freeze_params(params: Params) -> tuple[tuple[str, Hashable], ...]:
    """Hashable key for a params dict."""
    if not params:
        return ()
    return tuple(sorted((k, freeze(v)) for k, v in params.items()))
