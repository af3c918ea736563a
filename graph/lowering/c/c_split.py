"""One generated C function cut into several translation units, compiled side by side.

Nearly all of a cold build is the compiler optimizing the one large function
``graph`` (``c_graph.py``): preprocessing, assembling and linking are a tenth of it.
That function is a run of top-level statements (a copy, a scan's forward time loop,
its backward loop) that talk to each other only through memory: the pointers
declared at its top (inputs, outputs, workspace slots). :func:`split` cuts the body
between those statements into consecutive parts of about equal length; each part
is a function of its own (the same parameters and declarations, its statements),
in a unit of its own with the source's prelude (the maths helpers, array
constants), and the original function calls the parts in order. The compiler
optimizes each part alone, so the units compile at once on separate cores
(``c_compiler``), and the library computes what the one unit computes (each
statement is compiled from the same text, in the same order).

A source whose body declares a value between its statements (which a later
statement could read), or has too few lines to gain, is not cut: :func:`split`
returns None and it is compiled as one unit.

Example:
    >>> body = ["    float *restrict b1 = (float *)(ws + 0);"] + \\
    ...     [f"    b1[{k}] = {k};" for k in range(4)]
    >>> source = ("#include <math.h>\\n"
    ...           "int graph(char *const *p, char *ws, void *sgemm_p, void *dgemm_p) {\\n" +
    ...           "\\n".join(body) + "\\n    return 0;\\n}\\n")
    >>> units = split(source, 2, min_lines=1)
    >>> len(units.parts), "graph_part1(p, ws, sgemm_p, dgemm_p);" in units.main
    (2, True)
    >>> print(units.parts[1].split("{", 1)[1])
    <BLANKLINE>
        float *restrict b1 = (float *)(ws + 0);
        b1[2] = 2;
        b1[3] = 3;
        return 0;
    }
    <BLANKLINE>
"""
import re

NAME = "graph"
SIGNATURE = "(char *const *p, char *ws, void *sgemm_p, void *dgemm_p)"
HEADER = f"int {NAME}{SIGNATURE} {{"
# A statement that declares a value: a type (words, pointers), a name, then `=` or `;`.
_DECLARES = re.compile(r"^\s*(?:const\s+)?[A-Za-z_]\w*(?:\s+(?:const|restrict)\b)*"
                       r"[\s*]+(?:restrict\s+)?[A-Za-z_]\w*\s*(?:\[[^\]]*\])?\s*(?:=|;)")
_NOT_TYPES = ("return", "for", "if", "while", "do", "else", "switch", "goto")


class Units:
    """The sources of a split build: ``parts`` (the part functions) and ``main`` (the
    original function calling them, and everything after it in the source)."""

    def __init__(self, parts, main):
        self.parts, self.main = parts, main

    @property
    def units(self):
        """One source per unit: the last part's unit holds ``main`` too (no unit of its
        own to compile, nothing but objects to link)."""
        return self.parts[:-1] + [self.parts[-1] + self.main]


def _statements(body):
    """The body's top-level statements, each a list of lines (braces balanced)."""
    statements, current, depth = [], [], 0
    for line in body:
        current.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0:
            statements.append(current)
            current = []
    if current or depth:
        return None     # unbalanced: not cut
    return statements


def _declares(statement):
    line = statement[0].strip()
    return len(statement) == 1 and bool(_DECLARES.match(line)) and \
        line.split()[0] not in _NOT_TYPES


def body_lines(source):
    """The lines of ``source``'s function ``graph`` from its header on (all its lines where
    it has none): the part the compiler's time grows with (the maths helpers before it
    cost next to nothing where unused).

    Example:
        >>> body_lines("static int one(void) { return 1; }\\n" + HEADER + "\\n    return 0;\\n}\\n")
        3
    """
    start = source.find(HEADER)
    return source.count("\n", max(start, 0))


def split(source, units, min_lines):
    """:class:`Units` for ``source`` cut into at most ``units`` parts of at least
    ``min_lines`` lines each, or None where it is not cut (see the module docstring)."""
    start = source.find(HEADER)
    if start < 0 or units < 2:
        return None
    end = source.find("\n    return 0;\n}\n", start)
    if end < 0:
        return None
    prelude, tail = source[:start], source[end + len("\n    return 0;\n}\n"):]
    body = source[start + len(HEADER) + 1:end].split("\n")
    statements = _statements(body)
    if statements is None:
        return None
    k = 0     # the head: declarations, and the casts that mark some as used
    while k < len(statements) and (_declares(statements[k]) or
                                   statements[k][0].strip().startswith("(void)")):
        k += 1
    head, rest = statements[:k], statements[k:]
    if any(_declares(s) for s in rest):
        return None     # a value declared between statements: one unit
    groups = _balanced(rest, units, min_lines)
    if len(groups) < 2:
        return None
    head_text = "\n".join(line for s in head for line in s)
    parts, calls = [], []
    for j, group in enumerate(groups):
        lines = "\n".join(line for s in group for line in s)
        parts.append(f"{prelude}__attribute__((visibility(\"hidden\")))\n"
                     f"int {NAME}_part{j}{SIGNATURE} {{\n{head_text}\n{lines}\n"
                     "    return 0;\n}\n")
        calls.append(f"    {NAME}_part{j}(p, ws, sgemm_p, dgemm_p);")
    declared = "".join(f"int {NAME}_part{j}{SIGNATURE};\n" for j in range(len(groups)))
    main = f"{declared}{HEADER}\n" + "\n".join(calls) + "\n    return 0;\n}\n" + tail
    return Units(parts, main)


def _balanced(statements, units, min_lines):
    """``statements`` in consecutive groups of about equal line counts (at most
    ``units``, each at least ``min_lines`` lines where more than one)."""
    total = sum(len(s) for s in statements)
    n = min(units, total // max(min_lines, 1), len(statements))
    if n < 2:
        return [statements]
    groups: list[list[list[str]]] = []
    current: list[list[str]] = []
    size = done = 0
    for s in statements:
        # Close a group where adding this statement overshoots its share by more than
        # stopping short of it would (the last group takes what is left).
        share = (total - done) / (n - len(groups))
        if current and len(groups) < n - 1 and size + len(s) - share > share - size:
            groups.append(current)
            done += size
            current, size = [], 0
        current.append(s)
        size += len(s)
    groups.append(current)
    return groups
