"""Identity, ModuleDict, ParameterList and ParameterDict: naming of the parameters they
hold (PyTorch's), training through them (eager and traced), and their errors."""
import numpy as np
import pytest

import engine as en


def test_identity_returns_its_input():
    x = en.tensor([1.0, -2.0])
    assert en.nn.Identity(3, foo=1)(x) is x
    model = en.nn.Sequential(en.nn.Linear(2, 2, generator=0), en.nn.Identity())
    assert [n for n, _ in model.named_variables()] == ["0.weight", "0.bias"]


def test_module_dict_names_and_mapping_api():
    blocks = en.nn.ModuleDict({"enc": en.nn.Linear(3, 4, generator=0)})
    blocks["dec"] = en.nn.Linear(4, 2, generator=1)
    blocks.update([("act", en.nn.ReLU())])
    assert list(blocks) == ["enc", "dec", "act"] and len(blocks) == 3 and "dec" in blocks
    assert [n for n, _ in blocks.named_variables()] == ["enc.weight", "enc.bias", "dec.weight",
                                                        "dec.bias"]

    class Net(en.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = blocks

        def forward(self, x):
            return self.blocks["dec"](self.blocks["act"](self.blocks["enc"](x)))
    net = Net()
    assert [n for n, _ in net.named_variables()][0] == "blocks.enc.weight"
    x = np.ones((2, 3), np.float32)
    w1, b1 = blocks["enc"].weight.numpy(), blocks["enc"].bias.numpy()
    w2, b2 = blocks["dec"].weight.numpy(), blocks["dec"].bias.numpy()
    expected = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(net(en.tensor(x)).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(en.function(lambda x: net(x))(en.tensor(x)).numpy(), expected,
                               rtol=1e-6)
    assert isinstance(blocks.pop("act"), en.nn.ReLU) and list(blocks.keys()) == ["enc", "dec"]
    del blocks["dec"]
    assert [n for n, _ in blocks.named_variables()] == ["enc.weight", "enc.bias"]


def test_parameter_list_and_dict_are_trained():
    scales = en.nn.ParameterList([np.array([1.0, 2.0]), en.Variable([3.0])])
    scales.append(en.zeros(2, dtype="float64"))
    table = en.nn.ParameterDict({"a": np.array([1.0])})
    table["b"] = np.array([2.0, 2.0])
    assert [n for n, _ in scales.named_variables()] == ["0", "1", "2"]
    assert [n for n, _ in table.named_variables()] == ["a", "b"]
    assert all(v.trainable for v in scales.variables + table.variables)

    def loss():
        return sum(en.sum(v * v) for v in list(scales) + list(table.values()))
    opt = en.optim.SGD(lr=0.25)
    opt.minimize(loss, scales.variables + table.variables)      # w -= 0.25 * 2w
    np.testing.assert_allclose(scales[0].numpy(), [0.5, 1.0])
    np.testing.assert_allclose(table["b"].numpy(), [1.0, 1.0])


def test_errors():
    with pytest.raises(en.EngineError, match="ModuleDict: expected an en.nn.Module"):
        en.nn.ModuleDict({"a": 3})
    with pytest.raises(en.EngineError, match="ModuleDict: keys must be non-empty strings"):
        en.nn.ModuleDict({"a.b": en.nn.ReLU()})
    with pytest.raises(en.EngineError, match="ParameterList: expected a Variable or an array"):
        en.nn.ParameterList([object()])
