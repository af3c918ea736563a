"""The :class:`Backend` interface: what the engine needs from an array library."""
import contextlib
from typing import Any

import numpy as np

from ..devices import CPU
from ..errors import UnimplementedError

_BOOL, _INT8 = np.dtype("bool"), np.dtype("int8")
# The standard's two-input functions that take bools themselves.
_TAKE_BOOLS = frozenset(("equal", "not_equal", "logical_and", "logical_or", "logical_xor",
                         "bitwise_and", "bitwise_or", "bitwise_xor"))


class Backend:
    """One array library. Subclasses set the class attributes and the conversions.

    Attributes:
        name: the registry name (``"numpy"``).
        xp: the array namespace (Array API functions: ``xp.add``, ``xp.reshape``...).
        array_types: the library's array classes (the type test).
        device: the :class:`~engine.devices.Device` its arrays live on (the host CPU
            unless the library computes elsewhere); ``Tensor.device`` reports it.

    Capabilities (the engine's fast paths ask these, never the back end's name):
        numpy_arrays: its arrays are ``numpy.ndarray``: numpy kernels (``op.impl``,
            the kernels chosen for static shapes, Python operator forms) run on them
            as they are, and tensors hold them as plain :class:`~engine.Tensor`.
        out_kernels: ops may write into preallocated arrays (``out=``); the passes
            that rely on it (row-split matrix products) run only where it is set.
        buffer_reuse: a graph may keep buffers between calls and write into them:
            memory planning, concatenations written in place, recycled outputs.
        in_place: arrays may be updated in place (a variable's rows written where
            nothing else holds its array).
        fused_loops: fusion may write block loops in this library's source.
        compiled_lowerings: graphs may be compiled to machine code (numba, C) that
            reads and writes its arrays' memory.
        numpy_promotion: the namespace promotes mixed dtype kinds as numpy does
            (``int32 + float32``); otherwise kernels cast first (:meth:`promote`).
        joins_numpy: numpy tensors may join this back end's tensors in an op (they
            are converted with :meth:`from_numpy`); otherwise mixing is an error.
        chunked: arrays are split into chunks of rows and an ``en.function``
            called with them runs per chunk (``engine.graph.chunked``).
        lazy: values are computed only when asked for (:meth:`compute`); an
            optimizer computes a loss and its gradients together.
    """

    name: str | None = None
    xp: Any = None                      # the array namespace (a module or an object)
    array_types: tuple[type, ...] = ()
    device = CPU
    numpy_arrays: bool = False
    out_kernels: bool = False
    buffer_reuse: bool = False
    in_place: bool = False
    fused_loops: bool = False
    compiled_lowerings: bool = False
    numpy_promotion: bool = False
    joins_numpy: bool = False
    chunked: bool = False
    lazy: bool = False

    # -- arrays -----------------------------------------------------------------
    def asarray(self, data, dtype=None):
        """An array of this library from Python data, a numpy array or its own array
        (always a fresh copy: a tensor's value must never change under it)."""
        raise UnimplementedError

    def from_numpy(self, array):
        """This library's copy of a numpy array."""
        return self.asarray(array)

    def to_numpy(self, array):
        """A numpy array with ``array``'s values (may share memory; do not write)."""
        raise UnimplementedError

    def is_array(self, value):
        """The type test: whether ``value`` is an array of this library."""
        return isinstance(value, self.array_types)

    def dtype_of(self, array):
        """The engine (numpy) dtype of an array of this library."""
        raise UnimplementedError

    def dtype(self, dtype):
        """This library's dtype object for an engine dtype."""
        raise UnimplementedError

    def astype(self, array, dtype):
        """``array`` converted to the engine dtype ``dtype``."""
        return self.xp.astype(array, self.dtype(dtype))

    def may_share_memory(self, a, b):
        """The alias test; conservative (True) when the library cannot tell."""
        return True

    def own_kernel(self, op):
        """A kernel of this back end's own for ``op`` (ahead of the op's generic one),
        or None."""
        return None

    def compute(self, arrays):
        """numpy values of several arrays at once (a lazy library computes them
        together, sharing work)."""
        return [np.asarray(self.to_numpy(a)) for a in arrays]

    def row_blocks(self, arrays):
        """For a ``chunked`` back end: the arrays' row chunks, aligned to the first
        array's, as one list per chunk holding each array's (lazy) block."""
        raise UnimplementedError(f"the {self.name} back end does not split arrays into "
                                 "chunks of rows")

    def checked_finite(self, array, message):
        """For a ``lazy`` back end (``en.debug.check_numerics()``): ``array`` with each
        chunk checked for NaN and Inf when it is computed, which raises
        :class:`~engine.errors.ChunkError` with ``message`` formatted with ``kind``
        ("NaN" or "Inf"), ``chunk`` (its index) and ``rows`` (its row count)."""
        raise UnimplementedError(f"the {self.name} back end has no deferred numerics check")

    # -- helpers for kernels written against the namespace ----------------------
    def promote(self, *arrays):
        """The arrays cast to their common dtype, by numpy's promotion table (the
        engine's rule; shape rules predict it), where the namespace does not."""
        if self.numpy_promotion:
            return arrays
        dts = [self.dtype_of(a) for a in arrays]
        first = dts[0]
        if all(d == first for d in dts):
            return arrays
        target = np.result_type(*dts)
        return tuple(a if d == target else self.astype(a, target) for a, d in zip(arrays, dts))

    def function(self, name):
        """The kernel for a namespace function ``name`` (``"add"``), promoting inputs
        first where the namespace does not. Two bools go where numpy takes them
        (``True + True`` is True) though the standard's arithmetic takes numbers only:
        computed as int8, then converted to the dtype of numpy's loop."""
        fn = getattr(self.xp, name)
        if self.numpy_promotion:
            return fn
        promote = self.promote
        ufunc = getattr(np, name, None)
        bool_loop = None
        if isinstance(ufunc, np.ufunc) and ufunc.nin == 2 and name not in _TAKE_BOOLS:
            with contextlib.suppress(TypeError):   # numpy refuses bool - bool
                bool_loop = ufunc.resolve_dtypes((_BOOL, _BOOL, None))[-1]

        def kernel(*arrays):
            arrays = promote(*arrays)
            if bool_loop is not None and all(self.dtype_of(a) == _BOOL for a in arrays):
                out = fn(*[self.astype(a, _INT8) for a in arrays])
                return out if self.dtype_of(out) == bool_loop else self.astype(out, bool_loop)
            return fn(*arrays)
        kernel.__name__ = name
        return kernel

    def __repr__(self):
        return f"<backend {self.name}>"
