"""The :class:`Optimizer` base class: argument handling, state variables, ``minimize``.

Every optimizer keeps its state in non-trainable :class:`~engine.Variable`\\ s
and writes its update math with engine ops and ``Variable.assign*``. That
keeps a whole training step traceable: run under the graph tracer, the update
becomes graph nodes. (L-BFGS runs the same code on numpy values when eager:
its step is dozens of operations, see ``engine/optim/lbfgs.py``.)

State is created by :meth:`Optimizer.build`, which ``step`` calls on first
use. When a step will be traced, call ``build(vars)`` (or take one eager
step) first, so that tracing does not have to create variables.

Example:
    >>> import engine as en
    >>> w = en.Variable([1.0, 2.0])
    >>> opt = en.optim.SGD(lr=0.5)
    >>> _ = opt.step([en.tensor([1.0, 1.0])], [w])
    >>> w.numpy()
    array([0.5, 1.5])
"""
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ops, torch_spellings
from ..autodiff import GradientTape
from ..compute import compute
from ..errors import DTypeError, EngineError, ShapeError
from ..tensor import Tensor, tensor
from ..transaction import all_or_nothing
from ..variable import Variable


class Optimizer:
    """Base class. Subclasses implement ``_create_state(var)`` and ``_update(grads, vars)``.

    Common API:
      * ``step(grads, vars)``: one update from explicit gradients.
      * ``apply_gradients(grads_and_vars)``: the same from ``(grad, var)`` pairs.
      * ``minimize(loss_fn, vars)``: compute ``loss_fn()`` and its gradient
        with a :class:`~engine.GradientTape`, step, and return the loss.

    ``vars`` is a list of variables or one variable (for example a single
    flat parameter vector); ``grads`` has the same structure.
    """

    # Set or defined by each subclass: the learning rate (a number, or a schedule called
    # on the step counter) and the update itself.
    lr: float | Callable[[Variable], Any]
    _update: Callable[..., None]
    # This step's learning rate per dtype while a step runs (learning_rate), else None.
    _lr_this_step: dict[Any, Tensor] | None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # PyTorch's keywords and SGD(params, lr=...) get errors naming the engine's way
        torch_spellings.translating_init(cls, check=torch_spellings.params_given_first)

    def __getattr__(self, name):
        # Only for names not found: opt.zero_grad() says why there is nothing to zero.
        raise torch_spellings.missing_attribute(self, name)

    def __init__(self, name):
        self.name = name
        # Steps taken so far (int64); the bias correction in Adam reads it.
        self.iterations = Variable(np.int64(0), name=f"{name}/iterations", trainable=False)
        self._slots = {}     # id(var) -> (var, {slot name: Variable})

    # -- state ----------------------------------------------------------------
    def build(self, vars):
        """Create the state variables for ``vars`` (idempotent). Returns ``self``."""
        for v in _as_var_list(vars, f"{type(self).__name__}.build"):
            if id(v) not in self._slots:
                if v.dtype.kind != "f":
                    raise DTypeError(f"{type(self).__name__}: variable {v.name!r} has dtype "
                                     f"{v.dtype}; only floating-point variables can be optimized")
                self._slots[id(v)] = (v, self._create_state(v))
        return self

    def _create_state(self, var):
        return {}

    def slot(self, var, name):
        """The state variable ``name`` (e.g. ``"m"``) kept for ``var``."""
        try:
            return self._slots[id(var)][1][name]
        except KeyError:
            raise EngineError(f"{type(self).__name__} has no slot {name!r} for variable "
                              f"{getattr(var, 'name', var)!r}") from None

    def _new_slot(self, var, name, init=None, dtype=None):
        """A non-trainable variable shaped like ``var`` (zeros unless ``init``)."""
        value = np.zeros(var.shape, dtype=dtype or var.dtype) if init is None else init
        backend = var.backend if isinstance(var, Variable) else None
        if backend is not None and not backend.numpy_arrays and \
                isinstance(value, (np.ndarray, np.generic)):
            # the slot lives where its variable does (a numpy scalar, e.g. Adam's step
            # count, too)
            value = backend.from_numpy(np.asarray(value))
        return Variable(value, name=f"{self.name}/{var.name}/{name}", trainable=False)

    def variables(self):
        """Every state variable of this optimizer (``iterations`` first)."""
        out = [self.iterations]
        for _, slots in self._slots.values():
            out.extend(slots.values())
        return out

    def learning_rate(self, dtype="float64"):
        """This step's learning rate: ``lr``, or a schedule's value at ``iterations``.

        A schedule (see :mod:`engine.optim.schedules`) is evaluated in engine ops
        on the step counter, so a traced step reads it when the graph runs.
        """
        if not callable(self.lr):
            return self.lr
        # One evaluation per step and dtype, however many variables the step updates.
        cache = getattr(self, "_lr_this_step", None)
        if cache is None:
            return ops.cast(self.lr(self.iterations), dtype)
        if dtype not in cache:
            cache[dtype] = ops.cast(self.lr(self.iterations), dtype)
        return cache[dtype]

    # -- stepping ---------------------------------------------------------------
    def step(self, grads, vars):
        """Apply one update to ``vars`` from ``grads`` (same structure). Returns ``vars``.

        A gradient of ``None`` leaves its variable unchanged (SGD, Adam). A step
        is all or nothing: if it raises part way (``check_numerics`` stopping
        at a NaN), the variables, the state and ``iterations`` are as before.
        """
        var_list = _as_var_list(vars, f"{type(self).__name__}.step")
        grad_list = _as_grad_list(grads, var_list, f"{type(self).__name__}.step")
        self.build(var_list)
        self._lr_this_step = {}
        try:
            with all_or_nothing():   # a step that raises (check_numerics, a bad shape) undoes itself
                self._update(grad_list, var_list)
                self.iterations.assign_add(1)
        finally:
            self._lr_this_step = None
        return vars

    def apply_gradients(self, grads_and_vars):
        """Apply one update from an iterable of ``(gradient, variable)`` pairs.

        Example:
            >>> import engine as en
            >>> w = en.Variable(3.0)
            >>> _ = en.optim.SGD(0.1).apply_gradients([(en.tensor(1.0), w)])
            >>> round(float(w), 6)
            2.9
        """
        pairs = list(grads_and_vars)
        for i, pair in enumerate(pairs):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise EngineError(f"{type(self).__name__}.apply_gradients: item {i} is not a "
                                  f"(gradient, variable) pair: {pair!r}")
        grads = [g for g, _ in pairs]
        vars = [v for _, v in pairs]
        return self.step(grads, vars)

    def minimize(self, loss_fn, vars):
        """Compute ``loss = loss_fn()`` and its gradient w.r.t. ``vars``, step, return ``loss``.

        ``loss_fn`` takes no arguments, reads the variables and returns a scalar.

        Example:
            >>> import engine as en
            >>> w = en.Variable(3.0)
            >>> opt = en.optim.SGD(lr=0.25)
            >>> float(opt.minimize(lambda: w * w, w))   # loss before the step
            9.0
            >>> float(w)
            1.5
        """
        var_list = _as_var_list(vars, f"{type(self).__name__}.minimize")
        loss, grads = value_and_gradients(loss_fn, var_list, type(self).__name__)
        self._minimize_step(loss_fn, loss, grads, var_list)
        return loss

    def _minimize_step(self, loss_fn, loss, grads, var_list):
        self.step(grads, var_list)

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"


