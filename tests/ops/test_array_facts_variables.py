"""numpy's value-reading questions (engine/ops/array_facts.py) asked of a variable while
tracing: refused with the TracingError that names the function and describes the
variable (it was an AttributeError: a variable has no ``_describe``); eagerly they
answer as numpy does for the variable's values."""
import numpy as np
import pytest

import engine as en

VALUES = np.array([1.5, -2.0, 3.25])

READERS = [
    ("array_str", np.array_str),
    ("array_repr", np.array_repr),
    ("array2string", np.array2string),
]


@pytest.mark.parametrize("name,fn", READERS, ids=[r[0] for r in READERS])
def test_a_variable_read_while_tracing_is_a_tracing_error(name, fn):
    v = en.Variable(VALUES)
    assert fn(v) == fn(VALUES)          # eagerly: numpy's text for the same values

    def traced(x):
        return x + len(fn(v))
    with pytest.raises(en.TracingError, match=rf"{name}: needs the values of float64\[3\]"):
        en.function(traced)(en.tensor(1.0))
