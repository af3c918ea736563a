"""The numba lowerings (optional: needs numba).

A whole graph, or each ``scan`` in it, is written as one numba function
(``numba_source``), compiled once and kept on disk (``numba_cache``); ``whole_graph``
holds what decides where it pays, which the lowering policy asks. A large fused region is one
numba loop nest (``numba_fused``), a single-result one a numba ufunc when asked for
(``fusion_numba``); ``lowering`` holds both plug-ins (``graph/lowering/plugin.py``).
numba itself is imported only when something is compiled.
"""
