"""Writing a save's two files so that a save is all or nothing, even under concurrency.

A save is a JSON manifest at a fixed name plus an ``.npz`` whose name carries a
digest of its bytes (``model.json`` + ``model.<16 hex>.npz``; see
:mod:`graph.export.native`). :func:`commit` writes the new ``.npz`` under its own
name first (nothing the current JSON refers to changes), then replaces the
JSON in one ``os.replace``: that rename is the commit point. Only afterwards
is the ``.npz`` the old JSON named removed. So at every moment the path holds
a complete save, the old one or the new one, whatever fails in between (a
full disk, a directory in the way, an exception, a killed process), and a
failed save leaves no files behind.

Files are written under unique hidden names in the target folder
(``.<name>.<12 hex>.tmp``, so the final rename never crosses file systems),
flushed to disk, then renamed. Saves to one folder take an exclusive
``flock`` on the folder for the whole commit, so concurrent saves (threads or
processes) serialize rather than remove each other's files; readers take no
lock (``en.load`` reads the JSON again when the ``.npz`` it named has just been
replaced). Under the lock, leftovers of a save that was killed (its temporary
files, an ``.npz`` no JSON names) are removed.

Example:
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> commit(d, "m.json", b"{}", "m.0123456789abcdef.npz", b"PK", "m")
    >>> sorted(os.listdir(d))
    ['m.0123456789abcdef.npz', 'm.json']
"""
import contextlib
import errno
import json
import os
import re
import threading

from engine.files import open_regular, remove_if_present as _remove
from engine.files import write_atomically as write_file   # the name tests patch

try:
    import fcntl
except ImportError:          # not POSIX: saves serialize within this process only
    fcntl = None    # type: ignore[assignment]  # (a module where it exists)

_PROCESS_LOCK = threading.Lock()


def arrays_name(stem, digest):
    """The ``.npz`` name for a save whose JSON is ``<stem>.json`` (or a folder's
    ``graph.json``, stem ``arrays``) and whose arrays hash to ``digest``."""
    return f"{stem}.{digest[:16]}.npz"


def commit(folder, json_name, json_data, npz_name, npz_data, stem):
    """Make ``folder/json_name`` (``json_data``) and ``folder/npz_name`` the save there,
    atomically; remove the arrays of the save it replaces."""
    with _locked(folder):
        json_path = os.path.join(folder, json_name)
        npz_path = os.path.join(folder, npz_name)
        old = _arrays_named_by(json_path)
        _remove_leftovers(folder, json_name, stem, keep={old, npz_name})
        existed = os.path.lexists(npz_path)
        write_file(npz_path, npz_data)
        try:
            write_file(json_path, json_data)         # the commit point
        except BaseException:
            if not existed:
                _remove(npz_path)
            raise
        if old is not None and old != npz_name and _owned(old, stem):
            _remove(os.path.join(folder, old))


@contextlib.contextmanager
def _locked(folder):
    if fcntl is None:
        with _PROCESS_LOCK:
            yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)     # one open file description per save: threads too
        except OSError as err:                 # a file system without flock (some NFS)
            if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                raise
            with _PROCESS_LOCK:
                yield
            return
        yield
    finally:
        os.close(fd)                           # releases the lock


def _arrays_named_by(json_path):
    """The ``.npz`` name the current JSON at ``json_path`` uses (None if there is none
    or it is unreadable); a version-1 file uses the fixed name."""
    try:
        with open_regular(json_path) as f:
            doc = json.loads(f.read(64 << 20))
    except (OSError, ValueError, RecursionError):
        return None
    if type(doc) is not dict:
        return None
    name = doc.get("arrays_file")
    if doc.get("version") == 1 and name is None:
        base = os.path.basename(json_path)
        return "arrays.npz" if base == "graph.json" else base[:-len(".json")] + ".npz"
    return name if type(name) is str and os.path.basename(name) == name else None


def _owned(name, stem):
    """A name a save with this stem writes (its arrays, now or in version 1)."""
    return name == f"{stem}.npz" or re.fullmatch(re.escape(stem) + r"\.[0-9a-f]{16}\.npz",
                                                 name) is not None


def _remove_leftovers(folder, json_name, stem, keep):
    """Temporary files of this save location, and its ``.npz`` files no JSON names (a
    save killed midway): under the lock no other save is writing them."""
    temp = re.compile(r"\.(" + re.escape(json_name) + "|" + re.escape(stem) +
                      r"\.[0-9a-f]{16}\.npz)\.[0-9a-f]{12}\.tmp")
    arrays = re.compile(re.escape(stem) + r"\.[0-9a-f]{16}\.npz")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name not in keep and (temp.fullmatch(name) or arrays.fullmatch(name)):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, name))
