"""PyTorch spellings the engine does not take, and the engine's names for them.

The engine's keywords are numpy's (``axis``, ``keepdims``); a PyTorch user
writes ``dim``, ``keepdim``, ``x.view(...)``, ``loss.backward()``. This module
is the one table of those spellings. It is consulted only when a call or an
attribute lookup has already failed (a ``TypeError`` or ``AttributeError``),
so a correct call costs nothing extra; the error raised then names the
engine's equivalent (and still is a ``TypeError`` / ``AttributeError``).

Where it is consulted (wired by :func:`install`, called once by the facade):

* the public functions of ``en``, ``en.linalg``, ``en.fft`` and
  ``en.nn.functional`` and the tensor methods that take an axis or make a
  tensor are wrapped by :func:`translating` (a ``try`` around the call; the
  engine's own calls use the functions unwrapped);
* every ``en.nn.Module`` and optimizer class translates its constructor's
  keywords (``Dropout(p=)``, ``MaxPool2D(kernel_size=)``), and an optimizer
  given the parameters first (``SGD(params, lr=0.1)``) says where they go;
* missing attributes of tensors, variables, modules and the ``en`` namespace.

Example:
    >>> import engine as en
    >>> try:
    ...     en.softmax(en.ones(3), dim=-1)
    ... except TypeError as err:
    ...     print(str(err).splitlines()[0])
    softmax: use axis= (dim= is PyTorch's spelling)
"""
import functools
import inspect
import re

from . import names
from .errors import ArgumentTypeError, format_location, user_frame

# keyword -> the engine's keyword (when the function takes it) or a sentence to say.
KEYWORDS = {
    "dim": "axis",
    "keepdim": "keepdims",
    "p": "rate",                       # Dropout(p=)
    "kernel_size": "pool_size",        # MaxPool2D(kernel_size=)
    "stride": "strides",               # MaxPool2D(stride=)
    "input": "x",
    "size": "shape",
    "requires_grad": ("tensors carry no requires_grad flag: hold trainable values in "
                      "en.Variable(value) (trainable=False to freeze one); gradients come "
                      "from en.grad(f) or en.GradientTape"),
    "device": ("tensors have a back end, not a device: en.tensor(x, backend=...) "
               "(see docs/guide/backends.md)"),
    "inplace": "layers do not work in place: leave out inplace=",
}

# missing attribute -> what to use instead (tensors, modules, the en namespace).
ATTRIBUTES = {
    "backward": ("gradients are returned, not stored: use en.grad(loss_fn)(x), or "
                 "with en.GradientTape() as tape: loss = ...; then tape.gradient(loss, "
                 "variables); an optimizer does both: opt.minimize(loss_fn, variables)"),
    "grad": "gradients are returned, not stored on tensors: use tape.gradient(loss, variables)",
    "view": "use x.reshape(shape) (x.view(dtype) is numpy's view)",
    "permute": "use x.transpose(axes) or en.permute_dims(x, axes)",
    "unsqueeze": "use en.expand_dims(x, axis)",
    "detach": "use en.stop_gradient(x)",
    "numel": "use x.size",
    "dim": "use x.ndim",
    "contiguous": "tensors need no contiguous(): use x as it is",
    "cpu": "use x.numpy() (a numpy array); tensors have a back end, not a device",
    "cuda": "tensors have a back end, not a device: en.tensor(x, backend=...)",
    "to": ("tensors have a back end, not a device: en.tensor(x, backend=...); "
           "x.astype(dtype) converts the dtype"),
    "clone": "use x.copy()",
    "float": "use x.astype('float32')",
    "double": "use x.astype('float64')",
    "long": "use x.astype('int64')",
    "clamp": "use en.clip(x, low, high)",
    "parameters": "use m.trainable_variables (a list; m.variables also has BatchNorm's "
                  "statistics)",
    "named_parameters": "use m.named_variables()",
    "zero_grad": ("nothing to zero: gradients are returned by tapes, never accumulated; "
                  "opt.minimize(loss_fn, variables) takes a whole step"),
    "cat": "use en.concatenate(tensors, axis=0)",
    "no_grad": ("no context is needed: gradients are recorded only inside en.GradientTape "
                "or en.grad; en.stop_gradient(x) blocks one value"),
    "manual_seed": "use en.random.set_seed(seed)",
    "randn": "use en.random.normal(shape)",
    "rand": "use en.random.uniform(shape)",
    "randint": "use en.random.Generator(seed).integers(low, high, size)",
    "from_numpy": "use en.tensor(array)",
    "bmm": "use en.matmul(a, b)",
    "mm": "use en.matmul(a, b)",
    "chunk": "use en.split(x, n, axis=...)",
}

# The names of ATTRIBUTES a tensor (or variable) answers with its hint.
TENSOR_ATTRIBUTES = ("backward", "grad", "permute", "unsqueeze", "detach", "numel", "dim",
                     "contiguous", "cpu", "cuda", "clone", "float", "double", "long", "clamp")

# The Keras-named layers whose PyTorch-named twin takes PyTorch's keywords (engine/nn).
PYTORCH_NAMED = {"MaxPool2D": "MaxPool2d", "AvgPool2D": "AvgPool2d", "Conv2D": "Conv2d",
                 "ConvTranspose2D": "ConvTranspose2d"}

_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")


def _at():
    return f"\n  at {format_location(user_frame())}"


