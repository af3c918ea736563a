"""Stage 4, control flow: ``cond``, ``while_loop`` and ``scan`` (``control_flow``), their
checks, subgraphs (bodies compiled through the lowering stage), the graph interpreter
that replays a graph op by op, and effects (``en.print``, ``en.py_function``).
"""
