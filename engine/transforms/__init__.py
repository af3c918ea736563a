"""Function transformations that ride on the op registry: forward mode (``jvp``,
``linearize``, ``custom_jvp``), batching (``vmap``), ``vjp`` and the Jacobians
(``jacfwd``, ``jacrev``, ``hessian``). Each is a mode (``engine.modes.Mode``)
over the mode current when it starts, reading the ops' ``jvp`` and ``batch``
rules (``engine.op.RULE_KINDS``)."""
from .base import TransformFallbackWarning  # noqa: F401
from .batching import vmap  # noqa: F401
from .forward import custom_jvp, jvp, linearize  # noqa: F401
from .jacobians import hessian, jacfwd, jacrev, vjp  # noqa: F401
