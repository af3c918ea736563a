"""Graph mode against eager mode: every op, random programs, printing, linting, errors.

With ``optimize=False`` a traced function runs the same numpy kernels in the
same order as eager mode, so its results must be equal bit for bit (same
bytes, same dtype, same shape), for values and for gradients taken inside the
traced function. With the default optimizer the results must stay within
``rtol=1e-6`` (float64).
"""
import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import engine as en
from engine.op import REGISTRY
from op_db import ALL_ENTRIES, F32, F64, seeded_rng, to_engine
from support.programs import flat, program_case, programs, run_program


# ---- comparing results ------------------------------------------------------------
def assert_bitwise_equal(got, want, what):
    """Same dtype, same shape and the same bytes (NaN payloads and signed zeros included)."""
    got, want = flat(got), flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, eager gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, f"{what}: output {k} has dtype {g.dtype}, eager {w.dtype}"
        assert g.shape == w.shape, f"{what}: output {k} has shape {g.shape}, eager {w.shape}"
        if np.ascontiguousarray(g).tobytes() != np.ascontiguousarray(w).tobytes():
            diff = np.max(np.abs(g.astype(float) - w.astype(float))) if g.size else 0.0
            pytest.fail(f"{what}: output {k} differs from eager (max abs diff {diff:g})\n"
                        f"graph: {g!r}\neager: {w!r}", pytrace=False)


def assert_close(got, want, what, rtol=1e-6):
    """Optimized graphs: equal dtypes and shapes, values within ``rtol`` (float64)."""
    got, want = flat(got), flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, eager gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, f"{what}: output {k} has dtype {g.dtype}, eager {w.dtype}"
        assert g.shape == w.shape, f"{what}: output {k} has shape {g.shape}, eager {w.shape}"
        finite = np.abs(w[np.isfinite(w)]) if w.size else np.zeros(0)
        scale = 1.0 + (finite.max() if finite.size else 0.0)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12 * scale,
                                   err_msg=f"{what}: output {k}")


def traced(fn, optimize=False):
    return en.function(fn, optimize=optimize)


def float64_positions(args):
    return [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype == F64]


def check_op_call(fn, args, kwargs, what):
    """``fn(*args, **kwargs)`` traced (optimize=False) equals eager bit for bit.

    Array arguments (also inside lists) become graph inputs; Python scalars
    and kwargs are static, exactly as a user's call would make them.
    """
    tensors = [to_engine(a) for a in args]
    want = fn(*tensors, **kwargs)
    f = traced(lambda *a: fn(*a, **kwargs))
    assert_bitwise_equal(f(*tensors), want, f"{what} forward")
    f.graph_for(*tensors).lint()


def check_op_grads(fn, args, kwargs, what, rng, order=2):
    """Gradients taken inside the traced function equal eager ones bit for bit.

    Differentiates ``sum_k sum(out_k * c_k)`` with respect to every float64
    array argument, with ``en.grad`` (order 1) and nested ``en.grad`` (order 2).
    """
    idx = float64_positions(args)
    tensors = [to_engine(a) for a in args]
    outs = flat(fn(*tensors, **kwargs))
    # A complex result (an fft) enters through the real part of its product with a
    # complex cotangent, as in test_ops_grad.
    cots = [en.tensor(rng.standard_normal(o.shape)) if o.dtype in (F32, F64)
            else en.tensor(rng.standard_normal(o.shape) + 1j * rng.standard_normal(o.shape))
            if o.dtype.kind == "c" else None for o in outs]
    if not idx or all(c is None for c in cots):
        return

    def loss(*xs):
        a = list(tensors)
        for i, x in zip(idx, xs):
            a[i] = x
        total = 0.0
        for o, c in zip(flat(fn(*a, **kwargs)), cots):
            if c is not None:
                term = en.sum(o * en.cast(c, o.dtype))
                total = total + (en.real(term) if o.dtype.kind == "c" else term)
        return total

    argnums = tuple(range(len(idx)))
    first = en.grad(loss, argnums=argnums)
    dirs = [en.tensor(rng.standard_normal(tensors[i].shape)) for i in idx]

    def second(*xs):  # a Hessian-vector product: d/dx <grad loss(x), u>
        return en.grad(lambda *z: sum(en.sum(g * u) for g, u in zip(first(*z), dirs)),
                       argnums=argnums)(*xs)

    xs = [tensors[i] for i in idx]
    for name, g in [("gradient", first)] + ([("second order", second)] if order >= 2 else []):
        assert_bitwise_equal(traced(g)(*xs), g(*xs), f"{what} {name}")


