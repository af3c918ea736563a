"""Converted code looks like the user's own to ``inspect`` and in tracebacks (issue 45,
item 13): ``inspect.currentframe()``, ``sys._getframe()``, ``locals()``, ``eval`` and
``warnings.warn`` see the user's function and line; the frames of branches, loop bodies
and conditional expressions carry the user's function name; nested functions keep
their plain qualified names. The expected lines are found in this file's text."""
import inspect
import sys
import traceback
import warnings

import numpy as np
import pytest

import engine as en

_LINES = open(__file__).read().splitlines()


def line_of(marker):
    """The line number (1-based) of the one line of this file ending in ``# <marker>``."""
    found = [i + 1 for i, text in enumerate(_LINES) if text.rstrip().endswith(f"# <{marker}>")]
    assert len(found) == 1, (marker, found)
    return found[0]


def where(frame):
    return frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno


def test_currentframe_is_the_users_frame_at_top_level_and_in_a_tensor_branch():
    seen = {}

    def f(x):
        seen["top"] = where(inspect.currentframe())  # <top>
        seen["getframe"] = where(sys._getframe())  # <getframe>
        if x > 0:
            seen["branch"] = where(inspect.currentframe())  # <branch>
            y = x * 2.0
        else:
            y = -x
        for i in range(2):
            seen["loop"] = where(inspect.currentframe())  # <loop>
            y = y + i
        return y

    out = en.function(f)(en.tensor(1.5))
    assert float(out) == 1.5 * 2.0 + 0 + 1
    for key in ("top", "getframe", "branch", "loop"):
        assert seen[key] == ("f", __file__, line_of(key)), key


def test_locals_and_eval_see_the_users_variables():
    seen = {}

    def f(x):
        scale = 3.0
        seen["names"] = sorted(locals())
        return eval("x * scale")
    f(en.tensor(2.0))
    eager = seen.pop("names")
    out = en.function(f)(en.tensor(2.0))
    assert float(out) == 6.0
    assert seen["names"] == eager == ["scale", "seen", "x"]


def test_warnings_name_the_users_line():
    def f(x):
        if x > 0:
            warnings.warn("from a tensor branch")  # <warn>
        return x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        en.function(f)(en.tensor(1.0))
    mine = [w for w in caught if str(w.message) == "from a tensor branch"]
    assert mine and (mine[0].filename, mine[0].lineno) == (__file__, line_of("warn"))


def _frames_here(err):
    return [(fs.name, fs.lineno) for fs in traceback.extract_tb(err.__traceback__)
            if fs.filename == __file__]


def test_traceback_frames_of_a_branch_carry_the_users_function_name():
    def bad(x):
        if x > 0:  # <if>
            y = en.reshape(x, (3, 5))  # <reshape>
        else:
            y = x
        return y

    with pytest.raises(en.errors.ShapeError) as info:
        en.function(bad)(en.tensor(1.0))
    frames = _frames_here(info.value)
    assert frames[-2:] == [("bad", line_of("if")), ("bad", line_of("reshape"))], frames
    assert not any(name.startswith("_ag_") for name, _ in frames)


def test_traceback_frames_of_a_conditional_expression_and_a_loop_body():
    def bad(x):
        y = x
        while y < 10.0:
            y = y * 2.0 if y > 1.0 else en.reshape(y, (4,))  # <ifexp>
        return y

    with pytest.raises(en.errors.ShapeError) as info:
        en.function(bad)(en.tensor(0.5))
    frames = _frames_here(info.value)
    assert frames[-1] == ("bad", line_of("ifexp")), frames
    assert {name for name, _ in frames[1:]} == {"bad"}, frames


def test_nested_functions_keep_their_qualified_names():
    names = {}

    def outer(x):
        def inner(v):
            return v + 1.0
        names["inner"] = inner.__qualname__
        if x > 0:
            def in_branch(v):
                return v * 2.0
            names["in_branch"] = in_branch.__qualname__
            x = in_branch(x)
        names["lambda"] = (lambda: 0).__qualname__
        return inner(x)

    eager = {}
    outer(en.tensor(1.0))
    eager.update(names)
    names.clear()
    out = en.function(outer)(en.tensor(1.0))
    np.testing.assert_allclose(float(out), 3.0)
    assert names == eager
    assert eager["in_branch"].endswith("outer.<locals>.in_branch")
