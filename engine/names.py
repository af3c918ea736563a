"""numpy's and the Array API standard's names of the engine's public functions.

A public function is called by its own name in numpy (``np.exp`` -> ``en.exp``) and
in the standard (``xp.exp``) unless it says otherwise. Where a name differs, the
function's op module declares it, beside the function, with :func:`also_named`:

    also_named(sub, numpy="subtract", array_api="subtract")

The lookups numpy dispatch (``engine/numpy_dispatch.py``) and the standard's
namespace (``engine/array_api``) use are generated from these declarations, so
no consumer keeps a table of names of its own. A declared name in another
namespace than the function's is qualified: ``array_api="linalg.trace"``.

Example:
    >>> import engine as en
    >>> numpy_aliases()["power"] is en.pow, array_api_aliases()["permute_dims"] is en.transpose
    (True, True)
"""
from collections.abc import Callable
from typing import Any

from .errors import EngineError

# function -> (numpy names, Array API names), in declaration order.
_DECLARED: dict[Callable[..., Any], tuple[tuple[str, ...], tuple[str, ...]]] = {}
# Engine functions that share a name with a numpy function they are not (``en.split``
# takes sizes, numpy's split points).
_NOT_NUMPY: set[object] = set()


def _names(value):
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def also_named(fn, *, numpy=(), array_api=(), not_numpy=False):
    """Declare the names numpy (``numpy``) and the Array API standard (``array_api``)
    give ``fn`` where they differ from its own; returns ``fn``.

    ``not_numpy``: numpy's function of ``fn``'s own name is another function, so a
    numpy call by that name does not reach ``fn``.

    Example:
        >>> import engine as en
        >>> also_named(en.concat, numpy="concatenate") is en.concat
        True
    """
    numpy_names, standard_names = _names(numpy), _names(array_api)
    for name in numpy_names + standard_names:
        if not isinstance(name, str) or not name:
            raise EngineError(f"also_named({fn.__name__}): a name must be a non-empty "
                              f"string, got {name!r}")
    old_numpy, old_standard = _DECLARED.get(fn, ((), ()))
    _DECLARED[fn] = (_merge(old_numpy, numpy_names), _merge(old_standard, standard_names))
    if not_numpy:
        _NOT_NUMPY.add(fn)
    return fn


def _merge(old, new):
    return old + tuple(n for n in new if n not in old)


def replace_functions(mapping):
    """Declare the names for ``mapping[fn]`` instead of ``fn`` (``{function: replacement}``):
    the public namespaces hold wrappers that translate PyTorch keywords
    (``engine/torch_spellings.py``), and the generated tables give what they hold."""
    for old, new in mapping.items():
        if old in _DECLARED:
            _DECLARED[new] = _DECLARED.pop(old)
        if old in _NOT_NUMPY:
            _NOT_NUMPY.discard(old)
            _NOT_NUMPY.add(new)


def declared():
    """``{function: (numpy names, Array API names)}``, every declaration so far."""
    return dict(_DECLARED)


def is_numpy(fn):
    """Whether numpy's function of ``fn``'s own name is ``fn`` (False after
    ``also_named(fn, not_numpy=True)``)."""
    return fn not in _NOT_NUMPY


def numpy_aliases():
    """``{numpy name: engine function}``, generated from the declarations; a name in
    ``numpy.linalg`` or ``numpy.fft`` is qualified (``"linalg.norm"``)."""
    return _table(0)


def array_api_aliases():
    """``{standard name: engine function}``, generated from the declarations; a name
    of the standard's ``linalg`` or ``fft`` extension is qualified (``"linalg.trace"``)."""
    return _table(1)


def _table(which):
    table: dict[str, Callable[..., Any]] = {}
    for fn, names in _DECLARED.items():
        for name in names[which]:
            other = table.setdefault(name, fn)
            if other is not fn:
                raise EngineError(f"the name {name!r} is declared for both "
                                  f"{other.__name__} and {fn.__name__}")
    return table
