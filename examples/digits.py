"""Handwritten digits with en.nn: an MLP and a small CNN, trained eagerly and traced.

Data: scikit-learn's bundled 8x8 digits (``sklearn.datasets.load_digits``,
1797 images; ``pip install scikit-learn``), split 75/25 with a fixed seed;
or MNIST, read from its IDX files with ``en.data.load_mnist``, when a
directory is given::

    python examples/digits.py                       # both models, both ways, digits
    python examples/digits.py --model cnn --mode graph --epochs 10
    python examples/digits.py --mnist ~/data/mnist --epochs 3

Each run trains, reports the test accuracy, saves the model with
``en.nn.save``, loads it into a fresh model with ``en.nn.load_into`` and
checks that the reloaded model predicts exactly the same. A progress bar
comes from tqdm when it is installed, plain text otherwise. When PyTorch is
installed the same model is trained there too (same batches and epochs, CPU),
and a line compares the milliseconds per training step of eager, graph and
PyTorch (``--no-torch`` skips it).
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

try:
    import engine as en
except ImportError:    # run from a checkout without installing: python examples/digits.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import engine as en

try:
    from tqdm import tqdm
except ImportError:
    tqdm = None


# ---- data ---------------------------------------------------------------------------------
def load_data(mnist_dir=None, test_fraction=0.25, seed=0):
    """``((x_train, y_train), (x_test, y_test), side)``: float32 images in [0, 1], NHWC."""
    if mnist_dir is not None:
        (x, y), (xt, yt) = en.data.load_mnist(mnist_dir)
        side = int(round(x.shape[1] ** 0.5))
        return (x.reshape(-1, side, side, 1), y), (xt.reshape(-1, side, side, 1), yt), side
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise SystemExit("this example needs scikit-learn for its bundled digits "
                         "(pip install scikit-learn), or --mnist DIR") from None
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]      # (1797, 8, 8, 1)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test]), 8


# ---- models -------------------------------------------------------------------------------
def make_mlp(side, seed=0, hidden=128):
    """Flatten -> Linear -> ReLU -> Linear (10 classes)."""
    return en.nn.Sequential(
        en.nn.Flatten(),
        en.nn.Linear(side * side, hidden, init="he_uniform", generator=seed),
        en.nn.ReLU(),
        en.nn.Linear(hidden, 10, generator=seed + 1))


def make_cnn(side, seed=0, channels=(16, 32)):
    """Two (Conv 3x3 "same" -> BatchNorm -> ReLU -> MaxPool 2) blocks, then Linear."""
    c1, c2 = channels
    reduced = side // 4
    return en.nn.Sequential(
        en.nn.Conv2D(1, c1, 3, padding="same", generator=seed), en.nn.BatchNorm(c1),
        en.nn.ReLU(), en.nn.MaxPool2D(2),
        en.nn.Conv2D(c1, c2, 3, padding="same", generator=seed + 1), en.nn.BatchNorm(c2),
        en.nn.ReLU(), en.nn.MaxPool2D(2),
        en.nn.Flatten(),
        en.nn.Linear(c2 * reduced * reduced, 10, generator=seed + 2))


MODELS = {"mlp": make_mlp, "cnn": make_cnn}


# ---- training -----------------------------------------------------------------------------
class Progress:
    """tqdm when installed; otherwise a line of text per epoch."""

    def __init__(self, total, label, enabled=True):
        self.enabled, self.label, self.total, self.done = enabled, label, total, 0
        self.bar = tqdm(total=total, desc=label, leave=False) if enabled and tqdm else None

    def update(self, epoch, loss):
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix(epoch=epoch, loss=f"{loss:.4f}")
            self.bar.update(1)
        elif self.enabled:
            print(f"  {self.label}: epoch {epoch}/{self.total} loss {loss:.4f}", flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def make_train_step(model, opt, traced, image_shape):
    """One optimizer step on a batch; traced, it runs as one graph for any batch size."""
    def step(x, y):
        with en.GradientTape() as tape:
            loss = en.cross_entropy(model(x), y)
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = en.optim.clip_by_global_norm(grads, 5.0)
        opt.step(grads, model.trainable_variables)
        return loss
    if not traced:
        return step
    return en.function(step, input_signature=[
        en.TensorSpec((None,) + tuple(image_shape), "float32"), en.TensorSpec((None,), "int64")])


def train(model, train_data, epochs=20, batch_size=32, lr=1e-2, traced=True, seed=0,
          progress=True, label="train"):
    """Train ``model`` with AdamW on a cosine schedule; returns the traced step (or None)."""
    x, y = train_data
    steps_per_epoch = -(-len(x) // batch_size)
    schedule = en.optim.LinearWarmup(
        en.optim.CosineDecay(lr, decay_steps=max(1, epochs * steps_per_epoch - steps_per_epoch),
                             alpha=0.05), warmup_steps=steps_per_epoch)
    opt = en.optim.AdamW(lr=schedule, weight_decay=1e-4)
    step = make_train_step(model, opt, traced, x.shape[1:])
    model.train()
    bar = Progress(epochs, label, progress)
    try:
        for epoch in range(1, epochs + 1):
            total, count = 0.0, 0
            for xb, yb in en.data.batches((x, y), batch_size, shuffle=True, seed=seed + epoch):
                loss = step(xb, yb)
                total += float(loss) * len(yb)
                count += len(yb)
            bar.update(epoch, total / count)
    finally:
        bar.close()
    return step if traced else None


def predict(model, x, batch_size=512):
    """Class ids for ``x``, in eval mode (BatchNorm uses its running statistics)."""
    model.eval()
    out = [np.argmax(model(xb).numpy(), axis=-1) for xb in en.data.batches(x, batch_size)]
    return np.concatenate(out)


def accuracy(model, data):
    x, y = data
    return float(np.mean(predict(model, x) == y))


def save_and_reload(model, make, side, seed):
    """Save ``model`` and load it into a freshly built one (other initial weights)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.npz")
        en.nn.save(model, path)
        fresh = make(side, seed=seed + 100)      # different initial weights
        en.nn.load_into(fresh, path)
    return fresh


