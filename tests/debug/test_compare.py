"""``en.debug.compare`` on correct programs (it must report ok), its report and repro
script, and the checked calls of ``en.function(shadow=..., validate=N)``."""
import runpy

import numpy as np
import pytest

import engine as en
from engine import ops
from bench.workloads import autoencoder
from bench.workloads.rnn import gru_cell
from support.compilers import import_numba


def _autoencoder_step(dtype):
    problem = autoencoder.Problem(64)
    args = [en.tensor(a) for a in problem.arrays(dtype)]
    return en.value_and_grad(autoencoder.engine_loss, argnums=(0, 1, 2)), args


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_autoencoder_training_step_agrees(dtype):
    step, args = _autoencoder_step(dtype)
    report = en.debug.compare(step, *args)
    assert report.ok, str(report)
    assert report.checked >= 5
    assert report.first is None and "all agree" in str(report)


def _gru_scan_loss(h0, xs, *p):
    def step(h, x):
        h = gru_cell(h, x, p)
        return h, h
    _, hs = en.scan(step, h0, xs)
    return en.mean(hs ** 2.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_scan_step_agrees(dtype):
    rng = np.random.default_rng(0)
    hidden, features = 8, 3
    shapes = [(features, hidden), (hidden, hidden), (hidden,)] * 3
    p = [en.tensor(rng.uniform(-0.5, 0.5, s).astype(dtype)) for s in shapes]
    h0 = en.tensor(np.zeros((4, hidden), dtype))
    xs = en.tensor(rng.uniform(-1, 1, (5, 4, features)).astype(dtype))
    step = en.grad(_gru_scan_loss, argnums=tuple(range(2, 11)))
    report = en.debug.compare(step, h0, xs, *p)
    assert report.ok, str(report)


@pytest.mark.parametrize("lowering, dtype", [("c", np.float32), ("c", np.float64),
                                             ("numba", np.float32)])   # numba: 12 s to compile
def test_autoencoder_step_agrees_in_compiled_lowerings(monkeypatch, lowering, dtype):
    """C's and numba's kernels (contraction, their own exp) differ from eager's in the
    last bits only: within the criterion."""
    if lowering == "numba":
        import_numba()
    monkeypatch.setattr(en.config, "lowering", lowering)
    step, args = _autoencoder_step(dtype)
    function = en.function(step)
    report = en.debug.compare(function, *args)
    assert report.ok, str(report)
    kernels = {n.meta.get("backend") for n in function.graph_for(*args).nodes}
    assert lowering in kernels


@pytest.mark.parametrize("lowering", ["numpy", "c"])
def test_lowerings_agree(monkeypatch, lowering):
    monkeypatch.setattr(en.config, "lowering", lowering)
    x = en.tensor(np.random.default_rng(1).uniform(-2, 2, (64, 64)).astype(np.float32))
    report = en.debug.compare(lambda x: en.tanh(x) * en.exp(-x * x) + 1.0, x)
    assert report.ok, str(report)


def test_a_wrong_kernel_is_reported_with_figures(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "numpy")
    exp = ops.exp_op.out_impl

    def wrong(x, out=None):
        exp(x, out=out)
        out[0] += 1.0
        return out
    monkeypatch.setattr(ops.exp_op, "out_impl", wrong)
    x = en.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    report = en.debug.compare(lambda x: en.exp(x) * 2.0, x)
    f = report.first.figures
    # The member exp alone is off by exactly 1 in row 0: an independent figure.
    assert report.first.traced_op == "exp"
    assert f.graph_abs == pytest.approx(1.0, rel=1e-6)
    assert f.eager_abs < 1e-6
    text = str(report)
    assert "fused region" in text and "test_compare.py" in text and "max abs 1" in text


def test_repro_script_reproduces(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(en.config, "lowering", "numpy")
    monkeypatch.setattr(ops.sin_op, "out_impl", _scaled(ops.sin_op.out_impl))
    x = en.tensor(np.random.default_rng(2).uniform(-1, 1, (6, 5)).astype(np.float32))

    def f(x):
        h = x @ x.T
        return en.sin(h) * 3.0, h
    report = en.debug.compare(f, x)
    assert not report.ok
    path = report.write_repro(tmp_path / "repro.py")
    text = path and open(path).read()
    assert "lookup('sin')" in text and "matmul" not in text   # the smallest subgraph
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(path), run_name="__main__")
    assert exit_.value.code == 1
    assert "fused region" in capsys.readouterr().out
    monkeypatch.undo()      # the kernel fixed: the same script runs clean
    en.config.lowering = "numpy"
    try:
        with pytest.raises(SystemExit) as exit_:
            runpy.run_path(str(path), run_name="__main__")
    finally:
        en.config.lowering = "auto"
    assert exit_.value.code == 0


def _scaled(fn, factor=1.01):
    """A unary ``out=`` kernel off by ``factor`` (out given by position or by name)."""
    def wrong(x, out=None):
        out = fn(x, out=out)
        np.multiply(out, factor, out=out)
        return out
    return wrong


def test_validate_checks_first_calls_then_a_sample(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "numpy")
    f = en.function(lambda x: en.cos(x) * 2.0 + 1.0, validate=2)
    x = en.tensor(np.ones((3, 3), np.float32))
    for _ in range(5):
        f(x)
    checks = f.get_concrete_function(x).checks
    assert (checks.calls, checks.checked) == (5, 2)
    monkeypatch.setattr(ops.cos_op, "out_impl", _scaled(ops.cos_op.out_impl))
    g = en.function(lambda x: en.cos(x) * 2.0 + 1.0, validate=1)
    with pytest.raises(en.NumericsError, match=r"test_compare.py:\d+") as err:
        g(x)
    assert "fused region" in str(err.value) and not err.value.report.ok


def test_validate_samples_every_hundredth_call(monkeypatch):
    f = en.function(lambda x: x * 2.0, validate=1)
    x = en.tensor(np.ones(3))
    for _ in range(250):
        f(x)
    assert f.get_concrete_function(x).checks.checked == 1 + 2      # calls 1, 100 and 200


def test_shadow_checks_every_call(monkeypatch):
    f = en.function(lambda x: en.sqrt(x) + 1.0, shadow=True)
    x = en.tensor(np.full(4, 2.0))
    for _ in range(3):
        np.testing.assert_allclose(f(x).numpy(), np.sqrt(2.0) + 1.0)
    assert f.get_concrete_function(x).checks.checked == 3
    monkeypatch.setattr(en.config, "shadow", True)
    g = en.function(lambda x: x - 1.0)
    g(x)
    assert g.get_concrete_function(x).checks.checked == 1


def test_validate_refuses_a_bad_count():
    with pytest.raises(en.InvalidArgumentError, match="validate"):
        en.function(lambda x: x, validate=-1)


def test_an_ok_report_has_nothing_to_reproduce(tmp_path):
    report = en.debug.compare(lambda x: x * 2.0, en.ones(3))
    with pytest.raises(en.InvalidArgumentError, match="nothing diverges"):
        report.write_repro(tmp_path / "r.py")


def test_the_functions_own_passes_run(monkeypatch):
    """A pass given as a function (not in the pipeline's table) is what the trace runs."""
    from engine.graph.ir.graph_ops import constant_op

    def halve_constants(graph):
        for node in graph.nodes:
            if node.op is constant_op and not node.meta.get("halved"):
                node.params = {"value": np.asarray(node.params["value"]) / 2}
                node.meta["halved"] = True
        return False
    f = en.function(lambda x: x * 3.0, passes=[halve_constants])
    report = en.debug.compare(f, en.ones(3))
    assert not report.ok and "halve_constants" in report.first.made_by
    assert report.first.figures.graph_abs == pytest.approx(1.5)
