"""The statement writer of the numba lowering: names, buffers, loop nests, and elementwise ops.

An :class:`Emitter` writes one plain-Python function line by line: arrays and
scalars it holds (:class:`_Value`), buffers allocated once per call, loop nests
with literal bounds, and elementwise ops through their ``scalar_form`` rules,
inlined into their single user's loop where they can be. Ops of other kinds are
written by the pattern their ``numba_form`` rule names, from the table of
patterns the emitter is given (``numba_source.PATTERNS``).
"""
import ast
import functools

import numpy as np

from engine import scalar_forms
from engine.numerics import bitwise

from ...ir.graph import Node
from ...ir.graph_ops import constant_op, placeholder_op, unpack_op
# The dtype rule both compiled lowerings follow, and the refusal every lowering raises
# (the plug-in interface's), re-exported here for the numba writers.
from ..loop_nest import loop_dtype
from ..plugin import Unsupported

# numba's float32 np.exp / np.tanh are scalar libm calls; numba_math has vectorizable ones.
_FAST_FLOAT32 = (("np.exp(", "exp32("), ("np.tanh(", "tanh32("))
# What the generated sources import for the scalar forms (numba_math imports numba, so
# it is imported by generated code only).
HELPERS_IMPORT = ("from engine.graph.lowering.numba.numba_math import exp32, tanh32, floor_divide_, "
                  "remainder_, left_shift_, right_shift_, neg_\n")
# The longest expression an elementwise value is inlined as into its user's: each op
# inlined wraps its input's text in a new string, so an unbounded chain of n ops costs
# n * n characters to write (an unrolled chain of 16,000 elementwise ops: 28 s of
# tracing). Past it the value is stored in a buffer and its user reads the buffer, so
# writing a graph costs time linear in its ops.
MAX_INLINED_CHARS = 2000
_DTYPES = {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                 "uint32", "uint64", "float32", "float64")}


@functools.lru_cache(maxsize=None)
def _np_type(dtype):
    # Cached: asked several times for each node written, and np.dtype(...).name is slow.
    name = np.dtype(dtype).name
    return "np.bool_" if name == "bool" else f"np.{name}"


def _literal(value, dtype):
    value = np.asarray(value).item()
    if isinstance(value, float) and not np.isfinite(value):
        text = "np.nan" if value != value else ("np.inf" if value > 0 else "-np.inf")
    else:
        text = repr(value)
    return f"{_np_type(dtype)}({text})"


def check_writable(node):
    """Raises :class:`Unsupported` unless ``node`` has static dims and a dtype numba takes."""
    if node.shape is None or any(d is None for d in node.shape):
        raise Unsupported(f"{node.name}: unknown dims")
    if np.dtype(node.dtype) not in _DTYPES:
        raise Unsupported(f"{node.name}: dtype {node.dtype}")


class _Value:
    """How the emitted code holds a node's value: an array name, a scalar name (0-d
    values are scalars inside the function), or an expression over the loop indices
    (an elementwise value computed in its single user's loop)."""

    __slots__ = ("kind", "text", "shape", "dtype")

    def __init__(self, kind, text, shape, dtype):
        self.kind, self.text, self.shape, self.dtype = kind, text, tuple(shape), dtype


