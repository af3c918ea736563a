"""Where the compiled lowerings keep their machine code on disk.

``$ENGINE_CACHE_DIR/<name>`` if that is set, else ``$XDG_CACHE_HOME/engine/<name>``,
else ``~/.cache/engine/<name>``: one folder per compiler (``numba``, ``c``).

Example:
    >>> cache_folder("c").name
    'c'
"""
import os
import pathlib


def cache_folder(name):
    """The folder the lowering ``name`` keeps its compiled files in."""
    root = os.environ.get("ENGINE_CACHE_DIR")
    if root:
        return pathlib.Path(root) / name
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache"
    return base / "engine" / name
