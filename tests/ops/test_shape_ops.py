"""What the op database does not cover for the shape, sorting and cumulative ops:
results whose size depends on the data (eager, and TracingError in a graph unless
``size=`` is given), and the ONNX forms (run in onnxruntime against numpy)."""
import numpy as np
import pytest

import engine as en

X = np.array([[0, 3, 1], [2, 0, 3]])


def test_nonzero_and_unique_without_size_run_eagerly():
    for got, want in zip(en.nonzero(X), np.nonzero(X)):
        np.testing.assert_array_equal(got.numpy(), want)
    values, index, inverse, counts = en.unique(X, return_index=True, return_inverse=True,
                                               return_counts=True)
    for got, want in zip((values, index, inverse, counts),
                         np.unique(X, return_index=True, return_inverse=True, return_counts=True)):
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(en.argwhere(X).numpy(), np.argwhere(X))
    np.testing.assert_array_equal(en.flatnonzero(X).numpy(), np.flatnonzero(X))


@pytest.mark.parametrize("fn", [en.nonzero, en.unique, en.unique_all, en.unique_values,
                                en.argwhere, en.flatnonzero],
                         ids=lambda f: f.__name__)
def test_data_dependent_sizes_need_size_in_a_graph(fn):
    traced = en.function(lambda x: fn(x))
    with pytest.raises(en.TracingError, match=f"{fn.__name__.split('_')[0]}.*size="):
        traced(en.tensor(X))


def test_nonzero_with_size_traces_and_pads():
    f = en.function(lambda x: en.nonzero(x > 0, size=6, fill_value=-1))
    rows, cols = f(en.tensor(X))
    np.testing.assert_array_equal(rows.numpy(), [0, 0, 1, 1, -1, -1])
    np.testing.assert_array_equal(cols.numpy(), [1, 2, 0, 2, -1, -1])
    rows, _ = en.function(lambda x: en.nonzero(x, size=2))(en.tensor(X))
    np.testing.assert_array_equal(rows.numpy(), [0, 0])   # cut to size


def test_unique_with_size_traces():
    f = en.function(lambda x: en.unique(x, return_counts=True, size=6, fill_value=9))
    values, counts = f(en.tensor(X))
    np.testing.assert_array_equal(values.numpy(), [0, 1, 2, 3, 9, 9])
    np.testing.assert_array_equal(counts.numpy(), [2, 1, 1, 2, 0, 0])


def test_stable_argsort_keeps_ties_in_order_both_ways():
    x = en.tensor([2, 1, 2, 1, 2])
    np.testing.assert_array_equal(en.argsort(x).numpy(), [1, 3, 0, 2, 4])
    np.testing.assert_array_equal(en.argsort(x, descending=True).numpy(), [0, 2, 4, 1, 3])


def test_sort_gradient_follows_the_permutation_in_a_graph():
    x = np.array([3.0, -1.0, 2.0])
    g = en.function(en.grad(lambda x: en.sum(en.sort(x) * en.tensor([1.0, 10.0, 100.0]))))
    np.testing.assert_array_equal(g(en.tensor(x)).numpy(), [100.0, 1.0, 10.0])


def test_cumprod_gradient_at_a_zero():
    # d/dx_k of sum(cumprod(x)) where x = [2, 0, 3]: products of the others in each prefix.
    g = en.grad(lambda x: en.sum(en.cumprod(x)))(en.tensor([2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g.numpy(), [1.0, 2.0 + 6.0, 0.0])


# ---- ONNX ------------------------------------------------------------------------------------
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _run_onnx(fn, args, tmp_path):
    path = str(tmp_path / "m.onnx")
    en.export_onnx(fn, path, *args)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: np.asarray(a) for i, a in zip(sess.get_inputs(), args)})


def test_onnx_forms_match_numpy(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, size=(3, 4)).astype("float32")
    idx = np.array([[1], [3], [0]])

    def f(x, i):
        return (en.cumsum(x, axis=1), en.cumsum(x > 0, axis=0), en.sort(x, axis=1),
                en.sort(x, axis=0, descending=True), en.argsort(x, axis=1),
                en.argsort(x, axis=1, descending=True), en.pad(x, ((1, 2), (0, 3)), mode="reflect"),
                en.pad(x, 1, constant_values=2.5), en.pad(x, (2, 1), mode="edge"),
                en.put_along_axis(x, i, -7.0, axis=1))
    want = [np.cumsum(x, 1), np.cumsum(x > 0, 0), np.sort(x, 1), np.sort(x, 0)[::-1],
            np.argsort(x, 1, kind="stable"), np.argsort(-x, 1, kind="stable"),
            np.pad(x, ((1, 2), (0, 3)), mode="reflect"), np.pad(x, 1, constant_values=2.5),
            np.pad(x, (2, 1), mode="edge")]
    put = x.copy()
    np.put_along_axis(put, idx, -7.0, 1)
    want.append(put)
    got = _run_onnx(en.function(f), (x, idx), tmp_path)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_onnx_exports_the_gradient_of_cumsum(tmp_path):
    x = np.arange(6, dtype="float32").reshape(2, 3)
    grad = en.function(en.grad(lambda x: en.sum(en.cumsum(x, axis=1) * x)))
    (got,) = _run_onnx(grad, (x,), tmp_path)
    np.testing.assert_allclose(got, grad(x).numpy(), rtol=1e-6)


def test_pad_modes_onnx_lacks_name_themselves(tmp_path):
    f = en.function(lambda x: en.pad(x, 1, mode="wrap"))
    with pytest.raises(en.EngineError, match="pad.*'wrap'"):
        en.export_onnx(f, str(tmp_path / "w.onnx"), np.ones((2, 2), "float32"))


def test_onnx_gathers_one_index_array_and_pads_nonzero(tmp_path):
    x = np.random.default_rng(1).integers(-2, 3, size=(3, 4)).astype("float32")
    i = np.array([1, -1, 0])

    def f(x, i):
        return (en.take(x, i, axis=1), x[1:, i], en.repeat(x, [1, 0, 2, 1], axis=1),
                *en.nonzero(x > 0, size=7, fill_value=-1), *en.nonzero(x, size=2))
    padded = [np.concatenate([r, -np.ones(7 - len(r), np.int64)])[:7] for r in np.nonzero(x > 0)]
    want = [np.take(x, i, axis=1), x[1:, i], np.repeat(x, [1, 0, 2, 1], axis=1), *padded,
            *[r[:2] for r in np.nonzero(x)]]
    got = _run_onnx(en.function(f), (x, i), tmp_path)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_onnx_refuses_several_index_arrays_by_name(tmp_path):
    f = en.function(lambda x: en.diagonal(x))
    with pytest.raises(en.EngineError, match="several arrays"):
        en.export_onnx(f, str(tmp_path / "d.onnx"), np.ones((3, 3), "float32"))
