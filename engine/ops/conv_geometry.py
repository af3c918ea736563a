"""Output sizes and TensorFlow padding of a 2-D window op, shared by the numpy
kernels (``conv.py``) and the ones written against the namespace
(``conv_generic.py``)."""
from ..errors import ShapeError, describe_inputs


def out_and_pads(name, size, k, s, padding, avals):
    """(output size, pad before, pad after) along one spatial dim; ``None`` when unknown."""
    if size is None or k is None:
        return None, None, None
    if padding == "valid":
        if size < k:
            raise ShapeError(f"{name}: window {k} is larger than the input size {size} with "
                             f"'valid' padding: {describe_inputs(avals)}")
        return (size - k) // s + 1, 0, 0
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def spatial(name, hw, khw, strides, padding, avals):
    """Output sizes and pads for both spatial dims."""
    oh, pt, pb = out_and_pads(name, hw[0], khw[0], strides[0], padding, avals)
    ow, pl, pr = out_and_pads(name, hw[1], khw[1], strides[1], padding, avals)
    return (oh, ow), ((pt, pb), (pl, pr))
