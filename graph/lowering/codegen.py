"""Lowering a :class:`Graph` to Python source that calls the ops' kernels directly.

The generated function takes the graph inputs as arguments, runs one line per
node in topological order, drops each value after its last use (``del``), and
returns the outputs as a tuple. Kernels, constants and non-literal params live
in the function's namespace. Every line ends with a comment naming the user's
source line, and a runtime failure is mapped back to its node.

Lowering emits calls through one array back end: numpy's kernels are each
op's ``impl``; another back end's come from the op's kernel table
(``op.kernels``) and its constants are converted to it once, here. Nothing
here names a specific op.
"""
import itertools
import keyword
import linecache
import os

import numpy as np

from engine.backend import NUMPY, bind, get, mismatch
from engine import warning_location
from engine.errors import BackendError

from . import concat_in_place, output_recycling
from ..ir.graph_ops import constant_op, placeholder_op, unpack_op
from ..ir.graph import Node

_counter = itertools.count()
_RESERVED = ("k_", "c_", "p_", "_b", "run_", "__", output_recycling.PREV, output_recycling.HELD,
             output_recycling.REFS, output_recycling.BASE, "_cc", "_np_")


def _is_literal(value):
    """True when ``repr(value)`` evaluates back to an equal, same-typed value."""
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return np.isfinite(value)
    if type(value) is tuple:
        return all(_is_literal(v) for v in value)
    return False


# Generated code is the engine's own: a numpy warning raised in it is shown at the user's
# line that traced the op (engine/warning_location.py reads TRACED_LINES of the namespace).
warning_location.add_internal_filenames("<graph ", "<entry ", "<fused kernel ", "<numba kernel ")


class Lowered:
    """Source code plus the namespace it runs in."""

    def __init__(self, source, namespace, line_to_node, fn_name, filename, code=None):
        self.source = source
        self.code = code          # the compiled source, when lowering compiled it
        self.namespace = namespace
        self.line_to_node = line_to_node
        self.fn_name = fn_name
        self.filename = filename
        namespace[warning_location.TRACED_LINES] = {
            line: node.source for line, node in line_to_node.items()
            if getattr(node, "source", None)}

    def build(self):
        code = self.code or compile(self.source, self.filename, "exec")
        lines = self.source.splitlines(True)
        linecache.cache[self.filename] = (len(self.source), None, lines, self.filename)
        exec(code, self.namespace)
        # Popped: a function kept in its own globals is a reference cycle, and
        # the cycle would keep the graph's constants alive after the graph is dropped.
        return self.namespace.pop(self.fn_name)


def _backend_kernel(node, backend):
    """The kernel of ``node``'s op on a back end other than numpy."""
    op = node.op
    if op is unpack_op:
        return op.impl   # a tuple index: the same on every back end
    kernel = op.kernels.get(backend.name)
    if kernel is None and op.generic is not None:   # graph-only ops (control flow)
        kernel = bind(op.generic, backend)
    if kernel is None:
        raise BackendError(f"graph {graph_name(node)}: node {node.name} (op '{op.name}') cannot "
                           f"run on back end {backend.name}: the op has no kernel there")
    return kernel


def graph_name(node):
    return getattr(node.graph, "name", "?")


def _constant(node, backend):
    """A constant's value on ``backend`` (converted once, when the graph is lowered).
    A tensor captured from another back end is refused: ops never copy across."""
    value = node.params["value"]
    origin = node.meta.get("backend")
    if origin is not None and origin != backend.name:
        raise mismatch(f"graph {graph_name(node)} (a tensor captured as constant {node.name})",
                       backend, get(origin))
    if not backend.numpy_arrays:
        return backend.from_numpy(np.asarray(value))
    if origin is None and isinstance(value, np.ndarray) and value.flags.writeable:
        # The graph's own constant (folded, or made from Python data): a result that is
        # this array must not let a write reach it -- read-only, a write copies first.
        value = value.view()
        value.flags.writeable = False
    return value


