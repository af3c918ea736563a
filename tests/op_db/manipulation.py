"""Op-database entries for the running reductions, sorting and searching, the numpy
manipulation functions and the statistics (``engine/ops/cumulative.py``, ``sorting.py``,
``manipulation.py``, ...), each against numpy itself; the composites go to COMPOSITES."""
import numpy as np

import engine as en

from op_db.core import (ALL, BOOL, F64, FLOATS, NUMERIC, ErrorInput, OpInfo, Sample, add,
                        composite, error_cases, make, make_distinct, make_nonzero, op_dtypes,
                        scalar_of, with_params)


def _float64_only(gen):
    """Gradient samples: the float64 samples of ``gen``."""
    return lambda rng: gen(F64, rng)


# ---- running reductions ------------------------------------------------------------------
SCAN_CASES = [((5,), dict(axis=0)), ((2, 3, 4), dict(axis=1)), ((2, 3, 4), dict(axis=-1)),
              ((2, 3), dict(axis=None)), ((), dict(axis=None)), ((0, 3), dict(axis=0)),
              ((2, 0), dict(axis=1)), ((3, 4), dict(axis=0))]
SCAN_ERRORS = [((2, 3), dict(axis=2), en.ShapeError), ((2, 3), dict(axis=-3), en.ShapeError)]


def _np_scan(fn):
    def ref(x, axis=None, dtype=None):
        if axis is None:
            x, axis = np.reshape(x, -1), 0
        return fn(x, axis=axis)
    return ref


def _cumprod_grad_samples(rng):
    yield from with_params(SCAN_CASES, lambda rng, s, d: make_nonzero(rng, s, d, 0.5, 1.5))(F64, rng)
    x = make_nonzero(rng, (3, 5), F64, 0.5, 1.5)
    x[0, 2] = 0.0                 # one zero in a row
    x[1, 1] = x[1, 3] = 0.0       # two zeros
    x[2, 0] = 0.0                 # a zero first
    yield Sample((x,), dict(axis=1), desc="zeros")
    yield Sample((x.T.copy(),), dict(axis=0), desc="zeros down the columns")


add(OpInfo("cumsum", en.cumsum, _np_scan(np.cumsum), with_params(SCAN_CASES), op_dtypes("cumsum"),
           error_inputs=error_cases(SCAN_ERRORS)))
add(OpInfo("cumprod", en.cumprod, _np_scan(np.cumprod),
           with_params(SCAN_CASES, lambda rng, s, d: make(rng, s, d, -1.5, 1.5)), op_dtypes("cumprod"),
           error_inputs=error_cases(SCAN_ERRORS), grad_samples=_cumprod_grad_samples))
for _name, _ufunc in [("cummax", np.maximum), ("cummin", np.minimum)]:
    add(OpInfo(_name, getattr(en, _name), _np_scan(_ufunc.accumulate),
               with_params(SCAN_CASES, make_distinct), op_dtypes(_name),
               error_inputs=error_cases(SCAN_ERRORS + [((), dict(axis=0), en.ShapeError)])))


def _cumulative_samples(dtype, rng):
    for shape, params in [((5,), {}), ((5,), dict(include_initial=True)),
                          ((2, 3), dict(axis=1, include_initial=True)), ((2, 3), dict(axis=0)),
                          ((0,), dict(include_initial=True)), ((3, 0), dict(axis=1)),
                          ((2, 3), dict(axis=-1, dtype=F64))]:
        yield Sample((make(rng, shape, dtype, -1.5, 1.5),), params)


def _cumulative_errors(name):
    return error_cases([((2, 3), {}, en.ShapeError, name), ((), dict(axis=0), en.ShapeError, name),
                    ((2, 3), dict(axis=2), en.ShapeError, name)])


composite(OpInfo("cumulative_sum", en.cumulative_sum, np.cumulative_sum, _cumulative_samples,
                 ALL, error_inputs=_cumulative_errors("cumulative_sum")))
composite(OpInfo("cumulative_prod", en.cumulative_prod, np.cumulative_prod, _cumulative_samples,
                 ALL, error_inputs=_cumulative_errors("cumulative_prod")))


