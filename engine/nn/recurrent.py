"""Recurrent cells: :class:`LSTMCell`, :class:`GRUCell`, :class:`RNNCell`, and :class:`RNN`,
which runs a cell over a sequence (an ``en.scan``, so one loop node in graphs).

A cell maps ``(x, state) -> (output, new_state)``; the gate equations are
PyTorch's (``torch.nn.LSTMCell``, ``torch.nn.GRUCell``, ``torch.nn.RNNCell``)
with weights laid out ``(in, gates * hidden)`` and the gates in PyTorch's
order. ``returns="state"`` makes a cell return its new state alone, as
PyTorch's cells do. The multi-layer, bidirectional layers (``LSTM``, ``GRU``,
``SimpleRNN``) are in :mod:`engine.nn.rnn_layers`.

Example:
    >>> import engine as en
    >>> rnn = en.nn.RNN(en.nn.GRUCell(3, 5, generator=0))
    >>> outputs, last = rnn(en.ones((2, 7, 3), dtype="float32"))   # (batch, time, features)
    >>> outputs.shape, last.shape
    ((2, 7, 5), (2, 5))
"""
import numpy as np

from .. import default_dtype, ops
from ..errors import ArgumentTypeError, InvalidArgumentError, ShapeError, UnimplementedError
from ..variable import Variable
from . import init as initializers
from .layers import _generator, _positive_int
from .module import Module, input_error
from .rnn_layers import SimpleRNN, gru_update
# en.scan, handed over by the facade (engine/__init__.py calls use_scan here).
from .scan_loop import scan as _scan, use_scan  # noqa: F401


# What calling a cell returns: (output, state) for RNN, or PyTorch's cells' new state alone.
_RETURNS = ("output_and_state", "state")


class _Cell(Module):
    """Shared parts: weights ``weight_ih (in, G*H)``, ``weight_hh (H, G*H)``, two biases."""

    gates = 1
    # PyTorch's weights are (G*H, in) and (G*H, H), gates in the same order as here.
    _torch_layout = {"weight_ih": (1, 0), "weight_hh": (1, 0)}

    def __init__(self, input_size, hidden_size, bias, dtype, generator, name,
                 returns="output_and_state"):
        super().__init__()
        dtype = default_dtype.model_float(dtype)   # float32 unless set
        if returns not in _RETURNS:
            raise InvalidArgumentError(f"{type(self).__name__}: returns must be one of "
                                       f"{_RETURNS}, got {returns!r}")
        self.returns = returns
        self.input_size = _positive_int(type(self).__name__, "input_size", input_size)
        self.hidden_size = _positive_int(type(self).__name__, "hidden_size", hidden_size)
        gen = _generator(generator)
        g = self.gates * hidden_size
        self.weight_ih = Variable(initializers.glorot_uniform((input_size, g), dtype, gen),
                                  name=f"{name}/weight_ih")
        # One orthogonal block per gate keeps each gate's recurrence well conditioned.
        blocks = [initializers.orthogonal((hidden_size, hidden_size), dtype, gen)
                  for _ in range(self.gates)]
        self.weight_hh = Variable(np.concatenate(blocks, axis=1), name=f"{name}/weight_hh")
        self.bias_ih: Variable | None
        self.bias_hh: Variable | None
        if bias:
            self.bias_ih = Variable(initializers.zeros((g,), dtype), name=f"{name}/bias_ih")
            self.bias_hh = Variable(initializers.zeros((g,), dtype), name=f"{name}/bias_hh")
        else:
            self.bias_ih = self.bias_hh = None

    def params(self):
        """The weights read once as tensors (what :meth:`step` takes)."""
        read = [None if v is None else v.read()
                for v in (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)]
        return tuple(read)

    def _projections(self, params, x, h):
        w_ih, w_hh, b_ih, b_hh = params
        gi, gh = ops.matmul(x, w_ih), ops.matmul(h, w_hh)
        if b_ih is not None:
            gi, gh = ops.add(gi, b_ih), ops.add(gh, b_hh)
        return gi, gh

    def _check_input(self, x):
        if x.ndim != 2 or x.shape[-1] != self.input_size:
            raise input_error(ShapeError, f"{type(self).__name__}: expected inputs of shape "
                                          f"(batch, {self.input_size})", x)

    def zeros_state(self, x):
        """A zero hidden vector per row of ``x`` (works for an unknown batch size)."""
        column = ops.zeros_like(ops.getitem(x, (slice(None), slice(0, 1))))
        return ops.add(column, ops.zeros((self.hidden_size,), dtype=x.dtype))

    def initial_state(self, x):
        """The state before the first step for inputs ``x`` (each cell defines it)."""
        raise UnimplementedError(f"{type(self).__name__} must define initial_state()")

    def step(self, params, x, state):
        """``(output, new state)`` for inputs ``x`` (each cell defines it)."""
        raise UnimplementedError(f"{type(self).__name__} must define step()")

    def forward(self, x, state=None):
        """``(output, new state)``; only the new state with ``returns="state"`` (PyTorch's
        cells: ``(h, c)`` for LSTMCell, ``h`` for GRUCell and RNNCell)."""
        self._check_input(x)
        if state is None:
            state = self.initial_state(x)
        output, new_state = self.step(self.params(), x, state)
        return new_state if self.returns == "state" else (output, new_state)

    def extra_repr(self):
        own = f"{self.input_size}, {self.hidden_size}, bias={self.bias_ih is not None}"
        return own + (", returns='state'" if self.returns == "state" else "")


