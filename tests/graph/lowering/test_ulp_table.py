"""The table of each lowering's difference from eager mode (docs/guide/numerics.md).

The figures depend on the CPU (numpy picks its SIMD ``exp`` and ``tanh`` by its
features), so the test does not compare them with the page's: it runs the generator
(``tests/support/ulp_table.py``) on a sample of ops and checks every figure against the
page's bounds, checks that the page's own figures respect them, and that the page lists
every op the generator covers. Under "bitwise" every figure is 0.
"""
import numpy as np

from support import ulp_table
from support.compilers import has_c_compiler, has_numba

# Transcendental ops (C and numba use their own or libm's functions) and exact ones.
SAMPLE = ["exp", "tanh", "sigmoid", "erf", "add", "maximum"]


def _lowerings():
    return ("numpy",) + (("c",) if has_c_compiler() else ()) + (("numba",) if has_numba() else ())


def test_ulps_counts_the_floats_between_two_values():
    one = np.float32(1.0)
    three_up = np.nextafter(np.nextafter(np.nextafter(one, 2), 2), 2)
    assert ulp_table.ulps(np.array([one]), np.array([three_up])) == 3
    # across zero: the smallest subnormals on either side are two apart; signed zeros 0
    tiny = np.array([np.nextafter(np.float64(0), 1)])
    assert ulp_table.ulps(-tiny, tiny) == 2
    assert ulp_table.ulps(np.array([-0.0]), np.array([0.0])) == 0
    assert ulp_table.ulps(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) == 0
    assert ulp_table.ulps(np.array([1.0]), np.array([np.nan])) == -1


def test_the_generator_stays_within_the_documented_bounds():
    rows = ulp_table.table(SAMPLE, samples=1, lowerings=_lowerings())
    assert sorted(rows) == sorted(SAMPLE)
    for name, row in rows.items():
        for (lowering, dtype), figure in row.items():
            assert 0 <= figure <= ulp_table.BOUNDS[lowering][dtype], (name, lowering, dtype)
    # the numpy lowering runs eager's kernels: no difference at all
    assert all(f == 0 for row in rows.values() for (lw, _), f in row.items() if lw == "numpy")


def test_every_figure_is_zero_under_bitwise():
    rows = ulp_table.table(SAMPLE, samples=1, lowerings=_lowerings(), numerics="bitwise")
    assert {f for row in rows.values() for f in row.values()} == {0}


def test_the_page_lists_every_op_within_the_bounds():
    rows, exact = ulp_table.documented()
    covered = {info.name for info in ulp_table._entries()}
    assert set(rows) | set(exact) == covered
    assert not set(rows) & set(exact)
    for name, row in rows.items():
        assert row, name
        for (lowering, dtype), figure in row.items():
            assert 0 <= figure <= ulp_table.bound(name, lowering, dtype), (name, lowering, dtype)
            if lowering == "numpy":
                assert figure == 0, name
