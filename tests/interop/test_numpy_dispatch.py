"""numpy functions called on tensors run the engine (``__array_ufunc__``,
``__array_function__``): in eager mode, while tracing and under tapes, returning
tensors; what the engine lacks raises UnsupportedError naming it.

The references are numpy on plain arrays and central finite differences.
"""
import numpy as np
import pytest

import engine as en
from engine.numpy_dispatch import engine_function
from support.finite_diff import central_difference


# ---- a program written only with numpy calls -----------------------------------------------
def softmax_regression_loss(W, b, X, Y):
    """Mean cross-entropy of a softmax regression; only numpy calls, no engine names."""
    logits = np.matmul(X, W) + b
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_probs, axis=1))


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 4))
    Y = np.eye(3)[rng.integers(0, 3, 6)]
    W = rng.standard_normal((4, 3)) * 0.5
    b = rng.standard_normal(3) * 0.1
    return W, b, X, Y


def _reference_grads(W, b, X, Y):
    return (central_difference(lambda w: softmax_regression_loss(w, b, X, Y), W),
            central_difference(lambda c: softmax_regression_loss(W, c, X, Y), b))


@pytest.mark.parametrize("mode", ["eager", "traced", "traced_grad"])
def test_numpy_written_softmax_regression_value_and_gradient(problem, mode):
    W, b, X, Y = problem
    want = softmax_regression_loss(W, b, X, Y)          # pure numpy on arrays
    assert isinstance(want, float)
    want_gW, want_gb = _reference_grads(W, b, X, Y)
    args = (en.tensor(W), en.tensor(b), en.tensor(X), en.tensor(Y))

    vg = en.value_and_grad(softmax_regression_loss, argnums=(0, 1))
    if mode == "traced":
        vg = en.value_and_grad(en.function(softmax_regression_loss), argnums=(0, 1))
    elif mode == "traced_grad":
        vg = en.function(vg)
    value, (gW, gb) = vg(*args)
    assert isinstance(value, en.Tensor) and isinstance(gW, en.Tensor)
    np.testing.assert_allclose(float(value), want, rtol=1e-12)
    np.testing.assert_allclose(gW.numpy(), want_gW, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), want_gb, rtol=1e-6, atol=1e-8)


def test_numpy_calls_trace_into_engine_nodes(problem):
    W, b, X, Y = problem
    f = en.function(softmax_regression_loss)
    graph = f.graph_for(en.tensor(W), en.tensor(b), en.tensor(X), en.tensor(Y))
    ops = {n.op.name for n in graph.nodes}
    assert not any(name == "py_function" for name in ops)
    graph_unopt = en.function(softmax_regression_loss, optimize=False).graph_for(
        en.tensor(W), en.tensor(b), en.tensor(X), en.tensor(Y))
    assert {"matmul", "exp", "log", "sum", "max", "mean"} <= {n.op.name for n in graph_unopt.nodes}


def test_under_a_tape_and_with_variables(problem):
    W, b, X, Y = problem
    w, c = en.Variable(W), en.Variable(b)
    with en.GradientTape() as tape:
        loss = softmax_regression_loss(w, c, X, Y)     # X, Y stay numpy arrays
    gW, gb = tape.gradient(loss, [w, c])
    want_gW, want_gb = _reference_grads(W, b, X, Y)
    np.testing.assert_allclose(gW.numpy(), want_gW, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), want_gb, rtol=1e-6, atol=1e-8)
    assert isinstance(np.exp(w), en.Tensor)


# ---- function by function --------------------------------------------------------------------
_rng = np.random.default_rng(1)
A = _rng.standard_normal((3, 4))
B = _rng.standard_normal((3, 4))
P = np.abs(A) + 0.5
S = _rng.standard_normal((4, 2))
V = _rng.standard_normal(4)

