"""Where the modes' subpackages live: ``engine.graph`` and ``engine.eager``.

In the repository the two modes sit beside the core, in the top-level folders
``graph/`` and ``eager/``, but they are subpackages of the one installed
package, ``engine``: a wheel copies them to ``engine/graph/`` and
``engine/eager/`` (``setup.py`` maps the folders), and an editable install
maps them with setuptools' own finder. When the engine runs straight from a
source checkout (``python -m pytest`` or ``python -m bench`` at the
repository root, nothing installed), :func:`install_source_finder` maps
``engine.graph`` to ``graph/`` and ``engine.eager`` to ``eager/`` the same
way. Nothing ever imports them under the top-level names ``graph`` or
``eager``, so a user's own ``graph.py`` cannot shadow them and no module is
loaded twice (``tests/project/test_layering.py`` checks the imports).

Example:
    >>> import engine.graph, os
    >>> os.path.basename(os.path.dirname(engine.graph.__file__))
    'graph'
"""
import importlib.machinery
import importlib.util
import os
import sys

SUBPACKAGES = ("eager", "graph")

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def subpackage_dirs():
    """``{name: folder}`` of each mode subpackage: ``engine/<name>/`` when installed,
    else the source checkout's ``<root>/<name>/``; a name found in neither is left out."""
    root = os.path.dirname(PACKAGE_DIR)
    found = {}
    for name in SUBPACKAGES:
        for folder in (os.path.join(PACKAGE_DIR, name), os.path.join(root, name)):
            if os.path.isfile(os.path.join(folder, "__init__.py")):
                found[name] = folder
                break
    return found


class _SourceTreeFinder:
    """A meta-path finder for ``engine.<name>`` -> the checkout's ``<name>/`` folder.

    It answers for those package names only; their submodules are then found by
    the ordinary path finder through the package's ``__path__``.
    """

    def __init__(self, folders):
        self.folders = {f"{__package__}.{name}": folder for name, folder in folders.items()}

    def find_spec(self, fullname, path=None, target=None):
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])

    def invalidate_caches(self):
        pass


def install_source_finder():
    """Map the mode subpackages that are not inside ``engine/`` (a source checkout).

    First on ``sys.meta_path``: ``engine`` was imported from this checkout, so its
    modes must come from the same one, even where another checkout is installed in
    editable mode (whose finder would map ``engine.graph`` to that checkout's
    ``graph/``, mixing two trees in one process). An installed wheel has the modes
    inside ``engine/`` and installs nothing here.
    """
    outside = {name: folder for name, folder in subpackage_dirs().items()
               if os.path.dirname(folder) != PACKAGE_DIR}
    if outside and not any(isinstance(f, _SourceTreeFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceTreeFinder(outside))
