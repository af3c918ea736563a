"""The eager interpreter: runs each op's numpy kernel the moment Python calls it."""
import engine  # noqa: F401  (load the core first: eager builds on it)
from .mode import EagerMode, EAGER  # noqa: F401
