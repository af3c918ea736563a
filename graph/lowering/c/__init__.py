"""The C lowering of large fused regions (optional: needs a C compiler).

``c_source`` writes a region as one C loop nest, ``c_compiler`` builds and caches the
shared library, and ``c_fused`` wraps it as a fused kernel; ``lowering`` is the plug-in
(``graph/lowering/plugin.py``) through which the policy (``graph/lowering/policy.py``)
decides where it pays.
"""
