"""A classic pure-numpy program run unchanged on engine tensors: a small layer library
(affine, ReLU, softmax loss, each a forward and a hand-written backward function, in
the style of a course's assignment), a two-layer network and SGD with momentum.

It runs once with numpy arrays as parameters and once with engine tensors; the
losses, gradients and trained parameters must agree to 1e-12, and ``en.grad`` of the
network's forward loss must agree with the hand-written backward passes.
"""
import numpy as np

import engine as en


# ---- the program (numpy only) -------------------------------------------------------------
def affine_forward(x, w, b):
    out = np.dot(x.reshape(x.shape[0], -1), w) + b
    return out, (x, w, b)


def affine_backward(dout, cache):
    x, w, b = cache
    dx = np.dot(dout, w.T).reshape(x.shape)
    dw = np.dot(x.reshape(x.shape[0], -1).T, dout)
    db = np.sum(dout, axis=0)
    return dx, dw, db


def relu_forward(x):
    return np.maximum(0, x), x


def relu_backward(dout, cache):
    dx = np.copy(dout)
    dx[cache <= 0] = 0
    return dx


def softmax_loss(x, y):
    shifted = x - np.max(x, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    n = x.shape[0]
    loss = -np.sum(log_probs[np.arange(n), y]) / n
    dx = np.exp(log_probs)
    dx[np.arange(n), y] -= 1
    dx /= n
    return loss, dx


def init_network(seed, d_in=6, hidden=8, classes=4, scale=0.3):
    rng = np.random.default_rng(seed)
    return {"W1": scale * rng.standard_normal((d_in, hidden)), "b1": np.zeros(hidden),
            "W2": scale * rng.standard_normal((hidden, classes)), "b2": np.zeros(classes)}


def network_loss(params, X, y, reg):
    """The loss of the two-layer network and the gradients of its parameters."""
    h, cache1 = affine_forward(X, params["W1"], params["b1"])
    a, cache_relu = relu_forward(h)
    scores, cache2 = affine_forward(a, params["W2"], params["b2"])
    loss, dscores = softmax_loss(scores, y)
    loss += 0.5 * reg * (np.sum(params["W1"] ** 2) + np.sum(params["W2"] ** 2))
    grads = {}
    da, grads["W2"], grads["b2"] = affine_backward(dscores, cache2)
    dh = relu_backward(da, cache_relu)
    _, grads["W1"], grads["b1"] = affine_backward(dh, cache1)
    grads["W1"] += reg * params["W1"]
    grads["W2"] += reg * params["W2"]
    return loss, grads


def sgd_momentum(params, X, y, steps, lr=0.2, momentum=0.9, reg=1e-3):
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    losses = []
    for _ in range(steps):
        loss, grads = network_loss(params, X, y, reg)
        for name, w in params.items():
            velocity[name] *= momentum
            velocity[name] -= lr * grads[name]
            w += velocity[name]
        losses.append(float(loss))
    return losses


# ---- the tests ----------------------------------------------------------------------------
def _data(seed=0, n=10, d_in=6, classes=4):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d_in)), rng.integers(0, classes, n)


def _as_tensors(params):
    return {k: en.tensor(v) for k, v in params.items()}


def test_forward_layers_run_on_tensors_and_match_numpy():
    X, y = _data()
    p = init_network(1)
    h, _ = affine_forward(X, p["W1"], p["b1"])
    th, _ = affine_forward(en.tensor(X), en.tensor(p["W1"]), en.tensor(p["b1"]))
    np.testing.assert_allclose(th.numpy(), h, rtol=1e-12)
    a, _ = relu_forward(th)
    assert isinstance(a, en.Tensor)
    np.testing.assert_array_equal(a.numpy(), relu_forward(h)[0])


def test_en_grad_of_the_forward_loss_matches_the_hand_written_backward():
    X, y = _data(2)
    params, reg = init_network(3), 1e-2
    _, want = network_loss(params, X, y, reg)   # numpy arrays throughout
    names = list(params)

    def forward_loss(*values):
        p = dict(zip(names, values))
        h, _ = affine_forward(X, p["W1"], p["b1"])
        scores, _ = affine_forward(relu_forward(h)[0], p["W2"], p["b2"])
        shifted = scores - np.max(scores, axis=1, keepdims=True)
        log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
        loss = -np.sum(log_probs[np.arange(X.shape[0]), y]) / X.shape[0]
        return loss + 0.5 * reg * (np.sum(p["W1"] ** 2) + np.sum(p["W2"] ** 2))

    got = en.grad(forward_loss, argnums=tuple(range(len(names))))(
        *_as_tensors(params).values())
    for name, g in zip(names, got):
        np.testing.assert_allclose(g.numpy(), want[name], rtol=1e-10, atol=1e-14,
                                   err_msg=name)


def test_backward_passes_run_on_tensors_and_match_numpy():
    X, y = _data(4)
    params = init_network(5)
    want_loss, want = network_loss(params, X, y, 1e-3)
    got_loss, got = network_loss(_as_tensors(params), en.tensor(X), y, 1e-3)
    np.testing.assert_allclose(float(got_loss), want_loss, rtol=1e-12)
    for name in params:
        np.testing.assert_allclose(got[name].numpy(), want[name], rtol=1e-12, atol=1e-15,
                                   err_msg=name)


def test_training_with_tensor_parameters_matches_numpy(steps=30):
    X, y = _data(6)
    numpy_params, tensor_params = init_network(7), _as_tensors(init_network(7))
    want = sgd_momentum(numpy_params, X, y, steps)
    got = sgd_momentum(tensor_params, en.tensor(X), y, steps)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[-1] < 0.5 * got[0]   # it trains: the in-place updates reached the params
    for name in numpy_params:
        np.testing.assert_allclose(tensor_params[name].numpy(), numpy_params[name],
                                   rtol=1e-12, atol=1e-14, err_msg=name)