def _who(fn):
    """``fn``'s public name: ``Dropout`` for ``Dropout.__init__``, ``mean`` for the function
    a factory made (never ``_reduction.<locals>.f``)."""
    qualname = getattr(fn, "__qualname__", "")
    if qualname.endswith(".__init__"):
        return qualname[:-len(".__init__")]
    return getattr(fn, "__name__", "function")


def _takes(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def translated(err, fn):
    """An ``ArgumentTypeError`` naming the engine's keyword for ``err`` (a TypeError from
    calling ``fn``), or None when ``err`` is not about a PyTorch spelling."""
    found = _UNEXPECTED.search(str(err))
    if found is None or found.group(1) not in KEYWORDS:
        return None
    torch_name, ours = found.group(1), KEYWORDS[found.group(1)]
    if " " in ours:       # a sentence, not a keyword
        return ArgumentTypeError(f"{_who(fn)}: {torch_name}= is PyTorch's spelling: {ours}"
                                 f"{_at()}")
    if not _takes(fn, ours):
        return None
    twin = PYTORCH_NAMED.get(_who(fn))
    also = (f"; or en.nn.{twin}, which takes PyTorch's arguments and channels-first input"
            if twin else "")
    return ArgumentTypeError(f"{_who(fn)}: use {ours}= ({torch_name}= is PyTorch's spelling)"
                             f"{also}{_at()}")


def translating(fn):
    """``fn`` with its TypeErrors for PyTorch keywords translated (see :func:`translated`)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as err:
            if not kwargs:
                raise
            better = translated(err, fn)
            if better is None:
                raise
            raise better from None
    call.__dict__["_torch_spellings"] = True   # marks a wrapper: never wrapped twice
    return call


def missing_attribute(owner, name):
    """The AttributeError for ``owner.name``, naming the engine's spelling when PyTorch has
    one (``owner`` an object, or a string naming a module)."""
    label = owner if isinstance(owner, str) else type(owner).__name__
    kind = "module" if isinstance(owner, str) else "object"
    message = f"{kind} {label!r} has no attribute {name!r}"
    hint = ATTRIBUTES.get(name)
    if hint is not None:
        message += f"; {name} is PyTorch's spelling: {hint}"
    return AttributeError(message)


def params_given_first(cls, args):
    """The error for an optimizer made as PyTorch's (``SGD(model.parameters(), lr=0.1)``):
    None unless the first argument is a list of variables or tensors."""
    first = args[0] if args else None
    # a Tensor or Variable, by duck type: this module is imported before either class
    if isinstance(first, (list, tuple)) and first and \
            all(hasattr(v, "shape") and hasattr(v, "dtype") for v in first):
        return ArgumentTypeError(
            f"{cls.__name__}: an optimizer takes its variables at each step, not when it is "
            f"made (PyTorch's {cls.__name__}(params, lr=...)): opt = en.optim.{cls.__name__}"
            f"(lr=...), then opt.minimize(loss_fn, model.trainable_variables) or "
            f"opt.step(grads, variables){_at()}")
    return None


def translating_init(cls, check=None):
    """Make ``cls.__init__`` (if ``cls`` defines one) translate PyTorch keywords; for
    ``__init_subclass__`` of Module and Optimizer. ``check(cls, args)`` may return an
    error to raise before the call (a PyTorch call that would not fail by itself)."""
    init = cls.__dict__.get("__init__")
    if init is None or getattr(init, "_torch_spellings", False):
        return
    call = translating(init)
    if check is not None:
        plain = call

        @functools.wraps(init)
        def call(self, *args, **kwargs):
            error = check(cls, args)
            if error is not None:
                raise error
            return plain(self, *args, **kwargs)
        call.__dict__["_torch_spellings"] = True   # marks a wrapper: never wrapped twice
    cls.__init__ = call


# The functions and tensor methods wrapped: those taking an axis (dim=, keepdim=) or
# making a tensor (requires_grad=, device=, size=). A wrapper costs about 0.1-0.3 us a
# call, so the many functions without such keywords stay as they are.
_TARGETS = {"axis", "keepdims", "shape", "data"}


def _worth_wrapping(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return bool(_TARGETS & set(params))


def _refusal(name):
    def refuse(self):
        raise missing_attribute(self, name)
    refuse.__name__ = name
    return property(refuse, doc=f"PyTorch's {name}: {ATTRIBUTES[name]}")


def install(namespaces, classes, tensor_class):
    """Wrap the functions of ``namespaces`` (modules) and the methods of ``classes`` that
    take an engine keyword a PyTorch spelling maps to. A function bound under several
    names (numpy's and the standard's) gets one wrapper, so the names stay the same object.
    ``tensor_class`` gets a property per PyTorch attribute it lacks, raising the
    AttributeError with the hint (a property, not ``__getattr__``: other failed lookups,
    such as numpy's probes for ``__array_interface__``, stay as fast as they were).
    """
    for name in TENSOR_ATTRIBUTES:
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, _refusal(name))
    made = {}

    def wrapped(fn):
        if id(fn) not in made:
            made[id(fn)] = (fn, translating(fn))
        return made[id(fn)][1]

    for ns in namespaces:
        for name, value in list(vars(ns).items()):
            if (inspect.isfunction(value) and not name.startswith("_")
                    and not getattr(value, "_torch_spellings", False) and _worth_wrapping(value)):
                setattr(ns, name, wrapped(value))
    names.replace_functions({fn: wrapper for fn, wrapper in made.values()})
    for cls in classes:
        for name, value in list(vars(cls).items()):
            if (inspect.isfunction(value) and not name.startswith("_")
                    and not getattr(value, "_torch_spellings", False) and _worth_wrapping(value)):
                setattr(cls, name, wrapped(value))
