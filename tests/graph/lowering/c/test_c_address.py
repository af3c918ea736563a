"""c_address.data, the fast read of an array's data pointer, against numpy's own
``x.ctypes.data`` on arrays of every kind a kernel may be handed."""
import numpy as np
import pytest

from engine.graph.lowering.c import c_address

BASE = np.arange(60.0).reshape(3, 4, 5)
ARRAYS = {
    "float64": BASE,
    "float32": BASE.astype(np.float32),
    "int8": np.arange(7, dtype=np.int8),
    "0-d": np.array(2.5),
    "empty": np.zeros((0, 3)),
    "row view": BASE[1],
    "offset view": BASE[1:, 2:],
    "strided view": BASE[:, ::2],
    "transposed": BASE.T,
    "read-only": np.frombuffer(b"\0" * 16, dtype=np.float32),
    "reshaped copy": BASE.T.reshape(-1),
    "structured": np.zeros(3, dtype=[("a", np.int32), ("b", np.float64)]),
}


@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_data_is_numpys_address(name):
    x = ARRAYS[name]
    assert c_address.data(x) == x.ctypes.data


def test_the_fast_read_is_in_use_on_this_python():
    """CPython with numpy's array layout: the offset is found (else every call would pay
    numpy's ctypes helper, which this module exists to avoid)."""
    assert c_address.data is c_address._fast
    assert c_address._slow(BASE[2]) == BASE[2].ctypes.data