class _Namespace:
    """The generated function's globals: kernels (one name per distinct callable),
    constants and non-literal params."""

    def __init__(self, kernel_for, backend):
        self.kernel_for = kernel_for
        self.backend = backend
        self.values = {"__builtins__": __builtins__}
        self._kernels = {}

    def kernel(self, node, buffered=False, planned=False):
        """The name of ``node``'s kernel: ``kernel_for(node)`` if it gives one, else the
        op's kernel on a back end other than numpy, else (with ``planned``: the node
        writes into a planned buffer of its own, or into a fresh array) what the op's
        ``static_kernel`` rule picks for its traced shapes and dtypes, else the op's
        ``out_impl`` (writing into a given buffer) or ``impl``."""
        fn = self.kernel_for(node) if self.kernel_for is not None else None
        if fn is None and not self.backend.numpy_arrays:
            fn = _backend_kernel(node, self.backend)
        base = None
        if fn is None and planned:   # (numpy arrays: the op's numpy kernels apply)
            fn = _static_kernel(node, buffered)
            if fn is not None:   # k_np_dot for numpy's own functions, k_<name> for the engine's
                engine_own = (getattr(fn, "__module__", None) or "").startswith("engine")
                base = ("k_" if engine_own else "k_np_") + fn.__name__
        fn = fn or (node.op.out_impl if buffered else node.op.impl)
        key = id(fn)
        if key not in self._kernels:
            base = base or "k_" + node.op.name + ("_out" if buffered else "")
            name = base
            i = 1
            while name in self.values:
                name = f"{base}_{i}"
                i += 1
            self.values[name] = fn
            self._kernels[key] = name
        return self._kernels[key]

    def add(self, name, value):
        self.values[name] = value
        return name


def _static_kernel(node, into_buffer):
    """The kernel the op's ``static_kernel`` rule picks for ``node``'s avals, or None."""
    rule = node.op.rules.get("static_kernel")
    if rule is None or node.shape is None or any(i.shape is None for i in node.inputs):
        return None
    return rule([(tuple(i.shape), i.dtype) for i in node.inputs],
                (tuple(node.shape), node.dtype), node.params, into_buffer)


def _local_names(order):
    """A local variable name per node. Values are locals of the generated function: a
    node named like a namespace entry (k_ kernels, c_ constants, p_ params, _b buffers)
    would hide it."""
    names = {}
    taken = set()
    for node in order:
        name = node.name
        if name.startswith(_RESERVED) or keyword.iskeyword(name):
            name = "v_" + name
        while name in taken:
            name += "_"
        taken.add(name)
        names[node] = name
    return names


def _liveness(order, outputs):
    """``(last_use, dying)``: the position of each value's last read, and per position the
    values to ``del`` after it (each once, in input order; outputs are never dropped)."""
    last_use = {}
    for i, node in enumerate(order):
        for inp in node.inputs:
            last_use[inp] = i
    dying: dict[int, list[Node]] = {}     # step -> the inputs last used there
    for i, node in enumerate(order):
        for inp in dict.fromkeys(node.inputs):  # each input once, in order
            if last_use[inp] == i and inp not in outputs:
                dying.setdefault(i, []).append(inp)
    return last_use, dying


def _out_argument(node, plan):
    """``(out= argument or None, buffered)`` for ``node`` under the memory plan."""
    if plan is None:
        return None, False
    view = plan.buffer_of.get(node)
    if view is not None:
        return f"out=_b{view}", True
    views = plan.out_buffers_of.get(node)
    if views is not None:   # a multi-output kernel: a buffer (or None) per result
        return "out=(" + "".join("None, " if b is None else f"_b{b}, " for b in views) + ")", True
    return None, False


def _call(node, names, ns, out_arg, buffered, planned=False):
    """``kernel(inputs, out=..., params)`` for ``node`` (``planned``: see
    ``_Namespace.kernel``)."""
    argv = [names[inp] for inp in node.inputs]
    if out_arg is not None:
        argv.append(out_arg)
    for key, value in sorted(node.params.items()):
        if _is_literal(value):
            argv.append(f"{key}={value!r}")
        else:
            argv.append(f"{key}={ns.add(f'p_{names[node]}_{key}', value)}")
    return f"{ns.kernel(node, buffered, planned)}({', '.join(argv)})"


def _node_lines(node, names, ns, plan, used, placement):
    """The statements computing ``node`` (without their source comment)."""
    target = names[node]
    if node.op is constant_op:
        return [f"    {target} = {ns.add('c_' + target, _constant(node, ns.backend))}"]
    if node in placement.result_of:     # its parts wrote it in place
        return placement.concat_lines(node, target, names)
    planned = False   # its own planned buffer (C order, its aval) or a fresh result
    if node in placement.part_of and node.op is not unpack_op:
        out_arg, buffered = placement.out_argument(node), True
    elif node in placement.kernel_parts:
        views = plan.out_buffers_of.get(node) if plan is not None else None
        out_arg, buffered = placement.kernel_out_argument(node, views), True
    else:
        out_arg, buffered = _out_argument(node, plan)
        planned = out_arg is None or plan.buffer_of.get(node) is not None
    expression = _python_form(node, ns.backend) if out_arg is None and used else None
    if expression is not None:
        call = expression.format(*(names[i] for i in node.inputs))
    else:
        call = _call(node, names, ns, out_arg, buffered, planned)
    if node.meta.get("contiguous") and out_arg is None and ns.backend.numpy_arrays:
        # A pass asked for this value in C order (a view is copied once, here).
        call = f"{ns.add('_np_ascontiguousarray', np.ascontiguousarray)}({call})"
    return [f"    {target} = {call}" if used else f"    {call}"]


