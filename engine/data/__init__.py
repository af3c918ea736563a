"""Data helpers for training: mini-batching and MNIST.

* :func:`batches` / :class:`DataLoader`: mini-batches over equal-length arrays
  (``batch_size=None`` is full-batch gradient descent, ``1`` is stochastic).
* :func:`load_mnist`: the MNIST IDX files as float32 images in [0, 1] and
  int64 labels; :func:`read_idx` reads one IDX file.
* :func:`synthetic_mnist`: deterministic MNIST-shaped data for benchmarks.

Example:
    >>> import engine as en
    >>> x, y = en.data.synthetic_mnist(256, seed=1)
    >>> xb, yb = next(iter(en.data.batches((x, y), 64, shuffle=True, seed=0)))
    >>> xb.shape, yb.dtype
    ((64, 784), dtype('int64'))
"""
from .batching import DataError, DataLoader, batches  # noqa: F401
from .mnist import load_mnist, read_idx, synthetic_mnist  # noqa: F401

__all__ = ["DataError", "DataLoader", "batches", "load_mnist", "read_idx", "synthetic_mnist"]
