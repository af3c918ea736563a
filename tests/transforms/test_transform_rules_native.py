"""Native forward-mode and batching rules of the linear-algebra, running, sorting, padding
and scatter ops: each runs without the fallbacks (no warning) and agrees with central
differences (``jvp``) or with a Python loop over the batch (``vmap``).

The op database suites (test_transforms_jvp, test_vmap) check every rule on the
database's samples; these cases add what those samples leave out: an unbatched
operand beside a batched one, stacks of different ranks, a tangent on the triangle
that cholesky and eigh do not read.
"""
import warnings

import numpy as np
import pytest

import engine as en
from engine.op import REGISTRY
from engine.transforms import batching, forward

NATIVE_JVP = ("cumsum", "cumprod", "cummax", "cummin", "sort", "pad", "put_along_axis", "det", "slogdet",
              "solve", "cholesky", "pinv", "eigh", "qr", "svd")
NATIVE_BATCH = ("cumsum", "cumprod", "cummax", "cummin", "sort", "argsort", "pad",
                "put_along_axis", "solve")
EPS = 1e-6


@pytest.fixture(autouse=True)
def _no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", en.TransformFallbackWarning)
        yield


@pytest.mark.parametrize("name", NATIVE_JVP)
def test_forward_rule_is_native(name):
    assert forward.has_rule(REGISTRY[name])


@pytest.mark.parametrize("name", NATIVE_BATCH)
def test_batching_rule_is_native(name):
    assert batching.has_rule(REGISTRY[name])


def _rng():
    return np.random.default_rng(3)


def _spd(rng, n, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _check_jvp(f, xs, vs):
    """jvp of ``f`` at ``xs`` along ``vs`` against central differences (float64)."""
    xs = [np.asarray(x, np.float64) for x in xs]
    outs, tans = en.jvp(f, tuple(en.tensor(x) for x in xs), tuple(en.tensor(v) for v in vs))
    plus = f(*[en.tensor(x + EPS * v) for x, v in zip(xs, vs)])
    minus = f(*[en.tensor(x - EPS * v) for x, v in zip(xs, vs)])
    if not isinstance(outs, (tuple, list)):
        outs, tans, plus, minus = (outs,), (tans,), (plus,), (minus,)
    for t, p, m in zip(tans, plus, minus):
        fd = (np.asarray(p) - np.asarray(m)) / (2 * EPS)
        np.testing.assert_allclose(np.asarray(t), fd, rtol=1e-6, atol=1e-7 * (1 + np.abs(fd).max()))


def test_det_slogdet_and_solve_tangents():
    rng = _rng()
    a, da = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 4))
    b, db = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 3))
    _check_jvp(en.linalg.det, [a], [da])
    _check_jvp(lambda x: en.linalg.slogdet(x)[1], [a], [da])
    _check_jvp(en.linalg.solve, [a, b], [da, db])
    _check_jvp(lambda b: en.linalg.solve(en.tensor(a), b), [b], [db])     # only B varies
    _check_jvp(lambda a: en.linalg.solve(a, en.tensor(b)), [a], [da])     # only A varies


def test_cholesky_and_eigh_tangents_read_the_lower_triangle():
    rng = _rng()
    a = _spd(rng, 4)
    da = rng.standard_normal((4, 4))          # not symmetric: only its lower triangle counts
    _check_jvp(en.linalg.cholesky, [a], [da])
    # Eigenvectors are defined up to sign: check V diag(w) V^T's pieces that are not,
    # the values and the projector on each (distinct) eigenvector.
    _check_jvp(lambda x: en.linalg.eigh(x)[0], [a], [da])
    _check_jvp(lambda x: en.linalg.eigh(x)[1] * en.linalg.eigh(x)[1][..., :1, :], [a], [da])


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 4, 3)], ids=str)
def test_qr_tangents_of_tall_square_and_wide_matrices(shape):
    rng = _rng()
    a, da = rng.standard_normal(shape), rng.standard_normal(shape)
    _check_jvp(lambda x: en.linalg.qr(x), [a], [da])


def test_qr_complete_of_a_tall_matrix_has_no_tangent():
    a = en.tensor(_rng().standard_normal((4, 2)))
    with pytest.raises(en.NotDifferentiableError, match="complete"):
        en.jvp(lambda x: en.linalg.qr(x, mode="complete"), (a,), (en.ones_like(a),))


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 3, 4)], ids=str)
def test_svd_tangents_of_tall_square_and_wide_matrices(shape):
    rng = _rng()
    a, da = rng.standard_normal(shape), rng.standard_normal(shape)
    _check_jvp(lambda x: en.linalg.svd(x, full_matrices=False), [a], [da])


