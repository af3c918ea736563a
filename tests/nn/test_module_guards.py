"""A module's tensors are variables or refused; layers made inside en.function are refused
with an error that says what to do."""
import numpy as np
import pytest

import engine as en


class Holder(en.nn.Module):
    def __init__(self, value, name="held"):
        super().__init__()
        setattr(self, name, value)

    def forward(self, x):
        return x * self.held


def test_plain_tensor_attribute_is_refused_by_name():
    with pytest.raises(en.ArgumentTypeError, match=r"Holder.held holds a Tensor.*en.Variable"):
        Holder(en.tensor(2.0))
    with pytest.raises(en.ArgumentTypeError, match="Holder.held"):
        Holder([en.nn.Linear(1, 1), {"scale": en.tensor([1.0])}])
    m = Holder(en.tensor(1.0), name="_cache")                 # private: the user's business
    assert m.named_variables() == []


def test_variable_attribute_is_a_variable_and_reaches_graphs_at_run_time():
    m = Holder(en.Variable(2.0))
    assert [n for n, _ in m.named_variables()] == ["held"]
    f = en.function(m)
    assert float(f(en.tensor(3.0))) == 6.0
    m.held.assign(5.0)
    assert float(f(en.tensor(3.0))) == 15.0                     # not baked in


@pytest.mark.parametrize("make", [lambda: en.nn.Linear(3, 2), lambda: en.nn.LayerNorm(3),
                                  lambda: en.nn.Sequential(en.nn.Linear(3, 3))])
def test_layer_made_inside_a_trace_says_to_make_it_outside(make):
    f = en.function(lambda x: make()(x))
    with pytest.raises(en.TracingError, match="created inside a traced function.*outside"):
        f(en.ones((2, 3), dtype="float32"))


def test_layers_without_variables_and_layers_made_outside_still_trace():
    layer = en.nn.Linear(3, 2, generator=0)
    f = en.function(lambda x: en.nn.ReLU()(layer(x)))
    x = np.ones((2, 3), "float32")
    want = np.maximum(x @ layer.weight.numpy() + layer.bias.numpy(), 0)
    np.testing.assert_allclose(f(en.tensor(x)).numpy(), want, rtol=1e-6)
