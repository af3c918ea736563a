"""Stage 3, lowering: a graph becomes code that runs.

``pipeline`` runs the structural passes, then the steps that pick or build a lowering:
``compile_numba`` (asks the policy for a whole graph or a loop as one compiled function), ``fusion``
(finds elementwise regions and writes their numpy kernels), ``parallel_matmul`` and
``memory_planning``. ``codegen`` writes the Python source, ``executor`` runs it, and the
run-time helpers (``output_recycling``, ``concat_in_place``, ``parallel``,
``blas_threads``) serve it.

Lowerings are plug-ins: ``plugin`` holds the ``Lowering`` interface and the registry,
``registry`` registers the shipped ones (``numpy_lowering``, ``c/``, ``numba/``), and
``policy`` picks among them under ``en.config.lowering`` with the cost model. Each
compiled lowering is its own folder: ``numba/`` and ``c/``; ``loop_nest`` (the loop nest
both write), ``cache_folder``, ``row_kernel`` and ``hot_swap`` are shared by both.
"""
