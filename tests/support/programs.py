"""Random straight-line programs of engine ops, drawn with hypothesis, for the suites that
compare graph mode, the optimizer and the compiled lowerings with eager mode.

Example:
    >>> import engine as en
    >>> prog = ([(2,)], [("unary", "neg", (0,), {})], (1,), 0)
    >>> run_program(prog, en.tensor([1.0, -2.0]))[0].numpy().tolist()
    [-1.0, 2.0]
"""
import numpy as np
from hypothesis import strategies as st

import engine as en


def flat(value):
    """Outputs as a flat list of tensors (ops may return tuples or lists)."""
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flat(v)]
    return [value]


SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1)]


UNARY = ["neg", "tanh", "sin", "cos", "sigmoid", "exp", "square", "abs", "relu"]


BINARY = ["add", "sub", "mul", "maximum", "minimum", "div"]


REDUCE = ["sum", "mean", "max", "min"]


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _matmul_shape(a, b):
    if not a or not b:
        return None
    try:
        return np.matmul(np.empty(a), np.empty(b)).shape
    except ValueError:
        return None


def _reshapes(shape):
    n = int(np.prod(shape))
    out = [(n,)] + [(d, n // d) for d in range(1, n + 1) if n % d == 0]
    return out + [()] if n == 1 else out


SMALL_KINDS = ["unary", "binary", "binary", "scalar", "reduce", "matmul", "reshape", "transpose"]


@st.composite
def programs(draw, shape_choices=None, kinds=None, steps=(2, 10), reshapes=None):
    """A random straight-line program: ``(input shapes, instructions, outputs, seed)``.

    Each instruction is ``(kind, name, operand indices, params)`` and appends
    one value; shapes are tracked so every instruction is valid. The shapes to
    draw inputs from, the mix of instruction kinds, the number of steps and the
    reshape targets can be changed (test_passes_programs draws bigger arrays).
    """
    shape_choices = SHAPES if shape_choices is None else shape_choices
    kinds = SMALL_KINDS if kinds is None else kinds
    reshapes = _reshapes if reshapes is None else reshapes
    shapes = [draw(st.sampled_from(shape_choices)) for _ in range(draw(st.integers(1, 3)))]
    n_inputs = len(shapes)
    instrs = []
    for _ in range(draw(st.integers(*steps))):
        kind = draw(st.sampled_from(kinds))
        i = draw(st.integers(0, len(shapes) - 1))
        s = shapes[i]
        if kind == "binary":
            j = draw(st.sampled_from([j for j, t in enumerate(shapes) if _broadcastable(s, t)]))
            instr, out = ("binary", draw(st.sampled_from(BINARY)), (i, j), {}), \
                np.broadcast_shapes(s, shapes[j])
        elif kind == "matmul" and any(_matmul_shape(a, b) is not None
                                      for a in shapes for b in shapes):
            pairs = [(a, b) for a in range(len(shapes)) for b in range(len(shapes))
                     if _matmul_shape(shapes[a], shapes[b]) is not None]
            a, b = draw(st.sampled_from(pairs))
            instr, out = ("matmul", "matmul", (a, b), {}), _matmul_shape(shapes[a], shapes[b])
        elif kind == "reduce":
            axis = draw(st.sampled_from([None] + list(range(-len(s), len(s)))))
            keep = draw(st.booleans())
            out = np.sum(np.empty(s), axis=axis, keepdims=keep).shape
            instr = ("reduce", draw(st.sampled_from(REDUCE)), (i,), dict(axis=axis, keepdims=keep))
        elif kind == "reshape":
            out = draw(st.sampled_from(reshapes(s)))
            instr = ("reshape", "reshape", (i,), dict(shape=out))
        elif kind == "transpose":
            instr, out = ("transpose", "transpose", (i,), {}), tuple(reversed(s))
        elif kind == "scalar":
            c = draw(st.sampled_from([0.5, -1.25, 2.0, 3.0]))
            instr, out = ("scalar", draw(st.sampled_from(["add", "mul", "rsub"])), (i,),
                          dict(c=c)), s
        else:
            instr, out = ("unary", draw(st.sampled_from(UNARY)), (i,), {}), s
        instrs.append(instr)
        shapes.append(tuple(out))
    last = len(shapes) - 1
    extra = draw(st.integers(0, last))
    outputs = (last,) if extra in (last,) else (last, extra)
    return shapes[:n_inputs], instrs, outputs, draw(st.integers(0, 2 ** 16))


def run_program(prog, *inputs):
    """Run a program from :func:`programs` with engine ops (any mode)."""
    _, instrs, outputs, _ = prog
    vals = list(inputs)
    for kind, name, operands, params in instrs:
        args = [vals[k] for k in operands]
        if kind in ("unary", "binary", "matmul"):
            v = getattr(en, name)(*args)
        elif kind == "reduce":
            v = getattr(en, name)(args[0], **params)
        elif kind == "reshape":
            v = en.reshape(args[0], params["shape"])
        elif kind == "transpose":
            v = en.transpose(args[0])
        elif name == "add":
            v = args[0] + params["c"]
        elif name == "mul":
            v = args[0] * params["c"]
        else:
            v = params["c"] - args[0]
        vals.append(v)
    return tuple(vals[k] for k in outputs)


def program_case(prog):
    """Inputs, and a scalar loss of the program for gradients."""
    shapes, _, outputs, seed = prog
    rng = np.random.default_rng(seed)
    inputs = [en.tensor(rng.uniform(-1.0, 1.0, size=s)) for s in shapes]
    cots = [en.tensor(rng.standard_normal(o.shape)) for o in run_program(prog, *inputs)]

    def loss(*xs):
        return sum(en.sum(o * c) for o, c in zip(run_program(prog, *xs), cots))
    return inputs, en.grad(loss, argnums=tuple(range(len(inputs))))


BIG_SHAPES = [(200, 300), (200, 300), (300,), (200, 1), (1, 300), (), (300, 200)]


def big_reshapes(shape):
    n = int(np.prod(shape))
    return [(n,), (n // 300, 300) if n % 300 == 0 else (n,), (300, n // 300) if n % 300 == 0
            else (n,), (2, n // 2) if n % 2 == 0 else (n,)]
