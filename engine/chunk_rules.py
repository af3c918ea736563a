"""How ops act on data split into chunks of rows: the ``chunks`` rule kind.

A graph called with chunked data (a Dask array, split along its first axis)
runs in three parts (see ``engine.graph.chunked``): what does not depend on
the data, once; the part that acts row by row, once per chunk, ending in
partial results of the reductions over the rows; and the rest, on the
combined partial results. Each op says which part it can be in with a rule
``rule(axes, in_avals, out_aval, params) -> ChunkRule or None``:

* ``axes`` gives, per input, the position of the row (batch) axis in that
  input, or None when the input does not depend on the chunked data;
* the rule returns :func:`rows` (the result is chunked too, its row axis at a
  given position, and the params to change per chunk: shape params that hold
  the total row count), :func:`reduce` (the op sums, means or takes the
  extreme over the rows: each chunk computes a partial result, the partials
  combine), or None when the op needs all rows at once (a sort along the rows,
  a product of the rows with themselves).

Elementwise ops need no declared rule: the reader derives it from
``op.elementwise`` (:func:`elementwise`).

Example:
    >>> from engine.chunk_rules import elementwise
    >>> elementwise((0, None), [((8, 3), "f"), ((3,), "f")], ((8, 3), "f"), {}).axis
    0
"""


class ChunkRule:
    """What a rule found: ``kind`` "rows" (with ``axis`` and ``resize``: the
    ``(param, position)`` pairs that hold the row count) or "reduce" (with
    ``combine``: "sum", "max", "min" or "prod"; ``partial``: the op name each
    chunk runs instead, or None for the op itself; ``divide``: True for a
    mean, whose combined sum is divided by the number of elements reduced)."""

    __slots__ = ("kind", "axis", "resize", "combine", "partial", "divide")

    def __init__(self, kind, axis=None, resize=(), combine=None, partial=None, divide=False):
        self.kind, self.axis, self.resize = kind, axis, tuple(resize)
        self.combine, self.partial, self.divide = combine, partial, divide

    def __repr__(self):
        if self.kind == "rows":
            return f"rows(axis={self.axis}, resize={self.resize})"
        return f"reduce({self.combine}, partial={self.partial}, divide={self.divide})"


def rows(axis, resize=()):
    """The result holds rows too, its row axis at ``axis``."""
    return ChunkRule("rows", axis=axis, resize=resize)


def reduce(combine, partial=None, divide=False):
    """The op reduces over the rows; see :class:`ChunkRule`."""
    return ChunkRule("reduce", combine=combine, partial=partial, divide=divide)


def _batched(axes):
    return [i for i, a in enumerate(axes) if a is not None]


def elementwise(axes, in_avals, out_aval, params):
    """Broadcasting ops: the row axes of the chunked inputs must line up (counted
    from the right, as broadcasting aligns), and no other input may span the
    rows (a size-1 or missing axis there broadcasts)."""
    out_nd = len(out_aval[0])
    from_end = {len(in_avals[i][0]) - axes[i] for i in _batched(axes)}
    if len(from_end) != 1:
        return None
    (k,) = from_end
    for i, a in enumerate(axes):
        shape = in_avals[i][0]
        if a is None and len(shape) >= k and shape[len(shape) - k] != 1:
            return None
    return rows(out_nd - k)


def reduction(combine, partial=None, divide=False):
    """A reduction with ``axis``/``keepdims`` params: over the rows it reduces
    (``combine`` the partial results), over other axes the rows stay."""
    def rule(axes, in_avals, out_aval, params):
        (b,) = axes
        nd = len(in_avals[0][0])
        axis = params.get("axis")
        reduced = range(nd) if axis is None else \
            [a % nd for a in ((axis,) if isinstance(axis, int) else axis)]
        if b in reduced:
            return reduce(combine, partial, divide) if combine else None
        if params.get("keepdims"):
            return rows(b)
        return rows(b - sum(1 for a in reduced if a < b))
    return rule


def matmul(axes, in_avals, out_aval, params):
    """``a @ b``: rows of ``a`` (or columns of ``b``) give rows of the product;
    a product over the row axis of both (``x.T @ g``) is a sum over the rows."""
    (sa, _), (sb, _) = in_avals
    ba, bb = axes
    out_nd = len(out_aval[0])
    ka = len(sa) - 1                          # the contracted axis of a
    kb = 0 if len(sb) == 1 else len(sb) - 2   # ... and of b
    if ba is not None and bb is not None:
        if ba == ka and bb == kb:
            return reduce("sum")
        lead_a, lead_b = len(sa) - 2, len(sb) - 2     # stacked products over the rows
        if len(sa) > 2 and len(sb) > 2 and ba < lead_a and bb < lead_b and \
                lead_a - ba == lead_b - bb:
            return rows(out_nd - 2 - (lead_a - ba))
        return None
    if ba is not None:
        if len(sa) >= 2 and ba == len(sa) - 2:
            return rows(out_nd - (1 if len(sb) == 1 else 2))
        if len(sa) > 2 and ba < len(sa) - 2:
            return rows(ba + out_nd - len(sa) + (1 if len(sb) == 1 else 0))
        return None
    if len(sb) >= 2 and bb == len(sb) - 1:
        return rows(out_nd - 1)
    return None


