"""All-or-nothing variable writes: a compiled graph's call, an optimizer step.

Inside :func:`all_or_nothing` every variable write of this thread is logged
before it happens: the array the variable held (a pointer, not a copy) or,
for a ``scatter_update`` written in place, the rows it overwrote. If the
block raises, the log is undone in reverse order, so the variables hold what
they held before the block; if it succeeds the log is dropped and the writes
stand. Writes take effect at once, so reads later in the block (in the same
graph, a nested body, a ``py_function``) see them.

:func:`atomic_call` also holds the per-variable locks of the variables a
graph writes for the whole call (taken in one global order, so two graphs
never deadlock): another thread's read-modify-write of those variables waits
until the call has finished or been undone, never lands in the middle.
Reads from other threads take no lock: they may see a call's first write
before its second. (So a ``py_function`` inside such a call must not wait
for another thread that writes one of the call's variables: that thread
waits for the call.)

Example:
    >>> import engine as en
    >>> from engine.transaction import all_or_nothing
    >>> a, b = en.Variable(1.0), en.Variable(2.0)
    >>> try:
    ...     with all_or_nothing():
    ...         _ = a.assign(10.0)
    ...         raise RuntimeError("stop")
    ... except RuntimeError:
    ...     pass
    >>> float(a)
    1.0
"""
import functools
import sys
from threading import get_ident


# Thread ident -> the undo log (a list) of the transaction open in that thread.
# Empty when no thread has one open: a write outside any then costs one test.
LOGS: dict[int, list] = {}


def log_pointer(var, log):
    """Called by ``Variable._set`` before it replaces the array."""
    log.append((var, var._value))


def log_rows(var, indices, log):
    """Called by ``Variable._scatter`` before it overwrites rows in place."""
    log.append((var, indices, var._value[indices]))   # fancy indexing: a copy


def write_rows(array, indices, rows):
    """``array[indices] = rows`` into a variable's array, which stays read-only
    outside this write (reads handed out share it without a copy)."""
    array.flags.writeable = True
    try:
        array[indices] = rows
    finally:
        array.flags.writeable = False


def _undo(log, mark):
    """Undo the entries after ``mark``, newest first."""
    while len(log) > mark:
        entry = log.pop()
        var = entry[0]
        if len(entry) == 2:
            var._value = entry[1]
            continue
        _, indices, rows = entry
        value = var._value
        # Rows were written in place because nothing else held the array; if a
        # read made since holds it now, restore into a copy so that read keeps
        # what it saw.
        if sys.getrefcount(value) > 3:
            value = value.copy()
        write_rows(value, indices, rows)
        var._value = value


class all_or_nothing:
    """A block whose variable writes (in this thread) are undone if it raises.

    Nests: an inner block that raises undoes only its own writes; an inner
    block that succeeds leaves its writes to the outer one's fate. (A class,
    not a generator: an optimizer step enters one every step.)
    """

    __slots__ = ("_log", "_mark", "_outer")
    _log: list | None      # this thread's undo log while the block runs
    _mark: int             # the log's length when the block began
    _outer: bool           # whether an enclosing block owns the log

    def __enter__(self):
        ident = get_ident()
        log = LOGS.get(ident)
        self._outer = log is not None
        if log is None:
            LOGS[ident] = log = []
        self._log, self._mark = log, len(log)
        return self

    def __exit__(self, kind, err, tb):
        try:
            if kind is not None:
                _undo(self._log, self._mark)
        finally:
            if not self._outer:
                del LOGS[get_ident()]
            self._log = None
        return False


def atomic_call(fn, variables):
    """``fn`` made all-or-nothing for its writes, holding the locks of ``variables``.

    ``variables`` are those ``fn`` may write. Used for compiled graphs that
    assign variables; a graph that assigns none runs ``fn`` itself.
    """
    locks = tuple(v._lock for v in sorted(variables, key=lambda v: v._uid))
    logs = LOGS

    def call(*args):
        for lock in locks:
            lock.acquire()
        try:
            ident = get_ident()
            log = logs.get(ident)
            if log is None:
                logs[ident] = log = []
                try:
                    return fn(*args)
                except BaseException:
                    _undo(log, 0)
                    raise
                finally:
                    del logs[ident]
            mark = len(log)
            try:
                return fn(*args)
            except BaseException:
                _undo(log, mark)
                raise
        finally:
            for lock in reversed(locks):
                lock.release()

    functools.update_wrapper(call, fn, assigned=(), updated=())   # call.__wrapped__ = fn
    return call
