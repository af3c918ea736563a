"""What ``en.save`` and ``en.export_onnx`` trace for an ``en.nn.Module``: its ``forward`` on
the example inputs, batch-polymorphic by default.

A module's example inputs say the shapes of one batch; the saved graph should
take any batch size (as a PyTorch or Keras model does), so each example tensor's
first dimension becomes unknown in the input signature (``TensorSpec((None,
...))``). A module whose forward cannot be traced with an unknown batch (one
that reshapes to the example's batch, say) is saved with the example's shapes,
with a warning saying why. Without example inputs the error says what to pass.

Example:
    >>> import os, tempfile
    >>> import engine as en
    >>> path = os.path.join(tempfile.mkdtemp(), "m.json")
    >>> en.save(en.nn.Linear(3, 2, generator=0), path, en.ones((4, 3), dtype="float32"))
    >>> en.load(path)(en.ones((7, 3), dtype="float32")).shape     # any batch size
    (7, 2)
"""
import warnings

import numpy as np

from engine.errors import ArgumentTypeError, EngineError
from engine.tensor import Tensor
from engine.variable import Variable

from ..ir.signature import TensorSpec
from ..jit.function import Function, function


def module_function(module, example_args, what):
    """The ``en.function`` to trace for ``module``: with a batch-polymorphic input
    signature when every example argument is an array of rank >= 1."""
    if not example_args:
        raise ArgumentTypeError(
            f"{what}: a {type(module).__name__} is traced on example inputs; pass one batch "
            f"after the path ({what}(model, path, x)), or an en.function with a signature: "
            f"{what}(en.function(model, input_signature=[en.TensorSpec((None, ...), "
            "'float32')]), path)")
    specs = _batch_specs(example_args)
    if specs is None:
        return function(module)
    polymorphic = Function(module, input_signature=specs)
    try:
        polymorphic.get_concrete_function(*example_args)
    except (EngineError, TypeError, ValueError) as err:   # int(None) for a batch size, say
        first = str(err).splitlines()[0]
        warnings.warn(f"{what}: {type(module).__name__} cannot be traced for any batch size "
                      f"({first}); saving it for the example's shapes only", stacklevel=3)
        return function(module)
    return polymorphic


def _batch_specs(example_args):
    specs = []
    for arg in example_args:
        if isinstance(arg, (Tensor, Variable, np.ndarray)) and len(arg.shape) >= 1:
            specs.append(TensorSpec((None,) + tuple(arg.shape[1:]), np.dtype(arg.dtype)))
        else:
            return None     # a number or a structure: traced as given
    return specs
