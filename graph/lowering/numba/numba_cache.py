"""Compiling generated numba source, with the machine code kept on disk.

A region's source is written to ``<cache>/<key>.py``, where ``key`` hashes the
source (which holds every shape and dtype as literals), the maths it imports
(``numba_math.py``), the numba, numpy and Python versions and the fast-math flags
(``FASTMATH``: multiply-adds fused, nothing else). The module is
imported from that file and its function compiled with ``cache=True``, so
numba stores the machine code beside it (``__pycache__``) and a second process
loads it instead of compiling (tens of milliseconds instead of seconds).
``<key>.ok`` is written after a compile succeeds: the lowering policy reads it
to know that a region is cheap to load, and it records the SHA-256 of each of
numba's machine-code files for the region. Before numba reads them, a file whose
bytes changed since (cut short, or another region's copied over it) is removed,
and one numba cannot read (a cut pickle) has the region's files removed: either
way numba compiles again and stores the code anew, never running what it found.

The folder is ``$ENGINE_CACHE_DIR/numba`` if that is set, else
``$XDG_CACHE_HOME/engine/numba``, else ``~/.cache/engine/numba``. Where it
cannot be written, or another user could write it (``cache_trust.py``: the
module imported from it and the machine code numba loads beside it would run
in this process), the function is compiled in memory (every process compiles
again), said at debug level; nothing fails.

Example:
    >>> cache_dir().name
    'numba'
"""
import functools
import hashlib
import importlib
import importlib.util
import logging
import pathlib
import platform
import sys
from typing import Any

import numpy as np

from engine.errors import EngineError
from engine.files import write_atomically as write_file
from engine.numerics import bitwise
from .. import cache_trust
from ..cache_folder import cache_folder
from .numba_emitter import HELPERS_IMPORT

log = logging.getLogger("engine.graph")

_MATH = pathlib.Path(__file__).with_name("numba_math.py")
# LLVM may fuse a multiply and an add into one FMA (one rounding instead of two, so each
# such pair is as exact or more): the exp32/tanh32 polynomials and the gates of an RNN
# cell are chains of them. Measured on the 2-core Xeon: the compiled GRU loss and
# gradient 2.35-2.55 ms against 2.76-2.79 without, LSTM 3.22-3.54 against 3.69-3.73, the
# autoencoder's loss tail at batch 1000 0.79-0.85 ms against 1.00. No other fast-math
# flag is set: NaN and infinities in the inputs, and signed zeros, keep numpy's
# semantics. The product is not rounded before the add, so a product that overflows
# meeting the opposite infinity gives that infinity (numpy: inf - inf = nan), and a
# subnormal product is rounded once (tests/graph/lowering/numba/test_numba_lowering.py).
FASTMATH = frozenset({"contract"})


def fastmath():
    """numba's fast-math flags under the current ``en.config.numerics`` (part of each
    key): none under "bitwise", where every product is rounded before its add."""
    return set() if bitwise() else set(FASTMATH)


# The dispatchers this process holds, by (key, function name): a region met again (an
# unrolled loop's steps, a graph traced again) neither compiles nor reads the disk.
_LOADED: dict[tuple[str, str], Any] = {}     # numba Dispatchers (numba is optional)
_HEADER = "import math\n\nimport numpy as np\nimport numba\n" + HELPERS_IMPORT + "\n"


def cache_dir():
    """The folder compiled regions are kept in (see the module docstring)."""
    return cache_folder("numba")


def key_of(source):
    """The hash naming a region's files: its source, the maths and the versions (read
    from the installed metadata: asking whether a region is cached imports no numba)."""
    h = hashlib.sha256()
    for part in (source,) + _environment() + (",".join(sorted(fastmath())),):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def _environment():
    """What else keys every region, read once a process (the installed metadata takes
    about a millisecond a read, and an unrolled graph asks for hundreds of keys; its module
    is imported here, not with this one: 10 ms, with the email parser it reads metadata
    with, of every first en.function call, which never asks for a numba key when the C
    lowering takes its graphs)."""
    version = importlib.import_module("importlib.metadata").version("numba")
    return (_MATH.read_text(), version, np.__version__,
            platform.python_version(), platform.machine())


def is_cached(source):
    """True when this region's machine code is on disk (a compile succeeded before)."""
    folder = cache_dir()
    try:
        if not (folder / f"r{key_of(source)}.ok").exists():
            return False
    except OSError:
        return False
    return cache_trust.distrust(folder) is None    # else it is compiled in memory


