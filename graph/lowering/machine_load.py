"""How many of this process's cores the machine leaves idle now, for the choices that
depend on it: a C source cut into parallel units (``c_compiler.units``), mid-sized
products on OpenBLAS's own threads or in chunks (``chunked_products``), convolutions
split over their images or not (``window_threads``). OpenBLAS's
threads win on an idle machine and lose badly on a loaded one (a worker that waits for
a core stalls every product), so the choice is made when the kernel runs, from the last
minute's load average, read at most once a second.

Example:
    >>> 0.0 <= idle_cores() <= usable_cores()
    True
"""
import os
import time

from engine.cost_model import cost

# How long a load reading is reused (reading /proc/loadavg costs a few microseconds; the
# kernel updates the average every 5 s).
REFRESH_SECONDS = 1.0

_last = [float("-inf"), 0.0]       # [when read, idle cores then]


def usable_cores():
    """The cores this process may run on (its affinity; all of them where it has none)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):    # no affinity call (macOS, Windows)
        return os.cpu_count() or 1


def idle_cores(fresh=False):
    """The usable cores the last minute's load average leaves idle, at least 0 (all of
    them where there is no load average, as on Windows); a reading at most
    ``REFRESH_SECONDS`` old unless ``fresh``."""
    now = time.monotonic()
    if fresh or now - _last[0] >= REFRESH_SECONDS:
        cores = usable_cores()
        try:
            idle = cores - os.getloadavg()[0]
        except (AttributeError, OSError):
            idle = cores
        _last[0], _last[1] = now, max(0.0, float(idle))
    return _last[1]


def machine_busy():
    """Whether fewer than ``cost.busy_machine_max_idle_cores`` of this process's cores are
    idle: then the engine's own chunks beat OpenBLAS's threads, which wait a scheduler
    slice for a partner thread another process holds; on an idle machine they lose to
    OpenBLAS's (which also runs each im2col-and-product faster whole)."""
    return idle_cores() < cost.busy_machine_max_idle_cores
