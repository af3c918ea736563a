"""Compiling generated C with the system's C compiler, the shared library kept on disk.

The C lowering of fused kernels (``graph/lowering/c/c_fused.py``) needs only a C
compiler: ``$CC`` if set, else the one Python was built with, else ``cc`` or
``gcc`` on the ``PATH``; where none runs, :func:`available` is False and the
numpy lowering stays. A source is compiled with ``FLAGS`` (optimized for this
machine's CPU, ``errno`` not set by the maths so loops over it vectorize,
multiply-adds fused as the numba lowering fuses them; no other fast-math flag:
NaN, infinities and signed zeros keep numpy's semantics) into
``<cache>/k<key>.so``, where ``key`` hashes the source, the flags, the
compiler's version and the CPU's model and feature flags (a library built for
one CPU is never loaded on another that shares the folder). A second process
loads the library with ``ctypes`` in about a millisecond instead of compiling
(about 0.1 s a kernel). A whole graph's long source is cut into a few translation
units compiled side by side on the cores the machine's load leaves idle, then
linked (``c_split``: :func:`units` of them at most; the library computes what one
unit's would, so the key does not name them); several scans' sources are compiled at
once on threads (:func:`start`). A whole graph not yet built is first built quickly, with
``QUICK_LEVEL`` in place of ``-O2 -ftree-vectorize`` (:func:`quick_first`): its first call
waits for half the compiler's time, and its caller swaps in the full build once that is
made in the background (``c_graph.CGraphFunction``). ``c_cache`` keeps the libraries: each is checked against
its key before it is loaded (a damaged or another kernel's library is rebuilt,
never run), written whole under a temporary name and renamed, and kept only in a
folder no other user can write; elsewhere it is built for this process in a
private folder removed at once.

Example:
    >>> source = "int answer(void) { return 42; }\\n"
    >>> load(source).answer() if available() else 42
    42
"""
import concurrent.futures
import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import sysconfig

from engine.cost_model import cost
from engine.errors import EngineError
from engine.numerics import bitwise

from . import c_cache, c_split
from ..machine_load import idle_cores, usable_cores

# -O2 with loop vectorization, not -O3: the same run times on the styles bench's cells and
# transformer (gcc 12, quiet machine: lstm_concat 7.7-8.4 against 8.5-9.0 ms, gru_gates
# 3.9 against 3.9-4.5) for about a fifth less compile time (a 428-line GRU source 0.31
# against 0.38 s; first calls 0.72-0.84 against 0.85-1.04 s). Plain -O2 does not
# vectorize here: lstm_eight 11.7 against 5.8 ms.
FLAGS = ("-O2", "-ftree-vectorize", "-march=native", "-fno-math-errno", "-ffp-contract=fast",
         "-fPIC", "-shared")
# A whole graph's first build where its full one is not on disk (:func:`quick_first`): -O1
# takes about half of -O2 -ftree-vectorize's compile (tanh_ln's 373 lines 0.156 against
# 0.286 s of CPU, gru_gates' 364 0.130 against 0.230) for steps 1.3-3x slower until the
# full build replaces it; -fexpensive-optimizations (no measurable compile time) fuses
# multiply-adds as -O2 does (the styles bench's five recurrent models: the same bits from
# both builds, where plain -O1 moved them by up to 1e-4 relative).
QUICK_LEVEL = ("-O1", "-fexpensive-optimizations")
_FULL_LEVEL = ("-O2", "-ftree-vectorize")
# Under en.config.numerics = "bitwise": every product rounded before its add, as numpy
# rounds it (the lowering then writes only exact arithmetic: graph/lowering/bitwise.py).
BITWISE_FLAGS = tuple("-ffp-contract=off" if f.startswith("-ffp-contract") else f
                      for f in FLAGS)
