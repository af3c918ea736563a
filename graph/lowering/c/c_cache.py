"""The C lowering's library cache: a library is checked against its key before it is loaded.

Each library lives in the cache folder (``cache_folder("c")``) as ``k<key>.so``,
beside ``k<key>.sum``, which holds the key and the SHA-256 of the library's bytes.
The key hashes the source, the flags, the compiler and the CPU
(``c_compiler.key_of``), and the library also carries it, as the exported string
:data:`SYMBOL`. A library is loaded only when

1. the folder is one no other user can write (``cache_trust.distrust``),
2. the library is a regular file of this user whose bytes hash to what its
   ``.sum`` records for this key (a zero-length or truncated file, or another
   kernel's library stored under this key, fails here and is never opened), and
3. once opened, its :data:`SYMBOL` is this key (checked before any kernel in it
   is called: a library without the symbol, or another's, is set aside).

Anything else is rebuilt and stored again. A library is built in a private
folder made inside the cache folder (``.build-*``), loaded from there, then
renamed into place and its ``.sum`` written, each atomically; the folder is
removed whatever happens. The source is compiled under the same name in every
process, so two processes building one kernel write the same bytes and either's
``.sum`` fits either's library. Where the cache folder cannot be used, the
library is built in a private temporary folder, loaded, and that folder removed
at once (a loaded library needs no file): nothing is left behind.

Example:
    >>> stamped("int f(void) { return 1; }\\n", "ab12").splitlines()[-1]
    'const char engine_kernel_key[] = "ab12";'
"""
import ctypes
import hashlib
import logging
import os
import pathlib
import struct
import sys

from engine.files import open_regular, write_atomically

from .. import cache_trust
from ..cache_folder import cache_folder

log = logging.getLogger("engine.graph")

SYMBOL = "engine_kernel_key"


class ForeignLibrary(OSError):
    """An opened library is not the one its key names (one from the cache is rebuilt)."""


def stamped(source, key):
    """``source`` with ``key`` added as the exported string :data:`SYMBOL`."""
    return f'{source}\nconst char {SYMBOL}[] = "{key}";\n'


def library_path(folder, key):
    return pathlib.Path(folder) / f"k{key}.so"


def sum_path(folder, key):
    return pathlib.Path(folder) / f"k{key}.sum"


def record(key, data):
    """What ``k<key>.sum`` holds for a library of bytes ``data``."""
    return f"{key} {hashlib.sha256(data).hexdigest()}\n".encode()


def is_stored(key):
    """Whether a library and its record for ``key`` are in the cache folder (not yet
    checked: :func:`load` checks them)."""
    folder = cache_folder("c")
    try:
        return library_path(folder, key).exists() and sum_path(folder, key).exists()
    except OSError:
        return False


def load(key, source, build):
    """The ``ctypes.CDLL`` for ``key``: the cached library where it passes every check
    (see the module docstring), else ``stamped(source, key)`` built by
    ``build(c_name, so_name, cwd)`` (which raises where the compiler refuses it)."""
    folder = cache_trust.open_folder(cache_folder("c"))
    if folder is not None:
        lib = _from_disk(folder, key)
        if lib is not None:
            return lib
        try:
            return _build(key, source, build, folder)
        except OSError as err:      # the folder refused a write: build privately
            log.debug("C lowering: library %s not stored in %s (%s); built for this "
                      "process only", key, folder, err)
    return _build(key, source, build, None)


def _from_disk(folder, key):
    """The checked library for ``key`` in ``folder``, or None (missing, or set aside)."""
    path = library_path(folder, key)
    try:
        with open_regular(path) as f:
            owner = os.fstat(f.fileno()).st_uid
            data = f.read()
        with open_regular(sum_path(folder, key)) as f:
            recorded = f.read(256)
    except FileNotFoundError:
        return None
    except OSError as err:
        log.debug("C lowering: library %s unreadable (%s); rebuilt", path, err)
        return None
    if hasattr(os, "geteuid") and owner != os.geteuid():
        log.debug("C lowering: library %s belongs to user %d; rebuilt", path, owner)
        return None
    if recorded != record(key, data):
        log.debug("C lowering: library %s (%d bytes) does not match its record for this "
                  "key (damaged, or another kernel's); rebuilt", path, len(data))
        return None
    why = elf_damage(data)
    if why is not None:     # a record written for a damaged file: never opened
        log.debug("C lowering: library %s is damaged (%s); rebuilt", path, why)
        return None
    try:
        return _open(path, key)
    except OSError as err:      # ForeignLibrary among them
        log.debug("C lowering: library %s set aside (%s); rebuilt", path, err)
        return None


def elf_damage(data):
    """Why ``data`` is not a whole ELF file, or None (also None for other formats off
    Linux). The loader maps a library's segments from the file: one cut short would fault
    (SIGBUS) when touched, killing the process, so this is checked before it is opened.

    Example:
        >>> elf_damage(b"")
        'not an ELF file'
    """
    if data[:4] != b"\x7fELF":
        return "not an ELF file" if sys.platform.startswith("linux") else None
    if len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
        return "a cut or unknown ELF header"
    end = "<" if data[5] == 1 else ">"
    if data[4] == 2:     # 64-bit: program and section header tables, a segment's extent
        phoff, shoff = struct.unpack_from(end + "QQ", data, 0x20)
        phsize, phnum, shsize, shnum = struct.unpack_from(end + "HHHH", data, 0x36)
        segment = end + "I4xQ8x8xQ"     # p_type, p_offset, p_filesz
    else:
        phoff, shoff = struct.unpack_from(end + "II", data, 0x1C)
        phsize, phnum, shsize, shnum = struct.unpack_from(end + "HHHH", data, 0x2A)
        segment = end + "II8xI"
    if phoff + phsize * phnum > len(data) or shoff + shsize * shnum > len(data):
        return "its header tables run past the end of the file"
    if phnum and phsize < struct.calcsize(segment):
        return "a cut program header"
    for k in range(phnum):
        kind, offset, size = struct.unpack_from(segment, data, phoff + k * phsize)
        if kind == 1 and offset + size > len(data):     # PT_LOAD
            return f"segment {k} runs past the end of the file"
    return None


def _open(path, key):
    """``path`` opened, its :data:`SYMBOL` checked to be ``key`` before anything in it is
    called; raises :class:`ForeignLibrary` (or ``OSError`` where it does not open)."""
    lib = ctypes.CDLL(str(path))
    try:
        # The key's characters and a NUL (a shorter string stops at its NUL).
        found = (ctypes.c_char * (len(key) + 1)).in_dll(lib, SYMBOL).value
    except ValueError:
        raise ForeignLibrary(f"it has no {SYMBOL}") from None
    if found != key.encode():
        raise ForeignLibrary(f"its {SYMBOL} names another kernel")
    return lib


def _build(key, source, build, folder):
    """Builds, opens and (with ``folder``) stores the library for ``key`` (see the module
    docstring); the private build folder is removed whatever happens."""
    parent, prefix = (folder, ".build-") if folder is not None else (None, "engine-c-")
    with cache_trust.private_folder(parent, prefix) as where:
        c_name, so_name = f"k{key}.c", f"k{key}.so"
        (where / c_name).write_text(stamped(source, key))
        build(c_name, so_name, where)
        built = where / so_name
        # Loaded from its own folder's unique path: a library set aside earlier in this
        # process under the cache's name is never handed back by the loader.
        lib = _open(built, key)
        if folder is not None:
            data = built.read_bytes()
            os.replace(built, library_path(folder, key))
            write_atomically(str(sum_path(folder, key)), record(key, data))
    return lib
