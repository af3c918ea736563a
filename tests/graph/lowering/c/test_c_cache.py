"""The C lowering's library cache (graph/lowering/c/c_cache.py) cannot lie: a library is
checked against its key before it runs; a damaged, foreign or planted file is rebuilt,
never run; an unusable folder leaves nothing behind; two processes filling one cache
agree."""
import importlib
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from support.compilers import needs_c_compiler
from support.paths import REPO

c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
hot_swap = importlib.import_module("engine.graph.lowering.hot_swap")
c_cache = importlib.import_module("engine.graph.lowering.c.c_cache")
cache_trust = importlib.import_module("engine.graph.lowering.cache_trust")

pytestmark = needs_c_compiler

# The kernel under test, and others whose libraries are planted under its key.
ANSWER = "int answer(void) { return 42; }\n"
OTHER = "int answer(void) { return 7; }\n"
PLANTED = "int answer(void) { return 666; }\n"


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A fresh cache folder and temporary folder; nothing loaded in this process yet;
    ``cache.compiles`` counts the compiler's runs."""
    # Earlier tests' background builds (a compiled graph's full build) done first: they would
    # run the recording compiler.
    hot_swap.wait_for_compiles()
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path / "cache"))
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(c_compiler, "_LOADED", {})
    compiles = []
    real = c_compiler._compile

    def counted(*args):
        compiles.append(args)
        return real(*args)
    monkeypatch.setattr(c_compiler, "_compile", counted)

    class Cache:
        folder = tmp_path / "cache" / "c"

        def __init__(self):
            self.compiles, self.temp = compiles, temp

        def fresh_process(self):
            """Forget what this process loaded, as a new process would."""
            monkeypatch.setattr(c_compiler, "_LOADED", {})
    return Cache()


def _compiled(source, tmp_path, name):
    """The bytes of ``source`` compiled as the lowering compiles, outside any cache."""
    (tmp_path / f"{name}.c").write_text(source)
    command = c_compiler.compiler()[0]
    subprocess.run(list(command) + list(c_compiler.FLAGS) + [f"{name}.c", "-o", f"{name}.so"],
                   cwd=tmp_path, check=True, capture_output=True)
    return (tmp_path / f"{name}.so").read_bytes()


