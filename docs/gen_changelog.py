"""Write the changelog from the git history: commits grouped by day, newest first, and
within a day by area (from the subject's ``area:`` prefix or its words).

Run from the repository's root, and commit the result::

    python docs/gen_changelog.py > docs/changelog.md

Example:
    >>> area("dask: eager ops read each chunk once")
    'Dask'
    >>> area("jvp of a custom_gradient function")
    'Autodiff and transformations'
"""
import collections
import subprocess
import sys

# (area, words that place a subject there), first match wins: the more specific first.
AREAS = (
    ("Documentation", ("readme", "docs", "docstring", "design.md")),
    ("Benchmarks", ("bench",)),
    ("Tests", ("tests:", "test ", "tests ")),
    ("Dask", ("dask", "chunk")),
    ("Export and loading", ("onnx", "en.save", "en.load", "export", "load")),
    ("AutoGraph", ("autograph", "converted")),
    ("Autodiff and transformations", ("grad", "jvp", "vjp", "vmap", "jacobian", "hessian",
                                      "tape", "checkpoint", "linearize")),
    ("Lowering and passes", ("numba", "fusion", "fused", "lowering", "pass", "kernel",
                             "memory plan", "cse", "fold", "compiled", " c ")),
    ("Graph mode", ("en.function", "trace", "graph", "scan", "while_loop", "cond")),
    ("Models and training", ("en.nn", "layer", "optim", "adam", "sgd", "lbfgs", "l-bfgs",
                             "module", "conv", "pool")),
    ("Back ends", ("backend", "back end", "array_api", "array api", "strict")),
)
OTHER = "Ops and the core"


def area(subject):
    """The area a commit subject belongs to."""
    text = f" {subject.lower()} "
    for name, words in AREAS:
        if any(w in text for w in words):
            return name
    return OTHER


def commits(repo="."):
    """``(date, short hash, subject)`` of every commit, newest first."""
    out = subprocess.run(["git", "-C", repo, "log", "--date=short", "--format=%ad%x09%h%x09%s"],
                         check=True, capture_output=True, text=True).stdout
    return [tuple(line.split("\t", 2)) for line in out.splitlines() if line.count("\t") >= 2]


def render(entries):
    """The changelog as Markdown."""
    lines = ["# Changelog", "",
             "From the git history (`python docs/gen_changelog.py`): each day's commits,",
             "newest first, grouped by area. The subjects say what changed and, where a",
             "change was measured, by how much.", ""]
    by_day = collections.OrderedDict()
    for date, sha, subject in entries:
        by_day.setdefault(date, []).append((sha, subject))
    order = [name for name, _ in AREAS] + [OTHER]
    for date, items in by_day.items():
        lines += [f"## {date}", ""]
        groups = collections.defaultdict(list)
        for sha, subject in items:
            groups[area(subject)].append((sha, subject))
        for name in order:
            if groups[name]:
                lines += [f"### {name}", ""]
                lines += [f"- {subject.replace('<', '&lt;')} (`{sha}`)"
                          for sha, subject in groups[name]]
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(commits()))
