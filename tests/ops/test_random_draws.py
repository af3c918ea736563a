"""Generator.integers / permutation / choice / bernoulli / categorical / truncated_normal,
checked against closed-form distributions, and their traced draws (unknown batch too)."""
import math

import numpy as np
import pytest

import engine as en

N = 20000


def _freq(values, k):
    return np.bincount(np.asarray(values).ravel(), minlength=k) / np.asarray(values).size


def _close(freq, want, n=N):
    # five binomial standard deviations per cell
    tol = 5 * np.sqrt(np.asarray(want) * (1 - np.asarray(want)) / n) + 1e-12
    assert (np.abs(freq - want) <= tol).all(), (freq, want)


def test_integers_range_dtype_and_uniform_frequencies():
    g = en.random.Generator(0)
    v = g.integers(3, 9, size=N).numpy()
    assert v.dtype == np.int64 and v.min() >= 3 and v.max() <= 8
    _close(_freq(v - 3, 6), np.full(6, 1 / 6))
    w = g.integers(4, size=(3, 2), dtype="int32", endpoint=True).numpy()
    assert w.shape == (3, 2) and w.dtype == np.int32 and w.max() <= 4
    assert g.integers(2).shape == ()          # numpy: size=None is one number
    with pytest.raises(en.InvalidArgumentError, match="low >= high"):
        g.integers(5, 5)
    with pytest.raises(en.InvalidArgumentError, match="does not fit int8"):
        g.integers(0, 300, dtype="int8")


def test_permutation_of_int_and_of_array():
    g = en.random.Generator(1)
    p = g.permutation(10).numpy()
    assert sorted(p.tolist()) == list(range(10)) and p.dtype == np.int64
    x = np.arange(12.0).reshape(4, 3)
    rows = g.permutation(en.tensor(x)).numpy()
    assert sorted(map(tuple, rows)) == sorted(map(tuple, x))
    cols = g.permutation(x, axis=1)
    assert sorted(map(tuple, cols.numpy().T)) == sorted(map(tuple, x.T))
    # every position is equally likely for each element
    firsts = np.array([g.permutation(4).numpy()[0] for _ in range(2000)])
    _close(_freq(firsts, 4), np.full(4, 0.25), n=2000)


def test_choice_with_and_without_replacement():
    g = en.random.Generator(2)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    _close(_freq(g.choice(4, size=N, p=p).numpy(), 4), p)
    _close(_freq(g.choice(4, size=N).numpy(), 4), np.full(4, 0.25))
    pool = en.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    picked = g.choice(pool, 3, replace=False).numpy()
    assert sorted(map(tuple, picked)) == [(1, 2), (3, 4), (5, 6)]
    assert sorted(g.choice(3, 3, replace=False, shuffle=False).numpy().tolist()) == [0, 1, 2]
    # weighted without replacement: the first pick follows p (Plackett-Luce, as numpy)
    firsts = np.array([g.choice(4, 2, replace=False, p=p).numpy()[0] for _ in range(3000)])
    _close(_freq(firsts, 4), p, n=3000)
    with pytest.raises(en.InvalidArgumentError, match="larger sample"):
        g.choice(3, 4, replace=False)
    with pytest.raises(en.InvalidArgumentError, match="sum to 1"):
        g.choice(3, p=[0.5, 0.5, 0.5])


def test_bernoulli_and_categorical_frequencies():
    g = en.random.Generator(3)
    b = g.bernoulli(en.full((N,), 0.3)).numpy()
    assert b.dtype == np.float64 and set(np.unique(b)) <= {0.0, 1.0}
    _close(np.array([b.mean()]), np.array([0.3]))
    logits = np.log(np.array([0.5, 0.25, 0.25]))
    c = g.categorical(en.tensor(np.tile(logits, (N, 1)))).numpy()
    _close(_freq(c, 3), np.array([0.5, 0.25, 0.25]))
    c2 = g.categorical(en.tensor(logits[:, None]), num_samples=N, axis=0).numpy()
    assert c2.shape == (1, N)
    _close(_freq(c2, 3), np.array([0.5, 0.25, 0.25]))


def test_truncated_normal_against_closed_form():
    g = en.random.Generator(4)
    mean, std, low, high = 1.0, 2.0, 0.0, 5.0
    v = g.truncated_normal((N,), mean, std, low, high, dtype="float64").numpy()
    assert v.min() >= low and v.max() <= high
    a, b = (low - mean) / std, (high - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    Z = cdf(b) - cdf(a)
    want_mean = mean + std * (pdf(a) - pdf(b)) / Z
    want_var = std ** 2 * (1 + (a * pdf(a) - b * pdf(b)) / Z - ((pdf(a) - pdf(b)) / Z) ** 2)
    assert abs(v.mean() - want_mean) < 5 * math.sqrt(want_var / N)
    assert abs(v.var() / want_var - 1) < 0.05
    # the empirical CDF against the truncated one (Kolmogorov-Smirnov distance)
    xs = np.sort(v)
    theory = (np.array([cdf((x - mean) / std) for x in xs]) - cdf(a)) / Z
    assert np.abs(theory - np.arange(1, N + 1) / N).max() < 1.63 / math.sqrt(N) * 1.5


def test_draws_are_the_same_eagerly_and_traced():
    def draws(g):
        return (g.integers(0, 100, size=5), g.permutation(6), g.choice(5, 3, replace=False),
                g.bernoulli(0.5, size=4), g.truncated_normal((3,)),
                g.categorical(en.zeros((2, 4))))
    eager = [t.numpy() for t in draws(en.random.Generator(7))]
    g = en.random.Generator(7)
    traced = [t.numpy() for t in en.function(lambda: draws(g))()]
    for a, b in zip(eager, traced):
        np.testing.assert_array_equal(a, b)


def test_draws_of_unknown_batch_size_in_a_graph():
    spec = [en.TensorSpec((None, 4), "float32")]
    drop = en.nn.Dropout(0.5, generator=3)
    f = en.function(lambda x: drop(x), input_signature=spec)
    same = en.nn.Dropout(0.5, generator=3)
    for n in (3, 5):
        x = en.ones((n, 4), dtype="float32")
        np.testing.assert_array_equal(f(x).numpy(), same(x).numpy())
    g, h = en.random.Generator(1), en.random.Generator(1)
    bern = en.function(lambda p: g.bernoulli(p), input_signature=spec)
    cat = en.function(lambda lg: g.categorical(lg), input_signature=spec)
    p = en.tensor(np.random.default_rng(0).uniform(size=(6, 4)).astype("float32"))
    np.testing.assert_array_equal(bern(p).numpy(), h.bernoulli(p).numpy())
    np.testing.assert_array_equal(cat(p).numpy(), h.categorical(p).numpy())