# Seconds a compile may take before it is given up (the numpy lowering then stays).
TIMEOUT_SECONDS = 60
# The libraries this process loaded, by key: a kernel met again reads no disk.
_LOADED: dict[str, ctypes.CDLL] = {}
# The builds :func:`start` began and no :func:`load` has taken yet, by key.
_STARTED: dict[str, concurrent.futures.Future] = {}
_POOL: list[concurrent.futures.ThreadPoolExecutor] = []


class CompileError(EngineError, RuntimeError):
    """The C compiler refused a generated source (a bug in the C lowering), or there is
    no C compiler."""


@functools.lru_cache(maxsize=1)
def compiler():
    """``(command, version)`` of the C compiler found, or None."""
    candidates = []
    if os.environ.get("CC"):
        candidates.append(os.environ["CC"].split())
    configured = sysconfig.get_config_var("CC")
    if configured:
        candidates.append(configured.split()[:1])
    candidates += [["cc"], ["gcc"]]
    for command in candidates:
        if not command or shutil.which(command[0]) is None:
            continue
        try:
            done = subprocess.run(command + ["--version"], capture_output=True, text=True,
                                  timeout=TIMEOUT_SECONDS)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return tuple(command), done.stdout.splitlines()[0] if done.stdout else ""
    return None


def available():
    """Whether a C compiler runs here."""
    return compiler() is not None


