"""Autodiff: tapes, functional gradients and custom gradients."""
from .tape import GradientTape  # noqa: F401
from .functional import grad, value_and_grad  # noqa: F401
from .custom import custom_gradient  # noqa: F401
