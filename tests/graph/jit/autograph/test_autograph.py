"""Python control flow inside en.function (issue 17): converted and traced, the result equals
the plain Python function run eagerly, bit for bit in float64 with optimize=False, with the
inputs as Python values and as tensors, for loops of 0, 1 and several iterations."""
import warnings

import numpy as np
import pytest

import engine as en
from engine.pytree import flatten


def _arrays(result):
    leaves, tree = flatten(result, is_leaf=lambda x: isinstance(x, en.Tensor))
    return [np.asarray(x.numpy() if isinstance(x, en.Tensor) else x) for x in leaves], tree


def assert_same(got, want):
    g, gt = _arrays(got)
    w, wt = _arrays(want)
    assert gt == wt, (got, want)
    for a, b in zip(g, w):
        assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
        assert np.array_equal(a, b, equal_nan=True), (a, b)


def check(fn, *arg_sets, traces=None, optimize=False):
    """Each argument tuple: traced result == eager result (and with tensors, one trace)."""
    f = en.function(fn, optimize=optimize)
    for args in arg_sets:
        assert_same(f(*args), fn(*args))
    if traces is not None:
        assert f.trace_count == traces
    return f


def t(x, dtype="float64"):
    return en.tensor(np.asarray(x, dtype=dtype))


# ---- if ---------------------------------------------------------------------------------
def branchy(x):
    if en.sum(x) > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def if_only(x):
    y = x
    if en.sum(x) > 1.0:
        y = y + 1.0
    return y


def elif_chain(x):
    s = en.sum(x)
    if s > 10.0:
        r = x * 3.0
    elif s > 0.0:
        r = x * 2.0
    elif s > -5.0:
        r = x - 1.0
    else:
        r = -x
    return r


def nested_ifs(x, y):
    if en.sum(x) > 0:
        if en.sum(y) > 0:
            out = x + y
        else:
            out = x - y
    else:
        out = x * y
        if en.max(y) > 1.0:
            out = out * 0.5
    return out


@pytest.mark.parametrize("fn", [branchy, if_only, elif_chain])
def test_if_forms_match_eager_for_tensors(fn):
    inputs = [[1.0, 2.0], [-1.0, -2.0], [0.25, 0.5], [6.0, 6.0], [-3.0, 1.0], [-9.0, 0.0]]
    f = check(fn, *[(t(v),) for v in inputs])
    assert f.trace_count == 1      # one trace for every value


def test_nested_ifs_every_path():
    values = [([1.0], [1.0]), ([1.0], [-1.0]), ([-1.0], [2.0]), ([-1.0], [0.5])]
    check(nested_ifs, *[(t(a), t(b)) for a, b in values], traces=1)


def test_if_on_python_values_is_plain_python():
    def f(x, flag):
        if flag:
            y = x + 1.0
        else:
            y = x.tanh()      # not traced when flag is True
        return y
    g = en.function(f, optimize=False)
    assert_same(g(t([1.0]), True), f(t([1.0]), True))
    assert_same(g(t([1.0]), False), f(t([1.0]), False))
    ops_ = [n.op.name for n in g.graph_for(t([1.0]), True).nodes]
    assert "tanh" not in ops_ and "cond" not in ops_


def test_if_with_python_scalar_inputs():
    def f(a, b):
        if a > b:
            return a - b
        return b - a
    check(f, (3.0, 1.0), (1.0, 3.0))
    check(f, (t(3.0), t(1.0)), (t(1.0), t(3.0)), traces=1)


def test_python_number_meets_tensor_in_other_branch():
    def f(x):
        if x > 0:
            y = x
        else:
            y = 0.0
        return y * 1.0
    check(f, (t(2.5),), (t(-1.0),), traces=1)


def test_name_created_in_both_branches_used_after():
    def f(x):
        if en.sum(x) > 0:
            a, b = x, x * 2.0
        else:
            a, b = -x, x
        return a + b
    check(f, (t([1.0]),), (t([-1.0]),), traces=1)


def test_name_assigned_in_one_branch_not_used_after_is_fine():
    def f(x):
        if en.sum(x) > 0:
            tmp = x * 2.0
            x = tmp + 1.0
        return x
    check(f, (t([1.0]),), (t([-1.0]),), traces=1)


# ---- conditional expressions and and/or/not -------------------------------------------------
def test_conditional_expression():
    def f(x):
        return x * 2.0 if en.sum(x) > 0 else x - 3.0
    check(f, (t([1.0]),), (t([-1.0]),), traces=1)
    check(f, (np.float64(1.0),), (np.float64(-1.0),))


