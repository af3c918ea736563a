"""en.save / en.load with a back end other than numpy: variables saved from
array_api_strict arrays, a graph loaded to run on array_api_strict (its variables
hold that back end's arrays), gradients through it, and the refusal of another
back end's tensors, against the same computation in numpy."""
import numpy as np
import pytest

import engine as en

xps = pytest.importorskip("array_api_strict")


def _saved(tmp_path):
    w = en.Variable(xps.asarray([[1.0, -2.0], [0.5, 3.0]]), name="w")
    x = en.tensor([1.0, 2.0], backend="array_api_strict")

    def model(a):
        return en.tanh(en.matmul(w, a)) * 2.0

    path = tmp_path / "model"
    en.save(model, path, x)
    return path, np.asarray(xps.asarray([[1.0, -2.0], [0.5, 3.0]]))


def test_loaded_on_another_backend_runs_there_and_matches_numpy(tmp_path):
    path, w = _saved(tmp_path)
    loaded = en.load(path, backend="array_api_strict")
    assert [v.backend.name for v in loaded.variables] == ["array_api_strict"]
    a = np.array([0.3, -0.7])
    out = loaded(en.tensor(a, backend="array_api_strict"))
    assert out.backend.name == "array_api_strict"
    np.testing.assert_allclose(out.numpy(), np.tanh(w @ a) * 2.0)
    on_numpy = en.load(path)
    np.testing.assert_allclose(on_numpy(en.tensor(a)).numpy(), np.tanh(w @ a) * 2.0)


def test_gradient_of_a_loaded_variable_on_another_backend(tmp_path):
    path, w = _saved(tmp_path)
    loaded = en.load(path, backend="array_api_strict")
    a = np.array([0.3, -0.7])
    with en.GradientTape() as tape:
        y = en.sum(loaded(en.tensor(a, backend="array_api_strict")))
    g = tape.gradient(y, loaded.variables[0])
    assert g.backend.name == "array_api_strict"
    want = 2.0 * np.outer(1.0 - np.tanh(w @ a) ** 2, a)     # d/dw of sum(2 tanh(w a))
    np.testing.assert_allclose(g.numpy(), want)


def test_tensors_of_another_backend_are_refused_by_name(tmp_path):
    path, _ = _saved(tmp_path)
    loaded = en.load(path, backend="array_api_strict")
    with pytest.raises(en.BackendError, match="runs on array_api_strict"):
        loaded(en.ones(2))