# ---- the same models in PyTorch, for the timing ---------------------------------------------
def torch_model(torch, model_name, side, channels=(16, 32), hidden=128):
    """The PyTorch twin of ``MODELS[model_name]`` (channels-first images)."""
    nn = torch.nn
    if model_name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(side * side, hidden), nn.ReLU(),
                             nn.Linear(hidden, 10))
    c1, c2 = channels
    return nn.Sequential(
        nn.Conv2d(1, c1, 3, padding="same"), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding="same"), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * (side // 4) ** 2, 10))


def torch_run(model_name, data, epochs=None, batch_size=32, lr=None, seed=0):
    """Train the PyTorch twin on the same batches: ``{"seconds", "steps", "accuracy"}``,
    or None without PyTorch."""
    try:
        import torch
    except ImportError:
        return None
    (x, y), (xt, yt), side = data
    epochs = epochs or {"mlp": 20, "cnn": 12}[model_name]
    lr = lr or 1e-2
    torch.manual_seed(seed)
    model = torch_model(torch, model_name, side)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    model.train()
    steps, start = 0, time.perf_counter()
    for epoch in range(1, epochs + 1):
        for xb, yb in en.data.batches((x, y), batch_size, shuffle=True, seed=seed + epoch):
            xb = torch.from_numpy(np.ascontiguousarray(np.moveaxis(np.asarray(xb), -1, 1)))
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), torch.from_numpy(np.asarray(yb)))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            steps += 1
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(np.ascontiguousarray(np.moveaxis(xt, -1, 1))))
    accuracy_ = float(np.mean(logits.argmax(-1).numpy() == yt))
    return {"seconds": seconds, "steps": steps, "accuracy": accuracy_}


def timing_line(results, torch_result):
    """Milliseconds per training step of each run (and PyTorch's), as one line."""
    parts = [f"{r['mode']} {1000 * r['seconds'] / r['steps']:.2f}" for r in results]
    if torch_result is not None:
        parts.append(f"PyTorch {1000 * torch_result['seconds'] / torch_result['steps']:.2f}")
    return "ms per training step (first step's trace included): " + ", ".join(parts)


def run(model_name="mlp", mode="graph", epochs=None, batch_size=32, lr=None, mnist_dir=None,
        seed=0, progress=True, data=None, verbose=True):
    """Train one model one way; returns a dict of results (accuracy, seconds, reload check)."""
    train_data, test_data, side = data if data is not None else load_data(mnist_dir, seed=seed)
    make = MODELS[model_name]
    epochs = epochs or {"mlp": 20, "cnn": 12}[model_name]
    lr = lr or {"mlp": 1e-2, "cnn": 1e-2}[model_name]
    model = make(side, seed=seed)
    start = time.perf_counter()
    step = train(model, train_data, epochs, batch_size, lr, traced=(mode == "graph"), seed=seed,
                 progress=progress, label=f"{model_name} {mode}")
    seconds = time.perf_counter() - start
    acc = accuracy(model, test_data)
    reloaded = save_and_reload(model, make, side, seed)
    same = bool(np.array_equal(predict(reloaded, test_data[0]), predict(model, test_data[0])))
    steps = epochs * -(-len(train_data[0]) // batch_size)
    result = {"model": model_name, "mode": mode, "accuracy": acc, "seconds": seconds,
              "steps": steps,
              "reloaded_same": same, "traces": step.trace_count if step is not None else 0,
              "parameters": model.num_parameters(trainable_only=True)}
    if verbose:
        traces = f", {result['traces']} trace" if step is not None else ""
        print(f"{model_name:>3} {mode:>5}: test accuracy {acc:.2%} after {epochs} epochs in "
              f"{seconds:.1f} s ({result['parameters']:,} parameters{traces}); reloaded model "
              f"predicts the same: {same}", flush=True)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    parser.add_argument("--mode", choices=["eager", "graph", "both"], default="both")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mnist", metavar="DIR", default=None,
                        help="read MNIST's IDX files from DIR instead of the bundled digits")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch timing")
    args = parser.parse_args(argv)
    data = load_data(args.mnist, seed=args.seed)
    (x, _), (xt, _), side = data
    print(f"data: {len(x)} training and {len(xt)} test images of {side}x{side}")
    models = ["mlp", "cnn"] if args.model == "both" else [args.model]
    modes = ["eager", "graph"] if args.mode == "both" else [args.mode]
    results = []
    for name in models:
        print(f"{name}: {MODELS[name](side)!r}")
        mine = [run(name, mode, args.epochs, args.batch_size, args.lr, seed=args.seed,
                    progress=not args.no_progress, data=data) for mode in modes]
        theirs = None if args.no_torch else torch_run(name, data, args.epochs,
                                                       args.batch_size, args.lr, args.seed)
        if theirs is not None:
            print(f"{name:>3} torch: test accuracy {theirs['accuracy']:.2%}", flush=True)
        print(timing_line(mine, theirs), flush=True)
        results += mine
    return results


if __name__ == "__main__":
    main()
