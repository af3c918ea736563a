"""``en.load`` on hostile files that keep within the format's declared limits: what it
reads, allocates and builds stays proportional to the file, and it never blocks.

Compressed ``.npz`` members are refused before inflating; FIFOs, devices and
directories are refused without blocking (checked in a subprocess with a
timeout, so a hang fails the test instead of hanging it); a file over
``MAX_NODES`` is refused before any node is built; repeated node names cost no
search; the JSON is read without a buffer of the format's maximum size.
Memory is measured with ``tracemalloc`` (numpy's arrays included); time is not
asserted (the figures are in the commit that made these fixes).
"""
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import engine as en
from support.memory_probe import peak_bytes
import engine.graph.export.load
from engine.graph.export.native import paths_for
from engine.graph.ir.graph import Graph

from support import hostile_files as hf
from support.paths import REPO

ROOT = REPO


def _saved(tmp_path, name="m.json"):
    w = en.Variable(np.arange(6, dtype="float32").reshape(2, 3), name="w")
    f = en.function(lambda x: en.tanh(x @ w) + 1.0)
    path = str(tmp_path / name)
    en.save(f, path, en.ones((4, 2)))
    return path, f


def _arrays_path(path):
    jp, zp = paths_for(path)
    with open(jp) as f:
        doc = json.load(f)
    return os.path.join(os.path.dirname(jp), doc.get("arrays_file", os.path.basename(zp)))


# ---- compressed members (item 9) ---------------------------------------------------------------
@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_compressed_members_are_refused(tmp_path, method):
    path, _ = _saved(tmp_path)
    npz = _arrays_path(path)
    with open(npz, "rb") as f:
        data = f.read()
    with open(npz, "wb") as f:
        f.write(hf.recompress(data, method))
    kind = {zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
            zipfile.ZIP_LZMA: "lzma"}[method]
    with pytest.raises(en.LoadError, match=f"a0.npy is compressed \\({kind}\\); refused before "
                                           "inflating"):
        en.load(path)


def test_a_compression_bomb_is_refused_before_inflating(tmp_path):
    doc, npz = hf.compressed_bomb(64 << 20)          # 64 MiB of zeros in a few hundred bytes
    assert len(npz) < 4096
    path = str(tmp_path / "bomb.json")
    hf.write(path, doc, npz)

    def load():
        with pytest.raises(en.LoadError, match="compressed"):
            en.load(path)
    assert peak_bytes(load) < 4 << 20


def test_a_member_that_does_not_lie_inside_the_file_is_refused(tmp_path):
    path, _ = _saved(tmp_path)
    npz = _arrays_path(path)
    with open(npz, "rb") as f:
        data = bytearray(f.read())
    # The central directory's record of a0.npy: claim 2**30 bytes, stored.
    at = data.rindex(b"PK\x01\x02")
    data[at + 20:at + 28] = (1 << 30).to_bytes(4, "little") * 2
    with open(npz, "wb") as f:
        f.write(data)
    with pytest.raises(en.LoadError, match="do not lie inside the file"):
        en.load(path)


# ---- regular files only (item 11) --------------------------------------------------------------
LOAD_IN_SUBPROCESS = '''
import sys
import engine as en
try:
    en.load(sys.argv[1])
except en.LoadError as err:
    print("LoadError:", err)
'''


