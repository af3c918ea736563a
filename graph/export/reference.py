"""Saved functions that can be checked: reference inputs and outputs, and their tolerance.

``en.save(fn, path, *example_args, reference=True)`` stores the example arguments and
the outputs the saved graph computes for them, with a tolerance (``tolerance=(rtol,
atol)``, by default from the outputs' dtypes: :func:`default_tolerance`).
``en.load(path, verify=True)`` runs the loaded graph on the stored inputs and refuses the
file (:class:`VerificationError`) when an output differs by more than the tolerance on
this machine; ``f.verify()`` checks a loaded function at any time and returns a
:class:`VerificationReport`.

In the file the reference is one more JSON field, its arrays the last entries of the
array table::

    "reference": {"inputs": [5, 6], "outputs": [7], "rtol": 1e-05, "atol": 1e-06}

Example:
    >>> import os, tempfile
    >>> import engine as en
    >>> path = os.path.join(tempfile.mkdtemp(), "model")
    >>> en.save(lambda x: en.tanh(x) * 2.0, path, en.tensor([0.5, 1.0]), reference=True)
    >>> en.load(path, verify=True).verify().ok
    True
"""
import math

import numpy as np

from engine.errors import EngineError, VerificationError
from engine.pytree import flatten
from engine.tensor import Tensor

from ..ir.signature import signature_of

# Relative and absolute tolerance per output dtype: a few units in the last place of the
# dtype's precision (what another machine's BLAS or libm may change), scaled by the
# largest reference magnitude for the absolute part.
_RTOL = {np.dtype("float16"): 1e-2, np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-12,
         np.dtype("complex64"): 1e-5, np.dtype("complex128"): 1e-12}
# Another runtime (onnxruntime) has its own kernels: its own libm, vectorized reductions.
OTHER_RUNTIME_RTOL = {np.dtype("float16"): 1e-2, np.dtype("float32"): 1e-4,
                      np.dtype("float64"): 1e-9, np.dtype("complex64"): 1e-4,
                      np.dtype("complex128"): 1e-9}


class VerificationReport:
    """What ``verify`` found: ``ok``, the largest absolute and relative differences, the
    output (by index) where the worst one is, and the tolerance."""

    def __init__(self, ok, max_abs, max_rel, worst, rtol, atol):
        self.ok, self.max_abs, self.max_rel, self.worst = ok, max_abs, max_rel, worst
        self.rtol, self.atol = rtol, atol

    def __repr__(self):
        verdict = "ok" if self.ok else "MISMATCH"
        return (f"<verification {verdict}: largest difference {self.max_abs:.3g} (relative "
                f"{self.max_rel:.3g}) at output {self.worst}; tolerance rtol={self.rtol:g}, "
                f"atol={self.atol:g}>")


def default_tolerance(outputs, table=None):
    """``(rtol, atol)`` for reference ``outputs`` (numpy arrays): the loosest dtype's
    relative tolerance (from ``table``, by dtype), and that times the largest magnitude
    as the absolute one (integers and booleans: exact)."""
    table = table or _RTOL
    floats = [o for o in outputs if o.dtype in table]
    if not floats:
        return 0.0, 0.0
    rtol = max(table[o.dtype] for o in floats)
    scale = max((float(np.max(np.abs(o))) for o in floats if o.size and
                 np.isfinite(o).all()), default=1.0)
    return rtol, rtol * max(scale, 1.0)


def reference_for(concrete, example_args, tolerance):
    """``(inputs, outputs, rtol, atol)`` for a saved graph: the example arguments' tensors
    (as the loaded function takes them) and what ``concrete`` computes for them."""
    if not example_args:
        raise EngineError("en.save(reference=True): give example arguments; they are stored "
                          "as the reference inputs")
    _, tensors, _, _ = signature_of(example_args, {})
    inputs = [np.array(t.numpy()) for t in tensors]
    outputs = [np.array(o.numpy()) if isinstance(o, Tensor) else np.asarray(o)
               for o in flatten(concrete([Tensor(a) for a in inputs]))[0]]
    if tolerance is None:
        rtol, atol = default_tolerance(outputs)
    else:
        rtol, atol = _tolerance(tolerance)
    return inputs, outputs, rtol, atol


def _tolerance(tolerance):
    try:
        rtol, atol = (float(v) for v in tolerance)
    except (TypeError, ValueError):
        raise EngineError(f"en.save: tolerance must be (rtol, atol), got {tolerance!r}") from None
    if not (rtol >= 0 and atol >= 0 and math.isfinite(rtol) and math.isfinite(atol)):
        raise EngineError(f"en.save: tolerance must be two finite numbers >= 0, got "
                          f"{tolerance!r}")
    return rtol, atol


def reference_doc(first, n_inputs, n_outputs, rtol, atol):
    """The ``reference`` JSON field for arrays numbered from ``first`` on."""
    return {"inputs": list(range(first, first + n_inputs)),
            "outputs": list(range(first + n_inputs, first + n_inputs + n_outputs)),
            "rtol": rtol, "atol": atol}


def verify(fn, inputs, outputs, rtol, atol):
    """Run ``fn`` on the reference ``inputs`` (tensors); compare with ``outputs``
    (numpy arrays): a :class:`VerificationReport`."""
    got = [np.asarray(o.numpy()) if isinstance(o, Tensor) else np.asarray(o)
           for o in flatten(fn(*inputs))[0]]
    return compare(got, outputs, rtol, atol)


def compare(got, outputs, rtol, atol):
    """Compare arrays ``got`` with the reference ``outputs``: a report."""
    if len(got) != len(outputs):
        return VerificationReport(False, math.inf, math.inf, None, rtol, atol)
    worst, max_abs, max_rel, ok = None, 0.0, 0.0, True
    for k, (g, want) in enumerate(zip(got, outputs)):
        if g.shape != want.shape or g.dtype != want.dtype:
            return VerificationReport(False, math.inf, math.inf, k, rtol, atol)
        diff = _difference(g, want)
        if diff.size:
            big = float(np.max(diff))
            rel = float(np.max(diff / np.maximum(np.abs(np.nan_to_num(want)), 1e-300)))
            if worst is None or big > max_abs:
                worst, max_abs = k, big
            max_rel = max(max_rel, rel)
            bound = atol + rtol * np.abs(np.nan_to_num(want)) if want.dtype.kind in "fc" else 0
            ok = ok and bool(np.all(diff <= bound))
    return VerificationReport(ok, max_abs, max_rel, worst, rtol, atol)


def _difference(got, want):
    """``|got - want|`` elementwise, in float64: 0 where both are NaN (or the same
    infinity), infinite where only one is NaN."""
    if want.dtype.kind not in "fc":
        return (got != want).astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(got.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
                      - want).astype(np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    return np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))


def refuse(name, report):
    """The error for a file whose reference does not reproduce on this machine."""
    return VerificationError(
        f"{name}: the saved reference outputs are not reproduced on this machine: output "
        f"{report.worst} differs by {report.max_abs:.3g} (relative {report.max_rel:.3g}), beyond "
        f"the stored tolerance rtol={report.rtol:g}, atol={report.atol:g}; the file may be "
        f"damaged, or this machine computes the graph differently")
