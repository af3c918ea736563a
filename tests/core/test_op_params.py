"""A keyword an op does not take (numpy's ``out=``/``where=``, a misspelling) is named with
the op, the keywords it does take and the user's line, in every mode; a TypeError raised by
a shape rule itself is left as it is."""
import numpy as np
import pytest

import engine as en
from engine.modes import op_function
from engine.op import REGISTRY, Op


@pytest.mark.parametrize("mode", ["eager", "function", "vmap", "grad"])
def test_a_keyword_the_op_does_not_take_is_named(mode):
    x = en.tensor(np.linspace(0.0, 1.0, 6).reshape(2, 3))
    call = {"eager": lambda: en.exp(x, out=x),
            "function": lambda: en.function(lambda t: en.exp(t, out=t))(x),
            "vmap": lambda: en.vmap(lambda t: en.exp(t, out=t))(x),
            "grad": lambda: en.grad(lambda t: en.sum(en.exp(t, out=t)))(x)}[mode]
    with pytest.raises(TypeError, match=r"exp: got an unexpected keyword argument 'out'") \
            as info:
        call()
    message = str(info.value)
    assert isinstance(info.value, en.EngineError)
    assert "no keywords" in message and "out[...] = en.exp" in message
    assert "test_op_params.py" in message                         # the user's line
    np.testing.assert_array_equal(x.numpy(), np.linspace(0.0, 1.0, 6).reshape(2, 3))


def test_the_keywords_an_op_takes_are_listed():
    with pytest.raises(TypeError, match=r"op 'reshape' takes 1 array argument\(s\) and the "
                                        r"keywords shape"):
        op_function(REGISTRY["reshape"])(en.ones(6), shape=(2, 3), order="C")


def test_a_type_error_inside_a_shape_rule_is_not_blamed_on_the_keywords():
    def rule(x):
        raise TypeError("the rule's own defect")
    broken = op_function(Op("rule_defect_probe", np.negative, rule))
    with pytest.raises(TypeError, match="the rule's own defect") as info:
        broken(en.ones(2))
    assert not isinstance(info.value, en.EngineError)
