"""A small training run that checkpoints after every step and can be killed and resumed:
``python resumable_run.py CKPT OUT [SLOW_AFTER]``. It prints ``step N`` after each step
(and ``resumed S`` when it starts from a checkpoint) and writes the final variables to
OUT (an .npz). After step SLOW_AFTER it sleeps between steps, so that a test killing it
there lands mid-epoch. Dropout, input noise from the default generator, a shuffled
loader, Adam and a traced step: every kind of state a resumed run must get back."""
import sys
import time

import numpy as np

import engine as en

EPOCHS, EXAMPLES, BATCH = 3, 40, 4      # 10 steps an epoch


def main(ckpt_path, out_path, slow_after=None):
    en.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((EXAMPLES, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]], "float32")).astype("float32")
    model = en.nn.Sequential(en.nn.Linear(3, 16, generator=1), en.nn.ReLU(),
                             en.nn.Dropout(0.3), en.nn.Linear(16, 1, generator=2))
    opt = en.optim.Adam(0.01)
    loader = en.data.DataLoader((x, y), batch_size=BATCH, shuffle=True, seed=5)
    ckpt = en.TrainingCheckpoint(ckpt_path, model=model, optimizer=opt, loader=loader)
    opt.build(model.trainable_variables)
    step = ckpt.restore()
    if step:
        print(f"resumed {step}", flush=True)

    @en.function
    def train_step(xb, yb):
        noisy = xb + 0.01 * en.random.normal(xb.shape)
        return opt.minimize(lambda: en.mean((model(noisy) - yb) ** 2),
                            model.trainable_variables)

    for _ in range(loader.epochs_completed, EPOCHS):
        for xb, yb in loader:
            train_step(xb, yb)
            step += 1
            ckpt.save(step)
            print(f"step {step}", flush=True)
            if slow_after is not None and step > slow_after:
                time.sleep(0.2)
    np.savez(out_path, **{n: v.numpy() for n, v in model.named_variables()},
             iterations=opt.iterations.numpy())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None)
