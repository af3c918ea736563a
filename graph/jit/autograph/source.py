"""Loading a function's source, converting it once, and rebuilding it as a function.

The source comes from the function's file (``linecache``, which also holds
notebook cells), parsed whole and cached per file, so the function's node
keeps its real line numbers: the converted code is compiled under the user's
file name and lines, and tracebacks, warnings and graph nodes point there.

The converted function is rebuilt from the compiled code with the original
function's globals, defaults and closure cells (so reads and writes of
globals and enclosing variables behave as before); ``ag__`` (the operators)
reaches it as one more closure cell.

Example:
    >>> from engine.graph.jit.autograph.source import converted_source
    >>> def f(x):
    ...     return x if x > 0 else -x
    >>> print(converted_source(f))   # doctest: +SKIP
"""
import ast
import copy
import inspect
import itertools
import linecache
import os
import re
import sys
import sysconfig
import threading
import types
import weakref
from typing import Any

from engine.errors import is_engine_file

from . import operators
from .transformer import Unconvertible, convert_function

# filename -> (its lines, its definitions: see _module_definitions)
_FILE_TREES: dict[str, tuple[list[str], dict[tuple[str, int], list[Any]]]] = {}
_BY_CODE: dict[types.CodeType, Any] = {}   # original code object -> (converted code, source text)
_BY_FUNCTION: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()   # original function -> converted function
_CONVERTED_CODE: set[int] = set()   # ids of code objects made here (never converted again)
_USER_CODE: dict[types.CodeType, bool] = {}   # code object -> bool
_lock = threading.RLock()

