"""Custom recurrent cells over a sequence: forward and backward, GRU, LSTM and tanh RNN.

The GRU cell (hidden 64, input 64, float32, batch 32) is written out by hand::

    z = sigmoid(x Wz + h Uz + bz)              update gate
    r = sigmoid(x Wr + h Ur + br)              reset gate
    c = tanh(x Wh + (r * h) Uh + bh)           candidate
    h' = (1 - z) * h + z * c

and runs for 50 steps from h = 0. The LSTM (``cell: lstm``, same sizes, carry
``(h, c)`` from zeros) is::

    i, f, o = sigmoid(x W. + h U. + b.)        input, forget, output gates
    g = tanh(x Wg + h Ug + bg)
    c' = f * c + i * g;  h' = o * tanh(c')

and the plain RNN (``cell: tanh``) ``h' = tanh(x W + h U + b)``. The loss is the
mean squared difference between all 50 outputs h and a target sequence; each
timed call computes the loss and its gradient with respect to every weight
(9, 12 and 3 of them). The modes:

``eager``                the cell, the loop and the tape all eager
``graph_cell``           the cell is an ``en.function``, the Python loop and the
                         tape stay eager: each cell call is recorded as one op
                         whose gradient is a compiled backward graph
``graph_cell_compiled``  ``graph_cell`` with ``en.config.lowering = "numba"``
                         while the first two steps trace: the cell's forward and
                         backward graphs (and their split, see ``graph/jit/residuals.py``)
                         each run as one native function (``--full``)
``graph``                one ``en.function`` computing the loss and gradients
                         of the whole sequence, looping with ``en.scan``
``graph_unrolled``       the same with the Python loop unrolled into the trace (its
                         products with no carry batched over the steps)
``graph_compiled``       ``graph`` with ``en.config.lowering = "numba"``: the
                         forward and backward scans run as one native function,
                         time loop included (machine code cached on disk); the
                         backward loop reads the forward's values instead of
                         recomputing them, and the products that need no carry run
                         once for all 50 steps
``graph_unrolled_compiled``  ``graph_unrolled`` under ``"numba"``: the batched products
                         of the unrolled graphs (``graph/passes/batch_products.py``)
                         make them too large to be written whole, so each fused
                         kernel is compiled, the steps' alike kernels sharing one
                         function, and numpy runs the products
``torch``                PyTorch eager autograd
``torch_cell_compiled``  the cell as ``torch.jit.script``, the loop eager (``--full``;
                         the compiled modes above are ``--full`` too)
                         (skipped when scripting fails)
``jax``                  ``jax.jit(jax.value_and_grad(...))`` over ``lax.scan`` (``--full``)

Every mode's loss and gradients are checked first against a float64
hand-written numpy forward and backward (``max_rel_err``, ``agree``; see
``bench.workloads.autoencoder.agreement``).

Run alone with ``python -m bench.workloads.rnn [--quick]``.
"""
import sys
import time
import warnings

import numpy as np

from .autoencoder import agreement, settled

NAME = "rnn"
DESCRIPTION = "custom GRU, LSTM and tanh cells, 50 steps, batch 32, hidden 64: loss + gradient"
MODES = ["eager", "graph_cell", "graph_cell_compiled", "graph", "graph_unrolled",
         "graph_compiled", "graph_unrolled_compiled", "torch", "torch_cell_compiled", "jax"]
# --full (or --modes): every framework, and the compiled modes (their first run in a
# process with a cold cache compiles for 10-60 s; see graph/lowering/numba/whole_graph.py).
FULL_ONLY_MODES = ("torch_cell_compiled", "jax", "graph_compiled", "graph_unrolled_compiled",
                   "graph_cell_compiled")

PARAM_NAMES = ("Wz", "Uz", "bz", "Wr", "Ur", "br", "Wh", "Uh", "bh")
LSTM_PARAM_NAMES = ("Wi", "Ui", "bi", "Wf", "Uf", "bf", "Wo", "Uo", "bo", "Wg", "Ug", "bg")
TANH_PARAM_NAMES = ("W", "U", "b")
COMPILED_MODES = ("graph_compiled", "graph_unrolled_compiled", "graph_cell_compiled")
_POOLS = {"torch": "torch", "torch_cell_compiled": "torch", "jax": "jax"}   # else numpy's


