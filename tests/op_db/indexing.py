"""Op-database entries for indexing (``engine/ops/indexing.py``): ``getitem`` and
``scatter_add``. Index arrays given as numpy arrays reach the engine as int tensors
(index inputs of the op); lists stay lists; boolean masks are converted by the engine."""
import numpy as np

import engine as en

from op_db.core import ErrorInput, OpInfo, Sample, add, error_cases, make, op_dtypes


def _tensor_index(index):
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(en.tensor(i) if isinstance(i, np.ndarray) else i for i in items)
    return items if isinstance(index, tuple) else items[0]


def _getitem_samples(dtype, rng):
    x = make(rng, (4, 3, 5), dtype)
    mask = np.array([True, False, True, True])
    for index in [1, -1, (slice(None), 2), (slice(1, 3), slice(None, None, -2)),
                  (Ellipsis, 0), (None, 2, Ellipsis, None), (slice(3, 1),),
                  ([0, 3, 3],), (np.array([[0, 1], [2, 3]]),), (slice(None), [2, 0], [1, 4]),
                  ([0, 1], slice(None), [4, 4]), (1, slice(None), np.array([0, 2])),
                  (mask,), (mask, slice(None), 2), (np.array([], dtype=np.int64),),
                  (slice(None), np.array(-1))]:
        yield Sample((x,), dict(index=index))
    yield Sample((make(rng, (), dtype),), dict(index=(None, Ellipsis)), desc="0-d input")
    yield Sample((make(rng, (0, 3), dtype),), dict(index=(slice(None), 1)), desc="0-size input")


def _scatter_add_samples(dtype, rng):
    x = make(rng, (4, 3), dtype)
    for index, ushape in [((1,), (3,)), ((slice(1, 3),), (2, 3)), ([0, 2, 0], (3, 3)),
                          ((np.array([1, 1, 3]), np.array([0, 0, 2])), (3,)),
                          ((slice(None), 1), ()), ((Ellipsis, [2, 2]), (4, 1)),
                          (np.array([], dtype=np.int64), (0, 3))]:
        yield Sample((x, make(rng, ushape, dtype)), dict(index=index))


def _scatter_add_ref(x, updates, index):
    out = np.array(x, copy=True)
    np.add.at(out, index, updates)
    return out


add(OpInfo("getitem", lambda x, index: en.ops.getitem(x, _tensor_index(index)),
           lambda x, index: x[index], _getitem_samples, op_dtypes("getitem"),
           error_inputs=error_cases([((4, 3), dict(index=(4,)), en.ShapeError),
                                 ((4, 3), dict(index=(0, 0, 0)), en.ShapeError),
                                 ((4, 3), dict(index=(np.array([0, 4]),)), en.ShapeError),
                                 ((4, 3), dict(index=(np.array([0.5]),)), en.DTypeError),
                                 ((4, 3), dict(index=(np.array([True, False]),)), en.ShapeError),
                                 ((4, 3), dict(index=([0, 1], [0, 1, 2])), en.ShapeError)])))
add(OpInfo("scatter_add",
           lambda x, updates, index: en.scatter_add(x, _tensor_index(index), updates),
           _scatter_add_ref, _scatter_add_samples, op_dtypes("scatter_add"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(2)), dict(index=(1,))), en.ShapeError),
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(3)), dict(index=(5,))), en.ShapeError),
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(3)), dict(index=(np.array([7]),))),
                          en.ShapeError),
               ErrorInput(Sample((np.zeros((4, 3), np.int64), np.ones(3)), dict(index=(1,))),
                          en.DTypeError)]))


def _index_update_samples(dtype, rng):
    x = make(rng, (4, 3), dtype)
    for index, vshape in [((1,), (3,)), ((slice(1, 3),), (2, 3)), ([0, 2], (2, 3)),
                          ((np.array([1, 3]), np.array([0, 2])), (2,)),
                          ((slice(None), 1), ()), ((Ellipsis, [2, 0]), (4, 1)),
                          ((np.array([True, False, True, False]),), (3,)),
                          (np.array([], dtype=np.int64), (0, 3))]:
        yield Sample((x, make(rng, vshape, dtype)), dict(index=index))


def _index_update_ref(x, values, index):
    out = np.array(x, copy=True)
    out[index] = values
    return out


add(OpInfo("index_update",
           lambda x, values, index: en.index_update(x, _tensor_index(index), values),
           _index_update_ref, _index_update_samples, op_dtypes("index_update"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(2)), dict(index=(1,))), en.ShapeError),
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(3)), dict(index=(5,))), en.ShapeError),
               ErrorInput(Sample((np.zeros((4, 3)), np.ones(3) + 1j), dict(index=(1,))),
                          en.DTypeError)]))
