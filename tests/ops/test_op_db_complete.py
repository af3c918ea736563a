"""Every registered op has an op database entry, and its registry flags hang together.

This is the guard that every op is complete: registering an op without an
entry in ``tests/op_db/`` (numpy reference, samples, dtypes, errors,
gradient flag) fails here, naming the op.
"""
import inspect

import numpy as np
import pytest

import engine as en
from engine.op import REGISTRY
from op_db import ALL, COMPOSITES, F64, OP_DB, OPS_BY_NAME, call_engine, seeded_rng

REGISTERED = sorted(REGISTRY)


def test_no_duplicate_entries():
    names = [info.name for info in OP_DB + COMPOSITES]
    dups = sorted({n for n in names if names.count(n) > 1})
    assert not dups, f"op database entries defined twice: {dups}"


def test_composites_are_not_registered_ops():
    clash = sorted(info.name for info in COMPOSITES if info.name in REGISTRY)
    assert not clash, f"composites that are also registered ops (move them to OP_DB): {clash}"


def test_entries_name_registered_ops():
    stale = sorted(info.name for info in OP_DB if info.name not in REGISTRY)
    assert not stale, f"op database entries for ops that are not registered: {stale}"


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_op_has_entry(name):
    if name not in OPS_BY_NAME:
        pytest.fail(f"op {name!r} is registered but has no entry in tests/op_db/: add an "
                    "OpInfo to its family's module there, with its numpy reference, sample "
                    "inputs, dtypes, error inputs and gradient flag", pytrace=False)


@pytest.mark.parametrize("name", REGISTERED)
def test_registry_fields(name):
    op = REGISTRY[name]
    assert op.name == name
    assert callable(op.impl), f"{name}: impl is not callable"
    assert callable(op.abstract_eval), f"{name}: abstract_eval is not callable"
    if op.differentiable:
        assert callable(op.vjp), f"{name}: differentiable but has no vjp"
    if op.vjp is None:
        assert not op.differentiable, f"{name}: no vjp but marked differentiable"
    assert not (op.elementwise and op.reduction), f"{name}: both elementwise and reduction"
    if op.commutative:
        assert op.n_inputs == 2, f"{name}: commutative needs exactly two inputs"
    if op.reduction:
        params = inspect.signature(op.abstract_eval).parameters
        assert "axis" in params and "keepdims" in params, f"{name}: reduction without axis/keepdims"
    if op.n_inputs is not None:
        assert isinstance(op.n_inputs, int) and op.n_inputs >= 0, f"{name}: bad n_inputs"
    if op.dtypes is not None:
        assert set(op.dtypes) <= en.dtypes.ALL, f"{name}: claims unsupported dtypes {op.dtypes}"
    assert op.doc, f"{name}: no doc string"
    if op.random:
        assert not op.differentiable, f"{name}: a random op with a gradient"


@pytest.mark.parametrize("name", sorted(OPS_BY_NAME))
def test_entry_agrees_with_registry(name):
    op, info = REGISTRY[name], OPS_BY_NAME[name]
    if op.dtypes is not None:
        # The suites test the core dtypes (ALL); test_dtypes_extended the others.
        assert set(info.dtypes) == set(op.dtypes) & set(ALL), (
            f"{name}: the op claims {sorted(map(str, op.dtypes))}, its entry tests "
            f"{sorted(map(str, info.dtypes))}")
    if info.supports_grad:
        assert op.differentiable, f"{name}: the entry checks gradients, but the op has no vjp"
    elif op.differentiable:
        assert info.grad_skip, (f"{name}: differentiable, but the entry neither checks its "
                                "gradient nor says why")
    assert not info.composite


def _float_samples(info):
    dtype = F64 if F64 in info.dtypes else info.dtypes[0]
    return list(info.sample_inputs(dtype, seeded_rng(info.name, "flags")))


@pytest.mark.parametrize("name", sorted(OPS_BY_NAME))
def test_flags_match_behaviour(name):
    """What the flags promise, seen on the samples: elementwise ops broadcast their
    inputs, reductions drop or keep the reduced axes, commutative ops commute."""
    op, info = REGISTRY[name], OPS_BY_NAME[name]
    for sample in _float_samples(info):
        out = call_engine(info, sample)
        arrays = [np.asarray(a) for a in sample.args] if op.elementwise or op.reduction else []
        if op.elementwise and arrays:
            expected = np.broadcast_shapes(*[a.shape for a in arrays])
            assert out.shape == expected, f"{name} (elementwise) on {sample}: shape {out.shape}"
        if op.reduction:
            axis, keepdims = sample.kwargs.get("axis"), sample.kwargs.get("keepdims", False)
            axis = tuple(axis) if isinstance(axis, list) else axis
            if name.startswith("arg") and axis is None and not keepdims:
                expected = ()
            else:
                expected = np.sum(np.zeros(arrays[0].shape), axis=axis, keepdims=keepdims).shape
            assert out.shape == expected, f"{name} (reduction) on {sample}: shape {out.shape}"
        if op.commutative:
            arrays = [np.asarray(a) for a in sample.args]
            swapped = info.op(*reversed([en.tensor(a) for a in arrays]), **sample.kwargs)
            np.testing.assert_array_equal(np.asarray(out), np.asarray(swapped),
                                          err_msg=f"{name} (commutative) on {sample}")
