"""numpy's floating-point warnings from inside the engine, shown at the user's line.

numpy warns from C ("overflow encountered in exp") at the innermost Python
frame, which for an op is the engine's own dispatch line (``eager/mode.py``)
or a graph's generated kernel: the warning would name a line inside the
engine, and, shown once per location, the user's second overflowing line
would be silent. Checking every op's result (``np.errstate``) would cost
about a microsecond per op, so the warning is moved when it is *shown*
instead: this module wraps ``warnings._showwarnmsg`` (the stdlib's hook "to
write a warning"; ``catch_warnings`` and pytest's recorder keep it), and a
floating-point ``RuntimeWarning`` whose location is engine code is issued
again, with ``warnings.warn_explicit``, at the user's line: the innermost
frame outside the engine, or, inside a compiled graph, the line that traced
the op (graph mode's generated code maps its lines to those, ``TRACED_LINES``). Filters,
``-W`` options and the once-per-location registry then apply to the user's
line. Nothing runs unless numpy warns; an "error" filter still raises at the
kernel, as before.

Example (in a file ``model.py``)::

    import engine as en
    y = en.exp(en.tensor(1000.0))
    # model.py:2: RuntimeWarning: overflow encountered in exp
    #   y = en.exp(en.tensor(1000.0))
"""
import sys
import warnings

from .errors import is_engine_file

# numpy's floating-point error messages (numpy/_core/_ufunc_config.py, umath's _error_handler)
FP_MESSAGES = ("overflow encountered", "underflow encountered", "divide by zero encountered",
               "invalid value encountered")

_internal_prefixes = ()    # filenames of generated engine code: "<fused kernel ...>", ...

# Generated code keeps, in its globals under this name, ``{line: (filename, lineno, ...)}``:
# the user's line that traced the op each of its lines runs.
TRACED_LINES = "__engine_traced_lines__"


def add_internal_filenames(*prefixes):
    """Treat code whose filename starts with one of ``prefixes`` as the engine's own."""
    global _internal_prefixes
    _internal_prefixes = tuple(sorted(set(_internal_prefixes) | set(prefixes)))


def is_internal(filename):
    """True for the engine's files and the code it generates."""
    return is_engine_file(filename) or filename.startswith(_internal_prefixes)


_WARNINGS_FILE = warnings.__file__


def user_location(frame):
    """``(filename, lineno)`` of the user's line for a warning raised at ``frame``."""
    while frame is not None:
        traced = frame.f_globals.get(TRACED_LINES)
        where = traced.get(frame.f_lineno) if traced is not None else None
        if where is not None:
            return where[0], where[1]
        filename = frame.f_code.co_filename
        if not is_internal(filename) and filename != _WARNINGS_FILE:
            return filename, frame.f_lineno
        frame = frame.f_back
    return None


def _module_globals(filename):
    """The globals of the loaded module defined in ``filename`` (a warning's registry and
    module name live there), or None."""
    main = sys.modules.get("__main__")
    for module in [main, *list(sys.modules.values())]:
        if getattr(module, "__file__", None) == filename:
            return vars(module)
    return None


def _forget(msg, frame):
    """Drop the registry entry the warning just made at the engine's line (so the next
    user line's overflow is shown too: the entry that counts is the user's)."""
    while frame is not None:
        if frame.f_code.co_filename == msg.filename and frame.f_lineno == msg.lineno:
            registry = frame.f_globals.get("__warningregistry__")
            if registry:
                text = str(msg.message)
                registry.pop((text, msg.category, msg.lineno), None)
                registry.pop((text, msg.category, 0), None)
            return
        frame = frame.f_back


def _moved(msg, frame):
    """Issue ``msg`` (shown from ``frame``) again at the user's line; False when it is not
    one to move."""
    if not (issubclass(msg.category, RuntimeWarning) and is_internal(msg.filename)
            and str(msg.message).startswith(FP_MESSAGES)):
        return False
    where = user_location(frame)
    if where is None:
        return False
    _forget(msg, frame)
    filename, lineno = where
    module_globals = _module_globals(filename)
    if module_globals is None:    # the defining module is not loaded: a registry of its own
        registry, module = _REGISTRIES.setdefault(filename, {}), None
    else:
        registry = module_globals.setdefault("__warningregistry__", {})
        module = module_globals.get("__name__")
    try:
        warnings.warn_explicit(msg.message, msg.category, filename, lineno, module=module,
                               registry=registry, module_globals=module_globals)
    except Warning:
        raise                     # an "error" filter at the user's line
    except Exception:             # a module whose loader cannot give its source (a script
        warnings.warn_explicit(msg.message, msg.category, filename, lineno,  # read from
                               module=module, registry=registry)             # stdin)
    return True


_REGISTRIES: dict[object, dict] = {}


def install():
    """Wrap ``warnings._showwarnmsg`` (once; the facade calls this)."""
    # typeshed leaves out the private hook warnings.warn calls (it exists since Python 3.6)
    shown_by = warnings._showwarnmsg  # type: ignore[attr-defined]
    if getattr(shown_by, "engine_hook", False):
        return

    def showwarnmsg(msg):
        # The caller's frame: the kernel that warned (C code has no frame of its own).
        if not _moved(msg, sys._getframe(1)):
            shown_by(msg)

    # mypy does not model attributes set on a function; the mark survives a module reload
    showwarnmsg.engine_hook = True  # type: ignore[attr-defined]
    warnings._showwarnmsg = showwarnmsg  # type: ignore[attr-defined]   # as above: private