def test_svd_full_matrices_of_a_non_square_matrix_has_no_tangent():
    a = en.tensor(_rng().standard_normal((4, 2)))
    with pytest.raises(en.NotDifferentiableError, match="full_matrices"):
        en.jvp(lambda x: en.linalg.svd(x), (a,), (en.ones_like(a),))


def test_pinv_tangent_of_a_full_rank_wide_matrix():
    rng = _rng()
    a, da = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    _check_jvp(en.linalg.pinv, [a], [da])


def test_running_sort_pad_and_scatter_tangents():
    rng = _rng()
    x, v = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    _check_jvp(lambda x: en.cumsum(x, axis=1), [x], [v])
    _check_jvp(lambda x: en.cummax(x, axis=0), [x], [v])
    zeros = x.copy()
    zeros[0, 1] = zeros[1, 0] = zeros[1, 3] = 0.0     # one zero in a row, two in another
    _check_jvp(lambda x: en.cumprod(x, axis=1), [zeros], [v])
    _check_jvp(lambda x: en.cumprod(x, axis=0), [zeros], [v])
    _check_jvp(lambda x: en.cummin(x, axis=-1), [x], [v])
    _check_jvp(lambda x: en.sort(x, axis=0, descending=True), [x], [v])
    _check_jvp(lambda x: en.pad(x, ((1, 2), (0, 1)), constant_values=3.0), [x], [v])
    _check_jvp(lambda x: en.pad(x, 2, mode="reflect"), [x], [v])
    idx = en.tensor(np.array([[4, 0], [1, 1], [2, 3]]))
    vals, dvals = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    _check_jvp(lambda x, w: en.put_along_axis(x, idx, w, axis=1), [x, vals], [v, dvals])


def _check_vmap(f, in_axes, *args):
    """vmap of ``f`` against a Python loop over the batch, eagerly and in a graph."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = [f(*[en.tensor(a if ax is None else np.take(a, i, axis=ax))
                for a, ax in zip(args, in_axes)]) for i in range(size)]
    want = np.stack([np.asarray(r) for r in rows])
    tensors = [en.tensor(a) for a in args]
    for got in (en.vmap(f, in_axes=in_axes)(*tensors),
                en.function(en.vmap(f, in_axes=in_axes))(*tensors)):
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_solve_batches_with_an_unbatched_operand_and_stacks_of_other_ranks():
    rng = _rng()
    a = rng.standard_normal((5, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((5, 2, 3, 4))
    _check_vmap(en.linalg.solve, (0, None), a, b[0])           # batched A, one B
    _check_vmap(en.linalg.solve, (None, 0), a[0], b)           # one A, batched stack of B
    _check_vmap(en.linalg.solve, (0, 0), a, b)                 # A (3,3), B (2,3,4) per element
    _check_vmap(en.linalg.solve, (2, 1), np.moveaxis(a, 0, 2), np.moveaxis(b, 0, 1))


def test_running_sort_and_pad_batch_along_the_element_axis():
    rng = _rng()
    x = rng.standard_normal((4, 3, 5))
    for f in (lambda t: en.cumsum(t, axis=-1), lambda t: en.cumprod(t, axis=0),
              lambda t: en.cummax(t, axis=1), lambda t: en.cummin(t, axis=0),
              lambda t: en.sort(t, axis=-1), lambda t: en.argsort(t, axis=0, descending=True),
              lambda t: en.pad(t, ((1, 0), (2, 1)), mode="wrap")):
        _check_vmap(f, (0,), x)
        _check_vmap(f, (2,), np.moveaxis(x, 0, 2))


def test_put_along_axis_batches_with_unbatched_input_or_indices():
    rng = _rng()
    x = rng.standard_normal((4, 3, 5))
    idx = rng.integers(0, 5, size=(4, 3, 2))
    vals = rng.standard_normal((4, 3, 2))

    def put(x, i, v):
        return en.put_along_axis(x, i, v, axis=1)
    _check_vmap(put, (0, 0, 0), x, idx, vals)
    _check_vmap(put, (None, 0, 0), x[0], idx, vals)
    _check_vmap(put, (0, None, 0), x, idx[0], vals)
    _check_vmap(put, (0, 0, None), x, idx, vals[0])
