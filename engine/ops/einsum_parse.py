"""Parsing einsum subscripts and choosing the contraction order (no ops here).

:func:`canonical` turns what the user wrote (implicit output, ``...``,
broadcasting of size-1 dims, numpy's sublist form) into one explicit form:
one string of distinct-meaning letters per operand and one for the output,
with every dim named. :func:`greedy_path` picks the pairwise contraction
order for three or more operands, once, from the shapes (the greedy rule of
opt_einsum and ``np.einsum_path``).

Example:
    >>> canonical("ij,jk", [(2, 3), (3, 4)])
    (('ij', 'jk'), 'ik')
    >>> greedy_path(("ij", "jk", "kl"), "il", {"i": 2, "j": 30, "k": 30, "l": 2})
    [(0, 1), (0, 1)]
"""
import functools
import itertools
import string

from ..errors import EngineError, ShapeError

LETTERS = string.ascii_letters          # what numpy allows as labels (52)
_UNKNOWN_SIZE = 64                       # a dim unknown at trace time, for costs only


def sublists_to_string(args):
    """numpy's interleaved form ``(x, [0, 1], y, [1, 2], [0, 2])`` as
    ``("ab,bc->ac", [x, y])``."""
    args = list(args)
    out = None
    if len(args) % 2 == 1:
        out = args.pop()
    operands, subs = args[0::2], args[1::2]

    def word(sub):
        parts = []
        for s in sub:
            if s is Ellipsis:
                parts.append("...")
            elif isinstance(s, int) and 0 <= s < len(LETTERS):
                parts.append(LETTERS[s])
            else:
                raise ShapeError(f"einsum: a sublist holds {s!r}; use ints in [0, 52) or ...")
        return "".join(parts)
    text = ",".join(word(s) for s in subs)
    if out is not None:
        text += "->" + word(out)
    return text, operands


def _split_terms(subscripts, n_operands):
    text = subscripts.replace(" ", "")
    if "->" in text:
        lhs, rhs = text.split("->", 1)
        if "->" in rhs:
            raise ShapeError(f"einsum: {subscripts!r} has more than one '->'")
    else:
        lhs, rhs = text, None
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise ShapeError(f"einsum: {subscripts!r} names {len(terms)} operand(s), "
                         f"got {n_operands}")
    for t in terms + ([rhs] if rhs is not None else []):
        bare = t.replace("...", "")
        bad = [c for c in bare if c not in LETTERS]
        if bad or t.count("...") > 1:
            raise ShapeError(f"einsum: {subscripts!r}: subscripts are letters and at most one "
                             f"'...' per term, got {t!r}")
    return terms, rhs


def canonical(subscripts, shapes):
    """``(operand letter strings, output letters)`` with every dim named by a letter.

    ``shapes`` holds one shape per operand (``None`` for a dim unknown while
    tracing). A dim of size 1 that broadcasts against a larger one gets a letter
    of its own (summed away: a size-1 sum), so the explicit form needs no
    broadcasting.
    """
    return _canonical(subscripts, tuple(tuple(s) for s in shapes))


