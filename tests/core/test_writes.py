"""Writable tensors (engine/writes.py) against numpy: ``x[idx] = v``, in-place operators,
views, read-only memory, gradients through writes, writes while tracing and under
transformations, and the aliasing cases where a write must not reach another tensor."""
import numpy as np
import pytest

import engine as en
import engine.array_api as xp
from support.finite_diff import numeric_grad


INDEXES = [1, -1, (slice(1, 3),), (slice(None), 2), (slice(None, None, -2), 0), (Ellipsis, 1),
           ([0, 3, 1],), ((np.array([1, 2]), np.array([0, 2]))), (np.array([True, False, True,
                                                                            False]),),
           (None, 2), ()]


@pytest.mark.parametrize("index", INDEXES, ids=repr)
def test_setitem_matches_numpy(index):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3))
    t = en.tensor(a)
    values = rng.standard_normal(np.shape(a[index]))
    a[index] = values
    t[index] = en.tensor(values)
    np.testing.assert_array_equal(t.numpy(), a)
    a[index] = 7
    t[index] = 7
    np.testing.assert_array_equal(t.numpy(), a)


def test_setitem_casts_as_numpy():
    a, t = np.arange(4), en.arange(4)
    a[1] = 2.7
    t[1] = 2.7
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("name", ["+=", "-=", "*=", "/=", "//=", "%=", "**="])
def test_in_place_operators_update_the_object(name):
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    other = np.array([0.5, 2.0])
    t = en.tensor(a)
    same = t
    code = f"x {name} y"
    exec(code, {}, {"x": a, "y": other})
    scope = {"x": t, "y": en.tensor(other)}
    exec(code, {}, scope)
    assert scope["x"] is same
    np.testing.assert_allclose(same.numpy(), a)


def test_loop_over_parameters_trains_them():
    params = [en.ones(2), en.ones((2, 2))]
    grads = [en.full((2,), 0.5), en.full((2, 2), 2.0)]
    for p, g in zip(params, grads):
        p -= 0.1 * g
    np.testing.assert_allclose(params[0].numpy(), [0.95, 0.95])
    np.testing.assert_allclose(params[1].numpy(), np.full((2, 2), 0.8))


def test_in_place_refuses_what_numpy_refuses():
    x = en.arange(3)
    with pytest.raises(en.DTypeError):
        x += 0.5                                     # int64 += float: same_kind casting
    with pytest.raises(en.ShapeError):
        x += en.ones((2, 3), dtype="int64")          # the result would have another shape
    np.testing.assert_array_equal(x.numpy(), [0, 1, 2])     # nothing half-written


def test_views_share_writes_as_numpy():
    a = np.arange(12.0).reshape(3, 4)
    t = en.tensor(a)
    ta, va = t[1], a[1]
    tb, vb = t.T, a.T
    tc, vc = en.reshape(t, (12,)), a.reshape(12)
    ta[0] = -1.0
    va[0] = -1.0
    tb[3, 2] = -2.0
    vb[3, 2] = -2.0
    tc[5] += 10.0
    vc[5] += 10.0
    t[0] *= 3.0
    a[0] *= 3.0
    for got, want in [(t, a), (ta, va), (tb, vb), (tc, vc)]:
        np.testing.assert_array_equal(got.numpy(), want)


def test_results_numpy_copies_do_not_share_writes():
    t = en.arange(4.0)
    results = [t.astype("float64"), +t, t * 1.0, xp.asarray(t, copy=True), t.flatten(),
               en.tensor(t.numpy())]
    for r in results:
        r[0] = 100.0
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0, 3.0])


def test_no_op_result_shares_memory_that_numpy_keeps_apart():
    """Every op result either is a view numpy would also make, or does not share memory
    with its inputs: a write through it reaches exactly what numpy's would."""
    t = en.tensor(np.arange(6.0).reshape(2, 3))
    for fn in [lambda x: en.squeeze(x), lambda x: en.broadcast_to(x, (2, 3)),
               lambda x: en.where(True, x, x), lambda x: en.abs(x), lambda x: en.real(x),
               lambda x: en.reshape(x, (2, 3)), lambda x: en.concat([x]), en.positive]:
        r = fn(t)
        shared = np.shares_memory(r.numpy(), t.numpy())
        if shared:
            assert getattr(r, "_alias", None) is t, fn


def test_a_broadcast_view_is_copied_on_write_and_its_base_kept():
    base = en.tensor([1.0, 2.0])
    t = en.broadcast_to(base, (3, 2))
    t[0, 0] = 5.0          # numpy refuses; the tensor writes its own copy
    np.testing.assert_array_equal(t.numpy(), [[5.0, 2.0], [1.0, 2.0], [1.0, 2.0]])
    np.testing.assert_array_equal(base.numpy(), [1.0, 2.0])


def test_zero_d_boolean_items_beside_others_place_the_axis_as_numpy():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = en.tensor(a)
    for index in [(Ellipsis, False), (0, Ellipsis, False), (0, slice(None), False),
                  (False, 0), (slice(None), 0, False), (slice(None), True, 1, slice(None)),
                  (1, slice(None), True), (None, False), (0, True)]:
        np.testing.assert_array_equal(t[index].numpy(), a[index], err_msg=repr(index))
        assert t[index].shape == a[index].shape


