"""Which ops have native forward-mode (``jvp``) and batching (``batch``) rules.

An op has a native rule when it declares one (``declare(op, jvp=..., batch=...)``)
or when its flags imply one (elementwise ops and reductions). The others run
through the fallbacks (a double VJP, a loop over the batch): the table below
lists them, and new ops show up in it by themselves. The 40 most used ops must
be native; the softmax family, composites of other ops today, must then run
under ``jvp`` and ``vmap`` without any fallback.
"""
import warnings

import numpy as np
import pytest

import engine as en
from engine.op import REGISTRY
from engine.transforms import batching, forward

TOP_40 = (
    # elementwise (19)
    "neg", "abs", "exp", "log", "sqrt", "square", "sin", "cos", "tanh", "sigmoid", "relu",
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where",
    # reductions (5), matmul (1)
    "sum", "mean", "max", "min", "argmax", "matmul",
    # shape ops (8), indexing (2), convolution (2)
    "reshape", "transpose", "broadcast_to", "expand_dims", "squeeze", "concat", "stack", "split",
    "getitem", "scatter_add", "conv2d", "max_pool2d",
    # the softmax family (3)
    "softmax", "log_softmax", "logsumexp",
)


def _differentiable(op):
    return op.vjp is not None or "jvp" in op.rules


def jvp_status(op):
    if forward.has_rule(op):
        return "native"
    return "fallback (double VJP)" if _differentiable(op) else "no tangent"


def batch_status(op):
    if op.n_inputs == 0:
        return "no inputs"
    return "native" if batching.has_rule(op) else "fallback (loop)"


def test_top_40_list_has_40_names():
    assert len(set(TOP_40)) == 40


def test_coverage_table(capsys):
    rows = [(name, jvp_status(op), batch_status(op)) for name, op in sorted(REGISTRY.items())]
    with capsys.disabled():
        print("\nop                       jvp                    batch")
        for row in rows:
            print(f"{row[0]:24} {row[1]:22} {row[2]}")
        fallback = [r[0] for r in rows if "fallback" in r[1] or "fallback" in r[2]]
        print(f"ops using a fallback ({len(fallback)}): {', '.join(fallback) or 'none'}")


@pytest.mark.parametrize("name", [n for n in TOP_40 if n in REGISTRY])
def test_most_used_ops_have_native_rules(name):
    op = REGISTRY[name]
    assert jvp_status(op) in ("native", "no tangent"), f"{name}: no native jvp rule"
    assert batch_status(op) == "native", f"{name}: no native batching rule"


@pytest.mark.parametrize("name", [n for n in TOP_40 if n not in REGISTRY])
def test_most_used_composites_need_no_fallback(name):
    fn = getattr(en, name)
    x = en.tensor(np.random.default_rng(0).standard_normal((3, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", en.TransformFallbackWarning)
        en.jvp(lambda t: fn(t, axis=-1), (x,), (en.ones_like(x),))
        en.vmap(lambda t: fn(t, axis=-1))(x)


def test_declared_rules_are_callables():
    for name, op in REGISTRY.items():
        for kind in ("jvp", "batch"):
            if kind in op.rules:
                assert callable(op.rules[kind]), f"{name}: the {kind} rule is not callable"