# ---- every op in the op database -----------------------------------------------------
@pytest.mark.parametrize("info", ALL_ENTRIES, ids=[i.name for i in ALL_ENTRIES])
def test_op_forward_graph_equals_eager_bitwise(info):
    n = 0
    for dtype in info.dtypes:
        for sample in info.sample_inputs(dtype, seeded_rng(info.name, dtype, "graph")):
            check_op_call(info.op, sample.args, sample.kwargs, f"{info.name} {sample!r}")
            n += 1
    assert n, f"{info.name}: the op database gives no samples"


GRAD_ENTRIES = [i for i in ALL_ENTRIES if i.supports_grad]


@pytest.mark.parametrize("info", GRAD_ENTRIES, ids=[i.name for i in GRAD_ENTRIES])
def test_op_gradient_inside_graph_equals_eager_bitwise(info):
    rng = seeded_rng(info.name, "graph grad")
    n = 0
    for sample in info.samples_for_grad(rng):
        order = min(2, getattr(sample, "max_grad_order", 2))
        check_op_grads(info.op, sample.args, sample.kwargs, f"{info.name} {sample!r}", rng, order)
        n += 1
    assert n, f"{info.name}: the op database gives no gradient samples"


# Registered ops the op database may not (yet) hold: small samples of our own, so
# that every registered op runs in graph mode. Each case is (fn, args, grad?).
def _u(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


_POOL = dict(pool_size=(2, 2), strides=(2, 2), padding="valid")
EXTRA_CASES = {
    "arange": [(lambda: en.arange(5), (), False),
               (lambda: en.arange(0.0, 1.0, 0.25), (), False)],
    "eye": [(lambda: en.eye(3, 4, k=1), (), False)],
    "concat": [(lambda a, b: en.concat([a, b], axis=1), (_u(2, 3), _u(2, 2, seed=1)), True)],
    "stack": [(lambda a, b: en.stack([a, b], axis=1), (_u(2, 3), _u(2, 3, seed=1)), True)],
    "split": [(lambda a: en.split(a, 3, axis=1), (_u(2, 6),), True),
              (lambda a: en.split(a, [1, -1], axis=0), (_u(3, 2),), True)],
    "getitem": [(lambda a: a[:, ::-1][0], (_u(2, 3),), True),
                (lambda a, i: a[i], (_u(4, 3), np.array([0, 2, 2])), True)],
    "scatter_add": [(lambda a, u: en.scatter_add(a, [0, 0, 2], u), (_u(4), _u(3, seed=1)), True)],
    "conv2d": [(lambda x, w: en.conv2d(x, w, padding="same"), (_u(1, 5, 5, 2), _u(3, 3, 2, 3)),
                True),
               (lambda x, w: en.conv2d(x, w, stride=2), (_u(2, 5, 5, 1), _u(2, 2, 1, 2)), True)],
    "conv2d_backprop_input": [
        (lambda g, w: en.ops.conv2d_backprop_input(g, w, (5, 5), padding="same"),
         (_u(1, 5, 5, 3), _u(3, 3, 2, 3)), True)],
    "conv2d_backprop_filter": [
        (lambda x, g: en.ops.conv2d_backprop_filter(x, g, (3, 3), padding="same"),
         (_u(1, 5, 5, 2), _u(1, 5, 5, 3)), True)],
    "max_pool2d": [(lambda x: en.max_pool2d(x), (_u(2, 4, 4, 3),), True),
                   (lambda x: en.max_pool2d(x, 3, 2, "same"), (_u(1, 5, 5, 2),), True)],
    "max_pool2d_grad": [(lambda x, g: en.apply(en.ops.max_pool2d_grad_op, x, g, **_POOL),
                         (_u(1, 4, 4, 2), _u(1, 2, 2, 2, seed=1)), True)],
    "max_pool2d_gather": [(lambda x, u: en.apply(en.ops.max_pool2d_gather_op, x, u, **_POOL),
                           (_u(1, 4, 4, 2), _u(1, 4, 4, 2, seed=1)), True)],
    "random_normal": [(lambda k: en.random.normal_from_key(k, (3, 2), dtype="float64"),
                       (np.array([3, 1], dtype=np.int64),), False)],
    "random_uniform": [(lambda k: en.random.uniform_from_key(k, (4,), -1.0, 2.0),
                        (np.array([5, 0], dtype=np.int64),), False)],
}
_DB_NAMES = {info.name for info in ALL_ENTRIES}


def test_every_registered_op_runs_in_graph_mode_somewhere():
    missing = sorted(set(REGISTRY) - _DB_NAMES - set(EXTRA_CASES))
    assert not missing, (f"registered ops with neither an op database entry nor a graph-mode "
                         f"case in {__file__}: {missing}")


@pytest.mark.parametrize("name", sorted(EXTRA_CASES))
def test_extra_op_cases_graph_equals_eager_bitwise(name):
    rng = seeded_rng(name, "graph extra")
    for k, (fn, args, grad) in enumerate(EXTRA_CASES[name]):
        check_op_call(fn, args, {}, f"{name} case {k}")
        if grad:
            check_op_grads(fn, args, {}, f"{name} case {k}", rng)


# ---- random programs (support.programs draws them) --------------------------------------
PROGRAM_SETTINGS = settings(derandomize=True, max_examples=200, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow,
                                                   HealthCheck.data_too_large])


