"""Seeded initializers: reproducible, with the published scales, and orthogonal when asked."""
import math

import numpy as np
import pytest

import engine as en
from engine.nn import init


@pytest.mark.parametrize("name", ["glorot_uniform", "glorot_normal", "he_uniform", "he_normal",
                                  "lecun_uniform", "orthogonal"])
def test_same_seed_same_weights_and_other_seed_others(name):
    fn = init.get(name)
    a = fn((30, 20), generator=en.random.Generator(3))
    b = fn((30, 20), generator=3)                    # an int seed means Generator(seed)
    c = fn((30, 20), generator=4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.dtype == np.float32 and a.shape == (30, 20)


def test_fans_of_dense_and_conv_weights():
    assert init.fans((64, 32)) == (64, 32)
    assert init.fans((3, 3, 16, 8)) == (9 * 16, 9 * 8)
    assert init.fans((5,)) == (5, 5)


@pytest.mark.parametrize("name,shape,std", [
    ("glorot_normal", (400, 300), math.sqrt(2 / 700)),
    ("he_normal", (3, 3, 40, 50), math.sqrt(2 / 360)),
    ("glorot_uniform", (400, 300), math.sqrt(6 / 700) / math.sqrt(3)),
    ("he_uniform", (500, 200), math.sqrt(6 / 500) / math.sqrt(3)),
    ("lecun_uniform", (500, 200), math.sqrt(1 / 500) / math.sqrt(3)),
])
def test_scales_follow_the_published_rules(name, shape, std):
    w = init.get(name)(shape, dtype="float64", generator=0)
    assert abs(w.std() / std - 1) < 0.02
    assert abs(w.mean()) < 0.05 * std
    if name.endswith("uniform"):
        assert np.abs(w).max() <= std * math.sqrt(3) + 1e-12


@pytest.mark.parametrize("shape", [(6, 6), (10, 4), (4, 10), (3, 3, 2, 5)])
def test_orthogonal_has_orthonormal_columns_or_rows(shape):
    q = init.orthogonal(shape, dtype="float64", generator=1, gain=2.0)
    m = q.reshape(-1, shape[-1]) / 2.0
    small = min(m.shape)
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-12)


def test_layers_use_their_generator():
    a, b = en.nn.Linear(5, 4, generator=7), en.nn.Linear(5, 4, generator=7)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    en.random.set_seed(11)
    c = en.nn.Linear(5, 4)
    en.random.set_seed(11)
    d = en.nn.Linear(5, 4)
    np.testing.assert_array_equal(c.weight.numpy(), d.weight.numpy())   # the default stream


def test_errors():
    with pytest.raises(ValueError, match="unknown initializer"):
        init.get("uniformish")
    with pytest.raises(en.ShapeError):
        init.orthogonal((5,))