class Emitter:
    """Writes the statements of one function; ``values`` maps nodes to :class:`_Value`."""

    def __init__(self, patterns):
        self.patterns = patterns   # numba_form rule -> writer(emitter, node, depth)
        self.lines = []
        self.values = {}
        self._names = 0
        self.users = {}
        self.outputs = set()
        # Inside a time loop: (index in ``lines`` of the loop's header, its depth). Buffers
        # are allocated there, once per call, and reused by every step.
        self.preheader = None
        self.owned = set()      # buffers allocated for the current loop body's values
        self.keep = set()       # body nodes a later scan reads: never inlined
        self.reuse = {}         # later scan node -> {its body node: earlier body node}
        self.stashes = {}       # earlier body node -> name of the (steps, ...) array of its values
        self.targets = {}       # body node -> "S[t]": its value is written straight there
        self.contiguous = set() # names of C-contiguous arrays (inputs, buffers): reshapable
        self.written = set()    # nodes written straight into their targets
        self.largest_product = 0   # most multiply-adds of one np.dot call

    def fresh(self, prefix="v"):
        self._names += 1
        return f"{prefix}{self._names}"

    def line(self, text, depth=1):
        self.lines.append("    " * depth + text)

    def alloc(self, shape, dtype, depth, prefix="v"):
        """A new buffer's name; inside a time loop it is allocated before the loop (once a
        call, not once a step: every value of a step is dead by the next one)."""
        name = self.fresh(prefix)
        self.contiguous.add(name)
        text = f"{name} = np.empty({tuple(shape)!r}, {_np_type(dtype)})"
        if self.preheader is None:
            self.line(text, depth)
        else:
            index, d = self.preheader
            self.lines.insert(index, "    " * d + text)
            self.preheader = (index + 1, d)
            self.owned.add(name)
        return name

    def buffer(self, node, depth):
        """Where ``node``'s array is written: its target (a step of a stacked array) or a
        new buffer."""
        target = self.targets.get(node)
        if target is None:
            return self.alloc(node.shape, node.dtype, depth)
        name = self.fresh()
        self.line(f"{name} = {target}", depth)
        self.written.add(node)
        self.owned.add(name)   # a step of an array of ours: no carry's buffer
        return name

    def loop_nest(self, shape, depth):
        """Writes ``for i0 ...: for i1 ...:`` over ``shape``; returns ``(index, inner depth)``."""
        for k, d in enumerate(shape):
            self.line(f"for i{k} in range({d}):", depth + k)
        return ", ".join(f"i{k}" for k in range(len(shape))), depth + len(shape)

    def copy(self, dst, src, shape, depth, op="="):
        """``dst[...] op src[...]`` as a loop nest (``dst`` may carry a leading index,
        ``"y3[t4, "``-style, given as ``("y3", "t4")``); numba's slice assignment checks
        for overlap and may copy through a temporary, a loop does not."""
        base, lead = dst if isinstance(dst, tuple) else (dst, None)
        if not shape:
            target = f"{base}[{lead}]" if lead else f"{base}[()]"
            self.line(f"{target} {op} {src}", depth)
            return
        index, inner = self.loop_nest(shape, depth)
        target = f"{base}[{lead}, {index}]" if lead else f"{base}[{index}]"
        self.line(f"{target} {op} {src}[{index}]", inner)

    # -- reading values ------------------------------------------------------------
    def array(self, node, depth):
        """The name of ``node``'s value as an array (0-d scalars wrapped)."""
        v = self.values[node]
        if v.kind == "array":
            return v.text
        if v.kind == "scalar":
            name = self.fresh("w")
            self.line(f"{name} = np.empty((), {_np_type(v.dtype)})", depth)
            self.line(f"{name}[()] = {v.text}", depth)
            return name
        raise Unsupported("an inlined expression read as an array")

    def scalar_or_array(self, node):
        v = self.values[node]
        if v.kind == "expr":
            raise Unsupported("an inlined expression read by a pattern")
        return v

    def element(self, node, out_rank):
        """``node``'s element at the loop indices of a rank-``out_rank`` loop nest."""
        v = self.values[node]
        if v.kind in ("scalar", "expr"):
            return v.text
        rank = len(v.shape)
        if rank == 0:
            return f"{v.text}[()]"
        idx = ["0" if d == 1 else f"i{out_rank - rank + j}" for j, d in enumerate(v.shape)]
        return f"{v.text}[{', '.join(idx)}]"

    # -- nodes ---------------------------------------------------------------------
    def emit_nodes(self, order, outputs, depth):
        self.outputs = outputs
        for node in order:
            if node in self.values:
                continue
            self.emit_node(node, outputs, depth)

    def emit_node(self, node, outputs, depth):
        op = node.op
        if op is placeholder_op:
            raise Unsupported("a placeholder that is not an input")
        if op is unpack_op:
            results = self.values[node.inputs[0]]
            self.values[node] = results[node.params["index"]]
            return
        if op is constant_op:
            check_writable(node)
            value = np.asarray(node.params["value"])
            if value.ndim:
                raise Unsupported("array constants are inputs")
            self.values[node] = _Value("scalar", _literal(value, node.dtype), (), node.dtype)
            return
        if op.multiple_results and op.rules.get("numba_form") is None:
            raise Unsupported(f"{op.name}")
        if not op.multiple_results:
            check_writable(node)
        for i in node.inputs:
            if i not in self.values:
                raise Unsupported(f"{node.name}: input {i.name} outside the region")
        form = op.rules.get("scalar_form") if op.elementwise else None
        if form is not None:
            self._elementwise(node, form, outputs, depth)
            return
        pattern = op.rules.get("numba_form")
        if pattern is None or pattern not in self.patterns:
            raise Unsupported(f"op {op.name} has no numba form")
        self.patterns[pattern](self, node, depth)

    def _elementwise(self, node, form, outputs, depth):
        rank = len(node.shape)
        expr = scalar_expression(node, [f"({self.element(i, rank)})" for i in node.inputs])
        users = self.users.get(node, [])
        if node not in outputs and node not in self.keep and len(users) == 1 and \
                len(expr) <= MAX_INLINED_CHARS and _inlinable_user(users[0], node):
            self.values[node] = _Value("expr", expr, node.shape, node.dtype)
            return
        if rank == 0:
            name = self.fresh()
            self.line(f"{name} = {expr}", depth)
            self.values[node] = _Value("scalar", name, (), node.dtype)
            return
        name = self.buffer(node, depth)
        index, inner = self.loop_nest(node.shape, depth)
        self.line(f"{name}[{index}] = {expr}", inner)
        self.values[node] = _Value("array", name, node.shape, node.dtype)


