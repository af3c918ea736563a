"""Sums and means of strided values under ``en.config.numerics = "bitwise"``.

numpy pairs a sum's terms by the memory layout: down the leading axis of a transposed
view it adds pairwise, down a C-ordered array row after row. A whole C graph copies a
strided input to C order, and the lowerings hold their values C-ordered, so under
"bitwise" eager mode sums a strided value's C-ordered copy (engine/ops/reduce.py
``_in_c_order``): eager, the numpy lowering and C give the same bits for a transposed
view, a view of every other row or every third column, a transpose inside the graph
and a function of a transposed view, float32 and float64. A product reading a transposed
view as a whole C graph's input reads it transposed, as numpy's BLAS call does
(graph/lowering/c/c_graph.py ``CGraphFunction.variant``).
"""
import numpy as np
import pytest

import engine as en
from support.bitwise import assert_same_bits, compiled_backends, numerics
from support.compilers import needs_c_compiler, skip_without_c_compiler

PROGRAMS = {
    "sum_rows": lambda x: en.sum(x, axis=0) * 2.0,
    "sum_columns": lambda x: en.sum(x, axis=1) * 2.0,
    "sum_all": lambda x: en.sum(x) * 2.0,
    "mean_rows": lambda x: en.mean(x, axis=0) * 2.0,
    "mean_all": lambda x: en.mean(x) * 2.0,
    "sum_of_tanh": lambda x: en.sum(en.tanh(x), axis=0) * 2.0,
    "sum_of_transpose": lambda x: en.sum(en.transpose(x), axis=0) * 2.0,
    "mean_of_transpose": lambda x: en.mean(en.transpose(x), axis=1) * 2.0,
}
# numpy's own computation of each on a C-ordered copy ``c`` of the value.
REFERENCES = {
    "sum_rows": lambda c: np.add.reduce(c, axis=0) * 2.0,
    "sum_columns": lambda c: np.add.reduce(c, axis=1) * 2.0,
    "sum_all": lambda c: np.add.reduce(c, axis=None) * 2.0,
    "mean_rows": lambda c: np.add.reduce(c, axis=0) / c.shape[0] * 2.0,
    "mean_all": lambda c: np.add.reduce(c, axis=None) / c.size * 2.0,
    "sum_of_tanh": lambda c: np.add.reduce(np.tanh(c), axis=0) * 2.0,
    "sum_of_transpose": lambda c: np.add.reduce(np.ascontiguousarray(c.T), axis=0) * 2.0,
    "mean_of_transpose": lambda c: np.add.reduce(np.ascontiguousarray(c.T), axis=1) /
    c.shape[0] * 2.0,
}
VIEWS = {
    "transposed": lambda t: en.transpose(t),
    "every_other_row": lambda t: t[::2],
    "every_third_column": lambda t: t[:, ::3],
    "contiguous": lambda t: t,
}


def _value(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
    return en.tensor(x.astype(dtype))


@pytest.mark.parametrize("lowering", ["numpy", "c"])
@pytest.mark.parametrize("shape", [(37, 300), (300, 37), (6, 1000)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_sums_of_strided_values_give_eager_bits(view, dtype, shape, lowering):
    if lowering == "c":
        skip_without_c_compiler()     # the numpy lowering's case runs
    x = VIEWS[view](_value(shape, dtype))
    contiguous = en.tensor(np.ascontiguousarray(x.numpy()))
    for name, program in PROGRAMS.items():
        with numerics("bitwise", lowering), np.errstate(all="ignore"):
            want = program(x)
            assert_same_bits(program(contiguous), want, f"{name}: eager on a copy")
            assert_same_bits(en.function(program)(x), want, f"{name} of {view} ({lowering})")
            expected = REFERENCES[name](np.ascontiguousarray(x.numpy()))
        assert_same_bits(want, expected.astype(dtype), f"{name}: against numpy")


@needs_c_compiler
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_whole_c_graph_sums_a_transposed_view(dtype):
    """The case that differed: the C graph copies the view and adds its rows in order;
    eager added the view's contiguous columns pairwise."""
    x = en.transpose(_value((37, 300), dtype))
    program = PROGRAMS["sum_rows"]
    with numerics("bitwise", "c"):
        f = en.function(program)
        assert_same_bits(f(x), program(x), "sum down a transposed view")
        assert compiled_backends(f, [x]) == ["c"]


@needs_c_compiler
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_product_of_a_transposed_view_in_a_whole_c_graph(dtype):
    """numpy's BLAS call for a transposed view passes a transposition flag (other bits
    than the product of a C-ordered copy): the C graph is written again with that input
    read transposed, once, and later calls with C-ordered inputs take the first one."""
    rng = np.random.default_rng(10)
    base, w = (en.tensor(rng.standard_normal(s).astype(dtype)) for s in ((300, 37), (300, 20)))
    x = en.transpose(base)

    def program(x, w):
        return (x @ w) * 2.0
    with numerics("bitwise", "c"):
        f = en.function(program)
        assert_same_bits(f(x, w), program(x, w), "product of a transposed view")
        assert compiled_backends(f, [x, w]) == ["c"]
        copy = en.tensor(np.ascontiguousarray(x.numpy()))
        assert_same_bits(f(copy, w), program(copy, w), "product of its copy")
    expected = (base.numpy().T @ w.numpy()) * np.asarray(2.0, dtype)
    assert_same_bits(f(x, w), expected, "against numpy")


def test_fast_numerics_sum_the_view_as_numpy_does():
    """Outside "bitwise" eager mode calls numpy on the view itself."""
    base = _value((37, 300), "float32")
    x = en.transpose(base)
    assert_same_bits(en.sum(x, axis=0), np.add.reduce(base.numpy().T, axis=0), "fast")
