"""Every op and composite in the op database against its numpy reference.

For each entry and each dtype it claims: the eager result equals the numpy
reference (values, shape and dtype), and every op run on the way -- the op
itself, or the ops a composite is made of -- has a raw ``impl`` result whose
shape and dtype are what its ``abstract_eval`` predicts. Error inputs raise
the documented class with a message naming the op.
"""
import numpy as np
import pytest

import engine as en
from engine.eager.mode import EAGER
from engine.modes import use_mode
from engine.op import REGISTRY
from op_db import (ALL, ALL_ENTRIES, F64, OP_DB, OPS_BY_NAME, ErrorInput, call_engine,
                   call_ref, seeded_rng)
from support.op_checks import as_list, assert_matches


class ShapeRuleSpy:
    """A mode that runs every op eagerly and also checks the op's ``impl`` against
    its ``abstract_eval`` (eager mode casts results to the predicted dtype, which
    would hide a disagreement)."""

    name = "shape-rule-spy"
    is_concrete = True    # it runs every op eagerly (composites may ask)

    def __init__(self):
        self.ops = []
        self.problems = []

    def apply(self, op, args, params):
        out = EAGER.apply(op, args, params)
        tensors = EAGER.lift(args)
        avals = [(t.shape, t.dtype) for t in tensors]
        predicted = op.abstract_eval(*avals, **params)
        raw = op.impl(*[t._value for t in tensors], **params)
        pairs = zip(raw, predicted) if op.multiple_results else [(raw, predicted)]
        for r, (shape, dtype) in pairs:
            r = np.asarray(r)
            if r.shape != tuple(shape) or r.dtype != dtype:
                self.problems.append(
                    f"{op.name}{avals} {params}: impl gave {r.dtype}{list(r.shape)}, "
                    f"abstract_eval predicted {dtype}{list(shape)}")
        self.ops.append(op.name)
        return out


def _cases():
    for info in ALL_ENTRIES:
        for dtype in info.dtypes:
            yield pytest.param(info, dtype, id=f"{info.name}-{dtype}")


@pytest.mark.parametrize("info,dtype", list(_cases()))
def test_matches_numpy(info, dtype):
    samples = list(info.sample_inputs(dtype, seeded_rng(info.name, dtype)))
    assert samples, f"{info.name}: no samples for {dtype}"
    for sample in samples:
        where = f"{info.name} on {sample}"
        spy = ShapeRuleSpy()
        with use_mode(spy):
            out = call_engine(info, sample)
        assert not spy.problems, f"{where}: " + "; ".join(spy.problems)
        if not info.composite:
            assert info.name in spy.ops, f"{where}: the call never ran op {info.name!r} ({spy.ops})"
        with np.errstate(all="ignore"):
            expected = call_ref(info, sample)
        assert_matches([np.asarray(o) for o in as_list(out)], expected, where)


def _error_cases():
    for info in ALL_ENTRIES:
        errors = list(info.error_inputs())
        if not info.composite and REGISTRY[info.name].dtypes is not None:
            # Every dtype the op does not claim must be refused with a DTypeError.
            for dtype in ALL:
                if dtype in info.dtypes:
                    continue
                sample = next(iter(info.sample_inputs(dtype, seeded_rng(info.name, dtype))))
                errors.append(ErrorInput(sample, en.DTypeError))
        for i, err in enumerate(errors):
            yield pytest.param(info, err, id=f"{info.name}-{i}")


@pytest.mark.parametrize("info,err", list(_error_cases()))
def test_error_inputs(info, err):
    match = info.name if err.match is None else err.match
    with pytest.raises(err.error) as caught:
        call_engine(info, err.sample)
    assert isinstance(caught.value, en.EngineError), (
        f"{info.name}: not an engine error: {caught.value!r}")
    assert match in str(caught.value), (
        f"{info.name} on {err.sample}: the {err.error.__name__} message does not name {match!r}: "
        f"{caught.value}")


# Ops that accept every dtype and every shape: nothing to get wrong at call time.
UNFAILING = {"zeros_like", "ones_like", "identity", "stop_gradient", "logical_not",
             "optimization_barrier", "abs", "square", "isnan", "isinf", "isfinite"}


def _refuses_complex(info):
    """Whether the (unary) op refuses complex values with a DTypeError, as numpy's loop
    for it does (floor, signbit ...): the dtype it refuses, outside ``ALL``."""
    try:
        info.op(en.tensor(np.array([1.0 + 2.0j])))
    except en.DTypeError:
        return True
    except Exception:
        return False
    return False


def test_every_entry_has_error_inputs():
    """An entry lists error inputs, or its op refuses some dtype (checked above; complex
    values too), or it is one of the few ops no input can make fail."""
    for info in OP_DB:
        if list(info.error_inputs()) or set(info.dtypes) != set(ALL) or _refuses_complex(info):
            continue
        assert info.name in UNFAILING, f"{info.name}: no error inputs in the op database"


# ---- random ops: pure functions of their key ----------------------------------------
RANDOM_ENTRIES = [pytest.param(info, id=info.name) for info in OP_DB if info.random]


@pytest.mark.parametrize("info", RANDOM_ENTRIES)
def test_random_same_key_same_values(info):
    for dtype in info.dtypes:
        draw = lambda key: np.asarray(info.op(en.tensor(np.array(key, np.int64)),  # noqa: E731
                                              shape=(4, 25), dtype=dtype))
        first = draw([3, 1])
        assert first.shape == (4, 25) and first.dtype == dtype
        np.testing.assert_array_equal(first, draw([3, 1]), err_msg=f"{info.name}: same key")
        for other in ([3, 2], [4, 1], [-3, 1]):
            assert not np.array_equal(first, draw(other)), f"{info.name}: keys [3, 1] and {other}"
        # Rows of one draw are not copies of each other.
        assert len({row.tobytes() for row in first}) == 4


def _moments(info, **params):
    x = np.asarray(info.op(en.tensor(np.array([11, 0], np.int64)), shape=(20000,),
                           dtype=F64, **params))
    return x, float(x.mean()), float(x.std())


def test_random_normal_moments():
    info = OPS_BY_NAME["random_normal"]
    _, mean, std = _moments(info)
    assert abs(mean) < 0.05 and abs(std - 1.0) < 0.05, (mean, std)
    _, mean, std = _moments(info, mean=2.0, stddev=3.0)
    assert abs(mean - 2.0) < 0.15 and abs(std - 3.0) < 0.15, (mean, std)


def test_random_uniform_moments():
    info = OPS_BY_NAME["random_uniform"]
    x, mean, std = _moments(info)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(mean - 0.5) < 0.02 and abs(std - np.sqrt(1 / 12)) < 0.02, (mean, std)
    x, mean, std = _moments(info, minval=-2.0, maxval=6.0)
    assert x.min() >= -2.0 and x.max() < 6.0
    assert abs(mean - 2.0) < 0.15 and abs(std - 8 * np.sqrt(1 / 12)) < 0.15, (mean, std)