def _plant(folder, key, data, record=True):
    """``data`` as the library for ``key``, with a record that fits it (``record``), or
    none."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    c_cache.library_path(folder, key).write_bytes(data)
    if record:
        c_cache.sum_path(folder, key).write_bytes(c_cache.record(key, data))


def _stored_and_checked(folder, key):
    data = c_cache.library_path(folder, key).read_bytes()
    return c_cache.sum_path(folder, key).read_bytes() == c_cache.record(key, data)


def test_a_library_is_stored_with_its_record_and_loaded_without_compiling(cache):
    key = c_compiler.key_of(ANSWER)
    assert c_compiler.load(ANSWER).answer() == 42 and len(cache.compiles) == 1
    assert _stored_and_checked(cache.folder, key)
    assert sorted(p.name for p in cache.folder.iterdir()) == [f"k{key}.so", f"k{key}.sum"]
    assert oct(cache.folder.stat().st_mode & 0o777) == "0o700"
    cache.fresh_process()
    assert c_compiler.is_cached(ANSWER)
    assert c_compiler.load(ANSWER).answer() == 42 and len(cache.compiles) == 1


@pytest.mark.parametrize("record", [False, True], ids=["no-record", "record-fits"])
@pytest.mark.parametrize("damage", ["zero-length", "truncated", "garbage"])
def test_a_damaged_library_is_rebuilt_not_run(cache, tmp_path, damage, record):
    key = c_compiler.key_of(ANSWER)
    good = _compiled(c_cache.stamped(ANSWER, key), tmp_path, "good")
    data = {"zero-length": b"", "truncated": good[:len(good) // 2],
            "garbage": b"\x7fELF" + bytes(range(256)) * 8}[damage]
    _plant(cache.folder, key, data, record)
    assert c_compiler.load(ANSWER).answer() == 42
    assert len(cache.compiles) == 1 and _stored_and_checked(cache.folder, key)
    assert c_cache.library_path(cache.folder, key).stat().st_size > 0


def test_a_library_without_the_key_symbol_is_rebuilt_not_run(cache, tmp_path):
    # Even with a record that fits its bytes: the missing symbol sets it aside.
    key = c_compiler.key_of(ANSWER)
    _plant(cache.folder, key, _compiled(PLANTED, tmp_path, "planted"))
    assert c_compiler.load(ANSWER).answer() == 42
    assert len(cache.compiles) == 1 and _stored_and_checked(cache.folder, key)


@pytest.mark.parametrize("how", ["its-own-record", "record-forged-for-this-key"])
def test_another_kernels_library_under_this_key_is_rebuilt_not_run(cache, how):
    key, other = c_compiler.key_of(ANSWER), c_compiler.key_of(OTHER)
    assert c_compiler.load(OTHER).answer() == 7
    foreign = c_cache.library_path(cache.folder, other).read_bytes()
    if how == "its-own-record":
        c_cache.library_path(cache.folder, key).write_bytes(foreign)
        c_cache.sum_path(cache.folder, key).write_bytes(
            c_cache.sum_path(cache.folder, other).read_bytes())
    else:   # the record fits the bytes: the library's own key symbol gives it away
        _plant(cache.folder, key, foreign)
    cache.fresh_process()
    assert c_compiler.load(ANSWER).answer() == 42
    assert len(cache.compiles) == 2 and _stored_and_checked(cache.folder, key)
    cache.fresh_process()
    assert c_compiler.load(OTHER).answer() == 7 and len(cache.compiles) == 2


def test_an_unwritable_cache_folder_works_and_leaves_nothing_behind(cache, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(blocker))
    assert c_compiler.load(ANSWER).answer() == 42
    assert list(cache.temp.iterdir()) == []           # no engine-c-* folder left
    assert blocker.read_text().startswith("a file")


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777], ids=["world", "group", "sticky"])
def test_a_folder_other_users_can_write_is_not_loaded_from(cache, tmp_path, mode):
    key = c_compiler.key_of(ANSWER)
    # A planted library that passes every check of its own (key symbol, record).
    _plant(cache.folder, key, _compiled(c_cache.stamped(PLANTED, key), tmp_path, "planted"))
    cache.folder.chmod(mode)
    before = sorted(p.name for p in cache.folder.iterdir())
    assert c_compiler.load(ANSWER).answer() == 42
    assert sorted(p.name for p in cache.folder.iterdir()) == before   # nothing written there
    assert list(cache.temp.iterdir()) == []


def test_a_folder_of_another_user_is_not_loaded_from(cache, monkeypatch, tmp_path):
    key = c_compiler.key_of(ANSWER)
    _plant(cache.folder, key, _compiled(c_cache.stamped(PLANTED, key), tmp_path, "planted"))
    # This process runs as another user than the folder's owner.
    monkeypatch.setattr(cache_trust.os, "geteuid", lambda: os.stat(cache.folder).st_uid + 1)
    assert c_compiler.load(ANSWER).answer() == 42
    assert list(cache.temp.iterdir()) == []


_FILL = textwrap.dedent("""
    import sys, numpy as np, engine as en
    en.config.lowering = "c"
    f = en.function(lambda x: en.sigmoid(x) * 3.0 - en.tanh(x))
    x = en.tensor(np.linspace(-5, 5, 300 * 300, dtype=np.float32).reshape(300, 300))
    y = f(x)
    backends = [n.meta.get("backend") for n in f.graph_for(x).nodes if "backend" in n.meta]
    np.save(sys.argv[1], y.numpy())
    print(backends)
""")


def test_two_processes_filling_one_cache_agree(tmp_path):
    env = dict(os.environ, ENGINE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    children = [subprocess.Popen([sys.executable, "-c", _FILL, str(tmp_path / f"y{k}.npy")],
                                 env=env, cwd=REPO, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for k in range(2)]
    outs = [child.communicate(timeout=600) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err for _, err in outs]
    assert all(out.strip() == "['c']" for out, _ in outs), outs
    x = np.linspace(-5, 5, 300 * 300).reshape(300, 300)
    want = 3.0 / (1.0 + np.exp(-x)) - np.tanh(x)
    ys = [np.load(tmp_path / f"y{k}.npy") for k in range(2)]
    np.testing.assert_array_equal(ys[0], ys[1])
    np.testing.assert_allclose(ys[0], want, rtol=1e-5, atol=1e-6)
    folder = pathlib.Path(tmp_path / "cache" / "c")
    libraries = list(folder.glob("k*.so"))
    assert len(libraries) == 1
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [libraries[0].name, libraries[0].stem + ".sum"])         # no build folder left
    assert _stored_and_checked(folder, libraries[0].stem[1:])
