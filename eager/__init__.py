"""The eager interpreter: runs each op's numpy kernel the moment Python calls it.

``engine/__init__.py`` registers :data:`EAGER` as the default mode.
"""
import engine  # noqa: F401  (importing eager first: the facade loads the core and registers us)
from .mode import EagerMode, EAGER  # noqa: F401
