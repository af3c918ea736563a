"""examples/char_transformer.py and examples/lstm_sequence.py in their short forms: both
learn (against independent yardsticks: the uniform guess's loss ln(vocabulary), the
persistence forecast), the eager and traced runs agree step by step, and the command
lines print the step times (PyTorch's too when it is installed)."""
import importlib.util
import math
import os

import numpy as np
import pytest
from support.paths import REPO


def _load(name):
    spec = importlib.util.spec_from_file_location(f"{name}_example",
                                                  os.path.join(REPO, "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def char_lm():
    return _load("char_transformer")


@pytest.fixture(scope="module")
def lstm_example():
    return _load("lstm_sequence")


def test_char_transformer_learns_and_graph_matches_eager(char_lm):
    result = char_lm.run("quick", steps=30, progress=False, verbose=False, compare_torch=False,
                         sample_length=40)
    eager, graph = result["losses"]["eager"], result["losses"]["graph"]
    np.testing.assert_allclose(graph, eager, rtol=1e-4)
    # Before training the model is close to a uniform guess over the characters.
    assert abs(eager[0] - math.log(result["vocab"])) < 0.5
    assert np.mean(eager[-10:]) < eager[0] - 1.0
    sample = result["sample"]
    assert sample.startswith("MENENIUS:\n") and len(sample) == len("MENENIUS:\n") + 40
    assert set(sample) <= set(char_lm.load_text())


def test_char_transformer_text_ships_with_the_package(char_lm):
    with open(os.path.join(REPO, "engine", "data", "shakespeare.txt"), encoding="utf-8") as f:
        assert char_lm.load_text() == f.read()
    with open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8") as f:
        assert '"engine.data" = ["*.txt"]' in f.read()      # installed as package data


def test_lstm_example_beats_persistence_and_graph_matches_eager(lstm_example):
    result = lstm_example.run("quick", progress=False, verbose=False, compare_torch=False)
    eager, graph = result["losses"]["eager"], result["losses"]["graph"]
    np.testing.assert_allclose(graph, eager, rtol=1e-4)
    assert np.mean(eager[-10:]) < 0.2 * eager[0]
    assert result["test_mse"]["eager"] < result["persistence_mse"]
    np.testing.assert_allclose(result["test_mse"]["graph"], result["test_mse"]["eager"],
                               rtol=1e-4)


@pytest.mark.parametrize("name", ["char_transformer", "lstm_sequence"])
def test_command_line_prints_step_times(name, capsys):
    _load(name).main(["--quick", "--steps", "3", "--no-progress"])
    out = capsys.readouterr().out
    line = next(text for text in out.splitlines() if text.startswith("step times:"))
    assert "eager" in line and "graph" in line
    if importlib.util.find_spec("torch") is not None:
        assert "torch" in line


def test_progress_is_tqdm_when_installed_else_text(capsys, monkeypatch):
    helpers = _load("training_helpers")
    losses, seconds = helpers.train_steps(lambda a: a * 2.0, [(1.0,), (2.0,), (3.0,)], "demo")
    assert losses == [2.0, 4.0, 6.0] and len(seconds) == 3
    if helpers.tqdm is not None:
        assert helpers.Progress(3, "demo").bar is not None
    monkeypatch.setattr(helpers, "tqdm", None)
    helpers.train_steps(lambda a: a, [(0.5,)] * 5, "plain")
    lines = [t for t in capsys.readouterr().out.splitlines() if t.strip().startswith("plain")]
    assert lines[-1].strip() == "plain: step 5/5 loss 0.5000"
