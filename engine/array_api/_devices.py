"""The inspection namespace (``__array_namespace_info__``): capabilities, the one
device (``engine.devices.CPU``) and the dtypes.

Example:
    >>> import engine.array_api as xp
    >>> info = xp.__array_namespace_info__()
    >>> info.default_device(), info.default_dtypes()["indexing"]
    (Device('cpu'), dtype('int64'))
"""
from engine import dtypes as _dt
from engine.errors import InvalidArgumentError
from engine.devices import CPU, Device, check_device  # noqa: F401  (Device: the standard's)

from ._data_types import KINDS


class Info:
    """What ``__array_namespace_info__()`` returns: the namespace's capabilities,
    devices and dtypes."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": None}

    def default_device(self):
        return CPU

    def devices(self):
        return [CPU]

    def default_dtypes(self, *, device=None):
        check_device(device, "default_dtypes")
        return {"real floating": _dt.float64, "complex floating": _dt.complex128,
                "integral": _dt.int64, "indexing": _dt.int64}

    def dtypes(self, *, device=None, kind=None):
        check_device(device, "dtypes")
        kinds: tuple[str, ...]
        if kind is None:
            kinds = ("bool", "numeric")
        elif isinstance(kind, tuple):
            kinds = kind
        else:
            kinds = (kind,)
        out = {}
        for k in kinds:
            if k not in KINDS:
                raise InvalidArgumentError(f"dtypes: unknown kind {k!r}; known: {', '.join(KINDS)}")
            for d in KINDS[k]:
                out[d.name] = d
        return out


def __array_namespace_info__():
    """The inspection namespace of ``engine.array_api``."""
    return Info()
