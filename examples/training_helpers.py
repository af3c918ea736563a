"""What the sequence examples share: a progress bar, step timing and the summary lines.

* :class:`Progress`: a tqdm bar when tqdm is installed (``pip install tqdm``), shown only
  once a run has taken more than two seconds; without tqdm a line of text now and then.
* :func:`train_steps`: run a training step over batches, timing each call.
* :func:`timing_line`: one line comparing eager, graph and PyTorch step times.
"""
import time

import numpy as np

try:
    from tqdm import tqdm
except ImportError:
    tqdm = None


class Progress:
    """A progress bar over ``total`` steps labelled ``label`` (nothing when not ``enabled``)."""

    def __init__(self, total, label, enabled=True):
        self.enabled, self.label, self.total, self.done = enabled, label, total, 0
        # delay: a run of a few seconds stays quiet; a longer one shows its bar.
        self.bar = (tqdm(total=total, desc=label, leave=False, delay=2.0)
                    if enabled and tqdm is not None else None)
        self.every = max(1, total // 5)

    def update(self, loss):
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
            self.bar.update(1)
        elif self.enabled and (self.done % self.every == 0 or self.done == self.total):
            print(f"  {self.label}: step {self.done}/{self.total} loss {loss:.4f}", flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def train_steps(step, batches, label, progress=True):
    """Call ``step(*batch)`` for every batch; returns ``(losses, seconds per call)``.

    The first call of a traced step includes its trace and compile; :func:`steady` leaves
    it out."""
    losses, seconds = [], []
    bar = Progress(len(batches), label, progress)
    try:
        for batch in batches:
            start = time.perf_counter()
            loss = float(step(*batch))          # float() waits for the value
            seconds.append(time.perf_counter() - start)
            losses.append(loss)
            bar.update(loss)
    finally:
        bar.close()
    return losses, seconds


def steady(seconds):
    """The median time of a step after the first (which traces or warms caches), in ms."""
    rest = seconds[1:] or seconds
    return 1000.0 * float(np.median(rest))


def timing_line(times):
    """``{"eager": s, "graph": s, "torch": s}`` (lists of seconds per step) as one line."""
    parts = [f"{name} {steady(sec):.2f} ms/step" for name, sec in times.items()]
    if "graph" in times:
        parts.append(f"(graph first call, with its trace: {1000 * times['graph'][0]:.0f} ms)")
    return "step times: " + ", ".join(parts)


def torch_or_none():
    """PyTorch when installed (the timing comparison), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch
