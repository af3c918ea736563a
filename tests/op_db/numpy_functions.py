"""Op-database entries for numpy's manipulation, indexing and utility composites
(issue #48 part A: ``engine/ops/stacking.py``, ``rearranging.py``, ``picking.py``,
``set_functions.py``, ``index_helpers.py``, ``numeric_helpers.py``), each against numpy
itself. Only the composites with static shapes are here (the suites trace, batch and
differentiate every entry); the set functions, ``extract``, ``trim_zeros``,
``piecewise`` and ``real_if_close`` read values and are covered, eagerly and their
refusal while tracing, by tests/interop/test_numpy_functions_manipulation.py."""
import numpy as np

import engine as en

from op_db.core import (ALL, BOOL, F64, FLOATS, INTS, NUMERIC, OpInfo, Sample, composite,
                        error_cases, make, with_params)


def _lists(cases):
    """Samples ``op([x, y, ...], **params)`` from ``(shapes, params)`` cases."""
    def gen(dtype, rng):
        for shapes, params in cases:
            yield Sample(([make(rng, s, dtype) for s in shapes],), dict(params))
    return gen


def _entry(name, samples, dtypes=ALL, ref=None, errors=(), grad=True, **kw):
    return composite(OpInfo(name, getattr(en, name), ref or getattr(np, name), samples, dtypes,
                            error_inputs=error_cases(list(errors)), supports_grad=grad, **kw))


# ---- joining and splitting -----------------------------------------------------------------------
_entry("hstack", _lists([([(2, 3), (2, 1)], {}), ([(4,), (2,)], {}), ([(), (3,)], {}),
                         ([(0,), (2,)], {}), ([(2, 3, 1), (2, 2, 1)], {})]),
       errors=[((2, 3), {}, en.ShapeError)])
_entry("vstack", _lists([([(3,), (3,)], {}), ([(2, 3), (1, 3)], {}), ([(), ()], {}),
                         ([(0, 2), (1, 2)], {})]))
_entry("dstack", _lists([([(3,), (3,)], {}), ([(2, 3), (2, 3)], {}), ([(2, 1, 2), (2, 1, 1)], {})]))
_entry("column_stack", _lists([([(3,), (3,)], {}), ([(3, 2), (3,)], {}), ([(), ()], {})]))


def _block_samples(dtype, rng):
    yield Sample(([make(rng, (2,), dtype), make(rng, (3,), dtype)],))
    yield Sample(([[make(rng, (2, 2), dtype), make(rng, (2, 1), dtype)],
                   [make(rng, (1, 3), dtype)]],))
    yield Sample(([[make(rng, (2,), dtype)], [make(rng, (1, 2), dtype)]],))


_entry("block", _block_samples)


def _append_samples(dtype, rng):
    for sx, sy, params in [((2, 3), (4,), {}), ((2, 3), (1, 3), dict(axis=0)), ((), (2,), {}),
                           ((2, 0), (2, 2), dict(axis=1))]:
        yield Sample((make(rng, sx, dtype), make(rng, sy, dtype)), params)


_entry("append", _append_samples)


def _split_samples(shape, cases):
    def gen(dtype, rng):
        for spec, params in cases:
            yield Sample((make(rng, shape, dtype), spec), dict(params))
    return gen


_entry("array_split", _split_samples((5, 4), [(3, {}), ([1, 3], dict(axis=1)), (6, {}),
                                              ([3, 1], {}), ([-2], dict(axis=1))]),
       errors=[((3,), dict(indices_or_sections=0), en.ShapeError, "array_split")])
_entry("hsplit", _split_samples((2, 6), [(3, {}), ([1, 4], {})]),
       errors=[((2, 5), dict(indices_or_sections=2), en.ShapeError, "hsplit"),
               ((), dict(indices_or_sections=1), en.ShapeError, "hsplit")])
_entry("vsplit", _split_samples((4, 3), [(2, {}), ([3], {})]),
       errors=[((4,), dict(indices_or_sections=2), en.ShapeError, "vsplit")])
_entry("dsplit", _split_samples((2, 1, 4), [(2, {}), ([1], {})]),
       errors=[((2, 4), dict(indices_or_sections=2), en.ShapeError, "dsplit")])

# ---- reordering, reshaping, building ---------------------------------------------------------------
_entry("fliplr", with_params([((2, 3), {}), ((2, 3, 4), {}), ((0, 2), {})]),
       errors=[((3,), {}, en.ShapeError)])
