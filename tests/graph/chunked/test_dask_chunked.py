"""``en.function`` called with Dask tensors: run once before, per chunk, once after.

The references are the same functions called with numpy tensors (the engine's
ordinary graphs, themselves checked against numpy and finite differences
elsewhere) and, for the models, plain numpy formulas.
"""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import dask  # noqa: E402

import engine as en  # noqa: E402


def chunked(x, rows):
    return en.tensor(da.from_array(x, chunks=(rows,) + x.shape[1:]))


# ---- models ------------------------------------------------------------------------
def autoencoder(dtype, seed=0):
    rng = np.random.default_rng(seed)
    w = en.Variable(rng.normal(0, 0.1, (20, 6)).astype(dtype))
    b1 = en.Variable(rng.normal(0, 0.1, 6).astype(dtype))
    b2 = en.Variable(rng.normal(0, 0.1, 20).astype(dtype))
    params = [w, b1, b2]

    def loss(x):
        h = en.sigmoid(en.matmul(x, w) + b1)
        y = en.sigmoid(en.matmul(h, en.transpose(w)) + b2)
        return en.mean(en.square(y - x))
    return loss, params


def logistic(dtype, seed=1):
    rng = np.random.default_rng(seed)
    w = en.Variable(rng.normal(0, 0.3, (20, 1)).astype(dtype))
    b = en.Variable(np.zeros(1, dtype))

    def loss(x, y):
        z = en.matmul(x, w) + b
        # log(1 + exp(z)) - y z, the logistic loss written with the engine's ops
        return en.mean(en.log1p(en.exp(z)) - y * z)
    return loss, [w, b]


def mlp(dtype, seed=2):
    rng = np.random.default_rng(seed)
    w1 = en.Variable(rng.normal(0, 0.3, (20, 16)).astype(dtype))
    b1 = en.Variable(np.zeros(16, dtype))
    w2 = en.Variable(rng.normal(0, 0.3, (16, 3)).astype(dtype))
    b2 = en.Variable(np.zeros(3, dtype))

    def loss(x, y):
        h = en.tanh(en.matmul(x, w1) + b1)
        logits = en.matmul(h, w2) + b2
        shifted = logits - en.max(logits, axis=1, keepdims=True)
        logp = shifted - en.log(en.sum(en.exp(shifted), axis=1, keepdims=True))
        return -en.sum(y * logp) / 97.0
    return loss, [w1, b1, w2, b2]


def data(dtype, n=97, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 20)).astype(dtype)
    labels = rng.integers(0, 3, n)
    return x, (labels == 0).astype(dtype)[:, None], np.eye(3, dtype=dtype)[labels]


def value_and_grads(loss, params):
    def f(*xs):
        with en.GradientTape() as tape:
            value = loss(*xs)
        return value, tape.gradient(value, params)
    return en.function(f)


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-12), ("float32", 1e-5)])
@pytest.mark.parametrize("model", ["autoencoder", "logistic", "mlp"])
def test_value_and_grad_over_chunks_equals_numpy(model, dtype, rtol):
    x, y_bin, y_hot = data(dtype)
    loss, params = {"autoencoder": autoencoder, "logistic": logistic, "mlp": mlp}[model](dtype)
    args = {"autoencoder": [x], "logistic": [x, y_bin], "mlp": [x, y_hot]}[model]
    f = value_and_grads(loss, params)
    ref_value, ref_grads = f(*[en.tensor(a) for a in args])
    value, grads = f(*[chunked(a, 25) for a in args])      # chunks of 25, 25, 25, 22 rows
    assert value.backend.name == "numpy"
    np.testing.assert_allclose(float(value), float(ref_value), rtol=rtol)
    for g, r in zip(grads, ref_grads):
        assert g.dtype == r.dtype
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=rtol, atol=rtol * 1e-3)


def test_lbfgs_on_dask_data_follows_numpy():
    x = data("float64")[0]
    losses = {}
    for name, xt in (("numpy", en.tensor(x)), ("dask", chunked(x, 30))):
        loss, params = autoencoder("float64")
        opt = en.optim.LBFGS(lr=1.0, history=5).build(params)
        step = en.function(lambda xb: opt.minimize(lambda: loss(xb), params))
        losses[name] = [float(step(xt)) for _ in range(10)]
        assert step.trace_count == 1
    assert losses["numpy"][-1] < losses["numpy"][0]
    np.testing.assert_allclose(losses["dask"], losses["numpy"], rtol=1e-6)


