"""``en.config.numerics``: its values, a guard of every trace, a part of the native caches' keys."""
import numpy as np
import pytest

import engine as en
from engine.errors import InvalidArgumentError
from engine.graph.lowering.c import c_compiler
from engine.graph.lowering.numba import numba_cache
from support.bitwise import numerics
from support.compilers import skip_without_c_compiler


def test_default_is_fast_and_other_values_are_refused_by_name():
    assert en.config.numerics == "fast"
    with pytest.raises(InvalidArgumentError, match=r"'fast', 'bitwise', got 'exact'"):
        en.config.numerics = "exact"
    assert en.config.numerics == "fast"


def test_a_function_retraces_under_the_other_setting_and_keeps_both_traces():
    f = en.function(lambda x: en.tanh(x) * 2.0)
    x = en.ones(3)
    with numerics("fast"):
        f(x)
    with numerics("bitwise"):
        f(x)
    with numerics("fast"):
        f(x)
    assert f.trace_count == 2
    assert f.retraces().records[1].reason == \
        "en.config: numerics changed from 'fast' to 'bitwise'"


def test_the_native_caches_key_each_setting_apart():
    source = "int f(void) { return 1; }\n"
    with numerics("fast"):
        fast_c, fast_numba = c_compiler.key_of(source), numba_cache.key_of(source)
        assert "-ffp-contract=fast" in c_compiler.flags() and numba_cache.fastmath()
    with numerics("bitwise"):
        assert "-ffp-contract=off" in c_compiler.flags() and not numba_cache.fastmath()
        assert c_compiler.key_of(source) != fast_c
        assert numba_cache.key_of(source) != fast_numba


def test_the_c_kernel_of_an_exact_region_is_built_without_contraction():
    skip_without_c_compiler()   # the key test above still runs
    rng = np.random.default_rng(0)
    a, b, c = (en.tensor(rng.standard_normal((64, 50))) for _ in range(3))
    with numerics("bitwise", "c"):
        f = en.function(lambda a, b, c: a * b + c)
        got = f(a, b, c).numpy()
        kernels = [n for n in f.graph_for(a, b, c).nodes if n.meta.get("backend") == "c"]
    assert kernels, "the region was not compiled"
    # a fused multiply-add would round the product once less somewhere among 3200
    want = a.numpy() * b.numpy() + c.numpy()
    assert np.array_equal(got, want)
