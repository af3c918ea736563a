"""Bilinear per-step products and their sum over a scan's steps, as one contraction.

The helpers of ``scan_products.py``. ``bilinear(node)`` reads a body node as a product
of two values with labelled axes (an einsum without the summing of a step axis):

* ``mul(A, B)`` where ``A`` and ``B`` broadcast against each other into a larger
  result (``expand_dims(h, 2) * expand_dims(d, 1)``, an outer product per example);
* ``matmul(A, B)`` of operands of two or more axes (``h.T @ d``, a weight's gradient).

Each operand is followed back through the layout ops that only move or insert axes
(``transpose``, ``expand_dims``, ``reshape``/``squeeze`` that add or drop axes of size
1, ``broadcast_to``) to the value they rearrange, its *factor*. An axis of a factor is
labelled by the result axis it becomes (an int), or ``"k"``, the axis a ``matmul``
sums over. ``contract(...)`` then writes, in the enclosing graph, the sum over the
steps of that product from the factors' stacks (``(length,) + factor.shape``): one
``matmul`` (batched where both factors share a result axis) between transposes and
reshapes, e.g. ``sum_t h_t.T @ d_t = reshape(H, (T*B, i)).T @ reshape(D, (T*B, j))``.

Example:
    >>> import engine as en
    >>> g = en.function(lambda a, b: en.expand_dims(a, 2) * en.expand_dims(b, 1),
    ...                 optimize=False).graph_for(en.ones((2, 3)), en.ones((2, 4)))
    >>> node = [n for n in g.nodes if n.op.name == "mul"][0]
    >>> (fa, la), (fb, lb) = bilinear(node)
    >>> la, lb
    ([0, 1], [0, 2])
"""
from engine import ops

from ..ir.graph_ops import unpack_op

STEP = "t"   # the label of a stack's step axis
SUMMED = "k"   # the label of the axis a matmul sums over
CHUNK = "c"   # the label of the runs of steps a long sum is cut into

_SAME_DATA = (ops.reshape_op, ops.expand_dims_op, ops.squeeze_op)


def _non1(shape):
    return [i for i, s in enumerate(shape) if s != 1]


def _factor(node):
    """``(factor, dims)``: the value ``node`` rearranges, and for each axis of ``node``
    the factor's axis it holds (None for an axis of size 1 or a broadcast one)."""
    dims: list[int | None] = list(range(len(node.shape)))
    base = node
    while len(base.inputs) == 1 and not base.side_effects:
        x = base.inputs[0]
        if x.shape is None or None in x.shape:
            break
        if base.op in _SAME_DATA:
            if [x.shape[i] for i in _non1(x.shape)] != [base.shape[i] for i in _non1(base.shape)]:
                break
            to_x = dict(zip(_non1(base.shape), _non1(x.shape)))
            dims = [None if d is None else to_x.get(d) for d in dims]
        elif base.op is ops.transpose_op:
            axes = base.params["axes"]
            axes = tuple(range(len(x.shape)))[::-1] if axes is None else axes
            dims = [None if d is None else axes[d] % len(x.shape) for d in dims]
        elif base.op is ops.broadcast_to_op:
            off = len(base.shape) - len(x.shape)
            dims = [None if d is None or d < off or x.shape[d - off] != base.shape[d]
                    else d - off for d in dims]
        else:
            break
        base = x
    dims = [None if d is None or base.shape[d] == 1 else d for d in dims]
    present = sorted(d for d in dims if d is not None)
    if present != _non1(base.shape):   # each factor axis held once
        return None
    return base, dims


def _labelled(operand, labels):
    """``(factor, labels of the factor's axes of size > 1, in order)`` for ``operand``
    whose axes carry ``labels`` (one per axis)."""
    found = _factor(operand)
    if found is None:
        return None
    base, dims = found
    by_axis = {d: label for d, label in zip(dims, labels) if d is not None}
    return base, [by_axis[d] for d in _non1(base.shape)]