def configs(args):
    quick = getattr(args, "quick", False)
    repeats = getattr(args, "repeats", None)
    n = int(repeats or (5 if quick else 30))
    return [{"steps": 50, "batch": 32, "hidden": 64, "features": 64, "repeats": n},
            {"cell": "lstm", "steps": 50, "batch": 32, "hidden": 64, "features": 64,
             "repeats": n},
            {"cell": "tanh", "steps": 50, "batch": 32, "hidden": 64, "features": 64,
             "repeats": n}]


def run(config, modes, args, tick):
    from bench.common import results, time_modes

    problem = Problem(config)
    reference = problem.reference(*problem.arrays(np.float64))
    fns, skipped, extras = {}, {}, {}
    for mode in modes:
        # The compiled modes trace and compile while they are set up: the first call's
        # time counts from before that.
        first = time.perf_counter()
        try:
            made = make_mode(mode, problem)
        except Exception as err:            # e.g. torch.jit.script refusing the cell
            if mode != "torch_cell_compiled":
                raise
            made = f"torch.jit.script failed: {type(err).__name__}: {err}"
        if isinstance(made, str):
            skipped[mode] = made
            continue
        step, to_numpy = made
        extras[mode] = agreement(reference, to_numpy(step()), names=("loss",) + problem.names,
                                 mode=mode)
        extras[mode]["first_call_s"] = time.perf_counter() - first
        fns[mode] = settled(step, _POOLS.get(mode, "numpy"))
    times = time_modes(fns, config["repeats"], tick, warmup=1)
    return results(NAME, config, modes, times, extras, skipped)


# The targets the README states ("Targets" under "Results"): (cell, faster mode, slower
# mode, text); cell None: every cell.
TARGETS = [
    ("gru", "graph_cell", "eager", "graph_cell faster than eager"),
    ("gru", "graph_cell_compiled", "eager", "graph_cell_compiled at least 2x faster than eager",
     2.0),
    ("gru", "graph", "torch", "graph (en.scan) faster than torch eager"),
    ("gru", "graph_unrolled", "torch", "graph_unrolled faster than torch eager"),
    (None, "graph_compiled", "jax", "graph_compiled (en.scan, numba) at most jax.jit(grad) over lax.scan"),
    ("tanh", "graph_unrolled", "jax", "graph_unrolled at most jax.jit(grad) over lax.scan"),
    ("tanh", "graph_unrolled_compiled", "jax",
     "graph_unrolled_compiled (numba) at most jax.jit(grad) over lax.scan"),
]
TARGET_TEXTS = tuple(t[3] for t in TARGETS)
REFERENCE_MS = {"torch": 10.0, "torch_cell_compiled": 12.0, "jax": 4.8}   # measured elsewhere