class LSTMCell(_Cell):
    """Long short-term memory (Hochreiter and Schmidhuber); state ``(h, c)``, output ``h``::

        i, f, g, o = split(x @ W_ih + b_ih + h @ W_hh + b_hh, 4)
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g);   h' = sigmoid(o) * tanh(c')

    Calling it returns ``(h', (h', c'))``, the output and the state (what
    :class:`RNN` loops over); ``returns="state"`` returns ``(h', c')`` as
    ``torch.nn.LSTMCell`` does.

    Example:
        >>> import engine as en
        >>> cell = en.nn.LSTMCell(3, 4, returns="state", generator=0)
        >>> h, c = cell(en.ones((2, 3), "float32"))
        >>> h.shape, c.shape
        ((2, 4), (2, 4))
    """

    gates = 4

    def __init__(self, input_size, hidden_size, bias=True, dtype=None, generator=None,
                 name="lstm_cell", returns="output_and_state"):
        super().__init__(input_size, hidden_size, bias, dtype, generator, name, returns)

    def initial_state(self, x):
        z = self.zeros_state(x)
        return (z, z)

    def step(self, params, x, state):
        h, c = state
        gi, gh = self._projections(params, x, h)
        i, f, g, o = ops.split(ops.add(gi, gh), 4, axis=-1)
        c_new = ops.add(ops.mul(ops.sigmoid(f), c), ops.mul(ops.sigmoid(i), ops.tanh(g)))
        h_new = ops.mul(ops.sigmoid(o), ops.tanh(c_new))
        return h_new, (h_new, c_new)


class GRUCell(_Cell):
    """Gated recurrent unit (Cho et al.); state and output ``h``::

        r = sigmoid(xr + hr);  z = sigmoid(xz + hz);  n = tanh(xn + r * hn)
        h' = (1 - z) * n + z * h
    where ``x @ W_ih + b_ih = [xr, xz, xn]`` and ``h @ W_hh + b_hh = [hr, hz, hn]``.
    Calling it returns ``(h', h')``; ``returns="state"`` returns ``h'`` as
    ``torch.nn.GRUCell`` does.
    """

    gates = 3

    def __init__(self, input_size, hidden_size, bias=True, dtype=None, generator=None,
                 name="gru_cell", returns="output_and_state"):
        super().__init__(input_size, hidden_size, bias, dtype, generator, name, returns)

    def initial_state(self, x):
        return self.zeros_state(x)

    def step(self, params, x, h):
        gi, gh = self._projections(params, x, h)
        h_new = gru_update(gi, gh, h)
        return h_new, h_new


class RNNCell(_Cell):
    """Elman cell (PyTorch's ``torch.nn.RNNCell``): ``h' = nonlinearity(x @ W_ih + b_ih +
    h @ W_hh + b_hh)``, ``nonlinearity`` ``"tanh"`` or ``"relu"``. Calling it returns
    ``(h', h')``; ``returns="state"`` returns ``h'`` as PyTorch's does.

    Example:
        >>> import engine as en
        >>> cell = en.nn.RNNCell(3, 4, nonlinearity="relu", returns="state", generator=0)
        >>> cell(en.ones((2, 3), "float32")).shape
        (2, 4)
    """

    gates = 1

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", dtype=None,
                 generator=None, name="rnn_cell", returns="output_and_state"):
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                                       f"{nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, dtype, generator, name, returns)
        self.nonlinearity = nonlinearity

    def initial_state(self, x):
        return self.zeros_state(x)

    def step(self, params, x, h):
        gi, gh = self._projections(params, x, h)
        pre = ops.add(gi, gh)
        h_new = ops.tanh(pre) if self.nonlinearity == "tanh" else ops.relu(pre)
        return h_new, h_new


class RNN(Module):
    """Run ``cell`` over the time axis of ``x``: returns ``(outputs, final_state)``.

    ``x`` is ``(batch, time, features)`` (``batch_first=True``, the default)
    or ``(time, batch, features)``; ``outputs`` stacks the cell's output at
    every step in the same layout. The loop is an ``en.scan``: eagerly a
    Python loop, traced a single loop node, differentiable in both. The
    cell's weights are read once per call, before the loop.
    """

    def __new__(cls, *args, **kwargs):
        # RNN(input_size, hidden_size, ...) with sizes is PyTorch's layer: a SimpleRNN.
        first = args[0] if args else kwargs.get("input_size")
        if cls is RNN and isinstance(first, int) and not isinstance(first, bool):
            return SimpleRNN(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, cell, batch_first=True, reverse=False):
        super().__init__()
        if not isinstance(cell, _Cell):
            raise ArgumentTypeError(f"RNN: cell must be an LSTMCell, GRUCell or RNNCell, got "
                                    f"{type(cell).__name__}")
        self.cell = cell
        self.batch_first = bool(batch_first)
        self.reverse = bool(reverse)

    def forward(self, x, initial_state=None):
        if x.ndim != 3 or x.shape[-1] != self.cell.input_size:
            layout = "(batch, time, features)" if self.batch_first else "(time, batch, features)"
            raise input_error(ShapeError, f"RNN: expected inputs {layout} with "
                                          f"{self.cell.input_size} features", x)
        xs = ops.transpose(x, (1, 0, 2)) if self.batch_first else x
        if initial_state is None:
            initial_state = self.cell.initial_state(ops.getitem(xs, 0))
        params = self.cell.params()
        scan = _scan()
        final, ys = scan(lambda state, x_t: _swap(self.cell.step(params, x_t, state)),
                         initial_state, xs, reverse=self.reverse)
        outputs = ops.transpose(ys, (1, 0, 2)) if self.batch_first else ys
        return outputs, final

    def _compute_dtype(self):
        return self.cell._compute_dtype()   # the cell's weights run the loop

    def extra_repr(self):
        return f"batch_first={self.batch_first}" + (", reverse=True" if self.reverse else "")


def _swap(out_and_state):
    output, state = out_and_state
    return state, output
