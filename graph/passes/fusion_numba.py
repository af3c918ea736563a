"""Optional JIT lowering of fused kernels through numba (``en.config.fusion_backend = "numba"``).

A fused region becomes one numba ``vectorize`` ufunc: a single pass over
memory with no scratch buffers and one call's worth of overhead, however many
ops the region holds. Each op needs a scalar form in ``SCALAR_FORMS`` (the
per-op table of this back end); a region with any op outside it, or with a
dtype numba cannot type, keeps the numpy lowering, which is the default and
always works. Compiling costs tens of milliseconds per kernel (shown in the
optimization report under ``fusion``).
"""
import numpy as np

from engine import ops

SCALAR_FORMS = {
    ops.add_op: "{0} + {1}",
    ops.sub_op: "{0} - {1}",
    ops.mul_op: "{0} * {1}",
    ops.div_op: "{0} / {1}",
    ops.pow_op: "{0} ** {1}",
    ops.maximum_op: "np.maximum({0}, {1})",
    ops.minimum_op: "np.minimum({0}, {1})",
    ops.neg_op: "-{0}",
    ops.abs_op: "abs({0})",
    ops.sign_op: "np.sign({0})",
    ops.exp_op: "np.exp({0})",
    ops.log_op: "np.log({0})",
    ops.log1p_op: "np.log1p({0})",
    ops.expm1_op: "np.expm1({0})",
    ops.sqrt_op: "np.sqrt({0})",
    ops.square_op: "{0} * {0}",
    ops.reciprocal_op: "ONE / {0}",
    ops.sin_op: "np.sin({0})",
    ops.cos_op: "np.cos({0})",
    ops.tanh_op: "np.tanh({0})",
    ops.sigmoid_op: "ONE / (ONE + np.exp(-{0}))",
    ops.sigmoid_grad_op: "((ONE - {0}) * {0}) * {1}",   # the numpy kernel's order
    ops.relu_op: "({0} if {0} > ZERO else ZERO)",
    ops.equal_op: "{0} == {1}",
    ops.not_equal_op: "{0} != {1}",
    ops.less_op: "{0} < {1}",
    ops.less_equal_op: "{0} <= {1}",
    ops.greater_op: "{0} > {1}",
    ops.greater_equal_op: "{0} >= {1}",
    ops.logical_and_op: "(bool({0}) and bool({1}))",
    ops.logical_or_op: "(bool({0}) or bool({1}))",
    ops.logical_not_op: "(not bool({0}))",
    ops.where_op: "({1} if {0} else {2})",
    ops.zeros_like_op: "ZERO",
    ops.ones_like_op: "ONE",
}


def available():
    try:   # numba is optional and slow to import: only when a numba kernel is asked for
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def build(name, members, inputs):
    """A numba ufunc computing the region, or None when the region cannot be lowered."""
    if not available():
        return None
    import numba   # optional, deferred (see available)
    if any(m.op not in SCALAR_FORMS and m.op is not ops.cast_op for m in members):
        return None
    names = {node: f"x{i}" for i, node in enumerate(inputs)}
    lines = [f"def {name}({', '.join(names[i] for i in inputs)}):"]
    for k, m in enumerate(members):
        dt = np.dtype(m.dtype).name
        # Each step is converted to its node's dtype, so float32 stays float32 as in numpy.
        if m.op is ops.cast_op:
            expr = names[m.inputs[0]]
        else:
            args = [names[i] for i in m.inputs]
            form = SCALAR_FORMS[m.op]
            in_dt = np.dtype(m.inputs[0].dtype).name
            form = form.replace("ONE", f"np.{in_dt}(1)").replace("ZERO", f"np.{in_dt}(0)")
            expr = form.format(*args)
        lines.append(f"    t{k} = np.{'bool_' if dt == 'bool' else dt}({expr})")
        names[m] = f"t{k}"
    lines.append(f"    return t{len(members) - 1}")
    source = "\n".join(lines) + "\n"
    namespace = {"np": np}
    exec(compile(source, f"<numba kernel {name}>", "exec"), namespace)
    try:
        out_type = numba.from_dtype(np.dtype(members[-1].dtype))
        in_types = [numba.from_dtype(np.dtype(i.dtype)) for i in inputs]
        ufunc = numba.vectorize([out_type(*in_types)], nopython=True)(namespace[name])
    except Exception:   # a numba typing limit: keep the numpy lowering
        return None
    ufunc.source = source
    return ufunc
