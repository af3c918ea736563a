"""The AST transformer: ``if``/``while``/``for``, conditional expressions, ``and``/``or``/``not``
and calls become calls of the run-time operators (``ag__.if_stmt`` and friends).

A statement becomes functions for its bodies plus a state getter and setter
(the assigned names, declared ``nonlocal`` so the bodies assign the
function's own locals), then one operator call that picks Python or graph
semantics when it runs:

    if x > 0:                      def _ag_if_true_0():
        y = x                          nonlocal y
    else:                              y = x
        y = -x             ──►     def _ag_if_false_0():
                                       nonlocal y
                                       y = -x
                                   def _ag_get_state_0():
                                       return (y,)
                                   def _ag_set_state_0(_ag_vars):
                                       nonlocal y
                                       y = _ag_vars[0]
                                   ag__.if_stmt(x > 0, _ag_if_true_0, _ag_if_false_0,
                                                _ag_get_state_0, _ag_set_state_0, ('y',))

Every generated node carries the line of the user's statement it came from,
so tracebacks and graph nodes point to the user's source.
"""
import ast
import itertools

from . import analysis
from .lowering import lower_loops, lower_returns

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _parse(src):
    return ast.parse(src).body


def _place(tree, ref):
    """Give every node of a generated ``tree`` the location of the user's node ``ref``."""
    # One line only: Python reports a method call at its attribute's last line, and a
    # statement's operator call must report the statement's first line.
    one_line = getattr(ref, "end_lineno", None) == ref.lineno
    end_col = ref.end_col_offset if one_line else ref.col_offset + 1
    location = {"lineno": ref.lineno, "end_lineno": ref.lineno, "col_offset": ref.col_offset,
                "end_col_offset": end_col}
    for node in ast.walk(tree):
        if "lineno" in node._attributes:    # the node kinds that carry a location
            vars(node).update(location)
    return tree


def _has_yield(fn):
    for stmt in fn.body:
        for node in analysis._walk_same_scope(stmt):
            if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
                return True
    return False


class Unconvertible(Exception):
    """The function uses something the conversion does not handle; trace it as written."""


def convert_function(fn, counter=None):
    """Convert a FunctionDef (in place) or a Lambda; returns the converted node."""
    counter = counter or itertools.count()
    if isinstance(fn, ast.Lambda):
        fn.body = _Expressions().visit(fn.body)
        return fn
    if isinstance(fn, ast.AsyncFunctionDef) or _has_yield(fn):
        raise Unconvertible("generators and async functions are not converted")
    fn.decorator_list = []
    lower_returns(fn)
    lower_loops(fn, counter)
    globals_ = analysis.declared(fn, ast.Global)
    nonlocals_ = analysis.declared(fn, ast.Nonlocal)
    analysis.annotate(fn, always_live=globals_ | nonlocals_)
    conv = _Statements(counter, globals_)
    args = fn.args
    positional = args.posonlyargs + args.args
    # Bodies become nested functions, where a zero-argument super() finds no arguments.
    conv.exprs.super_args = ("__class__", positional[0].arg) if positional else None
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    fn.body = conv.block(fn.body, params | globals_ | nonlocals_, set())
    if conv.undefined:
        fn.body = [_LoadChecks(conv.undefined).visit(s) for s in fn.body]
    return fn


