"""The back-end interface: tensors know their back end, ops never mix back ends,
data moves only when asked, graphs compile per back end.

The op-by-op proof that the strict back end runs everything is
``test_backend_strict.py``; here are the rules around it.
"""
import array_api_strict as xps
import numpy as np
import pytest

import engine as en

STRICT = "array_api_strict"


def strict(data, dtype=None):
    return en.tensor(data, dtype=dtype, backend=STRICT)


def test_a_tensor_knows_its_backend():
    assert en.tensor([1.0]).backend.name == "numpy"
    assert strict([1.0]).backend.name == STRICT
    assert (strict([1.0]) * 2.0).backend is en.backend.get(STRICT)


def test_tensor_of_a_foreign_array_picks_the_backend_that_owns_it():
    t = en.tensor(xps.asarray([1.0, 2.0], dtype=xps.float32))
    assert t.backend.name == STRICT
    assert (t.shape, t.dtype) == ((2,), en.float32)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_to_moves_data_explicitly_both_ways():
    x = np.array([[1.5, -2.0], [3.0, 4.0]])
    t = en.tensor(x).to(STRICT)
    assert t.backend.name == STRICT and isinstance(t._value, en.backend.get(STRICT).array_types)
    back = t.to("numpy")
    assert back.backend.name == "numpy" and type(back._value) is np.ndarray
    np.testing.assert_array_equal(back.numpy(), x)
    assert t.to(STRICT) is t


def test_tensor_from_numpy_data_is_a_copy_on_the_strict_backend():
    x = np.array([1.0, 2.0])
    t = strict(x)
    x[0] = 99.0
    assert t.numpy()[0] == 1.0


@pytest.mark.parametrize("make", [lambda: en.tensor([1.0, 2.0]), lambda: np.array([1.0, 2.0])],
                         ids=["numpy tensor", "numpy array"])
def test_an_op_mixing_backends_raises_naming_the_op_and_both_backends(make):
    s = strict([1.0, 2.0])
    for call in (lambda: en.add(s, make()), lambda: en.mul(make(), s)):
        with pytest.raises(en.BackendError) as err:
            call()
        msg = str(err.value)
        assert "'add'" in msg or "'mul'" in msg
        assert STRICT in msg and "numpy" in msg
        assert "test_backend.py" in msg   # the user's line


def test_a_function_mixing_backends_raises():
    f = en.function(lambda a, b: a + b)
    with pytest.raises(en.BackendError, match=f"numpy.*{STRICT}|{STRICT}.*numpy"):
        f(en.tensor([1.0]), strict([1.0]))


def test_a_graph_refuses_a_tensor_captured_from_another_backend():
    captured = en.tensor([1.0, 2.0])   # numpy
    f = en.function(lambda a: a + captured)
    with pytest.raises(en.BackendError, match="captured"):
        f(strict([1.0, 2.0]))
    np.testing.assert_array_equal(f(en.tensor([1.0, 1.0])).numpy(), [2.0, 3.0])


def test_python_scalars_stay_weakly_typed_on_strict():
    x = strict([1.0, 2.0], dtype="float32")
    for y in (x * 2.0, 2.0 * x, x + 1, x / 3, en.maximum(x, 1.5)):
        assert y.dtype == en.float32 and y.backend.name == STRICT
    i = strict([1, 2], dtype="int32")
    assert (i * 3).dtype == en.int32
    assert (i * 0.5).dtype == en.float64   # an int tensor and a float scalar: numpy's rule


def test_dtype_promotion_on_strict_follows_numpy():
    # The standard refuses int32 + float32; the engine's rule (numpy's) gives float64.
    y = strict([1, 2], dtype="int32") + strict([0.5, 0.5], dtype="float32")
    assert y.dtype == en.float64 and y.backend.name == STRICT
    np.testing.assert_array_equal(y.numpy(), [1.5, 2.5])


def test_creation_ops_follow_backend_use():
    with en.backend.use(STRICT):
        z = en.zeros((2, 3), dtype="float32")
        r = en.arange(4)
        t = en.tensor([1, 2])
    assert {z.backend.name, r.backend.name, t.backend.name} == {STRICT}
    assert en.zeros(2).backend.name == "numpy"


