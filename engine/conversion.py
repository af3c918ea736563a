"""The functions a transformation is handed, converted like the function being traced.

``en.function`` converts the Python control flow of the function it traces
(AutoGraph). A function handed to ``en.grad``, ``en.jvp``, ``en.vmap``,
``en.checkpoint``, ``en.cond``, ``en.scan`` or ``en.while_loop`` inside that
trace (``en.function(en.grad(loss))``, where ``loss`` has an ``if`` on a
tensor) is the user's code too: the transformation runs it through
:func:`user_function`, which converts it while a converting trace is running
and returns it unchanged everywhere else (eagerly, under ``autograph=False``).

The core does not import the graph package: ``en.function`` installs its
converter for the length of a trace with :func:`converting` (TensorFlow's
AutoGraph passes its "control status" to ``tf.map_fn`` and friends the same way).

Example:
    >>> from engine.conversion import converting, user_function
    >>> f = lambda x: x
    >>> user_function(f) is f          # no trace is converting
    True
    >>> with converting(lambda fn: "converted"):
    ...     user_function(f)
    'converted'
"""
import contextlib
import contextvars

_CONVERTER = contextvars.ContextVar("engine_converter", default=None)


def user_function(fn):
    """``fn`` converted by the converter of the trace running now (``fn`` itself when
    none is converting)."""
    convert = _CONVERTER.get()
    return fn if convert is None else convert(fn)


@contextlib.contextmanager
def converting(convert):
    """Run a block with ``convert`` (a function of a function, or None for none) applied
    by :func:`user_function`; restored afterwards."""
    token = _CONVERTER.set(convert)
    try:
        yield
    finally:
        _CONVERTER.reset(token)
