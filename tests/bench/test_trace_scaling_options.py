"""bench/trace_scaling.py: the elementwise chain and the lowering switch."""
import engine as en
from bench import trace_scaling


def test_the_elementwise_chain_under_a_chosen_lowering(capsys, monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "auto")
    seen = []
    measure = trace_scaling.measure
    monkeypatch.setattr(trace_scaling, "measure",
                        lambda *a: seen.append(en.config.lowering) or measure(*a))
    rows = trace_scaling.main(["--ops", "100,200", "--programs", "elementwise",
                               "--lowering", "numpy"])
    assert seen == ["numpy"] and en.config.lowering == "auto"      # set, then restored
    assert [(r["program"], r["ops"]) for r in rows] == [("elementwise", 100),
                                                       ("elementwise", 200)]
    # Five traced nodes a layer (three ops, two constants), plus the inputs and the sum;
    # one fused kernel after.
    assert all(r["ops"] <= r["traced_ops"] <= r["ops"] + 5 for r in rows)
    assert all(r["optimized_ops"] <= 4 for r in rows)
    assert "elementwise" in capsys.readouterr().out