@PROGRAM_SETTINGS
@given(programs())
def test_random_programs_unoptimized_equal_eager_bitwise(prog):
    inputs, grad_fn = program_case(prog)
    f = traced(lambda *xs: run_program(prog, *xs))
    assert_bitwise_equal(f(*inputs), run_program(prog, *inputs), f"program {prog} forward")
    g = traced(grad_fn)
    assert_bitwise_equal(g(*inputs), grad_fn(*inputs), f"program {prog} gradient")
    f.graph_for(*inputs).lint()
    g.graph_for(*inputs).lint()


@PROGRAM_SETTINGS
@given(programs())
def test_random_programs_optimized_close_to_eager(prog):
    inputs, grad_fn = program_case(prog)
    f = traced(lambda *xs: run_program(prog, *xs), optimize=True)
    assert_close(f(*inputs), run_program(prog, *inputs), f"program {prog} forward")
    g = traced(grad_fn, optimize=True)
    assert_close(g(*inputs), grad_fn(*inputs), f"program {prog} gradient")
    f.graph_for(*inputs).lint()
    g.graph_for(*inputs).lint()


def test_optimized_graph_with_a_value_used_twice_by_one_op():
    """Found by the random programs: after CSE, ``add(t, t)`` inside a fused kernel."""
    c0, c1 = en.tensor(0.7), en.tensor(-0.2)

    def loss(x):
        a, b = x * x, x * x
        return en.sum(b * c0) + en.sum(a * c1)

    grad = en.grad(loss)
    for shape in [(), (5,), (3, 4)]:
        x = en.tensor(np.linspace(0.3, 1.1, int(np.prod(shape))).reshape(shape))
        got = traced(grad, optimize=True)(x)
        np.testing.assert_allclose(
            got.numpy(), 2 * x.numpy() * 0.5, rtol=1e-12,
            err_msg="optimized gradient of x*x*0.7 + x*x*(-0.2) is wrong: a fused kernel must "
                    "not reuse a scratch buffer that is still live when one op reads the same "
                    "value twice (free an input's slot once, not once per use)")


