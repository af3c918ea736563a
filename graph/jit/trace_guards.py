"""The guards of one ``en.function``: the Python state its traces baked in.

A trace that ran a module (or read its ``training``) computed with the module's
settings of that moment (see :mod:`engine.trace_state`). :class:`TraceGuards`
remembers, per call signature, which such objects its traces used, and turns a
signature key into the full cache key: the signature alone when the traces used
none, else ``("guarded", signature, their state)``. A call after a change of
state (``m.eval()``) thus misses the cache and retraces, and the retrace log says
which setting changed; each state's trace stays cached.

Example:
    >>> import engine as en
    >>> m = en.nn.Dropout(0.5)
    >>> f = en.function(lambda x: m(x))
    >>> _ = f(en.ones((4,))); _ = m.eval(); f(en.ones((4,))).numpy()
    array([1., 1., 1., 1.])
    >>> f.trace_count
    2
"""
from engine import trace_state

from ..ir.signature import describe_change as describe_signature_change


class TraceGuards:
    """Which guarded objects the traces of each signature used, and the full cache keys."""

    def __init__(self):
        self._used = {}             # signature key -> the objects its traces used, in order
        self._memo_version = None   # trace_state.version() when _memo was filled
        self._memo = {}             # signature key -> the full key at _memo_version

    def key(self, signature):
        """The full cache key of a call with this signature key, in the current state."""
        used = self._used.get(signature)
        if not used:
            return signature
        version = trace_state.version()
        if version != self._memo_version:     # some state was set: look again
            self._memo = {}
            self._memo_version = version
        full = self._memo.get(signature)
        if full is None:
            full = self._memo[signature] = ("guarded", signature, trace_state.state_of(used))
        return full

    def after_trace(self, signature, found):
        """Add the objects a trace of ``signature`` used (``found``); the key to keep it under."""
        used = self._used.get(signature, ())
        seen = {id(obj) for obj in used}
        new = tuple(obj for obj in found if id(obj) not in seen)
        if new:
            self._used[signature] = used + new
            self._memo.pop(signature, None)
        return self.key(signature)

    def describe(self, old, new):
        """What changed between two full keys, for the retrace log."""
        old_sig, new_sig = _signature(old), _signature(new)
        if old_sig != new_sig:
            if "input_signature" in (old_sig[0], new_sig[0]):
                return "the back end of the tensors changed"
            return describe_signature_change(old_sig, new_sig)
        return trace_state.describe_change(self._used.get(new_sig, ()), _state(old), _state(new))


def _is_guarded(key):
    return type(key) is tuple and len(key) == 3 and key[0] == "guarded"


def _signature(key):
    return key[1] if _is_guarded(key) else key


def _state(key):
    return key[2] if _is_guarded(key) else ()