class _Statements:
    """Converts the statements of one function (nested functions get their own)."""

    def __init__(self, counter, globals_):
        self.counter = counter
        self.globals = globals_
        self.exprs = _Expressions()
        self.undefined: set[str] = set()

    def block(self, stmts, bound, seen, defined=frozenset()):
        """Convert ``stmts``: ``bound`` names have a binding (a value or Undefined),
        ``seen`` may have been assigned before, ``defined`` surely have a value."""
        out: list[ast.stmt] = []
        for s in stmts:
            start = len(out)
            if isinstance(s, ast.If):
                out.extend(self.if_(s, bound, seen))
            elif isinstance(s, ast.While):
                out.extend(self.while_(s, bound, seen))
            elif isinstance(s, ast.For):
                out.extend(self.for_(s, bound, seen))
            elif isinstance(s, _FUNCS):
                try:
                    out.append(convert_function(s, self.counter))
                except Unconvertible:
                    out.append(s)
            elif isinstance(s, ast.ClassDef):
                out.append(s)
            else:
                out.append(self.simple(s, bound, seen))
            for node in out[start:]:
                vars(node)["_ag_defined"] = defined    # loads of these names need no check
            names, _ = analysis.assigned([s])
            if not isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                bound = bound | names
            seen = seen | names
            defined = defined | _surely_assigned(s)
        return out

    def simple(self, s, bound, seen):
        """A statement without converted control flow of its own: its expressions, and the
        blocks of a ``with`` or ``try``."""
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, self.block(getattr(s, field), bound, seen))
        for h in getattr(s, "handlers", ()):
            h.body = self.block(h.body, bound, seen)
        for field, value in ast.iter_fields(s):
            if field in ("body", "orelse", "finalbody", "handlers"):
                continue
            if isinstance(value, ast.AST):
                setattr(s, field, self.exprs.visit(value))
            elif isinstance(value, list):
                setattr(s, field, [self.exprs.visit(v) if isinstance(v, ast.AST) else v
                                   for v in value])
        return s

    # -- shared pieces -----------------------------------------------------------
    def inits(self, scope, bound, seen, ref):
        """Bind names the statement may assign that have no value yet (to Undefined)."""
        out: list[ast.stmt] = []
        for name in sorted(scope.modified - bound - self.globals):
            self.undefined.add(name)
            if name in seen:    # assigned on some earlier path only: keep that value
                src = f"try:\n    {name}\nexcept NameError:\n    {name} = ag__.Undefined({name!r})"
            else:
                src = f"{name} = ag__.Undefined({name!r})"
            out.extend(_place(stmt, ref) for stmt in _parse(src))
        for stmt in out:
            vars(stmt)["_ag_skip"] = True
        return out

    def helper(self, name, params, body, scope, ref):
        """``def name(params): nonlocal <assigned>; body``."""
        fn = _place(_parse(f"def {name}({', '.join(params)}):\n    pass")[0], ref)
        local = sorted(n for n in scope.modified if n not in self.globals)
        glob = sorted(n for n in scope.modified if n in self.globals)
        decls = ([_place(ast.Nonlocal(names=local), ref)] if local else []) + \
            ([_place(ast.Global(names=glob), ref)] if glob else [])
        fn.body = decls + (body or [_place(ast.Pass(), ref)])
        return fn

    def state(self, n, names, composites, ref):
        """Getter and setter of the state a statement hands to its operator."""
        if not names and not composites:
            return [], "ag__.no_state", "ag__.no_set_state", "()"
        reads, writes = [], []
        for i, name in enumerate(names):
            reads.append(name)
            writes.append(f"    {name} = _ag_vars[{i}]")
        for j, (_key, node) in enumerate(sorted(composites.items())):
            i = len(names) + j
            base = ast.unparse(node.value)
            if isinstance(node, ast.Attribute):
                reads.append(f"ag__.getattr_({base}, {node.attr!r})")
                writes.append(f"    ag__.setattr_({base}, {node.attr!r}, _ag_vars[{i}])")
            else:
                key_src = ast.unparse(node.slice)
                reads.append(f"ag__.getitem_({base}, {key_src})")
                writes.append(f"    ag__.setitem_({base}, {key_src}, _ag_vars[{i}])")
        local = [x for x in names if x not in self.globals]
        glob = [x for x in names if x in self.globals]
        decl = (f"    nonlocal {', '.join(local)}\n" if local else "") + \
            (f"    global {', '.join(glob)}\n" if glob else "")
        src = (f"def _ag_get_state_{n}():\n    return ({', '.join(reads)},)\n"
               f"def _ag_set_state_{n}(_ag_vars):\n{decl}" + "\n".join(writes) + "\n")
        defs = [_place(d, ref) for d in _parse(src)]
        for d in defs:
            vars(d)["_ag_skip"] = True
        labels = tuple(f"global {x}" if x in self.globals else x for x in names) + \
            tuple(sorted(composites))
        return defs, f"_ag_get_state_{n}", f"_ag_set_state_{n}", repr(labels)

    def lists(self, scope):
        if not scope.lists:
            return ""
        items = []
        for key, node in sorted(scope.lists.items()):
            if isinstance(node, ast.Attribute):
                items.append(f"{key!r}: ag__.getattr_({ast.unparse(node.value)}, {node.attr!r})")
            else:
                items.append(f"{key!r}: {key}")
        return ", lists=lambda: {" + ", ".join(items) + "}"

    def call(self, src, ref, **exprs):
        """The operator call ``src`` (Python source) with ``exprs`` spliced in for names."""
        (stmt,) = _parse(src)
        _place(stmt, ref)
        if exprs:
            stmt = _Splice(exprs).visit(stmt)
        return stmt

    # -- the statements ------------------------------------------------------------
    def if_(self, s, bound, seen):
        scope, n = s._ag, next(self.counter)
        out = self.inits(scope, bound, seen, s)
        inner = bound | scope.modified
        body = self.block(s.body, inner, seen)
        orelse = self.block(s.orelse, inner, seen)
        # What either branch reads is part of the state too: the branch traced first
        # must not leave its assignments for the other to read.
        names = sorted(scope.modified & (scope.live_out | scope.live_head))
        defs, get, set_, labels = self.state(n, names, scope.composites, s)
        out.append(self.helper(f"_ag_if_true_{n}", [], body, scope, s))
        out.append(self.helper(f"_ag_if_false_{n}", [], orelse, scope, s))
        out.extend(defs)
        out.append(self.call(f"ag__.if_stmt(_ag_test, _ag_if_true_{n}, _ag_if_false_{n}, "
                             f"{get}, {set_}, {labels}{self.lists(scope)})", s,
                             _ag_test=self.exprs.visit(s.test)))
        return out

    def _exit_test(self, exits, test, ref):
        """``not flag_1 and ... and test`` for a loop left by break/return flags."""
        if not exits:
            return test
        parts = [_place(ast.UnaryOp(ast.Not(), ast.Name(f, ast.Load())), ref) for f in exits]
        if test is not None:
            parts.append(test)
        return parts[0] if len(parts) == 1 else _place(ast.BoolOp(ast.And(), parts), ref)

    def while_(self, s, bound, seen):
        scope, n = s._ag, next(self.counter)
        out = self.inits(scope, bound, seen, s)
        body = self.block(s.body, bound | scope.modified, seen | scope.modified)
        names = sorted(scope.modified & scope.live_head)
        defs, get, set_, labels = self.state(n, names, scope.composites, s)
        test = self._exit_test(getattr(s, "_ag_exits", []), s.test, s)
        test_fn = _place(_parse(f"def _ag_test_{n}():\n    return None")[0], s)
        test_fn.body[0].value = self.exprs.visit(test)
        out.append(test_fn)
        out.append(self.helper(f"_ag_loop_body_{n}", [], body, scope, s))
        out.extend(defs)
        out.append(self.call(f"ag__.while_stmt(_ag_test_{n}, _ag_loop_body_{n}, {get}, {set_}, "
                             f"{labels}{self.lists(scope)})", s))
        return out

    def for_(self, s, bound, seen):
        scope, n = s._ag, next(self.counter)
        out = self.inits(scope, bound, seen, s)
        target = ast.copy_location(ast.Assign(targets=[s.target],
                                              value=ast.Name("_ag_itr", ast.Load())), s)
        body = self.block([target] + s.body, bound | scope.modified, seen | scope.modified)
        names = sorted(scope.modified & scope.live_head)
        defs, get, set_, labels = self.state(n, names, scope.composites, s)
        exits = getattr(s, "_ag_exits", [])
        extra = "None"
        if exits:
            test_fn = _place(_parse(f"def _ag_extra_test_{n}():\n    return None")[0], s)
            test_fn.body[0].value = self.exprs.visit(self._exit_test(exits, None, s))
            out.append(test_fn)
            extra = f"_ag_extra_test_{n}"
        out.append(self.helper(f"_ag_loop_body_{n}", ["_ag_itr"], body, scope, s))
        out.extend(defs)
        out.append(self.call(f"ag__.for_stmt(_ag_iter, {extra}, _ag_loop_body_{n}, {get}, "
                             f"{set_}, {labels}{self.lists(scope)})", s,
                             _ag_iter=self.exprs.visit(s.iter)))
        return out