def bilinear(node):
    """``((factor_a, labels_a), (factor_b, labels_b))`` if ``node`` is a product of two
    rearranged values whose result is each factor's axes side by side (see the module
    docstring), else None. Result axes of size 1 are not labelled."""
    if len(node.inputs) != 2 or node.shape is None or None in node.shape or node.side_effects:
        return None
    a, b = node.inputs
    if any(x.shape is None or None in x.shape for x in (a, b)):
        return None
    r = len(node.shape)
    la: list[int | str]
    lb: list[int | str]
    if node.op is ops.mul_op:
        la = [*range(r - len(a.shape), r)]
        lb = [*range(r - len(b.shape), r)]
    elif node.op is ops.matmul_op and len(a.shape) >= 2 and len(b.shape) >= 2:
        la = [*range(r - len(a.shape), r - 2), r - 2, SUMMED]
        lb = [*range(r - len(b.shape), r - 2), SUMMED, r - 1]
    else:
        return None
    fa, fb = _labelled(a, la), _labelled(b, lb)
    if fa is None or fb is None:
        return None
    labels_a, labels_b = fa[1], fb[1]
    if node.op is ops.mul_op and not (set(labels_a) - set(labels_b) and
                                      set(labels_b) - set(labels_a)):
        return None   # an elementwise (or scaling) product: no larger result to save
    if (SUMMED in labels_a) != (SUMMED in labels_b):
        return None   # summed over in one factor alone: not a product of the two
    wanted = {d for d in _non1(node.shape)}
    if set(labels_a) - {SUMMED} | set(labels_b) - {SUMMED} != wanted:
        return None
    return fa, fb


def matrix_work(factor_a, labels_a, factor_b, labels_b):
    """The multiply-adds of one step's product per matrix of the contraction (the
    axes both factors share are the matrices' batch)."""
    size_a = dict(zip(labels_a, [factor_a.shape[i] for i in _non1(factor_a.shape)]))
    size_b = dict(zip(labels_b, [factor_b.shape[i] for i in _non1(factor_b.shape)]))
    work = 1
    for label, n in size_a.items():
        if label not in size_b or not isinstance(label, int):
            work *= n              # rows, and the inner axis
    for label, n in size_b.items():
        if label not in size_a:
            work *= n              # columns
    return work


def batched(labels_a, labels_b):
    """Whether the product is a batch of matrix products (the factors share a result
    axis), a 3-d ``matmul`` after the loop rather than a 2-d one."""
    return any(isinstance(label, int) and label in labels_b for label in labels_a)


def _sizes(shape, labels, which):
    n = 1
    for label in which:
        n *= shape[labels.index(label)]
    return n


def _layout(labels, batch, first, second):
    """The axes order putting ``labels`` as ``batch + first + second``, and whether it
    is read as ``batch + second + first`` instead (then swapped back by a view), where
    the stack already holds them in that order."""
    rest = [ax for ax in labels if ax not in batch]
    swapped = rest == second + first
    order = batch + (second + first if swapped else first + second)
    return [labels.index(ax) for ax in order], swapped


