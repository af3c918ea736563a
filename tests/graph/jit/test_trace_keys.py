"""Python scalars as arguments of traced functions: values that ``==`` confuses."""
import math

import numpy as np
import pytest

import engine as en


def test_negative_zero_gets_its_own_trace():
    f = en.function(lambda x, s: x / s)
    x = en.tensor(1.0)
    with np.errstate(divide="ignore"):
        pos, neg = float(f(x, 0.0)), float(f(x, -0.0))
        eager_neg = float(x / -0.0)
    assert pos == math.inf
    assert neg == eager_neg == -math.inf
    assert f.trace_count == 2
    assert float(f(x, 2.0)) == 0.5 and f.trace_count == 3


def test_nan_argument_traces_once():
    f = en.function(lambda x, s: x + s)
    x = en.tensor([1.0, 2.0])
    for _ in range(4):
        assert np.isnan(f(x, float("nan")).numpy()).all()
    assert f.trace_count == 1
    f(x, np.float64("nan"))   # another type: its own trace, then cached too
    f(x, np.float64("nan"))
    assert f.trace_count == 2


@pytest.mark.parametrize("a, b", [(0.0, -0.0), (complex(0.0, 0.0), complex(0.0, -0.0)),
                                  (np.float32(0.0), np.float32(-0.0))])
def test_signed_zeros_in_other_scalar_types_are_told_apart(a, b):
    calls = []
    f = en.function(lambda x, s: (calls.append(s), x)[1])
    x = en.tensor(1.0)
    f(x, a)
    f(x, b)
    assert len(calls) == 2 and f.trace_count == 2


def test_equal_static_values_still_share_a_trace():
    f = en.function(lambda x, s: x * s)
    x = en.tensor(2.0)
    f(x, 3.0)
    f(x, 3.0)
    f(x, 1)        # an int is another signature than a float
    f(x, True)
    assert f.trace_count == 3