def test_and_or_not_on_tensors():
    def f(x, y):
        both = x > 0 and y > 0
        either = x > 0 or y > 0
        neither = not (x > 0) and not (y > 0)
        if both:
            r = x + y
        elif either and not neither:
            r = x - y
        else:
            r = x * y
        return r, both, either, neither
    cases = [(1.0, 2.0), (1.0, -2.0), (-1.0, 2.0), (-1.0, -2.0)]
    check(f, *[(t(a), t(b)) for a, b in cases], traces=1)


def test_and_or_mixing_python_and_tensors():
    def f(x, flag):
        if flag and x > 0:
            r = x + 1.0
        elif not flag or x < -1.0:
            r = x - 1.0
        else:
            r = x
        return r
    for flag in (True, False):
        check(f, (t(2.0), flag), (t(-2.0), flag), (t(-0.5), flag))
    check(f, (2.0, True), (-0.5, True), (-2.0, False))


def test_and_short_circuits_an_index_that_would_fail():
    # `i < n and x[i] > 0` must not evaluate x[i] once i == n (it would be out of range).
    def f(x):
        i = en.tensor(0)
        while i < 3 and x[i] > 0:
            i = i + 1
        return i
    check(f, (t([1.0, 2.0, 3.0]),), (t([1.0, -2.0, 3.0]),), (t([-1.0, 2.0, 3.0]),), traces=1)


def test_and_or_return_operand_values_like_python():
    def f(x, y):
        return (x and y), (x or y)
    check(f, (t(0.0), t(2.0)), (t(3.0), t(2.0)), traces=1)


# ---- while --------------------------------------------------------------------------------
def count_down(n):
    total = en.tensor(0.0)
    while n > 0:
        total = total + en.cast(n, "float64") * 0.5
        n = n - 1
    return total, n


@pytest.mark.parametrize("n", [0, 1, 7])
def test_while_on_tensor_condition(n):
    check(count_down, (en.tensor(n),))


def test_while_traces_once_for_many_bounds():
    f = check(count_down, *[(en.tensor(n),) for n in (0, 1, 2, 7, 30)])
    assert f.trace_count == 1
    assert "while_loop" in [n.op.name for n in f.graph_for(en.tensor(3)).nodes]


def test_while_with_python_bound_unrolls():
    f = check(count_down, (3,), (0,))
    assert "while_loop" not in [n.op.name for n in f.graph_for(3).nodes]


def test_while_python_counter_becomes_tensor():
    def f(x):
        k = 0
        s = 0.0
        while s < x:
            s = s + 1.5
            k += 1
        return s, k
    for x in (0.0, 1.0, 10.0):
        got = en.function(f, optimize=False)(t(x))
        want = f(t(x))
        assert float(got[0]) == float(want[0]) and int(got[1]) == want[1]


def test_while_keeps_float32_when_started_from_a_python_float():
    def f(x):
        s = 0.0
        while en.sum(s) < 10.0:
            s = s + x
        return s
    check(f, (t(3.0, "float32"),), (t(20.0, "float32"),), traces=1)


# ---- for ------------------------------------------------------------------------------------
def sum_range(x, n):
    acc = x * 0.0
    for i in range(n):
        acc = acc + x * en.cast(i, "float64")
    return acc


@pytest.mark.parametrize("n", [0, 1, 5])
def test_for_over_range_of_tensor(n):
    check(sum_range, (t([1.0, 2.0]), en.tensor(n)), (t([1.0, 2.0]), n))


def test_for_range_start_stop_step():
    def f(a, b):
        acc = en.tensor(0)
        for i in range(a, b, 3):
            acc = acc + i
        for j in range(b, a, -2):
            acc = acc * 2 - j
        return acc
    check(f, *[(en.tensor(a), en.tensor(b)) for a, b in [(0, 10), (2, 3), (5, 5), (7, 1)]],
          traces=1)


def row_sum(xs):
    acc = en.zeros((3,))
    for row in xs:
        acc = acc + row * row
    return acc


@pytest.mark.parametrize("rows", [0, 1, 4])
def test_for_over_tensor_rows(rows):
    xs = np.arange(rows * 3, dtype=np.float64).reshape(rows, 3) / 7.0
    check(row_sum, (en.tensor(xs),))


def test_for_over_rows_with_unknown_leading_size():
    f = en.function(row_sum, optimize=False,
                    input_signature=[en.TensorSpec((None, 3), "float64")])
    for rows in (0, 1, 5):
        xs = np.linspace(-1, 1, rows * 3).reshape(rows, 3)
        assert_same(f(en.tensor(xs)), row_sum(en.tensor(xs)))
    assert f.trace_count == 1
    assert "scan" in [n.op.name for n in f.graph_for(en.tensor(np.ones((2, 3)))).nodes]


def test_for_over_python_list_unrolls():
    def f(x, ws):
        for w in ws:
            x = en.tanh(x * w)
        return x
    check(f, (t([0.5]), [1.0, 2.0, 3.0]), (t([0.5]), []))


