"""Resumable training: :class:`TrainingCheckpoint` saves and restores everything a run's
next step depends on -- the model's variables, the optimizer's state, the random
generators' states, the data loader's position and the step count -- in one file
written atomically (a temporary file renamed over the old checkpoint), so a run
killed at any moment resumes from the last complete checkpoint, and the resumed
run computes bit for bit what an uninterrupted run computes.

The random state saved is the default generator's (``en.random``), every
``en.random.Generator`` held by a module of the model (a Dropout layer's own
one too) and the ones passed as ``generators``. The file is an ``.npz`` (no
pickle) of the arrays plus a JSON record of the step, the loader position and
``extra`` values.

Not the same as ``en.checkpoint``, which trades compute for memory in gradients.

Example:
    >>> import os, tempfile
    >>> import numpy as np, engine as en
    >>> model, opt = en.nn.Linear(2, 1, generator=0), en.optim.SGD(0.1)
    >>> loader = en.data.DataLoader((np.ones((8, 2), "float32"), np.ones((8, 1), "float32")),
    ...                             batch_size=4, shuffle=True, seed=0)
    >>> ckpt = en.TrainingCheckpoint(os.path.join(tempfile.mkdtemp(), "run.ckpt"),
    ...                              model=model, optimizer=opt, loader=loader)
    >>> step = ckpt.restore()            # 0: no checkpoint yet, a fresh run
    >>> for epoch in range(loader.epochs_completed, 2):
    ...     for xb, yb in loader:
    ...         _ = opt.minimize(lambda: en.mean((model(xb) - yb) ** 2), model.trainable_variables)
    ...         step += 1
    ...         ckpt.save(step)
    >>> step, ckpt.restore()
    (4, 4)
"""
import io
import json
import os
import zipfile
from typing import Any

import numpy as np

from .errors import ArgumentTypeError, LoadError
from .files import write_atomically
from .nn.module import Module, check_state
from .nn import optimizer_state
from .optim.base import Optimizer
from .random import Generator, default_generator

FORMAT = "engine.training_checkpoint"
VERSION = 1
_META = "__meta__"


class TrainingCheckpoint:
    """The state of a training run at ``path``: :meth:`save` after a step, :meth:`restore`
    at the start of a run (a no-op returning 0 when there is no checkpoint yet).

    Args:
        path: the checkpoint file (replaced atomically by each save).
        model: an ``en.nn.Module`` (its variables and the generators its modules hold).
        optimizer: an ``en.optim`` optimizer stepping ``model.trainable_variables``.
        loader: an ``en.data.DataLoader`` (its position in the epoch).
        generators: more ``en.random.Generator`` objects, a list or a ``{name: gen}`` dict.
    """

    def __init__(self, path, model=None, optimizer=None, loader=None, generators=None):
        if model is not None and not isinstance(model, Module):
            raise ArgumentTypeError(f"TrainingCheckpoint: model must be an en.nn.Module, got "
                                    f"{type(model).__name__}")
        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise ArgumentTypeError(f"TrainingCheckpoint: optimizer must be an en.optim "
                                    f"optimizer, got {type(optimizer).__name__}")
        if loader is not None and not hasattr(loader, "state_dict"):
            raise ArgumentTypeError(f"TrainingCheckpoint: loader must be an en.data.DataLoader, "
                                    f"got {type(loader).__name__}")
        self.path = os.fspath(path)
        self.model, self.optimizer, self.loader = model, optimizer, loader
        if isinstance(generators, dict):
            self._extra_generators = dict(generators)
        else:
            self._extra_generators = {str(i): g for i, g in enumerate(generators or ())}
        self.extra = {}

    # -- what is saved ----------------------------------------------------------------
    def _variables(self):
        """``{file name: Variable}`` of everything saved as arrays."""
        out: dict[str, Any] = {}
        if self.model is not None:
            out.update((f"model/{n}", v) for n, v in self.model.named_variables())
        if self.optimizer is not None:
            out.update((f"optimizer/{n}", v)
                       for n, v in optimizer_state.named_variables(self.optimizer))
        out.update((f"rng/{n}", g.state) for n, g in self._generators().items())
        return out

    def _generators(self):
        gens = {"default": default_generator()}
        if self.model is not None:
            for path, module in self.model.named_modules():
                for attr, value in vars(module).items():
                    if isinstance(value, Generator):
                        gens[f"{path}.{attr}" if path else attr] = value
        gens.update((f"user.{k}", g) for k, g in self._extra_generators.items())
        return gens

    # -- saving and restoring -----------------------------------------------------------
    def save(self, step, **extra):
        """Write the run's state after ``step`` steps (and JSON-able ``extra`` values)."""
        meta = {"format": FORMAT, "version": VERSION, "step": int(step),
                "loader": None if self.loader is None else self.loader.state_dict(),
                "extra": {**self.extra, **extra}}
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr(_META + ".json", json.dumps(meta))
            for i, (name, var) in enumerate(self._variables().items()):
                data = io.BytesIO()
                np.lib.format.write_array(data, np.asarray(var.numpy(), order="C"),
                                          allow_pickle=False)
                zf.writestr(f"{i}.npy", data.getvalue())
                zf.writestr(f"{i}.name", name)
        write_atomically(self.path, buf.getvalue())

    def restore(self):
        """Put the model, optimizer, generators and loader back as the checkpoint has them
        and return its step; return 0 and change nothing when there is no checkpoint yet.

        Everything is read and checked before anything changes: a checkpoint that does
        not fit (another model, another optimizer) raises ``en.LoadError``.
        """
        if not os.path.exists(self.path):
            return 0
        who = f"TrainingCheckpoint.restore({self.path!r})"
        meta, arrays = _read(self.path, who)
        if self.optimizer is not None and self.model is not None:
            self.optimizer.build(self.model.trainable_variables)   # its slots, to fill
        named = self._variables()
        check_state(who, named, {k: (v.shape, v.dtype) for k, v in arrays.items()})
        if (meta["loader"] is None) != (self.loader is None):
            raise LoadError(f"{who}: the checkpoint {'has no' if self.loader else 'has a'} "
                            "data loader position; pass the same objects that saved it")
        for name, var in named.items():
            var.assign(arrays[name])
        if self.loader is not None:
            self.loader.load_state_dict(meta["loader"])
        self.extra = dict(meta.get("extra") or {})
        return int(meta["step"])


def _read(path, who):
    try:
        with zipfile.ZipFile(path) as zf:
            meta = json.loads(zf.read(_META + ".json").decode("utf-8"))
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                raise LoadError(f"{who}: not a training checkpoint")
            if meta.get("version") != VERSION:
                raise LoadError(f"{who}: checkpoint version {meta.get('version')!r}; this "
                                f"engine reads version {VERSION}")
            arrays = {}
            count = sum(1 for n in zf.namelist() if n.endswith(".npy"))
            for i in range(count):
                name = zf.read(f"{i}.name").decode("utf-8")
                with zf.open(f"{i}.npy") as f:
                    arrays[name] = np.lib.format.read_array(f, allow_pickle=False)
    except LoadError:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, UnicodeDecodeError, OSError) as err:
        raise LoadError(f"{who}: the checkpoint is unreadable ({err})") from None
    return meta, arrays