class Contraction:
    """Writes contractions into ``graph``, each operand's preparation (a transpose and
    a reshape of a stack) made once for every product reading it."""

    def __init__(self, graph, source):
        self.graph = graph
        self.source = source
        self._made = {}

    def add(self, op, inputs, params, name=None):
        key = (op, tuple(i.id for i in inputs), tuple(sorted(params.items())))
        if key not in self._made:
            aval = op.abstract_eval(*[(i.shape, i.dtype) for i in inputs], **params)
            self._made[key] = self.graph.add(op, inputs, params, aval,
                                             name=name or op.name, source=self.source)
        return self._made[key]

    def _matrix(self, stack, perm, shape, swapped):
        """``stack`` transposed by ``perm``, reshaped to ``shape`` and its last two axes
        swapped if ``swapped`` (one transpose where the reshape changes nothing)."""
        permuted = tuple(stack.shape[p] for p in perm)
        if permuted == tuple(shape):
            if swapped:
                n = len(perm)
                perm = perm[:n - 2] + [perm[n - 1], perm[n - 2]]
            return self._transpose(stack, perm)
        x = self._transpose(stack, perm)
        x = self.add(ops.reshape_op, [x], {"shape": tuple(shape)})
        if swapped:
            n = len(shape)
            x = self._transpose(x, list(range(n - 2)) + [n - 1, n - 2])
        return x

    def _transpose(self, x, perm):
        if list(perm) == list(range(len(perm))):
            return x
        return self.add(ops.transpose_op, [x], {"axes": tuple(perm)})

    def summed(self, stack_a, labels_a, stack_b, labels_b, shape, chunks=1):
        """``sum_t P_t`` of shape ``shape``, for the product ``P`` of the factors whose
        stacks are ``stack_a`` and ``stack_b`` (from ``bilinear``: their axes after the
        steps' are labelled ``labels``). With ``chunks`` above 1 the steps are cut into
        that many runs, each one product (matrices of a batch), added up after."""
        la, lb = [STEP] + labels_a, [STEP] + labels_b
        stack_a, stack_b = self._squeezed(stack_a, la), self._squeezed(stack_b, lb)
        if chunks > 1:
            la, lb = [CHUNK] + la, [CHUNK] + lb
            stack_a, stack_b = self._chunked(stack_a, chunks), self._chunked(stack_b, chunks)
        batch = [ax for ax in la if ax == CHUNK or isinstance(ax, int) and ax in lb]
        rows = [ax for ax in la if isinstance(ax, int) and ax not in lb]
        inner = [ax for ax in la if ax in (STEP, SUMMED)]
        cols = [ax for ax in lb if isinstance(ax, int) and ax not in la]
        nb = [_sizes(stack_a.shape, la, [ax]) for ax in batch]
        ni, nk = _sizes(stack_a.shape, la, rows), _sizes(stack_a.shape, la, inner)
        nj = _sizes(stack_b.shape, lb, cols)
        lead = [_sizes(stack_a.shape, la, batch)] if batch else []
        perm_a, swap_a = _layout(la, batch, rows, inner)
        a = self._matrix(stack_a, perm_a, lead + ([nk, ni] if swap_a else [ni, nk]), swap_a)
        perm_b, swap_b = _layout(lb, batch, inner, cols)
        b = self._matrix(stack_b, perm_b, lead + ([nj, nk] if swap_b else [nk, nj]), swap_b)
        c = self.add(ops.matmul_op, [a, b], {}, name="step_product")
        # (batch..., rows..., cols...) back to the result's order of axes
        got = batch + rows + cols
        sizes = nb + [_sizes(stack_a.shape, la, [ax]) for ax in rows] + \
            [_sizes(stack_b.shape, lb, [ax]) for ax in cols]
        if tuple(sizes) != tuple(c.shape):
            c = self.add(ops.reshape_op, [c], {"shape": tuple(sizes)})
        if chunks > 1:     # the runs' products added up
            c = self.add(ops.sum_op, [c], {"axis": (0,), "keepdims": False}, name="step_sum")
            got = got[1:]
        c = self._transpose(c, [got.index(d) for d in sorted(got)])
        if tuple(c.shape) != tuple(shape):
            c = self.add(ops.reshape_op, [c], {"shape": tuple(shape)})
        return c

    def _chunked(self, stack, chunks):
        """``stack`` with its steps cut into ``chunks`` runs: ``(chunks, steps / chunks, ...)``."""
        shape = (chunks, stack.shape[0] // chunks) + tuple(stack.shape[1:])
        return self.add(ops.reshape_op, [stack], {"shape": shape})

    def _squeezed(self, stack, labels):
        """``stack`` without its axes of size 1 (the step axis kept)."""
        if len(stack.shape) == len(labels):
            return stack
        shape = (stack.shape[0],) + tuple(s for s in stack.shape[1:] if s != 1)
        return self.add(ops.reshape_op, [stack], {"shape": shape})


def unpack(graph, node, index, source):
    """Result ``index`` of the multi-result ``node``."""
    return graph.add(unpack_op, [node], {"index": index}, node.avals[index],
                     name=f"{node.name}_{index}", source=source)
