r"""Malformed saved graphs: whatever is wrong with the files, ``en.load`` raises
``en.LoadError`` (or loads a graph that still checks out) and never takes long.

Valid files are saved from a few functions, then mutated by a seeded RNG:
bit flips, truncation and inserted bytes in both files, and JSON field
mutations (unknown ops, cycles, dangling inputs, huge shapes, wrong types,
paths, missing and extra fields). Families of hostile files within every
declared limit follow: arrays recompressed (deflate, bzip2, lzma: always
refused), folding bombs added to the graph (chained matmuls of ``full``
matrices, convolutions of ``full``\ s with large im2col patches, many ``full``
constants), and node names all made the same. Every case is timed. (FIFOs,
too many nodes and the read buffer are in tests/graph/export/test_load_limits.py, where a
hang cannot stop the run.)
"""
import copy
import json
import time
import zipfile

import numpy as np
import pytest

import engine as en
from engine.graph.export.native import paths_for, saved_files

from support import hostile_files as hf

CASES_PER_KIND = {"bitflip_json": 150, "bitflip_npz": 120, "truncate": 120, "insert": 120,
                  "field": 500, "swap": 100, "compress": 30, "fold_bomb": 30, "same_names": 30}
MUST_REJECT = {"compress"}
SLOW = 1.0   # seconds: no case may take longer


def _models():
    rng = np.random.default_rng(1)
    w = en.Variable(rng.standard_normal((4, 6)).astype("float32"), name="w")
    b = en.Variable(np.zeros(6, "float32"), name="b")
    v = en.Variable(rng.standard_normal((6, 6)).astype("float32"), name="v")
    steps = en.Variable(0, name="steps", trainable=False)

    @en.function
    def mlp(x):
        return en.sigmoid(en.relu(x @ w + b) @ v) * 2.0

    @en.function
    def control(x, xs):
        def step(c, xt):
            c = en.tanh(c @ v + xt)
            return c, en.sum(c, axis=1)
        h, ys = en.scan(step, x, xs)
        h = en.cond(en.sum(h) > 0.0, lambda a: a * 2.0, lambda a: en.exp(-a), h)
        i, s = en.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + en.mean(h)),
                             (en.tensor(0), en.tensor(0.0, dtype="float32")))
        steps.assign_add(1)
        parts = en.split(h, 2, axis=1)
        return {"h": h, "ys": ys, "s": s, "part": parts[0][:, ::2]}

    x = en.tensor(rng.standard_normal((2, 4)).astype("float32"))
    x6 = en.tensor(rng.standard_normal((2, 6)).astype("float32"))
    xs = en.tensor(rng.standard_normal((3, 2, 6)).astype("float32"))
    return [(mlp, (x,)), (control, (x6, xs))]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz_base")
    out = []
    for i, (fn, args) in enumerate(_models()):
        path = str(base / f"model{i}.json")
        en.save(fn, path, *args)
        en.load(path)    # the unmutated files load
        jp, zp = saved_files(path)
        with open(jp, "rb") as f:
            j = f.read()
        with open(zp, "rb") as f:
            z = f.read()
        out.append((j, z))
    return out


def _arrays_file(j):
    """Where a case's ``.npz`` goes: the name the unmutated JSON gives it."""
    return json.loads(j)["arrays_file"]


# ---- mutations ----------------------------------------------------------------------------------
def _flip(data, rng, n=None):
    data = bytearray(data)
    for _ in range(n or int(rng.integers(1, 4))):
        k = int(rng.integers(len(data)))
        data[k] ^= 1 << int(rng.integers(8))
    return bytes(data)


def _truncate(data, rng):
    return data[:int(rng.integers(len(data)))]


def _insert(data, rng):
    k = int(rng.integers(len(data) + 1))
    junk = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
    return data[:k] + junk + data[k:]