def test_format_of_a_zero_d_tensor():
    assert f"{en.tensor(2.0 / 3.0):.3g}" == f"{2.0 / 3.0:.3g}"
    assert f"{en.tensor([1, 2])}" == str(en.tensor([1, 2]))
    with pytest.raises(TypeError):
        f"{en.tensor([1.0, 2.0]):.3g}"


def test_variable_value_is_copied_on_write():
    v = en.Variable([1.0, 2.0])
    r = v.value()
    r[0] = 9.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(r.numpy(), [9.0, 2.0])


def test_tensor_assigned_to_a_variable_keeps_the_variable_safe():
    t = en.tensor([1.0, 2.0])
    v = en.Variable([0.0, 0.0])
    v.assign(t)
    t[0] = 5.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    w = en.tensor([1.0, 2.0])
    view = w[:1]
    v.assign(w)           # w has a view: the variable copies
    view[0] = 7.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_zero_d_boolean_masks():
    a = np.arange(6.0).reshape(2, 3)
    t = en.tensor(a)
    for mask in [True, False, np.True_, np.array(False)]:
        index = en.tensor(mask) if isinstance(mask, np.ndarray) else mask
        assert t[index].shape == a[mask].shape
        np.testing.assert_array_equal(t[index].numpy(), a[mask])
    t[en.tensor(True)] = 1.0
    a[np.array(True)] = 1.0
    t[False] = 5.0
    np.testing.assert_array_equal(t.numpy(), a)


def test_bad_mask_is_an_index_error_too():
    t = en.zeros((3, 2))
    with pytest.raises(IndexError):
        t[np.array([True, False])]
    with pytest.raises(IndexError):
        t[np.array([True, False])] = 1.0


def test_numpy_view_is_writable_and_shares_memory():
    t = en.zeros(3)
    a = np.asarray(t)
    a[1] = 4.0
    np.testing.assert_array_equal(t.numpy(), [0.0, 4.0, 0.0])
    assert not np.asarray(en.Variable([1.0]).value()).flags.writeable


# ---- gradients -------------------------------------------------------------------------------
def _write_loop(x):
    out = en.zeros(3)
    for i in range(3):
        out[i] = x[i] ** 2
    out[1:] *= x[:2]
    return en.sum(out * out)


def _overwrite_after_use(x):
    y = x * 1.0
    z = y * y              # the tape keeps y's old value for this product
    y[0] = 10.0
    return en.sum(z) + en.sum(y * y)


@pytest.mark.parametrize("fn", [_write_loop, _overwrite_after_use])
def test_gradients_flow_through_writes(fn):
    x = np.array([0.5, -1.5, 2.0])
    want = numeric_grad(fn, (x,))
    np.testing.assert_allclose(en.grad(fn)(en.tensor(x)).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(en.function(en.grad(fn))(en.tensor(x)).numpy(), want, rtol=1e-6)


def test_a_write_that_changes_a_tensor_a_tape_holds_is_refused():
    x = en.tensor([1.0, 2.0, 3.0])
    with en.GradientTape() as tape:
        tape.watch(x)
        y = x * 1.0
        view = y[1:]
        s = en.sum(view * view)
        with pytest.raises(TypeError, match="GradientTape"):
            y[2] = 0.0
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])      # nothing written
    np.testing.assert_allclose(tape.gradient(s, x).numpy(), [0.0, 4.0, 6.0])


# ---- tracing and transformations ---------------------------------------------------------
def _views_and_writes(x):
    y = x * 1.0
    r = y[1:]
    r[0] = r[0] * 3.0
    y *= y
    m = en.reshape(y, (3, 1))
    m[2, 0] = -1.0
    return en.sum(y * r[1]) + en.sum(m)


def test_traced_writes_match_eager():
    x = en.tensor([1.0, 2.0, 3.0])
    want = float(_views_and_writes(x))
    assert float(en.function(_views_and_writes)(x)) == pytest.approx(want)
    grad = numeric_grad(_views_and_writes, (x.numpy(),))
    np.testing.assert_allclose(en.function(en.grad(_views_and_writes))(x).numpy(), grad,
                               rtol=1e-6)


def test_writes_under_jvp_and_vmap():
    x = np.array([1.0, 2.0, 3.0])
    _, tangent = en.jvp(_views_and_writes, (en.tensor(x),), (en.ones(3),))
    want = numeric_grad(_views_and_writes, (x,)).sum()
    assert float(tangent) == pytest.approx(want, rel=1e-6)
    batch = np.arange(6.0).reshape(2, 3)
    got = en.vmap(_views_and_writes)(en.tensor(batch)).numpy()
    np.testing.assert_allclose(got, [float(_views_and_writes(en.tensor(r))) for r in batch])


