"""einops on engine tensors (engine/interop/): the same results as einops on numpy
arrays, gradients through its patterns (finite differences), inside en.function, and
einops stays optional (``import engine`` does not import it)."""
import subprocess
import sys

import einops   # in the test extra (pyproject.toml)
import numpy as np
import pytest
from support.finite_diff import grad_checker

import engine as en

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 4, 6))

# (function, pattern, keyword arguments): each runs on X as a numpy array and as a tensor
REARRANGE = [
    ("b h w c -> b c h w", {}),
    ("b h w c -> (b h) w c", {}),
    ("b h w (c k) -> b h (w k) c", {"k": 2}),
    ("b h (w w2) c -> b h w w2 c", {"w2": 2}),
    ("b ... c -> c ... b", {}),
    ("b h w c -> b (h w c)", {}),
]
REDUCE = [(p, op) for p in ("b h w c -> b c", "b h (w w2) c -> b h w c", "b h w c -> ")
          for op in ("sum", "mean", "max", "min", "prod")]
REPEAT = [
    ("b h w c -> b h w c r", {"r": 3}),
    ("b h w c -> b (h h2) (w w2) c", {"h2": 2, "w2": 2}),
    ("b h w c -> (r b) h w c", {"r": 2}),
]


def _check(fn, *args, **kwargs):
    want = fn(X, *args, **kwargs)
    got = fn(en.tensor(X), *args, **kwargs)
    assert isinstance(got, en.Tensor)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pattern,sizes", REARRANGE)
def test_rearrange_matches_numpy(pattern, sizes):
    _check(einops.rearrange, pattern, **sizes)


@pytest.mark.parametrize("pattern,op", REDUCE)
def test_reduce_matches_numpy(pattern, op):
    kwargs = {"w2": 2} if "w2" in pattern else {}
    _check(einops.reduce, pattern, op, **kwargs)


@pytest.mark.parametrize("op", ["any", "all", "max", "sum"])
def test_reduce_on_booleans_and_integers(op):
    for data in (X > 0, (10 * X).astype(np.int64)):
        if op in ("any", "all") and data.dtype != bool:
            continue
        want = einops.reduce(data, "b h w c -> b c", op)
        got = einops.reduce(en.tensor(data), "b h w c -> b c", op)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("pattern,sizes", REPEAT)
def test_repeat_matches_numpy(pattern, sizes):
    _check(einops.repeat, pattern, **sizes)


def test_einsum_pack_and_unpack_match_numpy():
    y = RNG.standard_normal((2, 3, 5))
    want = einops.einsum(X, y, "b h w c, b h k -> w c k")
    got = einops.einsum(en.tensor(X), en.tensor(y), "b h w c, b h k -> w c k")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    packed, shapes = einops.pack([en.tensor(X), en.tensor(y)], "b h *")
    want_packed, want_shapes = einops.pack([X, y], "b h *")
    np.testing.assert_allclose(packed.numpy(), want_packed, rtol=0)
    assert shapes == want_shapes
    for part, want_part in zip(einops.unpack(packed, shapes, "b h *"), [X, y]):
        np.testing.assert_allclose(part.numpy(), want_part, rtol=0)


def test_a_variable_is_accepted():
    v = en.Variable(X)
    np.testing.assert_allclose(einops.rearrange(v, "b h w c -> c b h w").numpy(),
                               einops.rearrange(X, "b h w c -> c b h w"), rtol=0)


@pytest.mark.parametrize("fn", [
    lambda t: einops.rearrange(t, "b h (w k) c -> (b k) c h w", k=2) ** 2,
    lambda t: einops.reduce(t, "b h w c -> b c", "mean") * en.sin(t[0, 0, 0, :]),
    lambda t: einops.reduce(t, "b h (w w2) c -> b h w c", "max", w2=2),
    lambda t: einops.repeat(t, "b h w c -> b h w c r", r=2) * en.cos(t)[..., None],
    lambda t: einops.einsum(t, en.tanh(t), "b h w c, b h w d -> c d"),
], ids=["rearrange", "reduce-mean", "reduce-max", "repeat", "einsum"])
def test_gradients_match_finite_differences(fn):
    check_grads = grad_checker(np.random.default_rng(3))
    check_grads(fn, RNG.standard_normal((2, 3, 4, 6)))


def test_inside_en_function_matches_eager():
    def step(t):
        pooled = einops.reduce(t, "b (h h2) (w w2) c -> b h w c", "max", h2=1, w2=2)
        return einops.rearrange(pooled, "b h w c -> b (h w c)") + einops.reduce(
            t, "b h w c -> b ()", "mean")

    traced = en.function(step)
    np.testing.assert_allclose(traced(en.tensor(X)).numpy(), step(en.tensor(X)).numpy(),
                               rtol=1e-12)
    numpy_result = (einops.rearrange(einops.reduce(X, "b h (w w2) c -> b h w c", "max", w2=2),
                                     "b h w c -> b (h w c)")
                    + einops.reduce(X, "b h w c -> b ()", "mean"))
    np.testing.assert_allclose(traced(en.tensor(X)).numpy(), numpy_result, rtol=1e-12)
    grads = en.grad(lambda t: en.sum(traced(t) ** 2))(en.tensor(X))
    eager_grads = en.grad(lambda t: en.sum(step(t) ** 2))(en.tensor(X))
    np.testing.assert_allclose(grads.numpy(), eager_grads.numpy(), rtol=1e-12)


def _run(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_engine_does_not_import_einops():
    assert _run("import sys, engine; print('einops' in sys.modules)") == "False"


@pytest.mark.parametrize("order", ["engine first", "einops first"])
def test_the_backend_is_found_whichever_is_imported_first(order):
    imports = "import engine, einops" if order == "engine first" else "import einops, engine"
    code = (f"{imports}\ny = einops.rearrange(engine.ones((2, 3)), 'a b -> b a')\n"
            "print(y.shape, type(y).__name__)")
    assert _run(code) == "(3, 2) Tensor"
