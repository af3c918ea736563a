"""Stage 2, passes: structural rewrites, each a plain function ``(graph) -> changed``
in its own module (``simplify``, ``layout``, ``constant_folding``, ``cse``,
``batch_products``, ``dce``, ``scan_sums``, ``scan_unread``).

A pass here changes the graph but never picks or builds a lowering; the steps that do
(``compile_numba``, ``fusion``, ``parallel_matmul``, ``memory_planning``) and the
pipeline that runs them all in order are in ``graph/lowering/``.
"""
