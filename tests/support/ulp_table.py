"""The table of each lowering's largest difference from eager mode, per op, in ULPs.

Under the default ``en.config.numerics = "fast"``, every op-database entry with an
elementwise scalar form is run eagerly and as ``en.function(lambda *a: op(*a) * 2.0)``
(the product makes a fused region) under each lowering -- numpy, C and numba -- on the
op's samples, float32 and float64. A figure is the largest distance between the two
results in units in the last place (the number of floats of the dtype between them);
NaN against NaN and infinities alike count 0. ``PYTHONPATH=tests python -m
support.ulp_table --write`` (from the repository's root) rewrites the table in
``docs/guide/numerics.md``; the test
(``tests/graph/lowering/test_ulp_table.py``) checks that the generator runs and that
its figures stay within the page's bounds (the exact figures depend on the CPU: numpy
picks its SIMD ``exp`` and ``tanh`` by the CPU's features).

Example:
    >>> import numpy as np
    >>> ulps(np.float32(1.0), np.nextafter(np.float32(1.0), np.float32(2.0)))
    1
"""
import pathlib
import sys
import warnings

import numpy as np

import engine as en

LOWERINGS = ("numpy", "c", "numba")
DTYPES = ("float32", "float64")
# The most ULPs a lowering may differ from eager mode by in "fast" mode, per dtype: the
# numpy lowering runs eager's kernels (0); C and numba use exp32/tanh32 (float32: within
# 1.5 and about 5 ulp of the true value, numpy's within 1 to 4: so a few ulps apart),
# libm's other functions and contracted multiply-adds. The doc page states these.
BOUNDS = {"numpy": {"float32": 0, "float64": 0},
          "c": {"float32": 16, "float64": 8},
          "numba": {"float32": 16, "float64": 8}}
# Ops whose formula amplifies an ulp of an inner function, so every lowering's own erf or
# tanh puts them further from eager's: exact GELU computes 1 + erf(x / sqrt 2), which
# cancels for negative x (near x = -4, 1 + erf is 1e-8 of erf: an ulp of erf there is many
# ulps of the result; eager's own float32 result carries the same error against the exact
# value). Their bounds, per dtype, replace BOUNDS's for C and numba.
ILL_CONDITIONED = {"gelu": {"float32": 64, "float64": 8}}


def bound(name, lowering, dtype):
    """The most ULPs ``lowering`` may put op ``name`` from eager mode in ``dtype``."""
    if lowering != "numpy" and name in ILL_CONDITIONED:
        return ILL_CONDITIONED[name][dtype]
    return BOUNDS[lowering][dtype]


PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "numerics.md"
BEGIN, END = "<!-- ulp-table: begin -->", "<!-- ulp-table: end -->"


def ulps(a, b):
    """The largest number of floats between ``a`` and ``b`` (elementwise, one dtype); NaN
    against NaN counts 0, NaN against a number (or unequal non-floats) -1."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "c":
        return max(ulps(a.real, b.real), ulps(a.imag, b.imag))
    if a.dtype.kind != "f" or a.size == 0:
        return 0 if np.array_equal(a, b) else -1
    if np.any(np.isnan(a) != np.isnan(b)):
        return -1
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]

    def ordered(x):     # sign-magnitude bits -> integers in the order of the floats
        i = x.view(ints).astype(object)
        return np.where(i < 0, int(np.iinfo(ints).min) - i, i)
    diff = np.abs(ordered(a) - ordered(b))
    return int(np.max(np.where((a == b) | np.isnan(a), 0, diff)))


def _entries(names=None):
    from engine.op import REGISTRY
    from op_db import OP_DB
    for info in OP_DB:
        op = REGISTRY.get(info.name)
        if op is None or info.random or not op.elementwise or \
                op.rules.get("scalar_form") is None or (names and info.name not in names):
            continue
        yield info


def _twice(info, sample):
    def run(*tensors):
        it = iter(tensors)
        args = [next(it) if isinstance(a, np.ndarray) else a for a in sample.args]
        out = info.op(*args, **sample.kwargs)
        return en.logical_not(out) if out.dtype == en.bool_ else out * 2.0
    return run


def table(names=None, samples=2, lowerings=LOWERINGS, numerics="fast"):
    """``{op name: {(lowering, dtype): ulps}}`` under ``numerics`` (-1: a NaN where eager
    has none, or an unequal non-float result)."""
    from op_db import seeded_rng
    rows = {}
    old = en.config.numerics, en.config.lowering
    en.config.numerics = numerics
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for info in _entries(names):
                row = rows.setdefault(info.name, {})
                for dtype in DTYPES:
                    if np.dtype(dtype) not in info.dtypes:
                        continue
                    cases = [s for s in info.sample_inputs(np.dtype(dtype),
                                                           seeded_rng(info.name, "ulps"))
                             if any(isinstance(a, np.ndarray) and a.ndim for a in s.args)]
                    for sample in cases[:samples]:
                        tensors = [en.tensor(a) for a in sample.args if isinstance(a, np.ndarray)]
                        run = _twice(info, sample)
                        want = run(*tensors).numpy()
                        for lowering in lowerings:
                            en.config.lowering = lowering
                            got = en.function(run)(*tensors).numpy()
                            key = (lowering, dtype)
                            row[key] = max(row.get(key, 0), ulps(got, want))
    finally:
        en.config.numerics, en.config.lowering = old
    return rows


def markdown(rows):
    """The table's rows that differ somewhere, and a line for the rest."""
    head = "| op | " + " | ".join(f"{lw} {dt[5:]}" for lw in LOWERINGS for dt in DTYPES) + " |"
    lines = [head, "|" + "---|" * (1 + len(LOWERINGS) * len(DTYPES))]
    exact = []
    for name in sorted(rows):
        row = rows[name]
        if all(v == 0 for v in row.values()):
            exact.append(name)
            continue
        cells = [str(row[(lw, dt)]) if (lw, dt) in row else "" for lw in LOWERINGS
                 for dt in DTYPES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", f"Equal to eager mode under every lowering ({len(exact)} ops): "
              + ", ".join(f"`{n}`" for n in exact) + "."]
    return "\n".join(lines)


def documented():
    """The page's table: ``({op: {(lowering, dtype): ulps}}, [ops equal everywhere])``."""
    text = PAGE.read_text()
    body = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip().splitlines()
    columns = [(lw, dt) for lw in LOWERINGS for dt in DTYPES]
    rows = {}
    for line in body[2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = {k: int(c) for k, c in zip(columns, cells[1:]) if c}
    exact = body[-1].split(":", 1)[1].replace("`", "").rstrip(".").split(", ")
    return rows, [name.strip() for name in exact]


def write(rows):
    """Replace the table between the markers of the doc page."""
    text = PAGE.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    PAGE.write_text(text[:start] + "\n" + markdown(rows) + "\n" + text[end:])


if __name__ == "__main__":
    result = table()
    if "--write" in sys.argv:
        write(result)
    else:
        print(markdown(result))