@functools.lru_cache(maxsize=512)
def _canonical(subscripts, shapes):
    terms, rhs = _split_terms(subscripts, len(shapes))
    used = set("".join(terms) + (rhs or ""))
    fresh = (c for c in LETTERS if c not in used)

    # How many dims each "..." covers, and one letter per position of the broadcast "...".
    n_ell = []
    for t, shape in zip(terms, shapes):
        named = len(t.replace("...", ""))
        if ("..." in t and named > len(shape)) or ("..." not in t and named != len(shape)):
            raise ShapeError(f"einsum: term {t!r} of {subscripts!r} does not fit an operand "
                             f"of shape {shape}")
        n_ell.append(len(shape) - named if "..." in t else 0)
    width = max(n_ell, default=0)
    try:
        ell_letters = "".join(next(fresh) for _ in range(width))
    except StopIteration:
        raise ShapeError(f"einsum: {subscripts!r} needs more than 52 labels") from None

    words = []
    for t, k in zip(terms, n_ell):
        words.append(t.replace("...", ell_letters[width - k:]) if "..." in t else t)

    if rhs is None:   # implicit: the "..." dims, then letters used once, in ASCII order
        counts: dict[str, int] = {}
        for c in "".join(terms).replace(".", ""):
            counts[c] = counts.get(c, 0) + 1
        out = ell_letters + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        if "..." not in rhs and width:
            raise ShapeError(f"einsum: {subscripts!r}: the operands' '...' dims must appear "
                             "in the output ('->...')")
        out = rhs.replace("...", ell_letters)
        all_in = set("".join(words))
        for c in out:
            if c not in all_in:
                raise ShapeError(f"einsum: output label {c!r} of {subscripts!r} is in no input")
        if len(set(out)) != len(out):
            raise ShapeError(f"einsum: output {rhs!r} of {subscripts!r} repeats a label")

    # Sizes per label; size-1 dims that broadcast get labels of their own.
    sizes: dict[str, int] = {}
    for w, shape in zip(words, shapes):
        for c, d in zip(w, shape):
            if d is not None and d != 1:
                if sizes.get(c, d) != d:
                    raise ShapeError(f"einsum: label {c!r} of {subscripts!r} has sizes "
                                     f"{sizes[c]} and {d} in operands of shapes {shapes}")
                sizes[c] = d
    final = []
    try:
        for w, shape in zip(words, shapes):
            final.append("".join(next(fresh) if d == 1 and sizes.get(c, 1) != 1 else c
                                 for c, d in zip(w, shape)))
    except StopIteration:
        raise ShapeError(f"einsum: {subscripts!r} needs more than 52 labels") from None
    return tuple(final), out


@functools.lru_cache(maxsize=1024)
def parse_explicit(subscripts):
    """``"ab,bc->ac"`` (the canonical form an einsum op holds) as ``(("ab", "bc"), "ac")``."""
    lhs, out = subscripts.split("->")
    return tuple(lhs.split(",")), out


def label_sizes(words, shapes):
    sizes: dict[str, int | None] = {}
    for w, shape in zip(words, shapes):
        for c, d in zip(w, shape):
            if sizes.get(c) is None:
                sizes[c] = d
    return sizes


def _size(letters, sizes):
    n = 1
    for c in letters:
        d = sizes.get(c)
        n *= _UNKNOWN_SIZE if d is None else d
    return n


def pair_result(a, b, others, out):
    """The labels kept by contracting terms ``a`` and ``b``: those still needed by
    the other terms or the output, in order of appearance."""
    needed = set(out).union(*others) if others else set(out)
    seen = []
    for c in a + b:
        if c in needed and c not in seen:
            seen.append(c)
    return "".join(seen)


def greedy_path(words, out, sizes):
    """Pairs ``(i, j)`` to contract in turn (the result goes to the end of the
    list, as in ``np.einsum_path``): at each step the pair that shrinks the
    intermediate sizes most (``size(result) - size(a) - size(b)``), preferring
    pairs that share a label, ties broken by the pair's work."""
    words = list(words)
    path = []
    while len(words) > 1:
        best: tuple[tuple, int, int, str] | None = None
        for i, j in itertools.combinations(range(len(words)), 2):
            a, b = words[i], words[j]
            others = [w for k, w in enumerate(words) if k not in (i, j)]
            r = pair_result(a, b, others, out)
            shares = bool(set(a) & set(b))
            cost = (_size(r, sizes) - _size(a, sizes) - _size(b, sizes))
            work = _size(set(a) | set(b), sizes)
            key = (not shares, cost, work, i, j)
            if best is None or key < best[0]:
                best = (key, i, j, r)
        if best is None:     # (two or more words make at least one pair)
            raise EngineError("einsum: no pair to contract (internal error)")
        _, i, j, r = best
        path.append((i, j))
        words = [w for k, w in enumerate(words) if k not in (i, j)] + [r]
    return path
