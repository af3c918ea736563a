"""A matrix product only part of which is read: the product of the factor's part.

A product whose every reader takes a static piece of it along the result's last axis
(columns) or the one before (rows) -- a slice, an index, or pieces of a ``split`` --
computes elements nothing reads. The same values come from a smaller product::

    (A @ B)[..., cols]     = A @ B[..., cols]
    (A @ B)[..., rows, :]  = A[..., rows, :] @ B

An LSTM written as ``concat([x, h]) @ W`` has such a product in its backward loop:
the gradient of the concatenation, ``d_gates @ W.T``, of which only ``h``'s columns
are read (``x`` needs no gradient), so half of every step's product was thrown away.
The pass finds the columns (or rows) the readers use together, computes the product
of the factor's slice, and the readers read the new product (shifted). A slice of a
transposed factor is taken before the transpose (``W.T[:, cols] = W[cols].T``): a
block of rows is a view, and the product reads the transpose as a BLAS flag. Inside a
loop body (the cleanup stage runs it there too) the slice of a captured weight is then
loop-invariant work of a view.

Whether it pays is the cost model's (``engine/cost_model.py``): the readers' part must
be at most ``sliced_product_max_fraction`` of the product's side (a wider slice saves
little against a narrower, less efficient BLAS call), and the multiply-adds saved at
least ``sliced_product_min_saved_work`` (a tiny product saves less than the slice
node costs to run).

Each element is still one dot product over the same inner axis, but BLAS may pick
another kernel for the narrower product and round an element differently (OpenBLAS,
float32: ``(3, 64) @ (64, 40)``'s columns 24:40 differ by an ulp from the product of
those columns; ``(32, 256) @ (256, 128)``'s 64:128 agree): nothing changes under
``en.config.numerics = "bitwise"``.

Example:
    >>> import engine as en
    >>> def f(a, w):
    ...     return (a @ w)[:, 64:]
    >>> g = en.function(f).graph_for(en.ones((32, 256)), en.ones((256, 128)))
    >>> [(n.op.name, n.shape) for n in g.topo_order() if n.op.name == "matmul"]
    [('matmul', (32, 64))]
"""
import math

from engine import ops
from engine.cost_model import cost
from engine.numerics import bitwise

from ..ir.graph_ops import unpack_op
from ..ir.queries import remove_node
from .graph_builder import as_tensor, building

COLUMNS, ROWS = -1, -2


def sliced_products(graph):
    """Replace each matrix product whose readers take only part of its rows or columns
    by the product of the factor's part, where the cost model says it pays (see the
    module docstring). Returns True if any product changed."""
    if bitwise():
        return False
    count = 0
    for node in graph.topo_order():
        if node not in graph:
            continue
        plan = _plan(graph, node)
        if plan is not None:
            _rewrite(graph, node, *plan)
            count += 1
    if count:
        graph.notes.append(f"narrowed {count} matrix product{'s' if count != 1 else ''} "
                           "to the part their readers use")
    return bool(count)


# ---- what the readers take ----------------------------------------------------------------
class _View:
    """One value read from the product: ``node`` takes ``[lo, hi)`` along the result's
    ``axis`` (ROWS or COLUMNS); ``index`` is an integer there (the axis is dropped)."""

    __slots__ = ("node", "axis", "lo", "hi", "index")

    def __init__(self, node, axis, lo, hi, index=False):
        self.node, self.axis, self.lo, self.hi, self.index = node, axis, lo, hi, index


def _getitem_view(node, shape):
    """The ``_View`` of a getitem of the product (of ``shape``) that indexes one of its
    last two axes by a static step-1 slice or an integer, and takes every other axis
    whole; None for any other index."""
    spec = node.params["spec"]
    if len(node.inputs) != 1 or any(s[0] not in ("slice", "int", "ellipsis") for s in spec) \
            or sum(s[0] == "ellipsis" for s in spec) > 1:
        return None
    rank = len(shape)
    if any(s[0] == "ellipsis" for s in spec):     # x[..., 64:]: the items after it end the axes
        at = next(k for k, s in enumerate(spec) if s[0] == "ellipsis")
        spec = spec[:at] + (("slice", None, None, None),) * (rank - len(spec) + 1) + \
            spec[at + 1:]
    spec = tuple(spec) + (("slice", None, None, None),) * (rank - len(spec))
    if len(spec) != rank:
        return None
    found = None
    for axis, (item, size) in enumerate(zip(spec, shape)):
        if item[0] == "int":
            if not -size <= item[1] < size:
                return None
            lo, hi, index = item[1] % size, item[1] % size + 1, True
        else:
            lo, hi, step = slice(*item[1:]).indices(size)
            if step != 1 or hi <= lo:
                return None
            if (lo, hi) == (0, size):
                continue
            index = False
        if found is not None or axis < rank - 2:
            return None         # two axes cut, or a batch axis
        found = _View(node, axis - rank, lo, hi, index)
    return found