def test_program_generator_covers_every_kind():
    """The strategy really produces each instruction kind (guards against a silent narrowing)."""
    seen = set()

    @settings(derandomize=True, max_examples=200, deadline=None, database=None)
    @given(programs())
    def collect(prog):
        seen.update(kind for kind, *_ in prog[1])
    collect()
    assert seen == {"unary", "binary", "scalar", "reduce", "matmul", "reshape", "transpose"}


# ---- printing and linting ---------------------------------------------------------------
def _mlp(x, w, b):
    h = en.tanh(x @ w + b)
    return en.sum(en.maximum(h, 0.0) ** 2.0, axis=1)


MLP_ARGS = (en.tensor(_u(4, 3)), en.tensor(_u(3, 5, seed=1)), en.tensor(_u(5, seed=2)))


def test_text_and_dot_name_every_op():
    f = traced(_mlp)
    graph = f.graph_for(*MLP_ARGS)
    text, dot = str(graph), graph.to_dot()
    names = {n.op.name for n in graph.nodes}
    assert {"matmul", "add", "tanh", "maximum", "pow", "sum"} <= names
    for name in names - {"placeholder"}:   # inputs are listed in the text's header
        assert name in text and name in dot, name
    assert "placeholder" in dot
    body = [line for line in text.splitlines()[1:-2]]
    assert len(body) == len(graph) - len(graph.inputs), "one line per (non-input) node"
    assert text.startswith("graph _mlp(") and "return (" in text
    assert dot.startswith("digraph") and dot.count("->") >= len(graph) - len(graph.inputs)


def test_generated_source_runs_kernels_and_names_user_lines():
    f = traced(_mlp)
    source = f.source_for(*MLP_ARGS)
    compile(source, "<generated>", "exec")
    assert "def run__mlp(" in source and "k_np_dot(" in source and "return (" in source
    line = inspect.getsourcelines(_mlp)[1] + 1
    assert f"test_graph_mode.py:{line}" in source
    assert "del " in source, "values should be dropped after their last use"


def test_lint_passes_on_traced_graphs_including_control_flow_and_gradients():
    v = en.Variable(_u(5, seed=3), name="bias")

    def body(x, w, b):
        y = _mlp(x, w, b + v)
        y = en.cond(en.sum(y) > 0.0, lambda t: t * 2.0, lambda t: -t, y)
        _, ys = en.scan(lambda c, t: (c + t, c * t), en.tensor(0.0), y)
        v.assign_add(en.ones((5,)) * 0.0)
        return en.sum(ys)

    for opt in (False, True):
        f = traced(lambda x, w, b: (body(x, w, b), en.grad(body, argnums=(1, 2))(x, w, b)), opt)
        f(*MLP_ARGS)
        graph = f.graph_for(*MLP_ARGS)
        assert graph.lint() is True
        ops = {n.op.name for n in graph.nodes}
        assert {"cond", "scan", "read_variable", "assign_variable"} <= ops


def test_lint_catches_a_broken_graph():
    graph = traced(_mlp).graph_for(*MLP_ARGS)
    node = next(n for n in graph.nodes if n.op.name == "tanh")
    node.shape = (99,)
    with pytest.raises(en.EngineError, match="tanh"):
        graph.lint()


# ---- runtime errors and debugging --------------------------------------------------------
def _add_unknown(x, y):
    return x * 2.0 + y


def test_runtime_failure_names_node_op_and_user_line():
    spec = en.TensorSpec((None,), "float64")
    f = en.function(_add_unknown, input_signature=[spec, spec], optimize=False)
    line = inspect.getsourcelines(_add_unknown)[1] + 1
    assert float(en.sum(f(en.ones(2), en.ones(2)))) == 6.0
    with pytest.raises(Exception) as info:
        f(en.ones(2), en.ones(3))   # sizes only meet at run time
    msg = str(info.value)
    assert "node add" in msg and "op 'add'" in msg, msg
    assert f"test_graph_mode.py:{line}" in msg, msg
    assert "(2,)" in msg and "(3,)" in msg, "the kernel's own message is kept"


