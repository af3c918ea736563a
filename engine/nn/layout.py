"""Where the channels are: ``data_format`` for convolution, pooling and normalization layers.

``"channels_last"`` is the engine's layout (NLC, NHWC, NDHWC: TensorFlow's and
Keras's), ``"channels_first"`` PyTorch's (NCL, NCHW, NCDHW). The layers named
as in Keras (``Conv2D``, ``MaxPool2D``, ``BatchNorm``) default to channels-last,
the layers named as in PyTorch (``Conv2d``, ``MaxPool2d``, ``GroupNorm``) to
channels-first: the name says the layout. Either takes the other with
``data_format=``. The kernels run channels-last; a channels-first layer moves
the channel axis to the end and back (two transposes).

Example:
    >>> import engine as en
    >>> x = en.zeros((2, 3, 5, 7))                    # NCHW
    >>> to_channels_last(x, "channels_first").shape
    (2, 5, 7, 3)
"""
from ..errors import InvalidArgumentError, ShapeError
from ..ops import moveaxis
from .module import input_error

FORMATS = ("channels_last", "channels_first")


def check_format(who, data_format):
    """``data_format`` if it is one of :data:`FORMATS`; else an error naming ``who``."""
    if data_format not in FORMATS:
        raise InvalidArgumentError(f"{who}: data_format must be 'channels_last' or "
                                   f"'channels_first', got {data_format!r}")
    return data_format


def channel_axis(data_format):
    return 1 if data_format == "channels_first" else -1


def to_channels_last(x, data_format):
    """``x`` with its channel axis last (unchanged when it already is)."""
    return moveaxis(x, 1, -1) if data_format == "channels_first" else x


def from_channels_last(y, data_format):
    """``y`` (channels last) back in ``data_format``."""
    return moveaxis(y, -1, 1) if data_format == "channels_first" else y


def check_input(who, x, rank, channels, data_format):
    """Raise unless ``x`` is a batch of ``rank``-d items with ``channels`` channels where
    ``data_format`` puts them. When the other layout would fit, the error says so (an
    NCHW batch given to an NHWC layer, the commonest slip)."""
    names = {1: ("NLC", "NCL"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}[rank]
    first = data_format == "channels_first"
    want = names[1] if first else names[0]
    if x.ndim == rank + 2 and x.shape[channel_axis(data_format)] in (channels, None):
        return
    hint = ""
    if x.ndim == rank + 2 and x.shape[channel_axis("channels_last" if first else
                                                   "channels_first")] == channels:
        other = "channels_last" if first else "channels_first"
        hint = (f" (this looks like {names[0] if first else names[1]}: pass "
                f"data_format={other!r})")
    raise input_error(ShapeError, f"{who}: expected {want} inputs with {channels} "
                                  f"channels{hint}", x)