# (label, numpy call on arrays or tensors, arguments): each runs on numpy arrays for the
# reference and on tensors through the engine.
CASES = [
    ("exp", lambda a: np.exp(a), (A,)), ("log", lambda a: np.log(a), (P,)),
    ("sqrt", lambda a: np.sqrt(a), (P,)), ("tanh", lambda a: np.tanh(a), (A,)),
    ("sin", lambda a: np.sin(a), (A,)), ("cos", lambda a: np.cos(a), (A,)),
    ("absolute", lambda a: np.abs(a), (A,)), ("negative", lambda a: -a, (A,)),
    ("square", lambda a: np.square(a), (A,)), ("expm1", lambda a: np.expm1(a), (A,)),
    ("log1p", lambda a: np.log1p(a), (P,)), ("reciprocal", lambda a: np.reciprocal(a), (P,)),
    ("add", lambda a, b: np.add(a, b), (A, B)), ("subtract", lambda a, b: np.subtract(a, b), (A, B)),
    ("multiply", lambda a, b: np.multiply(a, b), (A, B)),
    ("divide", lambda a, b: np.divide(a, b), (A, P)), ("power", lambda a, b: np.power(a, b), (P, B)),
    ("maximum", lambda a, b: np.maximum(a, b), (A, B)), ("minimum", lambda a, b: np.minimum(a, b), (A, B)),
    ("matmul", lambda a, s: np.matmul(a, s), (A, S)), ("dot", lambda v: np.dot(v, v), (V,)),
    ("outer", lambda v: np.outer(v, v), (V,)),
    ("sum", lambda a: np.sum(a), (A,)), ("sum_axis", lambda a: np.sum(a, axis=0), (A,)),
    ("sum_positional", lambda a: np.sum(a, 1, None, None, True), (A,)),
    ("sum_dtype", lambda a: np.sum(a, dtype=np.float32), (A,)),
    ("sum_where_initial", lambda a: np.sum(a, axis=1, where=a > 0, initial=1.0), (A,)),
    ("max_where_initial", lambda a: np.max(a, axis=0, where=a < 1, initial=-5.0), (A,)),
    ("mean", lambda a: np.mean(a, axis=1, keepdims=True), (A,)),
    ("mean_where", lambda a: np.mean(a, where=a > 0), (A,)),
    ("prod", lambda a: np.prod(a, axis=0), (P,)), ("max", lambda a: np.max(a, axis=1), (A,)),
    ("amin", lambda a: np.amin(a), (A,)), ("argmax", lambda a: np.argmax(a, axis=0), (A,)),
    ("argmin", lambda a: np.argmin(a), (A,)),
    ("add.reduce", lambda a: np.add.reduce(a), (A,)),
    ("multiply.reduce", lambda a: np.multiply.reduce(a, axis=1, keepdims=True), (P,)),
    ("maximum.reduce", lambda a: np.maximum.reduce(a, axis=None), (A,)),
    ("add.outer", lambda v: np.add.outer(v, v), (V,)),
    ("ufunc_dtype", lambda a: np.exp(a, dtype=np.float32), (A,)),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1), (A, B)),
    ("stack", lambda a, b: np.stack([a, b]), (A, B)),
    ("reshape", lambda a: np.reshape(a, (4, 3)), (A,)),
    ("transpose", lambda a: np.transpose(a), (A,)),
    ("expand_dims", lambda a: np.expand_dims(a, 1), (A,)),
    ("squeeze", lambda a: np.squeeze(np.reshape(a, (1, 3, 4))), (A,)),
    ("broadcast_to", lambda v: np.broadcast_to(v, (2, 4)), (V,)),
    ("where", lambda a, b: np.where(a > b, a, b), (A, B)),
    ("zeros_like", lambda a: np.zeros_like(a), (A,)), ("ones_like", lambda a: np.ones_like(a), (A,)),
    ("ravel", lambda a: np.ravel(a), (A,)),
    ("split_points", lambda a: np.split(a, [1, 3], axis=1)[1], (A,)),
    ("split_sections", lambda a: np.split(a, 3)[2], (A,)),
    ("greater", lambda a, b: np.greater(a, b), (A, B)), ("equal", lambda a, b: np.equal(a, b), (A, A)),
    ("logical_and", lambda a, b: np.logical_and(a > 0, b > 0), (A, B)),
    ("array_plus_tensor", lambda a: B + a, (A,)), ("array_times_tensor", lambda a: a * B, (A,)),
]
_IDS = [c[0] for c in CASES]


