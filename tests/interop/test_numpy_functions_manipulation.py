"""numpy's manipulation, indexing, set and utility functions on tensors (issue #48, part A):
each engine function ``en.X`` and numpy's ``np.X`` called on tensors (which dispatches to
it) give numpy's result on the same values -- values, dtype and shape, or the same Python
value -- on several dtypes, axes and edge cases (empty, 0-d). Gradients of the
differentiable ones are checked against central finite differences; some run inside
``en.function``; the data-dependent ones refuse traced values by name; and every numpy
function the engine does not implement is refused by name with a pointer to
``t.numpy()``.

The reference is always numpy itself on plain arrays.
"""
import inspect

import numpy as np
import pytest

import engine as en
from engine.numpy_dispatch import HANDLERS, engine_function
from support.finite_diff import grad_checker

RNG = np.random.default_rng(48)
F64, F32, I64, I32 = np.float64, np.float32, np.int64, np.int32


def _arr(shape, dtype=F64, low=-3, high=4):
    if np.dtype(dtype) == np.bool_:
        return RNG.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(max(low, 0) if np.dtype(dtype).kind == "u" else low, high,
                            size=shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def _tensors(value):
    """numpy arrays (also inside lists and tuples) as tensors."""
    if isinstance(value, (np.ndarray, np.generic)):
        return en.tensor(np.asarray(value))
    if isinstance(value, list):
        return [_tensors(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_tensors(v) for v in value)
    return value


def assert_same(got, expected, where):
    """``got`` (tensors, Python values, or sequences of them) is numpy's ``expected``."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{where}: got {type(got).__name__}"
        assert len(got) == len(expected), f"{where}: {len(got)} results, numpy {len(expected)}"
        for g, e in zip(got, expected):
            assert_same(g, e, where)
        return
    if isinstance(expected, np.ndarray) or (isinstance(expected, np.generic) and
                                            isinstance(got, en.Tensor)):
        assert isinstance(got, en.Tensor), f"{where}: got {type(got).__name__}, not a tensor"
        value, expected = got.numpy(), np.asarray(expected)
        assert value.dtype == expected.dtype, f"{where}: dtype {value.dtype}, numpy {expected.dtype}"
        assert value.shape == expected.shape, f"{where}: shape {value.shape}, numpy {expected.shape}"
        if expected.dtype.kind in "fc":
            np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12, err_msg=where)
        else:
            np.testing.assert_array_equal(value, expected, err_msg=where)
        return
    assert got == expected and type(got) is type(expected), \
        f"{where}: {got!r} ({type(got).__name__}), numpy {expected!r} ({type(expected).__name__})"


def _has_tensor(value):
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    return isinstance(value, en.Tensor)


def _check(name, *args, **kwargs):
    expected = getattr(np, name)(*args, **kwargs)
    t_args = _tensors(args)
    # the engine's function of numpy's name (en.amax is en.max: engine.names.also_named)
    fn = getattr(en, name, None) or engine_function("numpy", name)
    assert_same(fn(*t_args, **kwargs), expected, f"en.{fn.__name__} for numpy.{name}")
    if _has_tensor(t_args):     # numpy dispatches only when a tensor is among its arrays
        assert_same(getattr(np, name)(*t_args, **kwargs), expected, f"np.{name} on tensors")


# ---- the cases: (function name, args, kwargs) ---------------------------------------------------
a1, a2, a3 = _arr((4,)), _arr((2, 3)), _arr((2, 3, 4))
i1, i2 = _arr((5,), I64), _arr((3, 4), I32)
b2 = _arr((3, 4), np.bool_)
empty = np.zeros((0,))

CASES = [
    # joining
    ("hstack", ([a1, a1[:2]],), {}), ("hstack", ([a2, a2],), {}), ("hstack", ([1.5, a1],), {}),
    ("hstack", ([i1, a1],), {}), ("hstack", ([empty, a1],), {}),
    ("hstack", ([a1, a1],), dict(dtype=F32)),
    ("vstack", ([a1, a1],), {}), ("vstack", ([a2, a2[:1]],), {}), ("vstack", ([np.float64(2.0), 3.0],), {}),
    ("dstack", ([a1, a1],), {}), ("dstack", ([a2, a2],), {}), ("dstack", ([a3, a3],), {}),
    ("column_stack", ([a1, a1],), {}), ("column_stack", ([a2.T, _arr((3,))],), {}),
    ("column_stack", ([np.float64(1.0), np.float64(2.0)],), {}),
    ("block", ([a1, a1],), {}), ("block", ([[a2, a2[:, :1]], [_arr((1, 4))]],), {}),
    ("block", ([[np.eye(2), np.zeros((2, 1))], [np.ones((1, 2)), np.ones((1, 1))]],), {}),
    ("block", ([[a3, a3]],), {}), ("block", (a2,), {}),
    ("append", (a2, a1), {}), ("append", (a2, a2, 0), {}), ("append", (i1, [7]), {}),
    ("append", (np.float64(1.0), empty), {}),
    # splitting
    ("array_split", (_arr((7,)), 3), {}), ("array_split", (a3, [1, 3], 2), {}),
    ("array_split", (a1, 6), {}), ("array_split", (a2, [2, 1], 1), {}),
    ("array_split", (a1, [-1, 10]), {}), ("array_split", (empty, 2), {}),
    ("hsplit", (a1, 2), {}), ("hsplit", (a3, [1]), {}), ("vsplit", (a3, 2), {}),
    ("vsplit", (a2, [1, 1]), {}), ("dsplit", (a3, 2), {}), ("dsplit", (a3, [1, 2]), {}),
    # reordering and reshaping
    ("fliplr", (a2,), {}), ("fliplr", (a3,), {}), ("flipud", (a1,), {}), ("flipud", (i2,), {}),
    ("rot90", (a2,), {}), ("rot90", (a2, 2), {}), ("rot90", (a2, -1), {}), ("rot90", (a2, 4), {}),
    ("rot90", (a3, 1, (2, 0)), {}), ("rot90", (a3, 3, (-1, 1)), {}),
    ("rollaxis", (a3, 2), {}), ("rollaxis", (a3, 0, 3), {}), ("rollaxis", (a3, 1, 1), {}),
    ("rollaxis", (a3, -1, -2), {}),
    ("ravel", (a3,), {}), ("ravel", (a2,), dict(order="F")), ("ravel", (np.float64(2.0),), {}),
    ("ravel", (i2,), dict(order="K")),
    ("copy", (a2,), {}), ("copy", (b2,), {}),
    ("astype", (a2, I32), {}), ("astype", (i2, F32), {}),
    ("permute_dims", (a3, (2, 0, 1)), {}), ("permute_dims", (a2,), {}),
    ("resize", (a1, (3, 3)), {}), ("resize", (a2, 4), {}), ("resize", (i1, (2, 0)), {}),
    ("resize", (empty, (2, 2)), {}), ("resize", (np.float64(3.0), (2,)), {}),
    # filling and building
    ("empty_like", (a2,), dict(shape=(2, 2))),
    ("full_like", (a2, 7), {}), ("full_like", (i2, 2.7), {}), ("full_like", (a2, 1), dict(dtype=I32)),
    ("full_like", (a1, 2.5), dict(shape=(2, 3))), ("full_like", (a2, a2[0]), {}),
    ("full_like", (b2, 3), {}),
    ("diagflat", (a2,), {}), ("diagflat", (a1, -1), {}), ("diagflat", (i1, 2), {}),
    ("vander", (a1,), {}), ("vander", (i1, 3), {}), ("vander", (a1, 0), {}),
    ("vander", (a1, 5, True), {}), ("vander", (np.array([0.0, 2.0, -1.0]),), {}),
    # picking, dropping and inserting
    ("delete", (a2, 1, 1), {}), ("delete", (a3, [0, -1], 2), {}), ("delete", (a1, slice(1, 3)), {}),
    ("delete", (a2, [True, False], 0), {}), ("delete", (a1, []), {}), ("delete", (i2, 5), {}),
    ("insert", (a1, 1, 9.5), {}), ("insert", (a2, [0, 3], 0.5, 1), {}),
    ("insert", (a2, 1, [[7.0], [8.0]], 1), {}), ("insert", (i1, [2, 0, 2], [5, 6, 7]), {}),
    ("insert", (a2, -1, a2[0], 0), {}), ("insert", (a1, 4, [1.0, 2.0]), {}),
    ("insert", (i2, slice(0, 2), 0, 1), {}), ("insert", (a2, [1], [[1.0], [2.0]], 1), {}),
    ("compress", ([True, False, True], a1), {}), ("compress", ([0, 1], a2, 0), {}),
    ("compress", (np.array([True, False, True]), a2, 1), {}), ("compress", ([], a2, 1), {}),
    ("extract", (a2 > 0, a2), {}), ("extract", (i2, b2), {}), ("extract", (a1 > 100, a1), {}),
    ("choose", (np.array([0, 1, 1, 0]), [a1, -a1]), {}),
    ("choose", (np.array([[0], [2]]), [i1, 2 * i1, 3 * i1]), {}),
    ("choose", (np.array([0, 4, -1]), [a1[:3], a1[1:]]), dict(mode="wrap")),
    ("choose", (np.array([0, 4, -1]), [a1[:3], a1[1:]]), dict(mode="clip")),
    ("choose", (np.array([0, 1]), [i2[0, :2], a1[:2].astype(F32)]), {}),
    ("choose", (np.array(1), [a1, a1 + 1]), {}),
    ("select", ([a1 > 0, a1 < -1], [a1, a1 * 10]), {}),
    ("select", ([a2 > 0], [a2.astype(F32)]), dict(default=-1.5)),
    ("select", ([i2 > 0, i2 < 0], [i2, 2 * i2]), dict(default=np.int32(7))),
    ("select", ([b2], [1.5]), {}),
    ("piecewise", (a1, [a1 < 0, a1 >= 0], [lambda v: -v, lambda v: v * v]), {}),
    ("piecewise", (a2, [a2 < -1, a2 > 1], [0.5, lambda v: np.sin(v), 3.0]), {}),
    ("piecewise", (a1, a1 > 100, [lambda v: v, 7.0]), {}),
    ("piecewise", (i1, [i1 > 0], [lambda v: v * 2, lambda v: v - 1]), {}),
    ("piecewise", (np.float64(2.0), [True], [lambda v: v + 1]), {}),
    ("trim_zeros", (np.array([0.0, 0.0, 1.0, 0.0, 2.0, 0.0]),), {}),
    ("trim_zeros", (np.array([0, 0, 1, 2, 0]),), dict(trim="f")),
    ("trim_zeros", (np.array([0, 0, 1, 2, 0]),), dict(trim="b")),
    ("trim_zeros", (np.zeros(3),), {}), ("trim_zeros", (empty,), {}),
    ("trim_zeros", (np.array([[0, 0, 0], [0, 1, 0], [0, 2, 3], [0, 0, 0]]),), {}),
    ("trim_zeros", (np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]]),), dict(axis=1)),
    # sets and sorting keys
    ("isin", (i2, i1), {}), ("isin", (a2, a2[0]), dict(invert=True)),
    ("isin", (a1, empty), {}), ("isin", (np.array([1.0, np.nan]), np.array([np.nan, 1.0])), {}),
    ("isin", (i1, a1), {}), ("isin", (np.array([1 + 1j, 2]), np.array([2, 3])), {}),
    ("isin", (np.int64(3), i1), {}), ("isin", (b2, [True]), {}),
    ("intersect1d", (i1, i2), {}), ("intersect1d", (i1, i2), dict(return_indices=True)),
    ("intersect1d", (a1, empty), {}), ("intersect1d", (i1[:3], a1), {}),
    ("union1d", (i1, i2), {}), ("union1d", (a2, np.array([np.nan, np.nan])), {}),
    ("union1d", (empty, empty), {}),
    ("setdiff1d", (i2, i1), {}), ("setdiff1d", (np.array([5, 1, 2]), np.array([2])),
                                           dict(assume_unique=True)),
    ("setdiff1d", (a1, empty), {}),
    ("setxor1d", (i1, i2), {}), ("setxor1d", (np.array([1, 2, 5]), np.array([2, 3])),
                                         dict(assume_unique=True)),
    ("setxor1d", (empty, a1), {}),
    ("lexsort", ((_arr((8,), I64, 0, 3), _arr((8,), I64, 0, 3)),), {}),
    ("lexsort", (_arr((3, 9), I64, 0, 2),), {}),
    ("lexsort", ((_arr((3, 4), F64), _arr((3, 4), I64, 0, 2)),), dict(axis=0)),
    ("lexsort", ((_arr((6,), np.bool_), _arr((6,), F64)),), {}),
    ("sort_complex", (a2,), {}), ("sort_complex", (i1,), {}),
    ("sort_complex", (np.array([1 + 2j, 1 - 1j, -1j, 1 + 2j]),), {}),
    ("sort_complex", (np.array([3, 1], np.int8),), {}), ("sort_complex", (empty,), {}),
    # index builders
    ("tril_indices_from", (a2,), {}), ("tril_indices_from", (i2, -1), {}),
    ("triu_indices_from", (a2, 1), {}), ("triu_indices_from", (np.ones((0, 0)),), {}),
    ("diag_indices_from", (np.ones((3, 3)),), {}), ("diag_indices_from", (np.ones((2, 2, 2)),), {}),
    ("ix_", (np.array([0, 2]), np.array([1, 3, 0])), {}),
    ("ix_", (np.array([True, False, True]), np.array([2])), {}), ("ix_", (np.array([], I64),), {}),
    ("ravel_multi_index", ((np.array([3, 6, 6]), np.array([4, 5, 1])), (7, 6)), {}),
    ("ravel_multi_index", ((np.array([3, 6, 6]), np.array([4, 5, 1])), (7, 6)), dict(order="F")),
    ("ravel_multi_index", ((np.array([3, 9, -1]), np.array([4, 8, 1])), (7, 6)),
     dict(mode=("clip", "wrap"))),
    ("ravel_multi_index", ((np.int64(1), np.int64(2)), (3, 4)), {}),
    ("unravel_index", (np.array([22, 41, 37]), (7, 6)), {}),
    ("unravel_index", (np.array([[3, 1], [0, 5]]), (2, 3)), dict(order="F")),
    ("unravel_index", (np.int64(5), (2, 3)), {}), ("unravel_index", (np.array([], I64), (2, 3)), {}),
    # facts
    ("ndim", (a3,), {}), ("ndim", (np.float64(1.0),), {}), ("shape", (a3,), {}),
    ("shape", (empty,), {}), ("size", (a3,), {}), ("size", (a3, 1), {}), ("size", (a3, -1), {}),
    ("result_type", (a2.astype(F32), 1.0), {}), ("result_type", (i2, a1), {}),
    ("result_type", (i2, F32), {}), ("result_type", (b2, 3), {}),
    ("can_cast", (i2, F64), {}), ("can_cast", (a2, I64), {}),
    ("can_cast", (a2, F32), dict(casting="same_kind")),
    ("common_type", (a2.astype(F32), i2), {}), ("common_type", (a2.astype(F32),), {}),
    ("min_scalar_type", (np.int64(10),), {}), ("min_scalar_type", (np.float64(-3.5),), {}),
    ("min_scalar_type", (a2,), {}),
    ("iscomplexobj", (a2,), {}), ("iscomplexobj", (a2 + 0j,), {}), ("isrealobj", (a2,), {}),
    ("array_equal", (a2, a2), {}), ("array_equal", (a2, a2[:1]), {}),
    ("array_equal", (i1, i1.astype(F64)), {}), ("array_equal", (a1, a1 + 1), {}),
    ("array_equal", (np.array([np.nan, 1.0]), np.array([np.nan, 1.0])), dict(equal_nan=True)),
    ("array_equal", (np.array([np.nan, 1.0]), np.array([np.nan, 1.0])), {}),
    ("array_equal", (empty, empty), {}),
    ("array_equiv", (a2[0], a2[[0, 0]]), {}), ("array_equiv", (a1, a2), {}),
    ("array_equiv", (a2, a2 + 1), {}),
    ("array_repr", (a2,), {}), ("array_repr", (i1,), {}), ("array_repr", (a1,), dict(precision=2)),
    ("array_str", (a2,), {}), ("array_str", (np.array(2.5),), {}),
    ("array2string", (a2,), dict(separator=", ", precision=3)), ("array2string", (b2,), {}),
    ("may_share_memory", (a2, a1), {}), ("shares_memory", (a2, a1), {}),
    # numeric helpers
    ("amax", (a3, 1), {}), ("amin", (i2,), {}), ("around", (a2, 1), {}),
    ("fix", (a2,), {}), ("fix", (np.array([-2.5, -0.5, 0.5, 2.5], F32),), {}), ("fix", (i1,), {}),
    ("fix", (np.float64(-3.7),), {}), ("fix", (np.array([True, False]),), {}),
    ("geomspace", (1, 1000, 4), {}), ("geomspace", (-1.0, -1000.0, 5), dict(endpoint=False)),
    ("geomspace", (2.0, 3.0, 1), {}), ("geomspace", (2.0, 3.0, 0), {}),
    ("geomspace", (np.array([1.0, 2.0]), np.array([8.0, 32.0]), 3), dict(axis=1)),
    ("geomspace", (1, 256, 9), dict(dtype=I64)), ("geomspace", (1j, 1000j, 4), {}),
    ("geomspace", (np.float32(1.0), np.float32(5.0), 3), {}),
    ("packbits", (_arr((3, 11), np.bool_),), {}), ("packbits", (_arr((3, 11), np.bool_), 1), {}),
    ("packbits", (_arr((10, 2), I64, 0, 3), 0), dict(bitorder="little")),
    ("packbits", (np.array([], np.uint8),), {}), ("packbits", (np.int32(5),), {}),
    ("unpackbits", (np.array([[3, 255], [128, 0]], np.uint8),), {}),
    ("unpackbits", (np.array([[3, 255], [128, 0]], np.uint8), 1), dict(count=5)),
    ("unpackbits", (np.array([[3, 255], [128, 0]], np.uint8), 0), dict(count=-3, bitorder="little")),
    ("unpackbits", (np.array([7], np.uint8),), dict(count=12)),
    ("iscomplex", (np.array([1 + 1j, 1 + 0j, 2]),), {}), ("iscomplex", (a2,), {}),
    ("isreal", (np.array([1 + 1j, 1 + 0j]),), {}), ("isreal", (i1,), {}),
    ("isposinf", (np.array([np.inf, -np.inf, 1.0, np.nan]),), {}), ("isposinf", (i1,), {}),
    ("isneginf", (np.array([np.inf, -np.inf, -1.0, np.nan], F32),), {}),
    ("isneginf", (np.float64(-np.inf),), {}),
    ("real_if_close", (np.array([2.1 + 4e-14j, 5.2 + 3e-15j]),), dict(tol=1000)),
    ("real_if_close", (np.array([2.1 + 4e-14j, 5.2 + 3e-15j]),), {}),
    ("real_if_close", (np.array([2.1 + 1e-3j]),), dict(tol=0.01)), ("real_if_close", (a1,), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES,
                         ids=[f"{n}-{k}" for k, (n, _, _) in enumerate(CASES)])
def test_matches_numpy(name, args, kwargs):
    _check(name, *args, **kwargs)


PART_A = sorted({
    "hstack", "vstack", "dstack", "column_stack", "block", "append", "array_split", "hsplit",
    "vsplit", "dsplit", "fliplr", "flipud", "rot90", "rollaxis", "ravel", "copy", "astype",
    "permute_dims", "resize", "empty_like", "full_like", "diagflat", "vander", "delete", "insert",
    "compress", "extract", "choose", "select", "piecewise", "isin", "intersect1d", "union1d",
    "setdiff1d", "setxor1d", "lexsort", "sort_complex", "trim_zeros", "tril_indices_from",
    "triu_indices_from", "diag_indices_from", "ix_", "ravel_multi_index", "unravel_index",
    "may_share_memory", "shares_memory", "ndim", "shape", "size", "result_type", "can_cast",
    "common_type", "min_scalar_type", "array_equal", "array_equiv", "array_repr", "array_str",
    "array2string", "amax", "amin", "around", "fix", "geomspace", "packbits", "unpackbits",
    "iscomplex", "isreal", "iscomplexobj", "isrealobj", "isposinf", "isneginf", "real_if_close"})


def test_every_function_of_part_a_has_cases_and_an_engine_version():
    tested = {name for name, _, _ in CASES}
    assert sorted(set(PART_A) - tested) == []
    lacking = [n for n in PART_A if engine_function("numpy", n) is None]
    assert lacking == []


# ---- gradients against finite differences ---------------------------------------------------------
def _pieces(parts):
    """The pieces of a split, weighted differently and joined (one tensor to differentiate)."""
    return en.concat([en.ravel(p) * (k + 1.0) for k, p in enumerate(parts)])


GRAD_CASES = [
    ("hstack", lambda x, y: en.hstack([x, y]), (a2, a2[:, :1])),
    ("vstack", lambda x, y: en.vstack([x, y]), (a1, a1)),
    ("dstack", lambda x, y: en.dstack([x, y]), (a2, a2)),
    ("column_stack", lambda x, y: en.column_stack([x, y]), (a1, a1)),
    ("block", lambda x, y: en.block([[x, y], [y, x]]), (a2, a2)),
    ("append", lambda x, y: en.append(x, y), (a2, a1)),
    ("array_split", lambda x: _pieces(en.array_split(x, 3, axis=2)), (a3,)),
    ("hsplit", lambda x: _pieces(en.hsplit(x, [1, 2])), (a2,)),
    ("vsplit", lambda x: _pieces(en.vsplit(x, 2)), (a3,)),
    ("dsplit", lambda x: _pieces(en.dsplit(x, [3])), (a3,)),
    ("fliplr", en.fliplr, (a2,)), ("flipud", en.flipud, (a2,)),
    ("rot90", lambda x: en.rot90(x, 3, (2, 1)), (a3,)),
    ("rollaxis", lambda x: en.rollaxis(x, 2), (a3,)),
    ("ravel", lambda x: en.ravel(x, order="F"), (a2,)), ("copy", en.copy, (a2,)),
    ("resize", lambda x: en.resize(x, (3, 5)), (a2,)),
    ("full_like", lambda x, v: en.full_like(x, v), (a2, a2[0])),
    ("diagflat", lambda x: en.diagflat(x, 1), (a2,)),
    ("vander", lambda x: en.vander(x, 4), (np.array([0.0, 0.5, -1.2]),)),
    ("delete", lambda x: en.delete(x, [0, 2], axis=1), (a2,)),
    ("insert", lambda x, v: en.insert(x, [0, 2, 2], v, axis=1), (a2, a2[:, :1])),
    ("compress", lambda x: en.compress([True, False, True], x, axis=1), (a2,)),
    ("extract", lambda x: en.extract(a2 > 0, x), (a2,)),
    ("choose", lambda x, y: en.choose(en.tensor([0, 1, 1, 0]), [x, y]), (a1, a1[::-1].copy())),
    ("select", lambda x, y: en.select([en.tensor(a1 > 0), en.tensor(a1 < -1)], [x, y], 0.5),
     (a1, a1 * 2)),
    ("piecewise", lambda x: en.piecewise(x, [a1 < 0, a1 >= 0], [lambda v: v * v, en.sin]), (a1,)),
    ("trim_zeros", lambda x: en.trim_zeros(x * en.tensor([0.0, 1.0, 1.0, 0.0])), (a1,)),
    ("union1d", lambda x, y: en.union1d(x, y), (a1, a1[:2] + 10)),
    # (a set's members must not change under the finite differences' nudges)
    ("setdiff1d", lambda x: en.setdiff1d(x, en.tensor([100.0])), (a1,)),
    ("setxor1d", lambda x, y: en.setxor1d(x, y), (a1, a1[:2] + 10)),
    ("geomspace", lambda x, y: en.geomspace(x, y, 5), (np.array([1.5, -2.0]), np.array([7.0, -0.5]))),
    ("sort_complex", lambda x: en.real(en.sort_complex(x)), (a1,)),
]


@pytest.mark.parametrize("name,fn,args", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_finite_differences(name, fn, args):
    grad_checker(np.random.default_rng(7))(fn, *args)


# ---- inside en.function -------------------------------------------------------------------------
TRACED = [
    ("hstack", lambda x: np.hstack([x, x * 2.0]), a2),
    ("block", lambda x: np.block([[x, x], [x, x]]), a2),
    ("array_split", lambda x: np.array_split(x, 3, axis=1)[2], a2),
    ("rot90", lambda x: np.rot90(x, 1, (0, 2)), a3),
    ("vander", lambda x: np.vander(x, 3), a1),
    ("resize", lambda x: np.resize(x, (5,)), a2),
    ("delete", lambda x: np.delete(x, [0, -1], axis=2), a3),       # a constant obj: static
    ("insert", lambda x: np.insert(x, 1, 7.0, axis=0), a2),
    ("compress", lambda x: np.compress([True, False, True], x, axis=1), a2),
    ("choose", lambda x: np.choose(np.array([1, 0, 1, 1]), [x, -x]), a1),
    ("select", lambda x: np.select([x > 0, x < -1], [x, 2.0 * x], default=-9.0), a2),
    ("isin", lambda x: np.isin(np.round(x), np.array([0.0, 1.0, 2.0])), a2),
    ("lexsort", lambda x: np.lexsort((x[0], np.round(x[1]))), a2),
    ("unravel_index", lambda x: np.unravel_index(np.argsort(x, axis=None), (3, 2))[1], a2),
    ("packbits", lambda x: np.packbits(x > 0, axis=1), a2),
    ("geomspace", lambda x: np.geomspace(np.abs(x) + 1.0, 2.0, 4, axis=1), a1),
    ("isposinf", lambda x: np.isposinf(x * np.inf), a1),
    ("fix", lambda x: np.fix(x * 3.0), a2),
]


@pytest.mark.parametrize("name,fn,x", TRACED, ids=[c[0] for c in TRACED])
def test_traced_matches_numpy(name, fn, x):
    traced = en.function(fn)
    expected = fn(x)
    assert_same(traced(en.tensor(x)), expected, f"{name} in en.function")
    assert traced.trace_count == 1


DATA_DEPENDENT = [
    ("intersect1d", lambda x: np.intersect1d(x, x[:2])),
    ("union1d", lambda x: np.union1d(x, x)),
    ("setdiff1d", lambda x: np.setdiff1d(x, x[:2])),
    ("setxor1d", lambda x: np.setxor1d(x, x[:2])),
    ("extract", lambda x: np.extract(x > 0, x)),
    ("compress", lambda x: np.compress(x > 0, x)),
    ("delete", lambda x: np.delete(x, x > 0)),
    ("insert", lambda x: np.insert(x, np.argmax(x), 1.0)),
    ("trim_zeros", lambda x: np.trim_zeros(x)),
    ("piecewise", lambda x: np.piecewise(x, [x > 0], [lambda v: v * 2])),
    ("real_if_close", lambda x: np.real_if_close(x + 0j)),
    ("array_equal", lambda x: en.tensor(1.0) if np.array_equal(x, x) else x),
    ("array_str", lambda x: np.array_str(x)),
]


@pytest.mark.parametrize("name,fn", DATA_DEPENDENT, ids=[c[0] for c in DATA_DEPENDENT])
def test_data_dependent_results_refuse_traced_values_by_name(name, fn):
    assert fn(en.tensor(a1)) is not None                 # eagerly they work
    with pytest.raises(en.TracingError, match=name):
        en.function(fn)(en.tensor(a1))


# ---- bad input: the engine's errors, naming the function ------------------------------------------
ERRORS = [
    ("fliplr", lambda: en.fliplr(en.ones(3)), en.ShapeError),
    ("flipud", lambda: en.flipud(en.tensor(1.0)), en.ShapeError),
    ("vsplit", lambda: en.vsplit(en.ones((3, 2)), 2), en.ShapeError),
    ("hsplit", lambda: np.hsplit(en.tensor(1.0), 1), en.ShapeError),
    ("dsplit", lambda: en.dsplit(en.ones((2, 2)), 2), en.ShapeError),
    ("array_split", lambda: en.array_split(en.ones(3), 0), en.ShapeError),
    ("block", lambda: en.block([[en.ones(2)], en.ones(2)]), en.ShapeError),
    ("block", lambda: en.block([]), en.ShapeError),
    ("rot90", lambda: en.rot90(en.ones((2, 2)), axes=(1, 1)), en.ShapeError),
    ("rot90", lambda: en.rot90(en.ones((2, 2)), axes=(0, 2)), en.ShapeError),
    ("rollaxis", lambda: en.rollaxis(en.ones((2, 2)), 0, 4), en.ShapeError),
    ("ravel", lambda: en.ravel(en.ones(2), order="X"), en.InvalidArgumentError),
    ("resize", lambda: en.resize(en.ones(2), (-1, 2)), en.ShapeError),
    ("vander", lambda: en.vander(en.ones((2, 2))), en.ShapeError),
    ("delete", lambda: en.delete(en.ones(3), 5), en.ShapeError),
    ("delete", lambda: en.delete(en.ones(3), [0.5]), en.DTypeError),
    ("delete", lambda: en.delete(en.ones(3), [True, False]), en.ShapeError),
    ("insert", lambda: en.insert(en.ones(3), 5, 1.0), en.ShapeError),
    ("compress", lambda: en.compress([[True]], en.ones(3)), en.ShapeError),
    ("compress", lambda: en.compress([False, False, False, True], en.ones(3)), en.ShapeError),
    ("choose", lambda: en.choose(en.tensor([0, 2]), [en.ones(2), en.zeros(2)]), en.ShapeError),
    ("choose", lambda: en.choose(en.tensor([0.0]), [en.ones(1)]), en.DTypeError),
    ("choose", lambda: en.choose(en.tensor([0]), [en.ones(1)], mode="nope"), en.InvalidArgumentError),
    ("select", lambda: en.select([en.tensor([1, 0])], [en.ones(2)]), en.DTypeError),
    ("select", lambda: en.select([], []), en.ShapeError),
    ("select", lambda: en.select([en.tensor([True])], []), en.ShapeError),
    ("piecewise", lambda: en.piecewise(en.ones(2), [[True, False]], []), en.ShapeError),
    ("piecewise", lambda: en.piecewise(en.ones(2), [[True, False, True]], [1.0]), en.ShapeError),
    ("trim_zeros", lambda: en.trim_zeros(en.ones(2), trim="x"), en.InvalidArgumentError),
    ("lexsort", lambda: en.lexsort([en.ones(2), en.ones(3)]), en.ShapeError),
    ("lexsort", lambda: en.lexsort([]), en.InvalidArgumentError),
    ("sort_complex", lambda: en.sort_complex(en.tensor(1.0)), en.ShapeError),
    ("tril_indices_from", lambda: en.tril_indices_from(en.ones(3)), en.ShapeError),
    ("diag_indices_from", lambda: en.diag_indices_from(en.ones((2, 3))), en.ShapeError),
    ("ix_", lambda: en.ix_(en.ones((2, 2))), en.ShapeError),
    ("ravel_multi_index", lambda: en.ravel_multi_index((en.tensor([3]),), (3,)), en.ShapeError),
    ("ravel_multi_index", lambda: en.ravel_multi_index((en.tensor([1.0]),), (3,)), en.DTypeError),
    ("unravel_index", lambda: en.unravel_index(en.tensor([6]), (2, 3)), en.ShapeError),
    ("geomspace", lambda: en.geomspace(0.0, 1.0, 3), en.DomainError),
    ("packbits", lambda: en.packbits(en.ones(3)), en.DTypeError),
    ("packbits", lambda: en.packbits(en.tensor([1]), bitorder="middle"), en.InvalidArgumentError),
    ("unpackbits", lambda: en.unpackbits(en.tensor([1])), en.DTypeError),
    ("isposinf", lambda: en.isposinf(en.tensor([1j])), en.DTypeError),
    ("isneginf", lambda: np.isneginf(en.tensor([1j])), en.DTypeError),
]


@pytest.mark.parametrize("name,call,error", ERRORS,
                         ids=[f"{n}-{k}" for k, (n, _, _) in enumerate(ERRORS)])
def test_bad_input_raises_the_engines_error_naming_the_function_and_line(name, call, error):
    with pytest.raises(error, match=name) as caught:
        call()
    assert "test_numpy_functions_manipulation.py" in str(caught.value)


@pytest.mark.parametrize("call", [lambda: en.delete(en.ones(3), 5), lambda: en.insert(en.ones(3), 4, 1.0),
                                  lambda: en.compress([0, 0, 0, 1], en.ones(3)),
                                  lambda: en.extract([0, 0, 0, 1], en.ones(3))])
def test_an_index_out_of_range_is_an_index_error_as_in_numpy(call):
    with pytest.raises(IndexError, match="out of bounds"):
        call()


def test_memory_facts_follow_views():
    x = en.zeros((3, 4))
    row, col = x[1], x[:, 2]
    assert en.may_share_memory(x, row) and np.may_share_memory(row, x)
    assert en.shares_memory(row, col)                  # they meet at x[1, 2]
    assert not en.shares_memory(x[0], x[1]) and en.may_share_memory(x, x)
    assert not en.may_share_memory(x, x + 1.0) and not en.may_share_memory(x, en.copy(x))
    assert not en.may_share_memory(x, np.zeros(3))


# ---- what the engine does not implement: refused by name ------------------------------------------
def _dispatching_functions():
    """numpy's functions that dispatch on their array arguments (``__array_function__``),
    as the dispatch code sees them: ``(module, name, function)``."""
    kind = type(np.concatenate)
    for space in (np, np.linalg, np.fft):
        for name in sorted(dir(space)):
            fn = getattr(space, name)
            if isinstance(fn, kind):
                yield fn.__module__ or "numpy", fn.__name__, fn


NOT_IMPLEMENTED = sorted({(m, n): f for m, n, f in _dispatching_functions()
                          if engine_function(m, n) is None and (m, n) not in HANDLERS}.items())


def _call_with_tensors(fn):
    """Call numpy's ``fn`` with a tensor for every required argument."""
    t = en.ones((2, 2))
    params = inspect.signature(fn).parameters.values()
    args = [t for p in params if p.default is p.empty and
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        args.append(t)
    return fn(*args)


def test_the_list_of_refused_functions_is_numpys():
    names = {n for _, n, _ in _dispatching_functions()}
    assert len(names) > 200 and {"savez", "busday_count"} <= {n for (_, n), _ in NOT_IMPLEMENTED}


@pytest.mark.parametrize("key,fn", NOT_IMPLEMENTED, ids=[f"{m}.{n}" for (m, n), _ in NOT_IMPLEMENTED])
def test_a_numpy_function_the_engine_lacks_is_refused_by_name(key, fn):
    module, name = key
    with pytest.raises(en.UnsupportedError) as caught:
        _call_with_tensors(fn)
    message = str(caught.value)
    assert f"{module}.{name} is not an engine function" in message
    assert "call it on t.numpy()" in message and "test_numpy_functions_manipulation.py" in message


# ---- results can be written, with numpy's sharing ---------------------------------------------------
def _arrays(value):
    if isinstance(value, (np.ndarray, np.generic)):
        yield np.asarray(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays(v)


def _copied(value):
    """A copy, numpy scalars as 0-d arrays (what a 0-d tensor stands for)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.array(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    return value


WRITABLE = [(n, a, k) for n, a, k in CASES
            if isinstance(getattr(np, n)(*_copied(a), **k), np.ndarray)
            and getattr(np, n)(*_copied(a), **k).size and n not in ("astype", "geomspace")]


@pytest.mark.parametrize("name,args,kwargs", WRITABLE,
                         ids=[f"{n}-{k}" for k, (n, _, _) in enumerate(WRITABLE)])
def test_a_write_to_the_result_reaches_what_numpys_reaches(name, args, kwargs):
    """Write the first element of the result, in numpy and in the engine: the result and
    every input array end up the same (a view's write reaches its base in both)."""
    np_args = _copied(args)
    t_args = _tensors(_copied(args))
    expected = getattr(np, name)(*np_args, **kwargs)
    got = (getattr(en, name, None) or engine_function("numpy", name))(*t_args, **kwargs)
    first = (0,) * expected.ndim
    value = np.logical_not(expected[first]) if expected.dtype == np.bool_ else expected[first] + 1
    expected[first] = value
    got[first] = value
    assert_same(got, expected, f"{name}: the result after the write")
    for t, a in zip(_arrays_of(t_args), _arrays(np_args)):
        np.testing.assert_array_equal(t.numpy(), a, err_msg=f"{name}: an input after the write")


def _arrays_of(value):
    if isinstance(value, en.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays_of(v)
