"""``en.save`` / ``en.load``: round trips, byte-identical saves, loading in a fresh
process without the defining module, and the errors for what cannot be saved."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import engine as en
from engine.graph.export.native import paths_for, saved_files
import op_db
from support.models import f32_input, make_autoencoder, make_gru_cell, make_mlp, seeded_variable
from support.paths import REPO

ROOT = REPO


def _rng():
    return np.random.default_rng(0)


def _assert_same(a, b, rtol=1e-6):
    la = a if isinstance(a, (tuple, list)) else [a]
    lb = b if isinstance(b, (tuple, list)) else [b]
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=rtol, atol=1e-7)


def _graph_ops(path):
    with open(paths_for(path)[0]) as f:
        doc = json.load(f)
    ops = set()

    def walk(g):
        for n in g["nodes"]:
            ops.add(n["op"])
            for p in n["params"].values():
                if isinstance(p, dict) and "$subgraph" in p:
                    walk(p["$subgraph"]["graph"])
    walk(doc["graph"])
    return ops


# ---- the models ---------------------------------------------------------------------------------


def make_control(rng):
    w = seeded_variable(rng, "w", 4, 4)
    calls = en.Variable(0, name="calls", trainable=False)

    @en.function
    def control(h, xs):
        def step(c, x):
            c = en.tanh(c @ w + x)
            return c, en.sum(c, axis=1)
        h, ys = en.scan(step, h, xs)
        h = en.cond(en.sum(h) > 0.0, lambda a: a * 2.0, lambda a: en.exp(-a), h)
        calls.assign_add(1)
        return {"h": h, "ys": ys, "calls": calls.read()}
    return control, (f32_input(rng, 2, 4), f32_input(rng, 5, 2, 4))


MODELS = {"mlp": make_mlp, "autoencoder": make_autoencoder, "gru_cell": make_gru_cell,
          "control": make_control}


# ---- round trips --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(MODELS))
def test_round_trip_matches_eager(name, tmp_path):
    fn, args = MODELS[name](_rng())
    path = str(tmp_path / name)
    en.save(fn, path, *args)
    loaded = en.load(path)
    with en.run_functions_eagerly():
        expected = fn(*args)
    got = loaded(*args)
    if name == "control":   # each call bumped its own counter (saved at 0) once
        assert int(got["calls"]) == 1 and int(expected["calls"]) == 1
        got, expected = [got["h"], got["ys"]], [expected["h"], expected["ys"]]
    _assert_same(expected, got)
    assert {v.name for v in loaded.variables} == {v.name for v in fn.graph_for(*args).variables}
    # Only registry and structural ops are stored; loading optimized the graph again.
    assert not any(op.startswith("fused") for op in _graph_ops(path))
    assert loaded.graph.node_count() <= loaded.unoptimized_graph.node_count()


def test_cond_scan_and_variables(tmp_path):
    fn, args = make_control(_rng())
    path = str(tmp_path / "control.json")
    en.save(fn, path, *args)
    assert {"scan", "cond", "assign_variable", "read_variable"} <= _graph_ops(path)
    loaded = en.load(path)
    calls = next(v for v in loaded.variables if v.name == "calls")
    w = next(v for v in loaded.variables if v.name == "w")
    assert not calls.trainable and w.trainable
    for _ in range(3):
        loaded(*args)
    assert int(calls.numpy()) == 3
    # The loaded variables are the graph's state: changing one changes the results.
    before = loaded(*args)["h"].numpy()
    w.assign(w.numpy() * 0.0)
    assert not np.allclose(before, loaded(*args)["h"].numpy())


def test_loaded_variables_train(tmp_path):
    fn, args = make_mlp(_rng())
    en.save(fn, str(tmp_path / "m"), *args)
    loaded = en.load(str(tmp_path / "m"))
    target = en.zeros((5, 3), dtype="float32")
    losses = []
    for _ in range(5):
        with en.GradientTape() as tape:
            loss = en.mean(en.square(loaded(*args) - target))
        grads = tape.gradient(loss, loaded.variables)
        for v, g in zip(loaded.variables, grads):
            v.assign_sub(0.1 * g)
        losses.append(float(loss))
    assert losses[-1] < losses[0]


def test_input_signature_without_example_args(tmp_path):
    w = en.Variable(np.arange(6.0).reshape(3, 2), name="w")
    fn = en.function(lambda x: en.tanh(x @ w),
                     input_signature=[en.TensorSpec((None, 3), "float64")])
    en.save(fn, str(tmp_path / "sig"))
    loaded = en.load(str(tmp_path / "sig"))
    assert loaded.input_signature[0].shape == (None, 3)
    for n in (1, 7):
        x = np.linspace(-1, 1, 3 * n).reshape(n, 3)
        _assert_same(fn(x), loaded(x))
    with pytest.raises(en.ShapeError):
        loaded(np.ones((2, 4)))


def test_loaded_function_inside_other_traces_and_eagerly(tmp_path):
    fn, args = make_control(_rng())
    en.save(fn, str(tmp_path / "c"), *args)
    loaded = en.load(str(tmp_path / "c"))
    calls = next(v for v in loaded.variables if v.name == "calls")
    outer = en.function(lambda h, xs: loaded(h, xs)["h"] * 2.0)
    _assert_same(outer(*args), loaded(*args)["h"] * 2.0)
    with en.run_functions_eagerly():
        _assert_same(loaded(*args)["h"], outer(*args) / 2.0)
    assert int(calls.numpy()) == 4   # the assignment inside ran at every call


def test_every_op_round_trips(tmp_path):
    rng = np.random.default_rng(3)
    checked = set()
    for k, info in enumerate(op_db.OP_DB):
        for dt in (info.dtypes or (np.dtype("float64"),))[:2]:
            for s in list(info.sample_inputs(dt, rng))[:2]:
                arrays = [a for a in s.args if isinstance(a, np.ndarray)]

                def f(*ts, s=s, info=info):
                    it = iter(ts)
                    return info.op(*[next(it) if isinstance(a, np.ndarray) else a
                                     for a in s.args], **s.kwargs)
                fn = en.function(f)
                ts = [en.tensor(a) for a in arrays]
                expected = fn(*ts)
                path = str(tmp_path / f"op{k}_{len(checked)}.json")
                en.save(fn, path, *ts)
                got = en.load(path)(*ts)
                if info.random:
                    expected, got = [en.zeros_like(t) for t in (expected, got)]
                _assert_same(expected, got)
                checked.add(info.name)
    assert len(checked) >= 50


def test_saving_twice_gives_the_same_bytes(tmp_path):
    for name, make in MODELS.items():
        fn, args = make(_rng())
        blobs = []
        for i in range(2):
            path = str(tmp_path / f"{name}{i}")
            en.save(fn, path, *args)
            blobs.append([open(p, "rb").read() for p in saved_files(path)])
        assert blobs[0] == blobs[1], name
        # A loaded function saves back to the very same bytes.
        again = str(tmp_path / f"{name}_again")
        en.save(en.load(str(tmp_path / f"{name}0")), again)
        assert [open(p, "rb").read() for p in saved_files(again)] == blobs[0], name


def test_npz_has_no_pickle_and_fixed_dates(tmp_path):
    import zipfile
    fn, args = make_mlp(_rng())
    path = str(tmp_path / "m.json")
    en.save(fn, path, *args)
    with zipfile.ZipFile(saved_files(path)[1]) as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    with np.load(saved_files(path)[1], allow_pickle=False) as npz:
        assert sorted(npz.files) == [f"a{i}" for i in range(4)]


def test_python_ops_cannot_be_saved(tmp_path):
    def sort(t):
        return np.sort(t.numpy())
    f = en.function(lambda x: en.py_function(sort, [x], en.TensorSpec((3,), "float64")))
    with pytest.raises(en.EngineError, match="py_function"):
        en.save(f, str(tmp_path / "p"), en.ones((3,)))

    def show(x):
        en.print("x is", x)
        return x + 1.0
    with pytest.raises(en.EngineError, match="'print'"):
        en.save(en.function(show), str(tmp_path / "q"), en.ones((3,)))
    with pytest.raises(en.EngineError, match="example arguments"):
        en.save(en.function(lambda x: x), str(tmp_path / "r"))


def test_missing_files_raise_load_error(tmp_path):
    with pytest.raises(en.LoadError):
        en.load(str(tmp_path / "nothing"))
    fn, args = make_mlp(_rng())
    en.save(fn, str(tmp_path / "m"), *args)
    os.remove(saved_files(str(tmp_path / "m"))[1])
    with pytest.raises(en.LoadError):
        en.load(str(tmp_path / "m"))


@pytest.mark.parametrize("key, value", [("summed", [0]), ("unread", [0]), ("summed", 0),
                                        ("unread", "x")])
def test_a_scan_with_an_optimizers_param_is_refused(tmp_path, key, value):
    # ``summed`` and ``unread`` are set by passes on the optimized graph; a file holds the
    # unoptimized one. Loaded, they would change what the loop returns, or fail mid-call.
    fn = en.function(lambda xs: en.scan(lambda c, x: (c + x, c * x), en.zeros(3), xs))
    xs = en.ones((4, 3))
    path = str(tmp_path / "s.json")
    en.save(fn, path, xs)
    doc = json.load(open(path))
    scans = [n for n in doc["graph"]["nodes"] if n["op"] == "scan"]
    assert len(scans) == 1
    scans[0]["params"][key] = value
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(en.LoadError, match=f"{key} is set by the optimizer"):
        en.load(path)

# ---- a fresh process, without the module that defined the function ------------------------------
MODEL_MODULE = '''
import numpy as np
import engine as en

rng = np.random.default_rng(7)
w = en.Variable(rng.standard_normal((4, 5)).astype("float32"), name="w")
b = en.Variable(rng.standard_normal(5).astype("float32"), name="b")


def helper(h):
    return en.where(h > 0.0, h, en.exp(h) - 1.0)


@en.function
def model(x, xs):
    h = helper(x @ w + b)
    total, _ = en.scan(lambda c, t: (c + en.sum(t * h), c), en.tensor(0.0, dtype="float32"), xs)
    return {"h": h, "total": total}


def inputs():
    return (en.tensor(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4)),
            en.tensor(np.ones((2, 3, 5), dtype="float32")))
'''


def _run(code, cwd, *paths):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((ROOT,) + paths))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_load_in_a_fresh_process_without_the_defining_module(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "my_model.py").write_text(MODEL_MODULE)
    work = tmp_path / "work"
    work.mkdir()
    _run('''
        import json, numpy as np, engine as en
        import my_model
        x, xs = my_model.inputs()
        en.save(my_model.model, "saved", x, xs)
        en.save(my_model.model, "saved_again", x, xs)
        with en.run_functions_eagerly():
            out = my_model.model(x, xs)
        np.savez("expected.npz", h=out["h"].numpy(), total=out["total"].numpy(),
                 x=x.numpy(), xs=xs.numpy())
    ''', str(work), str(src))
    (src / "my_model.py").unlink()
    names = sorted(os.listdir(work / "saved"))
    assert names == sorted(os.listdir(work / "saved_again")) and len(names) == 2
    for name in names:
        assert (work / "saved" / name).read_bytes() == (work / "saved_again" / name).read_bytes()
    out = _run('''
        import sys, numpy as np
        import engine as en
        fn = en.load("saved")
        ref = np.load("expected.npz")
        out = fn(ref["x"], ref["xs"])
        np.testing.assert_allclose(out["h"].numpy(), ref["h"], rtol=1e-6)
        np.testing.assert_allclose(out["total"].numpy(), ref["total"], rtol=1e-6)
        assert "my_model" not in sys.modules
        try:
            import my_model
        except ImportError:
            print("module gone; loaded graph matches eager")
    ''', str(work))
    assert "module gone; loaded graph matches eager" in out


def test_node_names_like_generated_code_names(tmp_path):
    # Node names become locals of the generated function; names such as k_sum (a
    # kernel) or c_const (a constant) once hid the namespace entries they matched.
    spec = [en.TensorSpec((2,), "float64", name="k_sum"),
            en.TensorSpec((2,), "float64", name="c_const")]
    fn = en.function(lambda a, b: en.sum(a) + en.exp(b) * 2.0, input_signature=spec)
    a, b = en.tensor([1.0, 2.0]), en.tensor([0.5, 0.0])
    expected = en.sum(a) + en.exp(b) * 2.0
    _assert_same(expected, fn(a, b))
    en.save(fn, str(tmp_path / "names"))
    _assert_same(expected, en.load(str(tmp_path / "names"))(a, b))
