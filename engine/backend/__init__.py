"""Array back ends: the array library a tensor's values live in.

A :class:`Backend` wraps one array library: its namespace ``xp`` (the Python
Array API standard's functions), array creation, the type test, the alias
test, conversion to and from numpy, and the fast paths it supports (``out=``
kernels, in-place updates, fused block loops, buffer reuse). numpy is the
default back end and keeps every optimization; ``array_api_strict`` (the
standard's reference implementation) is registered the first time it is used.

Each op's kernel is written once against the namespace (``Op.generic``) and
overridden per back end where that is faster (``Op.overrides``; numpy's
kernel is ``Op.impl``). :func:`register_backend` resolves the table
``op.kernels[backend.name]`` for every op once, so no dispatch happens per call.

Example:
    >>> import engine as en
    >>> en.tensor([1.0, 2.0]).backend.name
    'numpy'
    >>> t = en.tensor([1.0, 2.0], backend="array_api_strict")
    >>> (t * 2.0).backend.name, (t * 2.0).to("numpy").numpy().tolist()
    ('array_api_strict', [2.0, 4.0])
"""
import contextlib
import contextvars
import functools
import importlib

import numpy as np

from ..errors import BackendError
from ..op import REGISTRY, on_register
from .base import Backend
from .numpy_backend import NumpyBackend

BACKENDS: dict[str, Backend] = {}     # name -> Backend
_BY_TYPE: dict[type, Backend] = {}    # array type -> Backend
# Back ends the engine knows how to load when first asked for, by name or by
# the top-level module of an array's type: (module, class).
_LOADERS = {"array_api_strict": ("engine.backend.strict", "ArrayAPIStrictBackend"),
            "dask": ("engine.backend.dask_backend", "DaskBackend")}
_DEFAULT = contextvars.ContextVar("engine_default_backend", default=None)


# ---- the registry ----------------------------------------------------------------------
def register_backend(backend):
    """Register ``backend`` and resolve every op's kernel for it (once, not per call).

    Example:
        >>> import engine as en
        >>> en.backend.get("numpy") is en.backend.register_backend(en.backend.get("numpy"))
        True
    """
    BACKENDS[backend.name] = backend
    for t in backend.array_types:
        # An array type belongs to the first back end registered for it: a second
        # one on the same library (a wrapper) is chosen by name, never by its arrays.
        _BY_TYPE.setdefault(t, backend)
    for op in list(REGISTRY.values()):
        _resolve(op, backend)
    return backend


def bind(generic, backend):
    """A generic kernel (a namespace function's name, or ``f(backend, *arrays, **params)``)
    bound to ``backend``."""
    if isinstance(generic, str):
        return backend.function(generic)
    kernel = functools.partial(generic, backend)
    # a partial takes attributes (it has a __dict__), which typeshed does not declare
    kernel.__name__ = getattr(generic, "__name__", "kernel")  # type: ignore[attr-defined]
    return kernel


def _resolve(op, backend):
    """Fill ``op.kernels[backend.name]``: the back end's override, else the generic
    kernel bound to it; numpy's kernel is ``op.impl`` (the eager hot path)."""
    if backend.name == "numpy":
        kernel = op.impl
    elif backend.name in op.overrides:
        kernel = op.overrides[backend.name]
    else:
        kernel = backend.own_kernel(op)
        if kernel is None and op.generic is not None:
            kernel = bind(op.generic, backend)
        if kernel is None:
            op.kernels.pop(backend.name, None)
            return
    op.kernels[backend.name] = kernel


@on_register
def _resolve_new_op(op):
    for backend in BACKENDS.values():
        _resolve(op, backend)