def test_one_task_per_chunk_plus_a_tree_of_sums():
    loss, params = autoencoder("float64")
    f = value_and_grads(loss, params)
    x = data("float64", n=640)[0]
    counts = {}
    for chunks in (8, 32):
        xt = chunked(x, 640 // chunks)
        f(xt)
        concrete = f.get_concrete_function(xt)
        graph = concrete.task_graph([xt])
        counts[chunks] = len(graph)
        run = [k for k in graph if str(k).startswith("engine-chunk-")]
        assert len(run) == chunks                     # one task runs each chunk's rows
    # The rest grows with the chunks too (sources, a combining tree), not with ops.
    assert counts[32] - counts[8] <= 4 * (32 - 8)
    assert counts[8] <= 4 * 8 + 4


def test_results_that_stay_per_row_are_lazy_dask_tensors():
    w = en.Variable(np.random.default_rng(0).normal(size=(20, 4)))
    f = en.function(lambda x: (en.tanh(en.matmul(x, w)), en.sum(x)))
    x = data("float64")[0]
    rows, total = f(chunked(x, 40))
    assert rows.backend.name == "dask" and rows.shape == (97, 4)
    np.testing.assert_allclose(rows.numpy(), np.tanh(x @ w.numpy()), rtol=1e-12)
    np.testing.assert_allclose(float(total), x.sum(), rtol=1e-12)


def test_an_op_that_needs_every_row_at_once_names_itself_and_the_line():
    f = en.function(lambda x: en.sum(en.matmul(x, en.transpose(x))))
    with pytest.raises(en.TracingError, match=r"(?s)op 'matmul' on chunked data.*every row.*"
                                              r"test_dask_chunked.py"):
        f(chunked(data("float64")[0], 40))


def test_argmax_over_the_rows_is_refused():
    f = en.function(lambda x: en.argmax(x, axis=0))
    with pytest.raises(en.TracingError, match="op 'argmax' on chunked data"):
        f(chunked(data("float64")[0], 40))


def test_a_chunk_with_bad_values_is_named_with_the_users_line():
    x = data("float64")[0]
    x[60, 3] = np.nan                                   # row 60: the third chunk of 25
    w = en.Variable(np.ones((20, 2)))
    f = en.function(lambda x: en.mean(en.matmul(x, w)))
    with en.debug.check_numerics():
        with pytest.raises(en.ChunkError, match=r"(?s)chunk 2 \(25 rows\).*NaN or Inf.*"
                                                r"test_dask_chunked.py"):
            f(chunked(x, 25))
    assert np.isnan(float(f(chunked(x, 25))))           # without the check: numpy's NaN


def test_chunked_inputs_must_have_the_same_rows():
    f = en.function(lambda x, y: en.sum(x) + en.sum(y))
    with pytest.raises(en.TracingError, match=r"same number of rows, got \[10, 97\]"):
        f(chunked(data("float64")[0], 40), chunked(np.ones((10, 2)), 5))


def test_an_eager_optimizer_step_on_dask_data_is_one_computation_and_follows_numpy():
    x = data("float64")[0]
    losses, computations = {}, []
    for name, xt in (("numpy", en.tensor(x)), ("dask", chunked(x, 30))):
        loss, params = autoencoder("float64")
        opt = en.optim.LBFGS(history=3).build(params)
        losses[name] = []
        for _ in range(4):
            with dask.config.set(scheduler=lambda dsk, keys, **kw: computations.append(1) or
                                 dask.get(dsk, keys, **kw)):
                losses[name].append(float(opt.minimize(lambda: loss(xt), params)))
    assert len(computations) == 4            # one Dask computation per step
    np.testing.assert_allclose(losses["dask"], losses["numpy"], rtol=1e-12)


def test_a_weight_used_forward_transposed_and_in_the_backward_pass_is_sent_once():
    # The autoencoder reads W (x @ W), its transpose (h @ W.T) and both again in the
    # backward pass: the chunks get W's bytes once and make the views themselves.
    x = data("float64")[0]
    loss, params = autoencoder("float64")
    step = value_and_grads(loss, params)
    xt = chunked(x, 30)
    value, grads = step(xt)
    sent = step.get_concrete_function(xt).shared_nbytes([xt])
    w, b1, b2 = (p.numpy() for p in params)
    assert sent <= w.nbytes + b1.nbytes + b2.nbytes + 64      # + a few scalars
    ref_value, ref_grads = step(en.tensor(x))
    np.testing.assert_allclose(float(value), float(ref_value), rtol=1e-12)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-12)


def _softmax_np(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("labels", ["ids", "one_hot"])
def test_softmax_cross_entropy_and_its_gradient_run_per_chunk(labels):
    # The stabilised softmax builds zeros_like(max(x)) over the rows: it must stay
    # per chunk, not become one full-size constant the chunks' `where` cannot use.
    x, _, y_hot = data("float64")
    y = y_hot.argmax(axis=1) if labels == "ids" else y_hot
    w = en.Variable(np.random.default_rng(4).normal(0, 2.0, (20, 3)))

    def f(xb, yb):
        with en.GradientTape() as tape:
            value = en.cross_entropy(en.matmul(xb, w), yb)
        return value, tape.gradient(value, w), en.softmax(en.matmul(xb, w))

    value, grad, probs = en.function(f)(chunked(x, 25), chunked(y, 25))
    p = _softmax_np(x @ w.numpy())                           # closed forms
    np.testing.assert_allclose(float(value), -np.mean(np.log(p[y_hot == 1])), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), x.T @ (p - y_hot) / len(x), rtol=1e-10)
    assert probs.backend.name == "dask"
    np.testing.assert_allclose(probs.numpy(), p, rtol=1e-12)