def _diff_samples(dtype, rng):
    for shape, params in [((5,), {}), ((5,), dict(n=2)), ((2, 4), dict(axis=0)),
                          ((2, 4), dict(n=3, axis=1)), ((3,), dict(n=0)), ((3,), dict(n=4)),
                          ((0, 2), dict(axis=0))]:
        yield Sample((make(rng, shape, dtype),), params)
    # Fixed prepend and append (the transformation suites share a sample's params).
    yield Sample((make(rng, (2, 3), dtype),), dict(prepend=np.arange(2).reshape(2, 1).astype(dtype),
                                                   append=np.ones((2, 2), dtype)))
    yield Sample((make(rng, (4,), dtype),), dict(prepend=scalar_of(dtype)), desc="scalar prepend")


def _diff_ref(x, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    return np.diff(x, n=n, axis=axis, prepend=prepend, append=append)


def _diff_call(x, prepend=None, append=None, **kw):
    wrap = lambda v: en.tensor(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    return en.diff(x, prepend=wrap(prepend), append=wrap(append), **kw)


composite(OpInfo("diff", _diff_call, lambda x, prepend=None, append=None, **kw: _diff_ref(
    x, prepend=np._NoValue if prepend is None else prepend,
    append=np._NoValue if append is None else append, **kw), _diff_samples, ALL,
    error_inputs=error_cases([((), {}, en.ShapeError, "diff"), ((3,), dict(axis=1), en.ShapeError),
                          ((3,), dict(n=-1), en.ShapeError, "diff")])))


# ---- sorting and searching ----------------------------------------------------------------
SORT_CASES = [((5,), dict(axis=-1)), ((2, 3, 4), dict(axis=1)), ((3, 4), dict(axis=0)),
              ((2, 3), dict(axis=None)), ((3, 4), dict(descending=True)),
              ((4, 3), dict(axis=0, descending=True)), ((0, 3), dict(axis=0)), ((2, 0), {})]


def _coarse(rng, shape, dtype):
    """Few distinct values, so ties occur and stability is checked."""
    return make(rng, shape, dtype, -2, 2).round().astype(dtype)


def _np_sort(x, axis=-1, descending=False):
    if axis is None:
        x, axis = np.reshape(x, -1), -1
    if descending:   # stable, largest first: numpy's stable sort of the reversed keys
        return np.flip(np.sort(x, axis=axis, kind="stable"), axis)
    return np.sort(x, axis=axis, kind="stable")


def _np_argsort(x, axis=-1, descending=False):
    if axis is None:
        x, axis = np.reshape(x, -1), -1
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # The independent reference: order by (-value, position) with lexsort.
    moved = np.moveaxis(x, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    pos = np.arange(moved.shape[-1])
    keys = flat.astype(np.float64) if flat.dtype == bool else flat
    rows = [np.lexsort((pos, -keys[i].astype(np.float64))) for i in range(flat.shape[0])]
    out = np.array(rows, dtype=np.int64).reshape(moved.shape)
    return np.moveaxis(out, -1, axis)


SORT_ERRORS = [((2, 3), dict(axis=2), en.ShapeError), ((), dict(axis=0), en.ShapeError)]
add(OpInfo("sort", en.sort, _np_sort, with_params(SORT_CASES, make_distinct), op_dtypes("sort"),
           error_inputs=error_cases(SORT_ERRORS)))
add(OpInfo("argsort", en.argsort, _np_argsort, with_params(SORT_CASES, _coarse),
           op_dtypes("argsort"), supports_grad=False, error_inputs=error_cases(SORT_ERRORS)))


def _searchsorted_samples(dtype, rng):
    a = np.sort(_coarse(rng, (7,), dtype))
    for v_shape, side in [((5,), "left"), ((5,), "right"), ((2, 3), "left"), ((), "right"),
                          ((0,), "left")]:
        yield Sample((a, _coarse(rng, v_shape, dtype)), dict(side=side))
    yield Sample((a[:0], _coarse(rng, (3,), dtype)), dict(side="left"), desc="empty a")
    # The same sorter in every draw (the transformation suites share a sample's params).
    sorter = np.array([2, 1, 5, 6, 0, 3, 4])
    unsorted = np.empty_like(a)
    unsorted[sorter] = a
    yield Sample((unsorted, _coarse(rng, (4,), dtype)), dict(sorter=sorter), desc="sorter")


add(OpInfo("searchsorted", en.searchsorted, np.searchsorted, _searchsorted_samples,
           op_dtypes("searchsorted"), supports_grad=False, error_inputs=lambda: [
               ErrorInput(Sample((np.ones((2, 3)), np.ones(2))), en.ShapeError),
               ErrorInput(Sample((np.ones(3), np.ones(2)), dict(side="middle")), en.ShapeError)]))


def _fit_ref(values, size, fill):
    values = np.asarray(values)
    if len(values) >= size:
        return values[:size]
    return np.concatenate([values, np.full(size - len(values), fill, dtype=values.dtype)])


def _nonzero_samples(dtype, rng):
    for shape, extra, fill in [((6,), 0, 0), ((3, 4), 2, -1), ((2, 3, 2), -2, 0), ((0, 3), 1, 5),
                               ((4,), 0, 0)]:
        x = _coarse(rng, shape, dtype)
        yield Sample((x,), dict(size=max(int(np.count_nonzero(x)) + extra, 0), fill_value=fill))


def _nonzero_ref(x, size, fill_value=0):
    return tuple(_fit_ref(i.astype(np.int64), size, fill_value) for i in np.nonzero(x))


add(OpInfo("nonzero", en.nonzero, _nonzero_ref, _nonzero_samples, op_dtypes("nonzero"),
           supports_grad=False, error_inputs=lambda: [
               ErrorInput(Sample((np.ones(()),), dict(size=1)), en.ShapeError),
               ErrorInput(Sample((np.ones(3),), dict(size=-1)), en.ShapeError)]))


def _unique_samples(dtype, rng):
    for shape, extra in [((7,), 0), ((3, 4), 2), ((2, 3), -1), ((0,), 2), ((5,), 0)]:
        x = _coarse(rng, shape, dtype)
        n = len(np.unique(x))
        yield Sample((x,), dict(size=max(n + extra, 0), return_index=True, return_inverse=True,
                                return_counts=True))
    x = _coarse(rng, (6,), dtype)
    yield Sample((x,), dict(size=len(np.unique(x)) + 2, fill_value=scalar_of(dtype)),
                 desc="fill value")


def _unique_ref(x, size, fill_value=None, **flags):
    values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True)
    fill = fill_value if fill_value is not None else (values[0] if len(values) else 0)
    out = [_fit_ref(values, size, np.asarray(fill).astype(x.dtype))]
    if flags.get("return_index"):
        out.append(_fit_ref(index.astype(np.int64), size, 0))
    if flags.get("return_inverse"):
        out.append(inverse.astype(np.int64).reshape(x.shape))
    if flags.get("return_counts"):
        out.append(_fit_ref(counts.astype(np.int64), size, 0))
    return tuple(out) if len(out) > 1 else out[0]


add(OpInfo("unique", en.unique, _unique_ref, _unique_samples, op_dtypes("unique"),
           supports_grad=False, error_inputs=lambda: [
               ErrorInput(Sample((np.ones(3),), dict(size=-1)), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 2)),), dict(axis=0)), en.ShapeError)]))


