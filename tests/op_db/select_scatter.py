"""Op-database entries for selection by rank and scatter along an axis
(``engine/ops/rank_select.py``, ``engine/ops/scatter.py``): ``topk``, ``argpartition``
and ``partition``, ``scatter_reduce`` and ``index_add``.

A partition's order within each side is unspecified, so those entries call the engine
and then sort each segment between the ``kth`` positions with engine ops: the result is
the sorted array exactly when the partition property holds (each ``kth`` element in its
sorted place, smaller ones before, larger ones after), and numpy's sort is the reference.
The scatter references are plain Python loops over the index."""
import itertools

import numpy as np

import engine as en

from op_db.core import (ALL, BOOL, F64, ErrorInput, OpInfo, Sample, add, composite, make,
                        make_distinct, op_dtypes)


# ---- topk -------------------------------------------------------------------------------
def _topk_ref(x, k, axis=-1, largest=True, sorted=True):
    """Sort key (value, position), largest first or smallest first; NaN above numbers."""
    moved = np.moveaxis(x, axis, -1)
    vals, idxs = np.empty(moved.shape[:-1] + (k,), x.dtype), np.empty(moved.shape[:-1] + (k,),
                                                                       np.int64)
    for pos in np.ndindex(moved.shape[:-1]):
        row = moved[pos]

        def key(i, row=row):
            v = row[i].item()      # a Python number: exact for 64-bit integers
            rank = (1, 0) if v != v else (0, v)    # NaN above every number
            return ((-rank[0], -rank[1]), i) if largest else (rank, i)
        order = sorted_(range(len(row)), key=key)[:k]
        vals[pos], idxs[pos] = row[order], order
    return np.moveaxis(vals, -1, axis), np.moveaxis(idxs, -1, axis)


sorted_ = sorted   # the reference's own sort (``sorted`` is a keyword of topk)


def _topk_samples(dtype, rng):
    for shape, k, kw in [((5,), 2, {}), ((5,), 5, dict(largest=False)), ((3, 4), 1, dict(axis=0)),
                         ((2, 3, 4), 3, dict(axis=-1)), ((2, 3, 4), 2, dict(axis=1, largest=False)),
                         ((4,), 0, {}), ((0, 3), 2, dict(axis=1))]:
        yield Sample((make_distinct(rng, shape, dtype), k), dict(kw))
    if dtype != BOOL:
        yield Sample((np.array([2, 1, 2, 0, 1], dtype), 3), desc="ties: the lower index first")
        yield Sample((np.array([2, 1, 2, 0, 1], dtype), 3), dict(largest=False), desc="ties")
    if dtype.kind == "f":
        yield Sample((np.array([1.0, np.nan, 3.0], dtype), 2), desc="NaN is the largest")


add(OpInfo("topk", en.topk, _topk_ref, _topk_samples, op_dtypes("topk"),
           grad_samples=lambda rng: [s for s in _topk_samples(F64, rng) if not s.desc],
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones(3), 4)), en.ShapeError, "topk"),
               ErrorInput(Sample((np.ones(3), -1)), en.ShapeError, "topk"),
               ErrorInput(Sample((np.ones((2, 3)), 1), dict(axis=2)), en.ShapeError),
               ErrorInput(Sample((np.float64(1.0), 1)), en.ShapeError, "topk"),
               ErrorInput(Sample((np.ones(3), 1.5)), en.ShapeTypeError, "topk")]))


# ---- argpartition / partition -------------------------------------------------------------
def _sorted_segments(values, kth, axis):
    """``values`` with each segment between the (sorted) ``kth`` positions sorted, by
    engine ops: the sorted array when ``values`` is partitioned around ``kth``."""
    if axis is None:
        axis = 0
    n = values.shape[axis]
    cuts = sorted({k % n for k in np.atleast_1d(kth)}) if n else []
    bounds = [0] + [c for k in cuts for c in (k, k + 1)] + [n]
    lead = (slice(None),) * (axis % values.ndim)
    parts = [en.sort(values[lead + (slice(a, b), Ellipsis)], axis=axis)
             for a, b in zip(bounds, bounds[1:]) if b > a]
    return en.concat(parts, axis=axis) if parts else values


