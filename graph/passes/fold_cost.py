"""What constant folding may spend on one graph, and what folding one node costs.

Folding runs op kernels while compiling (at trace time, and in ``en.load`` on
a file's graph), so unbounded it lets a small program or file ask for any
amount of work: a 114 KB file of 1,000 chained 362x362 matmuls (47M
multiply-adds each) took 3.9 s to load, and a 1 KB convolution of two
``full``\\ s took 924 MiB of im2col patches. Each graph therefore gets one
budget for all its folding: ``en.config.fold_work_limit`` element operations
(a multiply-add counts one) and ``en.config.fold_bytes_limit`` bytes of results
and kernel temporaries, summed over the folded nodes. A node that does not fit
stays in the graph and runs with it, so the results are the same either way.

:func:`fold_cost` estimates a node's cost from its input and result types
(before running anything): element count in plus out for most ops, and the
contraction for the ops whose work grows faster (matmul, convolutions and
pooling windows), with their im2col patches and padded copies as temporaries.

Example:
    >>> import engine as en
    >>> from engine.graph.passes.fold_cost import fold_cost
    >>> f = en.function(lambda: en.ones((30, 40)) @ en.ones((40, 50)))
    >>> mm = next(n for n in f.get_concrete_function().unoptimized_graph.nodes
    ...           if n.op.name == "matmul")
    >>> fold_cost(mm)      # 30*50 results of 40 multiply-adds, plus reading and writing
    (64700, 12000)
"""
import math
import weakref

import numpy as np

from engine.config import config


def _count(shape):
    return math.prod(shape)


def _itemsize(node):
    return np.dtype(node.dtype).itemsize


def _matmul(node, ins, out):
    k = node.inputs[0].shape[-1]
    return out * k, 0


def _conv_patches(x_shape, khw, params):
    """Elements of the padded input and of the (N*OH*OW, KH*KW*C) patch matrix."""
    n, h, w, c = x_shape
    kh, kw = khw
    sh, sw = params.get("strides", (1, 1))
    padded = n * (h + kh) * (w + kw) * c
    return padded, n * ((h + kh) // sh + 1) * ((w + kw) // sw + 1) * kh * kw * c


def _conv2d(node, ins, out):
    x, w = (i.shape for i in node.inputs)
    padded, patches = _conv_patches(x, w[:2], node.params)
    return patches * w[3], padded + patches


def _conv2d_backprop_input(node, ins, out):
    g, w = (i.shape for i in node.inputs)
    kh, kw, c, o = w
    # Stride 1 correlates the cotangent (padded to the input's size) with flipped
    # filters; larger strides scatter (N*OH*OW, KH*KW*C) columns: count the larger.
    padded, patches = _conv_patches(node.shape[:3] + (o,), (kh, kw), {})
    cols = _count(g[:3]) * kh * kw * c
    return max(patches, cols) * max(c, o), padded + max(patches, cols) + out


def _conv2d_backprop_filter(node, ins, out):
    x, g = (i.shape for i in node.inputs)
    padded, patches = _conv_patches(x, node.params["kernel_hw"], node.params)
    return patches * g[3], padded + patches


def _pool(node, ins, out):
    ph, pw = node.params["pool_size"]
    padded, _ = _conv_patches(node.inputs[0].shape, (ph, pw), {})
    windows = max(ins + [out]) * ph * pw     # every window is read (argmax copies them)
    return windows, padded + windows


def _einsum(node, ins, out):
    # One multiply-add per combination of the labels' values (exact for two operands).
    sizes: dict[str, int] = {}     # label -> its length
    for word, i in zip(node.params["subscripts"].split("->")[0].split(","), node.inputs):
        sizes.update(zip(word, i.shape))
    return _count(sizes.values()), 0


def _factorization(node, ins, out):
    # LU, QR, SVD and eigen-solvers: a few m * n * min(m, n) per matrix, and a copy.
    shape = node.inputs[0].shape
    m, n = shape[-2:]
    return 4 * _count(shape) * min(m, n), _count(shape)


# What an op's ``fold_cost`` rule may name, for ops whose work grows faster than
# their inputs and results: (work, temporary elements) beyond reading the inputs and
# writing the result.
PATTERNS = {"contraction": _matmul, "im2col": _conv2d,
            "im2col_input_grad": _conv2d_backprop_input,
            "im2col_filter_grad": _conv2d_backprop_filter, "windows": _pool,
            "einsum": _einsum, "factorization": _factorization}


def fold_cost(node):
    """``(element operations, bytes)`` that folding ``node`` costs: its work, and its
    result plus the temporaries its kernel allocates (all shapes static)."""
    ins = [_count(i.shape) for i in node.inputs]
    out = _count(node.shape)
    work, temp = sum(ins) + out, 0
    rule = PATTERNS.get(node.op.rules.get("fold_cost"))
    if rule is not None:
        extra, temp = rule(node, ins, out)
        work += extra
    # Temporaries at the widest dtype involved (pooling's argmax indices: int64).
    width = max([_itemsize(node), 8 if rule is _pool else 1] +
                [_itemsize(i) for i in node.inputs])
    return work, out * _itemsize(node) + temp * width


class FoldBudget:
    """What folding may still spend on one graph (shared by every run of the pass on it)."""

    _budgets: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __init__(self):
        self.work = config.fold_work_limit
        self.bytes = config.fold_bytes_limit
        self.refused = 0

    @classmethod
    def of(cls, graph):
        budget = cls._budgets.get(graph)
        if budget is None:
            budget = cls._budgets[graph] = cls()
        return budget

    def take(self, node):
        """Charge folding ``node`` to the budget; False (nothing charged) if it does not fit."""
        work, nbytes = fold_cost(node)
        if work > self.work or nbytes > self.bytes:
            self.refused += 1
            return False
        self.work -= work
        self.bytes -= nbytes
        return True
