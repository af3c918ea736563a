"""Converted returns, breaks and continues in elif chains and nested branches, and
branches that read what the other branch assigns.

Each function runs eagerly (plain Python on concrete tensors, the reference) and as
``en.function`` (its tensor ``if``/``for`` converted to graph control flow) on inputs
that take every branch; the two must agree.
"""
import numpy as np
import pytest

import engine as en


def return_in_elif(x):
    if x > 1:
        return x * 10
    elif x < -1:
        return x * 20
    return x * 30


def return_in_if_nested_in_else(x):
    if x > 1:
        return x * 10
    else:
        if x < -1:
            return x * 20
    return x * 30


def returns_in_every_branch_but_one(x):
    y = x
    if x > 2:
        return x + 1
    elif x > 0:
        y = x * 2
    elif x > -2:
        return x - 1
    else:
        y = x * 3
    return y * 5


def return_in_a_deeper_elif(x):
    if x > 3:
        return x
    elif x > 1:
        if x > 2:
            return x * 2
        elif x > 1.5:
            return x * 3
    return x * 4


def other_branch_reads_what_one_assigns(x):
    y = x * 1
    if x > 0:
        y = y * 100
        out = y
    else:
        out = y + 1   # y as before the if, not as the true branch left it
    return out


def continue_in_elif(xs):
    s = en.tensor(0.0)
    for x in xs:
        if x > 10:
            break
        elif x < 0:
            continue
        s = s + x
    return s


def break_in_elif(xs):
    s = en.tensor(0.0)
    for x in xs:
        if x < 0:
            continue
        elif x > 10:
            break
        s = s + x
    return s


def continue_as_the_last_statement(xs):
    s = en.tensor(0.0)
    for x in xs:
        s = s + x
        if x < 0:
            continue
    return s


def continue_in_nested_else(xs):
    s = en.tensor(0.0)
    for x in xs:
        if x > 10:
            s = s - 1
        else:
            if x < 0:
                continue
        s = s + x * 2
    return s


def return_from_loop_in_elif(xs):
    total = en.tensor(0.0)
    for x in xs:
        if x > 100:
            total = total + 1
        elif x < 0:
            return total * -1
        total = total + x
    return total


SCALAR_CASES = [return_in_elif, return_in_if_nested_in_else, returns_in_every_branch_but_one,
                return_in_a_deeper_elif, other_branch_reads_what_one_assigns]
LOOP_CASES = [continue_in_elif, break_in_elif, continue_as_the_last_statement,
              continue_in_nested_else, return_from_loop_in_elif]


@pytest.mark.parametrize("fn", SCALAR_CASES, ids=lambda f: f.__name__)
def test_returns_in_branches_match_eager(fn):
    traced = en.function(fn)
    for v in (-3.0, -1.5, -0.5, 0.5, 1.25, 1.75, 2.5, 4.0):
        want = float(fn(en.tensor(v)))
        assert float(traced(en.tensor(v))) == want, (fn.__name__, v)


@pytest.mark.parametrize("fn", LOOP_CASES, ids=lambda f: f.__name__)
def test_jumps_in_loops_match_eager(fn):
    traced = en.function(fn)
    for xs in ([1.0, -5.0, 2.0], [3.0, 20.0, 4.0], [-1.0, -2.0], [5.0, 200.0, -1.0, 7.0],
               [0.5, 11.0, -3.0]):
        x = en.tensor(np.array(xs))
        want = float(fn(x))
        assert float(traced(x)) == want, (fn.__name__, xs)
