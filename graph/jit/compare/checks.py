"""Checked calls: ``en.function(..., shadow=True)`` and ``en.function(..., validate=N)``.

A checked trace compares chosen calls against eager mode, node by node, before it
returns their results (``compare.py``), and raises :class:`engine.NumericsError` naming
the first diverging node and the user's line when one diverges. ``shadow=True`` (or
``en.config.shadow`` when the trace is made) checks every call; ``validate=N`` checks
the first ``N`` calls of each trace, then every ``VALIDATE_EVERY``-th call (a sample:
a compiled graph that turned wrong later, a kernel swapped in once hot, is still seen).
An unchecked trace pays nothing: the checks replace the trace's entry points.
"""
from engine.errors import NumericsError
from engine.recording import no_tapes

from ...lowering.executor import MISS
from .compare import compare_concrete

VALIDATE_EVERY = 100


class DivergenceError(NumericsError):
    """A checked call diverged from eager mode; ``report`` is the whole comparison."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


def _miss(args):
    return MISS


class CallChecks:
    """The checks of one trace: which calls, and the last report (``last_report``)."""

    def __init__(self, concrete, first, every, make_function):
        self.concrete = concrete
        self.first = first          # None: every call
        self.every = every
        self.make_function = make_function
        self.calls = 0
        self.checked = 0
        self.last_report = None

    def due(self):
        """Count a call; whether it is one to check."""
        self.calls += 1
        return self.first is None or self.calls <= self.first or self.calls % self.every == 0

    def check(self, tensors):
        """Compare this call; raise ``NumericsError`` when the graph diverges."""
        with no_tapes():     # the eager and float64 runs must not be recorded
            report = compare_concrete(self.concrete, [t._value for t in tensors],
                                      self.make_function)
        self.checked += 1
        self.last_report = report
        if not report.ok:
            raise DivergenceError(f"{self.concrete.name}: call {self.calls} of this trace "
                                  f"diverges from eager mode at\n{report.first}\n"
                                  "(its report attribute is the whole comparison)", report)

    def wrap(self, entry):
        def checked_entry(tensors):
            if self.due():
                self.check(tensors)
            return entry(tensors)
        return checked_entry


def install(concrete, first, every, make_function):
    """Check calls of ``concrete`` (``first``: how many, None for all; then every
    ``every``-th). Returns the :class:`CallChecks`."""
    checks = CallChecks(concrete, first, every, make_function)
    concrete.entry = checks.wrap(concrete.entry)
    if concrete.guarded_entry is not None:
        concrete.guarded_entry = _miss   # callers fall back to ``entry``
    concrete.checks = checks
    return checks