def _split_views(graph, node, shape):
    """The ``_View`` of each read piece of a ``split`` of the product; None where the
    split is along another axis or something other than its pieces reads it."""
    axis = node.params["axis"] % len(shape) - len(shape)
    if axis not in (ROWS, COLUMNS):
        return None
    views, start = [], 0
    pieces: dict[int, list] = {}
    for u in graph.users(node):
        if u.op is not unpack_op or u.control_deps:
            return None
        pieces.setdefault(u.params["index"], []).append(u)
    for k, (piece_shape, _) in enumerate(node.avals):
        size = piece_shape[axis]
        for u in pieces.get(k, ()):
            views.append(_View(u, axis, start, start + size))
        start += size
    return views


def _plan(graph, node):
    """``(axis, lo, hi, views)`` when ``node`` is a product worth narrowing to
    ``[lo, hi)`` along ``axis``, else None."""
    if node.op is not ops.matmul_op or node.side_effects or node.control_deps or \
            node in graph.outputs:
        return None
    a, b = node.inputs
    shape = node.shape
    if len(a.shape) < 2 or len(b.shape) < 2 or shape is None or None in shape or \
            None in a.shape or None in b.shape:
        return None
    views = []
    for u in graph.users(node):
        if u.control_deps or node in u.control_deps or u.inputs.count(node) != 1:
            return None
        if u.op is ops.getitem_op and u.inputs[0] is node:
            found = _getitem_view(u, shape)
        elif u.op is ops.split_op and not u.side_effects:
            found = _split_views(graph, u, shape)
        else:
            return None
        if found is None:
            return None
        views.extend(found if isinstance(found, list) else [found])
    if not views or len({v.axis for v in views}) != 1:
        return None
    axis = views[0].axis
    lo, hi = min(v.lo for v in views), max(v.hi for v in views)
    side = shape[axis]
    saved = math.prod(shape) // side * (side - (hi - lo)) * a.shape[-1]
    if hi - lo > cost.sliced_product_max_fraction * side or \
            saved < cost.sliced_product_min_saved_work:
        return None
    return axis, lo, hi, views


# ---- the rewrite --------------------------------------------------------------------------
def _sliced(factor, axis, lo, hi):
    """``factor`` (a traced tensor) sliced to ``[lo, hi)`` along ``axis`` (negative); a
    transpose's input is sliced instead, then transposed (a block of rows is a view)."""
    node = factor._node
    rank = len(node.shape)
    at = axis % rank
    if node.op is ops.transpose_op and not node.side_effects:
        perm = node.params["axes"] or tuple(range(rank - 1, -1, -1))
        inner = _sliced(as_tensor(node.inputs[0]), perm[at] - rank, lo, hi)
        return ops.transpose(inner, tuple(perm))
    return ops.getitem(factor, (slice(None),) * at + (slice(lo, hi),))


def _rewrite(graph, node, axis, lo, hi, views):
    """``node`` -> the product of the sliced factor; each view reads its part of it."""
    before = set(graph.nodes)
    rank = len(node.shape)
    with building(graph):
        a, b = (as_tensor(i) for i in node.inputs)
        if axis == COLUMNS:
            product = ops.matmul(a, _sliced(b, COLUMNS, lo, hi))
        else:
            product = ops.matmul(_sliced(a, ROWS, lo, hi), b)
        lead = (slice(None),) * (axis % rank)
        news = []
        for v in views:
            if v.index:
                news.append(ops.getitem(product, lead + (v.lo - lo,))._node)
            elif (v.lo, v.hi) == (lo, hi):
                news.append(product._node)
            else:
                news.append(ops.getitem(product, lead + (slice(v.lo - lo, v.hi - lo),))._node)
    for n in graph.nodes:
        if n not in before:
            n.source = node.source
    readers = {v.node for v in views}
    for v, new in zip(views, news):
        graph.replace_all_uses_with(v.node, new)
    for r in list(readers):
        if r.op is unpack_op:
            remove_node(graph, r)
    for u in graph.users(node):
        for piece in graph.users(u):
            remove_node(graph, piece)      # a split's unread pieces
        remove_node(graph, u)
    remove_node(graph, node)
