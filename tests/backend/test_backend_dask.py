"""Tensors on the Dask back end, eagerly: the whole op database, gradients, mixing
with numpy parameters, and ``en.compute``.

Every op-database entry runs on Dask tensors (each op adds Dask tasks; the
result is computed when read) and must equal the numpy reference to the op
database's tolerances; gradients taken with a tape on Dask tensors must equal
those on numpy tensors.
"""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import engine as en  # noqa: E402
from op_db import ALL_ENTRIES, F64, call_ref, seeded_rng  # noqa: E402
from support.programs import flat
from support.op_checks import assert_matches

DASK = "dask"


def on_dask(value):
    """A sample's numpy arrays (also inside lists and tuples) as Dask tensors of two
    chunks along the first axis where there are at least two rows."""
    if isinstance(value, (np.ndarray, np.generic)):
        a = np.asarray(value)
        chunks = (max(1, (a.shape[0] + 1) // 2),) + a.shape[1:] if a.ndim else ()
        return en.tensor(da.from_array(a, chunks=chunks))
    if isinstance(value, (list, tuple)):
        return type(value)(on_dask(v) for v in value)
    return value


def _cases():
    for info in ALL_ENTRIES:
        for dtype in info.dtypes:
            yield pytest.param(info, dtype, id=f"{info.name}-{np.dtype(dtype).name}")


@pytest.mark.parametrize("info,dtype", list(_cases()))
def test_op_db_on_dask_matches_numpy(info, dtype):
    samples = list(info.sample_inputs(dtype, seeded_rng(info.name, dtype)))
    assert samples, f"{info.name}: no samples for {dtype}"
    for sample in samples:
        where = f"{info.name} on {sample} (dask, eager)"
        with en.backend.use(DASK):   # creation ops (no tensor inputs) make Dask tensors
            out = info.op(*[on_dask(a) for a in sample.args], **sample.kwargs)
        outs = flat(out)
        for o in outs:
            assert isinstance(o, en.Tensor) and o.backend.name == DASK, (
                f"{where}: a result is on {getattr(o, 'backend', type(o))}, not dask")
        with np.errstate(all="ignore"):
            expected = call_ref(info, sample)
        assert_matches([np.array(o.numpy()) for o in outs], expected, where)


def test_tape_gradient_on_dask_data_with_numpy_parameters_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.random((30, 4))
    w = en.Variable(rng.normal(size=(4, 3)))
    b = en.Variable(np.zeros(3))

    def loss(x):
        return en.mean(en.log1p(en.exp(en.matmul(x, w) + b)))

    grads = {}
    for name, xt in (("numpy", en.tensor(x)), ("dask", en.tensor(da.from_array(x, chunks=(7, 4))))):
        with en.GradientTape() as tape:
            value = loss(xt)
        gw, gb = tape.gradient(value, [w, b])
        assert gw.backend.name == name and value.backend.name == name
        grads[name] = [np.array(v.numpy()) for v in en.compute(value, gw, gb)]
    for a, b_ in zip(grads["numpy"], grads["dask"]):
        np.testing.assert_allclose(b_, a, rtol=1e-12)


def test_compute_returns_numpy_tensors_and_shares_the_work():
    calls = []

    def load(block):
        if block.shape == (3, 2):   # Dask also calls it on tiny blocks, to learn the dtype
            calls.append(1)
        return block

    x = da.from_array(np.arange(12.0).reshape(6, 2), chunks=(3, 2)).map_blocks(load)
    t = en.tensor(x)
    s, m = en.compute(en.sum(t), en.max(t))
    assert (s.backend.name, m.backend.name) == ("numpy", "numpy")
    assert (float(s), float(m)) == (66.0, 11.0)
    assert len(calls) == 2     # each chunk read once for both results


def test_mixing_dask_with_another_non_numpy_back_end_names_both():
    pytest.importorskip("array_api_strict")
    a = en.tensor(da.ones((2,), chunks=1))
    b = en.tensor([1.0, 2.0], backend="array_api_strict")
    with pytest.raises(en.BackendError, match=r"op 'add'.*dask.*array_api_strict|array_api_strict.*dask"):
        a + b


def test_compute_refuses_what_is_not_a_tensor():
    with pytest.raises(en.EngineError, match="en.compute: argument 0 is list"):
        en.compute([1.0])


def test_check_numerics_names_the_chunk_the_op_and_the_line_of_an_eager_op():
    x = np.random.default_rng(1).random((97, 4))
    x[60, 2] = -1.0
    with np.errstate(invalid="ignore"):
        bad_rows = np.nonzero(~np.isfinite(np.log(x)).all(axis=1))[0]
    (chunk,) = set(bad_rows // 25)                       # numpy's answer: one chunk
    t = en.tensor(da.from_array(x, chunks=(25, 4)))
    with en.debug.check_numerics():
        y = en.log(t) * 2.0                              # lazy: nothing is computed yet
        fine = float(en.sum(en.exp(t)))
        with pytest.raises(en.ChunkError, match=rf"(?s)op 'log' produced NaN in chunk {chunk} "
                                                r"\(25 rows\).*test_backend_dask.py:\d+ in "
                                                r"test_check_numerics"):
            float(en.sum(y))
    np.testing.assert_allclose(fine, np.exp(x).sum(), rtol=1e-12)
    with pytest.raises(en.ChunkError, match="op 'log'"):   # the check was made with the op
        y.numpy()
    with np.errstate(invalid="ignore"):
        assert np.isnan(float(en.sum(en.log(t))))       # without the check: numpy's NaN
