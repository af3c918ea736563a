"""Type-check the package as it is installed: ``python .ci/typecheck.py [mypy options]``.

In the repository ``graph/`` and ``eager/`` sit beside ``engine/`` but are the
subpackages ``engine.graph`` and ``engine.eager`` (``engine/_layout.py``), and
mypy cannot follow the editable install's import hook. So this lays out the
installed tree under ``build/typecheck/engine/`` with links to the sources
(``engine/*`` plus ``graph`` and ``eager``), runs mypy on it with the settings in
``pyproject.toml`` (``[tool.mypy]``), and prints its findings with the
repository's paths (``graph/ir/graph.py``, not ``engine/graph/ir/graph.py``).
The exit status is mypy's.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"
SUBPACKAGES = ("graph", "eager")


def lay_out_tree():
    """``build/typecheck/engine/``: a link to each entry of ``engine/`` and to each mode
    folder, rebuilt every run so a new or removed module is seen."""
    package = TREE / "engine"
    shutil.rmtree(package, ignore_errors=True)
    package.mkdir(parents=True)
    for entry in sorted((ROOT / "engine").iterdir()):
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name in SUBPACKAGES:
        (package / name).symlink_to(ROOT / name)


def repository_path(line):
    """A mypy line with the tree's module path written as the repository's.

    >>> repository_path("engine/graph/ir/graph.py:3: error: x")
    'graph/ir/graph.py:3: error: x'
    >>> repository_path("engine/op.py:1: note: y")
    'engine/op.py:1: note: y'
    """
    return re.sub(rf"^engine/({'|'.join(SUBPACKAGES)})/", r"\1/", line)


def main(args):
    lay_out_tree()
    # mypy runs inside the tree, so the sources' own folders are not on its search path
    # beside it (each module would be found twice, under two names).
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                           str(ROOT / "pyproject.toml"), *args, "engine"],
                          cwd=TREE, capture_output=True, text=True,
                          env={**os.environ, "MYPY_FORCE_COLOR": "0"})
    for line in (done.stdout + done.stderr).splitlines():
        print(repository_path(line))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
