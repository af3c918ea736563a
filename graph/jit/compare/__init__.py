"""The node-level comparison of a compiled graph against eager mode (``en.debug.compare``),
and the checks ``en.function(shadow=..., validate=N)`` run with it (``checks.py``)."""
