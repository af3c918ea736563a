"""Name analysis for the conversion: what a block assigns, reads, and what is live after it.

Every ``if``/``while``/``for`` of the function being converted is annotated
(in ``node._ag``, a :class:`Scope`) with

- ``modified``: local names the statement assigns (``y = ...``, ``y += ...``,
  loop targets, ``def``/``import`` names, walrus targets);
- ``composites``: assigned attributes and subscripts (``self.h``,
  ``state["c"]``) keyed by their source text, whose base is not itself
  reassigned inside the statement;
- ``live_out``: names read after the statement before being reassigned (a
  backward liveness pass; names read by nested functions count as always
  live, since a closure may read them at any time);
- ``live_head``: for loops, names live at the start of an iteration, so loop
  carried = modified and live at the head; for ``if``, names live at the start of
  either branch (a name one branch assigns and the other reads is restored between
  tracing the two, so it is part of the branches' state);
- ``lists``: names/attributes on which the body calls ``append``, ``extend``
  or ``insert`` (checked at run time: a Python list must not grow inside a
  tensor loop or branch).

Example:
    >>> import ast
    >>> tree = ast.parse("def f(x):\\n    if x > 0:\\n        y = x\\n        z = 1\\n    return y")
    >>> fn = tree.body[0]
    >>> annotate(fn)
    >>> sorted(fn.body[0]._ag.modified), sorted(fn.body[0]._ag.live_out)
    (['y', 'z'], ['y'])
"""
import ast

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LIST_METHODS = ("append", "extend", "insert")


class Scope:
    """What one control-flow statement assigns and which names are live around it."""

    __slots__ = ("modified", "composites", "live_out", "live_head", "lists")

    def __init__(self):
        self.modified: set[str] = set()
        self.composites: dict[str, ast.expr] = {}     # source text -> the target
        self.live_out: set[str] = set()
        self.live_head: set[str] = set()
        self.lists: dict[str, ast.expr] = {}

    def __repr__(self):
        return (f"Scope(modified={sorted(self.modified)}, composites={sorted(self.composites)}, "
                f"live_out={sorted(self.live_out)}, live_head={sorted(self.live_head)})")


# ---- assignments ----------------------------------------------------------------
def _target_names(target, names, composites):
    if isinstance(target, ast.Name):
        names.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _target_names(elt, names, composites)
    elif isinstance(target, ast.Starred):
        _target_names(target.value, names, composites)
    elif isinstance(target, (ast.Attribute, ast.Subscript)) and _composite_ok(target):
        composites[ast.unparse(target)] = target


def _composite_ok(node):
    """``a.b.c`` or ``a[k]`` with a constant or plain-name key: state we can read back."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _composite_ok(node.value)
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, (ast.Constant, ast.Name)) and _composite_ok(node.value)
    return False


def composite_base(node):
    """The name at the root of an attribute/subscript chain."""
    while not isinstance(node, ast.Name):
        node = node.value
    return node.id


def assigned(stmts):
    """``(names, composites)`` assigned by ``stmts`` (not inside nested functions)."""
    names: set[str] = set()
    composites: dict[str, ast.expr] = {}
    for stmt in stmts:
        _assigned(stmt, names, composites)
    # An attribute of an object the block rebinds is not state that survives the block.
    composites = {k: v for k, v in composites.items() if composite_base(v) not in names}
    return names, composites


def _assigned(node, names, composites):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(node.name)
        return
    if isinstance(node, ast.Lambda):
        return
    if isinstance(node, (ast.Assign,)):
        for t in node.targets:
            _target_names(t, names, composites)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        if node.value is not None or isinstance(node, ast.AugAssign):
            _target_names(node.target, names, composites)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        _target_names(node.target, names, composites)
    elif isinstance(node, ast.NamedExpr):
        names.add(node.target.id)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            names.add((alias.asname or alias.name).split(".")[0])
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                _target_names(item.optional_vars, names, composites)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        names.add(node.name)
    elif isinstance(node, ast.Delete):
        for t in node.targets:
            _target_names(t, names, composites)
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _COMPREHENSIONS):
            _walrus_only(child, names)
        else:
            _assigned(child, names, composites)


def _walrus_only(node, names):
    for sub in ast.walk(node):
        if isinstance(sub, ast.NamedExpr):
            names.add(sub.target.id)


# ---- reads -------------------------------------------------------------------
def reads(node):
    """Names read by an expression or statement, including by nested functions."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            out.add(sub.id)
        elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
            out.add(sub.target.id)
    return out


