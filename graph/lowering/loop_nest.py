"""The loop nest of a compiled fused region, written once for every compiled lowering.

A compiled region is one function ``name(x0, ..., out0, ..., acc0, ..., lo, hi)`` over
rows ``lo:hi`` of the region's first axis: every member is a scalar computed in the
innermost loop, each value result is written once, and each reduction adds into a row
of partial sums (one per position of the last axis; float32 for float32 members)
moved into the float64 accumulators every ``FLUSH_ROWS`` rows and once at the end.
:func:`write` lays out that structure; a :class:`Dialect` (numba's in
``numba/numba_fused.py``, C's in ``c/c_source.py``) says how each piece is spelled.

``aliases`` holds ``(k, j)`` where input ``k`` is the array of value result ``j``
(memory planning wrote it in place): the loop then reads ``out{j}`` for it, so a
compiler sees one array read and written at the same index, which it vectorizes (and
C may mark every pointer ``restrict``).

Example (a toy dialect, to show the layout):
    >>> import engine as en
    >>> class Toy(Dialect):
    ...     def signature(self, name, inputs, values, sums):
    ...         return f"{name}:"
    ...     def element(self, k, node, shape, loops):
    ...         return f"x{k}[{','.join(loops)}]"
    ...     def define(self, k, member, args):
    ...         return f"t{k} = {member.op.name}({', '.join(args)})"
    ...     def store(self, j, shape, loops, value):
    ...         return f"out{j}[{','.join(loops)}] = {value}"
    ...     def open_loop(self, k, extent):
    ...         return f"loop i{k} < {extent}"
    >>> g = en.function(lambda x: en.exp(x) * 2.0, passes=["cleanup"]).graph_for(en.ones((2, 3)))
    >>> x, e, c, m = g.topo_order()
    >>> print(write(Toy(), "k", [e, m], [x, c], [(m, None)]).rstrip())
    k:
        loop i0 < hi
            loop i1 < 3
                t0 = exp(x0[i0,i1])
                t1 = mul(t0, s1)
                out0[i0,i1] = t1
"""
import numpy as np

from engine.errors import UnimplementedError

from .plugin import Unsupported

# float32 partial sums hold at most this many rows before they move into float64.
FLUSH_ROWS = 32
_PAD = "    "


def loop_dtype(op, in_dtypes, out_dtype):
    """The dtype an elementwise op computes in, as numpy's ufunc loop does: its result's,
    or for a bool result (a comparison, a logical op) the inputs' common type.

    Example:
        >>> import engine as en
        >>> loop_dtype(en.ops.less_op, ["int32", "float32"], "bool").name
        'float64'
    """
    out_dtype = np.dtype(out_dtype)
    if out_dtype != np.bool_ or not in_dtypes:
        return out_dtype
    return np.result_type(*in_dtypes)


class Dialect:
    """How one compiled lowering spells the pieces of a loop nest. The defaults suit a
    dialect with no reductions, no scalar inputs and no closing braces."""

    def check(self, node):
        """Raise :class:`Unsupported` for a member or input this dialect cannot hold."""

    def check_region(self, shape, members, values, sums):
        """Raise :class:`Unsupported` for a region this dialect cannot write."""

    def signature(self, name, inputs, values, sums):
        raise UnimplementedError(f"{type(self).__name__} must define signature() (a loop dialect's part)")

    def partial(self, j, member, length):
        """Lines making the partial sums of reduction ``j`` (a row of ``length``)."""
        raise Unsupported("this lowering writes no reductions")

    def scalar(self, k, node):
        """``(line, name)``: a 0-d input ``k`` read once before the loops."""
        return None, f"s{k}"

    def element(self, k, node, shape, loops):
        """Input ``k`` (of ``node.shape``, broadcast to ``shape``) at the loop indices."""
        raise UnimplementedError(f"{type(self).__name__} must define element() (a loop dialect's part)")

    def aliased(self, j, shape, loops):
        """Value result ``j``'s array read at the loop indices (an input aliased to it)."""
        return self.store_target(j, shape, loops)

    def store_target(self, j, shape, loops):
        raise Unsupported("this lowering writes no aliased inputs")

    def define(self, k, member, args):
        """The line computing member ``k`` from its inputs' expressions ``args``."""
        raise UnimplementedError(f"{type(self).__name__} must define define() (a loop dialect's part)")

    def store(self, j, shape, loops, value):
        raise UnimplementedError(f"{type(self).__name__} must define store() (a loop dialect's part)")

    def accumulate(self, j, loop, value):
        raise Unsupported("this lowering writes no reductions")

    def open_loop(self, k, extent):
        """Loop ``k``'s header; loop 0's ``extent`` is ``"hi"`` (it runs from ``lo``)."""
        raise UnimplementedError(f"{type(self).__name__} must define open_loop() (a loop dialect's part)")

    def close_loop(self):
        """The line closing a loop, or None where indentation closes it."""
        return None

    def flush(self, n_sums, length):
        """Lines, at the outer loop's body depth, moving partial sums into the
        accumulators every ``FLUSH_ROWS`` rows."""
        return []

    def finish(self, n_sums, length):
        """Lines after the loops: the last partial sums added, anything freed."""
        return []

    def end(self):
        """The function's last lines."""
        return []


def write(dialect, name, members, inputs, outputs, aliases=()):
    """The source of region ``members`` (topological order) reading ``inputs``, with
    ``outputs`` as ``(member, reduction)`` (None for a value), spelled by ``dialect``.
    Raises :class:`Unsupported` for what it cannot write."""
    shape = tuple(members[-1].shape)
    if len(shape) < 1 or any(d is None for d in shape):
        raise Unsupported("a fused region needs a static shape of at least one axis")
    for node in list(members) + list(inputs):
        dialect.check(node)
    values = [m for m, r in outputs if r is None]
    sums = [m for m, r in outputs if r is not None]
    dialect.check_region(shape, members, values, sums)
    nd = len(shape)
    loops = [f"i{k}" for k in range(nd)]
    lines = [dialect.signature(name, inputs, values, sums)]
    for j, m in enumerate(sums):
        lines += [_PAD + line for line in dialect.partial(j, m, shape[-1])]
    names = {}
    aliased = dict(aliases)
    for k, node in enumerate(inputs):
        if k in aliased:
            names[node] = dialect.aliased(aliased[k], shape, loops)
        elif node.shape:
            names[node] = dialect.element(k, node, shape, loops)
        else:
            line, names[node] = dialect.scalar(k, node)
            if line is not None:
                lines.append(_PAD + line)
    body = []
    for k, m in enumerate(members):
        body.append(dialect.define(k, m, [names[i] for i in m.inputs]))
        names[m] = f"t{k}"
    body += [dialect.store(j, shape, loops, names[m]) for j, m in enumerate(values)]
    body += [dialect.accumulate(j, loops[-1], names[m]) for j, m in enumerate(sums)]
    lines.append(_PAD + dialect.open_loop(0, "hi"))
    for k in range(1, nd):
        lines.append(_PAD * (k + 1) + dialect.open_loop(k, shape[k]))
    lines += [_PAD * (nd + 1) + line for line in body]
    close = dialect.close_loop()
    if close is not None:
        lines += [_PAD * (k + 1) + close for k in range(nd - 1, 0, -1)]
    if sums:
        lines += dialect.flush(len(sums), shape[-1])
    if close is not None:
        lines.append(_PAD + close)
    if sums:
        lines += dialect.finish(len(sums), shape[-1])
    lines += dialect.end()
    return "\n".join(lines) + "\n"
