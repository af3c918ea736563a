"""Machine code is loaded only from cache folders no other user can write
(graph/lowering/cache_trust.py), and private build folders leave nothing behind."""
import importlib
import logging
import os

import pytest

cache_trust = importlib.import_module("engine.graph.lowering.cache_trust")


@pytest.fixture
def folder(tmp_path):
    made = cache_trust.open_folder(tmp_path / "cache" / "c")
    assert made is not None
    return made


def test_a_folder_of_this_user_only_is_trusted_and_made_private(folder):
    assert cache_trust.distrust(folder) is None
    assert folder.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode, why", [(0o777, "writable by other users"),
                                       (0o770, "writable by other users"),
                                       (0o720, "writable by other users"),
                                       (0o1777, "writable by other users")])
def test_a_folder_others_can_write_is_refused(folder, mode, why, caplog):
    # Sticky or not: another user could put a library under a name this one will use.
    folder.chmod(mode)
    assert why in cache_trust.distrust(folder)
    with caplog.at_level(logging.DEBUG, logger="engine.graph"):
        assert cache_trust.open_folder(folder) is None
    assert "is not loaded" in caplog.text and str(folder) in caplog.text


def test_a_folder_above_that_others_can_write_is_refused_unless_sticky(folder):
    above = folder.parent
    above.chmod(0o777)
    assert "not sticky" in cache_trust.distrust(folder)
    above.chmod(0o1777)      # as /tmp: others cannot move this user's folder aside
    assert cache_trust.distrust(folder) is None


def test_a_folder_of_another_user_is_refused(folder, monkeypatch):
    owner = os.stat(folder).st_uid
    monkeypatch.setattr(cache_trust.os, "geteuid", lambda: owner + 1)
    assert f"owned by user {owner}" in cache_trust.distrust(folder)
    assert cache_trust.open_folder(folder) is None


def test_a_folder_that_cannot_be_made_is_none(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cache_trust.open_folder(blocker / "c") is None


def test_a_private_folder_is_removed_even_when_the_block_raises(tmp_path):
    with pytest.raises(RuntimeError):
        with cache_trust.private_folder(tmp_path, "engine-c-") as where:
            (where / "k.so").write_bytes(b"x")
            assert where.stat().st_mode & 0o777 == 0o700
            raise RuntimeError("the compiler failed")
    assert list(tmp_path.iterdir()) == []
