"""Per-op overhead on tiny arrays: numpy, this engine (eager, and under a tape), PyTorch.

Each case times one op on 8-element float32 inputs (a 4x4 matmul for ``matmul``),
so almost all of the time is dispatch, validation and bookkeeping rather than
arithmetic. Variants are timed in interleaved rounds (every variant once per
round, in a shuffled order) so that drift in the machine's speed hits all of
them alike; the table shows the median microseconds per op over the rounds.

Run it as ``python -m bench.overhead`` or ``python bench/overhead.py``; add
``--quick`` for a short run. PyTorch is optional: without it the torch columns
are skipped with a message.

Adding a case: write a function that takes the :class:`Inputs` helper and
returns ``{variant_name: runner}``, and decorate it with ``@case("name")``.
A runner is ``runner(n) -> seconds`` for ``n`` calls; :func:`loop` makes one
from a zero-argument callable. Variants a case does not have are left blank
in the table, so a later case such as "a 30-op function, eager vs traced" only
returns the variants it measures (e.g. ``engine`` and ``engine_traced``), and
its new variant name goes into ``VARIANTS``.

Example:
    >>> results = run(["add"], repeats=3, number=200)  # doctest: +SKIP
    >>> results["add"]["engine"]                        # doctest: +SKIP
    3.1
"""
import argparse
import contextlib
import os
import platform
import random
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import engine as en

try:  # PyTorch is only a point of comparison, never a dependency
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

# Column order of the table; a case may provide any subset of these.
VARIANTS = ("numpy", "engine", "engine_tape", "engine_traced", "engine_traced_noopt",
            "engine_traced_numba", "engine_compiled", "torch", "torch_grad")
LABELS = {
    "numpy": "numpy",
    "engine": "engine",
    "engine_tape": "engine+tape",
    "engine_traced": "traced",
    "engine_traced_noopt": "traced -O0",
    "engine_traced_numba": "traced numba",
    "engine_compiled": "compiled",
    "torch": "torch",
    "torch_grad": "torch+grad",
}
# (numerator, denominator, header) ratios shown after the timings.
RATIOS = (("engine", "numpy", "engine/numpy"),
          ("engine", "torch", "engine/torch"),
          ("engine_tape", "torch_grad", "tape/torch+grad"),
          ("engine", "engine_traced", "eager/traced"),
          ("engine", "engine_traced_noopt", "eager/-O0"),
          ("engine", "engine_traced_numba", "eager/numba"),
          ("engine", "engine_compiled", "eager/compiled"))

CASES = {}


def case(name):
    """Register a benchmark case: ``fn(inputs) -> {variant: runner}``."""
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def loop(fn, context=None):
    """A runner calling ``fn()`` ``n`` times, inside ``context()`` when given.

    The context (e.g. a fresh GradientTape) is entered once per timed block,
    outside the loop, so its own cost is spread over ``n`` calls.
    """
    def runner(n):
        with (context() if context is not None else contextlib.nullcontext()):
            r = range(n)
            start = time.perf_counter()
            for _ in r:
                fn()
            return time.perf_counter() - start
    return runner