def test_loop_graph_size_does_not_depend_on_the_bound():
    def f(x, n):
        i = en.tensor(0)
        while i < n:
            x = x * 0.999 + 0.001
            i = i + 1
        for k in range(n):
            x = x + 1e-6
        return x
    g = en.function(f, optimize=False)
    small = len(g.graph_for(t([1.0]), en.tensor(10)))
    out = g(t([1.0]), en.tensor(10_000))
    assert g.trace_count == 1
    assert len(g.graph_for(t([1.0]), en.tensor(10_000))) == small
    assert_same(out, f(t([1.0]), en.tensor(10_000)))


# ---- break, continue, return -----------------------------------------------------------------
def first_over(xs, limit):
    found = en.tensor(-1.0)
    for x in xs:
        if x > limit:
            found = x
            break
    return found


def test_break_in_for_over_rows():
    xs = t([1.0, 5.0, 2.0, 9.0])
    check(first_over, (xs, t(4.0)), (xs, t(10.0)), (xs, t(0.0)), traces=1)
    check(first_over, (xs, 4.0))


def test_break_in_while_and_range():
    def f(n, stop):
        i = en.tensor(0)
        acc = en.tensor(0)
        while i < n:
            if i == stop:
                break
            acc = acc + i
            i = i + 1
        for j in range(n):
            if j * j > stop:
                break
            acc = acc + 100
        return acc, i
    check(f, *[(en.tensor(n), en.tensor(s)) for n, s in [(0, 1), (1, 0), (6, 3), (6, 10)]],
          traces=1)


def test_continue():
    def f(xs):
        pos = en.tensor(0.0)
        for x in xs:
            if x < 0:
                continue
            pos = pos + x
        i = en.tensor(0)
        odd = en.tensor(0)
        while i < 6:
            i = i + 1
            if i == 2 or i == 4:
                continue
            odd = odd + i
        return pos, odd
    check(f, (t([1.0, -2.0, 3.0]),), (t([-1.0, 0.0, -5.0]),), traces=1)


def test_python_break_in_python_loop():
    def f(x):
        for k in range(10):
            if k == 3:
                break
            x = x + 1.0
        else:
            x = x * 100.0
        return x
    check(f, (t(0.0),))


def test_for_else_with_tensor_break():
    def f(xs):
        for x in xs:
            if x > 2:
                break
        else:
            return xs * 0.0
        return xs
    check(f, (t([1.0, 3.0]),), (t([1.0, 1.0]),), traces=1)


def early_return(x):
    if en.sum(x) < 0:
        return -x
    y = x * 2.0
    if en.max(y) > 10.0:
        return y - 10.0
    return y


def test_early_return_in_if():
    check(early_return, (t([-1.0, 0.5]),), (t([1.0, 2.0]),), (t([4.0, 6.0]),), traces=1)


def test_return_inside_loop():
    def find(xs, target):
        for i in range(len(xs)):
            if xs[i] == target:
                return i
        return -1
    xs = t([3.0, 1.0, 4.0])
    check(find, (xs, t(4.0)), (xs, t(3.0)), (xs, t(7.0)))

    def f(n):
        i = en.tensor(0)
        while i < 100:
            if i * i >= n:
                return i * 10
            i = i + 1
        return i
    check(f, *[(en.tensor(n),) for n in (0, 1, 17, 100000)], traces=1)


def test_return_inside_loop_over_rows():
    def f(xs):
        for x in xs:
            if x < 0:
                return x * 2.0
        return en.tensor(0.0)
    check(f, (t([1.0, -3.0, -4.0]),), (t([1.0]),), (t(np.zeros(0)),))


# ---- names, state, calls ----------------------------------------------------------------------
def test_names_created_in_loop_body_are_local_to_it():
    def f(xs):
        acc = en.tensor(0.0)
        for x in xs:
            sq = x * x
            acc = acc + sq
        return acc
    check(f, (t([1.0, 2.0]),), traces=1)


def test_attribute_and_subscript_state():
    class Cell:
        def __init__(self):
            self.h = en.zeros((2,))
            self.steps = 0

        def run(self, xs):
            for x in xs:
                self.h = en.tanh(self.h + x)
            if en.sum(self.h) > 0:
                self.h = self.h * 2.0
            return self.h

    def with_dict(xs):
        state = {"c": en.zeros((2,))}
        for x in xs:
            state["c"] = state["c"] * 0.5 + x
        return state["c"]

    xs = t([[0.5, -1.0], [0.25, 0.75], [1.0, 1.0]])
    assert_same(en.function(lambda v: Cell().run(v), optimize=False)(xs), Cell().run(xs))
    assert_same(en.function(lambda v: Cell().run(v), optimize=False)(-xs), Cell().run(-xs))
    check(with_dict, (xs,), traces=1)


