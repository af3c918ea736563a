"""Files named by a caller who may not be friendly: regular files only; written whole.

``open(path)`` on a FIFO blocks until some writer opens the other end, which may be
never; a device such as ``/dev/zero`` never ends; a directory cannot be read. The
readers of saved graphs and of dataset files open through :func:`open_regular`,
which opens without blocking and then checks, on the open descriptor (so a file
swapped in after a check cannot slip through), that it is a regular file.

Example:
    >>> import os, tempfile
    >>> from engine.files import open_regular, NotARegularFile
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "a.bin"), "wb") as f:
    ...     _ = f.write(b"abc")
    >>> with open_regular(os.path.join(d, "a.bin")) as f:
    ...     f.read()
    b'abc'
    >>> try:
    ...     open_regular(d)
    ... except NotARegularFile as err:
    ...     print(err.kind)
    directory
"""
import contextlib
import errno
import os
import secrets
import stat

from .errors import EngineError

_KINDS = ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
          (stat.S_ISSOCK, "socket"))


class NotARegularFile(EngineError, OSError):
    """The path names a directory, FIFO, device or socket instead of a regular file."""

    def __init__(self, path, kind):
        super().__init__(errno.EINVAL, f"it is a {kind}, not a regular file", path)
        self.kind = kind

    def __str__(self):
        return f"{self.filename} is a {self.kind}, not a regular file"


def open_regular(path):
    """``path`` opened for reading (binary, buffered); :class:`NotARegularFile` (an
    ``OSError``) unless it is a regular file. Never blocks on a FIFO."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _KINDS if test(mode)), "special file")
            raise NotARegularFile(os.fspath(path), kind)
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)   # no effect on a regular file; plain reads after
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def write_atomically(path, data):
    """``data`` (bytes) at ``path``, whole or not at all: written to a temporary file of
    a unique name in the same folder, synced, then renamed over ``path`` (atomic on
    POSIX). On any failure (an interrupt too) the temporary file is removed and
    ``path`` keeps what it held. Concurrent writers each rename a complete file.

    Example:
        >>> import os, tempfile
        >>> from engine.files import write_atomically
        >>> path = os.path.join(tempfile.mkdtemp(), "w.bin")
        >>> write_atomically(path, b"new")
        >>> open(path, "rb").read(), os.listdir(os.path.dirname(path))
        (b'new', ['w.bin'])
    """
    folder, name = os.path.split(path)
    while True:
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        remove_if_present(tmp)
        raise


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def remove_if_present(path):
    """Remove ``path``; a file already gone is no error."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
