"""Bitwise ops on integers and bools (``&``, ``|``, ``^``, ``~``, ``<<``, ``>>``) and
``logical_xor``. None has a gradient (integer and bool results).

On bools the bitwise ops are the logical ones (``~`` is ``not``), as in numpy.

Example:
    >>> import engine as en
    >>> (en.tensor([12, 10]) & 6).tolist(), (~en.tensor([0, 5])).tolist()
    ([4, 2], [-1, -6])
"""
import numpy as np

from .. import dtypes
from ..names import also_named as _also_named
from ..op import declare
from ._define import binary, call, unary
from .compare import _logical

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_not",
           "bitwise_invert", "left_shift", "right_shift", "bitwise_left_shift",
           "bitwise_right_shift", "logical_xor"]

#: Integers and bools: what the bitwise and/or/xor/invert take.
INTEGRAL = dtypes.INTS | {dtypes.bool_}
_WHAT = "integer or bool"


def _bitwise(name, ufunc, standard, onnx, form, doc, commutative=True, allowed=INTEGRAL,
             what=_WHAT):
    op = binary(name, ufunc, None, allowed=allowed, what=what, commutative=commutative,
                doc=doc, generic=standard)
    declare(op, onnx=onnx, scalar_form=form, positional_out=True)
    return op


bitwise_and_op = _bitwise("bitwise_and", np.bitwise_and, "bitwise_and",
                          ("bitwise", "And", "BitwiseAnd"), "{0} & {1}",
                          "Elementwise ``x & y`` (bitwise and; logical and on bools).")
bitwise_or_op = _bitwise("bitwise_or", np.bitwise_or, "bitwise_or",
                         ("bitwise", "Or", "BitwiseOr"), "{0} | {1}",
                         "Elementwise ``x | y`` (bitwise or; logical or on bools).")
bitwise_xor_op = _bitwise("bitwise_xor", np.bitwise_xor, "bitwise_xor",
                          ("bitwise", "Xor", "BitwiseXor"), "{0} ^ {1}",
                          "Elementwise ``x ^ y`` (bitwise exclusive or; logical on bools).")
invert_op = unary("invert", np.invert, None, allowed=INTEGRAL, what=_WHAT, differentiable=False,
                  generic="bitwise_invert",
                  doc="Elementwise ``~x``: bitwise not (two's complement, ``-x - 1``); "
                      "logical not on bools.")
declare(invert_op, onnx=("bitwise", "Not", "BitwiseNot"), scalar_form="np.invert({0})",
        positional_out=True)
# Shifts: integers only (numpy refuses floats; the standard bools too).
left_shift_op = _bitwise("left_shift", np.left_shift, "bitwise_left_shift", None,
                         "left_shift_({0}, {1})",
                         "Elementwise ``x << y`` (integers).", commutative=False,
                         allowed=dtypes.INTS, what="integer")
right_shift_op = _bitwise("right_shift", np.right_shift, "bitwise_right_shift", None,
                          "right_shift_({0}, {1})",
                          "Elementwise ``x >> y``, arithmetic (the sign is kept).",
                          commutative=False, allowed=dtypes.INTS, what="integer")

logical_xor_op = binary("logical_xor", np.logical_xor, None, allowed=dtypes.ALL, what="any",
                        out_dtype=dtypes.bool_, commutative=True,
                        doc="Elementwise logical exclusive or (bool).",
                        generic=_logical("logical_xor"))
declare(logical_xor_op, onnx=("logical", "Xor"), scalar_form="(bool({0}) != bool({1}))",
        positional_out=True)

bitwise_and = call(bitwise_and_op)
bitwise_or = call(bitwise_or_op)
bitwise_xor = call(bitwise_xor_op)
invert = call(invert_op)
left_shift = call(left_shift_op)
right_shift = call(right_shift_op)
logical_xor = call(logical_xor_op)

# numpy 2 and the Array API standard spell some of them differently.
_also_named(invert, numpy=("bitwise_not", "bitwise_invert"), array_api="bitwise_invert")
_also_named(left_shift, numpy="bitwise_left_shift", array_api="bitwise_left_shift")
_also_named(right_shift, numpy="bitwise_right_shift", array_api="bitwise_right_shift")
bitwise_not = bitwise_invert = invert
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift
