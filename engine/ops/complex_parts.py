"""The parts of complex numbers: ``real``, ``imag`` and ``conj`` (alias ``conjugate``).

On real (and integer, bool) inputs they follow numpy: ``real(x)`` is ``x``,
``imag(x)`` zeros of ``x``'s dtype, ``conj(x)`` ``x`` (int8 for bools, as
numpy's ``conjugate`` loop). Their gradients follow JAX's convention for
complex values (a cotangent pairs with a tangent as ``Re(g * dz)``, no
conjugation): the cotangent of ``z`` in ``real(z)`` is ``g + 0j``, in
``imag(z)`` it is ``-1j * g``, in ``conj(z)`` it is ``conj(g)``. So a real
loss of complex intermediates (``sum(real(fft(x)) ** 2)``) has the gradient
finite differences give.

Example:
    >>> import engine as en
    >>> z = en.tensor([1 + 2j, 3 - 1j])
    >>> en.real(z).tolist(), en.imag(z).tolist(), en.conj(z).tolist()
    ([1.0, 3.0], [2.0, -1.0], [(1-2j), (3+1j)])
"""
import numpy as np

from .. import dtypes
from ..names import also_named as _also_named
from ..modes import apply
from ..op import REGISTRY, declare
from ._define import call, unary
from . import creation

__all__ = ["real", "imag", "conj", "conjugate"]

_ANY = dtypes.NUMERIC | {dtypes.bool_}
_PART = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}


def _part_dtype(dt):
    return _PART.get(dt, dt)


def _conj_dtype(dt):
    return np.conjugate(np.zeros(0, dt)).dtype   # bool -> int8, as numpy's loop


# ---- kernels on other back ends: the standard's real/imag/conj take complex input only
def _real_generic(be, x):
    return be.xp.real(x) if be.dtype_of(x) in dtypes.COMPLEX else x


def _imag_generic(be, x):
    dt = be.dtype_of(x)
    if dt in dtypes.COMPLEX:
        return be.xp.imag(x)
    return be.xp.zeros(x.shape, dtype=be.dtype(dt))


def _conj_generic(be, x):
    dt = be.dtype_of(x)
    if dt in dtypes.COMPLEX:
        return be.xp.conj(x)
    out = _conj_dtype(dt)
    return be.astype(x, out) if out != dt else be.xp.asarray(x, copy=True)


def _imag_impl(x):
    # numpy's imag of a real array is a read-only view of zeros; the engine owns a fresh one.
    return np.imag(x) if x.dtype.kind == "c" else np.zeros_like(x)


# ---- gradients (JAX's convention; see the module docstring) ---------------------------------
def _real_vjp(g, out, x):
    if x.dtype in dtypes.COMPLEX:
        return (creation.cast(g, x.dtype),)         # g + 0j
    return (g,)


def _imag_vjp(g, out, x):
    if x.dtype in dtypes.COMPLEX:
        return (creation.cast(g, x.dtype) * complex(0.0, -1.0),)
    return (creation.zeros_like(x),)                # imag of a real value is the constant 0


def _conj_vjp(g, out, x):
    return (conj(g),)


def _real_impl(x):
    out = np.real(x)
    return x.view() if out is x else out     # (a view, never the input's own array)


real_op = unary("real", _real_impl, _real_vjp, allowed=_ANY, what="numeric or bool",
                out_dtype=_part_dtype, generic=_real_generic,
                doc="The real part (``x`` itself for a real input).")
imag_op = unary("imag", _imag_impl, _imag_vjp, allowed=_ANY, what="numeric or bool",
                out_dtype=_part_dtype, generic=_imag_generic,
                doc="The imaginary part (zeros for a real input).")
conj_op = unary("conj", np.conjugate, _conj_vjp, allowed=_ANY, what="numeric or bool",
                out_dtype=_conj_dtype, generic=_conj_generic,
                doc="The complex conjugate (``x`` for a real input; int8 for bools, as numpy).")

# ONNX has no complex parts (its complex tensors have almost no ops); numba lowers
# numpy's conjugate on scalars. Forward mode: the op on the tangent (all three are
# real-linear); vmap comes from the elementwise flag.
def _part_jvp(op_name):
    def jvp(primals, tangents, out):
        t = tangents[0]
        return None if t is None else apply(_PART_OPS[op_name], t)
    return jvp


declare(real_op, onnx=None, complex_vjp=True, jvp=_part_jvp("real"))
declare(imag_op, onnx=None, complex_vjp=True, jvp=_part_jvp("imag"))
declare(conj_op, onnx=None, scalar_form="np.conjugate({0})", positional_out=True,
        complex_vjp=True, jvp=_part_jvp("conj"))
_PART_OPS = {"real": real_op, "imag": imag_op, "conj": conj_op}

real = call(real_op)
real.__doc__ = """The real part of ``x`` (``x`` itself when ``x`` is real).

Example:
    >>> import engine as en
    >>> en.real(en.tensor([1 + 2j])).tolist()
    [1.0]
"""
imag = call(imag_op)
imag.__doc__ = """The imaginary part of ``x`` (zeros of ``x``'s dtype when ``x`` is real).

Example:
    >>> import engine as en
    >>> en.imag(en.tensor([1 + 2j])).tolist()
    [2.0]
"""
conj = call(conj_op)
conj.__doc__ = """The complex conjugate of ``x`` (``x`` when real).

Example:
    >>> import engine as en
    >>> en.conj(en.tensor([1 + 2j])).tolist()
    [(1-2j)]
"""
conjugate = conj
_also_named(conj, numpy="conjugate")


# ---- the other ops whose VJPs hold for complex values -------------------------------------------
# Linear maps and holomorphic functions: their VJPs multiply by the derivative, never
# conjugate, never take a real-only branch, so they are right under JAX's convention
# too; cast takes the real part back to a real input, and abs has a complex branch in
# its VJP. Declared here, where the convention is defined, so the list is read in one
# place. sign, where, pow and the comparisons are left out: their VJPs are real-only,
# and a gradient through complex values that reaches them raises.
def _declare_complex_vjps():
    for name in ("add", "sub", "mul", "div", "neg", "square", "exp", "sum", "mean",
                 "reshape", "transpose", "broadcast_to", "expand_dims", "squeeze", "getitem",
                 "concat", "stack", "abs", "cast"):
        declare(REGISTRY[name], complex_vjp=True)


_declare_complex_vjps()