def _unique_fn_samples(dtype, rng):
    for shape in [(7,), (3, 4), (0,)]:
        x = _coarse(rng, shape, dtype)
        yield Sample((x,), dict(size=len(np.unique(x))))


def _np_unique_parts(*parts):
    """The Array API unique function returning ``parts`` of np.unique's (sorted) results."""
    def ref(x, size=None):
        values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                                   return_counts=True, equal_nan=False)
        found = dict(values=values, index=index.astype(np.int64),
                     inverse=inverse.astype(np.int64).reshape(x.shape),
                     counts=counts.astype(np.int64))
        out = tuple(found[p] for p in parts)
        return out if len(out) > 1 else out[0]
    return ref


for _name, _parts in [("unique_all", ("values", "index", "inverse", "counts")),
                      ("unique_counts", ("values", "counts")),
                      ("unique_inverse", ("values", "inverse")), ("unique_values", ("values",))]:
    composite(OpInfo(_name, getattr(en, _name), _np_unique_parts(*_parts), _unique_fn_samples,
                     ALL, supports_grad=False))


def _count_nonzero_samples(dtype, rng):
    for shape, params in [((3, 4), {}), ((3, 4), dict(axis=1)), ((2, 3, 4), dict(axis=(0, 2))),
                          ((2, 3), dict(axis=0, keepdims=True)), ((0, 3), dict(axis=0)),
                          ((), {})]:
        yield Sample((_coarse(rng, shape, dtype),), params)


