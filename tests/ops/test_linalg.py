"""engine.linalg and einsum beyond the op database: the contraction order einsum
picks and the graph it leaves, the public namespace, ONNX forms, and the cases
where a gradient does not exist or a result is unique only up to sign."""
import numpy as np
import pytest

import engine as en
from engine.ops.einsum_parse import greedy_path

LA = en.linalg


def test_greedy_path_contracts_the_cheap_pair_first():
    # Both first pairs shrink the intermediates alike; the one with less work goes first.
    # (100x100)(100x100)(100x2): (b c) is 2e4 multiply-adds, (a b) 1e6.
    sizes = {"i": 100, "j": 100, "k": 100, "l": 2}
    assert greedy_path(("ij", "jk", "kl"), "il", sizes) == [(1, 2), (0, 1)]
    # A pair sharing no label (an outer product) comes after those that do.
    assert greedy_path(("i", "j", "ij"), "", {"i": 3, "j": 4})[0] in [(0, 2), (1, 2)]


def test_einsum_of_three_operands_traces_as_pairwise_contractions():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s) for s in [(3, 40), (40, 40), (40, 2)])
    f = en.function(lambda a, b, c: en.einsum("ij,jk,kl->il", a, b, c))
    got = f(a, b, c)
    np.testing.assert_allclose(got.numpy(), a @ b @ c, rtol=1e-10)
    graph = f.get_concrete_function(a, b, c).unoptimized_graph
    steps = [n.params["subscripts"] for n in graph.nodes if n.op.name == "einsum"]
    assert len(steps) == 2, steps
    assert all(s.count(",") == 1 for s in steps)     # pairwise
    g = en.grad(lambda b: en.sum(f(a, b, c)))(en.tensor(b))
    np.testing.assert_allclose(g.numpy(), np.outer(a.sum(0), c.sum(1)), rtol=1e-10)


def test_einsum_optimize_false_is_one_op():
    f = en.function(lambda a, b, c: en.einsum("ij,jk,kl->il", a, b, c, optimize=False))
    x = np.ones((2, 2))
    graph = f.get_concrete_function(x, x, x).unoptimized_graph
    assert [n.params["subscripts"] for n in graph.nodes if n.op.name == "einsum"] == \
        ["ij,jk,kl->il"]


def test_einsum_path_matches_numpy_greedy():
    rng = np.random.default_rng(1)
    ops = [rng.standard_normal(s) for s in [(5, 30), (30, 30), (30, 4), (4, 6)]]
    path, _ = en.einsum_path("ij,jk,kl,lm->im", *[en.tensor(o) for o in ops])
    want, _ = np.einsum_path("ij,jk,kl,lm->im", *ops, optimize="greedy")
    assert path == want


def test_linalg_is_a_public_namespace():
    names = {"cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_norm",
             "matrix_power", "matrix_rank", "matrix_transpose", "norm", "outer", "pinv", "qr",
             "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
             "vector_norm", "cross", "diagonal", "matmul", "multi_dot"}
    assert names <= set(LA.__all__)
    assert not {"np", "apply", "dtypes"} & set(dir(LA))
    for n in LA.__all__:
        assert callable(getattr(LA, n)), n


def test_results_are_named_tuples_in_both_modes():
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    w, v = np.linalg.eigh(a)
    for fn in (LA.eigh, en.function(LA.eigh)):
        res = fn(en.tensor(a))
        assert type(res).__name__ == "EighResult"
        np.testing.assert_allclose(res.eigenvalues.numpy(), w)
        np.testing.assert_allclose(np.abs(res.eigenvectors.numpy()), np.abs(v))
    res = en.function(LA.svd)(en.tensor(a))
    assert type(res).__name__ == "SVDResult" and res.S.shape == (2,)


def test_eigh_upper_reads_the_upper_triangle():
    rng = np.random.default_rng(2)
    m = rng.standard_normal((4, 4))
    up = np.triu(m + m.T)
    w, v = LA.eigh(en.tensor(up), UPLO="U")
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(up, UPLO="U"), rtol=1e-12)
    sym = up + np.triu(up, 1).T
    recon = v.numpy() @ np.diag(w.numpy()) @ v.numpy().T
    np.testing.assert_allclose(recon, sym, atol=1e-12)
    g = en.grad(lambda x: en.sum(LA.eigvalsh(x, UPLO="U") ** 2))(en.tensor(up)).numpy()
    assert np.all(np.tril(g, -1) == 0)      # the unread triangle gets no gradient
    # d sum(w^2) = 2 <A, dA>; an entry above the diagonal stands for two of A's.
    np.testing.assert_allclose(g, np.triu(2 * sym * (2 - np.eye(4))), atol=1e-10)


@pytest.mark.parametrize("fn, shape, match", [
    (lambda x: LA.qr(x, mode="complete").Q, (4, 2), "mode='complete'"),
    (lambda x: LA.svd(x).U, (4, 2), "full_matrices=True"),
])
def test_no_gradient_where_the_factors_are_arbitrary(fn, shape, match):
    x = en.tensor(np.random.default_rng(3).standard_normal(shape))
    with pytest.raises(en.NotDifferentiableError, match=match):
        en.grad(lambda x: en.sum(fn(x)))(x)


