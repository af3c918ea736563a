"""``bench.malloc.steady_malloc``: after it, a loop that frees and makes arrays of a
few MiB takes no page faults once warm (the operating system's fault counter is the
reference). Runs in a child process: the setting is process-wide."""
import os
import platform
import subprocess
import sys

from support.paths import REPO

ROOT = REPO

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


RELEASE_CHILD = r"""
import numpy as np
import engine as en
from engine.eager import buffer_cache
from bench.malloc import release_memory, steady_malloc

def resident_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4

print(steady_malloc())
x = en.tensor(np.ones((2000, 2000)))
for _ in range(3):
    y = en.exp(x) + 1.0           # eager temporaries of 32 MB: recycled by the cache
    del y
blocks = [np.ones(1 << 17) for _ in range(400)]   # 400 MB of 1 MB heap blocks
del blocks
before = resident_kb()
cached = buffer_cache.cached_bytes()
release_memory()
print(cached, buffer_cache.cached_bytes(), before - resident_kb())
"""


def test_release_memory_empties_the_eager_cache_and_trims_the_heap():
    if platform.libc_ver()[0] != "glibc":
        return   # steady_malloc leaves other allocators alone; nothing to release
    out = subprocess.run([sys.executable, "-c", RELEASE_CHILD], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    cached, after, released_kb = (int(v) for v in out[1].split())
    assert cached > 0 and after == 0
    assert released_kb > 300_000        # the freed heap went back to the system