class _Splice(ast.NodeTransformer):
    def __init__(self, exprs):
        self.exprs = exprs

    def visit_Name(self, node):
        return self.exprs.get(node.id, node)


def _thunk(expr):
    """``lambda: expr`` at expr's location."""
    lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                        kw_defaults=[], kwarg=None, defaults=[]), body=expr)
    vars(lam)["_ag_thunk"] = True   # named like the user's function once compiled (source.py)
    return ast.copy_location(lam, expr)


def _ag(attr, ref):
    """``ag__.attr``, on the first line of ``ref`` (where a call of it is then reported)."""
    return _place(ast.Attribute(ast.Name("ag__", ast.Load()), attr, ast.Load()), ref)


def _has_walrus(node):
    return any(isinstance(n, ast.NamedExpr) for n in ast.walk(node))


class _Expressions(ast.NodeTransformer):
    """Conditional expressions, and/or/not and calls inside one statement's expressions."""

    super_args: tuple[str, str] | None = None   # what a zero-argument super() is given: ("__class__", "self")

    def visit_Lambda(self, node):
        node.body = self.visit(node.body)
        return node

    def visit_FunctionDef(self, node):   # nested functions are converted on their own
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _has_walrus(node.body) or _has_walrus(node.orelse):
            return node
        call = ast.Call(_ag("if_exp", node), [node.test, _thunk(node.body), _thunk(node.orelse)],
                        [])
        return ast.copy_location(call, node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(_has_walrus(v) for v in node.values[1:]):
            return node
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        call = ast.Call(_ag(fn, node), [_thunk(v) for v in node.values], [])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(ast.Call(_ag("not_", node), [node.operand], []), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id == "super":
            if not node.args and not node.keywords and self.super_args:
                node.args = [ast.copy_location(ast.Name(n, ast.Load()), node)
                             for n in self.super_args]
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "ag__":
            return node
        if isinstance(func, ast.Call) and _is_callee(func.func):
            return node   # made here already
        # `f(x)` becomes `ag__.callee(f)(x)`: the call itself stays in this frame, so what
        # looks at its caller (inspect.currentframe, locals, warnings) sees the user's.
        node.func = ast.copy_location(ast.Call(_ag("callee", func), [func], []), func)
        return node


def _is_callee(node):
    return isinstance(node, ast.Attribute) and node.attr == "callee" and \
        isinstance(node.value, ast.Name) and node.value.id == "ag__"


def _surely_assigned(s):
    """Names ``s`` assigns on every path through it (loops may not run, try may stop)."""
    if isinstance(s, ast.If):
        body = set().union(*[_surely_assigned(x) for x in s.body])
        orelse = set().union(*[_surely_assigned(x) for x in s.orelse])
        return body & orelse
    if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.FunctionDef,
                      ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return analysis.assigned([s])[0]
    if isinstance(s, ast.With):
        return set().union(*[_surely_assigned(x) for x in s.body])
    return set()


class _LoadChecks(ast.NodeTransformer):
    """Loads of names that may still be Undefined go through ``ag__.ld`` (which raises
    the plain program's UnboundLocalError)."""

    def __init__(self, names):
        self.names = names
        self.defined: list[frozenset[str]] = [frozenset()]

    def visit(self, node):
        if getattr(node, "_ag_skip", False):
            return node
        defined = getattr(node, "_ag_defined", None)
        if defined is None:
            return super().visit(node)
        self.defined.append(defined)
        try:
            return super().visit(node)
        finally:
            self.defined.pop()

    def visit_Name(self, node):
        if node.id in self.names and isinstance(node.ctx, ast.Load) and \
                node.id not in self.defined[-1]:
            return ast.copy_location(ast.Call(_ag("ld", node), [node], []), node)
        return node
