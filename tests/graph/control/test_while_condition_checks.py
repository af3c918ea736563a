"""A while_loop condition of more than one value is refused by name in every mode (eagerly it
raised numpy's "truth value is ambiguous"; under vmap each element ran to its own stop)."""
import numpy as np
import pytest

import engine as en


def _halve(x, **bound):
    return en.while_loop(lambda c: c > 1.0, lambda c: (c * 0.5,), (x,), **bound)[0]


@pytest.mark.parametrize("bound", [{}, {"max_steps": 10}])
@pytest.mark.parametrize("how", ["eager", "function", "vmap", "vmap_function", "grad"])
def test_a_vector_condition_is_refused_by_name(how, bound):
    x = en.tensor(np.array([[4.0, 2.0], [8.0, 0.5]]))
    run = {"eager": lambda: _halve(x[0], **bound),
           "function": lambda: en.function(lambda t: _halve(t, **bound))(x[0]),
           "vmap": lambda: en.vmap(lambda t: _halve(t, **bound))(x),
           "vmap_function": lambda: en.function(en.vmap(lambda t: _halve(t, **bound)))(x),
           "grad": lambda: en.grad(lambda t: en.sum(_halve(t, **bound)))(x[0])}[how]
    with pytest.raises(en.DTypeError, match=r"while_loop: cond_fn must return one bool scalar, "
                                            r"got .*bool\[2\].*en\.any") as info:
        run()
    assert "test_while_condition_checks.py" in str(info.value)


@pytest.mark.parametrize("bound", [{}, {"max_steps": 10}])
def test_a_scalar_condition_per_example_still_runs_each_to_its_own_stop(bound):
    x = np.array([4.0, 8.0, 0.5, 3.0])

    def reference(v):
        while v > 1.0:
            v = v * 0.5
        return v
    got = en.vmap(lambda t: _halve(t, **bound))(en.tensor(x)).numpy()
    np.testing.assert_array_equal(got, [reference(v) for v in x])
    got = en.function(en.vmap(lambda t: _halve(t, **bound)))(en.tensor(x)).numpy()
    np.testing.assert_array_equal(got, [reference(v) for v in x])
