"""Lowering ``return``, ``break`` and ``continue`` to flags, before control flow is converted.

A tensor ``if`` or loop is traced as a whole, so a jump out of the middle of
it must become data: ``break`` sets ``_ag_break_N = True``, the statements
after it in the loop body run under ``if not _ag_break_N:`` and the loop
stops on ``not _ag_break_N``; ``continue`` likewise with a flag reset at the
top of each iteration; ``return v`` sets ``_ag_do_return = True`` and
``_ag_retval = v``, the function ends with ``return _ag_retval``.

Where one branch of an ``if`` always jumps and the other does not, the rest of
the block moves into the other branch instead of under a guard, so the common
``if x < 0: return -x`` followed by more code becomes one ``if``/``else`` that
assigns the return value in both branches.

Example:
    >>> import ast
    >>> fn = ast.parse("def f(x):\\n    if x > 0:\\n        return x\\n    return -x").body[0]
    >>> lower_returns(fn)
    True
    >>> print(ast.unparse(fn))
    def f(x):
        _ag_do_return = False
        _ag_retval = ag__.UndefinedReturnValue()
        if x > 0:
            _ag_do_return = True
            _ag_retval = x
        else:
            _ag_do_return = True
            _ag_retval = -x
        return _ag_retval
"""
import ast
import copy
import itertools

from engine.errors import UnimplementedError

NEVER, MAYBE, ALWAYS = 0, 1, 2
RETURN_FLAG, RETVAL = "_ag_do_return", "_ag_retval"
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.While)


def _assign(name, value_src_or_node, ref):
    value = ast.parse(value_src_or_node, mode="eval").body \
        if isinstance(value_src_or_node, str) else value_src_or_node
    node = ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)
    return ast.copy_location(node, ref)


def _not_flag(name, ref):
    # The flag's name too gets the location: the converter reads it (ag__.ld(flag)).
    return ast.fix_missing_locations(
        ast.copy_location(ast.UnaryOp(ast.Not(), ast.Name(name, ast.Load())), ref))


def _guard(flag, stmts, ref):
    """``if not flag: stmts``, located at ``ref``."""
    node = ast.If(test=_not_flag(flag, ref), body=stmts, orelse=[])
    return ast.copy_location(node, ref)


def _contains(stmts, kinds, into_loops):
    for stmt in stmts:
        if isinstance(stmt, _FUNCS):   # a nested function's jumps are its own
            continue
        todo = [stmt]
        while todo:
            n = todo.pop()
            if isinstance(n, kinds):
                return True
            for child in ast.iter_child_nodes(n):
                if isinstance(child, _FUNCS) or (not into_loops and isinstance(child, _LOOPS)):
                    continue
                todo.append(child)
    return False


class _BlockRewriter:
    """Rewrites jumps of one kind in a block; subclasses say what a jump becomes."""

    kinds: type[ast.stmt]     # the jump statement rewritten (a subclass sets it)
    into_loops = False

    def is_jump(self, stmt):
        raise UnimplementedError

    def replace(self, stmt):
        raise UnimplementedError

    def flag(self):
        raise UnimplementedError

    def block(self, stmts):
        """``(new statements, NEVER/MAYBE/ALWAYS jumps)``."""
        out = []
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if self.is_jump(s):
                out.extend(self.replace(s))
                return out, ALWAYS          # what follows a jump never runs
            if not _contains([s], self.kinds, self.into_loops):
                out.append(s)
                continue
            if isinstance(s, ast.If):
                # Rewriting a branch rewrites the statements nested in it in place, and a
                # rewritten jump is no longer a jump: a branch that takes the rest of the
                # block is rewritten again from its untouched statements.
                pristine = copy.deepcopy((s.body, s.orelse)) if rest else None
                body, b = self.block(s.body)
                orelse, o = self.block(s.orelse)
                moved = False
                if pristine is not None and b == ALWAYS and o != ALWAYS:
                    orelse, o = self.block(pristine[1] + rest)
                    moved = True
                elif pristine is not None and o == ALWAYS and b != ALWAYS:
                    body, b = self.block(pristine[0] + rest)
                    moved = True
                s.body, s.orelse = body or [ast.copy_location(ast.Pass(), s)], orelse
                out.append(s)
                status = ALWAYS if b == o == ALWAYS else MAYBE if (b or o) else NEVER
                if moved:   # the rest of the block now lives in a branch
                    return out, status
            elif isinstance(s, _LOOPS):
                s.body, _ = self.block(s.body)
                s.orelse, _ = self.block(s.orelse)
                self.loop_exit(s)
                out.append(s)
                status = MAYBE
            else:   # with / try: rewrite the blocks inside, guard what follows
                for field in ("body", "orelse", "finalbody"):
                    if getattr(s, field, None):
                        setattr(s, field, self.block(getattr(s, field))[0] or [ast.Pass()])
                for h in getattr(s, "handlers", ()):
                    h.body = self.block(h.body)[0] or [ast.Pass()]
                out.append(s)
                status = MAYBE
            if status == ALWAYS:
                return out, ALWAYS
            if status == MAYBE:   # the block's last statement may jump: so may the block
                if rest:
                    rest_new, r = self.block(rest)
                    out.append(_guard(self.flag(), rest_new, rest[0]))
                return out, MAYBE
        return out, NEVER

    def loop_exit(self, loop):
        pass


