"""The time loop of the recurrent layers: ``en.scan``, handed over by the facade.

``en.scan`` is graph mode's loop (graph/control/control_flow.py). The core imports no
mode, so the facade hands the function over when it wires the modes in
(engine/__init__.py calls :func:`use_scan`); ``RNN`` and the PyTorch-style layers
(``LSTM``, ``GRU``, ``SimpleRNN``) loop with it: eagerly a Python loop, traced one node.

Example:
    >>> import engine as en
    >>> scan()(lambda c, x: (c + x, c), en.tensor(0.0), en.tensor([1.0, 2.0]))[0].numpy()
    array(3.)
"""
from ..errors import EngineError

_SCAN = [None]


def use_scan(scan_fn):
    """Set the ``scan(fn, init, xs, reverse=)`` the recurrent layers loop with."""
    _SCAN[0] = scan_fn


def scan():
    """The registered ``scan``; an error naming the fix before the facade has set it."""
    if _SCAN[0] is None:
        raise EngineError("en.nn: no scan registered for the recurrent layers; import engine "
                          "(the facade) first")
    return _SCAN[0]
