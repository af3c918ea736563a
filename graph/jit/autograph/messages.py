"""Errors of converted code: each names the variable and the user's line.

Converted code is compiled with the user's file name and line numbers, so the
innermost user frame of an operator call is the ``if``/``while``/``for`` line
itself; :func:`here` formats it.
"""
from engine.errors import (DTypeError, ShapeError, TracingError, describe_aval, format_location,
                           user_frame)

from .values import Undefined

RETVAL = "_ag_retval"


def here():
    """``file:line in function`` of the converted statement being run."""
    return format_location(user_frame(2))


def what(name):
    """How a state slot is named to the user."""
    if name == RETVAL:
        return "the return value"
    if name.startswith("_ag_"):
        return "a loop flag"
    return f"'{name}'"


def describe(value):
    if isinstance(value, Undefined):
        return "undefined"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return describe_aval((tuple(value.shape), value.dtype))
    return f"a Python {type(value).__name__} ({value!r})"


def only_in_one_branch(name, branch, kind, loc):
    if name == RETVAL:
        other = "false" if branch == "true" else "true"
        return TracingError(
            f"the {branch} branch of the {kind} at {loc} returns a value and the {other} branch "
            "does not; return a value on every path (the same structure, shapes and dtypes)")
    return TracingError(
        f"{what(name)} is assigned only in the {branch} branch of the {kind} at {loc} and is used "
        f"after it; assign it before the {kind} or in both branches")


def branch_mismatch(name, kind, loc, a, b):
    err = DTypeError if getattr(a, "dtype", None) != getattr(b, "dtype", None) else ShapeError
    return err(f"{what(name)} is {describe(a)} in the true branch of the {kind} at {loc} but "
               f"{describe(b)} in the false branch; a tensor condition needs the same structure, "
               "shape and dtype from both branches")


def structure_mismatch(name, kind, loc, a, b):
    return TracingError(f"{what(name)} has a different structure in the two branches of the "
                        f"{kind} at {loc} ({a} vs {b})")


def undefined_before_loop(name, kind, loc):
    return TracingError(
        f"{what(name)} is assigned in the {kind} at {loc} and used after it (or in its next "
        f"iteration), but has no value before it; a loop on tensors needs every loop variable "
        f"defined before the loop: assign {what(name)} before the loop")


def loop_var_changed(name, kind, loc, before, after):
    err = DTypeError if getattr(before, "dtype", None) != getattr(after, "dtype", None) \
        else ShapeError
    return err(f"loop variable {what(name)} of the {kind} at {loc} is {describe(before)} before "
               f"the loop and {describe(after)} after one iteration; a loop on tensors must keep "
               "each loop variable's shape and dtype (cast it or give it its final shape before "
               "the loop)")


def python_value_changed(name, kind, loc, before, after):
    return TracingError(
        f"{what(name)} is {describe(before)} before the {kind} at {loc} and {describe(after)} "
        "after one iteration; a loop on tensors can carry tensors and numbers, not other Python "
        "values that change")


def list_in_tensor_loop(name, kind, loc):
    if kind == "if":
        return TracingError(
            f"the Python list '{name}' grows inside the if at {loc}, which runs on a tensor "
            "condition (both branches are traced once, neither runs per call); assign a value "
            "in both branches and append after the if instead")
    return TracingError(
        f"the Python list '{name}' grows inside the {kind} at {loc}, which runs on tensors (so its "
        "body is traced once, not run per iteration); collect per-step values as the outputs of "
        "en.scan, write them into a preallocated tensor carried by the loop, or loop over a "
        "Python range instead")


def ambiguous_truth(value, loc):
    return ShapeError(f"the truth value of a tensor {describe(value)} with more than one element "
                      f"is ambiguous (at {loc}); reduce it with en.any or en.all")


def no_source(name, reason):
    return f"en.function: {name} was not converted ({reason}); tracing it as written, so " \
        "Python control flow on tensors in it raises TracingError"


def unknown_length(value, loc):
    return TracingError(f"len() of {describe(value)}, whose leading size is unknown while "
                        f"tracing (at {loc}); loop over the tensor itself (`for row in x`, an "
                        "en.scan) instead")


def global_in_tensor_code(name, kind, loc):
    return TracingError(
        f"the Python global '{name[len('global '):]}' is assigned in the {kind} at {loc}, which "
        "runs on tensors, so it is traced once rather than run when the graph runs; keep "
        "run-time state in an en.Variable (assign it) or return the value instead")
