"""The cost model (engine/cost_model.py): each threshold is declared with its measurement,
overridable through en.config.cost, and an override changes what the engine decides."""
import datetime
import os
import subprocess

import numpy as np
import pytest

import engine as en
from engine import cost_model
from engine.op import REGISTRY
from support.paths import REPO

COST = en.config.cost


def test_en_config_cost_is_the_models_one_instance_with_every_default():
    assert COST is cost_model.cost
    names = [t.name for t in cost_model.THRESHOLDS]
    assert len(names) == len(set(names)) >= 30
    for t in cost_model.THRESHOLDS:
        assert getattr(COST, t.name) == t.default, t.name
        assert type(getattr(COST, t.name)) is type(t.default), t.name
    assert COST.changed() == {}


def test_each_threshold_names_its_machine_date_commit_and_reader():
    machines = {cost_model.EPYC, cost_model.EPYC_512, cost_model.XEON, cost_model.NOT_MEASURED}
    for t in cost_model.THRESHOLDS:
        assert t.machine in machines, t.name
        assert t.unit and len(t.meaning) > 20, t.name
        datetime.date.fromisoformat(t.date)
        assert len(t.commit) >= 7 and int(t.commit, 16) >= 0, t.name
        assert t.used_in, t.name


def _git(*args):
    """git's output, or None where git or the history is not at hand."""
    try:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _commit_date(commit):
    return _git("log", "-1", "--format=%ad", "--date=short", commit)


def test_each_thresholds_commit_is_in_the_history_on_its_date():
    # The commit named is where the figure was measured: its message (and the measurements
    # log) holds the numbers. Checked against git itself where the history is at hand.
    if _commit_date("HEAD") is None or _git("rev-parse", "--is-shallow-repository") != "false":
        pytest.skip("no full git history here (an exported or shallow source tree)")
    wrong = [(t.name, t.commit, t.date, _commit_date(t.commit))
             for t in cost_model.THRESHOLDS if _commit_date(t.commit) != t.date]
    assert not wrong, wrong


def _row(t):
    value = f"{t.default:,}" if isinstance(t.default, int) else f"{t.default:g}"
    paths = ", ".join(f"`{p.strip()}`" for p in t.used_in.split(","))
    return (f"| `{t.name}` | {value} | {t.unit} | {t.machine} | {t.date} | `{t.commit}` | "
            f"{t.meaning} | {paths} |")


def test_the_docs_table_is_the_models_declarations():
    # docs/cost-model.md lists every threshold as declared; a changed declaration
    # changes its row (the expected row is in the message, ready to paste).
    with open(os.path.join(REPO, "docs", "cost-model.md"), encoding="utf-8") as f:
        rows = [line for line in f.read().splitlines() if line.startswith("| `")]
    want = [_row(t) for t in cost_model.THRESHOLDS]
    assert rows == want, [w for w in want if w not in rows] or "order or extra rows"


def test_setting_a_threshold_checks_its_name_type_and_sign():
    with pytest.raises(AttributeError, match="did you mean 'compile_calls'"):
        COST.compile_cals = 10
    with pytest.raises(TypeError, match="integer"):
        COST.fused_block_elements = 1.5
    with pytest.raises(TypeError, match="integer"):
        COST.fused_block_elements = True
    with pytest.raises(TypeError, match="number"):
        COST.c_call_seconds = "1e-5"
    with pytest.raises(ValueError, match="negative"):
        COST.numba_import_seconds = -1.0
    with pytest.raises(AttributeError):
        del COST.compile_calls
    COST.c_call_seconds = 1          # an int where seconds are floats: taken as 1.0
    assert COST.c_call_seconds == 1.0 and type(COST.c_call_seconds) is float
    COST.reset("c_call_seconds")
    assert COST.changed() == {}


def test_override_restores_the_values_it_found_even_after_an_error():
    COST.compile_calls = 7
    try:
        with pytest.raises(RuntimeError):
            with COST.override(compile_calls=1, long_run_calls=2):
                assert (COST.compile_calls, COST.long_run_calls) == (1, 2)
                raise RuntimeError("inside")
        assert COST.compile_calls == 7 and COST.long_run_calls == 1000
        assert COST.changed() == {"compile_calls": 7}
    finally:
        COST.reset()
    assert COST.changed() == {} and "none" in repr(COST)


# ---- an override changes the decision it names -----------------------------------------
def _fused_sources(x):
    graph = en.function(lambda x: en.tanh(x * 2.0 + 1.0) * en.exp(-x) + en.sin(x)).graph_for(x)
    (source,) = [n.meta["kernel_source"] for n in graph.nodes if n.op.name.startswith("fused")]
    return source


