"""Optional JIT lowering of fused kernels through numba (``en.config.lowering = "numba_ufunc"``).

A fused region becomes one numba ``vectorize`` ufunc: a single pass over
memory with no scratch buffers and one call's worth of overhead, however many
ops the region holds. Each op needs a ``scalar_form`` rule (declared beside
the op: its expression on scalars); a region with any op lacking one, or with
a dtype numba cannot type, keeps the numpy lowering, which is the default and
always works. Compiling costs tens of milliseconds per kernel (shown in the
optimization report under ``fusion``).
"""
import math

import numpy as np

from .numba_emitter import HELPERS_IMPORT, cast_arguments, scalar_form_text


def available():
    try:   # numba is optional and slow to import: only when a numba kernel is asked for
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def build(name, members, inputs):
    """A numba ufunc computing the region, or None when the region cannot be lowered."""
    if not available():
        return None
    source = ufunc_source(name, members, inputs)
    return None if source is None else compile_ufunc(name, members, inputs, source)


def ufunc_source(name, members, inputs):
    """The Python source of the region's scalar function, or None where an op has no
    scalar form."""
    if any(m.op.rules.get("scalar_form") is None for m in members):
        return None
    names = {node: f"x{i}" for i, node in enumerate(inputs)}
    lines = [f"def {name}({', '.join(names[i] for i in inputs)}):"]
    for k, m in enumerate(members):
        dt = np.dtype(m.dtype).name
        # Each step is converted to its node's dtype, so float32 stays float32 as in numpy
        # (and cast is its input, converted).
        in_avals = [(tuple(i.shape), i.dtype) for i in m.inputs]
        form = scalar_form_text(m.op, in_avals, m.dtype, m.params)
        if form is None:
            return None
        args = cast_arguments(m.op, [d for _, d in in_avals], m.dtype,
                              [names[i] for i in m.inputs])
        expr = form.format(*args)
        lines.append(f"    t{k} = np.{'bool_' if dt == 'bool' else dt}({expr})")
        names[m] = f"t{k}"
    lines.append(f"    return t{len(members) - 1}")
    return "\n".join(lines) + "\n"


def compile_ufunc(name, members, inputs, source):
    """``source`` (from :func:`ufunc_source`) as a numba ufunc, or None where numba
    refuses it."""
    import numba   # optional, deferred (see available)
    namespace = {"np": np, "math": math}
    # The forms' helpers (numba_math imports numba, so only here, as the regions do).
    exec(compile(HELPERS_IMPORT + source, f"<numba kernel {name}>", "exec"), namespace)
    try:
        out_type = numba.from_dtype(np.dtype(members[-1].dtype))
        in_types = [numba.from_dtype(np.dtype(i.dtype)) for i in inputs]
        ufunc = numba.vectorize([out_type(*in_types)], nopython=True)(namespace[name])
    except Exception:   # a numba typing limit: keep the numpy lowering
        return None
    ufunc.source = source
    return ufunc
