"""Function transformations that ride on the op registry: forward mode (``jvp``,
``linearize``, ``custom_jvp`` in ``forward``), batching (``vmap`` in ``batching``),
``vjp`` and the Jacobians (``jacfwd``, ``jacrev``, ``hessian`` in ``jacobians``).
Each is a mode (``engine.modes.Mode``) over the mode current when it starts,
reading the ops' ``jvp`` and ``batch`` rules (``engine.op.RULE_KINDS``).

The package imports none of its modules: the facade imports what it exports
from each, and ``GradientTape.jacobian`` imports ``batching`` alone.
"""
