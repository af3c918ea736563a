"""PyTorch's recurrent layers: :class:`LSTM`, :class:`GRU` and :class:`SimpleRNN` (tanh/relu).

Same arguments (``input_size, hidden_size, num_layers, bias, batch_first,
dropout, bidirectional``), gate order (LSTM ``i, f, g, o``; GRU ``r, z, n``
with ``r`` applied to ``h @ W_hn + b_hn``), initial states, results
(``(output, (h_n, c_n))`` for LSTM, ``(output, h_n)`` for the others) and
variable names (``weight_ih_l0``, ``weight_hh_l0``, ``bias_ih_l0``,
``bias_hh_l0``, ``..._reverse``) as ``torch.nn.LSTM`` and friends. Weights
are laid out ``(in, gates * hidden)``, PyTorch's transposed, as everywhere in
``en.nn``; ``en.nn.load_torch_state_dict`` transposes them.

Each layer projects the whole input sequence through ``W_ih`` in one matrix
product before the loop; the loop itself, both directions together, is one
``en.scan`` per layer (one scan node per layer when traced).
``en.nn.RNN(input_size, hidden_size, ...)`` with sizes builds a
:class:`SimpleRNN`; ``en.nn.RNN(cell)`` still runs a cell.

Example:
    >>> import engine as en
    >>> lstm = en.nn.LSTM(3, 5, num_layers=2, batch_first=True, generator=0)
    >>> out, (h, c) = lstm(en.ones((4, 7, 3), dtype="float32"))            # (batch, time, features)
    >>> out.shape, h.shape, c.shape
    ((4, 7, 5), (2, 4, 5), (2, 4, 5))
"""
import math

from .. import default_dtype, ops
from ..errors import InvalidArgumentError, ShapeError, UnimplementedError
from ..tensor import Tensor, tensor
from ..variable import Variable
from . import functional as F
from . import init as initializers
from .sdpa import _fail
from .layers import _generator, _positive_int, _seeded_from_default
from .module import Module
from .scan_loop import scan as _scan

# load_torch_state_dict reads a class-level table; the names depend on num_layers, so it
# lists every name up to a depth no real model reaches.
_MAX_LAYERS = 64
_TRANSPOSED = {f"weight_{kind}_l{layer}{suffix}": (1, 0) for kind in ("ih", "hh")
               for layer in range(_MAX_LAYERS) for suffix in ("", "_reverse")}


def gru_update(gi, gh, h):
    """The GRU's new state from the input's and the state's projections ``gi``, ``gh``
    (gates in PyTorch's order r, z, n) and the state ``h``; ``r`` scales the state's
    projection of ``n`` with its bias, as PyTorch's does."""
    xr, xz, xn = ops.split(gi, 3, axis=-1)
    hr, hz, hn = ops.split(gh, 3, axis=-1)
    r = ops.sigmoid(ops.add(xr, hr))
    z = ops.sigmoid(ops.add(xz, hz))
    n = ops.tanh(ops.add(xn, ops.mul(r, hn)))
    return ops.add(ops.mul(ops.sub(1.0, z), n), ops.mul(z, h))