def _python_form(node, backend):
    """The op's ``python_form`` of ``node`` (a Python expression over its inputs), or None."""
    rule = node.op.rules.get("python_form")
    if rule is None or not backend.numpy_arrays:
        return None
    return rule([(i.shape, i.dtype) for i in node.inputs], node.params)


def _recycled_lines(k, node, names, ns):
    """The statements computing recycled output number ``k`` (output_recycling.py)."""
    return output_recycling.statement(
        k, names[node], _call(node, names, ns, f"out={output_recycling.PREV}", True),
        _call(node, names, ns, None, False))


def lower(graph, kernel_for=None, backend=NUMPY, plan=None, recycle_outputs=False):
    """Return :class:`Lowered` source for ``graph``.

    ``kernel_for(node)`` may return a replacement callable for a node (used by
    fusion); by default each node calls ``node.op.impl`` (numpy), or its kernel
    on ``backend``. With ``plan`` (a :class:`~graph.lowering.memory_planning.MemoryPlan`
    of this graph) the function takes one more argument, the list of planned
    buffers, and the planned nodes write into them. With ``recycle_outputs`` large
    outputs are written into the arrays the previous call returned once the caller
    has released them (``output_recycling.py``).

    Example:
        >>> import engine as en
        >>> g = en.function(lambda x: en.exp(x) * 2.0, optimize=False).graph_for(en.ones(2))
        >>> print(lower(g).source.splitlines()[0])
        def run__lambda_(x0):
    """
    order = graph.topo_order()
    names = _local_names(order)
    outputs = set(graph.outputs)
    last_use, dying = _liveness(order, outputs)
    ns = _Namespace(kernel_for, backend)
    # The placement the memory planning pass made the plan for, or one made under this plan.
    placement = plan.placement if plan is not None and plan.placement is not None and \
        backend.buffer_reuse else concat_in_place.place_concats(graph, order, plan, backend)
    if plan is not None and not plan.views:
        plan = None
    recycled = output_recycling.recyclable_outputs(graph, plan, backend) \
        if recycle_outputs else []
    recycled = {node: k for k, node in enumerate(recycled)}
    if recycled:
        ns.values.update(output_recycling.namespace_entries(len(recycled)))
    ns.values.update(concat_in_place.namespace_entries(placement))
    fn_name = "run_" + "".join(c if c.isalnum() else "_" for c in graph.name)
    args = ", ".join([names[n] for n in graph.inputs] + (["_buffers"] if plan else []))
    lines = [f"def {fn_name}({args}):"]
    if plan:
        lines.append(f"    {', '.join(f'_b{k}' for k in range(len(plan.views)))}, = _buffers")
    line_to_node = {}
    for i, node in enumerate(order):
        if node.op is placeholder_op:
            continue
        if node in recycled:
            block = _recycled_lines(recycled[node], node, names, ns)
        else:
            block = _node_lines(node, names, ns, plan, node in last_use or node in outputs,
                                placement)
        block = [placement.allocation(k) for k in placement.allocate_before.get(node, ())] + block
        if node.source is not None:
            where = f"  # {os.path.basename(node.source[0])}:{node.source[1]}"
            block = [b + where if b.lstrip().startswith(names[node]) else b for b in block]
        for line in block:
            lines.append(line)
            line_to_node[len(lines)] = node
        dead = [names[d] for d in dying.get(i, ())]
        if dead:
            lines.append(f"    del {', '.join(dead)}")
    outs = ", ".join(names[o] for o in graph.outputs)
    lines.append(f"    return ({outs}{',' if len(graph.outputs) == 1 else ''})")
    source = "\n".join(lines) + "\n"
    filename = f"<graph {graph.name} #{next(_counter)}>"
    # Compiled here, so a lowering bug fails now, not at call time. compile(), not
    # ast.parse(): CPython 3.11's ast module can raise SystemError ("AST constructor
    # recursion depth mismatch") when threads parse at once; compile() builds no
    # Python AST objects.
    code = compile(source, filename, "exec")
    return Lowered(source, ns.values, line_to_node, fn_name, filename, code)
