"""Op-database entries for the complex parts (``real``, ``imag``, ``conj``) and the
Fourier transforms of ``engine.fft`` (the registry ops ``fft``, ``ifft``, ``rfft``,
``irfft`` and the public functions over them), against ``numpy`` and
``numpy.fft``. Samples are real arrays of each claimed dtype and, for the float
dtypes, complex ones of the matching precision; the gradient suite differentiates
complex results through the real part of their product with a complex cotangent."""
import numpy as np

import engine as en

from op_db.core import ALL, F32, F64, ErrorInput, OpInfo, Sample, add, composite, make, op_dtypes


_COMPLEX_OF = {F32: np.dtype("complex64"), F64: np.dtype("complex128")}


def _complex(rng, shape, dtype):
    return (make(rng, shape, F64) + 1j * make(rng, shape, F64)).astype(_COMPLEX_OF[dtype])


def _arrays(dtype, rng, shapes, complex_too=True):
    """Real arrays of ``dtype`` for each shape, then complex ones for a float dtype."""
    for shape in shapes:
        yield make(rng, shape, dtype)
    if complex_too and dtype in _COMPLEX_OF:
        for shape in shapes:
            yield _complex(rng, shape, dtype)


# ---- real, imag, conj -----------------------------------------------------------------------
def _part_samples(dtype, rng):
    for x in _arrays(dtype, rng, [(3,), (2, 3), (), (0, 2)]):
        yield Sample((x,))


for _name, _ref in (("real", np.real), ("imag", np.imag), ("conj", np.conjugate)):
    add(OpInfo(_name, getattr(en, _name), _ref, _part_samples, op_dtypes(_name),
               error_inputs=lambda: [ErrorInput(Sample(("a",)), en.DTypeError)]))
composite(OpInfo("conjugate", en.conjugate, np.conjugate, _part_samples, ALL))


# ---- the transforms ---------------------------------------------------------------------------
def _fftn_samples(real_only=False, inverse_real=False):
    def gen(dtype, rng):
        cases = [((8,), {}), ((5,), {}), ((3, 4), {}), ((3, 4), dict(axes=(0,))),
                 ((2, 3, 4), dict(axes=(0, 2), norm="ortho")),
                 ((4, 6), dict(s=(3, 8), axes=(0, 1), norm="forward")),
                 ((4, 6), dict(s=(5,), axes=(0,))),
                 ((2, 5), dict(axes=(-1, 0), norm="backward")), ((0, 4), dict(axes=(1,)))]
        for shape, kw in cases:
            if inverse_real and kw.get("s") is None and shape[kw.get("axes", (-1,))[-1]] < 2:
                continue
            for x in _arrays(dtype, rng, [shape], complex_too=not real_only):
                yield Sample((x,), dict(kw))
    return gen


def _errors(name, fn_takes_s=True, real_only=False):
    def errors():
        x = np.ones((3, 4))
        out = [ErrorInput(Sample((x,), dict(axes=(2,))), en.ShapeError, name),
               ErrorInput(Sample((x,), dict(axes=(0, 0))), en.ShapeError, name),
               ErrorInput(Sample((x,), dict(s=(0,), axes=(1,))), en.ShapeError, name),
               ErrorInput(Sample((x,), dict(s=(2, 3), axes=(1,))), en.ShapeError, name),
               ErrorInput(Sample((x,), dict(norm="sideways")), en.DomainError, name),
               ErrorInput(Sample((np.ones(()),)), en.ShapeError, name)]
        if real_only:
            out.append(ErrorInput(Sample((x + 1j,)), en.DTypeError, "rfft"))
        return out
    return errors


add(OpInfo("fft", en.fft.fftn, np.fft.fftn, _fftn_samples(), op_dtypes("fft"),
           error_inputs=_errors("fftn")))
add(OpInfo("ifft", en.fft.ifftn, np.fft.ifftn, _fftn_samples(), op_dtypes("ifft"),
           error_inputs=_errors("ifftn")))
add(OpInfo("rfft", en.fft.rfftn, np.fft.rfftn, _fftn_samples(real_only=True),
           op_dtypes("rfft"), error_inputs=_errors("rfftn", real_only=True)))
add(OpInfo("irfft", en.fft.irfftn, np.fft.irfftn, _fftn_samples(inverse_real=True),
           op_dtypes("irfft"), error_inputs=lambda: _errors("irfftn")() + [
               ErrorInput(Sample((np.ones((3, 1)),)), en.ShapeError, "irfft")]))


def _one_axis_samples(real_only=False, inverse_real=False):
    def gen(dtype, rng):
        cases = [((8,), {}), ((7,), dict(n=4)), ((3, 5), dict(axis=0)),
                 ((3, 5), dict(n=9, axis=-2, norm="ortho")), ((2, 6), dict(norm="forward")),
                 ((4, 3), dict(n=1, axis=1)), ((0, 3), {})]
        for shape, kw in cases:
            if inverse_real and kw.get("n") is None and shape[kw.get("axis", -1)] < 2:
                continue
            for x in _arrays(dtype, rng, [shape], complex_too=not real_only):
                yield Sample((x,), dict(kw))
    return gen


def _one_axis_errors(name, real_only=False):
    def errors():
        x = np.ones((3, 4))
        out = [ErrorInput(Sample((x,), dict(axis=2)), en.ShapeError, name),
               ErrorInput(Sample((x,), dict(n=0)), en.ShapeError, name),
               ErrorInput(Sample((x,), dict(n=2.5)), en.ShapeError, name),
               ErrorInput(Sample((x,), dict(norm="both")), en.DomainError, name)]
        if real_only:
            out.append(ErrorInput(Sample((x + 1j,)), en.DTypeError, name))
        return out
    return errors


for _name, _real_only, _inverse_real in (("fft", False, False), ("ifft", False, False),
                                         ("rfft", True, False), ("irfft", False, True),
                                         ("hfft", False, True), ("ihfft", True, False)):
    composite(OpInfo(f"fft.{_name}", getattr(en.fft, _name), getattr(np.fft, _name),
                     _one_axis_samples(_real_only, _inverse_real), ALL,
                     error_inputs=_one_axis_errors(_name, _real_only)))


def _two_axes_samples(real_only=False):
    def gen(dtype, rng):
        for shape, kw in [((4, 6), {}), ((2, 3, 4), {}), ((4, 6), dict(s=(3, 8))),
                          ((3, 4, 5), dict(axes=(0, 2), norm="ortho"))]:
            for x in _arrays(dtype, rng, [shape], complex_too=not real_only):
                yield Sample((x,), dict(kw))
    return gen


for _name, _real_only in (("fft2", False), ("ifft2", False), ("rfft2", True), ("irfft2", False)):
    composite(OpInfo(f"fft.{_name}", getattr(en.fft, _name), getattr(np.fft, _name),
                     _two_axes_samples(_real_only), ALL, error_inputs=lambda n=_name: [
                         ErrorInput(Sample((np.ones(3),)), en.ShapeError, n)]))