def scalar_form_text(op, in_avals, out_dtype, params=None):
    """The op's ``scalar_form`` for inputs ``in_avals`` (``(shape, dtype)`` pairs) and the
    node's ``params`` as a format string over its inputs, with ONE, ZERO and HALF written
    in its loop dtype and the float32 ``exp``/``tanh`` in their vectorizable forms; None
    where the op has no form for these inputs (a callable rule may decline)."""
    form = scalar_forms.resolve(op, in_avals, out_dtype, params)
    if form is None:
        return None
    dt = loop_dtype(op, [d for _, d in in_avals], out_dtype)
    if dt.kind == "f" and "-" in form and bitwise():
        form = _unfoldable_minus(form, len(in_avals))
    for word, value in (("ONE", 1), ("ZERO", 0), ("HALF", 0.5)):
        if word in form:
            form = form.replace(word, _literal(value, dt))
    if dt == np.float32:
        for slow, fast in _FAST_FLOAT32:
            form = form.replace(slow, fast)
    return form


class _Minus(ast.NodeTransformer):
    """``-e`` (``e`` not a literal) as ``neg_(e)``: a sign flip LLVM cannot fold."""

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
            return ast.Call(func=ast.Name(id="neg_", ctx=ast.Load()), args=[node.operand],
                            keywords=[])
        return node


def _unfoldable_minus(form, n_inputs):
    """The format string ``form`` with each negation written as ``neg_`` (numba_math):
    under "bitwise", numpy's ``negative`` flips a NaN's sign, and LLVM moves a float
    negation into a product or sum where the NaN's sign is lost."""
    names = [f"_a{k}_" for k in range(n_inputs)]
    try:
        tree = ast.parse(form.format(*names), mode="eval")
    except (SyntaxError, IndexError, KeyError, ValueError):
        return form     # (not a Python expression: the writers refuse it as before)
    text = ast.unparse(_Minus().visit(tree))
    for k, name in enumerate(names):
        text = text.replace(name, "{%d}" % k)
    return text


def cast_arguments(op, in_dtypes, out_dtype, args):
    """``args`` (scalar expressions of the inputs) converted to the op's loop dtype where
    theirs differs, as numpy converts inputs before its loop (numba's mixed-type
    arithmetic is not numpy's: uint64 + int64 lost the top bit, a float to an int
    power divided by zero). ``cast`` converts by itself; ``where``'s condition stays."""
    if op.name == "cast":
        return list(args)
    where = op.name == "where"
    dt = np.dtype(out_dtype) if where else loop_dtype(op, in_dtypes, out_dtype)
    return [a if (where and k == 0) or np.dtype(d) == dt
            else f"{_np_type(dt)}({a})" for k, (a, d) in enumerate(zip(args, in_dtypes))]


def scalar_expression(node, args):
    """The numba expression computing elementwise ``node`` from the scalar expressions
    ``args`` of its inputs, converted to its dtype (float32 ``exp``/``tanh`` in their
    vectorizable forms). Raises :class:`Unsupported` where the op has no form for
    these inputs.

    Example:
        >>> import engine as en
        >>> g = en.function(lambda x: en.exp(x), passes=["cleanup"]).graph_for(
        ...     en.ones(3, dtype="float32"))
        >>> scalar_expression(g.outputs[0], ["a"])
        'np.float32(exp32(a))'
    """
    in_avals = [(tuple(i.shape), i.dtype) for i in node.inputs]
    form = scalar_form_text(node.op, in_avals, node.dtype, node.params)
    if form is None:
        raise Unsupported(f"{node.name}: {node.op.name} has no numba form for "
                          f"{[np.dtype(d).name for _, d in in_avals]}")
    args = cast_arguments(node.op, [d for _, d in in_avals], node.dtype, args)
    return f"{_np_type(node.dtype)}({form.format(*args)})"


def _inlinable_user(user, node):
    """An elementwise user of the same shape that reads ``node`` once (in one input
    whose place its scalar form names once: ``square``'s ``{0} * {0}`` would compute
    an inlined input twice)."""
    if not user.op.elementwise or user.op.multiple_results or \
            tuple(user.shape) != tuple(node.shape) or user.inputs.count(node) != 1:
        return False
    form = scalar_form_text(user.op, [(tuple(i.shape), i.dtype) for i in user.inputs],
                            user.dtype, user.params)
    return form is not None and form.count("{%d}" % user.inputs.index(node)) == 1


def count_users(nodes, outputs):
    """``{node: [users]}`` within ``nodes`` (each user once per input position)."""
    users: dict[Node, list[Node]] = {}
    for n in nodes:
        for i in n.inputs:
            users.setdefault(i, []).append(n)
    return users

