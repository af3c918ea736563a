"""Activation layers: thin modules over :mod:`engine.nn.functional`.

Example:
    >>> import engine as en
    >>> en.nn.ReLU()(en.tensor([-1.0, 1.0])).numpy()
    array([0., 1.])
"""
from . import functional as F
from .module import Module


class ReLU(Module):
    """``max(x, 0)``."""

    def forward(self, x):
        return F.relu(x)


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """Logistic sigmoid."""

    def forward(self, x):
        return F.sigmoid(x)


class SiLU(Module):
    """``x * sigmoid(x)`` (swish)."""

    def forward(self, x):
        return F.silu(x)


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, x):
        return F.elu(x, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        F.softplus(0.0, beta, threshold)   # rejects bad parameters now, not at the first call
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class GELU(Module):
    """Gaussian error linear unit, the exact erf form by default as in PyTorch;
    ``GELU(approximate="tanh")`` is the tanh form (see :func:`engine.gelu`)."""

    def __init__(self, approximate="none"):
        super().__init__()
        F.gelu(0.0, approximate)   # rejects an unsupported form now, not at the first call
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """Softmax along ``axis`` (default the last)."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        return F.softmax(x, axis=self.axis)

    def extra_repr(self):
        return f"axis={self.axis}"


class LogSoftmax(Softmax):
    """Log-softmax along ``axis`` (default the last)."""

    def forward(self, x):
        return F.log_softmax(x, axis=self.axis)
