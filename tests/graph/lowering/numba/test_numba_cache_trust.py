"""The numba lowering's disk cache (graph/lowering/numba/numba_cache.py) is used only in a
folder no other user can write: elsewhere the function is compiled in memory, and
nothing is written or imported from that folder."""
import importlib
import sys

import numpy as np
import pytest

from support.compilers import import_numba

numba = import_numba()

numba_cache = importlib.import_module("engine.graph.lowering.numba.numba_cache")

SOURCE = "def region(a0):\n    return (a0 * np.float64(2.0) + np.float64(1.0),)\n"
OTHER = "def region(a0):\n    return (a0 * np.float64(-5.0),)\n"


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path))
    _fresh_process(monkeypatch)
    return tmp_path / "numba"


def _fresh_process(monkeypatch):
    """Forget the dispatchers and region modules this process holds, as a new process
    would (a module imported from another test's folder would keep numba's files there)."""
    monkeypatch.setattr(numba_cache, "_LOADED", {})
    for source in (SOURCE, OTHER):
        monkeypatch.delitem(sys.modules, f"_engine_region_{numba_cache.key_of(source)}",
                            raising=False)


def _run(source):
    signature = (numba.types.Array(numba.float64, 1, "C"),)
    fn, from_cache = numba_cache.load(source, "region", signature)
    return fn(np.arange(3.0))[0], from_cache


def test_a_private_folder_keeps_the_module_and_its_machine_code(cache):
    got, from_cache = _run(SOURCE)
    np.testing.assert_array_equal(got, np.arange(3.0) * 2 + 1)
    assert not from_cache and numba_cache.is_cached(SOURCE)
    assert list(cache.glob("r*.py")) and list(cache.glob("r*.ok"))


@pytest.mark.parametrize("mode", [0o777, 0o770], ids=["world", "group"])
def test_a_folder_other_users_can_write_is_neither_written_nor_read(cache, mode):
    # A module planted under the region's key would run at import: it must not be read.
    cache.mkdir(mode=0o700)
    key = numba_cache.key_of(SOURCE)
    planted = "raise SystemExit('planted module imported')\n"
    (cache / f"r{key}.py").write_text(planted)
    (cache / f"r{key}.ok").touch()
    cache.chmod(mode)
    assert not numba_cache.is_cached(SOURCE)         # the cost model does not count on it
    got, from_cache = _run(SOURCE)
    np.testing.assert_array_equal(got, np.arange(3.0) * 2 + 1)
    assert not from_cache
    assert (cache / f"r{key}.py").read_text() == planted
    assert sorted(p.name for p in cache.iterdir()) == [f"r{key}.ok", f"r{key}.py"]


def _files(cache, source, suffix):
    return sorted((cache / "__pycache__").glob(f"r{numba_cache.key_of(source)}.*{suffix}"))


@pytest.mark.parametrize("damage", ["zero-length", "truncated"])
@pytest.mark.parametrize("suffix", [".nbc", ".nbi"])
def test_damaged_machine_code_is_compiled_again_not_run(cache, monkeypatch, damage, suffix):
    _run(SOURCE)
    for path in _files(cache, SOURCE, suffix):
        data = path.read_bytes()
        path.write_bytes(b"" if damage == "zero-length" else data[:len(data) // 2])
    _fresh_process(monkeypatch)
    got, from_cache = _run(SOURCE)
    np.testing.assert_array_equal(got, np.arange(3.0) * 2 + 1)
    assert not from_cache
    _fresh_process(monkeypatch)
    assert _run(SOURCE)[1]            # stored again, whole: the next process loads it


def test_another_regions_machine_code_under_this_name_is_compiled_again(cache, monkeypatch):
    _run(SOURCE)
    _run(OTHER)
    (mine,), (other,) = _files(cache, SOURCE, ".nbc"), _files(cache, OTHER, ".nbc")
    mine.write_bytes(other.read_bytes())
    _fresh_process(monkeypatch)
    got, from_cache = _run(SOURCE)
    np.testing.assert_array_equal(got, np.arange(3.0) * 2 + 1)
    assert not from_cache