def get(name):
    """The back end registered as ``name`` (a known one is loaded on first use), or
    ``name`` itself when it is a Backend.

    Example:
        >>> import engine as en
        >>> en.backend.get("numpy").name
        'numpy'
    """
    if isinstance(name, Backend):
        return name
    backend = BACKENDS.get(name)
    if backend is None and name in _LOADERS:
        module, cls = _LOADERS[name]
        backend = register_backend(getattr(importlib.import_module(module), cls)())
    if backend is None:
        raise BackendError(f"unknown array back end {name!r}; registered: "
                           f"{', '.join(sorted(BACKENDS))}; known: {', '.join(sorted(_LOADERS))}")
    return backend


def of_array(value):
    """The back end that owns the array ``value`` (loading a known one on first
    sight of its arrays), or None when no back end does."""
    backend = _BY_TYPE.get(type(value))
    if backend is None:
        root = type(value).__module__.split(".", 1)[0]
        if root in _LOADERS and root not in BACKENDS:
            get(root)
            backend = _BY_TYPE.get(type(value))
    return backend


def default():
    """The back end new tensors made from Python data and creation ops use here
    (numpy unless :func:`use` says otherwise)."""
    backend = _DEFAULT.get()
    return NUMPY if backend is None else backend


@contextlib.contextmanager
def use(name):
    """Within the block (this thread or task), creation ops (``en.zeros``...) and
    ``en.tensor`` of Python data make tensors on back end ``name``.

    Example:
        >>> import engine as en
        >>> with en.backend.use("array_api_strict"):
        ...     en.zeros(3).backend.name
        'array_api_strict'
    """
    backend = get(name)
    token = _DEFAULT.set(None if backend is NUMPY else backend)
    try:
        yield backend
    finally:
        _DEFAULT.reset(token)


def current_override():
    """The back end chosen with :func:`use`, or None (numpy) -- read by eager mode."""
    return _DEFAULT.get()


def joined(a, b):
    """The back end of an op whose inputs live on ``a`` and ``b``: the one that takes
    the other's tensors in (numpy parameters join Dask data), or None when neither does."""
    if a is b:
        return a
    if b.joins_numpy and a is NUMPY:
        return b
    if a.joins_numpy and b is NUMPY:
        return a
    return None


def mismatch(what, a, b):
    """The error for back ends ``a`` and ``b`` meeting in ``what`` (an op or function)."""
    return BackendError(
        f"{what}: inputs live on different array back ends ({a.name} and {b.name}); "
        f"move them explicitly with t.to({a.name!r}) or t.to({b.name!r})")


def kernel_report():
    """Per back end, which registered ops run the kernel written once against the
    namespace (``generic``), which a kernel of the back end's own (``override``),
    and which have none (``missing``).

    Example:
        >>> import engine as en
        >>> report = en.backend.kernel_report()
        >>> "add" in report["numpy"]["generic"], report["array_api_strict"]["missing"]
        (True, [])
    """
    for name in _LOADERS:
        with contextlib.suppress(ImportError):
            get(name)
    out = {}
    for name, backend in sorted(BACKENDS.items()):
        rows: dict[str, list[str]] = {"generic": [], "override": [], "missing": []}
        for op_name, op in sorted(REGISTRY.items()):
            rows[_kind(op, backend)].append(op_name)
        out[name] = rows
    return out


def _kind(op, backend):
    kernel = op.kernels.get(backend.name)
    if kernel is None:
        return "missing"
    if backend.name == "numpy":
        # numpy's kernel is generic when it is exactly the namespace function named.
        generic = isinstance(op.generic, str) and getattr(np, op.generic, None) is op.impl
        return "generic" if generic else "override"
    own = backend.name in op.overrides or backend.own_kernel(op) is not None
    return "override" if own else "generic"


def format_kernel_report(report=None):
    """The kernel report as text, one block per back end."""
    report = kernel_report() if report is None else report
    lines = []
    for name, rows in report.items():
        lines.append(f"{name}: {len(rows['generic'])} generic, {len(rows['override'])} "
                     f"override, {len(rows['missing'])} missing")
        for kind in ("override", "missing"):
            if rows[kind]:
                lines.append(f"  {kind}: {', '.join(rows[kind])}")
    return "\n".join(lines)


NUMPY = register_backend(NumpyBackend())
