"""mkdocs hook: the performance page's figures come from a ``python -m bench`` results
file, rendered by ``docs/gen_performance.py`` where the page has its marker."""
import importlib.util
import os
import shutil
import sys

from mkdocs.plugins import event_priority

MARKER = "<!-- bench-results -->"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _generator():
    # Loaded by path: docs/ is not a package, and mkdocs loads this hook by path too.
    spec = importlib.util.spec_from_file_location(
        "gen_performance", os.path.join(_HERE, "gen_performance.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The API reference reads the package as it is installed: one ``engine`` folder with
# ``graph/`` and ``eager/`` inside it (setup.py maps them there). mkdocstrings' loader
# finds packages by folder, so it is pointed at a copy of that layout made of links.
API_SOURCE = os.path.join(os.path.dirname(_HERE), "build", "api_source")
FOLDERS = {"engine": "engine", "engine/graph": "graph", "engine/eager": "eager"}


def stage_api_source(root=os.path.dirname(_HERE), target=API_SOURCE):
    """Build ``target/engine`` as the installed layout, each entry a link into ``root``."""
    shutil.rmtree(target, ignore_errors=True)
    for inside, folder in FOLDERS.items():
        os.makedirs(os.path.join(target, inside), exist_ok=True)
        for name in os.listdir(os.path.join(root, folder)):
            link = os.path.join(target, inside, name)
            if name != "__pycache__" and not os.path.exists(link):
                os.symlink(os.path.join(root, folder, name), link)
    return target


# The public modules whose members the API reference lists, as ``en.`` attributes.
DOCUMENTED = ("engine", "engine.nn", "engine.nn.functional", "engine.nn.init", "engine.optim",
              "engine.data", "engine.linalg", "engine.fft", "engine.random", "engine.debug",
              "engine.autograph", "engine.backend", "engine.dtypes", "engine.errors")


def _reachable(obj):
    """Whether ``obj`` is found again at ``obj.__module__`` + ``obj.__qualname__``."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    found = module
    for part in (getattr(obj, "__qualname__", "") or "").split("."):
        found = getattr(found, part, None)
    return module is not None and found is obj


def _load_public_names():
    """Import every documented name, and make each findable where it says it lives.

    Graph mode's names (en.function, en.cond ...) are imported on first use, and the
    reference inspects imported objects, so they are loaded first. The reference looks a
    function up at its ``__module__`` and ``__qualname__``; functions made by factories
    (each op function by ``engine.modes.op_function``, ``argmax`` inside a helper) are
    not there, so in this documentation process each is given the public name under
    which it is documented."""
    import engine

    for path in DOCUMENTED:
        module = engine
        for part in path.split(".")[1:]:   # public attributes: en.autograph lives in graph/
            module = getattr(module, part)
        name = module.__name__
        for attr in dir(module):
            if attr.startswith("_"):
                continue
            obj = getattr(module, attr)
            if callable(obj) and hasattr(obj, "__qualname__") and not _reachable(obj):
                try:
                    obj.__module__, obj.__qualname__ = name, attr
                except (AttributeError, TypeError):   # builtins and the like: left as they are
                    pass


def _examples_sections():
    """Read the docstrings' ``Example:`` sections as doctest examples (code), as their
    plural ``Examples:`` is read: the project writes the singular, which the reader would
    otherwise render as a note whose ``>>>`` lines are block quotes. The reader has no
    option for it, so its table of section names is extended; should that table move,
    the build fails (--strict) on the misread examples rather than passing silently."""
    try:
        from griffe._internal.docstrings import google
        google._section_kind.setdefault("example", google._section_kind["examples"])
    except (ImportError, AttributeError, KeyError):
        pass


# Before the plugins' own on_config: mkdocstrings reads its search paths there, and a
# path that does not exist yet (a fresh checkout) would be left out.
@event_priority(100)
def on_config(config):
    stage_api_source()
    _examples_sections()
    _load_public_names()
    return config


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    gen = _generator()
    path = gen.find_results()
    text = gen.render_file(path) if path else "No results yet: run `python -m bench`."
    return markdown.replace(MARKER, text)
