"""The models of the ``styles`` workload family and their data, as plain numpy.

Every framework's version of a model (``styles_engine``, ``styles_jax``,
``styles_torch``) starts from the same float32 weights and inputs made here,
so their losses can be compared. The models:

``lstm_concat``   LSTM written as ``concat([x, h]) @ W + b``, then ``split`` into four gates
``lstm_eight``    LSTM with eight separate products (``x @ Wi + h @ Ui + bi``, ...)
``lstm_module``   LSTM as the framework's layer (``en.nn.LSTMCell`` in ``en.nn.RNN``,
                  ``torch.nn.LSTMCell``; JAX has none, so its weights' math by hand)
``gru_gates``     GRU with a matrix per gate (``x @ Wz + h @ Uz + bz``, ...)
``tanh_ln``       tanh RNN with a hand-written layer norm before the tanh
``tanh_unrolled`` tanh RNN, the 50 steps unrolled (a Python loop in the trace)
``cnn``           conv 16 - pool - conv 32 - pool - linear, cross-entropy (batch 64, 28x28x1)
``transformer``   pre-norm transformer block, 4 heads, exact GELU (batch 32, seq 32, width 64)

The recurrent models run 50 steps at batch 32, hidden 64, 64 features; their loss
is the mean squared difference between every step's ``h`` and a target. Each
timed call computes the loss and the gradient with respect to every weight.

Example:
    >>> params, inputs = make("tanh_ln", quick=True)
    >>> [p.shape for p in params], [a.shape for a in inputs]
    ([(64, 64), (64, 64), (64,), (64,), (64,)], [(5, 32, 64), (5, 32, 64)])
"""
import numpy as np

RECURRENT = ("lstm_concat", "lstm_eight", "lstm_module", "gru_gates", "tanh_ln",
             "tanh_unrolled")
MODELS = RECURRENT + ("cnn", "transformer")
STEPS, BATCH, HIDDEN, FEATURES = 50, 32, 64, 64
HEADS = 4
LN_EPS = 1e-5


def _normal(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _recurrent(model, rng, steps):
    f, h = FEATURES, HIDDEN
    w = lambda rows, cols: _normal(rng, (rows, cols), 1.0 / np.sqrt(rows))   # noqa: E731
    b = lambda n: _normal(rng, (n,), 0.1)                                    # noqa: E731
    if model == "lstm_concat":
        params = [w(f + h, 4 * h), b(4 * h)]
    elif model == "lstm_eight":
        params = [a for _ in range(4) for a in (w(f, h), w(h, h), b(h))]
    elif model == "lstm_module":                  # PyTorch's layout, transposed: (in, 4H)
        params = [w(f, 4 * h), w(h, 4 * h), b(4 * h), b(4 * h)]
    elif model == "gru_gates":
        params = [a for _ in range(3) for a in (w(f, h), w(h, h), b(h))]
    else:                                         # tanh_ln, tanh_unrolled
        params = [w(f, h), w(h, h), b(h)]
        if model == "tanh_ln":
            params += [1.0 + _normal(rng, (h,), 0.1), b(h)]
    xs = _normal(rng, (steps, BATCH, f), 1.0)
    targets = _normal(rng, (steps, BATCH, h), 0.5)
    return params, [xs, targets]


def _cnn(rng, batch):
    params = [_normal(rng, (3, 3, 1, 16), 1 / 3.0), _normal(rng, (16,), 0.1),
              _normal(rng, (3, 3, 16, 32), 1 / 12.0), _normal(rng, (32,), 0.1),
              _normal(rng, (7 * 7 * 32, 10), 1 / np.sqrt(7 * 7 * 32)), _normal(rng, (10,), 0.1)]
    images = _normal(rng, (batch, 28, 28, 1), 1.0)
    labels = rng.integers(0, 10, size=batch).astype(np.int64)
    return params, [images, labels]


def _transformer(rng, batch, seq):
    d, hid = 64, 256
    params = [1.0 + _normal(rng, (d,), 0.1), _normal(rng, (d,), 0.1),       # norm 1
              _normal(rng, (d, 3 * d), 1 / 8.0), _normal(rng, (3 * d,), 0.1),  # qkv
              _normal(rng, (d, d), 1 / 8.0), _normal(rng, (d,), 0.1),          # out
              1.0 + _normal(rng, (d,), 0.1), _normal(rng, (d,), 0.1),        # norm 2
              _normal(rng, (d, hid), 1 / 8.0), _normal(rng, (hid,), 0.1),      # MLP in
              _normal(rng, (hid, d), 1 / 16.0), _normal(rng, (d,), 0.1)]       # MLP out
    x = _normal(rng, (batch, seq, d), 1.0)
    target = _normal(rng, (batch, seq, d), 1.0)
    return params, [x, target]


def make(model, quick=False, seed=0):
    """``(params, inputs)``: lists of numpy arrays (float32; the CNN's labels int64).
    ``quick`` shrinks the sequence (5 steps) and batches for a smoke run."""
    rng = np.random.default_rng(seed)
    if model in RECURRENT:
        return _recurrent(model, rng, 5 if quick else STEPS)
    if model == "cnn":
        return _cnn(rng, 8 if quick else 64)
    if model == "transformer":
        return _transformer(rng, 4 if quick else 32, 32)
    raise ValueError(f"styles: unknown model {model!r}; known: {', '.join(MODELS)}")