def test_function_traces_once_per_backend_and_binds_its_kernels():
    f = en.function(lambda a: en.tanh(a) * 2.0)
    x = np.array([0.1, -0.4])
    a, b = f(en.tensor(x)), f(strict(x))
    assert f.trace_count == 2
    assert (a.backend.name, b.backend.name) == ("numpy", STRICT)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-15)
    f(strict(x))
    assert f.trace_count == 2


def test_graphs_on_strict_skip_fusion_and_memory_planning():
    f = en.function(lambda a: en.sum(en.exp(a) * 2.0 + 1.0))
    report = f.optimization_report(strict(np.ones((8, 8)))).as_data()
    names = {r["name"] for r in report}
    assert "fusion" not in names and "memory_planning" not in names
    names = {r["name"] for r in f.optimization_report(en.ones((8, 8))).as_data()}
    assert {"fusion", "memory_planning"} <= names


def test_gradient_tape_on_strict():
    x = strict([0.5, -1.0, 2.0])
    with en.GradientTape() as tape:
        tape.watch(x)
        y = en.sum(en.sigmoid(x) * x)
    g = tape.gradient(y, x)
    assert g.backend.name == STRICT
    s = 1 / (1 + np.exp(-x.numpy()))
    np.testing.assert_allclose(g.numpy(), s + x.numpy() * s * (1 - s), rtol=1e-12)


def test_numpy_eager_dispatch_keeps_plain_tensors_and_the_numpy_kernel():
    # The numpy hot path is unchanged: results are plain Tensors of numpy arrays.
    y = en.tensor([1.0, 2.0]) + 1.0
    assert type(y) is en.Tensor and type(y._value) is np.ndarray
    assert en.REGISTRY["add"].kernels["numpy"] is en.REGISTRY["add"].impl is np.add


def test_kernel_report_lists_generic_and_override_kernels_per_backend():
    report = en.backend.kernel_report()
    print()
    print(en.backend.format_kernel_report(report))
    for name in ("numpy", STRICT):
        rows = report[name]
        assert sorted(rows["generic"] + rows["override"] + rows["missing"]) == sorted(en.REGISTRY)
    assert "add" in report["numpy"]["generic"] and "sum" in report["numpy"]["override"]
    assert report[STRICT]["missing"] == []


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(en.BackendError, match="unknown array back end 'nope'"):
        en.tensor([1.0], backend="nope")


def test_control_flow_in_graphs_on_strict():
    x = strict([1.0, -2.0])
    f = en.function(lambda x: en.cond(en.sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0))
    g = en.function(lambda x: en.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0),
                                            (en.tensor(0, backend=STRICT), x)))
    h = en.function(lambda x: en.scan(lambda c, xi: (c + xi, c * xi),
                                      en.tensor(0.0, backend=STRICT), x))
    y = f(x)
    i, v = g(x)
    c, ys = h(x)
    assert {t.backend.name for t in (y, i, v, c, ys)} == {STRICT}
    np.testing.assert_array_equal(y.numpy(), [0.0, -3.0])
    assert int(i) == 3
    np.testing.assert_array_equal(v.numpy(), [8.0, -16.0])
    assert float(c) == -1.0
    np.testing.assert_array_equal(ys.numpy(), [0.0, -2.0])


def test_a_numpy_variable_and_loaded_graphs_refuse_strict_tensors(tmp_path):
    v = en.Variable(np.zeros(2))
    with pytest.raises(en.BackendError, match="variable on back end numpy got a tensor on "
                                              "back end array_api_strict"):
        v.assign(strict([1.0, 2.0]))
    f = en.function(lambda x: en.tanh(x) * 2.0)
    en.save(f, str(tmp_path / "m"), en.zeros(2))
    g = en.load(str(tmp_path / "m"))
    with pytest.raises(en.BackendError, match="runs on numpy"):
        g(strict([1.0, 2.0]))
    np.testing.assert_allclose(g(en.tensor([0.5, 1.0])).numpy(), np.tanh([0.5, 1.0]) * 2.0)


def test_mixing_under_a_tape_raises_too():
    s, v = strict([1.0, 2.0]), en.Variable(np.ones(2))
    with en.GradientTape() as tape:
        tape.watch(s)
        for other in (v, np.ones(2), en.ones(2)):
            with pytest.raises(en.BackendError, match="'mul'"):
                en.mul(s, other)
        y = en.sum(s * [3.0, 4.0])    # Python data goes to the tensor's back end
    np.testing.assert_array_equal(tape.gradient(y, s).numpy(), [3.0, 4.0])