def test_degenerate_singular_values_keep_finite_value_gradients():
    # Repeated singular values: the vectors are not unique, but the nuclear norm's
    # gradient (U Vh) is, and F's zeroed entries keep it finite.
    q, _ = np.linalg.qr(np.random.default_rng(4).standard_normal((3, 3)))
    g = en.grad(lambda x: LA.matrix_norm(x, ord="nuc"))(en.tensor(2.0 * q)).numpy()
    np.testing.assert_allclose(g, q, atol=1e-10)


def test_onnx_exports_einsum_and_det(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4)).astype("float32")
    b = rng.standard_normal((4, 4)).astype("float32") + 4 * np.eye(4, dtype="float32")
    f = en.function(lambda a, b: (en.einsum("ij,jk->ik", a, b), LA.det(b),
                                  en.einsum("ii", b), en.tensordot(a, b, axes=([1], [0]))))
    path = str(tmp_path / "la.onnx")
    model = en.export_onnx(f, path, a, b)
    onnx.checker.check_model(onnx.load(path))
    assert {"Einsum", "Det"} <= {n.op_type for n in model.graph.node}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    got = sess.run(None, dict(zip(names, [a, b])))
    want = [a @ b, np.linalg.det(b), np.trace(b), a @ b]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fn, a, match", [
    (LA.inv, np.ones((2, 2)), "inv: Singular matrix"),
    (LA.cholesky, -np.eye(3), "cholesky: Matrix is not positive definite"),
    (lambda a: LA.solve(a, en.ones(2)), np.zeros((2, 2)), "solve: Singular matrix")])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_lapack_failures_are_domain_errors_naming_the_op(fn, a, match, graph):
    f = en.function(fn) if graph else fn
    with pytest.raises(en.DomainError, match=match):
        f(en.tensor(a))


@pytest.mark.parametrize("subs, shapes", [("ij,jk->ik", [(2, 3), (3, 4)]),
                                          ("ii,i->", [(3, 3), (3,)]),
                                          ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)])])
def test_einsum_jvp_and_vmap_are_native_and_right(subs, shapes):
    import warnings
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal(s) for s in shapes]
    ts = [rng.standard_normal(s) for s in shapes]
    f = lambda *a: en.einsum(subs, *a)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error", en.TransformFallbackWarning)
        _, tangent = en.jvp(f, tuple(en.tensor(x) for x in xs), tuple(en.tensor(t) for t in ts))
        eps = 1e-6
        fd = (np.einsum(subs, *[x + eps * t for x, t in zip(xs, ts)])
              - np.einsum(subs, *[x - eps * t for x, t in zip(xs, ts)])) / (2 * eps)
        np.testing.assert_allclose(tangent.numpy(), fd, rtol=1e-6, atol=1e-8)
        batch = rng.standard_normal((5,) + shapes[0])
        got = en.vmap(lambda a: f(a, *[en.tensor(x) for x in xs[1:]]))(en.tensor(batch))
    want = np.stack([np.einsum(subs, b, *xs[1:]) for b in batch])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


_MIXED = [("int32", "float32"), ("int64", "float32"), ("int8", "uint8"), ("float16", "float32"),
          ("float32", "complex64"), ("int32", "int64"), ("bool", "bool"), ("bool", "int8"),
          ("bool", "float32"), ("float64", "bool")]


@pytest.mark.parametrize("a_dt, b_dt", _MIXED)
@pytest.mark.parametrize("subs, n", [("ij,jk->ik", 3), ("ij,jk->ik", 40), ("i,i->", 5),
                                     ("bij,bjk->bik", 24)],
                         ids=["small", "blas", "dot", "batched"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_einsum_result_dtype_and_values_are_numpys(a_dt, b_dt, subs, n, graph):
    # Small contractions run np.einsum, large ones a cast and one BLAS product: both
    # give np.einsum's dtype and values, bools included (an OR of ANDs).
    rng = np.random.default_rng(1)
    shapes = {"ij,jk->ik": [(n, n), (n, n)], "i,i->": [(n,), (n,)],
              "bij,bjk->bik": [(2, n, n), (2, n, n)]}[subs]
    a = (rng.integers(0, 3, shapes[0]) > 0 if a_dt == "bool"
         else rng.integers(-2, 3, shapes[0])).astype(a_dt)
    b = (rng.integers(0, 3, shapes[1]) > 0 if b_dt == "bool"
         else rng.integers(0, 3, shapes[1])).astype(b_dt)
    want = np.einsum(subs, a, b)
    f = en.function(lambda a, b: en.einsum(subs, a, b)) if graph else \
        (lambda a, b: en.einsum(subs, a, b))
    got = f(en.tensor(a), en.tensor(b))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_einsum_bool_on_the_strict_back_end_is_numpys():
    # The standard has no bool sum or matmul: the generic kernel counts in int64.
    rng = np.random.default_rng(2)
    a, b = rng.random((30, 40)) < 0.1, rng.random((40, 20)) < 0.1
    got = en.einsum("ij,jk->ik", en.tensor(a, backend="array_api_strict"),
                    en.tensor(b, backend="array_api_strict"))
    assert got.backend.name == "array_api_strict" and got.dtype == np.bool_
    np.testing.assert_array_equal(got.numpy(), np.einsum("ij,jk->ik", a, b))
