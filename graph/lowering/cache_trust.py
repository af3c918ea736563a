"""Whether a cache folder may hold machine code this process loads, and private folders.

A compiled lowering loads the machine code it finds in its cache folder
(``cache_folder.py``) into this process. Whoever can write that folder chooses
what runs, so it is used only when no other user can write it:

- the folder itself is owned by this process's user and neither group- nor
  world-writable (a sticky bit does not help here: another user could create a
  library under a name this process will look for before it does);
- every folder above it is owned by this user or by root, and is either not
  writable by others or sticky (as ``/tmp``), so no one else can move the
  cache folder aside and put another in its place.

Where the folder is refused, or cannot be made, :func:`open_folder` returns None
and says why at debug level; the lowering then builds in a :func:`private_folder`
removed as soon as the code is loaded (C), or compiles in memory (numba).

Example:
    >>> import tempfile
    >>> folder = open_folder(pathlib.Path(tempfile.mkdtemp()) / "c")
    >>> folder.name, distrust(folder) is None
    ('c', True)
"""
import contextlib
import logging
import os
import pathlib
import shutil
import stat
import tempfile

log = logging.getLogger("engine.graph")

# Write bits for the group and for others.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def distrust(folder):
    """Why machine code in ``folder`` must not be loaded (a user other than this one, or
    root, can write it or a folder above it), or None where it may be.

    Example:
        >>> import tempfile
        >>> shared = pathlib.Path(tempfile.mkdtemp())
        >>> shared.chmod(0o777)
        >>> distrust(shared).endswith("is writable by other users")
        True
    """
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is None:      # no POSIX owners (Windows): nothing to check against
        return None
    path = pathlib.Path(os.path.realpath(folder))
    try:
        info = path.stat()
    except OSError as err:
        return f"{path} cannot be read ({err.strerror})"
    if info.st_uid != uid:
        return f"{path} is owned by user {info.st_uid}, not by this user ({uid})"
    if info.st_mode & _OTHERS_WRITE:
        return f"{path} is writable by other users"
    for above in path.parents:
        try:
            info = above.stat()
        except OSError as err:
            return f"{above} cannot be read ({err.strerror})"
        if info.st_uid not in (uid, 0):
            return f"{above} (above {path}) is owned by user {info.st_uid}"
        if info.st_mode & _OTHERS_WRITE and not info.st_mode & stat.S_ISVTX:
            return f"{above} (above {path}) is writable by other users and not sticky"
    return None


def open_folder(folder):
    """``folder`` (a ``pathlib.Path``), made if missing (readable by this user only), when
    machine code may be kept and loaded there; None where it cannot be made or another
    user could write it (said at debug level: the caller then builds privately)."""
    folder = pathlib.Path(folder)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as err:
        log.debug("compiled lowering: the cache folder %s cannot be made (%s); building "
                  "for this process only", folder, err)
        return None
    why = distrust(folder)
    if why is not None:
        log.debug("compiled lowering: machine code in %s is not loaded: %s; building for "
                  "this process only", folder, why)
        return None
    return folder


@contextlib.contextmanager
def private_folder(parent=None, prefix=".build-"):
    """A fresh folder only this user can enter (in ``parent``, else the temporary folder),
    removed with everything in it on leaving the block, whatever happens inside.

    Example:
        >>> with private_folder(prefix="engine-c-") as where:
        ...     (where / "a.txt").write_text("x") and where.exists()
        True
        >>> where.exists()
        False
    """
    where = pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir=parent))   # mode 0700
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)