def _partition_checked(x, kth, axis=-1):
    return _sorted_segments(en.partition(x, kth, axis=axis), kth, axis)


def _argpartition_checked(x, kth, axis=-1):
    idx = en.argpartition(x, kth, axis=axis)
    flat = en.reshape(x, (-1,)) if axis is None else x
    return _sorted_segments(en.take_along_axis(flat, idx, axis=0 if axis is None else axis),
                            kth, axis)


def _sort_ref(x, kth, axis=-1):
    return np.sort(x, axis=axis)


def _partition_samples(dtype, rng):
    for shape, kth, axis in [((7,), 3, -1), ((7,), -1, -1), ((7,), [1, 4], -1),
                             ((3, 6), 0, 1), ((5, 4), [0, 2, 4], 0), ((2, 3, 5), (1, -2), 2),
                             ((2, 3), 4, None), ((6,), [2, 2], -1)]:
        yield Sample((make_distinct(rng, shape, dtype), kth), dict(axis=axis))
    yield Sample((make(rng, (4, 9), dtype, -2, 2), 4), dict(axis=1), desc="ties")


_PARTITION_ERRORS = lambda: [  # noqa: E731
    ErrorInput(Sample((np.ones(4), 4)), en.ShapeError, "partition"),
    ErrorInput(Sample((np.ones(4), -5)), en.ShapeError, "partition"),
    ErrorInput(Sample((np.ones((2, 3)), 0), dict(axis=2)), en.ShapeError),
    ErrorInput(Sample((np.ones(4), 1.5)), en.ShapeTypeError, "partition")]

add(OpInfo("argpartition", _argpartition_checked, _sort_ref, _partition_samples,
           op_dtypes("argpartition"), error_inputs=_PARTITION_ERRORS, supports_grad=False))
composite(OpInfo("partition", _partition_checked, _sort_ref, _partition_samples, ALL,
                 error_inputs=_PARTITION_ERRORS,
                 grad_samples=lambda rng: _partition_samples(F64, rng)))


# ---- scatter_reduce / index_add -----------------------------------------------------------
def _loop_scatter(x, axis, index, src, reduce, include_self=True):
    """Element by element: each index position combined into its target."""
    out = np.array(x, copy=True)
    if np.ndim(src) == 0:
        src = np.full(index.shape, src, x.dtype)
    targets = {}
    for pos in itertools.product(*map(range, index.shape)):
        t = list(pos)
        t[axis] = int(index[pos]) % x.shape[axis]
        targets.setdefault(tuple(t), []).append(src[pos].astype(x.dtype))
    for t, vals in targets.items():
        vals = ([out[t]] if include_self else []) + vals
        if reduce == "sum":
            out[t] = sum(vals[1:], vals[0])
        elif reduce == "mean":
            total = sum(vals[1:], vals[0])
            out[t] = total / len(vals) if x.dtype.kind == "f" else total // len(vals)
        elif reduce == "prod":
            p = vals[0]
            for v in vals[1:]:
                p = p * v
            out[t] = p
        else:
            out[t] = (max if reduce == "amax" else min)(vals)
    return out


def _scatter_cases(rng, dtype):
    """``(x, axis, index, src)``: repeated targets, an index smaller than x off the axis,
    negative indices, an empty index."""
    def idx(shape, n):
        return rng.integers(-n, n, size=shape).astype(np.int64)
    yield make_distinct(rng, (5,), dtype), 0, idx((7,), 5), make_distinct(rng, (7,), dtype, 0.25)
    yield make_distinct(rng, (3, 4), dtype), 1, idx((3, 6), 4), make_distinct(rng, (3, 6), dtype,
                                                                              0.25)
    yield make_distinct(rng, (4, 3), dtype), 0, idx((2, 2), 4), make_distinct(rng, (2, 2), dtype,
                                                                              0.25)
    yield (make_distinct(rng, (2, 3, 4), dtype), -2, idx((2, 5, 3), 3),
           make_distinct(rng, (2, 5, 3), dtype, 0.25))
    yield make_distinct(rng, (3, 2), dtype), 0, idx((0, 2), 3), make(rng, (0, 2), dtype)