composite(OpInfo("count_nonzero", en.count_nonzero,
                 lambda x, **kw: np.asarray(np.count_nonzero(x, **kw), dtype=np.int64),
                 _count_nonzero_samples, ALL, supports_grad=False,
                 error_inputs=error_cases([((2, 3), dict(axis=2), en.ShapeError)])))


def _argwhere_samples(dtype, rng):
    for shape in [(6,), (3, 4), (2, 0)]:
        x = _coarse(rng, shape, dtype)
        yield Sample((x,), dict(size=int(np.count_nonzero(x))))


composite(OpInfo("argwhere", en.argwhere, lambda x, size: np.argwhere(x).astype(np.int64),
                 _argwhere_samples, ALL, supports_grad=False))
composite(OpInfo("flatnonzero", en.flatnonzero,
                 lambda x, size: np.flatnonzero(x).astype(np.int64), _argwhere_samples, ALL,
                 supports_grad=False))


# ---- manipulation ----------------------------------------------------------------------------
def _composite_cases(name, ref, cases, dtypes=ALL, errors=(), maker=make, **kw):
    composite(OpInfo(name, getattr(en, name), ref, with_params(cases, maker), dtypes,
                     error_inputs=error_cases(errors), **kw))


_composite_cases("flip", np.flip, [((5,), {}), ((2, 3), dict(axis=1)), ((2, 3, 4), dict(axis=(0, 2))),
                                   ((), {}), ((0, 3), dict(axis=0)), ((2, 3), dict(axis=-1))],
                 errors=[((2, 3), dict(axis=2), en.ShapeError, "flip")])
_composite_cases("roll", np.roll, [((5,), dict(shift=2)), ((2, 3), dict(shift=-1, axis=1)),
                                   ((2, 3), dict(shift=4)), ((2, 3, 4), dict(shift=(1, 2), axis=(0, 2))),
                                   ((3, 4), dict(shift=5, axis=(0, 1))), ((0, 3), dict(shift=1, axis=0)),
                                   ((3,), dict(shift=0))],
                 errors=[((2, 3), dict(shift=1, axis=2), en.ShapeError, "roll"),
                         ((2, 3), dict(shift=(1, 2), axis=(0, 1, 1)), en.ShapeError, "roll")])
_composite_cases("moveaxis", np.moveaxis, [((2, 3, 4), dict(source=0, destination=-1)),
                                           ((2, 3, 4), dict(source=(0, 1), destination=(2, 0))),
                                           ((2, 3), dict(source=1, destination=0)),
                                           ((0, 3, 1), dict(source=-1, destination=0))],
                 errors=[((2, 3), dict(source=2, destination=0), en.ShapeError, "moveaxis"),
                         ((2, 3), dict(source=(0, 1), destination=0), en.ShapeError, "moveaxis")])
_composite_cases("swapaxes", np.swapaxes, [((2, 3, 4), dict(axis1=0, axis2=2)),
                                           ((2, 3), dict(axis1=1, axis2=-2)), ((3,), dict(axis1=0, axis2=0))],
                 errors=[((2, 3), dict(axis1=0, axis2=2), en.ShapeError, "swapaxes")])
