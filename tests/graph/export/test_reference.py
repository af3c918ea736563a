"""Exports that can be checked: ``en.save(..., reference=True)`` stores inputs and outputs,
``en.load(..., verify=True)`` refuses a file whose outputs are not reproduced, and
``en.export_onnx`` checks its model in onnxruntime before writing it."""
import glob
import json
import os

import numpy as np
import pytest

import engine as en
from engine.graph.export.onnx_errors import OnnxExportError
from engine import VerificationError


def _mlp():
    rng = np.random.default_rng(0)
    w1 = en.Variable(rng.standard_normal((4, 8)).astype(np.float32), name="w1")
    w2 = en.Variable(rng.standard_normal((8, 2)).astype(np.float32), name="w2")
    return en.function(lambda x: en.tanh(x @ w1) @ w2), (w1, w2)


def _x():
    return en.tensor(np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32))


def _want(x, w1, w2):
    return np.tanh(x.numpy() @ w1.numpy()) @ w2.numpy()


def test_a_saved_reference_is_reproduced_on_load(tmp_path):
    f, (w1, w2) = _mlp()
    path = str(tmp_path / "mlp")
    en.save(f, path, _x(), reference=True)
    g = en.load(path, verify=True)
    inputs, outputs, rtol, atol = g.reference
    np.testing.assert_array_equal(inputs[0], _x().numpy())
    np.testing.assert_allclose(outputs[0], _want(_x(), w1, w2), rtol=1e-5, atol=1e-6)
    assert rtol == 1e-5 and atol >= rtol     # float32's default: a few ULPs
    report = g.verify()
    assert report.ok and report.max_abs <= atol and "ok" in repr(report)


def test_changed_weights_are_refused_naming_the_output_and_the_difference(tmp_path):
    f, _ = _mlp()
    path = str(tmp_path / "mlp")
    en.save(f, path, _x(), reference=True)
    g = en.load(path)
    g.variables[0].assign(g.variables[0].numpy() * 1.01)    # what a damaged file would hold
    report = g.verify()
    assert not report.ok and report.worst == 0 and report.max_abs > report.atol
    _damage_variable(path)
    with pytest.raises(VerificationError, match=r"output 0 differs by .* beyond the stored "
                                                r"tolerance rtol=1e-05"):
        en.load(path, verify=True)
    en.load(path)     # without verify it loads (what the flag is for)


def test_a_machine_that_computes_differently_is_refused(tmp_path, monkeypatch):
    f, _ = _mlp()
    path = str(tmp_path / "mlp")
    en.save(f, path, _x(), reference=True)
    # This "machine"'s tanh is off in the fourth digit: the file's reference catches it.
    monkeypatch.setattr(en.config, "lowering", "numpy")
    tanh = en.ops.tanh_op.out_impl

    def off(x, out=None):
        tanh(x, out=out)
        out *= np.float32(1.001)
        return out
    monkeypatch.setattr(en.ops.tanh_op, "out_impl", off)
    with pytest.raises(VerificationError, match="not reproduced on this machine"):
        en.load(path, verify=True)


def test_a_looser_stored_tolerance_accepts_a_small_change(tmp_path):
    f, _ = _mlp()
    path = str(tmp_path / "mlp")
    en.save(f, path, _x(), reference=True, tolerance=(0.5, 0.5))
    _damage_variable(path, factor=1.0001)
    g = en.load(path, verify=True)
    assert g.reference[2:] == (0.5, 0.5)
    assert 0 < g.verify().max_abs < 0.5


def test_verify_needs_a_reference_and_a_reference_needs_example_arguments(tmp_path):
    path = str(tmp_path / "plain")
    en.save(lambda x: x * 2.0, path, en.ones(2))
    with pytest.raises(VerificationError, match="reference=True"):
        en.load(path, verify=True)
    with pytest.raises(VerificationError, match="reference=True"):
        en.load(path).verify()
    f = en.function(lambda x: x * 2.0, input_signature=[en.TensorSpec((None,), "float64")])
    with pytest.raises(en.EngineError, match="give example arguments"):
        en.save(f, str(tmp_path / "sig"), reference=True)
    with pytest.raises(en.EngineError, match="reference=True too"):
        en.save(lambda x: x, str(tmp_path / "t"), en.ones(2), tolerance=(1e-3, 0))
    with pytest.raises(en.EngineError, match=r"tolerance must be"):
        en.save(lambda x: x, str(tmp_path / "t"), en.ones(2), reference=True, tolerance=(-1, 0))


def test_integer_and_structured_outputs_are_compared_exactly(tmp_path):
    path = str(tmp_path / "argmax")
    fn = en.function(lambda x: {"i": en.argmax(x, axis=1), "s": en.sum(x)})
    x = en.tensor([[1.0, 3.0], [4.0, 2.0]])
    en.save(fn, path, x, reference=True)
    g = en.load(path, verify=True)
    assert [o.tolist() for o in g.reference[1]] == [[1, 0], 10.0]


@pytest.mark.parametrize("field, value, match", [
    ("rtol", -1.0, "reference.rtol"),
    ("inputs", [0], "belongs|the graph's or a variable's"),
    ("outputs", [99], "not an index below"),
])
def test_a_malformed_reference_field_is_a_load_error(tmp_path, field, value, match):
    f, _ = _mlp()
    path = str(tmp_path / "mlp")
    en.save(f, path, _x(), reference=True)
    doc_path = os.path.join(path, "graph.json")
    with open(doc_path) as fh:
        doc = json.load(fh)
    doc["reference"][field] = value
    with open(doc_path, "w") as fh:
        json.dump(doc, fh)
    with pytest.raises(en.LoadError, match=match):
        en.load(path)


def _damage_variable(path, factor=1.01):
    """Scale the first variable's stored values (the file then computes other outputs)."""
    with open(os.path.join(path, "graph.json")) as fh:
        doc = json.load(fh)
    (npz,) = glob.glob(os.path.join(path, "arrays.*.npz"))
    with np.load(npz) as data:
        arrays = {k: data[k] for k in data.files}
    key = f"a{doc['variables'][0]['array']}"
    arrays[key] = (arrays[key] * factor).astype(arrays[key].dtype)
    np.savez(npz, **arrays)


# ---- ONNX ------------------------------------------------------------------------------
ort = pytest.importorskip("onnxruntime")


def test_onnx_export_reports_its_largest_difference_from_the_engine(tmp_path):
    f, (w1, w2) = _mlp()
    model = en.export_onnx(f, str(tmp_path / "mlp.onnx"), _x())
    meta = {p.key: float(p.value) for p in model.metadata_props}
    # Independently: onnxruntime's outputs against numpy's.
    session = ort.InferenceSession(str(tmp_path / "mlp.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: _x().numpy()})[0]
    want = _want(_x(), w1, w2)
    assert meta["engine.onnxruntime_max_abs_difference"] < 1e-4
    assert np.max(np.abs(got - want)) < 1e-4


def test_onnx_export_refuses_a_model_onnxruntime_computes_differently(tmp_path, monkeypatch):
    f, _ = _mlp()
    rule = en.ops.tanh_op.rules["onnx"]
    monkeypatch.setitem(en.ops.tanh_op.rules, "onnx", ("node", "Sigmoid"))   # a wrong rule
    target = tmp_path / "broken.onnx"
    with pytest.raises(OnnxExportError, match="onnxruntime's outputs differ"):
        en.export_onnx(f, str(target), _x())
    assert not target.exists()           # nothing written
    monkeypatch.setitem(en.ops.tanh_op.rules, "onnx", rule)
    en.export_onnx(f, str(target), _x())
    assert target.exists()
