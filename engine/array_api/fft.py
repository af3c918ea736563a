"""The standard's ``fft`` extension, on ``engine.fft``.

Each function adapts the engine's of the same name to the standard's signature;
one the engine lacks is not defined here.

Example:
    >>> import engine.array_api as xp
    >>> hasattr(xp, "fft")
    True
"""
import engine as _en

from engine.devices import check_device

from ._lookup import standard_function

__all__ = []




def _one_axis(name):
    def make(fn):
        def f(x, /, *, n=None, axis=-1, norm="backward"):
            return fn(x, n=n, axis=axis, norm=norm)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = f"The standard's ``fft.{name}`` along ``axis``."
        return f
    return make


def _n_axes(name):
    def make(fn):
        def f(x, /, *, s=None, axes=None, norm="backward"):
            return fn(x, s=s, axes=axes, norm=norm)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = f"The standard's ``fft.{name}`` over ``axes``."
        return f
    return make


def _freq(name):
    def make(fn):
        def f(n, /, *, d=1.0, dtype=None, device=None):
            check_device(device, f"fft.{name}")
            out = fn(n, d=d)
            return out if dtype is None or out.dtype == dtype else _en.cast(out, dtype)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = f"The sample frequencies of ``fft.{name[:-4]}`` for length ``n``."
        return f
    return make


def _shift(name):
    def make(fn):
        def f(x, /, *, axes=None):
            return fn(x, axes=axes)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = f"The standard's ``fft.{name}``."
        return f
    return make


for _name, _make in (("fft", _one_axis), ("ifft", _one_axis), ("rfft", _one_axis),
                     ("irfft", _one_axis), ("hfft", _one_axis), ("ihfft", _one_axis),
                     ("fftn", _n_axes), ("ifftn", _n_axes), ("rfftn", _n_axes),
                     ("irfftn", _n_axes), ("fftfreq", _freq), ("rfftfreq", _freq),
                     ("fftshift", _shift), ("ifftshift", _shift)):
    _fn = standard_function("fft." + _name)
    if _fn is not None:
        globals()[_name] = _make(_name)(_fn)
        __all__.append(_name)
