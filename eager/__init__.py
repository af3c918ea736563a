"""The eager interpreter: runs each op's numpy kernel the moment Python calls it."""
from .mode import EagerMode, EAGER  # noqa: F401
