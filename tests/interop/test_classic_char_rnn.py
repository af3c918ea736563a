"""A classic pure-numpy program run unchanged on engine tensors: a character-level RNN
with hand-written backprop and Adagrad (in the style of min-char-rnn).

The program below is plain numpy (``np.zeros``, ``np.dot``, ``np.tanh``, in-place
``+=``, ``dy[t] -= 1``, ``np.clip(..., out=)``, a dict of parameters). It runs once
with numpy arrays as parameters and once with engine tensors (numpy's functions
dispatch to the engine through ``__array_function__``/``__array_ufunc__``); the
losses and trained parameters must agree to 1e-12. ``en.grad`` of the forward
pass is compared with the hand-written backward pass.
"""
import numpy as np

import engine as en

TEXT = "hello world, hello engine; the quick brown fox jumps over the lazy dog. "
CHARS = sorted(set(TEXT))
VOCAB = len(CHARS)
CHAR_TO_IX = {c: i for i, c in enumerate(CHARS)}
HIDDEN, SEQ_LENGTH, LEARNING_RATE = 12, 8, 1e-1


# ---- the program (numpy only) -------------------------------------------------------------
def init_params(seed):
    rng = np.random.default_rng(seed)
    return {"Wxh": rng.standard_normal((HIDDEN, VOCAB)) * 0.01,
            "Whh": rng.standard_normal((HIDDEN, HIDDEN)) * 0.01,
            "Why": rng.standard_normal((VOCAB, HIDDEN)) * 0.01,
            "bh": np.zeros((HIDDEN, 1)), "by": np.zeros((VOCAB, 1))}


def forward(p, inputs, targets, hprev):
    """Loss and the values the backward pass needs."""
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((VOCAB, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(p["Wxh"], xs[t]) + np.dot(p["Whh"], hs[t - 1]) + p["bh"])
        ys[t] = np.dot(p["Why"], hs[t]) + p["by"]
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    return loss, (xs, hs, ps)


def backward(p, cache, targets):
    xs, hs, ps = cache
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(xs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1   # softmax and cross-entropy's gradient
        grads["Why"] += np.dot(dy, hs[t].T)
        grads["by"] += dy
        dh = np.dot(p["Why"].T, dy) + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh
        grads["bh"] += dhraw
        grads["Wxh"] += np.dot(dhraw, xs[t].T)
        grads["Whh"] += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(p["Whh"].T, dhraw)
    for dparam in grads.values():
        np.clip(dparam, -5, 5, out=dparam)   # against exploding gradients
    return grads


def train(p, steps):
    """Adagrad over the text; the losses, and ``p`` trained in place."""
    memory = {k: np.zeros_like(v) for k, v in p.items()}
    hprev = np.zeros((HIDDEN, 1))
    position, losses = 0, []
    for _ in range(steps):
        if position + SEQ_LENGTH + 1 >= len(TEXT):
            hprev, position = np.zeros((HIDDEN, 1)), 0
        inputs = [CHAR_TO_IX[c] for c in TEXT[position:position + SEQ_LENGTH]]
        targets = [CHAR_TO_IX[c] for c in TEXT[position + 1:position + SEQ_LENGTH + 1]]
        loss, cache = forward(p, inputs, targets, hprev)
        grads = backward(p, cache, targets)
        hprev = cache[1][len(inputs) - 1]
        for param, dparam, mem in zip(p.values(), grads.values(), memory.values()):
            mem += dparam * dparam
            param += -LEARNING_RATE * dparam / np.sqrt(mem + 1e-8)
        losses.append(float(loss))
        position += SEQ_LENGTH
    return losses


# ---- the tests ----------------------------------------------------------------------------
def _as_tensors(params):
    return {k: en.tensor(v) for k, v in params.items()}


def _sequence(position=0):
    inputs = [CHAR_TO_IX[c] for c in TEXT[position:position + SEQ_LENGTH]]
    targets = [CHAR_TO_IX[c] for c in TEXT[position + 1:position + SEQ_LENGTH + 1]]
    return inputs, targets


def test_forward_runs_on_tensors_and_matches_numpy():
    params, (inputs, targets) = init_params(0), _sequence(3)
    hprev = np.random.default_rng(1).standard_normal((HIDDEN, 1)) * 0.1
    want, _ = forward(params, inputs, targets, hprev)
    got, (_, hs, _) = forward(_as_tensors(params), inputs, targets, hprev)
    assert isinstance(got, en.Tensor) and isinstance(hs[0], en.Tensor)
    np.testing.assert_allclose(float(got), want, rtol=1e-12)


def test_en_grad_of_the_forward_pass_matches_the_hand_written_backward():
    params, (inputs, targets) = init_params(2), _sequence(10)
    hprev = np.random.default_rng(3).standard_normal((HIDDEN, 1)) * 0.1
    _, cache = forward(params, inputs, targets, hprev)
    want = backward(params, cache, targets)   # numpy arrays throughout
    names = list(params)

    def loss(*values):
        return forward(dict(zip(names, values)), inputs, targets, hprev)[0]

    got = en.grad(loss, argnums=tuple(range(len(names))))(*_as_tensors(params).values())
    for name, g in zip(names, got):
        # the clip at 5 does not bite at this scale, so the two are the same gradient
        assert np.abs(want[name]).max() < 5
        np.testing.assert_allclose(g.numpy(), want[name], rtol=1e-10, atol=1e-13,
                                   err_msg=name)


def test_backward_runs_on_tensors_and_matches_numpy():
    params, (inputs, targets) = init_params(4), _sequence(20)
    hprev = np.zeros((HIDDEN, 1))
    want = backward(params, forward(params, inputs, targets, hprev)[1], targets)
    tensors = _as_tensors(params)
    got = backward(tensors, forward(tensors, inputs, targets, hprev)[1], targets)
    for name in params:
        assert isinstance(got[name], en.Tensor)
        np.testing.assert_allclose(got[name].numpy(), want[name], rtol=1e-12, atol=1e-15)


def test_training_with_tensor_parameters_matches_numpy(steps=25):
    numpy_params, tensor_params = init_params(5), _as_tensors(init_params(5))
    tensor_objects = {k: id(v) for k, v in tensor_params.items()}
    want = train(numpy_params, steps)
    got = train(tensor_params, steps)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[-1] < got[0]   # it trains: Adagrad's in-place updates reached the params
    for name in numpy_params:
        assert id(tensor_params[name]) == tensor_objects[name]   # updated in place
        np.testing.assert_allclose(tensor_params[name].numpy(), numpy_params[name],
                                   rtol=1e-12, atol=1e-14, err_msg=name)