def summary(results, args=None):
    """Agreement and the targets per cell, with the first-call times of the compiled modes."""
    mine = [r for r in results if r["workload"] == NAME]
    if not mine:
        return ""
    bad = [r["mode"] for r in mine if r.get("agree") is False]
    lines = ["rnn: gradients " + (f"DISAGREE in {', '.join(bad)}" if bad else
                                  "agree with the float64 numpy BPTT in every mode")]
    lines += [f"rnn {r['mode']}: " + r["rounding_note"].removeprefix("note: ")
              for r in mine if r.get("rounding_note")]
    for cell in ("gru", "lstm", "tanh"):
        rows = [r for r in mine if r["config"].get("cell", "gru") == cell]
        med = {r["mode"]: r["median_ms"] for r in rows if r.get("median_ms") is not None}
        for target_cell, fast, slow, text, *factor in TARGETS:
            if target_cell not in (None, cell) or fast not in med or slow not in med:
                continue
            ok = med[fast] * (factor[0] if factor else 1.0) <= med[slow]
            lines.append(f"rnn {cell} target {'met' if ok else 'MISSED'}: {text} "
                         f"({med[fast]:.2f} vs {med[slow]:.2f} ms, {med[slow] / med[fast]:.2f}x)")
        for r in rows:
            # (graph_cell_compiled's set-up runs two steps, to trace its split backward
            # too: its figure would be three calls)
            if r["mode"] in COMPILED_MODES and r["mode"] != "graph_cell_compiled" and \
                    r.get("first_call_s") is not None:
                lines.append(f"rnn {cell} {r['mode']}: first call (trace, compile or load from "
                             f"the disk cache, run) {r['first_call_s']:.2f} s")
    ref = ", ".join(f"{m} {v:g} ms" for m, v in REFERENCE_MS.items())
    lines.append(f"rnn reference figures measured elsewhere: {ref}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# problem

class Problem:
    """Weights, an input sequence and a target sequence (float32 numpy)."""

    def __init__(self, config, seed=0):
        rng = np.random.default_rng(seed)
        t, n, hid, f = config["steps"], config["batch"], config["hidden"], config["features"]
        self.steps, self.batch, self.hidden = t, n, hid
        self.cell = config.get("cell", "gru")
        self.names = {"gru": PARAM_NAMES, "lstm": LSTM_PARAM_NAMES,
                      "tanh": TANH_PARAM_NAMES}[self.cell]
        self.reference = {"gru": numpy_loss_and_grad, "lstm": numpy_lstm_loss_and_grad,
                          "tanh": numpy_tanh_loss_and_grad}[self.cell]
        shapes = {"W": (f, hid), "U": (hid, hid), "b": (hid,)}
        self.params = []
        for name in self.names:
            shape = shapes[name[0]]
            scale = 1.0 / np.sqrt(shape[0]) if name[0] != "b" else 0.1
            self.params.append((rng.standard_normal(shape) * scale).astype(np.float32))
        self.xs = rng.standard_normal((t, n, f)).astype(np.float32)
        self.targets = (rng.standard_normal((t, n, hid)) * 0.5).astype(np.float32)

    def arrays(self, dtype=np.float32):
        """``(params, xs, targets)`` as numpy arrays of ``dtype``."""
        return ([p.astype(dtype) for p in self.params], self.xs.astype(dtype),
                self.targets.astype(dtype))


def make_mode(mode, problem):
    """``(step, to_numpy)`` where ``to_numpy(step())`` is ``(loss, *grads)``; or a skip reason."""
    if mode in ("eager", "graph_cell", "graph", "graph_unrolled") + COMPILED_MODES:
        return _engine_mode(mode, problem)
    if mode in ("torch", "torch_cell_compiled"):
        return _torch_mode(mode, problem)
    if mode == "jax":
        return _jax_mode(problem)
    raise ValueError(f"{NAME}: unknown mode {mode!r}")


# ----------------------------------------------------------------------------
# engine

def gru_cell(h, x, p):
    """One GRU step with engine ops; ``p`` is the tuple of weights in PARAM_NAMES order."""
    import engine as en

    wz, uz, bz, wr, ur, br, wh, uh, bh = p
    z = en.sigmoid(x @ wz + h @ uz + bz)
    r = en.sigmoid(x @ wr + h @ ur + br)
    c = en.tanh(x @ wh + (r * h) @ uh + bh)
    return (1.0 - z) * h + z * c


def tanh_cell(h, x, p):
    """One step of the plain RNN: ``tanh(x W + h U + b)``."""
    import engine as en

    w, u, b = p
    return en.tanh(x @ w + h @ u + b)


def lstm_cell(carry, x, p):
    """One LSTM step: ``carry`` is ``(h, c)``; returns the new ``(h, c)``."""
    import engine as en

    h, c = carry
    wi, ui, bi, wf, uf, bf, wo, uo, bo, wg, ug, bg = p
    i = en.sigmoid(x @ wi + h @ ui + bi)
    f = en.sigmoid(x @ wf + h @ uf + bf)
    o = en.sigmoid(x @ wo + h @ uo + bo)
    g = en.tanh(x @ wg + h @ ug + bg)
    c = f * c + i * g
    return o * en.tanh(c), c


def _step_of(cell):
    """``(carry, x, p) -> (carry, h)`` for any of the three cells (the LSTM's carry is
    ``(h, c)``, the others' ``h``)."""
    def step(carry, x, p):
        carry = cell(carry, x, p)
        return carry, carry[0] if isinstance(carry, (tuple, list)) else carry
    return step


def _loop_loss(cell, p, xs, targets, h0):
    import engine as en

    step = _step_of(cell)
    carry = h0
    outs = []
    for x in xs:
        carry, h = step(carry, x, p)
        outs.append(h)
    return en.mean((en.stack(outs) - targets) ** 2.0)


def _scan_loss(cell, p, xs, targets, h0):
    import engine as en

    step = _step_of(cell)
    _, hs = en.scan(lambda carry, x: step(carry, x, p), h0, xs)
    return en.mean((hs - targets) ** 2.0)


def _engine_mode(mode, problem):
    import engine as en

    cell_fn = {"gru": gru_cell, "lstm": lstm_cell, "tanh": tanh_cell}[problem.cell]
    if mode in COMPILED_MODES:
        from engine.graph.lowering.numba.lowering import numba_available
        if not numba_available():
            return "numba is not installed (pip install '.[jit]')"
    params, xs, targets = problem.arrays()
    p = tuple(en.tensor(a) for a in params)
    targets = en.tensor(targets)
    h0 = en.zeros((problem.batch, problem.hidden), dtype="float32")
    if problem.cell == "lstm":
        h0 = (h0, en.zeros((problem.batch, problem.hidden), dtype="float32"))

    if mode in ("eager", "graph_cell", "graph_cell_compiled"):
        cell = cell_fn if mode == "eager" else en.function(cell_fn)
        x_list = [en.tensor(x) for x in xs]       # the Python loop walks a list

        def step():
            with en.GradientTape() as tape:
                tape.watch(list(p))
                loss = _loop_loss(cell, p, x_list, targets, h0)
            return loss, tape.gradient(loss, list(p))
        if mode == "graph_cell_compiled":
            # The first step traces the cell and its backward, the second the split
            # backward's two graphs: all of them lowered under the switch.
            previous = en.config.lowering
            en.config.lowering = "numba"
            try:
                step()
                step()
            finally:
                en.config.lowering = previous
            concrete = cell.get_concrete_function(h0, x_list[0], p)
            if not [n for n in concrete.graph.nodes if n.op.name == "compiled_region"]:
                return "nothing compiled: the cell's graph has an op without a numba form"
    else:
        def loss_and_grads(p, xs, targets, h0):
            with en.GradientTape() as tape:
                tape.watch(list(p))
                if mode in ("graph", "graph_compiled"):
                    loss = _scan_loss(cell_fn, p, xs, targets, h0)
                else:
                    loss = _loop_loss(cell_fn, p, [xs[t] for t in range(xs.shape[0])],
                                      targets, h0)
            return loss, tape.gradient(loss, list(p))
        fn = en.function(loss_and_grads)
        xs_t = en.tensor(xs)
        if mode in COMPILED_MODES:   # traced (and compiled) now, under the switch
            previous = en.config.lowering
            en.config.lowering = "numba"
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    fn.get_concrete_function(p, xs_t, targets, h0)
                graph = fn.graph_for(p, xs_t, targets, h0)
            finally:
                en.config.lowering = previous
            if not [n for n in graph.nodes if n.meta.get("backend") == "numba"]:
                report = fn.optimization_report(p, xs_t, targets, h0)
                why = [str(w.message) for w in caught] + [
                    r.note for r in report if r.name == "compile_numba" and r.note]
                return "nothing compiled: " + (why[0] if why else "no region could be written")

        def step():
            return fn(p, xs_t, targets, h0)

    def to_numpy(out):
        loss, grads = out
        return (np.asarray(loss),) + tuple(np.asarray(g) for g in grads)
    return step, to_numpy


# ----------------------------------------------------------------------------
# numpy reference (forward and backward by hand)

def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def numpy_loss_and_grad(params, xs, targets):
    """``(loss, dWz, dUz, dbz, dWr, dUr, dbr, dWh, dUh, dbh)`` by backpropagation through time."""
    wz, uz, bz, wr, ur, br, wh, uh, bh = params
    t_len, n, _ = xs.shape
    h = np.zeros((n, uz.shape[0]), dtype=xs.dtype)
    saved = []
    hs = []
    for x in xs:
        z = _sigmoid(x @ wz + h @ uz + bz)
        r = _sigmoid(x @ wr + h @ ur + br)
        c = np.tanh(x @ wh + (r * h) @ uh + bh)
        saved.append((x, h, z, r, c))
        h = (1.0 - z) * h + z * c
        hs.append(h)
    diff = np.stack(hs) - targets
    loss = np.mean(diff ** 2)
    dout = 2.0 * diff / diff.size
    grads = [np.zeros_like(a) for a in params]
    gwz, guz, gbz, gwr, gur, gbr, gwh, guh, gbh = grads
    dh = np.zeros_like(h)
    for t in range(t_len - 1, -1, -1):
        x, h, z, r, c = saved[t]
        dh = dh + dout[t]
        dz = dh * (c - h)
        dc = dh * z
        dh_prev = dh * (1.0 - z)
        dac = dc * (1.0 - c * c)
        gwh += x.T @ dac
        guh += (r * h).T @ dac
        gbh += dac.sum(axis=0)
        drh = dac @ uh.T
        dr = drh * h
        dh_prev += drh * r
        daz = dz * z * (1.0 - z)
        gwz += x.T @ daz
        guz += h.T @ daz
        gbz += daz.sum(axis=0)
        dh_prev += daz @ uz.T
        dar = dr * r * (1.0 - r)
        gwr += x.T @ dar
        gur += h.T @ dar
        gbr += dar.sum(axis=0)
        dh_prev += dar @ ur.T
        dh = dh_prev
    return (loss,) + tuple(grads)


def numpy_lstm_loss_and_grad(params, xs, targets):
    """``(loss, dWi, dUi, dbi, ..., dWg, dUg, dbg)`` of the LSTM by backpropagation through
    time (gates i, f, o sigmoid, g tanh; ``c' = f c + i g``, ``h' = o tanh(c')``)."""
    gates = [params[3 * k:3 * k + 3] for k in range(4)]    # (W, U, b) of i, f, o, g
    n, hid = xs.shape[1], params[1].shape[0]
    h = np.zeros((n, hid), dtype=xs.dtype)
    c = np.zeros_like(h)
    saved, hs = [], []
    for x in xs:
        a = [x @ w + h @ u + b for w, u, b in gates]
        i, f, o, g = _sigmoid(a[0]), _sigmoid(a[1]), _sigmoid(a[2]), np.tanh(a[3])
        c_new = f * c + i * g
        tc = np.tanh(c_new)
        saved.append((x, h, c, i, f, o, g, tc))
        h, c = o * tc, c_new
        hs.append(h)
    diff = np.stack(hs) - targets
    loss = np.mean(diff ** 2)
    dout = 2.0 * diff / diff.size
    grads = [np.zeros_like(a) for a in params]
    dh, dc = np.zeros_like(h), np.zeros_like(c)
    for t in range(len(xs) - 1, -1, -1):
        x, h_prev, c_prev, i, f, o, g, tc = saved[t]
        dh = dh + dout[t]
        do = dh * tc
        dc = dc + dh * o * (1.0 - tc * tc)
        da = [dc * g * i * (1.0 - i), dc * c_prev * f * (1.0 - f), do * o * (1.0 - o),
              dc * i * (1.0 - g * g)]
        dc = dc * f
        dh = np.zeros_like(dh)
        for k, ((w, u, b), d) in enumerate(zip(gates, da)):
            grads[3 * k] += x.T @ d
            grads[3 * k + 1] += h_prev.T @ d
            grads[3 * k + 2] += d.sum(axis=0)
            dh += d @ u.T
    return (loss,) + tuple(grads)


def numpy_tanh_loss_and_grad(params, xs, targets):
    """``(loss, dW, dU, db)`` of the tanh RNN by backpropagation through time."""
    w, u, b = params
    h = np.zeros((xs.shape[1], u.shape[0]), dtype=xs.dtype)
    hs, prevs = [], []
    for x in xs:
        prevs.append(h)
        h = np.tanh(x @ w + h @ u + b)
        hs.append(h)
    diff = np.stack(hs) - targets
    loss = np.mean(diff ** 2)
    dout = 2.0 * diff / diff.size
    gw, gu, gb = np.zeros_like(w), np.zeros_like(u), np.zeros_like(b)
    dh = np.zeros_like(h)
    for t in range(len(xs) - 1, -1, -1):
        da = (dh + dout[t]) * (1.0 - hs[t] * hs[t])
        gw += xs[t].T @ da
        gu += prevs[t].T @ da
        gb += da.sum(axis=0)
        dh = da @ u.T
    return loss, gw, gu, gb


# ----------------------------------------------------------------------------
# torch

def _torch_mode(mode, problem):
    from bench.common import skip_reason, torch_or_none

    torch = torch_or_none()
    if torch is None:
        return skip_reason("torch")
    params, xs, targets = problem.arrays()
    p = [torch.tensor(a, requires_grad=True) for a in params]
    xs = torch.from_numpy(xs)
    targets = torch.from_numpy(targets)
    h0 = torch.zeros((problem.batch, problem.hidden))

    def torch_gru_cell(h, x, wz, uz, bz, wr, ur, br, wh, uh, bh):
        z = torch.sigmoid(x @ wz + h @ uz + bz)
        r = torch.sigmoid(x @ wr + h @ ur + br)
        c = torch.tanh(x @ wh + (r * h) @ uh + bh)
        return (1.0 - z) * h + z * c

    def torch_tanh_cell(h, x, w, u, b):
        return torch.tanh(x @ w + h @ u + b)

    def torch_lstm_cell(h, c, x, wi, ui, bi, wf, uf, bf, wo, uo, bo, wg, ug, bg):
        i = torch.sigmoid(x @ wi + h @ ui + bi)
        f = torch.sigmoid(x @ wf + h @ uf + bf)
        o = torch.sigmoid(x @ wo + h @ uo + bo)
        g = torch.tanh(x @ wg + h @ ug + bg)
        c = f * c + i * g
        return o * torch.tanh(c), c

    cell = {"gru": torch_gru_cell, "lstm": torch_lstm_cell,
            "tanh": torch_tanh_cell}[problem.cell]
    if mode == "torch_cell_compiled":
        with warnings.catch_warnings():     # "torch.jit.script is deprecated" in torch 2.10+
            warnings.simplefilter("ignore", DeprecationWarning)
            cell = torch.jit.script(cell)

    def step():
        h = h0
        c = h0
        outs = []
        for x in xs:
            if problem.cell == "lstm":
                h, c = cell(h, c, x, *p)
            else:
                h = cell(h, x, *p)
            outs.append(h)
        loss = ((torch.stack(outs) - targets) ** 2).mean()
        return (loss,) + tuple(torch.autograd.grad(loss, p))
    return step, lambda out: tuple(t.detach().numpy() for t in out)


# ----------------------------------------------------------------------------
# jax

def _jax_mode(problem):
    from bench.common import jax_or_none, skip_reason

    jax = jax_or_none()
    if jax is None:
        return skip_reason("jax")
    import jax.numpy as jnp

    def gru(h, x, p):
        wz, uz, bz, wr, ur, br, wh, uh, bh = p
        z = jax.nn.sigmoid(x @ wz + h @ uz + bz)
        r = jax.nn.sigmoid(x @ wr + h @ ur + br)
        c = jnp.tanh(x @ wh + (r * h) @ uh + bh)
        return (1.0 - z) * h + z * c

    def plain(h, x, p):
        w, u, b = p
        return jnp.tanh(x @ w + h @ u + b)

    def lstm(carry, x, p):
        h, c = carry
        wi, ui, bi, wf, uf, bf, wo, uo, bo, wg, ug, bg = p
        i = jax.nn.sigmoid(x @ wi + h @ ui + bi)
        f = jax.nn.sigmoid(x @ wf + h @ uf + bf)
        o = jax.nn.sigmoid(x @ wo + h @ uo + bo)
        g = jnp.tanh(x @ wg + h @ ug + bg)
        c = f * c + i * g
        h = o * jnp.tanh(c)
        return (h, c), h

    def one_carry(cell):
        return lambda h, x, p: (cell(h, x, p),) * 2
    cell_step = {"gru": one_carry(gru), "lstm": lstm, "tanh": one_carry(plain)}[problem.cell]

    def loss(p, xs, targets):
        h0 = jnp.zeros((xs.shape[1], p[1].shape[0]), xs.dtype)
        if problem.cell == "lstm":
            h0 = (h0, h0)
        _, hs = jax.lax.scan(lambda h, x: cell_step(h, x, p), h0, xs)
        return jnp.mean((hs - targets) ** 2)

    fn = jax.jit(jax.value_and_grad(loss))
    params, xs, targets = problem.arrays()
    p = tuple(jax.device_put(a) for a in params)
    xs, targets = jax.device_put(xs), jax.device_put(targets)

    def step():
        return jax.block_until_ready(fn(p, xs, targets))

    def to_numpy(out):
        value, grads = out
        return (np.asarray(value),) + tuple(np.asarray(g) for g in grads)
    return step, to_numpy


if __name__ == "__main__":
    import runpy

    sys.argv = ["python -m bench", NAME] + sys.argv[1:]
    runpy.run_module("bench", run_name="__main__", alter_sys=True)
