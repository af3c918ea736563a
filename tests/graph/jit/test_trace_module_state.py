"""A traced function depends on the settings of the modules it ran (issue #45 item 1):
``m.eval()``, a Dropout's ``rate`` or a GELU's ``approximate`` changed after a trace
retraces, names the change in the retrace log, and gives what eager mode and numpy
give; switching back reuses the first trace."""
import logging
import math

import numpy as np

import engine as en

RNG = np.random.default_rng(45)
X = RNG.normal(size=(64, 4)).astype(np.float32)


def np_linear(x, lin):
    return x @ lin.weight.numpy() + lin.bias.numpy()


def np_batch_norm_eval(y, bn):
    return ((y - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + bn.eps)
            * bn.weight.numpy() + bn.bias.numpy())


def np_batch_norm_train(y, bn):
    return (y - y.mean(0)) / np.sqrt(y.var(0) + bn.eps) * bn.weight.numpy() + bn.bias.numpy()


def test_eval_after_a_training_trace_uses_eval_mode():
    lin, bn, drop = en.nn.Linear(4, 4, generator=0), en.nn.BatchNorm(4), en.nn.Dropout(0.5)
    m = en.nn.Sequential(lin, bn, drop)
    f = en.function(lambda x: m(x))
    train_out = f(en.tensor(X)).numpy()
    zeroed = np.mean(train_out == 0)
    assert 0.3 < zeroed < 0.7                  # training: dropout zeroes about half
    m.eval()
    got = f(en.tensor(X)).numpy()
    # eval: no dropout, batch norm with the running statistics the training call left
    want = np_batch_norm_eval(np_linear(X, lin), bn)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert f.trace_count == 2


def test_switching_back_reuses_each_modes_trace():
    lin, bn = en.nn.Linear(4, 4, generator=1), en.nn.BatchNorm(4, momentum=0.0)
    m = en.nn.Sequential(lin, bn)
    f = en.function(lambda x: m(x))
    y = np_linear(X, lin)
    for mode in (True, False, True, False):
        m.train(mode)
        want = np_batch_norm_train(y, bn) if mode else np_batch_norm_eval(y, bn)
        np.testing.assert_allclose(f(en.tensor(X)).numpy(), want, rtol=1e-4, atol=1e-4)
    assert f.trace_count == 2


def test_retrace_log_names_the_setting(caplog):
    m = en.nn.Sequential(en.nn.Linear(4, 4, generator=2), en.nn.Dropout(0.5))
    f = en.function(lambda x: m(x))
    f(en.tensor(X))
    m.eval()
    with caplog.at_level(logging.INFO, logger="engine.graph"):
        f(en.tensor(X))
    text = caplog.text
    assert "retracing" in text and "training changed from True to False" in text
    assert "Sequential" in text


def test_any_setting_a_layer_reads_retraces():
    act = en.nn.GELU()
    f = en.function(lambda x: act(x))
    x = np.linspace(-4.0, 4.0, 33)
    exact = 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    tanh = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(f(en.tensor(x)).numpy(), exact, rtol=1e-12, atol=1e-14)
    act.approximate = "tanh"
    np.testing.assert_allclose(f(en.tensor(x)).numpy(), tanh, rtol=1e-12, atol=1e-14)

    drop = en.nn.Dropout(0.5)
    g = en.function(lambda x: drop(x))
    assert np.mean(g(en.tensor(X)).numpy() == 0) > 0.3
    drop.rate = 0.0
    np.testing.assert_array_equal(g(en.tensor(X)).numpy(), X)


def test_reading_training_directly_is_a_dependency_too():
    m = en.nn.Linear(4, 4, generator=3)
    f = en.function(lambda x: en.nn.functional.dropout(x, 0.5, training=m.training))
    assert np.mean(f(en.tensor(X)).numpy() == 0) > 0.3
    m.eval()
    np.testing.assert_array_equal(f(en.tensor(X)).numpy(), X)


def test_module_argument_input_signature_and_nested_functions():
    drop = en.nn.Dropout(0.5)
    by_argument = en.function(lambda mod, x: mod(x))
    with_spec = en.function(lambda x: drop(x), input_signature=[en.TensorSpec((64, 4))])
    inner = en.function(lambda x: drop(x))
    outer = en.function(lambda x: inner(x) * 1.0)
    for f in (by_argument, with_spec, outer):
        call = (lambda x: f(drop, x)) if f is by_argument else f
        drop.train()
        assert np.mean(call(en.tensor(X)).numpy() == 0) > 0.3
        drop.eval()
        np.testing.assert_array_equal(call(en.tensor(X)).numpy(), X)


def test_unrelated_module_changes_keep_the_trace():
    used, other = en.nn.Linear(4, 4, generator=4), en.nn.Dropout(0.5)
    f = en.function(lambda x: used(x))
    f(en.tensor(X))
    other.eval()
    en.nn.Linear(4, 2)                         # building modules sets attributes too
    np.testing.assert_allclose(f(en.tensor(X)).numpy(), np_linear(X, used), rtol=1e-5, atol=1e-5)
    assert f.trace_count == 1


def test_a_function_held_as_a_setting_is_guarded_by_identity():
    class Act(en.nn.Module):
        def __init__(self):
            super().__init__()
            self.act = en.relu

        def forward(self, x):
            return self.act(x)

    m = Act()
    f = en.function(lambda x: m(x))
    np.testing.assert_array_equal(f(en.tensor(X)).numpy(), np.maximum(X, 0))
    m.act = en.tanh
    np.testing.assert_allclose(f(en.tensor(X)).numpy(), np.tanh(X), rtol=1e-6)
    assert f.trace_count == 2


def test_a_model_compiled_itself_retraces_on_its_settings():
    # en.function(model): AutoGraph runs the model's converted forward, as a call would.
    class Scaled(en.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0
            self.drop = en.nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(x) * self.scale

    m = Scaled().eval()
    f = en.function(m)
    np.testing.assert_array_equal(f(en.tensor(X)).numpy(), X * 2.0)
    m.scale = 3.0
    np.testing.assert_array_equal(f(en.tensor(X)).numpy(), X * 3.0)
    m.train()
    assert np.mean(f(en.tensor(X)).numpy() == 0) > 0.3
    assert f.trace_count == 3