# ---- helpers shared by the optimizers ------------------------------------------
def value_and_gradients(loss_fn, var_list, who):
    """``(loss_fn(), [d loss / d v for v in var_list])``; ``None`` where a var is unused."""
    with GradientTape() as tape:
        tape.watch(var_list)   # non-trainable variables are optimized too when passed
        loss = loss_fn()
    if not isinstance(loss, (Tensor, Variable)):
        loss = tensor(loss)
    if loss.shape != ():
        raise ShapeError(f"{who}.minimize: loss_fn must return a scalar, got shape {loss.shape}; "
                         "reduce it first (for example with en.mean)")
    grads = tape.gradient(loss, var_list)
    if isinstance(loss, Tensor) and loss._value is not None and loss.backend.lazy:
        # Data on a lazy back end (Dask): the loss and every gradient in one computation,
        # which reads the data once; the step then runs on numpy values.
        found = compute(loss, *[g for g in grads if g is not None])
        loss, rest = found[0], iter(found[1:])
        grads = [None if g is None else next(rest) for g in grads]
    return loss, grads


def _as_var_list(vars, who):
    if isinstance(vars, Variable):
        return [vars]
    if isinstance(vars, dict):
        vars = list(vars.values())
    try:
        var_list = list(vars)
    except TypeError:
        raise EngineError(f"{who}: expected a Variable or a list of Variables, got "
                          f"{type(vars).__name__}") from None
    if not var_list:
        raise EngineError(f"{who}: no variables to optimize")
    seen = set()
    for i, v in enumerate(var_list):
        if not isinstance(v, Variable):
            raise EngineError(f"{who}: item {i} is a {type(v).__name__}, not an en.Variable; "
                              "optimizers update variables in place")
        if id(v) in seen:
            raise EngineError(f"{who}: variable {v.name!r} is listed twice")
        seen.add(id(v))
    return var_list


def _as_grad_list(grads, var_list, who):
    if isinstance(grads, dict):
        grads = list(grads.values())
    if len(var_list) == 1 and not isinstance(grads, (list, tuple)):
        grads = [grads]
    grads = list(grads)
    if len(grads) != len(var_list):
        raise EngineError(f"{who}: got {len(grads)} gradients for {len(var_list)} variables")
    out = []
    for g, v in zip(grads, var_list):
        if g is not None:
            if not isinstance(g, (Tensor, Variable)):
                g = tensor(np.asarray(g, dtype=v.dtype))
            if tuple(g.shape) != tuple(v.shape):
                raise ShapeError(f"{who}: gradient of shape {tuple(g.shape)} for variable "
                                 f"{v.name!r} of shape {v.shape}")
            g = as_dtype(g, v.dtype)
        out.append(g)
    return out


def as_dtype(x, dtype):
    """``x`` cast to ``dtype`` when it differs (so ``assign`` accepts it)."""
    return x if x.dtype == dtype else ops.cast(x, dtype)
