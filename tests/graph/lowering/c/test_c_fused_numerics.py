"""A fused region's C kernel built later on another thread (a hot swap) is built for the
numerics the region was lowered under (``Region.exact``), whatever en.config.numerics
is when the build runs: a region lowered under bitwise numerics never gets a build with
fused multiply-adds, whose results differ from eager's in the last bits."""
import importlib

import numpy as np
import pytest

import engine as en
from support.compilers import needs_c_compiler, record_c_builds

c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
c_lowering = importlib.import_module("engine.graph.lowering.c.lowering")
fusion = importlib.import_module("engine.graph.lowering.fusion")
plugin = importlib.import_module("engine.graph.lowering.plugin")

pytestmark = needs_c_compiler


@pytest.fixture
def flags(monkeypatch, tmp_path):
    """A fresh cache folder, nothing loaded; the list of each compiled library's flags."""
    return record_c_builds(monkeypatch, tmp_path)


def _region(exact):
    g = en.function(lambda a, b, c: a * b + c, passes=["cleanup"]).graph_for(
        *(en.ones(64, dtype="float32") for _ in range(3)))
    members = [n for n in g.topo_order() if n.op.name in ("mul", "add")]
    inputs = [n for n in g.topo_order() if n.op.name == "placeholder"]
    return plugin.Region("fma_probe", members, inputs, [(members[-1], None)], None,
                         exact=exact)


@pytest.mark.parametrize("lowered", ["bitwise", "fast"])
def test_a_later_build_takes_the_numerics_the_region_was_lowered_under(flags, monkeypatch,
                                                                        lowered):
    region = _region(exact=lowered == "bitwise")
    lowering = c_lowering.CLowering()
    source = lowering.region_source(region)
    # The switch the other way before the build runs (on the hot swap's thread).
    monkeypatch.setattr(en.config, "numerics", "fast" if lowered == "bitwise" else "bitwise")
    kernel = lowering.build_in_background(region, source)
    want = c_compiler.BITWISE_FLAGS if lowered == "bitwise" else c_compiler.FLAGS
    assert flags == [tuple(want)]
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(64).astype(np.float32) for _ in range(3))
    out = np.empty(64, np.float32)
    kernel.out_impl(a, b, c, out)
    if lowered == "bitwise":      # no fused multiply-add: numpy's two roundings
        np.testing.assert_array_equal(out, a * b + c)
    else:
        np.testing.assert_allclose(out, a * b + c, rtol=1e-6)


@pytest.mark.parametrize("numerics", ["bitwise", "fast"])
def test_fusion_records_the_numerics_on_each_region(monkeypatch, numerics):
    monkeypatch.setattr(en.config, "numerics", numerics)
    made = []
    real = plugin.Region

    def record(*args, **kwargs):
        region = real(*args, **kwargs)
        made.append(region)
        return region
    monkeypatch.setattr(fusion, "Region", record)
    f = en.function(lambda x: en.exp(x) * x + 1.0)
    f(en.ones((300, 300), dtype="float32"))
    assert made and all(r.exact is (numerics == "bitwise") for r in made)