def _helper_abs(x):
    if x < 0:
        return -x
    return x


class Layer:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        if en.sum(x) > 0:
            return x * self.scale
        return x

    def clipped(self, x):
        while en.max(x) > 1.0:
            x = x * 0.5
        return x


def test_calls_into_user_functions_methods_and_callables():
    layer = Layer(3.0)

    def f(x):
        return _helper_abs(en.sum(x)) + en.sum(layer(x)) + en.sum(layer.clipped(x))
    check(f, (t([1.0, 2.0]),), (t([-1.0, -2.0]),), (t([0.1, 0.2]),), traces=1)


def test_lambdas_are_converted():
    pick = lambda x: x if x > 0 else -x   # noqa: E731
    check(pick, (t(2.0),), (t(-2.0),), traces=1)
    check(lambda x: en.function(lambda y: y * 2.0 if y > 1 else y)(x) + 1.0, (t(3.0),), (t(0.5),))


def fib_python(n):
    if n < 2:
        return n
    return fib_python(n - 1) + fib_python(n - 2)


def test_recursion_into_python_only_control_flow():
    def f(x, n):
        return x * fib_python(n)
    check(f, (t([1.0]), 7), (t([1.0]), 0))


def test_nested_en_function_is_converted_when_inlined():
    @en.function
    def inner(x):
        if en.sum(x) > 0:
            return x
        return -x

    def outer(x):
        return inner(x) * 2.0
    check(outer, (t([1.0]),), (t([-1.0]),), traces=1)


def test_variables_as_conditions_are_read_at_run_time():
    v = en.Variable(1.0)

    @en.function
    def f(x):
        if v > 0:
            return x + 1.0
        return x - 1.0
    assert float(f(t(0.0))) == 1.0
    v.assign(-1.0)
    assert float(f(t(0.0))) == -1.0
    assert f.trace_count == 1


def test_optimized_graphs_agree_too():
    xs = [t([1.0, 5.0, 2.0, 9.0]), t([-1.0, -2.0, 0.0, 0.0])]
    for fn in (early_return, branchy, row_sum if False else elif_chain):
        g = en.function(fn)
        for x in xs:
            np.testing.assert_allclose(g(x).numpy(), fn(x).numpy(), rtol=1e-12)


class _Base:
    def f(self, x):
        return x + 1.0


class _Child(_Base):
    def f(self, x):
        if x > 0:
            return super().f(x) * 2.0     # zero-argument super() inside a converted branch
        return super().f(x)


def _numbers():
    yield 1.0
    yield 2.0


def test_methods_with_super_local_classes_generators_and_keywords():
    def local_class(x):
        class Scale:
            def apply(self, v):
                return v * 3.0 if v > 0 else v
        return Scale().apply(x)

    def keywords(x, *rest, scale=2.0, **opts):
        if x > 0:
            x = x * scale
        for r in rest:
            x = x + r
        for n in _numbers():                # a generator is called as written
            x = x + n
        return x + opts.get("bias", 0.0)

    def while_true(x):
        while True:
            x = x * 2.0
            if x > 100.0:
                break
        return x
    check(lambda x: _Child().f(x), (t(1.0),), (t(-3.0),), traces=1)
    check(local_class, (t(2.0),), (t(-2.0),), traces=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(lambda x: keywords(x, 1.0, 2.0, scale=3.0, bias=0.5), (t(1.0),), (t(-1.0),),
              traces=1)
    check(while_true, (t(1.0),), (t(200.0),), traces=1)


def test_conditional_expression_in_a_comprehension():
    def f(xs):
        return en.stack([r * 2.0 if en.sum(r) > 0 else -r for r in xs])
    check(f, (t([[1.0, 2.0], [-1.0, -3.0]]),), traces=1)


def test_callable_objects_and_partials_given_to_en_function_are_converted():
    import functools
    layer = Layer(2.0)
    check(layer, (t([1.0]),), (t([-1.0]),), traces=1)
    check(functools.partial(nested_ifs, y=t([2.0])), (t([1.0]),), (t([-1.0]),), traces=1)


def test_nn_modules_have_their_forward_converted():
    class Gate(en.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = en.Variable([1.5, -0.5])

        def forward(self, x):
            if en.sum(x * self.w) > 0:
                return x * self.w
            return x

    class Net(en.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = Gate()

        def forward(self, xs):
            h = en.zeros((2,))
            for x in xs:
                h = en.tanh(self.gate(x) + h)
            return h
    net = Net()
    xs = t([[1.0, 0.5], [-2.0, 1.0], [0.25, 3.0]])
    check(net, (xs,), (-xs,), traces=1)
    check(lambda v: net(v) * 2.0, (xs,), (-xs,), traces=1)