class _RecurrentLayer(Module):
    """The shared parts: the variables, the states, the layer and direction loops."""

    gates = 1
    _torch_layout = _TRANSPOSED

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=None, generator=None, name="rnn"):
        super().__init__()
        who = type(self).__name__
        dtype = default_dtype.model_float(dtype)
        self.input_size = _positive_int(who, "input_size", input_size)
        self.hidden_size = _positive_int(who, "hidden_size", hidden_size)
        self.num_layers = _positive_int(who, "num_layers", num_layers)
        if num_layers > _MAX_LAYERS:
            raise InvalidArgumentError(f"{who}: at most {_MAX_LAYERS} layers, got {num_layers}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
                or not 0.0 <= dropout < 1.0:
            raise InvalidArgumentError(f"{who}: dropout must be in [0, 1), got {dropout!r}")
        self.bias = bool(bias)
        self.batch_first = bool(batch_first)
        self.dropout = float(dropout)
        self.bidirectional = bool(bidirectional)
        gen = _generator(generator)
        # PyTorch's init: every weight and bias uniform on [-1/sqrt(H), 1/sqrt(H)].
        bound = 1.0 / math.sqrt(hidden_size)
        width = self.gates * hidden_size
        for layer in range(num_layers):
            fan_in = input_size if layer == 0 else hidden_size * self.directions
            for suffix in self._suffixes():
                shapes: list[tuple[str, tuple[int, ...]]] = [
                    ("weight_ih", (fan_in, width)), ("weight_hh", (hidden_size, width))]
                if bias:
                    shapes += [("bias_ih", (width,)), ("bias_hh", (width,))]
                for kind, shape in shapes:
                    key = f"{kind}_l{layer}{suffix}"
                    setattr(self, key, Variable(initializers._uniform(shape, bound, dtype, gen),
                                                name=f"{name}/{key}"))
        # Private: the dropout's state variable is not a parameter.
        self._generator = gen if generator is not None else _seeded_from_default()

    @property
    def directions(self):
        return 2 if self.bidirectional else 1

    def _suffixes(self):
        return ("", "_reverse")[:self.directions]

    def _params(self, layer, suffix):
        """``(w_ih, w_hh, b_ih, b_hh)`` of one layer and direction, read once per call."""
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if self.bias else \
            ("weight_ih", "weight_hh")
        read = [getattr(self, f"{n}_l{layer}{suffix}").read() for n in names]
        return tuple(read) + (None, None) * (not self.bias)

    # -- the cell: each layer type defines it ----------------------------------------------
    def _step(self, gi, state, w_hh, b_hh):
        """``(h_new, state_new)`` from the projected input ``gi`` and the state."""
        raise UnimplementedError(f"{type(self).__name__} must define it")

    def _zero_state(self, like):
        """A zero ``(N, H)`` per row of ``like`` (an unknown batch size works)."""
        column = ops.zeros_like(ops.getitem(like, (slice(None), slice(0, 1))))
        return ops.add(column, ops.zeros((self.hidden_size,), dtype=like.dtype))

    # -- calling -----------------------------------------------------------------------------
    def _check_input(self, x):
        who = type(self).__name__
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            layout = "(N, L, H_in)" if self.batch_first else "(L, N, H_in)"
            raise _fail(ShapeError, who, f"expected inputs {layout} or unbatched (L, H_in) "
                        f"with H_in = {self.input_size}", input=x)

    def _check_state(self, h, label, batched, batch):
        who = type(self).__name__
        h = h if isinstance(h, (Tensor, Variable)) else tensor(h)
        want = (self.num_layers * self.directions,) + ((batch,) if batched else ()) + \
            (self.hidden_size,)
        if h.ndim != len(want) or any(a is not None and b is not None and a != b
                                      for a, b in zip(h.shape, want)):
            dims = ", ".join("?" if d is None else str(d) for d in want)
            raise _fail(ShapeError, who, f"{label} must be ({dims}) (num_layers * directions"
                        f"{', batch' if batched else ''}, hidden_size)", **{label: h})
        return h if batched else ops.expand_dims(h, 1)

    def _states(self, hx, x, batched):
        """The initial states as a list per (layer, direction) of this layer type's state."""
        raise UnimplementedError(f"{type(self).__name__} must define it")

    def _finals(self, finals):
        raise UnimplementedError(f"{type(self).__name__} must define it")

    def forward(self, input, hx=None):
        x = input if isinstance(input, (Tensor, Variable)) else tensor(input)
        self._check_input(x)
        batched = x.ndim == 3
        if not batched:
            x = ops.expand_dims(x, 1)
        elif self.batch_first:
            x = ops.swapaxes(x, 0, 1)
        # From here on (L, N, features), PyTorch's own layout.
        states = self._states(hx, x, batched)
        finals = []
        for layer in range(self.num_layers):
            x, last = self._run_layer(layer, x, states[layer * self.directions:
                                                      (layer + 1) * self.directions])
            finals.extend(last)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self._generator)
        h_n = self._finals(finals)
        if not batched:
            x = ops.getitem(x, (slice(None), 0))
            h_n = _map(lambda h: ops.getitem(h, (slice(None), 0)), h_n)
        elif self.batch_first:
            x = ops.swapaxes(x, 0, 1)
        return x, h_n

    def _run_layer(self, layer, x, states):
        """One layer, both directions in one scan: ``(outputs (L, N, D*H), final states)``."""
        params = [self._params(layer, s) for s in self._suffixes()]
        # The input projection of every step at once: one matrix product per direction.
        projected = [F.linear(x, w_ih, b_ih) for w_ih, _, b_ih, _ in params]
        if self.bidirectional:
            projected[1] = ops.flip(projected[1], axis=0)     # the reverse pass reads L-1 .. 0

        def step(carry, gis):
            new_states, outs = [], []
            for gi, state, (_, w_hh, _, b_hh) in zip(gis, carry, params):
                h_new, state_new = self._step(gi, state, w_hh, b_hh)
                new_states.append(state_new)
                outs.append(h_new)
            return tuple(new_states), tuple(outs)

        last, ys = _scan()(step, tuple(states), tuple(projected))
        ys = list(ys)
        if self.bidirectional:
            ys[1] = ops.flip(ys[1], axis=0)
        out = ys[0] if len(ys) == 1 else ops.concatenate(ys, axis=-1)
        return out, list(last)

    def extra_repr(self):
        parts = [f"{self.input_size}, {self.hidden_size}"]
        if self.num_layers != 1:
            parts.append(f"num_layers={self.num_layers}")
        for label, value, default in (("bias", self.bias, True),
                                      ("batch_first", self.batch_first, False),
                                      ("dropout", self.dropout, 0.0),
                                      ("bidirectional", self.bidirectional, False)):
            if value != default:
                parts.append(f"{label}={value}")
        return ", ".join(parts)


def _map(fn, value):
    return tuple(fn(v) for v in value) if isinstance(value, tuple) else fn(value)


def _projections(gi, h, w_hh, b_hh):
    gh = ops.matmul(h, w_hh)
    return gi, gh if b_hh is None else ops.add(gh, b_hh)


class _SingleState(_RecurrentLayer):
    """Layers whose state is ``h`` alone (GRU and the tanh/relu RNN)."""

    def _states(self, hx, x, batched):
        if hx is None:
            zero = self._zero_state(ops.getitem(x, 0))
            return [zero] * (self.num_layers * self.directions)
        h = self._check_state(hx, "hx", batched, x.shape[1])
        return list(ops.unstack(h, axis=0))

    def _finals(self, finals):
        return ops.stack(finals, axis=0)


class LSTM(_RecurrentLayer):
    """Long short-term memory layers (PyTorch's ``torch.nn.LSTM``)::

        i, f, g, o = split(x @ W_ih + b_ih + h @ W_hh + b_hh, 4)
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g);   h' = sigmoid(o) * tanh(c')

    ``forward(input, hx=None)`` with ``hx = (h_0, c_0)``, each ``(num_layers *
    directions, N, H)`` (zeros when None); returns ``(output, (h_n, c_n))``,
    ``output`` ``(L, N, directions * H)`` (``(N, L, ...)`` with ``batch_first``).

    Example:
        >>> import engine as en
        >>> lstm = en.nn.LSTM(2, 4, bidirectional=True, generator=0)
        >>> out, (h, c) = lstm(en.ones((6, 3, 2), dtype="float32"))            # (L, N, H_in)
        >>> out.shape, h.shape
        ((6, 3, 8), (2, 3, 4))
        >>> [name for name, _ in lstm.named_variables()][:4]
        ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
    """

    gates = 4

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, dtype=None, generator=None,
                 name="lstm"):
        if proj_size:
            raise UnimplementedError("LSTM: proj_size (projected hidden states) is not "
                                     "supported; build it with proj_size=0 and a Linear")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, dtype, generator, name)

    def _step(self, gi, state, w_hh, b_hh):
        h, c = state
        gi, gh = _projections(gi, h, w_hh, b_hh)
        i, f, g, o = ops.split(ops.add(gi, gh), 4, axis=-1)
        c_new = ops.add(ops.mul(ops.sigmoid(f), c), ops.mul(ops.sigmoid(i), ops.tanh(g)))
        h_new = ops.mul(ops.sigmoid(o), ops.tanh(c_new))
        return h_new, (h_new, c_new)

    def _states(self, hx, x, batched):
        n = self.num_layers * self.directions
        if hx is None:
            zero = self._zero_state(ops.getitem(x, 0))
            return [(zero, zero)] * n
        if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise InvalidArgumentError("LSTM: hx must be a pair (h_0, c_0)")
        h = self._check_state(hx[0], "h_0", batched, x.shape[1])
        c = self._check_state(hx[1], "c_0", batched, x.shape[1])
        return list(zip(ops.unstack(h, axis=0), ops.unstack(c, axis=0)))

    def _finals(self, finals):
        return (ops.stack([h for h, _ in finals], axis=0),
                ops.stack([c for _, c in finals], axis=0))