def _scatter_samples(dtype, rng):
    reduces = ["sum", "prod", "amax", "amin"] + (["mean"] if dtype != BOOL else [])
    for k, (x, axis, index, src) in enumerate(_scatter_cases(rng, dtype)):
        for reduce in reduces:
            if reduce == "prod" and dtype.kind in "iu":
                src = np.clip(src, -2, 2)
            yield Sample((x, axis, index, src, reduce), dict(include_self=bool(k % 2)))
            if k == 1:
                yield Sample((x, axis, index, src, reduce), dict(include_self=k % 2 == 0))
    if dtype.kind == "f":
        x = make_distinct(rng, (4,), dtype)
        yield Sample((x, 0, np.array([1, 1, 3]), 2.5, "sum"), desc="a number as src")
        yield Sample((x, 0, np.array([1, 1]), make_distinct(rng, (3,), dtype), "amax"),
                     desc="a larger src is cut")


def _scatter_grad_samples(rng):
    for sample in _scatter_samples(F64, rng):
        yield sample
    x = make_distinct(rng, (2, 4), F64)
    x[0, 1] = 0.0
    src = make_distinct(rng, (2, 3), F64, 0.25)
    src[1, 0] = src[1, 2] = 0.0
    for inc in (True, False):
        yield Sample((x, 1, np.array([[1, 1, 2], [0, 3, 0]]), src, "prod"),
                     dict(include_self=inc), desc="zeros among the factors")


add(OpInfo("scatter_reduce", en.scatter_reduce, _loop_scatter, _scatter_samples,
           op_dtypes("scatter_reduce"), grad_samples=_scatter_grad_samples,
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones((2, 3)), 1, np.zeros(2, np.int64), np.ones(2), "sum")),
                          en.ShapeError, "scatter_reduce"),
               ErrorInput(Sample((np.ones((2, 3)), 1, np.zeros((3, 1), np.int64),
                                  np.ones((3, 1)), "sum")), en.ShapeError, "scatter_reduce"),
               ErrorInput(Sample((np.ones((2, 3)), 1, np.zeros((2, 1)), np.ones((2, 1)), "sum")),
                          en.DTypeError, "scatter_reduce"),
               ErrorInput(Sample((np.ones((2, 3), np.int64), 1, np.zeros((2, 1), np.int64),
                                  np.ones((2, 1)) / 3, "sum")), en.DTypeError, "scatter_reduce"),
               ErrorInput(Sample((np.ones((2, 3)), 1, np.zeros((2, 1), np.int64),
                                  np.ones((2, 1)), "max")), en.ShapeError, "scatter_reduce"),
               ErrorInput(Sample((np.ones((2, 3)), 1, np.full((2, 1), 3, np.int64),
                                  np.ones((2, 1)), "sum")), en.ShapeError, "scatter_reduce")]))


def _index_add_ref(x, axis, index, source, alpha=1):
    out = np.array(x, copy=True)
    np.add.at(out, (slice(None),) * (axis % x.ndim) + (index,), source * alpha)
    return out


def _index_add_samples(dtype, rng):
    for shape, axis, n in [((5,), 0, 7), ((4, 3), 0, 5), ((4, 3), -1, 2), ((2, 3, 4), 1, 0)]:
        index = rng.integers(-shape[axis], shape[axis], size=n).astype(np.int64)
        sshape = list(shape)
        sshape[axis] = n
        yield Sample((make(rng, shape, dtype), axis, index, make(rng, tuple(sshape), dtype)))
    if dtype.kind in "fi":
        yield Sample((make(rng, (3, 2), dtype), 1, np.array([1, 1]), make(rng, (3, 2), dtype)),
                     dict(alpha=2), desc="alpha")


composite(OpInfo("index_add", en.index_add, _index_add_ref, _index_add_samples,
                 tuple(d for d in ALL if d != BOOL),
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)), 0, np.zeros((1, 1), np.int64),
                                        np.ones((1, 3)))), en.ShapeError, "index_add"),
                     ErrorInput(Sample((np.ones((2, 3)), 0, np.zeros(2, np.int64),
                                        np.ones((2, 2)))), en.ShapeError, "index_add"),
                     ErrorInput(Sample((np.ones((2, 3)), 0, np.zeros(2), np.ones((2, 3)))),
                                en.DTypeError, "index_add")]))
