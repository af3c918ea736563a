"""A tensor never shares memory with an array its caller can still write."""
import mmap

import numpy as np
import pytest

import engine as en


def _read_only_view(base):
    view = base[:]
    view.flags.writeable = False
    return view


def test_tensor_of_read_only_view_of_writable_array_is_a_copy():
    base = np.arange(4.0)
    t = en.tensor(_read_only_view(base))
    base[0] = 99.0
    assert t.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_tensor_of_a_writable_buffer_is_a_copy():
    buf = bytearray(np.arange(2.0).tobytes())
    t = en.tensor(memoryview(buf).cast("d"))
    buf[:8] = np.float64(5.0).tobytes()
    assert t.numpy().tolist() == [0.0, 1.0]
    ro = np.frombuffer(bytearray(np.arange(2.0).tobytes()))
    ro.flags.writeable = False      # its base, the bytearray, is still writable
    t = en.tensor(ro)
    assert not np.shares_memory(t.numpy(), ro)


def test_truly_read_only_data_is_shared_not_copied():
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    assert np.shares_memory(en.tensor(frozen).numpy(), frozen)
    raw = np.frombuffer(np.arange(3.0).tobytes())       # bytes: immutable
    assert np.shares_memory(en.tensor(raw).numpy(), raw)
    with mmap.mmap(-1, 16, access=mmap.ACCESS_READ) as m:
        mapped = np.frombuffer(m, dtype=np.float64)
        assert np.shares_memory(en.tensor(mapped).numpy(), mapped)
        del mapped


def test_eager_op_on_numpy_argument_does_not_alias_it():
    a = np.arange(4.0)
    r = en.reshape(a, (2, 2))
    a[1] = 77.0
    assert r.numpy().ravel().tolist() == [0.0, 1.0, 2.0, 3.0]


FUNCTIONS = {
    "identity": lambda x: x,
    "slice": lambda x: x[1:],
    "reshape": lambda x: en.reshape(x, (2, 2)),
    "transpose": lambda x: en.transpose(en.reshape(x, (2, 2))),
    "tuple of views": lambda x: (x[:2], en.reshape(x, (4, 1)), x * 2.0),
}


def _values(result):
    if isinstance(result, tuple):
        return [r.numpy().ravel().tolist() for r in result]
    return result.numpy().ravel().tolist()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("signature", [None, [en.TensorSpec((None,), "float64")]])
def test_function_results_never_alias_a_numpy_argument(name, signature):
    fn = FUNCTIONS[name]
    f = en.function(fn, input_signature=signature)
    for _ in range(2):                       # traced call, then the cached one
        a = np.arange(4.0)
        result = f(a)
        expected = _values(fn(en.tensor(a.copy())))
        a[:] = -1.0
        assert _values(result) == expected


def test_function_result_of_read_only_view_argument_does_not_follow_its_base():
    f = en.function(lambda x: x)
    base = np.arange(3.0)
    r = f(_read_only_view(base))
    base[0] = 5.0
    assert r.numpy().tolist() == [0.0, 1.0, 2.0]


def test_py_function_returning_its_input_does_not_alias_the_argument():
    f = en.function(lambda x: en.py_function(lambda t: t, [x], en.TensorSpec((3,), "float64")))
    a = np.arange(3.0)
    r = f(a)
    a[0] = 9.0
    assert r.numpy().tolist() == [0.0, 1.0, 2.0]


def test_function_under_tape_keeps_gradients_of_the_argument_it_saw():
    f = en.function(lambda x, w: en.sum(x * w))
    a = np.array([1.0, 2.0])
    w = en.tensor([3.0, 4.0])
    with en.GradientTape() as tape:
        tape.watch(w)
        y = f(a, w)                          # the backward pass needs x
    a[:] = 100.0
    assert tape.gradient(y, w).numpy().tolist() == [1.0, 2.0]


def test_py_function_returning_an_array_it_keeps_does_not_alias_it():
    kept = np.zeros(3)
    spec = en.TensorSpec((3,), "float64")
    eager = en.py_function(lambda t: kept, [en.ones(3)], spec)
    graph = en.function(lambda x: en.py_function(lambda t: kept, [x], spec))(en.ones(3))
    kept[:] = 7.0
    assert eager.numpy().tolist() == [0.0, 0.0, 0.0]
    assert graph.numpy().tolist() == [0.0, 0.0, 0.0]