def test_captured_tensor_written_after_tracing_is_not_stale():
    c = en.tensor([1.0, 2.0, 3.0])
    f = en.function(lambda x: x * c)
    np.testing.assert_array_equal(f(en.ones(3)).numpy(), [1.0, 2.0, 3.0])
    c[0] = 10.0
    np.testing.assert_array_equal(f(en.ones(3)).numpy(), [10.0, 2.0, 3.0])
    c += 1.0
    np.testing.assert_array_equal(f(en.ones(3)).numpy(), [11.0, 3.0, 4.0])


def test_graph_constant_result_is_not_written_by_its_caller():
    c = en.tensor([1.0, 2.0])
    g = en.function(lambda: c * 2.0)       # folded into one constant of the graph
    y = g()
    y[0] = 100.0
    np.testing.assert_array_equal(g().numpy(), [2.0, 4.0])


def test_a_function_that_writes_its_arguments_writes_the_callers_tensors():
    def step(w, x, log):
        grad = 2.0 * (w * x - 1.0) * x
        w -= 0.1 * grad
        log[0] = en.sum((w * x - 1.0) ** 2)
        return w * 2.0

    compiled = en.function(step)
    x = en.tensor([0.5, 2.0])
    w_eager, w_graph = en.tensor([1.0, -1.0]), en.tensor([1.0, -1.0])
    log_eager, log_graph = en.zeros(2), en.zeros(2)
    for _ in range(3):
        want = step(w_eager, x, log_eager)
        got = compiled(w_graph, x, log_graph)
        np.testing.assert_allclose(got.numpy(), want.numpy())
        np.testing.assert_allclose(w_graph.numpy(), w_eager.numpy())
        np.testing.assert_allclose(log_graph.numpy(), log_eager.numpy())
    assert compiled.trace_count == 1


def test_gradient_through_a_function_that_writes_its_argument():
    @en.function
    def scale_first(y):
        y[0] = y[0] * 3.0
        return en.sum(y)

    def loss(a):
        b = a * 1.0
        s = scale_first(b)
        return s * en.sum(b * b)

    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(en.grad(loss)(en.tensor(a)).numpy(), numeric_grad(loss, (a,)),
                               rtol=1e-6)


def test_writes_inside_a_function_to_a_capture_are_refused():
    c = en.zeros(2)

    def writes_capture(x):
        c[0] = x[0]
        return x

    with pytest.raises(en.TracingError):
        en.function(writes_capture)(en.ones(2))
    np.testing.assert_array_equal(c.numpy(), [0.0, 0.0])


def test_saving_a_function_that_writes_its_argument_is_refused(tmp_path):
    def bump(x):
        x += 1.0
        return x * 2.0

    with pytest.raises(en.UnsupportedError, match="writes to its argument"):
        en.save(bump, tmp_path / "bump", en.ones(2))


def test_out_argument_of_numpy_functions():
    a = en.tensor([1.0, 4.0])
    out = en.zeros(2)
    result = np.sqrt(a, out=out)
    assert result is out
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0])


def test_traced_views_of_other_ops_follow_or_refuse():
    a = np.arange(6.0).reshape(2, 3)

    def swapped_follows(x):
        y = x * 1.0
        v = en.swapaxes(y, 0, 1)
        y[0, 1] = 100.0
        v[2, 1] = -1.0
        return y, v * 1.0

    def gathered_is_a_copy(x):
        y = x * 1.0
        d = en.diagonal(y)           # advanced indexing inside: a copy, as numpy's take
        y[0, 0] = 7.0
        return d * 1.0

    for fn in (swapped_follows, gathered_is_a_copy):
        want = fn(en.tensor(a))
        got = en.function(fn)(en.tensor(a))
        for w, g in zip(want if isinstance(want, tuple) else (want,),
                        got if isinstance(got, tuple) else (got,)):
            np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=fn.__name__)

    def writes_split_base(x):
        y = x * 1.0
        first, _ = en.split(y, 2)
        y[0, 0] = 5.0
        return first

    np.testing.assert_array_equal(writes_split_base(en.tensor(a)).numpy()[0, 0], 5.0)
    with pytest.raises(en.TracingError, match="split or unstack"):
        en.function(writes_split_base)(en.tensor(a))


def test_a_subclass_of_tensor_is_written_as_a_tensor():
    # A user's subclass is not one of the engine's wrappers (a transformation's, another
    # back end's): its writes go into its array, as numpy's subclasses' do.
    class Labelled(en.Tensor):
        pass

    a = np.arange(6.0).reshape(2, 3)
    x = Labelled(a.copy())
    view = x[:, 1:]
    x[0, 1] = 10.0
    x += 1.0
    x[x > 5.0] = 0.0
    want = a.copy()
    want[0, 1] = 10.0
    want += 1.0
    want[want > 5.0] = 0.0
    assert type(x) is Labelled
    np.testing.assert_array_equal(x.numpy(), want)
    np.testing.assert_array_equal(view.numpy(), want[:, 1:])
    with pytest.raises(en.ShapeError):
        x[0] = np.ones(4)
    np.testing.assert_array_equal(x.numpy(), want)        # nothing half-written
