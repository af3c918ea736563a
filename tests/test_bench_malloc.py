"""``bench.malloc.steady_malloc``: after it, a loop that frees and makes arrays of a
few MiB takes no page faults once warm (the operating system's fault counter is the
reference). Runs in a child process: the setting is process-wide."""
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import resource
import numpy as np
from bench.malloc import steady_malloc

print(steady_malloc())
a = np.ones((1000, 784), np.float32)

def iteration():
    # numpy temporaries of 3 MiB, freed before the next ones are made (the
    # pattern of a hand-written numpy training loop)
    b = a * 2.0
    c = np.exp(-b)
    d = (c + 1.0) @ np.ones((784, 196), np.float32)
    return float(d.sum())

for _ in range(5):
    iteration()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    iteration()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_steady_malloc_stops_page_faults_on_reused_memory():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    message, faults = proc.stdout.split("\n")[:2]
    if platform.libc_ver()[0] != "glibc":
        assert message.startswith("unchanged")
        return
    assert message == "glibc: mmap threshold 32 MiB, no trimming"
    # 50 iterations, each making ~9 MiB of temporaries: a few faults at most
    # (the interpreter's own small allocations), not thousands.
    assert int(faults) < 50, f"{faults} page faults in 50 iterations"
