"""The benchmark runner's report: what the default run measures, spreads, notes, targets.

No benchmark runs here (``test_bench_smoke.py`` runs ``--quick``): these check
the pieces on made-up results, against what docs/performance.md states.
"""
import argparse
import os
import re

import numpy as np
import pytest

from bench import __main__ as runner
from bench import common, workloads
from bench.workloads import (autoencoder, big_ops, dask_lbfgs, gc_pauses, lbfgs, rnn,
                             styles, transforms)
from support.paths import REPO

ROOT = REPO


def _args(**kw):
    parser = runner.build_parser(workloads.load())
    return parser.parse_args([f"--{k}" if v is True else f"--{k}={v}" for k, v in kw.items()])


def test_the_default_run_stops_at_batch_10000_and_full_adds_60000():
    default, full = _args(), _args(full=True)
    for mod in (autoencoder, lbfgs):
        assert max(c["batch"] for c in mod.configs(default)) == 10000
        assert max(c["batch"] for c in mod.configs(full)) == 60000
    assert gc_pauses.configs(default)[0]["iterations"] < gc_pauses.configs(full)[0]["iterations"]


def test_the_other_frameworks_variants_run_only_under_full():
    assert runner.select_modes(lbfgs, None) == ["eager", "graph_loss", "graph", "numpy", "torch"]
    assert runner.select_modes(lbfgs, None, full=True) == lbfgs.MODES
    assert "jax" not in runner.select_modes(rnn, None) and "jax" in runner.select_modes(
        rnn, None, full=True)
    assert runner.select_modes(lbfgs, ["jax", "eager"]) == ["eager", "jax"]   # asked by name


def test_quick_and_full_exclude_each_other():
    with pytest.raises(SystemExit):
        _args(quick=True, full=True)


def test_every_row_shows_its_spread():
    rows = [common.result("w", {"b": 1}, "eager", [0.002, 0.001, 0.004]),
            common.result("w", {"b": 1}, "torch", [0.003, 0.0031])]
    headers, table = common.table_rows(rows)
    assert headers[3:5] == ["median ms", "min-max ms (calls)"]
    assert [r[3:6] for r in table] == [["2.00", "1.00-4.00 (3)", "1.00x"],
                                      ["3.05", "3.00-3.10 (2)", "1.52x"]]
    md = common.format_markdown_table(rows)
    assert md.splitlines()[2] == "| w | b=1 | eager | 2.00 | 1.00-4.00 (3) | 1.00x | 0.66x |  |"


def test_write_markdown_holds_the_table_summaries_and_plots(tmp_path):
    rows = [common.result("w", {"b": 1}, "eager", [0.002])]
    path = runner.write_markdown(str(tmp_path / "results.md"), {"cpu": "c", "cores": 2,
                                 "python": "3", "numpy": "2", "torch": None, "jax": None},
                                 "", 12.0, rows, ["w: a summary line"], [("jax", "missing")],
                                 [], [str(tmp_path / "w.png")], str(tmp_path))
    text = open(path).read()
    assert text.startswith("# python -m bench\n")
    assert "| w | b=1 | eager | 2.00 | 2.00-2.00 (1) |" in text
    assert "```text\nw: a summary line\nskipped jax: missing\n```" in text
    assert "![w.png](w.png)" in text


def test_a_baselines_float32_rounding_is_a_note_not_a_failure():
    ref = (np.ones(4), np.full(3, 2.0))
    off = (np.ones(4), np.full(3, 2.0) * (1 + 3.6e-4))   # numpy's b2 gradient at 60000
    numpy_rec = autoencoder.agreement(ref, off, names=("loss", "db2"), mode="numpy")
    assert numpy_rec["agree"] and "float32 rounding in this baseline" in numpy_rec["note"]
    engine_rec = autoencoder.agreement(ref, off, names=("loss", "db2"), mode="graph")
    assert not engine_rec["agree"] and "DISAGREES" in engine_rec["note"]
    far = autoencoder.agreement(ref, (np.ones(4), np.full(3, 3.0)), mode="numpy")
    assert not far["agree"]                      # not rounding: still reported as wrong
    text = autoencoder.summary([dict(common.result("autoencoder", {"batch": 60000}, "numpy",
                                                   [0.1]), **numpy_rec)])
    assert "agreement ok" in text and "FAILED" not in text and "db2 off the float64" in text


