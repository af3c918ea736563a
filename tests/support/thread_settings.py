"""The ``threads`` fixture: sets ``en.config.fusion_threads`` (the engine's kernel threads)
for one test and restores it afterwards; every test can name it (``tests/conftest.py``
loads this module as a plugin)."""
import pytest

import engine as en


@pytest.fixture
def threads():
    """``threads(n)`` sets ``en.config.fusion_threads`` to ``n`` until the test ends."""
    before = en.config.fusion_threads

    def set_threads(n):
        en.config.fusion_threads = n
    yield set_threads
    en.config.fusion_threads = before