_entry("flipud", with_params([((3,), {}), ((2, 3), {}), ((0,), {})]),
       errors=[((), {}, en.ShapeError)])
_entry("rot90", with_params([((2, 3), {}), ((2, 3), dict(k=2)), ((2, 3), dict(k=-1)),
                             ((2, 3), dict(k=4)), ((2, 3, 4), dict(k=1, axes=(2, 0))),
                             ((2, 3, 4), dict(k=3, axes=(-1, 1)))]),
       errors=[((2, 2), dict(axes=(0, 0)), en.ShapeError), ((2, 2), dict(axes=(0,)), en.ShapeError)])
_entry("rollaxis", with_params([((2, 3, 4), dict(axis=2)), ((2, 3, 4), dict(axis=0, start=3)),
                                ((2, 3, 4), dict(axis=1, start=1)), ((2, 3, 4), dict(axis=-1, start=-2))]),
       errors=[((2, 3), dict(axis=0, start=3), en.ShapeError), ((2, 3), dict(axis=2), en.ShapeError)])
_entry("ravel", with_params([((2, 3), {}), ((2, 3), dict(order="F")), ((), {}), ((0, 2), {})]))
_entry("copy", with_params([((2, 3), {}), ((), {})]))
_entry("resize", with_params([((4,), dict(new_shape=(3, 3))), ((2, 3), dict(new_shape=4)),
                              ((2, 3), dict(new_shape=(2, 0))), ((0,), dict(new_shape=(2,))),
                              ((), dict(new_shape=(2,)))]),
       errors=[((2,), dict(new_shape=(-1,)), en.ShapeError)])
_entry("diagflat", with_params([((2, 2), {}), ((3,), dict(k=-1)), ((3,), dict(k=2)), ((), {})]))
_entry("vander", with_params([((4,), {}), ((3,), dict(N=2)), ((3,), dict(N=0)),
                              ((3,), dict(N=5, increasing=True)), ((0,), {})]), dtypes=NUMERIC,
       errors=[((2, 2), {}, en.ShapeError)])


def _full_like_samples(dtype, rng):
    yield Sample((make(rng, (2, 3), dtype), 1))
    yield Sample((make(rng, (2, 3), dtype), make(rng, (3,), dtype)))
    yield Sample((make(rng, (2,), dtype), make(rng, (), dtype)), dict(shape=(3, 2)))


_entry("full_like", _full_like_samples)

# ---- picking with static indices -------------------------------------------------------------------
_entry("delete", with_params([((2, 3), dict(obj=1, axis=1)), ((2, 3, 4), dict(obj=[0, -1], axis=2)),
                              ((5,), dict(obj=slice(1, 3))), ((2, 3), dict(obj=[True, False], axis=0)),
                              ((2, 3), dict(obj=[])), ((), dict(obj=0))]),
       errors=[((3,), dict(obj=3), en.ShapeError), ((3,), dict(obj=[0.5]), en.DTypeError)])


def _insert_samples(dtype, rng):
    for shape, obj, vshape, axis in [((4,), 1, (), None), ((2, 3), [0, 3], (2, 1), 1),
                                     ((2, 3), 1, (2,), 1), ((5,), [2, 0, 2], (3,), None),
                                     ((2, 3), -1, (3,), 0)]:
        yield Sample((make(rng, shape, dtype), obj, make(rng, vshape, dtype)), dict(axis=axis))


_entry("insert", _insert_samples,
       errors=[((3,), dict(obj=5, values=1.0), en.ShapeError)])
_entry("compress", lambda dtype, rng: (
    Sample(([True, False, True], make(rng, (4,), dtype))),
    Sample(([False, True], make(rng, (2, 3), dtype)), dict(axis=0)),
    Sample(([True, False, True], make(rng, (2, 3), dtype)), dict(axis=1))),
    ref=lambda c, a, axis=None: np.compress(c, a, axis=axis))


def _choose_samples(dtype, rng):
    yield Sample((np.array([0, 1, 1, 0]), [make(rng, (4,), dtype), make(rng, (4,), dtype)]))
    yield Sample((np.array([[0], [2]]), [make(rng, (3,), dtype) for _ in range(3)]))
    yield Sample((np.array([0, 3, -1]), [make(rng, (3,), dtype) for _ in range(2)]),
                 dict(mode="wrap"))
    yield Sample((np.array([0, 3, -1]), [make(rng, (3,), dtype) for _ in range(2)]),
                 dict(mode="clip"))


