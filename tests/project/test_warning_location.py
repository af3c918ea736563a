"""numpy's floating-point warnings inside engine kernels are shown at the user's line.

Each case runs a small user script in a fresh interpreter (default warning
filters, so the once-per-location rule applies as users see it) and reads
the warnings it prints: each names the script's line, never a file of the
engine or its generated code, and a second overflowing line of the user's is
not silenced by the first.
"""
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import engine as en
from support.paths import REPO

ROOT = REPO
WARNING_LINE = re.compile(r"^(.*?):(\d+): (\w+): (.*)$", re.M)


def run_script(tmp_path, source):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": ROOT}
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [(f, int(n), cat, msg) for f, n, cat, msg in WARNING_LINE.findall(proc.stderr)], str(path)


def test_the_readme_custom_gradient_overflow_names_the_users_line(tmp_path):
    warned, path = run_script(tmp_path, """\
        import engine as en

        @en.custom_gradient
        def log1pexp(x):
            e = en.exp(x)
            def grad_fn(dy):
                return dy * (1.0 - 1.0 / (1.0 + e))
            return en.log(1.0 + e), grad_fn

        g = en.grad(log1pexp)(en.tensor(100.0, dtype="float32"))
        assert float(g) == 1.0
        """)
    assert warned == [(path, 5, "RuntimeWarning", "overflow encountered in exp")]


def test_eager_warnings_are_shown_once_per_user_line_not_once_per_kernel(tmp_path):
    warned, path = run_script(tmp_path, """\
        import engine as en
        big = en.tensor([1000.0])
        for _ in range(3):
            a = en.exp(big)                  # line 4: shown once
        b = en.exp(big)                      # line 5: another line, shown too
        c = en.log(en.tensor([-1.0]))        # line 6
        d = en.tensor([1.0]) / 0.0           # line 7
        """)
    assert warned == [(path, 4, "RuntimeWarning", "overflow encountered in exp"),
                      (path, 5, "RuntimeWarning", "overflow encountered in exp"),
                      (path, 6, "RuntimeWarning", "invalid value encountered in log"),
                      (path, 7, "RuntimeWarning", "divide by zero encountered in divide")]


def test_a_compiled_graph_names_the_line_that_traced_the_op(tmp_path):
    warned, path = run_script(tmp_path, """\
        import engine as en

        @en.function
        def f(x, w):
            h = en.exp(x @ w)                # line 5: a fused kernel in the graph
            return en.sum(h * 2.0)

        x, w = en.full((4, 3), 300.0), en.ones((3, 2))
        f(x, w)
        f(x, w)
        """)
    assert warned and all(w[:2] == (path, 5) for w in warned), warned
    assert warned[0][3] == "overflow encountered in exp"


def test_a_script_read_from_stdin_gets_the_warning_too(tmp_path):
    # __main__ is then '<stdin>' with a loader that has no source: the warning still shows.
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, "-"], input="import engine as en\n"
                          "y = en.exp(en.tensor(1000.0))\nprint(float(y))\n", cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "inf\n", proc.stderr
    assert "<stdin>:2: RuntimeWarning: overflow encountered in exp" in proc.stderr


def test_filters_apply_at_the_users_line():
    # An "ignore" filter for the user's module silences it; pytest's recorder sees the
    # user's file. (In-process: the hook survives catch_warnings.)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        en.exp(en.tensor(1000.0))
    assert [(w.filename, str(w.message)) for w in caught] == [
        (__file__, "overflow encountered in exp")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", module=re.escape(__name__))
        en.exp(en.tensor(1000.0))
    assert caught == []


def test_an_error_filter_still_raises():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match="overflow encountered in exp"):
            en.exp(en.tensor(1000.0))


def test_warnings_from_the_users_own_numpy_code_are_left_alone():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.exp(np.array(1000.0))
        warnings.warn("mine", RuntimeWarning)
    assert [(w.filename, str(w.message)) for w in caught] == [
        (__file__, "overflow encountered in exp"), (__file__, "mine")]