BAD_VALUES = [
    None, True, -1, 0, 7, 2 ** 40, 2 ** 70, -2 ** 70, 1.5, float("1e308"), "", "add",
    "no_such_op", "../../etc/passwd", "/etc/passwd", "..", "a/b", "x" * 300, [], [None],
    [2 ** 40, 2 ** 40], [-3], [1, 2, 3], [[1], 2], {}, {"$array": 99}, {"$array": -1},
    {"$var": 5}, {"$subgraph": {}}, {"$dtype": "float16"}, {"$float": "1"},
    {"$const": {"dtype": "int64", "shape": [2 ** 20], "data": []}}, {"$const": 1},
    {"$unknown": 1}, [[2 ** 31, 2 ** 31], "float64"], [[None], "float32"], "float16",
    "object", "placeholder", "py_function", "print", "fused_1_add", "eval", "__import__",
    [[3, 5, 4]] * 3, "exec", {"tuple": ["*", "*", "*"]}, {"dict": [["a", "*"], ["a", "*"]]},
]


def _paths(tree, prefix=()):
    """Every (path, value) in a JSON tree."""
    yield prefix, tree
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _paths(v, prefix + (i,))


def _set(tree, path, value):
    for k in path[:-1]:
        tree = tree[k]
    tree[path[-1]] = value


def _node_lists(doc):
    return [v for p, v in _paths(doc) if p and p[-1] == "nodes" and isinstance(v, list)]


def _structural(doc, rng):
    """A targeted graph mutation: cycles, dangling inputs, unknown ops, huge shapes..."""
    nodes = _node_lists(doc)
    nodes = nodes[int(rng.integers(len(nodes)))]
    i = int(rng.integers(len(nodes)))
    node = nodes[i]
    kind = int(rng.integers(9))
    if kind == 0:      # a cycle: use itself or a later node
        node["inputs"] = list(node["inputs"]) + [int(rng.integers(i, len(nodes) + 1))]
    elif kind == 1:    # a dangling input
        node["inputs"] = [len(nodes) + int(rng.integers(0, 1000))]
    elif kind == 2:
        node["op"] = ["no_such_op", "fused_7_add_mul", "py_function", "print", "os.system",
                      "../op", ""][int(rng.integers(7))]
    elif kind == 3:    # a forged huge shape
        key = "aval" if "aval" in node else "avals"
        huge = [[2 ** 31, 2 ** 31], "float64"]
        node[key] = huge if key == "aval" else [huge] * len(node[key])
    elif kind == 4:
        node["after"] = [i + int(rng.integers(0, 3))]
    elif kind == 5:
        node["name"] = ["../../x", "a.b", "", "if", "x" * 500, 3][int(rng.integers(6))]
    elif kind == 6:
        node["params"] = dict(node["params"], extra=1)
    elif kind == 7:
        node.pop(list(node)[int(rng.integers(len(node)))])
    else:
        nodes.insert(int(rng.integers(len(nodes))), copy.deepcopy(node))
    return doc


def _field(data, rng):
    doc = json.loads(data)
    if rng.random() < 0.4:
        doc = _structural(doc, rng)
    else:
        paths = list(_paths(doc))
        path, _ = paths[int(rng.integers(1, len(paths)))]
        value = BAD_VALUES[int(rng.integers(len(BAD_VALUES)))]
        if rng.random() < 0.15 and isinstance(path[-1], str):
            parent = doc
            for k in path[:-1]:
                parent = parent[k]
            del parent[path[-1]]
        else:
            _set(doc, path, copy.deepcopy(value))
    return json.dumps(doc).encode()


def _swap_arrays(z, rng, others):
    """The arrays of another model, or an npz with pickled or odd members."""
    k = int(rng.integers(3))
    if k == 0:
        return others
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        if k == 1:
            zf.writestr("a0.npy", b"\x80\x04pickle" * 10)
            zf.writestr("../a1.npy", b"x")
        else:
            member = io.BytesIO()
            np.save(member, np.zeros((2 ** 10,), "float64"))
            for name in ("a0.npy", "a1.npy", "a2.npy", "a3.npy"):
                zf.writestr(name, member.getvalue())
    return buf.getvalue()


