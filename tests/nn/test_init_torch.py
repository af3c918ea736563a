"""PyTorch's in-place initializers in ``en.nn.init``: they overwrite the tensor they get,
with the distributions of PyTorch's formulas (fans from the (out, in, *kernel) layout,
or the engine's with layout="engine"), reproducibly from a seed."""
import math

import numpy as np
import pytest

import engine as en

init = en.nn.init


def _fans(shape):
    """PyTorch's fans, written out: dim 1 times the kernel is fan_in, dim 0 fan_out."""
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


@pytest.mark.parametrize("shape", [(64, 48), (32, 16, 3, 3)])
def test_uniform_families_have_their_bounds(shape):
    fan_in, fan_out = _fans(shape)
    cases = [(lambda w: init.xavier_uniform_(w, gain=2.0, generator=0),
              2.0 * math.sqrt(6.0 / (fan_in + fan_out))),
             (lambda w: init.kaiming_uniform_(w, a=math.sqrt(5), generator=1),
              math.sqrt(2.0 / (1 + 5)) * math.sqrt(3.0 / fan_in)),
             (lambda w: init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu",
                                              generator=2),
              math.sqrt(2.0) * math.sqrt(3.0 / fan_out)),
             (lambda w: init.uniform_(w, -0.3, 0.3, generator=3), 0.3)]
    for fill, bound in cases:
        w = en.Variable(np.zeros(shape, np.float32))
        assert fill(w) is w
        values = w.numpy()
        assert values.dtype == np.float32
        assert np.abs(values).max() <= bound * (1 + 1e-6)
        assert abs(values.std() - bound / math.sqrt(3)) < 0.05 * bound


@pytest.mark.parametrize("shape", [(200, 100), (64, 32, 3, 3)])
def test_normal_families_have_their_std(shape):
    fan_in, fan_out = _fans(shape)
    for fill, std in [(lambda w: init.xavier_normal_(w, generator=0),
                       math.sqrt(2.0 / (fan_in + fan_out))),
                      (lambda w: init.kaiming_normal_(w, nonlinearity="relu", generator=1),
                       math.sqrt(2.0 / fan_in)),
                      (lambda w: init.normal_(w, 1.0, 0.02, generator=2), 0.02)]:
        w = fill(en.Variable(np.zeros(shape)))
        assert abs(w.numpy().std() - std) < 0.03 * std


def test_engine_layout_swaps_the_fans():
    w = en.Variable(np.zeros((40, 10)))      # an engine Linear weight: (in, out)
    init.kaiming_uniform_(w, nonlinearity="relu", generator=0, layout="engine")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 40)
    assert bound * 0.95 < np.abs(w.numpy()).max() <= bound


def test_trunc_normal_stays_inside_and_has_the_truncated_moments():
    w = init.trunc_normal_(en.Variable(np.zeros((300, 300))), mean=0.5, std=1.0, a=0.0, b=2.0,
                           generator=0).numpy()
    assert w.min() >= 0.0 and w.max() <= 2.0
    # The truncated normal's mean: mu + sigma (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha))
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)    # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))           # noqa: E731
    alpha, beta = -0.5, 1.5
    mean = 0.5 + (phi(alpha) - phi(beta)) / (cdf(beta) - cdf(alpha))
    assert abs(w.mean() - mean) < 0.01


def test_constant_zeros_ones_and_plain_tensors():
    t = en.ones((2, 3))
    assert init.zeros_(t) is t and not t.numpy().any()
    w = en.Variable(np.zeros(3, np.float32))
    np.testing.assert_array_equal(init.constant_(w, 0.5).numpy(), np.full(3, 0.5, np.float32))
    np.testing.assert_array_equal(init.ones_(w).numpy(), np.ones(3, np.float32))


@pytest.mark.parametrize("shape", [(3, 5), (6, 2), (4, 2, 3, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    q = init.orthogonal_(en.Variable(np.zeros(shape)), gain=2.0, generator=0).numpy()
    m = q.reshape(shape[0], -1) / 2.0
    small = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(small, np.eye(len(small)), atol=1e-12)


def test_same_seed_same_values():
    a = init.xavier_uniform_(en.Variable(np.zeros((4, 5))), generator=7).numpy()
    b = init.xavier_uniform_(en.Variable(np.zeros((4, 5))), generator=7).numpy()
    np.testing.assert_array_equal(a, b)


def test_gains_and_fans_match_torch():
    torch = pytest.importorskip("torch")
    for nl, param in [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("selu", None),
                      ("linear", None), ("sigmoid", None), ("leaky_relu", None)]:
        assert init.calculate_gain(nl, param) == pytest.approx(
            torch.nn.init.calculate_gain(nl, param), rel=1e-12)
    for shape in [(8, 3), (16, 4, 3, 3), (5, 2, 7)]:
        tw = torch.empty(shape)
        torch.nn.init.kaiming_uniform_(tw, nonlinearity="relu")
        w = init.kaiming_uniform_(en.Variable(np.zeros(shape)), nonlinearity="relu", generator=0)
        bound = math.sqrt(6.0 / _fans(shape)[0])
        assert tw.abs().max().item() <= bound and np.abs(w.numpy()).max() <= bound
        assert torch.nn.init._calculate_fan_in_and_fan_out(tw) == _fans(shape)


def test_errors():
    with pytest.raises(en.ShapeError, match="xavier_uniform_: fan in and fan out need"):
        init.xavier_uniform_(en.Variable(np.zeros(3)))
    with pytest.raises(en.InvalidArgumentError, match="kaiming_normal_: mode"):
        init.kaiming_normal_(en.Variable(np.zeros((3, 3))), mode="fan_avg")
    with pytest.raises(en.InvalidArgumentError, match="floating-point"):
        init.normal_(en.Variable(np.zeros(3, np.int64)))
    with pytest.raises(en.InvalidArgumentError, match="layout must be"):
        init.xavier_normal_(en.Variable(np.zeros((3, 3))), layout="keras")