class Inputs:
    """The same small float32 values in every library's form."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.x = rng.uniform(0.5, 1.5, size=8).astype(np.float32)
        self.y = rng.uniform(0.5, 1.5, size=8).astype(np.float32)
        self.a = rng.standard_normal((4, 4)).astype(np.float32)
        self.b = rng.standard_normal((4, 4)).astype(np.float32)

    def engine(self, name):
        return en.tensor(getattr(self, name))

    def torch(self, name, requires_grad=False):
        return torch.tensor(getattr(self, name), requires_grad=requires_grad)


def _taped(*watched):
    """Context factory: a fresh tape watching ``watched``, so every op is recorded."""
    @contextlib.contextmanager
    def context():
        with en.GradientTape() as tape:
            tape.watch(list(watched))
            yield tape
    return context


def _op_variants(inputs, names, np_fn, en_fn, torch_fn):
    """The five standard variants of one op applied to the inputs called ``names``."""
    arrays = [getattr(inputs, n) for n in names]
    tensors = [inputs.engine(n) for n in names]
    variants = {
        "numpy": loop(lambda: np_fn(*arrays)),
        "engine": loop(lambda: en_fn(*tensors)),
        "engine_tape": loop(lambda: en_fn(*tensors), context=_taped(*tensors)),
    }
    if torch is not None:
        plain = [inputs.torch(n) for n in names]
        grad = [inputs.torch(n, requires_grad=True) for n in names]
        variants["torch"] = loop(lambda: torch_fn(*plain))
        variants["torch_grad"] = loop(lambda: torch_fn(*grad))
    return variants


@case("add")
def _add(inputs):
    return _op_variants(inputs, ("x", "y"), np.add, en.add, torch and torch.add)


@case("mul")
def _mul(inputs):
    return _op_variants(inputs, ("x", "y"), np.multiply, en.mul, torch and torch.mul)


@case("exp")
def _exp(inputs):
    return _op_variants(inputs, ("x",), np.exp, en.exp, torch and torch.exp)


@case("matmul 4x4")
def _matmul(inputs):
    return _op_variants(inputs, ("a", "b"), np.matmul, en.matmul, torch and torch.matmul)


FUNCTION_OPS = 30  # ops in the function of the case below (3 per layer)


def thirty_op_function(x, y, h):
    """Ten tiny layers ``h = tanh(h * x + y)``: 30 ops, each on 8 elements."""
    for _ in range(FUNCTION_OPS // 3):
        h = en.tanh(h * x + y)
    return h


def _thirty_op_numpy(x, y, h):
    for _ in range(FUNCTION_OPS // 3):
        h = np.tanh(h * x + y)
    return h


@case("30-op function (per call)")
def _function_30(inputs):
    """One call of a 30-op function: eager (30 dispatches) vs one compiled graph.

    The times are per call of the whole function, not per op; "eager/traced"
    is how many times faster the traced function (default optimizer) runs than
    the same Python run eagerly, the aim being at least 5x; "-O0" is the traced
    function with ``optimize=False``.
    """
    arrays = [inputs.x, inputs.y, inputs.x]
    tensors = [inputs.engine("x"), inputs.engine("y"), inputs.engine("x")]
    traced = en.function(thirty_op_function)
    plain = en.function(thirty_op_function, optimize=False)
    traced(*tensors)  # trace and compile outside the timed loop
    plain(*tensors)
    variants = {
        "numpy": loop(lambda: _thirty_op_numpy(*arrays)),
        "engine": loop(lambda: thirty_op_function(*tensors)),
        "engine_traced": loop(lambda: traced(*tensors)),
        "engine_traced_noopt": loop(lambda: plain(*tensors)),
    }
    from engine.graph.lowering.numba import fusion_numba
    if fusion_numba.available():   # the optional JIT lowering of fused kernels
        previous = en.config.lowering
        en.config.lowering = "numba_ufunc"
        try:
            jitted = en.function(thirty_op_function)
            jitted(*tensors)
        finally:
            en.config.lowering = previous
        variants["engine_traced_numba"] = loop(lambda: jitted(*tensors))
        # The whole function as one numba function (en.config.lowering = "numba"; "auto"
        # picks it once its machine code is on disk).
        previous = en.config.lowering
        en.config.lowering = "numba"
        try:
            whole = en.function(thirty_op_function)
            whole(*tensors)
        finally:
            en.config.lowering = previous
        variants["engine_compiled"] = loop(lambda: whole(*tensors))
    return variants


# ---- writes: x[i] = v, x[a:b] = v, x[mask] = v and x += y, on float32 arrays -----------------
WRITE_SIZES = {"100": 100, "1e6": 10**6}   # a small array (the per-call cost) and a large one


def _setitem_runner(x, index, value):
    """A runner doing ``x[index] = value`` ``n`` times: the statement itself, with no call
    around it, so the time is the write's own (numpy's, the engine's or PyTorch's)."""
    def runner(n):
        target, r = x, range(n)
        start = time.perf_counter()
        for _ in r:
            target[index] = value
        return time.perf_counter() - start
    return runner


def _iadd_runner(x, y):
    """A runner doing ``x += y`` ``n`` times (x keeps its object: numpy's, the engine's and
    PyTorch's in-place add all return it)."""
    def runner(n):
        target, r = x, range(n)
        start = time.perf_counter()
        for _ in r:
            target += y
        return time.perf_counter() - start
    return runner


def _write_case(make_runner, size):
    """The numpy, engine and PyTorch variants of one write on float32 arrays of ``size``
    elements: ``make_runner(x, y, mask, n)`` with each library's arrays."""
    def variants(inputs):
        rng = np.random.default_rng(0)
        x = rng.uniform(0.5, 1.5, size).astype(np.float32)
        y = np.full(size, 1e-3, dtype=np.float32)   # x += y many times stays a float32 range
        mask = rng.uniform(size=size) < 0.25
        out = {"numpy": make_runner(x.copy(), y, mask, size),
               "engine": make_runner(en.tensor(x), en.tensor(y), en.tensor(mask), size)}
        if torch is not None:
            out["torch"] = make_runner(torch.tensor(x), torch.tensor(y), torch.tensor(mask),
                                       size)
        return out
    return variants


for _label, _size in WRITE_SIZES.items():
    case(f"x[i] = v ({_label})")(_write_case(
        lambda x, y, mask, n: _setitem_runner(x, 3, 1.0), _size))
    case(f"x[a:b] = v ({_label})")(_write_case(
        lambda x, y, mask, n: _setitem_runner(x, slice(n // 4, 3 * n // 4), 1.0), _size))
    case(f"x[mask] = v ({_label})")(_write_case(
        lambda x, y, mask, n: _setitem_runner(x, mask, 1.0), _size))
    case(f"x += y ({_label})")(_write_case(lambda x, y, mask, n: _iadd_runner(x, y), _size))


def _calibrate(runner, target_s=0.02):
    """A call count that makes one timed block last about ``target_s`` seconds."""
    n = 100
    while True:
        t = runner(n)
        if t >= target_s / 4 or n >= 1_000_000:
            return max(100, int(n * target_s / max(t, 1e-9)))
        n *= 4


def run(names=None, repeats=15, number=None, seed=0, block_s=0.02):
    """Time the cases ``names`` (all when None); return ``{case: {variant: median µs}}``.

    ``number`` fixes the calls per timed block; by default each variant is
    calibrated so a block takes about ``block_s`` seconds.
    """
    names = list(CASES) if names is None else list(names)
    rng = random.Random(seed)
    inputs = Inputs(seed)
    results = {}
    for name in names:
        variants = CASES[name](inputs)
        counts = {v: number or _calibrate(r, block_s) for v, r in variants.items()}
        samples = {v: [] for v in variants}
        order = list(variants)
        for _ in range(repeats):
            rng.shuffle(order)
            for v in order:
                n = counts[v]
                samples[v].append(variants[v](n) / n * 1e6)
        results[name] = {v: statistics.median(s) for v, s in samples.items()}
    return results


def call_overhead_us(repeats=15, number=100_000):
    """Median cost of the timing loop itself (calling an empty lambda), in µs."""
    runner = loop(lambda: None)
    return statistics.median(runner(number) / number * 1e6 for _ in range(repeats))


def environment():
    """One-line facts about the machine and libraries, for the table's header."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    blas = "unknown BLAS"
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{deps.get('name', '?')} {deps.get('version', '')}".strip()
    except Exception:  # older numpy: show_config has no dict mode
        pass
    parts = [
        f"CPU: {cpu}, {os.cpu_count()} cores",
        f"Python {platform.python_version()}",
        f"numpy {np.__version__} ({blas})",
        f"torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch is not None
        else "torch: not installed",
    ]
    return "; ".join(parts)


def format_table(results):
    """Render ``run`` results as a fixed-width text table (µs per op, then ratios)."""
    present = [v for v in VARIANTS if any(v in r for r in results.values())]
    ratios = [(a, b, h) for a, b, h in RATIOS
              if any(a in r and b in r for r in results.values())]
    headers = ["case"] + [LABELS.get(v, v) for v in present] + [h for _, _, h in ratios]
    rows = []
    for name, r in results.items():
        row = [name] + [f"{r[v]:.2f}" if v in r else "" for v in present]
        row += [f"{r[a] / r[b]:.2f}" if a in r and b in r else "" for a, b, _ in ratios]
        rows.append(row)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    fmt = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    lines = [fmt(headers), fmt(["-" * w for w in widths])]
    lines += [fmt(row) for row in rows]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench.overhead",
        description="Per-op overhead on tiny arrays: numpy, engine eager, engine under a "
                    "GradientTape, PyTorch eager with and without requires_grad.")
    parser.add_argument("--quick", action="store_true", help="few short rounds (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 15)")
    parser.add_argument("--case", action="append", choices=sorted(CASES),
                        help="run only this case (may be repeated)")
    args = parser.parse_args(argv)

    repeats = args.repeats or (3 if args.quick else 15)
    block_s = 0.002 if args.quick else 0.02
    print(environment())
    if torch is None:
        print("PyTorch is not importable: the torch columns are skipped "
              "(pip install torch to compare).")
    results = run(args.case, repeats=repeats, block_s=block_s)
    print(f"median µs per op over {repeats} interleaved rounds "
          f"(8-element float32 inputs; matmul is 4x4; the writes name their sizes); "
          f"timing-loop overhead {call_overhead_us(repeats=3):.3f} µs/call, included")
    print(format_table(results))
    return results


if __name__ == "__main__":
    main()
