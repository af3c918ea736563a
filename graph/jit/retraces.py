"""Why an ``en.function`` traced again, what it cost, and what would stop it.

Each trace of a function is recorded (:class:`Retrace`): which arguments, by parameter
name, differ from the previous trace and how (a dimension, a dtype, a Python value), the
milliseconds tracing and compiling took, and the user's line that called. ``f.retraces()``
reads them as a :class:`RetraceReport`. Past the function's budget (``max_traces``) a new
signature runs eagerly instead of tracing; :func:`suggest_fix` names what would make one
trace serve every call (an ``input_signature`` with ``None`` for the dimension that keeps
changing, a tensor in place of a Python number).

Example:
    >>> import engine as en
    >>> f = en.function(lambda x, n: x * n)
    >>> _ = f(en.ones(3), 2.0); _ = f(en.ones(5), 2.0)
    >>> print(f.retraces().records[1].reason)
    x: dimension 0 changed from 3 to 5 (float64[3] -> float64[5])
"""
import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

from engine.pytree import is_namedtuple_type

from ..ir.signature import _is_leaf


@dataclasses.dataclass(frozen=True)
class Retrace:
    """One trace of a function: ``number`` (1 for the first), ``reason`` (what changed
    since the trace before, by parameter name; "first call" for the first), ``cost_ms``
    (tracing and compiling), ``location`` (the user's line that called) and
    ``ran_eagerly`` (past the budget: the call ran eagerly, nothing was traced)."""

    number: int
    reason: str
    cost_ms: float
    location: str
    ran_eagerly: bool = False


class RetraceReport:
    """The traces of one function, oldest first; prints as a table.

    ``records`` is the list of :class:`Retrace`; ``fix`` says what would make one trace
    serve every call seen (None when nothing would).
    """

    def __init__(self, name, records, budget, fix):
        self.name, self.records, self.budget, self.fix = name, list(records), budget, fix

    @property
    def total_ms(self):
        """Milliseconds spent tracing and compiling, all traces together."""
        return sum(r.cost_ms for r in self.records)

    def __str__(self):
        traced = sum(not r.ran_eagerly for r in self.records)
        lines = [f"{self.name}: {traced} traces ({self.total_ms:.1f} ms), budget "
                 f"{self.budget}"]
        for r in self.records:
            what = "ran eagerly (over budget)" if r.ran_eagerly else f"{r.cost_ms:8.1f} ms"
            lines.append(f"  #{r.number:<3} {what}  {r.reason}\n        at {r.location}")
        if self.fix:
            lines.append(f"  fix: {self.fix}")
        return "\n".join(lines)

    __repr__ = __str__


def leaf_names(fn, args, kwargs):
    """A name for each leaf of ``(args, kwargs)`` as ``signature_of`` flattens them:
    the parameter's name, with ``[i]``/``['key']`` for the place inside a structure.

    Example:
        >>> leaf_names(lambda x, params: 0, (1.0, (2.0, {"b": 3.0})), {})
        ['x', 'params[0]', "params[1]['b']"]
    """
    bound: dict[str, Any] = {}
    params: Mapping[str, inspect.Parameter] = {}
    try:
        params = inspect.signature(fn).parameters
        bound = dict(inspect.signature(fn).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):   # a builtin, or arguments that do not bind
        bound = {}
    positional: list[str] = []
    for name, value in bound.items():
        if params[name].kind is inspect.Parameter.VAR_POSITIONAL:
            positional += [f"{name}[{i}]" for i in range(len(value))]
        elif name not in kwargs:
            positional.append(name)
    names: list[str] = []
    for i, a in enumerate(args):
        _paths(positional[i] if i < len(positional) else f"argument {i}", a, names)
    for k in sorted(kwargs, key=repr):
        _paths(k, kwargs[k], names)
    return names


def _paths(prefix, tree, out):
    """Append a path per leaf of ``tree`` (the order of ``engine.pytree.flatten``)."""
    if _is_leaf(tree):
        out.append(prefix)
    elif tree is None:
        return
    elif type(tree) in (tuple, list) or is_namedtuple_type(type(tree)):
        for i, c in enumerate(tree):
            _paths(f"{prefix}[{i}]", c, out)
    elif type(tree) is dict:
        for k in sorted(tree, key=repr):
            _paths(f"{prefix}[{k!r}]", tree[k], out)
    else:
        out.append(prefix)


