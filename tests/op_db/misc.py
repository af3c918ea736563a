"""Op-database entries for the identity-like ops (``engine/ops/misc.py``).

``stop_gradient``'s gradient is zero by definition, which finite differences cannot
see; ``test_ops_grad`` checks it directly."""


from op_db.core import unary


unary("identity", lambda x: x)
unary("stop_gradient", lambda x: x, supports_grad=False,
      grad_skip="the gradient is zero by definition; checked in test_ops_grad")