class _Returns(_BlockRewriter):
    kinds = ast.Return
    into_loops = True

    def is_jump(self, stmt):
        return isinstance(stmt, ast.Return)

    def replace(self, stmt):
        value = stmt.value if stmt.value is not None else ast.Constant(None)
        return [_assign(RETURN_FLAG, "True", stmt), _assign(RETVAL, value, stmt)]

    def flag(self):
        return RETURN_FLAG

    def loop_exit(self, loop):
        # A loop whose body may return stops when it has.
        loop._ag_exits = getattr(loop, "_ag_exits", []) + [RETURN_FLAG]


def lower_returns(fn):
    """Rewrite the returns of ``fn`` (a FunctionDef) to flags, unless it only returns last.

    Returns True when it changed ``fn``.
    """
    body = fn.body
    last_returns = isinstance(body[-1], ast.Return)
    if not _contains(body[:-1] if last_returns else body, ast.Return, True):
        return False
    ref = body[0]
    tail = body if last_returns else body + [ast.copy_location(ast.Return(value=None), body[-1])]
    new, _ = _Returns().block(tail)
    fn.body = [_assign(RETURN_FLAG, "False", ref),
               _assign(RETVAL, "ag__.UndefinedReturnValue()", ref)] + new + \
        [ast.copy_location(ast.Return(value=ast.Name(RETVAL, ast.Load())), body[-1])]
    return True


class _Jumps(_BlockRewriter):
    """``break`` or ``continue`` of one loop (not of loops nested in it)."""

    def __init__(self, kind, flag):
        self.kinds = kind
        self._flag = flag

    def is_jump(self, stmt):
        return isinstance(stmt, self.kinds)

    def replace(self, stmt):
        return [_assign(self._flag, "True", stmt)]

    def flag(self):
        return self._flag


def lower_loops(fn, counter=None):
    """Lower every ``break``/``continue`` and loop ``else`` in ``fn``'s body to flags."""
    counter = counter or itertools.count()
    fn.body = _lower_block(fn.body, counter)


def _lower_block(stmts, counter):
    out = []
    for s in stmts:
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list) and not isinstance(s, _FUNCS):
                setattr(s, field, _lower_block(getattr(s, field), counter))
        for h in getattr(s, "handlers", ()):
            h.body = _lower_block(h.body, counter)
        if isinstance(s, _LOOPS):
            out.extend(_lower_loop(s, counter))
        else:
            out.append(s)
    return out


def _lower_loop(loop, counter):
    n = next(counter)
    before, after = [], []
    if _contains(loop.body, ast.Continue, False):
        flag = f"_ag_continue_{n}"
        body, _ = _Jumps(ast.Continue, flag).block(loop.body)
        loop.body = [_assign(flag, "False", loop)] + body
    orelse = loop.orelse
    loop.orelse = []
    if _contains(loop.body, ast.Break, False):
        flag = f"_ag_break_{n}"
        body, _ = _Jumps(ast.Break, flag).block(loop.body)
        loop.body = body
        before.append(_assign(flag, "False", loop))
        loop._ag_exits = [flag] + getattr(loop, "_ag_exits", [])
        if orelse:   # runs when the loop ended without a break
            after.append(_guard(flag, orelse, orelse[0]))
    else:
        after.extend(orelse)
    return before + [loop] + after
