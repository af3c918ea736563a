"""Stage 1, the IR: :class:`Graph` and :class:`Node`, the structural ops every graph
holds (``graph_ops``), graph queries (``queries``), call signatures (``signature``) and
the printers (``printing``; the notebook display ``notebook`` is loaded on first use).

Every later stage builds on these; this stage imports no other stage.
"""
