"""Bridges to third-party libraries that accept arrays of several frameworks.

Each bridge is loaded only when its library is: ``import engine`` imports none of
them (``engine/interop/einops_hook.py`` waits for ``import einops``).
"""