_LIBRARY_DIRS = tuple(sorted({os.path.abspath(p) + os.sep for p in (
    sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    if p} | {os.path.abspath(os.path.dirname(os.__file__)) + os.sep}))


def is_user_code(code):
    """True for code the user wrote: not the engine, the standard library or installed
    packages, and from a file whose source can be read."""
    known = _USER_CODE.get(code)
    if known is None:
        filename = code.co_filename
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        known = not (is_engine_file(path) or path.startswith(_LIBRARY_DIRS)
                     or "site-packages" in path or "dist-packages" in path
                     or id(code) in _CONVERTED_CODE)
        _USER_CODE[code] = known
    return known


def _module_definitions(filename, module_globals):
    """The FunctionDef and Lambda nodes of the file's parsed source by ``(name, first
    line)`` as a code object names them (``<lambda>`` for a lambda; a function's first
    decorator's line where it has one): the tree is walked once per file, not once per
    converted function (3-5 ms a function in a 200-line module)."""
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        raise Unconvertible("its source is not available (typed at a prompt or made by exec?)")
    cached = _FILE_TREES.get(filename)
    if cached is not None and (cached[0] is lines or cached[0] == lines):
        return cached[1]
    definitions: dict[tuple[str, int], list[Any]] = {}
    for node in ast.walk(ast.parse("".join(lines), filename)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            definitions.setdefault((node.name, first), []).append(node)
        elif isinstance(node, ast.Lambda):
            definitions.setdefault(("<lambda>", node.lineno), []).append(node)
    _FILE_TREES[filename] = (lines, definitions)
    return definitions


def _find_node(fn):
    """The FunctionDef or Lambda node of ``fn`` in its file."""
    code = fn.__code__
    definitions = _module_definitions(code.co_filename, fn.__globals__)
    found = list(definitions.get((code.co_name, code.co_firstlineno), ()))
    if len(found) > 1 and code.co_name == "<lambda>":
        found = _pick_lambda(found, code)
    if len(found) != 1:
        raise Unconvertible("its definition could not be found in its source file"
                            if not found else "several lambdas on its line look alike")
    return found[0]


def _pick_lambda(nodes, code):
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    nodes = [n for n in nodes if tuple(a.arg for a in n.args.posonlyargs + n.args.args +
                                       n.args.kwonlyargs) == names]
    # The columns its instructions come from (Python 3.11's co_positions; on 3.10 the
    # lambdas of one line that take the same arguments cannot be told apart).
    if len(nodes) > 1 and sys.version_info >= (3, 11):
        cols = {c for _, _, c, _ in code.co_positions() if c is not None}
        nodes = [n for n in nodes if any(n.body.col_offset <= c < (n.body.end_col_offset or 0)
                                         for c in cols)]
    return nodes


def convert_code(fn):
    """``(converted code object, converted source)`` for ``fn``'s code, made once."""
    code = fn.__code__
    with _lock:
        done = _BY_CODE.get(code)
        if done is not None:
            return done
        node = copy.deepcopy(_find_node(fn))
        converted = convert_function(node, itertools.count())
        freevars = list(code.co_freevars)
        if isinstance(converted, ast.Lambda):
            text = ast.unparse(converted)
            inner = ast.Return(value=converted)
            ast.copy_location(inner, converted)
            body: list[ast.stmt] = [inner]
        else:
            text = ast.unparse(converted)
            # Named apart inside the factory, so the function's own name still means the
            # global (or enclosing) it meant, e.g. for recursion.
            converted.name = "_ag_fn"
            body = [converted, ast.copy_location(ast.Return(ast.Name("_ag_fn", ast.Load())),
                                                 converted)]
        factory = ast.FunctionDef(
            name="_ag_factory",
            args=ast.arguments(posonlyargs=[], args=[ast.arg("ag__")] +
                               [ast.arg(v) for v in freevars if v != "ag__"],
                               vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                               defaults=[]),
            body=body, decorator_list=[], returns=None)
        ast.copy_location(factory, converted)
        _mark_thunks(factory)
        module = ast.Module(body=[factory], type_ignores=[])
        ast.fix_missing_locations(module)
        factory_code = compile(module, code.co_filename, "exec", dont_inherit=True)
        inner_name = "<lambda>" if isinstance(converted, ast.Lambda) else "_ag_fn"
        inner = _find_code(factory_code, inner_name)
        # co_qualname is Python 3.11's; on 3.10 the names are the function's and the one
        # the factory gives the inner function.
        new_code = _named_like_the_user(
            inner, code.co_name, getattr(code, "co_qualname", fn.__qualname__),
            getattr(inner, "co_qualname", f"_ag_factory.<locals>.{inner_name}"))
        _remember(new_code)
        done = (new_code, text)
        _BY_CODE[code] = done
        return done


_THUNK_ARG = "_ag_thunk"
_HELPER_SCOPE = re.compile(r"_ag_\w+\.<locals>\.")


def _mark_thunks(tree):
    """Give the lambdas the conversion made (``a if c else b``'s operands) a keyword-only
    ``_ag_thunk=None``, so their code objects can be told from the user's lambdas."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and getattr(node, "_ag_thunk", False):
            node.args.kwonlyargs = [ast.arg(_THUNK_ARG)]
            node.args.kw_defaults = [ast.Constant(None)]


def _generated(code):
    """True for the code of a function the conversion made: a branch, loop body or test,
    a state getter or setter, a thunk."""
    if code.co_name.startswith("_ag_"):
        return True
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return code.co_name == "<lambda>" and _THUNK_ARG in params


def _named_like_the_user(code, name, qualname, compiled_qualname):
    """``code`` (compiled inside the factory) under the user's names, so frames, tracebacks
    and ``inspect`` show the user's function: the helpers the conversion made take the name
    of the function they came from, and nested functions' qualified names lose the factory
    and the helpers (``f.<locals>.inner``, not ``_ag_factory.<locals>._ag_fn.<locals>.
    _ag_if_true_0.<locals>.inner``)."""
    consts = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if _generated(const):
                const = _named_like_the_user(const, name, qualname, compiled_qualname)
            elif sys.version_info >= (3, 11):
                own = const.co_qualname.replace(compiled_qualname, qualname, 1)
                const = _named_like_the_user(const, const.co_name, _HELPER_SCOPE.sub("", own),
                                             compiled_qualname)
            else:
                const = _named_like_the_user(const, const.co_name, qualname, compiled_qualname)
        elif sys.version_info < (3, 11) and isinstance(const, str) and \
                const.startswith(compiled_qualname + "."):
            # Python 3.10 (code objects have no co_qualname): the qualified name that
            # MAKE_FUNCTION gives a nested function is a string constant of its maker.
            const = _qualified_name_constant(const, qualname, compiled_qualname)
        consts.append(const)
    if sys.version_info >= (3, 11):
        return code.replace(co_name=name, co_qualname=qualname, co_consts=tuple(consts))
    return code.replace(co_name=name, co_consts=tuple(consts))


def _qualified_name_constant(text, qualname, compiled_qualname):
    """A nested function's qualified name as compiled (``text``) as the user's code would
    have it: a helper the conversion made takes its function's name ``qualname``.

    >>> _qualified_name_constant("_ag_factory.<locals>._ag_fn.<locals>._ag_if_true_0."
    ...                          "<locals>.inner", "f", "_ag_factory.<locals>._ag_fn")
    'f.<locals>.inner'
    >>> _qualified_name_constant("_ag_factory.<locals>._ag_fn.<locals>._ag_if_true_0",
    ...                          "f", "_ag_factory.<locals>._ag_fn")
    'f'
    """
    own = _HELPER_SCOPE.sub("", text.replace(compiled_qualname, qualname, 1))
    return qualname if own.rpartition(".")[2].startswith("_ag_") else own


def _find_code(module_code, name):
    for const in module_code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == "_ag_factory":
            for inner in const.co_consts:
                if isinstance(inner, types.CodeType) and inner.co_name == name:
                    return inner
    raise Unconvertible("the converted code could not be found")


def _remember(code):
    """Mark ``code`` and the functions nested in it as converted already (a class body
    is not converted with its function, so its methods stay convertible)."""
    _CONVERTED_CODE.add(id(code))
    _USER_CODE[code] = False
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_flags & inspect.CO_OPTIMIZED:
            _remember(const)


def converted_function(fn):
    """``fn`` converted (cached per function object); raises Unconvertible."""
    try:
        return _BY_FUNCTION[fn]
    except KeyError:
        pass
    except TypeError:   # not weak-referenceable
        pass
    code, _ = convert_code(fn)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = []
    for name in code.co_freevars:
        if name == "ag__":
            closure.append(types.CellType(operators))
        elif name in cells:
            closure.append(cells[name])
        else:
            raise Unconvertible(f"the converted code needs the free variable {name!r}")
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(closure))
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    new.__dict__.update(fn.__dict__)
    vars(new)["__wrapped__"] = fn     # as functools.wraps does (not a declared attribute)
    try:
        _BY_FUNCTION[fn] = new
    except TypeError:
        pass
    return new


def converted_source(fn):
    """The converted source of ``fn`` (for a reader)."""
    return convert_code(fn)[1]
