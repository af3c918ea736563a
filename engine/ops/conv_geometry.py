"""Output sizes and padding of a 2-D window op, shared by the numpy kernels
(``conv.py``, ``pooling.py``) and the ones written against the namespace
(``conv_generic.py``, ``pool_generic.py``).

``padding`` is TensorFlow's ``"valid"`` (none) or ``"same"`` (output
``ceil(size / stride)``, the odd extra pad after), or explicit pads
``((top, bottom), (left, right))``. A window of ``k`` taps ``dilation`` apart
spans ``dilation * (k - 1) + 1`` pixels. ``ceil_mode`` (pooling) rounds the
output size up, as PyTorch does: the last window may hang over the end, onto
extra pads after, but never starts in them.

Example:
    >>> spatial("conv2d", (5, 5), (3, 3), (2, 2), ((1, 1), (1, 1)), [])
    ((3, 3), ((1, 1), (1, 1)))
"""
import operator

from ..errors import ShapeError, describe_inputs


def span(k, d):
    """The pixels a window of ``k`` taps, ``d`` apart, covers."""
    return d * (k - 1) + 1


def out_and_pads(name, size, k, s, padding, avals, d=1, ceil_mode=False):
    """(output size, pad before, pad after) along one spatial dim; ``None`` when unknown.

    ``padding`` is "valid", "same" or a ``(before, after)`` pair for this dim.
    """
    if size is None or k is None:
        return None, None, None
    ek = span(k, d)
    if padding == "same":
        out = -(-size // s)
        total = max((out - 1) * s + ek - size, 0)
        return out, total // 2, total - total // 2
    before, after = (0, 0) if padding == "valid" else padding
    padded = size + before + after
    if padded < ek:
        raise ShapeError(f"{name}: window {ek} is larger than the input size {size} with "
                         f"padding {padding!r}: {describe_inputs(avals)}")
    if not ceil_mode:
        return (padded - ek) // s + 1, before, after
    out = -(-(padded - ek) // s) + 1
    if (out - 1) * s >= size + before:   # the last window would start in the padding after
        out -= 1
    return out, before, after + max((out - 1) * s + ek - padded, 0)


def spatial(name, hw, khw, strides, padding, avals, dilation=(1, 1), ceil_mode=False):
    """Output sizes and pads ``((top, bottom), (left, right))`` for both spatial dims."""
    pads = (padding, padding) if isinstance(padding, str) else padding
    oh, pt, pb = out_and_pads(name, hw[0], khw[0], strides[0], pads[0], avals, dilation[0],
                              ceil_mode)
    ow, pl, pr = out_and_pads(name, hw[1], khw[1], strides[1], pads[1], avals, dilation[1],
                              ceil_mode)
    return (oh, ow), ((pt, pb), (pl, pr))


def _is_int(v):
    if isinstance(v, bool):
        return False
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def _pair_of_ints(name, value, what, minimum):
    values = (value, value) if _is_int(value) else value
    try:
        a, b = values
    except (TypeError, ValueError):
        a = b = None
    if not (_is_int(a) and _is_int(b)):
        raise ShapeError(f"{name}: {what} must be an int or a pair of ints, got {value!r}")
    a, b = operator.index(a), operator.index(b)
    if a < minimum or b < minimum:
        kind = "positive" if minimum > 0 else "non-negative"
        raise ShapeError(f"{name}: {what} must be {kind}, got {value!r}")
    return (a, b)


def pair(name, value, what):
    """A positive int or pair of them (strides, dilations, window sizes) as a pair."""
    return _pair_of_ints(name, value, what, 1)


def nonnegative_pair(name, value, what):
    """A non-negative int or pair of them (pads) as a pair."""
    return _pair_of_ints(name, value, what, 0)


def padding_param(name, padding):
    """The ``padding`` param of a window op: "valid", "same" or ``((t, b), (l, r))``.

    Accepts those, an int ``p`` (``p`` on every side) and a pair ``(ph, pw)``
    (``ph`` above and below, ``pw`` left and right), PyTorch's forms.

    Example:
        >>> padding_param("conv2d", 1), padding_param("conv2d", (1, 2)), padding_param("x", "SAME")
        (((1, 1), (1, 1)), ((1, 1), (2, 2)), 'same')
    """
    if isinstance(padding, str):
        p = padding.lower()
        if p not in ("valid", "same"):
            raise ShapeError(f"{name}: padding must be 'valid', 'same', an int, a pair or "
                             f"((top, bottom), (left, right)), got {padding!r}")
        return p
    if isinstance(padding, (list, tuple)) and len(padding) == 2 and \
            all(isinstance(p, (list, tuple)) for p in padding):
        return tuple(_pair_of_ints(name, p, "padding", 0) for p in padding)
    ph, pw = _pair_of_ints(name, padding, "padding", 0)
    return ((ph, ph), (pw, pw))
