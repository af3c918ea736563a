"""Stage 3, lowering: a graph becomes code that runs.

``pipeline`` runs the structural passes, then the steps that pick or build a lowering:
``compile_numba`` (a whole graph or a scan as one compiled function), ``fusion``
(elementwise regions into one kernel), ``parallel_matmul`` and ``memory_planning``.
``codegen`` writes the Python source, ``executor`` runs it, and the run-time helpers
(``output_recycling``, ``concat_in_place``, ``parallel``, ``blas_threads``) serve it.
Each compiled lowering is its own folder: ``numba/`` and ``c/``; ``cache_folder``,
``row_kernel`` and ``hot_swap`` are shared by both.
"""