def test_runtime_failure_inside_py_function_names_its_node():
    def boom(t):
        raise RuntimeError("python side failed")

    f = en.function(lambda x: en.py_function(boom, [x], en.TensorSpec((2,), "float64")) + x)
    with pytest.raises(RuntimeError, match="python side failed") as info:
        f(en.ones(2))
    assert "py_function" in str(info.value) and "test_graph_mode.py" in str(info.value)


def test_run_functions_eagerly_runs_python_body_every_call(capsys):
    calls = []

    @en.function
    def f(x):
        calls.append(1)
        print("inside f")
        return x + 1.0

    x = en.tensor(1.0)
    f(x)
    f(x)
    assert len(calls) == 1 and capsys.readouterr().out.count("inside f") == 1
    with en.run_functions_eagerly():
        for _ in range(3):
            assert float(f(x)) == 2.0
    assert len(calls) == 4 and capsys.readouterr().out.count("inside f") == 3
    en.run_functions_eagerly(True)
    try:
        f(x)
        f(x)
    finally:
        en.run_functions_eagerly(False)
    assert len(calls) == 6 and capsys.readouterr().out.count("inside f") == 2
    f(x)
    assert len(calls) == 6 and f.trace_count == 1


def test_run_functions_eagerly_lets_if_on_tensors_run():
    @en.function
    def f(x):
        return x if float(en.sum(x)) > 0 else -x

    with en.run_functions_eagerly():
        assert float(f(en.tensor(-2.0))) == 2.0
    with pytest.raises(en.TracingError):
        f(en.tensor(-2.0))


# ---- functions calling functions -----------------------------------------------------------
def test_function_calling_function_inlines_and_matches_eager():
    inner = en.function(lambda x, w: en.tanh(x @ w), optimize=False)

    @en.function(optimize=False)
    def outer(x, w, b):
        return en.sum(inner(x, w) + b, axis=0) * inner(x, w)[0]

    x, w, b = MLP_ARGS
    want = en.sum(en.tanh(x @ w) + b, axis=0) * en.tanh(x @ w)[0]
    assert_bitwise_equal(outer(x, w, b), want, "nested functions")
    graph = outer.graph_for(x, w, b)
    assert sum(n.op.name == "matmul" for n in graph.nodes) == 2, "inner is inlined twice"
    assert inner.trace_count == 0, "an inner function called while tracing is inlined"
    assert_bitwise_equal(inner(x, w), en.tanh(x @ w), "inner called on its own")
    assert inner.trace_count == 1


# ---- what a function may return -------------------------------------------------------------
@pytest.mark.parametrize("scalar", [np.float32(0.5), np.int64(-3), np.bool_(True),
                                    np.uint8(7), np.complex64(1 - 2j)],
                         ids=lambda s: type(s).__name__)
def test_a_returned_numpy_scalar_comes_back_as_a_tensor_of_its_dtype(scalar):
    # Eagerly the function hands back the numpy scalar; a graph returns tensors, so it
    # comes back as a 0-d tensor with the scalar's own dtype (not promoted to float64).
    def fn(x):
        return x * 2.0, {"s": scalar}

    f = en.function(fn)
    for x in (1.5, -4.0):      # the second call runs the compiled graph again
        doubled, aux = f(en.tensor(x))
        eager = fn(en.tensor(x))[1]["s"]
        got = aux["s"].numpy()
        assert got.shape == () and got.dtype == np.asarray(eager).dtype
        assert got == eager
        assert float(doubled) == 2.0 * x
    assert f.trace_count == 1
    assert np.asarray(en.function(lambda x: scalar)(en.tensor(1.0)).numpy()).dtype == \
        np.asarray(scalar).dtype


def test_a_returned_numpy_string_is_refused_by_name():
    with pytest.raises(en.TracingError, match="returned str_"):
        en.function(lambda x: np.str_("a"))(en.tensor(1.0))
