"""engine/fast_writes.py: the C extension of the write fast paths is built where a C
compiler is, its slots are the ones Tensor uses, and what it does not take (deletion,
the in-place operators it lacks) gives what engine/writes.py gives. The values of
every write form against numpy are tests/core/test_write_fast_paths.py's, run through
both paths."""
import copy
import pickle
import shutil
import sysconfig

import numpy as np
import pytest

import engine as en
from engine import fast_writes


def _compiler():
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) or shutil.which("cc") or shutil.which("gcc")


def test_the_extension_is_built_where_a_c_compiler_is():
    if _compiler() is None:
        pytest.skip("no C compiler on this machine: the extension is optional")
    assert fast_writes.BUILT, "pip install did not build engine._fast_writes"


def test_tensor_writes_are_the_extensions_slots_when_built():
    # A Python __setitem__ or __iadd__ defined on Tensor (or before the C class in its
    # MRO) would shadow the slots and silently cost the Python frame again.
    if not fast_writes.BUILT:
        pytest.skip("the C extension is not built here")
    native = en.Tensor.__mro__[1]
    assert en.Tensor.__setitem__ is native.__dict__["__setitem__"]
    for name in fast_writes.C_IN_PLACE:
        assert getattr(en.Tensor, f"__i{name}__") is native.__dict__[f"__i{name}__"]


@pytest.mark.parametrize("python", [False, True], ids=["c", "python"])
def test_deleting_an_item_is_refused_by_name(python):
    t = en.tensor([1.0, 2.0, 3.0])
    with fast_writes.python_writes() if python else _nothing():
        with pytest.raises(TypeError, match=r"del x\[index\].*item deletion"):
            del t[0]
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_tensors_copy_and_pickle_after_writes():
    t = en.tensor(np.arange(6.0).reshape(2, 3))
    t[0, 1] = 7.0
    t *= 2
    for other in (copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        np.testing.assert_array_equal(other.numpy(), t.numpy())
        assert type(other) is en.Tensor
    c = copy.deepcopy(t)
    c[0, 0] = -5.0                  # the copy is its own memory
    assert t.numpy()[0, 0] == 0.0


def test_in_place_operators_the_c_class_lacks_stay_numpys():
    # //=, %=, **= and @= are Python methods (floor division and remainder follow the
    # standard's special cases; numpy's **= takes shortcuts): same results as numpy.
    a = np.array([[7.0, -3.0], [2.5, 4.0]])
    t = en.tensor(a)
    a2, t2 = a.copy(), en.tensor(a)
    a2 //= 2.0
    t2 //= 2.0
    np.testing.assert_array_equal(t2.numpy(), a2)
    a2 %= 3.0
    t2 %= 3.0
    np.testing.assert_array_equal(t2.numpy(), a2)
    a2 **= 2
    t2 **= 2
    np.testing.assert_allclose(t2.numpy(), a2)
    a3 = a.copy()
    a3 @= a
    t @= en.tensor(a)
    np.testing.assert_allclose(t.numpy(), a3)
