"""Transformer layers (Vaswani et al. 2017) with PyTorch's arguments and variable names.

:class:`TransformerEncoderLayer`, :class:`TransformerDecoderLayer`, the stacks
:class:`TransformerEncoder` and :class:`TransformerDecoder`, and
:class:`Transformer`, as ``torch.nn``'s: ``d_model, nhead, dim_feedforward,
dropout, activation, layer_norm_eps, batch_first, norm_first, bias``; the
same masks (see :class:`~engine.nn.MultiheadAttention`); variables named as
PyTorch's state_dict keys (``self_attn.in_proj_weight``, ``linear1.weight``,
``norm1.weight``, ``layers.0. ...``). Dense weights are ``(in, out)``,
PyTorch's transposed (``en.nn.load_torch_state_dict`` maps them).

The stacks copy the layer they are given ``num_layers`` times, values
included (as PyTorch's deep copies); each copy's dropout draws from its own
seeded stream. Each attention runs in blocks (its weights are not asked for).

Example:
    >>> import engine as en
    >>> layer = en.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True,
    ...                                       generator=0)
    >>> encoder = en.nn.TransformerEncoder(layer, num_layers=2)
    >>> encoder(en.ones((2, 5, 16), "float32"), is_causal=True).shape
    (2, 5, 16)
    >>> [n for n, _ in encoder.named_variables()][:3]
    ['layers.0.self_attn.in_proj_weight', 'layers.0.self_attn.in_proj_bias', 'layers.0.self_attn.out_proj.weight']
"""
import math

from .. import default_dtype, ops
from ..errors import ArgumentTypeError, InvalidArgumentError
from . import functional as F
from . import init as initializers
from .attention import MultiheadAttention
from .containers import ModuleList
from .layers import Dropout, Linear, _generator, _positive_int, _seeded_from_default
from .module import Module
from .normalization import LayerNorm

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(who, activation):
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise InvalidArgumentError(f"{who}: activation must be 'relu', 'gelu' or a "
                                       f"callable, got {activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise ArgumentTypeError(f"{who}: activation must be 'relu', 'gelu' or a callable, got "
                                f"{type(activation).__name__}")
    return activation


def _layer_norm(d_model, eps, bias, dtype):
    norm = LayerNorm(d_model, eps=eps, dtype=dtype)
    if not bias:
        norm.bias = None            # PyTorch's LayerNorm(bias=False): a scale only
    return norm