_entry("choose", _choose_samples)


def _select_samples(dtype, rng):
    x = make(rng, (2, 3), dtype)
    yield Sample(([make(rng, (2, 3), BOOL), make(rng, (3,), BOOL)],
                  [x, make(rng, (2, 3), dtype)]))
    yield Sample(([make(rng, (3,), BOOL)], [make(rng, (3,), dtype)], make(rng, (), dtype)),
                 desc="an array default")


_entry("select", _select_samples)

# ---- sorting keys and sets ------------------------------------------------------------------------


def _isin_samples(dtype, rng):
    for sx, sy, params in [((2, 3), (4,), {}), ((5,), (2, 2), dict(invert=True)), ((3,), (0,), {}),
                           ((), (3,), {})]:
        yield Sample((make(rng, sx, dtype, -2, 2).round().astype(dtype),
                      make(rng, sy, dtype, -2, 2).round().astype(dtype)), params)


_entry("isin", _isin_samples, grad=False)


def _lexsort_samples(dtype, rng):
    coarse = lambda s: make(rng, s, dtype, -1, 1).round().astype(dtype)  # noqa: E731  (ties)
    yield Sample(((coarse((8,)), coarse((8,))),))
    yield Sample(((coarse((3, 4)), coarse((3, 4)), coarse((3, 4))),), dict(axis=0))
    yield Sample(((coarse((0,)),),))


_entry("lexsort", _lexsort_samples, grad=False)
_entry("sort_complex", with_params([((5,), {}), ((2, 3), {}), ((0,), {})]), dtypes=FLOATS + INTS,
       grad=False)

# ---- index builders and numeric helpers ----------------------------------------------------------
_entry("unravel_index", lambda dtype, rng: (
    Sample((np.array([22, 41, 37], dtype), (7, 6))),
    Sample((np.array([[3, 1], [0, 5]], dtype), (2, 3)), dict(order="F")),
    Sample((np.array(5, dtype), (2, 3)))), dtypes=INTS, grad=False)
_entry("ravel_multi_index", lambda dtype, rng: (
    Sample(((np.array([3, 6, 6], dtype), np.array([4, 5, 1], dtype)), (7, 6))),
    Sample(((np.array([3, 9, -1], dtype), np.array([4, 8, 1], dtype)), (7, 6)),
           dict(mode=("clip", "wrap"))),
    Sample(((np.array([1, 2], dtype), np.array([0, 3], dtype)), (3, 4)), dict(order="F"))),
    dtypes=INTS, grad=False)
_entry("fix", with_params([((5,), {}), ((2, 3), {}), ((), {}), ((0,), {})]), grad=False)
_entry("isposinf", lambda dtype, rng: (Sample((make(rng, (2, 3), dtype),)),
                                       Sample((np.array([np.inf, -np.inf, 1.0, np.nan], dtype),))),
       dtypes=FLOATS, grad=False)
_entry("isneginf", lambda dtype, rng: (Sample((make(rng, (2, 3), dtype),)),
                                       Sample((np.array([np.inf, -np.inf, 1.0, np.nan], dtype),))),
       dtypes=FLOATS, grad=False)
_entry("iscomplex", with_params([((2, 3), {}), ((), {})]), grad=False)
_entry("isreal", with_params([((2, 3), {}), ((), {})]), grad=False)
_entry("packbits", with_params([((3, 11), {}), ((3, 11), dict(axis=1)),
                                ((10, 2), dict(axis=0, bitorder="little")), ((), {})]),
       dtypes=INTS + (BOOL,), grad=False)


def _geomspace_samples(dtype, rng):
    yield Sample((np.asarray(1.5, dtype), np.asarray(40.0, dtype)), dict(num=4))
    yield Sample((np.asarray([-1.0, 2.0], dtype), np.asarray([-8.0, 0.5], dtype)),
                 dict(num=3, axis=1))
    yield Sample((np.asarray(2.0, dtype), np.asarray(3.0, dtype)), dict(num=5, endpoint=False))


_entry("geomspace", _geomspace_samples, dtypes=(F64,),
       ref=lambda start, stop, **kw: np.geomspace(start, stop, **kw))
