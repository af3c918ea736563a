"""The typed contracts (engine/contracts.py) match the registry they describe."""
import collections.abc
import typing

import pytest

import engine  # noqa: F401  (registers every op)
from engine.contracts import Rules
from engine.op import REGISTRY, RULE_KINDS

HINTS = typing.get_type_hints(Rules)


def fits(value, hint):
    """Whether ``value`` has the runtime shape of the type ``hint`` (unions, None, bool,
    str, tuples, dicts and callables: what the rule types are made of)."""
    origin = typing.get_origin(hint)
    if hint is type(None):
        return value is None
    if origin is typing.Union:
        return any(fits(value, arm) for arm in typing.get_args(hint))
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        return callable(value)
    if hint is typing.Any:
        return True
    return isinstance(value, origin or hint)


def test_rules_names_every_rule_kind():
    assert set(HINTS) == set(RULE_KINDS), (
        "engine/contracts.py's Rules and engine/op.py's RULE_KINDS must name the same kinds; "
        f"only in Rules: {sorted(set(HINTS) - set(RULE_KINDS))}, "
        f"only in RULE_KINDS: {sorted(set(RULE_KINDS) - set(HINTS))}")


@pytest.mark.parametrize("kind", sorted(RULE_KINDS))
def test_every_declared_rule_fits_its_type(kind):
    bad = [(name, op.rules[kind]) for name, op in sorted(REGISTRY.items())
           if kind in op.rules and not fits(op.rules[kind], HINTS[kind])]
    assert not bad, f"{kind} rules that are not {HINTS[kind]}: {bad[:5]}"


def test_fits_tells_the_rule_shapes_apart():
    assert fits(True, HINTS["shape_only"]) and not fits("yes", HINTS["shape_only"])
    assert fits(None, HINTS["onnx"]) and fits(("node", "Exp"), HINTS["onnx"])
    assert not fits(["node", "Exp"], HINTS["onnx"])
    assert fits("np.exp({0})", HINTS["scalar_form"]) and fits(len, HINTS["scalar_form"])
    assert not fits(3, HINTS["scalar_form"]) and not fits(None, HINTS["jvp"])
    assert fits({0: [1]}, HINTS["may_overwrite"]) and not fits([0], HINTS["may_overwrite"])