def transpose(axes, in_avals, out_aval, params):
    """The row axis goes where the permutation takes it."""
    (b,) = axes
    perm = params.get("axes")
    nd = len(in_avals[0][0])
    return rows(nd - 1 - b if perm is None else list(perm).index(b))


def _prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def reshape(axes, in_avals, out_aval, params):
    """A reshape that keeps the row axis whole (the axes before it, and after
    it, may regroup among themselves)."""
    (b,) = axes
    shape_in, shape_out = in_avals[0][0], out_aval[0]
    before = _prod(shape_in[:b])
    for p, n in enumerate(shape_out):
        if n == shape_in[b] and _prod(shape_out[:p]) == before:
            target = params.get("shape")
            resize = [("shape", p)] if target is not None and target[p] != -1 else []
            return rows(p, resize)
    return None


def broadcast_to(axes, in_avals, out_aval, params):
    """Broadcasting a chunked input: its row axis, moved right by the new axes."""
    (b,) = axes
    p = b + len(out_aval[0]) - len(in_avals[0][0])
    return rows(p, [("shape", p)])


def broadcast_like(axes, in_avals, out_aval, params):
    """``broadcast_like(x, like)``: the rows of whichever input is chunked."""
    bx, bl = axes
    out_nd = len(out_aval[0])
    if bl is not None:
        return rows(bl + out_nd - len(in_avals[1][0]))
    return rows(bx + out_nd - len(in_avals[0][0]))


def _same_rows(axes):
    """The one row axis all inputs share, or None (an input without the rows, or
    inputs with the rows at different places, cannot be joined chunk by chunk)."""
    if any(a is None for a in axes) or len(set(axes)) != 1:
        return None
    return axes[0]


def concat(axes, in_avals, out_aval, params):
    """Joining along an axis other than the rows."""
    b = _same_rows(axes)
    nd = len(out_aval[0])
    if b is None or params["axis"] % nd == b:
        return None
    return rows(b)


def stack(axes, in_avals, out_aval, params):
    """Stacking along a new axis: the row axis moves right when the new one is before it."""
    b = _same_rows(axes)
    if b is None:
        return None
    return rows(b + (1 if params["axis"] % len(out_aval[0]) <= b else 0))


def squeeze(axes, in_avals, out_aval, params):
    """Removing axes of length one: the row axis moves left past those removed before it."""
    (b,) = axes
    shape = in_avals[0][0]
    axis = params.get("axis")
    removed = [i for i, n in enumerate(shape) if n == 1] if axis is None else \
        [a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)]
    if b in removed:
        return None
    return rows(b - sum(1 for a in removed if a < b))


def expand_dims(axes, in_avals, out_aval, params):
    """New axes of length one: the row axis moves right past those inserted before it."""
    (b,) = axes
    out_nd = len(out_aval[0])
    axis = params["axis"]
    new = sorted(a % out_nd for a in ((axis,) if isinstance(axis, int) else axis))
    pos = b
    for a in new:
        if a <= pos:
            pos += 1
    return rows(pos)


def getitem(axes, in_avals, out_aval, params):
    """Basic indexing that keeps every row (a full slice, or no index, on the row axis)."""
    b = axes[0]
    if b is None or any(a is not None for a in axes[1:]):
        return None
    spec = params["spec"]
    nd = len(in_avals[0][0])
    n = in_avals[0][0][b]
    used = sum(1 for it in spec if it[0] in ("int", "slice", "array"))
    if any(it[0] == "array" for it in spec):
        return None
    items = []
    for it in spec:
        if it[0] == "ellipsis":
            items.extend([("slice", None, None, None)] * (nd - used))
        else:
            items.append(it)
    axis_in = axis_out = 0
    for it in items:
        if it[0] == "newaxis":
            axis_out += 1
            continue
        if axis_in == b:
            if it[0] != "slice" or it[3] not in (None, 1) or it[1] not in (None, 0) \
                    or (it[2] is not None and it[2] < n):
                return None
            return rows(axis_out)
        axis_in += 1
        if it[0] == "slice":
            axis_out += 1
    return rows(axis_out + (b - axis_in))


def leading(axes, in_avals, out_aval, params):
    """Ops that treat axis 0 as independent samples (convolution, pooling): rows stay
    at axis 0; every other input must not depend on the data."""
    if axes[0] != 0 or any(a is not None for a in axes[1:]):
        return None
    return rows(0)


def leading_reduce(axes, in_avals, out_aval, params):
    """A product of two sample-major inputs summed over the samples (a filter gradient)."""
    if all(a == 0 for a in axes):
        return reduce("sum")
    return None
