"""An optimizer's state as named variables, so ``en.nn.save`` / ``load_into`` take optimizers.

The names are ``"iterations"``, ``"slots.<i>.<slot>"`` (``i`` the position of
the optimized variable in the order the optimizer was built: the order of the
variables its first ``step`` or ``build`` saw) and ``"state.<name>"`` for the
rest of what ``opt.variables()`` lists (L-BFGS's history), so a file fits any
optimizer of the same kind built on the same model. A variable's own name is
not used: two layers made with default names share one.

Example:
    >>> import engine as en
    >>> model = en.nn.Linear(2, 1, generator=0)
    >>> opt = en.optim.SGD(lr=0.1, momentum=0.9).build(model.trainable_variables)
    >>> [name for name, _ in named_variables(opt)]
    ['iterations', 'slots.0.velocity', 'slots.1.velocity']
"""
from ..errors import LoadError
from ..optim.base import Optimizer


def named_variables(opt):
    """``[(name, Variable)]`` of ``opt``'s state: its step counter, then each slot."""
    out = [("iterations", opt.iterations)]
    for i, (_, slots) in enumerate(opt._slots.values()):
        out.extend((f"slots.{i}.{name}", var) for name, var in slots.items())
    listed = {id(var) for _, var in out}
    names: set[str] = set()
    for var in opt.variables():
        if id(var) not in listed:
            name = "state." + str(var.name).rsplit("/", 1)[-1]
            name = name if name not in names else f"{name}.{len(names)}"
            names.add(name)
            out.append((name, var))
    return out


def prepare(opt, names, variables, who):
    """Build ``opt`` on ``variables`` when given; refuse to load slots into an optimizer that
    has none yet (its slots are made for the variables it will optimize)."""
    if variables is not None:
        opt.build(variables)
    have = {name for name, _ in named_variables(opt)}
    if variables is None and any(n not in have for n in names):
        raise LoadError(f"{who}: the file holds {type(opt).__name__} state for variables this "
                        "optimizer has not seen yet; build it first, e.g. "
                        "load_into(opt, path, variables=model.trainable_variables)")


def is_optimizer(obj):
    return isinstance(obj, Optimizer)
