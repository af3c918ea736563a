"""The op database on a back end given by name, eagerly and in graphs: the parametrized
back-end tests (``tests/backend/test_backend_strict.py`` runs them on
``array_api_strict``, ``tests/backend/test_backend_new.py`` on the back end of
docs/extending/backend.md). For every entry, dtype and sample the op runs on the back
end's tensors; its results must live on that back end and equal the numpy reference to
the op database's tolerances. Where the op database checks gradients, the gradients on
the back end (a tape eagerly, ``en.grad`` inside a graph) must equal those on the numpy
back end to the same tolerances.

Example:
    >>> import numpy as np
    >>> t = on_backend([np.ones(2)], "array_api_strict")[0]
    >>> t.backend.name
    'array_api_strict'
"""
import numpy as np
import pytest

import engine as en
from op_db import ALL_ENTRIES, F32, F64, call_ref, seeded_rng
from support.op_checks import assert_matches, get_leaf, leaf_paths, replace_leaves
from support.programs import flat

COMPLEX = (np.dtype("complex64"), np.dtype("complex128"))
GRAD_ENTRIES = [info for info in ALL_ENTRIES if info.supports_grad]


def on_backend(value, backend):
    """A sample's numpy arrays (also inside lists and tuples) as tensors on ``backend``."""
    if isinstance(value, (np.ndarray, np.generic)):
        return en.tensor(np.asarray(value), backend=backend)
    if isinstance(value, (list, tuple)):
        return type(value)(on_backend(v, backend) for v in value)
    return value


def on_numpy(value):
    """A sample's numpy arrays (also inside lists and tuples) as tensors on the default
    back end (numpy)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return en.tensor(np.asarray(value))
    if isinstance(value, (list, tuple)):
        return type(value)(on_numpy(v) for v in value)
    return value


def values_on(out, backend, where):
    """The outputs as numpy arrays, after checking they live on ``backend``."""
    outs = flat(out)
    for o in outs:
        assert isinstance(o, en.Tensor) and o.backend.name == backend, (
            f"{where}: a result is on {getattr(o, 'backend', type(o))}, not {backend}")
    return [np.array(o.numpy()) for o in outs]


def run_on(info, args, kwargs, graph, backend):
    """``info.op(*args, **kwargs)`` on ``backend``'s tensors, eagerly or traced. An anchor
    argument on the back end puts graphs of creation ops (no tensor inputs) on it."""
    anchor = en.tensor(0.0, backend=backend)
    with en.backend.use(backend):   # creation ops run eagerly on the back end
        if graph:
            f = en.function(lambda anchor, *a: info.op(*a, **kwargs))
            return f(anchor, *args)
        return info.op(*args, **kwargs)


def op_db_cases():
    """``(info, dtype, graph)`` for every entry and claimed dtype, eager and traced."""
    for info in ALL_ENTRIES:
        for dtype in info.dtypes:
            for graph in (False, True):
                yield pytest.param(info, dtype, graph,
                                   id=f"{info.name}-{dtype}-{'graph' if graph else 'eager'}")


def check_op_db(info, dtype, graph, backend):
    """Every sample of ``info`` for ``dtype`` on ``backend`` equals the numpy reference."""
    samples = list(info.sample_inputs(dtype, seeded_rng(info.name, dtype)))
    assert samples, f"{info.name}: no samples for {dtype}"
    for sample in samples:
        where = f"{info.name} on {sample} ({backend}, {'graph' if graph else 'eager'})"
        with np.errstate(all="ignore"):
            expected = call_ref(info, sample)
        args = [on_backend(a, backend) for a in sample.args]
        if any(np.asarray(e).dtype == np.float16 for e in flat(expected)):
            # The standard has no float16 (exp of a bool is float16 in numpy): the
            # back end refuses to make one, naming the dtype.
            with pytest.raises(en.DTypeError, match="float16"):
                run_on(info, args, sample.kwargs, graph, backend)
            continue
        out = run_on(info, args, sample.kwargs, graph, backend)
        assert_matches(values_on(out, backend, where), expected, where)


def gradients(info, sample, cotangents, convert, graph):
    """Gradients of ``sum_k sum(out_k * c_k)`` with respect to the float64 array
    arguments (also inside lists), on the back end ``convert`` puts them on."""
    paths = leaf_paths(sample.args, F64)
    args = [convert(a) for a in sample.args]
    cots = [None if c is None else convert(c) for c in cotangents]

    def loss(*xs):
        total = None
        for o, c in zip(flat(info.op(*replace_leaves(args, paths, xs), **sample.kwargs)), cots):
            if c is not None:
                term = en.sum(o * en.cast(c, o.dtype))
                term = en.real(term) if o.dtype in COMPLEX else term   # (test_ops_grad's f)
                total = term if total is None else total + term
        return total

    grad = en.grad(loss, argnums=tuple(range(len(paths))))
    if graph:
        grad = en.function(grad)
    return grad(*[convert(get_leaf(sample.args, path)) for path in paths])


def check_op_db_gradients(info, graph, backend):
    """The gradients of ``info``'s samples on ``backend`` equal those on numpy."""
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
        where = f"{info.name} on {sample} ({backend} gradient, {'graph' if graph else 'eager'})"
        want = gradients(info, sample, cots, on_numpy, graph=False)
        with en.backend.use(backend):   # index tensors made inside the op's lambda
            got = gradients(info, sample, cots, lambda v: on_backend(v, backend), graph)
        assert_matches(values_on(got, backend, where), [np.asarray(w) for w in flat(want)], where)
        n += 1
    assert n, f"{info.name}: no gradient sample with a float64 input and a float output"
