"""PyTorch spellings raise errors naming the engine's equivalent (engine/torch_spellings.py);
the engine's own keywords stay numpy's."""
import numpy as np
import pytest

import engine as en

X = en.tensor(np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("call, says", [
    (lambda: en.softmax(X, dim=-1), r"softmax: use axis= \(dim= is PyTorch's"),
    (lambda: en.mean(X, keepdim=True), r"mean: use keepdims= \(keepdim="),
    (lambda: en.sum(X, dim=0), "sum: use axis="),
    (lambda: X.sum(dim=0), "sum: use axis="),
    (lambda: X.max(keepdim=True), "max: use keepdims="),
    (lambda: en.nn.functional.log_softmax(X, dim=1), "log_softmax: use axis="),
    (lambda: en.concatenate([X, X], dim=0), "concat(enate)?: use axis="),
    (lambda: en.nn.Dropout(p=0.1), r"Dropout: use rate= \(p= is PyTorch's"),
    (lambda: en.nn.MaxPool2D(kernel_size=2), r"MaxPool2D: use pool_size=.*en.nn.MaxPool2d, "
                                             r"which takes PyTorch's arguments"),
    (lambda: en.nn.AvgPool2D(2, stride=2), "AvgPool2D: use strides="),
    (lambda: en.tensor([1.0], requires_grad=True), "requires_grad= is PyTorch's.*en.Variable"),
    (lambda: en.Variable([1.0], requires_grad=True), "requires_grad= is PyTorch's"),
    (lambda: en.zeros((2,), device="cuda"), "back end, not a device"),
    (lambda: en.optim.SGD(en.nn.Linear(2, 1).trainable_variables, lr=0.1),
     r"takes its variables at each step.*en.optim.SGD\(lr=...\)"),
    (lambda: en.optim.Adam(en.nn.Linear(2, 1).trainable_variables), "opt.minimize"),
    (lambda: X.view(3, 2), r"use x.reshape\(shape\)"),
])
def test_keyword_and_call_spellings_name_the_engines(call, says):
    with pytest.raises(TypeError, match=says) as info:
        call()
    assert "test_torch_spellings.py" in str(info.value)      # the user's line


@pytest.mark.parametrize("get, says", [
    (lambda: en.sum(X).backward(), "tape.gradient"),
    (lambda: X.permute(1, 0), "permute_dims"),
    (lambda: X.unsqueeze(0), "expand_dims"),
    (lambda: X.detach(), "stop_gradient"),
    (lambda: en.Variable([1.0]).grad, "tape.gradient"),
    (lambda: en.nn.Linear(2, 1).parameters(), "trainable_variables"),
    (lambda: en.nn.Linear(2, 1).zero_grad(), "nothing to zero"),
    (lambda: en.optim.SGD(0.1).zero_grad(), "nothing to zero"),
    (lambda: en.nn.Linear(2, 1).to("cuda"), "back end, not a device"),
    (lambda: X.clone(), r"x.copy\(\)"),
    (lambda: en.cat, "en.concatenate"),
    (lambda: en.no_grad, "GradientTape"),
    (lambda: en.manual_seed, "en.random.set_seed"),
    (lambda: en.randn, "en.random.normal"),
])
def test_attribute_spellings_name_the_engines(get, says):
    with pytest.raises(AttributeError, match=says):
        get()


def test_right_calls_are_unchanged_and_other_errors_pass_through():
    np.testing.assert_allclose(en.softmax(X, axis=-1).numpy().sum(-1), [1.0, 1.0])
    np.testing.assert_array_equal(en.mean(X, axis=0, keepdims=True).numpy(),
                                  np.arange(6.0).reshape(2, 3).mean(0, keepdims=True))
    assert X.view().shape == (2, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        en.sum(X, bogus=1)
    with pytest.raises(AttributeError) as info:
        _ = en.no_such_name
    assert "PyTorch" not in str(info.value)
    # probes for PyTorch tensors by duck type do not take ours for one
    assert not hasattr(X, "backward") and not hasattr(X, "detach")


def test_numpy_and_standard_names_still_reach_one_function():
    assert en.softmax is en.nn.functional.softmax
    assert en.acos is en.arccos
    with pytest.raises(TypeError, match="use axis="):
        en.linalg.norm(X, dim=0)