def _load_elsewhere(path):
    """en.load(path) in a fresh process; a hang past the timeout fails the test."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(LOAD_IN_SUBPROCESS), path],
                              env=env, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"en.load({path!r}) blocked (no answer in 90 s)")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_the_graph_is_refused_without_blocking(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    os.mkfifo(folder / "graph.json")
    out = _load_elsewhere(str(folder))
    assert "LoadError:" in out and "is a FIFO (named pipe), not a regular file" in out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_the_arrays_is_refused_without_blocking(tmp_path):
    path, _ = _saved(tmp_path)
    npz = _arrays_path(path)
    os.remove(npz)
    os.mkfifo(npz)
    out = _load_elsewhere(path)
    assert "LoadError:" in out and "is a FIFO (named pipe), not a regular file" in out


def test_directories_and_devices_are_refused(tmp_path):
    path, _ = _saved(tmp_path)
    npz = _arrays_path(path)
    os.remove(npz)
    os.mkdir(npz)
    with pytest.raises(en.LoadError, match="is a directory, not a regular file"):
        en.load(path)
    if os.path.exists("/dev/zero"):
        link = tmp_path / "zero"
        link.mkdir()
        os.symlink("/dev/zero", link / "graph.json")
        with pytest.raises(en.LoadError, match="is a character device, not a regular file"):
            en.load(str(link))


# ---- nodes: refused early, names without search (item 12) ----------------------------------
def _count_built(monkeypatch):
    built = []
    real = engine.graph.export.load._Reader._node

    def counting(self, *args):
        built.append(1)
        return real(self, *args)
    monkeypatch.setattr(engine.graph.export.load._Reader, "_node", counting)
    return built


def _nodes_in(doc):
    total, stack = 0, [doc["graph"]]
    while stack:
        g = stack.pop()
        total += len(g["nodes"])
        for nd in g["nodes"]:
            stack += [p["$subgraph"]["graph"] for p in nd["params"].values()
                      if isinstance(p, dict) and "$subgraph" in p]
    return total


def test_too_many_nodes_are_refused_before_any_is_built(tmp_path, monkeypatch):
    @en.function
    def f(x):
        y = en.cond(en.sum(x) > 0.0, lambda a: en.exp(a) * 2.0, lambda a: -a, x)
        return en.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 0.5 + y),
                             (en.tensor(0), y))[1]
    path = str(tmp_path / "cf.json")
    en.save(f, path, en.ones((3,)))
    with open(paths_for(path)[0]) as fh:
        n = _nodes_in(json.load(fh))
    built = _count_built(monkeypatch)
    monkeypatch.setattr(engine.graph.export.load, "MAX_NODES", n)
    en.load(path)                                   # exactly at the limit: loads
    assert built
    built.clear()
    monkeypatch.setattr(engine.graph.export.load, "MAX_NODES", n - 1)   # one over, counting the bodies
    with pytest.raises(en.LoadError, match=f"more than {n - 1} nodes.*refused before building"):
        en.load(path)
    assert not built


def test_repeated_names_are_made_unique_without_a_search(tmp_path, monkeypatch):
    path = str(tmp_path / "names.json")
    hf.write(path, hf.repeated_names(300))
    real = Graph._unique_name

    def no_search(self, base):
        assert base not in self.names, f"the loader asked Graph to search for a free {base!r}"
        return real(self, base)
    monkeypatch.setattr(Graph, "_unique_name", no_search)
    g = en.load(path)
    names = [nd.name for nd in g.unoptimized_graph.topo_order()]
    assert names == ["x"] + [f"x_{i}" for i in range(1, 301)]
    np.testing.assert_array_equal(g(np.array([1.0, -2.0], "float32")).numpy(), [1.0, -2.0])


def test_names_taken_by_later_nodes_still_come_out_unique(tmp_path):
    doc = hf.repeated_names(4)
    names = ["x", "x_1", "x", "x", "x_2"]    # x_1 taken first; then x -> x_2, x -> x_3 ...
    for nd, name in zip(doc["graph"]["nodes"], names):
        nd["name"] = name
    path = str(tmp_path / "n.json")
    hf.write(path, doc)
    got = [nd.name for nd in en.load(path).unoptimized_graph.topo_order()]
    assert got == ["x", "x_1", "x_2", "x_3", "x_2_1"]


# ---- reading only what is needed (item 13) -----------------------------------------------------
def test_loading_a_small_file_allocates_little(tmp_path):
    path, f = _saved(tmp_path)
    en.load(path)                                   # imports and caches warmed up
    peak = peak_bytes(lambda: en.load(path))
    assert peak < 8 << 20, f"en.load of a {os.path.getsize(paths_for(path)[0])}-byte file " \
                           f"allocated {peak >> 20} MiB at its peak"