def closure_reads(fn_node):
    """Names read inside functions and lambdas nested in ``fn_node`` (always live)."""
    out = set()
    for stmt in ast.walk(fn_node):
        if stmt is fn_node:
            continue
        if isinstance(stmt, _SCOPES):
            out |= reads(stmt)
    return out


def list_mutations(stmts):
    """``{source text: node}`` of ``x`` in ``x.append(...)``-style calls in ``stmts``."""
    out = {}
    for stmt in stmts:
        for sub in _walk_same_scope(stmt):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                    sub.func.attr in _LIST_METHODS and _composite_ok(sub.func.value):
                out[ast.unparse(sub.func.value)] = sub.func.value
    return out


def _walk_same_scope(node):
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if not isinstance(child, _SCOPES):
                todo.append(child)


# ---- liveness ----------------------------------------------------------------
class _Liveness:
    """Backward liveness over structured statements (no break/continue: they are lowered)."""

    def __init__(self, always_live):
        self.always = set(always_live)

    def block(self, stmts, live):
        for stmt in reversed(stmts):
            live = self.stmt(stmt, live)
        return live

    def stmt(self, s, live):
        if isinstance(s, ast.If):
            scope = scope_of(s)
            scope.live_out = set(live) | self.always
            branches = self.block(s.body, live) | self.block(s.orelse, live)
            scope.live_head = branches | self.always
            return reads(s.test) | branches
        if isinstance(s, ast.While):
            scope = scope_of(s)
            scope.live_out = set(live) | self.always
            test = reads(s.test) | set(getattr(s, "_ag_exits", ()))   # break/return flags
            head = set(live) | test
            while True:   # a fixed point: what the body needs at its start is needed at the head
                new = set(live) | test | self.block(s.body, head) | self.block(s.orelse, live)
                if new == head:
                    break
                head = new
            scope.live_head = head | self.always
            return head
        if isinstance(s, ast.For):
            scope = scope_of(s)
            scope.live_out = set(live) | self.always
            targets, _ = assigned([ast.Assign(targets=[s.target], value=ast.Constant(None))])
            exits = set(getattr(s, "_ag_exits", ()))   # break/return flags, read at the head
            head = set(live) | exits
            while True:
                body_in = (self.block(s.body, head) - targets) | reads(s.target)
                new = set(live) | exits | body_in | self.block(s.orelse, live)
                if new == head:
                    break
                head = new
            scope.live_head = head | self.always
            return head | reads(s.iter)
        if isinstance(s, ast.Return):
            return reads(s.value) if s.value is not None else set()
        if isinstance(s, ast.Raise):
            return reads(s)
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            names, _ = assigned([s])
            return (set(live) - names) | reads(s)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return (set(live) - {s.name}) | reads(s)
        if isinstance(s, (ast.Try, ast.With, ast.AsyncWith)) or hasattr(ast, "TryStar") and \
                isinstance(s, ast.TryStar):
            # Conservative: anything read anywhere inside, and nothing is killed.
            for sub in ast.walk(s):
                if sub is not s and isinstance(sub, (ast.If, ast.While, ast.For)):
                    inner = scope_of(sub)
                    inner.live_out = set(live) | reads(s) | self.always
                    inner.live_head = set(inner.live_out)
            return set(live) | reads(s)
        return set(live) | reads(s)


def scope_of(node: ast.stmt) -> Scope:
    """The :class:`Scope` :func:`annotate` stored on the if/while/for ``node``."""
    return vars(node)["_ag"]


def annotate(fn_node, always_live=()):
    """Annotate every if/while/for of ``fn_node`` (not of nested functions) with a Scope."""
    body = fn_node.body if isinstance(fn_node.body, list) else []
    for stmt in body:
        for sub in _walk_same_scope(stmt):
            if isinstance(sub, (ast.If, ast.While, ast.For)):
                # The AST's classes declare no such field; vars() is the node's own dict.
                vars(sub)["_ag"] = scope = Scope()
                if isinstance(sub, ast.If):
                    scope.modified, scope.composites = assigned(sub.body + sub.orelse)
                    scope.lists = list_mutations(sub.body + sub.orelse)
                else:
                    scope.modified, scope.composites = assigned([sub])
                    scope.lists = list_mutations(sub.body)
    always = set(always_live) | closure_reads(fn_node)
    _Liveness(always).block(body, set())


def declared(fn_node, kind):
    """Names declared ``global`` (kind=ast.Global) or ``nonlocal`` in the function itself."""
    out = set()
    for stmt in fn_node.body:
        for sub in _walk_same_scope(stmt):
            if isinstance(sub, kind):
                out.update(sub.names)
    return out
