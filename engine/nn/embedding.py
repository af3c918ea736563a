"""The :class:`Embedding` layer: a table of vectors looked up by integer ids.

Example:
    >>> import engine as en
    >>> emb = en.nn.Embedding(10, 4, generator=0)
    >>> emb(en.tensor([[1, 2, 3]])).shape
    (1, 3, 4)
"""
from .. import default_dtype
from ..errors import InvalidArgumentError
from ..variable import Variable
from . import functional as F
from . import init as initializers
from .layers import _generator, _positive_int
from .module import Module


class Embedding(Module):
    """``weight[ids]`` with ``weight`` of shape ``(num_embeddings, embedding_dim)``.

    The table starts from a standard normal draw (PyTorch's default); the
    gradient is a scatter-add into the rows that were looked up. The row
    ``padding_idx`` (if given) starts at zero and gets no gradient.
    """

    def __init__(self, num_embeddings, embedding_dim, init=None, dtype=None,
                 generator=None, name="embedding", padding_idx=None):
        super().__init__()
        dtype = default_dtype.model_float(dtype)   # float32 unless set
        self.num_embeddings = _positive_int("Embedding", "num_embeddings", num_embeddings)
        self.embedding_dim = _positive_int("Embedding", "embedding_dim", embedding_dim)
        shape = (num_embeddings, embedding_dim)
        gen = _generator(generator)
        value = (initializers._normal(shape, 1.0, dtype, gen) if init is None
                 else initializers.get(init)(shape, dtype, gen))
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise InvalidArgumentError(f"Embedding: padding_idx must be in [-{num_embeddings}, "
                                 f"{num_embeddings}), got {padding_idx!r}")
            padding_idx %= num_embeddings
            value = value.numpy().copy() if hasattr(value, "numpy") else value.copy()
            value[padding_idx] = 0
        self.padding_idx = padding_idx
        self.weight = Variable(value, name=f"{name}/weight")

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self):
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