def _module_from_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:    # (a .py file's path always has them)
        raise EngineError(f"cannot load the cached kernel module {path} (internal error)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # numba's cache finds the function's module by name
    spec.loader.exec_module(module)
    return module


def _in_memory(source, fn_name):
    import numba   # optional, imported when a region is compiled
    namespace: dict[str, Any] = {}
    exec(compile(_HEADER + source, f"<numba region {fn_name}>", "exec"), namespace)
    return numba.njit(namespace[fn_name], nogil=True, error_model="numpy",
                      fastmath=fastmath())


def load(source, fn_name, signature):
    """A numba dispatcher for ``fn_name`` in ``source``, compiled for ``signature``
    (numba types of the arguments; other layouts compile on first use). Returns
    ``(dispatcher, from_cache)``: ``from_cache`` is True when nothing was compiled (the
    machine code was on disk, or this process holds the dispatcher already)."""
    import numba   # optional, imported when a region is compiled
    key = key_of(source)
    loaded = _LOADED.get((key, fn_name))
    if loaded is not None:   # this process compiled or loaded it already
        if tuple(signature) not in loaded.overloads:   # numba's compile() checks in 1 ms
            loaded.compile(signature)
        return loaded, True
    # None where the folder cannot be made or another user could write it.
    folder = cache_trust.open_folder(cache_dir())
    module_name = f"_engine_region_{key}"
    fn = None
    on_disk = False
    try:
        if folder is not None:
            path = folder / f"r{key}.py"
            text = _HEADER + source
            if not path.exists() or path.read_text() != text:
                write_file(str(path), text.encode())
            module = sys.modules.get(module_name) or _module_from_file(path, module_name)
            fn = numba.njit(getattr(module, fn_name), cache=True, nogil=True,
                            error_model="numpy", fastmath=fastmath())
            on_disk = True
    except (OSError, ImportError):   # an unwritable cache: compile in memory
        fn = None
    if fn is None:
        fn = _in_memory(source, fn_name)
    else:
        _set_aside_changed(folder, key)
    try:
        fn.compile(signature)
    except numba.core.errors.NumbaError:
        raise                        # numba refuses the source: a typing limit
    except Exception as err:         # numba's own files unreadable (a cut pickle)
        if not on_disk:
            raise
        log.debug("numba lowering: the cached machine code of region %s is unreadable "
                  "(%s: %s); compiled again", key, type(err).__name__, err)
        _forget(folder, key)
        fn = numba.njit(fn.py_func, cache=True, nogil=True, error_model="numpy",
                        fastmath=fastmath())
        fn.compile(signature)
    from_cache = bool(getattr(fn, "stats", None) and fn.stats.cache_hits)
    _LOADED[(key, fn_name)] = fn
    if on_disk:
        try:
            write_file(str(folder / f"r{key}.ok"), _record(folder, key))
        except OSError:
            pass
    return fn, from_cache


def _numba_files(folder, key):
    """numba's machine-code files (``.nbc``) for region ``key``; its index (``.nbi``)
    maps signatures to them and is numba's to check (against the module's stamp)."""
    return sorted((folder / "__pycache__").glob(f"r{key}.*.nbc"))


def _record(folder, key):
    """What ``r<key>.ok`` holds: the key, then each of numba's machine-code files for the
    region with the SHA-256 of its bytes."""
    lines = [key] + [f"{p.name} {hashlib.sha256(p.read_bytes()).hexdigest()}"
                     for p in _numba_files(folder, key)]
    return ("\n".join(lines) + "\n").encode()


def _set_aside_changed(folder, key):
    """Removes each machine-code file of ``key`` whose bytes are not those recorded when
    it was written (cut short, or another region's copied over it) before numba reads
    it: numba then compiles that signature again. Files written since the record (a
    specialization for another layout) are numba's."""
    try:
        recorded = (folder / f"r{key}.ok").read_text().splitlines()[1:]
    except (OSError, UnicodeDecodeError):
        return
    for line in recorded:
        name, _, digest = line.partition(" ")
        path = folder / "__pycache__" / name
        try:
            if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                log.debug("numba lowering: %s changed since it was written; compiled again",
                          path)
                path.unlink()
        except OSError:
            continue


def _forget(folder, key):
    for path in sorted((folder / "__pycache__").glob(f"r{key}.*")) + [folder / f"r{key}.ok"]:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