_composite_cases("tile", np.tile, [((3,), dict(reps=2)), ((2, 3), dict(reps=(2, 1))),
                                   ((2,), dict(reps=(2, 2, 3))), ((2, 3, 1), dict(reps=(3,))),
                                   ((), dict(reps=3)), ((2, 0), dict(reps=2)), ((2,), dict(reps=0))],
                 errors=[((2,), dict(reps=-1), en.ShapeError, "tile"),
                         ((2,), dict(reps=1.5), en.ShapeTypeError, "tile")])
_composite_cases("repeat", np.repeat, [((3,), dict(repeats=2)), ((2, 3), dict(repeats=2, axis=1)),
                                       ((2, 3), dict(repeats=[1, 0, 3], axis=1)),
                                       ((2, 3), dict(repeats=3)), ((2, 3), dict(repeats=[2], axis=0)),
                                       ((), dict(repeats=2)), ((0, 2), dict(repeats=2, axis=0))],
                 errors=[((3,), dict(repeats=[1, 2]), en.ShapeError, "repeat"),
                         ((3,), dict(repeats=-1), en.ShapeError, "repeat"),
                         ((3,), dict(repeats=2, axis=1), en.ShapeError, "repeat")])
for _name in ("tril", "triu"):
    _composite_cases(_name, getattr(np, _name),
                     [((3, 3), {}), ((3, 4), dict(k=1)), ((4, 3), dict(k=-1)),
                      ((2, 3, 3), dict(k=0)), ((2, 2), dict(k=5)), ((0, 3), {})],
                     errors=[((3,), {}, en.ShapeError, _name)])
_composite_cases("diagonal", np.diagonal, [((3, 3), {}), ((3, 4), dict(offset=1)),
                                           ((4, 3), dict(offset=-2)), ((2, 3, 4), dict(axis1=1, axis2=2)),
                                           ((2, 3, 4), dict(offset=1, axis1=2, axis2=0)),
                                           ((3, 3), dict(offset=5)), ((0, 2), {})],
                 errors=[((3,), {}, en.ShapeError, "diagonal"),
                         ((3, 3), dict(axis1=1, axis2=1), en.ShapeError, "diagonal")])
_composite_cases("trace", np.trace, [((3, 3), {}), ((3, 4), dict(offset=1)),
                                     ((2, 3, 4), dict(axis1=1, axis2=2)), ((0, 2), {}),
                                     ((3, 3), dict(offset=-1))],
                 errors=[((3,), {}, en.ShapeError, "diagonal")])
_composite_cases("diag", np.diag, [((3,), {}), ((3,), dict(k=1)), ((2,), dict(k=-2)),
                                   ((3, 4), {}), ((3, 4), dict(k=-1)), ((0,), dict(k=1))],
                 errors=[((2, 2, 2), {}, en.ShapeError, "diag")])
for _name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    _composite_cases(_name, getattr(np, _name), [((), {}), ((3,), {}), ((2, 3), {}),
                                                 ((2, 3, 4), {}), ((0,), {})])


def _broadcast_arrays_samples(dtype, rng):
    for shapes in [[(3,), (2, 3)], [(2, 1), (1, 4), ()], [(2, 3)], [(0, 1), (1, 3)]]:
        yield Sample(tuple(make(rng, s, dtype) for s in shapes))


composite(OpInfo("broadcast_arrays", en.broadcast_arrays, np.broadcast_arrays,
                 _broadcast_arrays_samples, ALL, error_inputs=lambda: [
                     ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError,
                                "broadcast_arrays")]))
_composite_cases("unstack", lambda x, axis=0: tuple(np.moveaxis(x, axis, 0)),
                 [((3, 2), {}), ((2, 3, 4), dict(axis=1)), ((2, 3), dict(axis=-1)), ((1,), {})],
                 errors=[((), {}, en.ShapeError, "unstack"),
                         ((2, 3), dict(axis=2), en.ShapeError, "unstack")])


def _meshgrid_samples(dtype, rng):
    for shapes, params in [([(3,), (2,)], {}), ([(3,), (2,)], dict(indexing="ij")),
                           ([(2,), (3,), (4,)], {}), ([(2,), (3,), (4,)], dict(indexing="ij")),
                           ([(4,)], {}), ([(2,), (3,)], dict(sparse=True)), ([(0,), (2,)], {})]:
        yield Sample(tuple(make(rng, s, dtype) for s in shapes), params)