@functools.lru_cache(maxsize=1)
def _cpu():
    """The CPU's model and feature flags (``-march=native`` builds for exactly these)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    keep = [line for line in lines if line.split(":")[0].strip() in ("model name", "flags")]
    return "\n".join(sorted(set(keep))) + platform.machine()


def flags(exact=None):
    """The compiler flags of the current ``en.config.numerics`` (part of each key), or of
    bitwise numerics where ``exact`` says (a build on another thread made for a source
    written under a setting since changed)."""
    return BITWISE_FLAGS if (bitwise() if exact is None else exact) else FLAGS


def quick_flags(exact=None):
    """:func:`flags` at ``QUICK_LEVEL`` (the first build of a whole graph)."""
    return QUICK_LEVEL + tuple(f for f in flags(exact) if f not in _FULL_LEVEL)


def quick_first(source, exact=None):
    """Whether a whole graph's ``source`` is built first with :func:`quick_flags`: its full
    build is neither loaded, nor started, nor on disk, and its function's body has at
    least ``cost.c_quick_build_min_lines`` lines (a shorter one compiles in about the
    compiler's start at any level: a quick build would only add a second build)."""
    if not available():
        return False
    key = key_of(source, _build_settings(exact=exact))
    if key in _LOADED or key in _STARTED or c_cache.is_stored(key):
        return False
    return c_split.body_lines(source) >= cost.c_quick_build_min_lines


def units():
    """The most translation units a source is cut into now: ``cost.c_compile_units``,
    never more than the cores this process may use that the last minute's load leaves
    idle (one unit where none is: a cut build takes a tenth more of the compiler's time,
    which only idle cores repay)."""
    cores = usable_cores()
    return max(1, min(cost.c_compile_units, cores, int(idle_cores(fresh=True) + 0.5)))


def _build_settings(quick=False, exact=None):
    """``(flags, units, min_lines)``: how a library is built now, quickly or fully (read
    once per build, so a build on a thread uses the flags its key was made from)."""
    return quick_flags(exact) if quick else flags(exact), units(), cost.c_split_min_lines


def key_of(source, settings=None):
    """The hash naming a source's library: the source, the flags, the compiler, the CPU.
    (Not the units it was cut into: a cut build computes what one unit computes.)"""
    found = compiler()
    build_flags = (settings or _build_settings())[0]
    h = hashlib.sha256()
    for part in (source, " ".join(build_flags), repr(found), _cpu()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def is_cached(source, exact=None):
    """True when this source's library is on disk or loaded in this process (built for
    bitwise numerics where ``exact`` says: see :func:`flags`)."""
    if not available():
        return False
    key = key_of(source, _build_settings(exact=exact))
    return key in _LOADED or c_cache.is_stored(key)


def load(source, quick=False, exact=None):
    """The ``ctypes.CDLL`` of ``source`` compiled (or loaded from disk); ``quick``: built
    with :func:`quick_flags` (a library of its own key); ``exact``: see :func:`flags`.
    Raises :class:`CompileError` where the compiler refuses it or there is none.
    """
    found = compiler()
    if found is None:
        raise CompileError("no C compiler found (set CC, or install gcc)")
    settings = _build_settings(quick, exact)
    key = key_of(source, settings)
    lib = _LOADED.get(key)
    if lib is not None:
        return lib
    started = _STARTED.pop(key, None)
    if started is not None:     # built on a thread: its library, or what it raised
        return started.result()
    return _load(key, source, found[0], settings)


def _load(key, source, command, settings):
    lib = _LOADED[key] = c_cache.load(key, source,
                                      functools.partial(_compile, command, settings))
    return lib


def start(sources, quick=False):
    """Starts building the libraries of ``sources`` not yet loaded, all at once on threads
    (each compiler a process of its own); :func:`load` of one of them then waits for its
    build and returns its library, or raises what the build raised. Nothing where there
    is no compiler. ``quick``: each source :func:`quick_first` picks is built as
    ``load(source, quick=True)`` builds it.

    Example:
        >>> start(["int started(void) { return 1; }\\n"])
        >>> load("int started(void) { return 1; }\\n").started() if available() else 1
        1
    """
    found = compiler()
    if found is None:
        return
    if not _POOL:
        _POOL.append(concurrent.futures.ThreadPoolExecutor(
            max_workers=cost.c_compile_units, thread_name_prefix="engine-c-build"))
    for source in sources:
        settings = _build_settings(quick and quick_first(source))
        key = key_of(source, settings)
        if key not in _LOADED and key not in _STARTED:
            _STARTED[key] = _POOL[0].submit(_load, key, source, found[0], settings)


def _compile(command, settings, c_name, so_name, where):
    """Compiles ``where/c_name`` to ``where/so_name`` as ``settings`` say
    (:func:`_build_settings`), named relative to ``where`` so that every process building
    one source writes the same bytes: as one unit, or cut into several (``c_split``)
    compiled at once, then linked."""
    build_flags, n_units, min_lines = settings
    # (The compiler found by its path: a relative one would not run from ``where``.)
    command = [shutil.which(command[0]) or command[0], *command[1:]]
    cut = c_split.split((where / c_name).read_text(), n_units, min_lines)
    if cut is None:
        _run([command + list(build_flags) + [c_name, "-o", so_name, "-lm"]], where)
        return
    objects = []
    for j, text in enumerate(cut.units):
        (where / f"part{j}.c").write_text(text)
        objects.append(f"part{j}.o")
    to_object = [f for f in build_flags if f != "-shared"] + ["-c"]
    _run([command + to_object + [f"part{j}.c", "-o", o] for j, o in enumerate(objects)],
         where)
    _run([command + list(build_flags) + [*objects, "-o", so_name, "-lm"]], where)


def _run(commands, where):
    """Runs the compiler ``commands`` at once in ``where``; raises :class:`CompileError`
    where one fails or they take over ``TIMEOUT_SECONDS`` (the others are stopped)."""
    running = []
    try:
        for c in commands:
            running.append(subprocess.Popen(c, cwd=where, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True))
        for proc in running:
            _, err = proc.communicate(timeout=TIMEOUT_SECONDS)
            if proc.returncode != 0:
                raise CompileError(f"the C compiler refused a generated kernel:\n{err}")
    except subprocess.TimeoutExpired:
        raise CompileError(f"the C compiler took over {TIMEOUT_SECONDS} s") from None
    except OSError as err:
        raise CompileError(f"the C compiler did not start ({err})") from None
    finally:
        for proc in running:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
