"""en.TrainingCheckpoint: a run killed mid-epoch (SIGKILL) and resumed ends bit for bit
where an uninterrupted run ends; restore checks before it changes anything."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import engine as en
from support.paths import REPO

SCRIPT = os.path.join(REPO, "tests", "support", "resumable_run.py")


def _run(*args, kill_at=None):
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, SCRIPT, *map(str, args)], stdout=subprocess.PIPE,
                            text=True, env=env)
    lines = []
    for line in proc.stdout:
        lines.append(line.strip())
        if kill_at is not None and line.strip() == f"step {kill_at}":
            os.kill(proc.pid, signal.SIGKILL)     # no cleanup, no flush: a crash
            break
    proc.stdout.close()
    rc = proc.wait(timeout=300)
    return rc, lines


def test_run_killed_mid_epoch_resumes_bit_identically(tmp_path):
    rc, _ = _run(tmp_path / "a.ckpt", tmp_path / "uninterrupted.npz")
    assert rc == 0
    rc, lines = _run(tmp_path / "b.ckpt", tmp_path / "never.npz", 13, kill_at=14)
    assert rc == -signal.SIGKILL and not (tmp_path / "never.npz").exists()
    rc, lines = _run(tmp_path / "b.ckpt", tmp_path / "resumed.npz")
    assert rc == 0
    resumed_at = int(lines[0].split()[1])
    assert lines[0].startswith("resumed") and 14 <= resumed_at < 30
    assert resumed_at % 10, "the kill should land mid-epoch (10 steps an epoch)"
    want, got = np.load(tmp_path / "uninterrupted.npz"), np.load(tmp_path / "resumed.npz")
    assert sorted(want.files) == sorted(got.files)
    for name in want.files:
        assert want[name].tobytes() == got[name].tobytes(), name


def _setup(tmp_path, seed=0):
    model = en.nn.Sequential(en.nn.Linear(2, 3, generator=seed), en.nn.Dropout(0.5, generator=seed))
    opt = en.optim.SGD(0.1, momentum=0.9)
    loader = en.data.DataLoader((np.arange(20.0, dtype="float32").reshape(10, 2),),
                                batch_size=3, shuffle=True, seed=seed)
    return model, opt, loader, en.TrainingCheckpoint(tmp_path / "c.ckpt", model=model,
                                                     optimizer=opt, loader=loader)


def _steps(model, opt, it, n):
    out = []
    for _ in range(n):
        (xb,) = next(it)
        out.append(float(opt.minimize(lambda xb=xb: en.mean(model(xb * 0.1) ** 2),
                                      model.trainable_variables)))
    return out


def test_in_process_restore_replays_the_same_batches_and_masks(tmp_path):
    model, opt, loader, ckpt = _setup(tmp_path)
    assert ckpt.restore() == 0                 # nothing saved yet: a fresh run
    epoch = iter(loader)                       # 4 batches: 3, 3, 3 and 1 examples
    _steps(model, opt, epoch, 2)
    ckpt.save(2, note="mid-epoch")
    want = _steps(model, opt, epoch, 2) + _steps(model, opt, iter(loader), 1)
    model2, opt2, loader2, ckpt2 = _setup(tmp_path, seed=7)   # other weights, masks and order
    ckpt2.path = ckpt.path
    assert ckpt2.restore() == 2 and ckpt2.extra == {"note": "mid-epoch"}
    epoch = iter(loader2)                      # the rest of the interrupted epoch
    got = _steps(model2, opt2, epoch, 2)
    with pytest.raises(StopIteration):
        next(epoch)
    assert got + _steps(model2, opt2, iter(loader2), 1) == want


def test_restore_refuses_another_model_before_changing_anything(tmp_path):
    model, opt, loader, ckpt = _setup(tmp_path)
    _steps(model, opt, iter(loader), 1)
    ckpt.save(1)
    other = en.nn.Linear(2, 4, generator=0)
    before = other.weight.numpy().copy()
    bad = en.TrainingCheckpoint(ckpt.path, model=other, optimizer=en.optim.SGD(0.1))
    with pytest.raises(en.LoadError, match="model/weight"):
        bad.restore()
    np.testing.assert_array_equal(other.weight.numpy(), before)
    (tmp_path / "junk.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(en.LoadError, match="unreadable"):
        en.TrainingCheckpoint(tmp_path / "junk.ckpt", model=model).restore()