composite(OpInfo("meshgrid", en.meshgrid, np.meshgrid, _meshgrid_samples, ALL,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(2),), dict(indexing="yx")),
                                                  en.ShapeError, "meshgrid")]))


def _take_samples(dtype, rng):
    x = make(rng, (3, 4), dtype)
    for indices, axis in [(np.array([0, 2, 2]), 0), (np.array([[3, 0], [1, 1]]), 1),
                          (np.array([5, 0, 11]), None), (np.array(-1), 1), ([1, 0], 0),
                          (np.zeros(0, np.int64), 1)]:
        yield Sample((x,), dict(indices=indices, axis=axis))


composite(OpInfo("take", en.take, np.take, _take_samples, ALL, error_inputs=lambda: [
    ErrorInput(Sample((np.ones((2, 3)),), dict(indices=[3], axis=1)), en.ShapeError, "getitem"),
    ErrorInput(Sample((np.ones((2, 3)),), dict(indices=[0], axis=2)), en.ShapeError, "take")]))


def _along_samples(dtype, rng):
    for xs, ishape, axis in [((3, 4), (3, 2), 1), ((3, 4), (5, 4), 0), ((2, 3, 4), (2, 3, 2), -1),
                             ((3, 4), (1, 3), 1), ((3, 1), (3, 2), 0), ((6,), (4,), None),
                             ((3, 0), (3, 0), 1)]:
        n = xs[axis] if axis is not None else int(np.prod(xs))
        x = make(rng, xs, dtype)
        yield Sample((x, rng.integers(-n, n, size=ishape) if n else np.zeros(ishape, np.int64)),
                     dict(axis=axis))


composite(OpInfo("take_along_axis", en.take_along_axis, np.take_along_axis, _along_samples, ALL,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)), np.zeros(2, np.int64)), dict(axis=1)),
                                en.ShapeError, "take_along_axis"),
                     ErrorInput(Sample((np.ones((2, 3)), np.zeros((2, 1))), dict(axis=1)),
                                en.DTypeError, "take_along_axis")]))


def _put_samples(dtype, rng):
    for xs, ishape, vshape, axis in [((3, 4), (3, 2), (3, 2), 1), ((3, 4), (2, 4), (1, 4), 0),
                                     ((2, 3, 4), (2, 1, 2), (2, 3, 2), 2), ((5,), (3,), (), 0),
                                     ((3, 4), (3, 0), (3, 0), 1)]:
        n = xs[axis]
        # Distinct indices per row, so that every written value stays (repeats are below).
        idx = np.argsort(rng.random(xs[:axis] + (n,) + xs[axis + 1:]), axis=axis)
        idx = np.take(idx, np.arange(ishape[axis]), axis=axis)
        idx = idx[tuple(slice(0, d) for d in ishape)]
        yield Sample((make(rng, xs, dtype), idx, make(rng, vshape, dtype)), dict(axis=axis))
    x = make(rng, (2, 4), dtype)
    yield Sample((x, np.array([[1, 1, -1], [0, 3, 0]]), make(rng, (2, 3), dtype)), dict(axis=1),
                 desc="repeated indices: the last write wins")


def _put_ref(x, indices, values, axis):
    out = np.array(x, copy=True)
    np.put_along_axis(out, indices, values, axis)
    return out


add(OpInfo("put_along_axis", en.put_along_axis, _put_ref, _put_samples,
           op_dtypes("put_along_axis"), error_inputs=lambda: [
               ErrorInput(Sample((np.ones((2, 3)), np.zeros(2, np.int64), np.ones(2)),
                                 dict(axis=1)), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 3)), np.array([[3], [0]]), np.ones((2, 1))),
                                 dict(axis=1)), en.ShapeError),
               ErrorInput(Sample((np.ones((2, 3), np.int64), np.zeros((2, 1), np.int64),
                                  np.ones((2, 1)) / 3), dict(axis=1)), en.DTypeError)]))