def describe(old, new, names, settings_change):
    """What changed between two signatures (``(treedef, parts)`` keys from
    ``signature_of``), by parameter name; ``settings_change()`` describes a change
    of module settings when the arguments did not change."""
    if old is None:
        return "first call"
    if old == new:
        return settings_change()
    if not _plain(old) or not _plain(new):
        return "the back end of the tensors changed"
    if old[0] != new[0] or len(old[1]) != len(new[1]):
        return "the structure of the arguments changed"
    said = [_leaf_change(names[i] if i < len(names) else f"argument leaf {i}", a, b)
            for i, (a, b) in enumerate(zip(old[1], new[1])) if a != b]
    return "; ".join(said)


def _plain(key):
    return type(key) is tuple and len(key) == 2 and type(key[1]) is tuple


def _leaf_change(name, a, b):
    if a[0] == b[0] == "T":
        (sa, da), (sb, db) = a[1:3], b[1:3]
        what = f"({_aval(a)} -> {_aval(b)})"
        if da != db:
            return f"{name}: dtype changed from {da} to {db} {what}"
        if len(sa) != len(sb):
            return f"{name}: rank changed from {len(sa)} to {len(sb)} {what}"
        dims = [d for d in range(len(sa)) if sa[d] != sb[d]]
        changes = ", ".join(f"dimension {d} changed from {sa[d]} to {sb[d]}" for d in dims)
        return f"{name}: {changes} {what}"
    if a[0] == b[0] == "S":
        return f"{name}: Python value changed from {_value(a)} to {_value(b)}"
    if a[0] == b[0] == "V":
        return f"{name}: a different variable"
    return f"{name}: kind changed ({_kind(a)} -> {_kind(b)})"


def _aval(part):
    return f"{part[2]}[{', '.join(str(d) for d in part[1])}]"


def _value(part):
    value = part[2]
    if type(value) is tuple:   # a signed zero, a NaN or a complex (signature._value_key)
        value = "nan" if value == ("nan",) else value[0] if len(value) == 2 else value
    return f"{part[1]} {value!r}"


def _kind(part):
    return {"T": "tensor", "S": "Python value", "V": "variable"}.get(part[0], part[0])


def suggest_fix(signatures, names):
    """What would make one trace serve the calls whose signatures are ``signatures``
    (keys from ``signature_of``), or None.

    Tensors whose dimensions vary: an ``input_signature`` with ``None`` there (named by
    parameter); Python numbers that vary: pass them as tensors.
    """
    plain = [s for s in signatures if _plain(s)]
    if len(plain) < 2 or len({(s[0], len(s[1])) for s in plain}) != 1:
        return None
    columns = list(zip(*[s[1] for s in plain]))
    specs: list[str | None] = []
    varying: list[str] = []
    numbers: list[str] = []
    for i, parts in enumerate(columns):
        name = names[i] if i < len(names) else f"argument leaf {i}"
        kinds = {p[0] for p in parts}
        if kinds == {"T"} and len({(len(p[1]), p[2]) for p in parts}) == 1:
            shape = tuple(None if len({p[1][d] for p in parts}) > 1 else parts[0][1][d]
                          for d in range(len(parts[0][1])))
            spec = f"en.TensorSpec(shape={shape}, dtype='{parts[0][2]}')"
            specs.append(spec)
            if None in shape:
                varying.append(f"{name}: {spec}")
        elif kinds == {"S"} and len(set(parts)) > 1 and \
                {p[1] for p in parts} <= {"int", "float", "bool", "complex"}:
            numbers.append(name)
        elif len(set(parts)) > 1:
            return None   # a dtype, rank or kind that changes: one signature cannot cover it
        else:
            specs.append(None)   # a Python value or variable that stays the same
    fixes = []
    if varying and len(specs) == len(columns) and None not in specs:
        fixes.append(f"input_signature=[{', '.join(str(s) for s in specs)}] traces once for "
                     f"every size")
    elif varying:
        fixes.append(f"trace once for every size with an input_signature (tensor arguments "
                     f"only) holding None for the dimension that changes: {'; '.join(varying)}")
    if numbers:
        fixes.append(f"pass {', '.join(numbers)} as tensors (en.tensor(...)): each new Python "
                     f"number retraces, a tensor's value does not")
    return "; ".join(fixes) or None
