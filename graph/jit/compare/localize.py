"""Which member of a diverging fused region is wrong.

A fused kernel computes its members together, so its results are all the graph run
shows. Each elementwise member is compiled again alone, by the same lowering (the
kernel ``fusion`` would make for a region of that one op: C, numba or numpy, as the
policy picks under ``en.config.lowering``), and run on eager's values of its inputs;
the first member whose own kernel is wrong by the criterion is the one to name. When
none is (the fault is in how the region was put together: its reduction, its order),
the region stays the answer.
"""
import numpy as np

from ...lowering.fusion import FusedKernel, _fusable
from .judge import judge, max_abs


def wrong_member(members, eager, reference):
    """``(member, Figures)`` of the first member (traced nodes, in order) whose kernel
    alone diverges, or None."""
    for k, member in enumerate(members):
        if not _fusable(member) or member not in eager:
            continue
        inputs = list(dict.fromkeys(member.inputs))
        if any(i not in eager for i in inputs):
            continue
        try:
            kernel = FusedKernel(f"probe_{k}_{member.op.name}", [member], inputs,
                                 [(member, None)], threads=1)
            value = kernel.impl(*[np.asarray(eager[i], dtype=i.dtype) for i in inputs])
        except Exception:     # the lowering cannot take the op alone: no verdict
            continue
        figures = judge(value, eager[member], reference[member],
                        [max_abs(reference[i]) for i in inputs], member.dtype)
        if figures.wrong:
            return member, figures
    return None