class GRU(_SingleState):
    """Gated recurrent unit layers (PyTorch's ``torch.nn.GRU``)::

        r = sigmoid(xr + hr);  z = sigmoid(xz + hz);  n = tanh(xn + r * hn)
        h' = (1 - z) * n + z * h
    with ``x @ W_ih + b_ih = [xr, xz, xn]`` and ``h @ W_hh + b_hh = [hr, hz, hn]``.

    ``forward(input, hx=None)``, ``hx`` ``(num_layers * directions, N, H)``;
    returns ``(output, h_n)``.

    Example:
        >>> import engine as en
        >>> gru = en.nn.GRU(3, 5, num_layers=2, generator=0)
        >>> out, h = gru(en.ones((7, 2, 3), dtype="float32"))
        >>> out.shape, h.shape
        ((7, 2, 5), (2, 2, 5))
    """

    gates = 3

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=None, generator=None, name="gru"):
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, dtype, generator, name)

    def _step(self, gi, h, w_hh, b_hh):
        gi, gh = _projections(gi, h, w_hh, b_hh)
        h_new = gru_update(gi, gh, h)
        return h_new, h_new


class SimpleRNN(_SingleState):
    """Elman recurrent layers (PyTorch's ``torch.nn.RNN``):
    ``h' = nonlinearity(x @ W_ih + b_ih + h @ W_hh + b_hh)``, ``nonlinearity``
    ``"tanh"`` (default) or ``"relu"``. ``en.nn.RNN(input_size, hidden_size,
    ...)`` builds one. Returns ``(output, h_n)``.

    Example:
        >>> import engine as en
        >>> rnn = en.nn.RNN(3, 4, nonlinearity="relu", batch_first=True, generator=0)
        >>> type(rnn).__name__, rnn(en.ones((2, 5, 3), dtype="float32"))[0].shape
        ('SimpleRNN', (2, 5, 4))
    """

    gates = 1

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=None,
                 generator=None, name="rnn"):
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"SimpleRNN: nonlinearity must be 'tanh' or 'relu', "
                                       f"got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, dtype, generator, name)
        self.nonlinearity = nonlinearity

    def _step(self, gi, h, w_hh, b_hh):
        gi, gh = _projections(gi, h, w_hh, b_hh)
        pre = ops.add(gi, gh)
        h_new = ops.tanh(pre) if self.nonlinearity == "tanh" else ops.relu(pre)
        return h_new, h_new

    def extra_repr(self):
        own = super().extra_repr()
        return own + (", nonlinearity='relu'" if self.nonlinearity == "relu" else "")
