"""A character-level transformer language model, trained eagerly and traced, timed against PyTorch.

The text is the opening scene of Shakespeare's Coriolanus (public domain, 7 KB), shipped
with the package as ``engine/data/shakespeare.txt``. The model is a small GPT-style
decoder: token and position embeddings, ``en.nn.TransformerEncoder`` layers run with a
causal mask (pre-norm, GELU), a final LayerNorm and a linear head; it learns to predict
each next character::

    python examples/char_transformer.py                  # 300 steps each way, then a sample
    python examples/char_transformer.py --steps 1000 --mode graph
    python examples/char_transformer.py --quick          # a tiny model for a few steps (CI)

Each mode starts from the same weights and sees the same batches; the losses of the
eager and the traced (``en.function``) runs agree. The step times of both, and of the
same model in PyTorch when it is installed, are printed side by side.
"""
import argparse
import importlib.resources
import os
import sys

import numpy as np

try:
    import engine as en
except ImportError:    # run from a checkout without installing: python examples/char_transformer.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import engine as en

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))     # training_helpers.py
from training_helpers import timing_line, torch_or_none, train_steps  # noqa: E402

SIZES = {"full": dict(d_model=64, nhead=4, layers=2, block=64, batch=16, steps=300),
         "quick": dict(d_model=32, nhead=2, layers=1, block=32, batch=8, steps=30)}


# ---- data -----------------------------------------------------------------------------------
def load_text():
    """The shipped text (read from the installed package)."""
    return importlib.resources.files("engine.data").joinpath("shakespeare.txt").read_text("utf-8")


class Vocabulary:
    """Characters to integer ids and back."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, text):
        return np.array([self.index[c] for c in text], dtype=np.int64)

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)


def make_batches(ids, steps, batch, block, seed=0):
    """``steps`` batches of random windows: inputs ``(batch, block)`` and the same windows
    shifted by one character as targets."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        starts = rng.integers(0, len(ids) - block - 1, size=batch)
        x = np.stack([ids[s:s + block] for s in starts])
        y = np.stack([ids[s + 1:s + block + 1] for s in starts])
        out.append((x, y))
    return out


# ---- the model ------------------------------------------------------------------------------
class CharTransformer(en.nn.Module):
    """Embeddings -> causal transformer layers -> LayerNorm -> logits over the characters."""

    def __init__(self, vocab, block, d_model=64, nhead=4, layers=2, dropout=0.1, seed=0):
        super().__init__()
        en.random.set_seed(seed)       # the layers' dropout streams, reproducibly
        self.block = block
        self.tok = en.nn.Embedding(vocab, d_model, init="glorot_uniform", generator=seed)
        self.pos = en.nn.Embedding(block, d_model, init="glorot_uniform", generator=seed + 1)
        layer = en.nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, dropout,
                                              activation="gelu", batch_first=True,
                                              norm_first=True, generator=seed + 2)
        self.blocks = en.nn.TransformerEncoder(layer, layers)
        self.norm = en.nn.LayerNorm(d_model)
        self.head = en.nn.Linear(d_model, vocab, generator=seed + 3)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(en.arange(ids.shape[1]))
        return self.head(self.norm(self.blocks(x, is_causal=True)))


def make_step(model, lr):
    """One AdamW step on a batch of (inputs, targets); returns the loss."""
    opt = en.optim.AdamW(lr=lr, weight_decay=0.01)

    def step(x, y):
        with en.GradientTape() as tape:
            loss = en.cross_entropy(model(x), y)
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = en.optim.clip_by_global_norm(grads, 1.0)
        opt.step(grads, model.trainable_variables)
        return loss
    return step


def generate(model, vocab, prompt, length, temperature=0.8, seed=0):
    """``prompt`` continued by ``length`` sampled characters (eager, evaluation mode)."""
    model.eval()
    rng = np.random.default_rng(seed)
    ids = list(vocab.encode(prompt))
    for _ in range(length):
        context = np.array(ids[-model.block:], dtype=np.int64)[None]
        logits = model(en.tensor(context)).numpy()[0, -1].astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        ids.append(int(rng.choice(len(p), p=p / p.sum())))
    model.train()
    return vocab.decode(ids)


# ---- the same model in PyTorch, for the timing ------------------------------------------------
def torch_times(torch, vocab, batches, size, lr, dropout):
    """Seconds per training step of the same model in PyTorch (CPU), on the same batches."""
    nn = torch.nn
    torch.manual_seed(0)
    d, block = size["d_model"], size["block"]

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
            layer = nn.TransformerEncoderLayer(d, size["nhead"], 4 * d, dropout,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, size["layers"], enable_nested_tensor=False)
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, ids):
            n = ids.shape[1]
            mask = nn.Transformer.generate_square_subsequent_mask(n)
            x = self.tok(ids) + self.pos(torch.arange(n))
            return self.head(self.norm(self.blocks(x, mask=mask, is_causal=True)))

    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)

    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()
    tensors = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]
    return train_steps(step, tensors, "torch", progress=False)[1]


# ---- running it ---------------------------------------------------------------------------------
def run(size="full", steps=None, modes=("eager", "graph"), lr=3e-3, dropout=0.1, seed=0,
        sample_length=200, compare_torch=True, progress=True, verbose=True):
    """Train once per mode from the same start; returns losses, step times and a sample."""
    text = load_text()
    vocab = Vocabulary(text)
    ids = vocab.encode(text)
    cfg = dict(SIZES[size])
    steps = steps or cfg["steps"]
    batches = make_batches(ids, steps, cfg["batch"], cfg["block"], seed)
    feed = [(en.tensor(x), en.tensor(y)) for x, y in batches]
    result = {"losses": {}, "times": {}, "vocab": len(vocab), "characters": len(text)}
    model = None
    for mode in modes:
        model = CharTransformer(len(vocab), cfg["block"], cfg["d_model"], cfg["nhead"],
                                cfg["layers"], dropout, seed)
        step = make_step(model, lr)
        if mode == "graph":
            step = en.function(step)
        losses, seconds = train_steps(step, feed, f"{mode}", progress)
        result["losses"][mode], result["times"][mode] = losses, seconds
        if verbose:
            print(f"{mode:>5}: loss {losses[0]:.3f} -> {np.mean(losses[-10:]):.3f} "
                  f"(mean of the last 10) in {steps} steps", flush=True)
    torch = torch_or_none() if compare_torch else None
    if torch is not None:
        result["times"]["torch"] = torch_times(torch, len(vocab), batches, cfg, lr, dropout)
    if verbose:
        print(timing_line(result["times"]), flush=True)
    result["sample"] = generate(model, vocab, "MENENIUS:\n", sample_length, seed=seed)
    if verbose:
        print("sample:\n" + result["sample"])
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="training steps per mode")
    parser.add_argument("--quick", action="store_true", help="a tiny model, a few steps")
    parser.add_argument("--mode", choices=["eager", "graph", "both"], default="both")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch timing")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    size = "quick" if args.quick else "full"
    print(f"{size} model {SIZES[size]}; text: {len(load_text())} characters")
    modes = ("eager", "graph") if args.mode == "both" else (args.mode,)
    return run(size, args.steps, modes, lr=args.lr, compare_torch=not args.no_torch,
               progress=not args.no_progress, sample_length=60 if args.quick else 200)


if __name__ == "__main__":
    main()