class _Block(Module):
    """What both layers share: the feed-forward part and the settings they are copied by."""

    def _setup(self, who, d_model, nhead, dim_feedforward, dropout, activation,
               layer_norm_eps, batch_first, norm_first, bias, dtype, generator, norms):
        dtype = default_dtype.model_float(dtype)
        # The arguments, to build copies (TransformerEncoder) with the same settings.
        self._settings = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                              dropout=dropout, activation=activation,
                              layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                              norm_first=norm_first, bias=bias, dtype=dtype)
        _positive_int(who, "d_model", d_model)
        _positive_int(who, "dim_feedforward", dim_feedforward)
        if not 0.0 <= dropout < 1.0:
            raise InvalidArgumentError(f"{who}: dropout must be in [0, 1), got {dropout}")
        gen = _generator(generator) if generator is not None else _seeded_from_default()
        attention = dict(dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype,
                         generator=gen)
        self.self_attn = MultiheadAttention(d_model, nhead, **attention)
        if norms == 3:
            self.multihead_attn = MultiheadAttention(d_model, nhead, **attention)
        # PyTorch's Linear init (uniform on +-1/sqrt(fan_in)); zero biases.
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, init="lecun_uniform",
                              dtype=dtype, generator=gen)
        self.dropout = Dropout(dropout, generator=gen)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, init="lecun_uniform",
                              dtype=dtype, generator=gen)
        self.norm_first = bool(norm_first)
        for i in range(1, norms + 1):
            setattr(self, f"norm{i}", _layer_norm(d_model, layer_norm_eps, bias, dtype))
        for i in range(1, norms + 1):
            setattr(self, f"dropout{i}", Dropout(dropout, generator=gen))
        self.activation = _activation(who, activation)
        self.batch_first = bool(batch_first)

    def _attention(self, attn, x, memory, mask, padding, is_causal, drop):
        out, _ = attn(x, memory, memory, key_padding_mask=padding, attn_mask=mask,
                      need_weights=False, is_causal=is_causal)
        return drop(out)

    def _feed_forward(self, x, drop):
        return drop(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def extra_repr(self):
        s = self._settings
        return (f"d_model={s['d_model']}, nhead={s['nhead']}, "
                f"dim_feedforward={s['dim_feedforward']}, norm_first={self.norm_first}")


class TransformerEncoderLayer(_Block):
    """Self-attention and a feed-forward network, each with a residual connection and a
    LayerNorm (after it, or before it with ``norm_first=True``): PyTorch's layer.

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``;
    ``src`` is ``(S, N, E)``, ``(N, S, E)`` with ``batch_first``, or ``(S, E)``.

    Example:
        >>> import engine as en
        >>> layer = en.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, generator=0)
        >>> layer(en.ones((5, 3, 8), dtype="float32")).shape
        (5, 3, 8)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 dtype=None, generator=None):
        super().__init__()
        self._setup("TransformerEncoderLayer", d_model, nhead, dim_feedforward, dropout,
                    activation, layer_norm_eps, batch_first, norm_first, bias, dtype,
                    generator, norms=2)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            y = self.norm1(x)
            x = ops.add(x, self._attention(self.self_attn, y, y, src_mask, src_key_padding_mask,
                                           is_causal, self.dropout1))
            return ops.add(x, self._feed_forward(self.norm2(x), self.dropout2))
        x = self.norm1(ops.add(x, self._attention(self.self_attn, x, x, src_mask,
                                                  src_key_padding_mask, is_causal,
                                                  self.dropout1)))
        return self.norm2(ops.add(x, self._feed_forward(x, self.dropout2)))


class TransformerDecoderLayer(_Block):
    """Self-attention, attention over the encoder's output (``memory``) and a
    feed-forward network, each with a residual connection and a LayerNorm: PyTorch's layer.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None,
    tgt_is_causal=False, memory_is_causal=False)``.

    Example:
        >>> import engine as en
        >>> layer = en.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, generator=0)
        >>> tgt, memory = en.ones((4, 3, 8), "float32"), en.ones((6, 3, 8), "float32")
        >>> layer(tgt, memory, tgt_is_causal=True).shape
        (4, 3, 8)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 dtype=None, generator=None):
        super().__init__()
        self._setup("TransformerDecoderLayer", d_model, nhead, dim_feedforward, dropout,
                    activation, layer_norm_eps, batch_first, norm_first, bias, dtype,
                    generator, norms=3)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        cross = (memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            y = self.norm1(x)
            x = ops.add(x, self._attention(self.self_attn, y, y, tgt_mask, tgt_key_padding_mask,
                                           tgt_is_causal, self.dropout1))
            x = ops.add(x, self._attention(self.multihead_attn, self.norm2(x), memory, *cross,
                                           self.dropout2))
            return ops.add(x, self._feed_forward(self.norm3(x), self.dropout3))
        x = self.norm1(ops.add(x, self._attention(self.self_attn, x, x, tgt_mask,
                                                  tgt_key_padding_mask, tgt_is_causal,
                                                  self.dropout1)))
        x = self.norm2(ops.add(x, self._attention(self.multihead_attn, x, memory, *cross,
                                                  self.dropout2)))
        return self.norm3(ops.add(x, self._feed_forward(x, self.dropout3)))


def _copies(layer, num_layers, who):
    """``num_layers`` layers like ``layer`` (its settings and its values), each with its own
    dropout stream."""
    if not isinstance(layer, _Block):
        raise ArgumentTypeError(f"{who}: expected a TransformerEncoderLayer or "
                                f"TransformerDecoderLayer, got {type(layer).__name__}")
    _positive_int(who, "num_layers", num_layers)
    state = layer.state_dict()
    out = []
    for _ in range(num_layers):
        copy = type(layer)(**layer._settings)
        copy.load_state_dict(state)
        copy.train(layer.training)
        out.append(copy)
    return ModuleList(out)


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm`` (if given).

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``.
    Variables: ``layers.0.self_attn.in_proj_weight``, ..., ``norm.weight``.
    ``enable_nested_tensor`` and ``mask_check`` are taken for PyTorch's code and
    change nothing (padding is masked, never packed).
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _copies(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn, then ``norm`` (if given).

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None,
    tgt_is_causal=None, memory_is_causal=False)``.
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _copies(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """An encoder-decoder transformer: PyTorch's ``torch.nn.Transformer``.

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
    memory_is_causal=False)`` returns the decoder's output. Every weight of two
    or more dimensions starts Xavier-uniform, as PyTorch's. Variables:
    ``encoder.layers.0....``, ``encoder.norm.weight``, ``decoder.layers.0....``.

    Example:
        >>> import engine as en
        >>> model = en.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1,
        ...                           num_decoder_layers=1, dim_feedforward=16, generator=0)
        >>> tgt_mask = en.nn.Transformer.generate_square_subsequent_mask(4)
        >>> src, tgt = en.ones((6, 2, 8), "float32"), en.ones((4, 2, 8), "float32")
        >>> model(src, tgt, tgt_mask=tgt_mask).shape
        (4, 2, 8)
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, dtype=None, generator=None):
        super().__init__()
        dtype = default_dtype.model_float(dtype)
        gen = _generator(generator) if generator is not None else _seeded_from_default()
        settings = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                        dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                        batch_first=batch_first, norm_first=norm_first, bias=bias, dtype=dtype)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(**settings, generator=gen), num_encoder_layers,
            _layer_norm(d_model, layer_norm_eps, bias, dtype))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(**settings, generator=gen), num_decoder_layers,
            _layer_norm(d_model, layer_norm_eps, bias, dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, bool(batch_first)
        for _, var in self.named_variables():      # PyTorch's _reset_parameters
            if var.ndim > 1:
                var.assign(initializers.glorot_uniform(var.shape, var.dtype, gen))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The ``(sz, sz)`` causal float mask: 0 on and below the diagonal, ``-inf`` above
        (``device`` is taken for PyTorch's code and changes nothing).

        Example:
            >>> import engine as en
            >>> en.nn.Transformer.generate_square_subsequent_mask(3).numpy()
            array([[  0., -inf, -inf],
                   [  0.,   0., -inf],
                   [  0.,   0.,   0.]], dtype=float32)
        """
        dtype = default_dtype.model_float(dtype)
        return ops.triu(ops.full((sz, sz), -math.inf, dtype=dtype), k=1)

    def extra_repr(self):
        return f"d_model={self.d_model}, nhead={self.nhead}, batch_first={self.batch_first}"