# ---- pad -----------------------------------------------------------------------------------
def _pad_samples(dtype, rng):
    for shape, width, mode in [((3,), 2, "constant"), ((2, 3), ((1, 0), (2, 1)), "constant"),
                               ((4,), (2, 3), "reflect"), ((2, 3), 4, "reflect"),
                               ((3, 2), ((1, 2), (0, 3)), "edge"), ((2, 3), 2, "symmetric"),
                               ((2, 3), ((3, 1), (5, 2)), "wrap"), ((1, 3), (1, 1), "reflect"),
                               ((0, 2), ((1, 1), (0, 0)), "constant"), ((), 0, "constant"),
                               ((2, 2), 0, "edge")]:
        yield Sample((make(rng, shape, dtype),), dict(pad_width=width, mode=mode))
    yield Sample((make(rng, (2, 2), dtype),), dict(pad_width=1, constant_values=scalar_of(dtype)),
                 desc="constant value")


add(OpInfo("pad", en.pad, np.pad, _pad_samples, op_dtypes("pad"), error_inputs=lambda: [
    ErrorInput(Sample((np.ones((2, 3)),), dict(pad_width=(1, 2, 3))), en.ShapeError),
    ErrorInput(Sample((np.ones((2, 3)),), dict(pad_width=-1)), en.ShapeError),
    ErrorInput(Sample((np.ones((2, 3)),), dict(pad_width=1, mode="median")), en.ShapeError),
    ErrorInput(Sample((np.ones((0, 3)),), dict(pad_width=1, mode="edge")), en.ShapeError),
    ErrorInput(Sample((np.ones((2, 3)),), dict(pad_width=1.5)), en.ShapeError)]))


# ---- statistics and spacing -------------------------------------------------------------------
def _var_samples(dtype, rng):
    for shape, params in [((5,), {}), ((2, 3, 4), dict(axis=1)), ((2, 3, 4), dict(axis=(0, 2))),
                          ((3, 4), dict(axis=0, ddof=1)), ((3, 4), dict(keepdims=True, ddof=1)),
                          ((4,), dict(correction=1)), ((2, 3), dict(axis=[1], keepdims=True))]:
        yield Sample((make(rng, shape, dtype),), params)


def _np_var(fn):
    def ref(x, axis=None, ddof=0, keepdims=False, correction=None):
        axis = tuple(axis) if isinstance(axis, list) else axis
        return fn(x, axis=axis, ddof=correction if correction is not None else ddof,
                  keepdims=keepdims)
    return ref


for _name in ("var", "std"):
    composite(OpInfo(_name, getattr(en, _name), _np_var(getattr(np, _name)), _var_samples, ALL,
                     error_inputs=error_cases([((2, 3), dict(axis=2), en.ShapeError, "var")])))


def _linspace_samples(dtype, rng):
    for params in [dict(start=0, stop=1, num=5), dict(start=-2.5, stop=3, num=7),
                   dict(start=5, stop=1, num=4, endpoint=False), dict(start=1, stop=2, num=1),
                   dict(start=0, stop=10, num=0), dict(start=0, stop=9, num=4)]:
        yield Sample((), dict(params, dtype=dtype))
    yield Sample((), dict(start=0, stop=1, num=3), desc="float64 by default")


add(OpInfo("linspace", en.linspace, np.linspace, _linspace_samples, NUMERIC, supports_grad=False,
           error_inputs=lambda: [
               ErrorInput(Sample((), dict(start=0, stop=1, num=-1)), en.ShapeError),
               ErrorInput(Sample((), dict(start=0, stop=float("nan"), num=3)), en.ShapeError),
               ErrorInput(Sample((), dict(start=0, stop=1, num=3, dtype=BOOL)), en.DTypeError)]))


def _logspace_samples(dtype, rng):
    for params in [dict(start=0, stop=2, num=3), dict(start=-1, stop=1, num=5, base=2.0),
                   dict(start=0, stop=1, num=4, endpoint=False)]:
        yield Sample((), dict(params, dtype=dtype))


composite(OpInfo("logspace", en.logspace, np.logspace, _logspace_samples, FLOATS,
                 supports_grad=False))