def _readme_targets():
    # The targets are stated on the performance page (moved there from the README).
    with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Targets", 1)[1].split("\n## ", 1)[0]
    return " ".join(section.split())


def test_the_runner_judges_only_the_targets_the_readme_states():
    stated = _readme_targets()
    for mod in (lbfgs, autoencoder, rnn, big_ops, transforms, dask_lbfgs, styles):
        for text in mod.TARGET_TEXTS:
            assert text in stated, f"{mod.NAME}: target {text!r} is not in docs/performance.md's Targets"
    # Only these modules print verdicts, and each verdict names one of their TARGET_TEXTS.
    judged = set()
    for name in os.listdir(os.path.join(ROOT, "bench", "workloads")):
        if not name.endswith(".py"):      # (__pycache__ where bytecode is written)
            continue
        with open(os.path.join(ROOT, "bench", "workloads", name), encoding="utf-8") as f:
            if re.search(r"'met' if|\"met\" if", f.read()):
                judged.add(name[:-3])
    assert judged == {"lbfgs", "autoencoder", "rnn", "big_ops", "transforms", "dask_lbfgs",
                      "styles"}


def test_verdict_lines_name_stated_targets():
    rows = [dict(common.result("autoencoder", {"batch": b}, m, [t]))
            for b, m, t in ((100, "graph", 1.0), (100, "graph_nopass", 1.2), (100, "torch", 1.1),
                            (100, "eager", 1.3))]
    verdicts = [line for line in autoencoder.summary(rows).splitlines()
                if re.search(r"\b(met|MISSED)\b", line)]
    assert len(verdicts) == 2 and all(any(t in v for t in autoencoder.TARGET_TEXTS)
                                      for v in verdicts)
    assert "speed-up of graph over eager (no target): 100: 1.30x" in autoencoder.summary(rows)


def test_overlapping_curves_are_grouped():
    curves = {"eager": [1.0, 0.5, 0.25], "graph": [1.0, 0.5, 0.2501], "numpy": [1.0, 0.6, 0.3],
              "torch": [1.0, 0.6, 0.3], "jax": [1.0, 0.5]}
    assert common.overlapping(curves) == [["eager", "graph"], ["numpy", "torch"]]


def test_lbfgs_loss_plot_says_which_curves_overlap(tmp_path):
    plt = common.pyplot_or_none()
    if plt is None:
        pytest.skip("matplotlib is not installed")
    cfg = {"batch": 100, "history": 5, "iters": 4, "timed": 2}
    rows = [dict(common.result("lbfgs", cfg, m, [0.001, 0.002]), loss=loss)
            for m, loss in (("eager", [1, .5, .2, .1]), ("graph", [1, .5, .2, .1]),
                            ("numpy", [1, .6, .3, .2]))]
    titles = []
    real_save = common.save_figure

    def save(fig, out_dir, name, **kw):
        titles.extend(ax.get_title() for ax in fig.axes)
        legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
        if name == "lbfgs_loss.png":
            assert not legends and fig.legends     # one legend, under the panels
        return real_save(fig, out_dir, name, **kw)

    common.save_figure, saved = save, None
    try:
        saved = lbfgs.plot(rows, str(tmp_path))
    finally:
        common.save_figure = real_save
    assert [os.path.basename(p) for p in saved] == ["lbfgs_loss.png", "lbfgs_time.png"]
    assert any("curves overlap: eager = graph" in t for t in titles)
    assert not any("numpy" in t.split("overlap:")[-1] for t in titles if "overlap" in t)


def test_the_peak_memory_line_names_gibibytes_and_gigabytes():
    # ru_maxrss is in KiB on Linux: the runner keeps MiB. 3 GiB is 3.22 GB (10**9 bytes).
    mib = 3 * 1024.0
    line = common.peak_memory_line([
        {"peak_rss_mib": mib / 2, "workload": "rnn", "config": {"batch": 10}},
        {"peak_rss_mib": mib, "workload": "lbfgs", "config": {"batch": 10000}}])
    gib, gb = re.search(r"([\d.]+) GiB \(([\d.]+) GB\)", line).groups()
    assert float(gib) == pytest.approx(mib * 2**20 / 2**30, abs=0.005)
    assert float(gb) == pytest.approx(mib * 2**20 / 1e9, abs=0.005)
    assert line.endswith("lbfgs batch=10000")
