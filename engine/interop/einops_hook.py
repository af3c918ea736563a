"""Register the engine's einops back end when einops is imported, not before.

einops finds a back end by walking the subclasses of its ``AbstractBackend``
whose ``framework_name`` is an imported module, so the engine's subclass must
exist by the time einops first sees a tensor. Defining it needs einops, which
is optional and must not be imported by ``import engine``: ``install`` defines
it at once when einops is already imported, and otherwise puts a finder on
``sys.meta_path`` that lets einops load as usual and then imports
``engine.interop.einops_backend`` (the post-import hook of PEP 369, which
Python never adopted, written as a loader wrapper).
"""
import importlib
import importlib.abc
import importlib.util
import sys

BACKEND_MODULE = "engine.interop.einops_backend"


class _LoadBackendAfter(importlib.abc.Loader):
    """einops' own loader, then the engine's back end module."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        importlib.import_module(BACKEND_MODULE)

    def __getattr__(self, name):   # resources, get_source ...: einops' loader answers
        return getattr(self.loader, name)


class _EinopsFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader the other finders give for ``einops``."""

    def find_spec(self, name, path, target=None):
        if name != "einops":
            return None
        sys.meta_path.remove(self)   # once only; and the finders below answer the lookup
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _LoadBackendAfter(spec.loader)
        return spec


def install():
    """Make einops know engine tensors as soon as (or since) it is imported.

    Example:
        >>> import engine as en, einops
        >>> einops.rearrange(en.ones((2, 3)), "a b -> b a").shape
        (3, 2)
    """
    if "einops" in sys.modules:
        importlib.import_module(BACKEND_MODULE)
    elif not any(isinstance(f, _EinopsFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _EinopsFinder())
