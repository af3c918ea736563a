"""ONNX export of the elementwise math of ``math_unary``, ``math_binary`` and ``bitwise``:
every op with an ONNX rule runs in onnxruntime on op-database samples of every dtype
it claims and matches numpy; bitwise ops on integers need opset 18 and say so."""
import numpy as np
import pytest

import engine as en
from engine.ops import bitwise, math_binary, math_unary
from op_db import OPS_BY_NAME, seeded_rng

onnx = pytest.importorskip("onnx", reason="the optional onnx extra is not installed")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

EXPORTED = sorted(v.name for m in (math_unary, math_binary, bitwise) for v in vars(m).values()
                  if isinstance(v, en.Op) and v.rules.get("onnx") is not None)
# onnxruntime has no kernel for these on some dtypes (the models are valid ONNX).
# onnxruntime has no float64 kernel for these (the models are valid ONNX); int32 and int64
# inputs compute in float64 too.
_NO_DOUBLE = ["arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "cosh", "erf", "erfc",
              "sinh", "tan"]
ORT_MISSING = {(name, "float64") for name in _NO_DOUBLE} | {
    (name, dt) for name in _NO_DOUBLE if name not in ("erf", "erfc") for dt in ("int32", "int64")}



def _run(path, args):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: a for n, a in zip(names, args)})


def _cases():
    for name in EXPORTED:
        for dtype in OPS_BY_NAME[name].dtypes:
            marks = [pytest.mark.xfail(reason="onnxruntime has no kernel for this dtype",
                                       strict=True)] if (name, dtype.name) in ORT_MISSING else []
            yield pytest.param(name, dtype, id=f"{name}-{dtype}", marks=marks)


@pytest.mark.parametrize("name,dtype", list(_cases()))
def test_exported_op_runs_in_onnxruntime(name, dtype, tmp_path):
    info = OPS_BY_NAME[name]
    opset = 18 if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert") else 17
    checked = 0
    for sample in info.sample_inputs(dtype, seeded_rng(name, "onnx")):
        args = sample.args
        if sample.kwargs or not all(isinstance(a, np.ndarray) and a.ndim == 2 for a in args):
            continue
        path = str(tmp_path / f"{name}.onnx")
        f = en.function(lambda *ts: info.op(*ts))
        en.export_onnx(f, path, *[en.tensor(a) for a in args], opset=opset)
        onnx.checker.check_model(onnx.load(path))
        with np.errstate(all="ignore"):
            want = np.asarray(info.ref(*args))
        (got,) = _run(path, list(args))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == np.float32 else 1e-12,
                                   atol=1e-6 if dtype == np.float32 else 1e-12, equal_nan=True,
                                   err_msg=f"{name} on {sample}")
        checked += 1
    assert checked, f"{name}: no 2-d sample"


def test_mod_and_floor_division_take_numpys_signs(tmp_path):
    x = np.array([7.5, -7.5, 7.5, -7.5, 0.0, 6.0, -6.0, 1.0])
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, -3.0, 0.1])
    for name, ref in [("mod", np.remainder), ("floor_divide", np.floor_divide),
                      ("fmod", np.fmod)]:
        for dt in ("float64", "int64"):
            a, b = x.astype(dt), y.astype(dt)
            if dt == "int64":
                b = np.where(b == 0, 3, b)
            path = str(tmp_path / f"{name}_{dt}.onnx")
            en.export_onnx(en.function(getattr(en, name)), path, en.tensor(a), en.tensor(b))
            (got,) = _run(path, [a, b])
            np.testing.assert_array_equal(got, ref(a, b), err_msg=f"{name} {dt}")


def test_bitwise_on_integers_needs_opset_18(tmp_path):
    f = en.function(lambda a, b: a & b)
    t = en.tensor(np.array([12, 10]))
    with pytest.raises(en.EngineError, match="opset 18"):
        en.export_onnx(f, str(tmp_path / "and.onnx"), t, t)
    # On bools the logical op serves, at opset 17.
    b = en.tensor(np.array([True, False]))
    path = str(tmp_path / "and_bool.onnx")
    en.export_onnx(f, path, b, b)
    np.testing.assert_array_equal(_run(path, [np.array([True, False]), np.array([True, True])])[0],
                                  [True, False])
