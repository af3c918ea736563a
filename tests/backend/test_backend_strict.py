"""The whole op database on the ``array_api_strict`` back end, eagerly and in graphs.

``array_api_strict`` has nothing beyond the Array API standard, so an op
that needed numpy beyond the back-end interface would fail here. For every
entry, dtype and sample the op runs on strict tensors (eagerly and inside
``en.function``); its results must live on the strict back end and equal the
numpy reference to the op database's tolerances. Where the op database checks
gradients, the gradients on the strict back end (a tape eagerly, ``en.grad``
inside a graph) must equal those on the numpy back end to the same tolerances.
"""
import numpy as np
import pytest

import engine as en
from op_db import ALL_ENTRIES, F32, F64, call_ref, seeded_rng
from support.op_checks import assert_matches, get_leaf, leaf_paths
from support.programs import flat

STRICT = "array_api_strict"
COMPLEX = (np.dtype("complex64"), np.dtype("complex128"))


def on_strict(value):
    """A sample's numpy arrays (also inside lists and tuples) as strict tensors."""
    if isinstance(value, (np.ndarray, np.generic)):
        return en.tensor(np.asarray(value), backend=STRICT)
    if isinstance(value, (list, tuple)):
        return type(value)(on_strict(v) for v in value)
    return value


def values_on_strict(out, where):
    """The outputs as numpy arrays, after checking they live on the strict back end."""
    outs = flat(out)
    for o in outs:
        assert isinstance(o, en.Tensor) and o.backend.name == STRICT, (
            f"{where}: a result is on {getattr(o, 'backend', type(o))}, not {STRICT}")
    return [np.array(o.numpy()) for o in outs]


def run_on_strict(info, args, kwargs, graph):
    """``info.op(*args, **kwargs)`` on strict tensors, eagerly or traced. A strict
    anchor argument puts graphs of creation ops (no tensor inputs) on the back end."""
    anchor = en.tensor(0.0, backend=STRICT)
    with en.backend.use(STRICT):   # creation ops run eagerly on the strict back end
        if graph:
            f = en.function(lambda anchor, *a: info.op(*a, **kwargs))
            return f(anchor, *args)
        return info.op(*args, **kwargs)


def _cases():
    for info in ALL_ENTRIES:
        for dtype in info.dtypes:
            for graph in (False, True):
                yield pytest.param(info, dtype, graph,
                                   id=f"{info.name}-{dtype}-{'graph' if graph else 'eager'}")


@pytest.mark.parametrize("info,dtype,graph", list(_cases()))
def test_op_db_on_strict_matches_numpy(info, dtype, graph):
    samples = list(info.sample_inputs(dtype, seeded_rng(info.name, dtype)))
    assert samples, f"{info.name}: no samples for {dtype}"
    for sample in samples:
        where = f"{info.name} on {sample} ({STRICT}, {'graph' if graph else 'eager'})"
        with np.errstate(all="ignore"):
            expected = call_ref(info, sample)
        if any(np.asarray(e).dtype == np.float16 for e in flat(expected)):
            # The standard has no float16 (exp of a bool is float16 in numpy): the
            # back end refuses to make one, naming the dtype.
            with pytest.raises(en.DTypeError, match="float16"):
                run_on_strict(info, [on_strict(a) for a in sample.args], sample.kwargs, graph)
            continue
        out = run_on_strict(info, [on_strict(a) for a in sample.args], sample.kwargs, graph)
        assert_matches(values_on_strict(out, where), expected, where)


# ---- gradients ------------------------------------------------------------------------
def gradients(info, sample, cotangents, convert, graph):
    """Gradients of ``sum_k sum(out_k * c_k)`` with respect to the float64 array
    arguments (also inside lists), on the back end ``convert`` puts them on."""
    paths = leaf_paths(sample.args, F64)
    args = [convert(a) for a in sample.args]
    cots = [None if c is None else convert(c) for c in cotangents]

    def loss(*xs):
        a = list(args)
        for path, x in zip(paths, xs):
            if len(path) == 1:
                a[path[0]] = x
            else:
                inner = list(a[path[0]])
                inner[path[1]] = x
                a[path[0]] = inner
        total = None
        for o, c in zip(flat(info.op(*a, **sample.kwargs)), cots):
            if c is not None:
                term = en.sum(o * en.cast(c, o.dtype))
                term = en.real(term) if o.dtype in COMPLEX else term   # (test_ops_grad's f)
                total = term if total is None else total + term
        return total

    grad = en.grad(loss, argnums=tuple(range(len(paths))))
    if graph:
        grad = en.function(grad)
    return grad(*[convert(get_leaf(sample.args, path)) for path in paths])


GRAD_ENTRIES = [info for info in ALL_ENTRIES if info.supports_grad]


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("info", GRAD_ENTRIES, ids=[i.name for i in GRAD_ENTRIES])
def test_op_db_gradients_on_strict_match_numpy(info, graph):
    rng = seeded_rng(info.name, "strict grad")
    n = 0
    for sample in info.samples_for_grad(rng):
        if not leaf_paths(sample.args, F64):
            continue
        outs = flat(info.op(*[on_numpy(a) for a in sample.args], **sample.kwargs))
        cots = [rng.standard_normal(o.shape) if o.dtype in (F32, F64)
                else rng.standard_normal(o.shape) + 1j * rng.standard_normal(o.shape)
                if o.dtype in COMPLEX else None for o in outs]
        if all(c is None for c in cots):
            continue
        where = f"{info.name} on {sample} ({STRICT} gradient, {'graph' if graph else 'eager'})"
        want = gradients(info, sample, cots, on_numpy, graph=False)
        with en.backend.use(STRICT):   # index tensors made inside the op's lambda
            got = gradients(info, sample, cots, on_strict, graph)
        assert_matches(values_on_strict(got, where), [np.asarray(w) for w in flat(want)], where)
        n += 1
    assert n, f"{info.name}: no gradient sample with a float64 input and a float output"


def on_numpy(value):
    if isinstance(value, (np.ndarray, np.generic)):
        return en.tensor(np.asarray(value))
    if isinstance(value, (list, tuple)):
        return type(value)(on_numpy(v) for v in value)
    return value


def test_every_registered_op_has_a_kernel_on_strict():
    report = en.backend.kernel_report()
    assert report[STRICT]["missing"] == []
    assert set(report[STRICT]["generic"]) | set(report[STRICT]["override"]) == set(en.REGISTRY)


def test_every_registered_op_is_in_the_loop_above():
    names = {info.name for info in ALL_ENTRIES}
    assert set(en.REGISTRY) <= names, sorted(set(en.REGISTRY) - names)
