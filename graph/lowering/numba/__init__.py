"""Compiled lowering of small-op regions (optional: needs numba).

A whole graph, or each ``scan`` in it, is written as one numba function
(``numba_source``), compiled once and kept on disk (``numba_cache``); the pass
``graph/lowering/compile_numba.py`` decides where it pays. Nothing here is
imported unless that pass finds numba installed.
"""
