"""Stage 6, the front end: ``en.function`` (``function``), the tracer, one trace compiled
(``concrete``), the residual split of a traced gradient, trace guards, and AutoGraph
(``autograph/``), which converts Python control flow where ``en.function`` first sees a
function.

AutoGraph lives here, not as a stage of its own: it runs only at that entry point, and
it needs exactly what the tracer needs (the IR and the control-flow stage).
"""
