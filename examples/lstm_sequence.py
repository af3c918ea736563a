"""An LSTM sequence model: forecasting noisy sine waves one step ahead, eager and traced,
timed against PyTorch.

Each series is ``a * sin(w * t + phase)`` plus a little noise, with its own amplitude,
frequency and phase; at every step the model (``en.nn.LSTM`` with two layers, then a
``Linear`` head on every step's output) predicts the next value, so it has to infer the
frequency from what it has seen. The yardstick is the persistence forecast (tomorrow
equals today), whose test error is printed beside the model's::

    python examples/lstm_sequence.py                  # 400 steps each way
    python examples/lstm_sequence.py --steps 1000 --mode graph
    python examples/lstm_sequence.py --quick          # a small model for a few steps (CI)

Each mode starts from the same weights and sees the same batches; the losses of the
eager and the traced (``en.function``: the time loop is one scan node per layer) runs
agree. The step times of both, and of the same model in PyTorch when it is installed,
are printed side by side.
"""
import argparse
import os
import sys

import numpy as np

try:
    import engine as en
except ImportError:    # run from a checkout without installing: python examples/lstm_sequence.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import engine as en

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))     # training_helpers.py
from training_helpers import timing_line, torch_or_none, train_steps  # noqa: E402

SIZES = {"full": dict(hidden=32, layers=2, length=40, batch=32, steps=400),
         "quick": dict(hidden=16, layers=2, length=20, batch=16, steps=40)}


# ---- data -----------------------------------------------------------------------------------
def make_series(n, length, seed=0, noise=0.02):
    """``(inputs, targets)``: ``n`` series of ``length + 1`` points, float32 ``(n, length, 1)``
    each, the targets one step ahead of the inputs."""
    rng = np.random.default_rng(seed)
    t = np.arange(length + 1)
    amp = rng.uniform(0.5, 1.0, (n, 1))
    freq = rng.uniform(0.1, 0.4, (n, 1))
    phase = rng.uniform(0.0, 2 * np.pi, (n, 1))
    x = amp * np.sin(freq * t + phase) + noise * rng.standard_normal((n, length + 1))
    x = x.astype(np.float32)[..., None]
    return x[:, :-1], x[:, 1:]


def persistence_mse(inputs, targets):
    """The error of predicting each next value as the current one."""
    return float(np.mean((targets - inputs) ** 2))


# ---- the model ------------------------------------------------------------------------------
class Forecaster(en.nn.Module):
    """LSTM layers over the series, a linear read-out at every step."""

    def __init__(self, hidden=32, layers=2, seed=0):
        super().__init__()
        self.lstm = en.nn.LSTM(1, hidden, num_layers=layers, batch_first=True, generator=seed)
        self.head = en.nn.Linear(hidden, 1, generator=seed + 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out)


def make_step(model, lr):
    """One Adam step on a batch of (inputs, targets); returns the mean squared error."""
    opt = en.optim.Adam(lr=lr)

    def step(x, y):
        with en.GradientTape() as tape:
            loss = en.mse(model(x), y)
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = en.optim.clip_by_global_norm(grads, 1.0)
        opt.step(grads, model.trainable_variables)
        return loss
    return step


def make_batches(inputs, targets, steps, batch, seed=0):
    rng = np.random.default_rng(seed)
    picks = [rng.integers(0, len(inputs), size=batch) for _ in range(steps)]
    return [(inputs[p], targets[p]) for p in picks]


# ---- the same model in PyTorch, for the timing ------------------------------------------------
def torch_times(torch, batches, size, lr):
    """Seconds per training step of the same model in PyTorch (CPU), on the same batches."""
    nn = torch.nn
    torch.manual_seed(0)
    lstm = nn.LSTM(1, size["hidden"], num_layers=size["layers"], batch_first=True)
    head = nn.Linear(size["hidden"], 1)
    params = list(lstm.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=lr)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.mse_loss(head(lstm(x)[0]), y)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss.item()
    tensors = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]
    return train_steps(step, tensors, "torch", progress=False)[1]


# ---- running it ---------------------------------------------------------------------------------
def run(size="full", steps=None, modes=("eager", "graph"), lr=1e-2, seed=0, compare_torch=True,
        progress=True, verbose=True):
    """Train once per mode from the same start; returns losses, step times and test errors."""
    cfg = dict(SIZES[size])
    steps = steps or cfg["steps"]
    x, y = make_series(2048, cfg["length"], seed)
    xt, yt = make_series(256, cfg["length"], seed + 1)
    batches = make_batches(x, y, steps, cfg["batch"], seed)
    feed = [(en.tensor(a), en.tensor(b)) for a, b in batches]
    result = {"losses": {}, "times": {}, "test_mse": {},
              "persistence_mse": persistence_mse(xt, yt)}
    for mode in modes:
        model = Forecaster(cfg["hidden"], cfg["layers"], seed)
        step = make_step(model, lr)
        if mode == "graph":
            step = en.function(step)
        losses, seconds = train_steps(step, feed, mode, progress)
        result["losses"][mode], result["times"][mode] = losses, seconds
        result["test_mse"][mode] = float(en.mse(model(en.tensor(xt)), en.tensor(yt)))
        if verbose:
            print(f"{mode:>5}: training loss {losses[0]:.4f} -> {np.mean(losses[-10:]):.4f}; "
                  f"test error {result['test_mse'][mode]:.5f} (persistence "
                  f"{result['persistence_mse']:.5f})", flush=True)
    torch = torch_or_none() if compare_torch else None
    if torch is not None:
        result["times"]["torch"] = torch_times(torch, batches, cfg, lr)
    if verbose:
        print(timing_line(result["times"]), flush=True)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="training steps per mode")
    parser.add_argument("--quick", action="store_true", help="a small model, a few steps")
    parser.add_argument("--mode", choices=["eager", "graph", "both"], default="both")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch timing")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    size = "quick" if args.quick else "full"
    print(f"{size} model {SIZES[size]}")
    modes = ("eager", "graph") if args.mode == "both" else (args.mode,)
    return run(size, args.steps, modes, lr=args.lr, compare_torch=not args.no_torch,
               progress=not args.no_progress)


if __name__ == "__main__":
    main()