def test_fused_region_sizes_choose_one_pass_or_blocks():
    x = np.linspace(-1.0, 1.0, 64 * 64).reshape(64, 64)
    # 4096 elements: one numpy call per op over whole arrays (the small path's scratch).
    assert "small_scratch.pop()" in _fused_sources(x)
    with COST.override(fused_whole_array_elements=1024, fused_block_elements=512):
        blocked = _fused_sources(x)
        f = en.function(lambda x: en.tanh(x * 2.0 + 1.0) * en.exp(-x) + en.sin(x))
        got = f(x).numpy()
    assert "small_scratch.pop()" not in blocked and "512 // row" in blocked
    np.testing.assert_allclose(got, np.tanh(x * 2.0 + 1.0) * np.exp(-x) + np.sin(x),
                               rtol=1e-13)


def test_recycle_min_bytes_decides_which_outputs_reuse_their_previous_array():
    x = np.ones((128, 300))           # 300 KiB of float64: recycled by default

    def source():
        return en.function(lambda x: en.tanh(x) * 2.0).source_for(x)
    assert "_held" in source()
    with COST.override(recycle_min_bytes=1 << 30):
        assert "_held" not in source()


def _products(a, w):
    return [a[k] @ w for k in range(3)]


def test_batched_min_products_decides_whether_three_products_batch():
    rng = np.random.default_rng(0)
    a, w = rng.normal(size=(3, 5, 4)), rng.normal(size=(4, 6))

    def matmuls():
        f = en.function(_products)
        got = f(a, w)
        for k in range(3):
            np.testing.assert_allclose(got[k].numpy(), a[k] @ w, rtol=1e-12)
        return sum(n.op.name == "matmul" for n in f.graph_for(a, w).nodes)
    assert matmuls() == 3            # fewer than batched_min_products (4) stay apart
    with COST.override(batched_min_products=3):
        assert matmuls() == 1


def _backward_steps(g1, g2, u):
    ut = en.transpose(u)
    return en.tanh(en.matmul(g1, ut)) + en.matmul(g2, ut)


def test_layout_thresholds_decide_whether_a_transpose_is_copied():
    rng = np.random.default_rng(2)
    g1, g2, u = rng.normal(size=(8, 6)), rng.normal(size=(8, 6)), rng.normal(size=(5, 6))

    def copied():
        graph = en.function(_backward_steps, passes=["layout"]).graph_for(g1, g2, u)
        (t,) = [n for n in graph.nodes if n.op is en.ops.transpose_op]
        return bool(t.meta.get("contiguous"))
    assert copied()                   # two small readers by default
    with COST.override(layout_min_readers=3):
        assert not copied()
    with COST.override(layout_small_product_work=8 * 6 * 5):   # the products are not under it
        assert not copied()


def test_dot_out_max_work_chooses_np_dot_or_np_matmul_for_a_planned_product():
    choose = REGISTRY["matmul"].rules["static_kernel"]
    f64 = np.dtype("float64")
    avals = [((64, 64), f64), ((64, 64), f64)]      # 262,144 multiply-adds
    assert choose(avals, ((64, 64), f64), {}, True) is np.dot
    with COST.override(dot_out_max_work=64 ** 3):
        assert choose(avals, ((64, 64), f64), {}, True) is np.matmul


def test_split_backward_after_counts_the_recomputed_backward_calls():
    rng = np.random.default_rng(3)
    w, x = en.tensor(rng.normal(size=(4, 3))), en.tensor(rng.normal(size=(5, 4)))

    def split_after(calls):
        f = en.function(lambda w, x: en.sum(en.tanh(en.matmul(x, w))))
        for _ in range(calls):
            with en.GradientTape() as tape:
                tape.watch(w)
                y = f(w, x)
            g = tape.gradient(y, w)
            want = x.numpy().T @ (1 - np.tanh(x.numpy() @ w.numpy()) ** 2)
            np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)
        return bool(f.get_concrete_function(w, x)._saving)
    assert not split_after(1) and split_after(3)
    with COST.override(split_backward_after=1):
        assert split_after(1)


def test_lbfgs_chunk_bytes_sets_the_history_rows_per_product():
    w = en.Variable(np.zeros(100))    # 800 bytes a history row
    assert en.optim.LBFGS(history=6).build([w])._k == 6
    with COST.override(lbfgs_chunk_bytes=1600):
        assert en.optim.LBFGS(history=6).build([w])._k == 2
