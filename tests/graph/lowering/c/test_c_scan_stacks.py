"""Where the C scan writes its stacks (graph/lowering/c/c_scan.py): a stacked result or
carry that leaves the compiled function is written step by step into the function's output
array, not into the workspace and copied out after the loop. The values agree with eager
mode and with a numpy loop."""
import re

import numpy as np
import pytest

import engine as en
from support.compilers import needs_c_compiler

pytestmark = needs_c_compiler
T, B, H = 7, 3, 5


@pytest.fixture
def scans_in_c(monkeypatch):
    """The C lowering, with whole graphs declined so the scan is a function of its own
    whose stacks are outputs."""
    monkeypatch.setattr(en.config, "lowering", "c")
    with en.config.cost.override(whole_graph_small_elements=8, whole_graph_max_elements=8):
        yield


def _rnn(w, xs):
    """Each step's ``h`` and ``h * 2`` stacked, the final carry, and its stack (the carry
    entering each step)."""
    def step(h, x):
        h = en.tanh(h @ w + x)
        return h, (h, h * 2.0)
    final, (hs, doubled) = en.scan(step, en.zeros((B, H), dtype=xs.dtype), xs)
    return final, hs, doubled


def _numpy_rnn(w, xs):
    h, hs = np.zeros((B, H)), []
    for x in xs:
        h = np.tanh(h @ w + x)
        hs.append(h)
    return h, np.stack(hs), 2.0 * np.stack(hs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stacks_that_leave_the_function_are_written_into_its_outputs(scans_in_c, dtype):
    rng = np.random.default_rng(0)
    w, xs = (rng.standard_normal(s).astype(dtype) * 0.5 for s in ((H, H), (T, B, H)))
    fn = en.function(_rnn)
    graph = fn.graph_for(en.tensor(w), en.tensor(xs))
    (region,) = [n for n in graph.nodes if n.op.name == "compiled_region"]
    source = region.meta["kernel_source"]
    # each stack's step written at its output pointer; no copy of a whole stack after
    assert re.search(r"\(o\d+ \+ t\d+ \* %d\)" % (B * H), source), source
    assert f"< {T * B * H}; " not in source, source
    got = [t.numpy() for t in fn(en.tensor(w), en.tensor(xs))]
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for g, want in zip(got, _numpy_rnn(w.astype(np.float64), xs.astype(np.float64))):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol)
    eager = _rnn(en.tensor(w), en.tensor(xs))
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, e.numpy(), rtol=rtol, atol=rtol)