def _recompress(z, rng):
    method = (zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)[int(rng.integers(3))]
    return hf.recompress(z, method)


def _fold_bomb(j, rng):
    """Foldable nodes appended to the graph, asking for far more work or memory than the
    file's size (unused by the outputs: folding runs before dead code goes)."""
    doc = json.loads(j)
    nodes = doc["graph"]["nodes"]
    base = len(nodes)
    kind = int(rng.integers(3))
    if kind == 0:      # chained products of a full matrix: size**3 multiply-adds each
        size, count = int(rng.integers(200, 363)), int(rng.integers(10, 60))
        nodes.append(hf.full("bomb_c", (size, size), 0.001))
        prev = base
        for i in range(count):
            nodes.append(hf.node("matmul", f"bomb_m{i}", [prev, base], (size, size)))
            prev = len(nodes) - 1
    elif kind == 1:    # a convolution of fulls: (h-k+1)**2 * k*k*16 patch elements
        h = int(rng.integers(64, 129))
        k = int(rng.integers(h // 4, h // 2))
        out = (1, h - k + 1, h - k + 1, 1)
        nodes += [hf.full("bomb_x", (1, h, h, 16)), hf.full("bomb_w", (k, k, 16, 1)),
                  hf.node("conv2d", "bomb_conv", [base, base + 1], out,
                          params={"strides": [1, 1], "padding": "valid"})]
    else:              # many constants of up to 1 MiB each
        side = int(rng.integers(256, 513))
        for i in range(int(rng.integers(40, 120))):
            nodes.append(hf.full(f"bomb_f{i}", (side, side), float(i)))
    return json.dumps(doc).encode()


def _same_names(j, rng):
    doc = json.loads(j)
    nodes = _node_lists(doc)
    name = ["x", "add", "x0", "n"][int(rng.integers(4))]
    for nd in nodes[int(rng.integers(len(nodes)))]:
        nd["name"] = name
    return json.dumps(doc).encode()


def _cases(saved):
    rng = np.random.default_rng(20240601)
    for kind, count in CASES_PER_KIND.items():
        for n in range(count):
            m = n % len(saved)
            j, z = saved[m]
            if kind == "bitflip_json":
                yield kind, m, _flip(j, rng), z
            elif kind == "bitflip_npz":
                yield kind, m, j, _flip(z, rng)
            elif kind == "truncate":
                yield (kind, m, _truncate(j, rng), z) if n % 2 else (kind, m, j, _truncate(z, rng))
            elif kind == "insert":
                yield (kind, m, _insert(j, rng), z) if n % 2 else (kind, m, j, _insert(z, rng))
            elif kind == "field":
                yield kind, m, _field(j, rng), z
            elif kind == "swap":
                yield kind, m, j, _swap_arrays(z, rng, saved[(n + 1) % len(saved)][1])
            elif kind == "compress":
                yield kind, m, j, _recompress(z, rng)
            elif kind == "fold_bomb":
                yield kind, m, _fold_bomb(j, rng), z
            else:
                yield kind, m, _same_names(j, rng), z


def _load_outcome(path, kind, n):
    """``"rejected"`` or ``"loaded"`` for the files at ``path``; anything else fails."""
    try:
        fn = en.load(path)
    except en.LoadError as err:
        assert str(err), kind
        return "rejected"
    except BaseException as err:  # noqa: B902 -- anything else is a failure
        pytest.fail(f"case {n} ({kind}) raised {type(err).__name__}: {err}")
    assert isinstance(fn, en.Function)
    assert kind not in MUST_REJECT, f"case {n} ({kind}) loaded"
    return "loaded"


def _timed_load(path, kind, n):
    """``(outcome, seconds)``: the process's CPU time, not the wall clock, so that other
    processes sharing the machine (the test run's own workers) do not count; a case over
    ``SLOW`` is timed once more, so that a pause of this process (a page-in, a collection)
    does not fail it, while a file that makes the loader work is slow both times."""
    for _ in range(2):
        start = time.process_time()
        outcome = _load_outcome(path, kind, n)
        took = time.process_time() - start
        if took < SLOW:
            break
    return outcome, took


def test_mutated_files_raise_load_error_quickly(saved, tmp_path):
    path = str(tmp_path / "case.json")
    jp = paths_for(path)[0]
    outcomes = {"rejected": 0, "loaded": 0}
    slowest = (0.0, None)
    n = 0
    names = [_arrays_file(j) for j, _ in saved]
    for n, (kind, m, j, z) in enumerate(_cases(saved), 1):
        npz_name = names[m]
        with open(jp, "wb") as f:
            f.write(j)
        with open(tmp_path / npz_name, "wb") as f:
            f.write(z)
        outcome, took = _timed_load(path, kind, n)
        outcomes[outcome] += 1
        slowest = max(slowest, (took, f"case {n} ({kind})"))
    assert n >= 1000
    assert slowest[0] < SLOW, f"{slowest[1]} took {slowest[0]:.2f} s of CPU time"
    # Most mutations break the files; a few (a flipped digit in a float) still load.
    assert outcomes["rejected"] > outcomes["loaded"]


def test_messages_name_the_problem(saved, tmp_path):
    path = str(tmp_path / "m.json")
    j, z = saved[0]
    jp, zp = paths_for(path)[0], str(tmp_path / _arrays_file(j))

    def load_with(doc):
        with open(jp, "w") as f:
            json.dump(doc, f)
        with open(zp, "wb") as f:
            f.write(z)
        with pytest.raises(en.LoadError) as info:
            en.load(path)
        return str(info.value)

    doc = json.loads(j)
    bad = copy.deepcopy(doc)
    bad["graph"]["nodes"][2]["op"] = "no_such_op"
    assert "unknown op 'no_such_op'" in load_with(bad)
    bad = copy.deepcopy(doc)
    bad["graph"]["nodes"][2]["inputs"] = [2]
    assert "not defined before" in load_with(bad)
    bad = copy.deepcopy(doc)
    bad["graph"]["nodes"][2]["inputs"] = [0, 1000]
    assert "not defined before" in load_with(bad)
    bad = copy.deepcopy(doc)
    bad["arrays"][0]["shape"] = [2 ** 30, 2 ** 30]
    assert "larger than" in load_with(bad)
    bad = copy.deepcopy(doc)
    bad["version"] = 99
    assert "newer version" in load_with(bad)
    bad = copy.deepcopy(doc)
    bad["variables"][0]["name"] = "../../etc/passwd"
    assert "no paths" in load_with(bad)
    bad = copy.deepcopy(doc)
    bad["graph"]["nodes"][0]["name"] = "../x"
    assert "not a plain name" in load_with(bad)
    bad = copy.deepcopy(doc)
    bad["graph"]["nodes"][3]["params"] = {"axis": "0"}
    assert "params" in load_with(bad)
    # Param names become keyword arguments in generated code: never anything but names.
    bad = copy.deepcopy(doc)
    add = next(n for n in bad["graph"]["nodes"] if n["op"] == "add")
    add["params"] = {"x=__import__('os').system('echo hi'),y": 1}
    assert "params" in load_with(bad)
    bad = copy.deepcopy(doc)
    bad["variables"][0]["shape"] = [1, 2]
    assert "declared" in load_with(bad)
    with open(jp, "wb") as f:
        f.write(j[:len(j) // 2])
    with pytest.raises(en.LoadError, match="not valid JSON"):
        en.load(path)