def _check_same(got, want):
    assert isinstance(got, en.Tensor), type(got)
    want = np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6 if got.dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("label, call, args", CASES, ids=_IDS)
def test_numpy_function_on_tensors_eager(label, call, args):
    _check_same(call(*(en.tensor(a) for a in args)), call(*args))


@pytest.mark.parametrize("label, call, args", CASES, ids=_IDS)
def test_numpy_function_on_tensors_traced(label, call, args):
    f = en.function(call)
    _check_same(f(*(en.tensor(a) for a in args)), call(*args))


def test_shape_queries():
    t = en.tensor(A)
    assert np.shape(t) == (3, 4) and np.ndim(t) == 2 and np.size(t) == 12 and np.size(t, 1) == 4
    assert np.result_type(t, np.float32) == np.float64

    @en.function
    def f(x):
        assert np.shape(x) == (3, 4)      # static while tracing too
        return x

    f(t)


def test_numpy_names_resolve_by_name_with_a_table_only_for_differences():
    assert engine_function("numpy", "exp") is en.exp
    assert engine_function("numpy", "subtract") is en.sub            # numpy's ufunc name
    assert engine_function("numpy", "concatenate") is en.concat
    assert engine_function("numpy", "save") is None                  # en.save is not np.save
    assert engine_function("numpy.random", "normal") is None


# ---- what the engine does not do is refused, naming it -------------------------------------
def test_a_numpy_function_the_engine_lacks_names_itself():
    t = en.tensor(A)
    with pytest.raises(en.UnsupportedError, match=r"numpy\.busday_count .*no en\.busday_count.*test_numpy_dispatch"):
        np.busday_count(t, t)
    with pytest.raises(TypeError):     # numpy's own exception class for this
        np.busday_count(t, t)


def test_out_stores_into_tensors_and_arrays():
    t = en.tensor(A)
    out = np.empty((3, 4))
    assert np.exp(t, out=out) is out
    np.testing.assert_allclose(out, np.exp(A))
    total = en.zeros(())
    assert np.sum(t, out=total) is total
    np.testing.assert_allclose(total.numpy(), A.sum())
    rows = en.zeros(4)
    np.add.reduce(t, out=rows)
    np.testing.assert_allclose(rows.numpy(), A.sum(axis=0))
    with pytest.raises(en.ShapeError):
        np.exp(t, out=en.zeros(3))


def test_keywords_the_engine_does_not_take_are_named():
    t = en.tensor(A)
    with pytest.raises(en.UnsupportedError, match=r"numpy.reshape: .*reshape does not take order='F'"):
        np.reshape(t, (12,), order="F")
    np.reshape(t, (12,), order="C")        # numpy's default: accepted
    with pytest.raises(en.UnsupportedError, match=r"numpy.concatenate: .*casting='unsafe'"):
        np.concatenate([t, t], casting="unsafe")
    with pytest.raises(en.UnsupportedError, match=r"numpy.exp: where="):
        np.exp(t, where=t > 0)
    with pytest.raises(en.UnsupportedError, match="needs initial="):
        np.max(t, where=t > 0)


def test_other_array_types_are_left_to_their_own_protocols():
    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "other"

    assert np.concatenate([en.tensor(A), Other()]) == "other"


def test_was_silently_numpy_before():
    """np.exp(t) returned a numpy array, and np.sum(t) raised a TypeError about out=."""
    t = en.tensor([0.0, 1.0])
    assert isinstance(np.exp(t), en.Tensor)
    assert isinstance(np.sum(t), en.Tensor) and float(np.sum(t)) == 1.0
