"""Packaging: one import name, ``engine``, with the modes' folders mapped into it.

The repository keeps the design's top-level folders (``engine/``, ``eager/``,
``graph/``, ``bench/``); installed, ``eager/`` and ``graph/`` become the
subpackages ``engine.eager`` and ``engine.graph`` (a user's own ``graph.py``
can then never shadow them), and the benchmark runner ``bench/`` is not
installed at all: it runs from the repository, ``python -m bench``. The
metadata is in ``pyproject.toml``; this file only lists the packages, found
folder by folder so that a new subpackage needs no edit here.

One C extension, ``engine._fast_writes`` (the eager write fast paths,
engine/fast_writes.py), is built when a C compiler is present; it is optional, so
an install without a compiler succeeds and the same writes run in Python.
"""
from setuptools import Extension, find_packages, setup

FOLDERS = {"engine": "engine", "engine.eager": "eager", "engine.graph": "graph"}

packages = [sub for package, folder in FOLDERS.items()
            for sub in [package] + [f"{package}.{p}" for p in find_packages(folder)]]

fast_writes = Extension("engine._fast_writes", ["engine/_fast_writes.c"], optional=True)

setup(packages=packages, package_dir={k: v for k, v in FOLDERS.items() if k != v},
      ext_modules=[fast_writes])
