"""Where the repository is, for tests that read its files or run commands in it (a test's
own folder depth must not matter: tests/ mirrors the source, folders within folders).

Example:
    >>> import os
    >>> os.path.isfile(os.path.join(REPO, "pyproject.toml"))
    True
"""
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(REPO, "tests")
