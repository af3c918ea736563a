"""``en.config.numerics = "bitwise"`` on generated programs: eager mode, the optimized
graph under the numpy, C and numba lowerings, and the Dask chunked path give the same
bits, forward and gradient, in float32 and float64.

The programs are those of the graph-mode suite (``support/programs.py``: elementwise
ops, broadcasting, scalars, reductions, products, transposes) over arrays of 48 rows,
so that the chunked path can split them (three chunks of 16 rows) and that fused
regions form. A program the chunked path cannot split (one that mixes rows) is
checked without it; enough must be split for that check to mean something.
"""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import engine as en
from engine.errors import TracingError
from support.bitwise import LOWERINGS, assert_same_bits, numerics
from support.compilers import has_c_compiler, has_numba
from support.programs import flat, programs, run_program

da = pytest.importorskip("dask.array")

ROWS, CHUNK = 48, 16
SHAPES = [(ROWS, 20), (ROWS, 20), (20,), (ROWS, 1), (1, 20), ()]
SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


def _reshapes(shape):
    n = int(np.prod(shape))
    return [(n,)] + ([(ROWS, n // ROWS)] if n % ROWS == 0 and n else [])


def _available(lowering):
    if lowering == "numba":
        return has_numba()
    if lowering == "c":
        return has_c_compiler()
    return True


def _case(prog, dtype):
    shapes, _, outputs, seed = prog
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.0, 1.0, size=s).astype(dtype) for s in shapes]
    outs = flat(run_program(prog, *[en.tensor(a) for a in arrays]))
    cots = [rng.standard_normal(o.shape).astype(dtype) for o in outs]

    def forward(*xs):
        return run_program(prog, *xs)

    def loss(*xs):
        return sum(en.sum(o * c) for o, c in zip(flat(run_program(prog, *xs)), cots))
    return arrays, forward, en.grad(loss, argnums=tuple(range(len(arrays))))


def _chunked(arrays):
    """The arrays with ROWS rows as Dask arrays of CHUNK rows, the others as tensors."""
    return [en.tensor(da.from_array(a, chunks=(CHUNK,) + a.shape[1:]))
            if a.ndim and a.shape[0] == ROWS else en.tensor(a) for a in arrays]


def _check(prog, dtype, seen):
    arrays, forward, gradient = _case(prog, dtype)
    tensors = [en.tensor(a) for a in arrays]
    with numerics("bitwise", "numpy"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {"forward": forward(*tensors), "gradient": gradient(*tensors)}
        for lowering in LOWERINGS:
            if not _available(lowering):
                continue
            en.config.lowering = lowering
            for name, fn in (("forward", forward), ("gradient", gradient)):
                got = en.function(fn)(*tensors)
                assert_same_bits(got, want[name], f"{name} of {prog} under {lowering}")
        en.config.lowering = "auto"
        if any(a.ndim and a.shape[0] == ROWS for a in arrays):
            for name, fn in (("forward", forward), ("gradient", gradient)):
                try:
                    got = en.function(fn)(*_chunked(arrays))
                except TracingError:    # it mixes rows: no chunked form
                    continue
                assert_same_bits([np.asarray(t.numpy()) for t in flat(got)], want[name],
                                 f"{name} of {prog} chunked")
                seen["chunked"] += 1
    seen["programs"] += 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_generated_programs_give_eager_bits_everywhere(dtype):
    seen = {"programs": 0, "chunked": 0}

    @settings(max_examples=12, **SETTINGS)
    @given(programs(shape_choices=SHAPES, steps=(2, 7), reshapes=_reshapes))
    def check(prog):
        _check(prog, np.dtype(dtype), seen)

    check()
    assert seen["programs"] >= 12 and seen["chunked"] >= 6, seen


def test_a_sum_stays_out_of_fused_kernels_in_bitwise_mode():
    """What "bitwise" turns off shows in the graph: no sum in a fused kernel."""
    x = en.tensor(np.random.default_rng(0).standard_normal((400, 300)).astype(np.float32))

    def f(x):
        return en.sum(en.tanh(x) * 2.0)

    with numerics("fast", "numpy"):
        fast = en.function(f).graph_for(x)
    with numerics("bitwise", "numpy"):
        exact = en.function(f).graph_for(x)
    assert "sum" not in [n.op.name for n in fast.nodes]
    assert "sum" in [n.op.name for n in exact.nodes]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_autoencoder_step_gives_eager_bits(dtype):
    """The bench's autoencoder (``h @ w.T`` in the decoder: eager mode makes the gradient
    of a transposed matrix transposed, and "bitwise" traces the same products)."""
    from bench.workloads import autoencoder
    rng = np.random.default_rng(5)
    # The bench's layer sizes: there (h.T @ g).T and g.T @ h differ in float64's last bits.
    w = rng.uniform(-0.07, 0.07, (784, 196)).astype(dtype)
    b1, b2 = (rng.uniform(-0.1, 0.1, n).astype(dtype) for n in (196, 784))
    x = rng.random((100, 784)).astype(dtype)
    args = [en.tensor(a) for a in (w, b1, b2, x)]
    step = en.value_and_grad(autoencoder.engine_loss, argnums=(0, 1, 2))
    with numerics("bitwise"):
        want = step(*args)
        for lowering in LOWERINGS + ("auto",):
            if _available(lowering):
                en.config.lowering = lowering
                assert_same_bits(en.function(step)(*args), want, f"autoencoder, {lowering}")
