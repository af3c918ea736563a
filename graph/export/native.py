"""Saving a traced function: a versioned JSON graph plus its arrays in an ``.npz``.

``en.save(fn, path, *example_args)`` traces ``fn`` (or uses its
``input_signature`` when no arguments are given) and writes the
*unoptimized* graph, so only registry ops and the structural ops
(placeholder, constant, read_variable, assign_variable, unpack, cond,
while_loop, scan) appear; :func:`graph.export.load.load` re-optimizes. Two layouts:

* ``path`` ending in ``.json``: ``path``, and beside it ``<stem>.<digest>.npz``
  (``model.json`` and ``model.3f9a...c2.npz``);
* any other ``path``: a directory holding ``graph.json`` and ``arrays.<digest>.npz``.

The ``.npz``'s name carries the first 16 hex digits of its bytes' SHA-256, and
the JSON names it (``arrays_file``): the JSON is the manifest, written last in
one rename, so a save is atomic. Whatever fails midway (or however many threads
and processes save to one path at once), the path holds a complete save, the
old one or a new one, and no temporary files (:mod:`graph.export.atomic_save`).
Version 1 files (the ``.npz`` at the fixed name ``<stem>.npz`` or ``arrays.npz``,
no ``arrays_file``) still load.

The JSON side (keys sorted, so saving twice to a path gives the same bytes) holds::

    {"format": "dualmode-engine.graph", "version": 2, "name": "mlp",
     "arrays_file": "mlp.3f9a0c1d2e4b5a67.npz",
     "arrays": [{"dtype": "float32", "shape": [3, 4]}, ...],     # npz members a0, a1, ...
     "variables": [{"name": "w", "trainable": true, "shape": [3, 4], "dtype": "float32",
                    "array": 0}, ...],
     "graph": {"name": "mlp", "inputs": [0], "outputs": [7], "output_tree": "*",
               "nodes": [{"op": "placeholder", "name": "x0", "inputs": [], "after": [],
                          "params": {}, "aval": [[null, 3], "float32"]}, ...]}}

Nodes refer to their inputs (and ``after``: the control dependencies that
order side effects) by index, always to earlier nodes. Params are JSON
values; tuples become lists, and the few other kinds are tagged objects:
``{"$dtype": "float32"}``, ``{"$float": "nan"}``, ``{"$array": 3}`` (an npz
member), ``{"$const": {"dtype", "shape", "data"}}`` (a small array inline),
``{"$var": 0}`` (a variable) and ``{"$subgraph": {"name", "graph",
"n_captures", "n_replay"}}`` (a body of cond/while_loop/scan with its own
``graph``; its last ``n_captures`` inputs are values captured from the
enclosing graph, its last ``n_replay`` outputs the per-step values a scan
keeps for its gradient). Output structures are ``"*"`` (a leaf), ``null``
(None), ``{"tuple": [...]}``, ``{"list": [...]}`` or
``{"dict": [[key, child], ...]}``. Names are identifiers; variable names keep
letters, digits and ``_:.-`` (anything else, ``/`` included, becomes ``_``).

The ``.npz`` is written without pickle, with fixed zip timestamps, so the
bytes depend on the graph and the values only.

This module holds the whole format: writing it here, and at the end the rules
each field must follow, which :mod:`graph.export.load` applies when reading it back.

Example:
    >>> import engine as en, tempfile, os
    >>> f = en.function(lambda x: en.tanh(x) * 2.0)
    >>> d = tempfile.mkdtemp()
    >>> en.save(f, os.path.join(d, "model"), en.tensor([0.5, 1.0]))
    >>> g = en.load(os.path.join(d, "model"))
    >>> g(en.tensor([0.5, 1.0])).numpy().round(4).tolist()
    [0.9242, 1.5232]
"""
import hashlib
import inspect
import io
import json
import keyword
import math
import os
import re
import zipfile

import numpy as np

from engine import dtypes
from engine.errors import (ArgumentTypeError, EngineError, InvalidArgumentError, LoadError,
                           UnsupportedError,
                           describe_aval, format_location)
from engine.op import REGISTRY
from engine.pytree import LEAF, NONE, TreeDef, is_namedtuple_type
from engine.nn.module import Module
from engine.tensor import Tensor

from .reference import reference_doc, reference_for
from .atomic_save import arrays_name, commit
from .module_signature import module_function
from ..jit.concrete import ConcreteFunction
from ..jit.function import Function, function
from ..ir.graph_ops import VarRef
from ..control.subgraph import SubGraph

FORMAT = "dualmode-engine.graph"
VERSION = 2              # 2: the JSON names its .npz (arrays_file); 1: the fixed name
READ_VERSIONS = (1, 2)
GRAPH_FILE = "graph.json"
ARRAYS_FILE = "arrays.npz"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
# Arrays of at most this many elements are written inline in the JSON.
INLINE_ELEMENTS = 16
DTYPES = {d.name: d for d in dtypes.SUPPORTED}
# The structural ops a saved graph may hold (py_function and print run Python: never).
STRUCTURAL_OPS = ("placeholder", "constant", "read_variable", "assign_variable", "unpack",
                  "cond", "while_loop", "scan")
# What a name (of a graph or a node) and a variable's label may look like.
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
LABEL_RE = re.compile(r"[A-Za-z0-9_:.\- ]{0,256}\Z")
# What the JSON's arrays_file may be: a plain file name beside the JSON.
ARRAYS_FILE_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,250}\.npz\Z")
INT_LIMIT = 1 << 63
# Limits a file must keep to (checked by graph.export.load before anything is allocated).
MAX_JSON_BYTES = 64 << 20
MAX_ARRAY_BYTES = 1 << 31
MAX_TOTAL_BYTES = 1 << 31
MAX_NODES = 200_000
MAX_RANK = 32
MAX_DEPTH = 16            # nesting of control-flow bodies
MAX_ITEMS = 4096          # entries in one param list, results of one node
MAX_DIM = 1 << 62


def paths_for(path):
    """``(json path, npz path of a version-1 save)`` for a save location (see the module
    docstring; :func:`saved_files` gives the ``.npz`` a save at ``path`` uses now)."""
    path = os.fspath(path)
    if path.endswith(".json"):
        return path, path[:-len(".json")] + ".npz"
    return os.path.join(path, GRAPH_FILE), os.path.join(path, ARRAYS_FILE)


def arrays_stem(json_path):
    """What the ``.npz`` names of a save whose JSON is ``json_path`` start with."""
    name = os.path.basename(json_path)
    return "arrays" if name == GRAPH_FILE else name[:-len(".json")]


def saved_files(path):
    """``(json path, npz path)`` of the save now at ``path`` (the ``.npz`` its JSON names).

    Example:
        >>> import engine as en, tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> en.save(en.function(lambda x: x + 1.0), os.path.join(d, "m.json"), en.ones(2))
        >>> [os.path.basename(p)[:2] for p in saved_files(os.path.join(d, "m.json"))]
        ['m.', 'm.']
    """
    json_path, legacy = paths_for(path)
    with open(json_path, "rb") as f:
        name = json.load(f).get("arrays_file")
    return json_path, legacy if name is None else os.path.join(os.path.dirname(json_path), name)


def safe_name(name):
    """``name`` made into an identifier that is not a keyword (what node and graph
    names must be)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", str(name))[:127] or "graph"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = "_" + name
    return name


def safe_label(label):
    """A variable's name with characters outside ``LABEL_RE`` (path separators among
    them) replaced by ``_``, and no ``..``."""
    label = re.sub(r"[^A-Za-z0-9_:.\- ]", "_", str(label))[:256]
    while ".." in label:
        label = label.replace("..", "__")
    return label


class ExportError(EngineError):
    """A function cannot be saved (an op or a value has no saved form)."""


# ---- saving --------------------------------------------------------------------------------
def save(fn, path, *example_args, reference=False, tolerance=None):
    """Save the graph that ``fn`` traces for ``example_args`` (or its ``input_signature``).

    ``fn`` is an ``en.function``, a plain Python function (traced here) or a
    ``ConcreteFunction``. Variables the function uses are saved with their
    current values. Saving the same function twice writes the same bytes.
    ``en.load(path)`` gives a callable back; see the module docstring for the
    layout. The save is atomic: if it fails, or other saves to ``path`` run at
    the same time, ``path`` holds a complete save (the old one or a new one)
    and no temporary files. Raises :class:`ExportError` for ops that run Python
    (``py_function``, ``print``).

    ``reference=True`` also stores the example arguments and the outputs they give,
    with ``tolerance=(rtol, atol)`` (by default a few units in the last place of the
    outputs' dtype): ``en.load(path, verify=True)`` then refuses a file whose outputs
    differ beyond it on the loading machine (:mod:`graph.export.reference`).
    """
    concrete = concrete_function_for(fn, example_args, "en.save")
    doc, arrays = describe(concrete)
    if reference:
        inputs, outputs, rtol, atol = reference_for(concrete, example_args, tolerance)
        doc["reference"] = reference_doc(len(arrays), len(inputs), len(outputs), rtol, atol)
        doc["arrays"] += [{"dtype": a.dtype.name, "shape": list(a.shape)}
                          for a in inputs + outputs]
        arrays = arrays + inputs + outputs
    elif tolerance is not None:
        raise EngineError("en.save: tolerance= is the reference's; pass reference=True too")
    json_path, _ = paths_for(path)
    if os.path.isdir(json_path):
        raise ExportError(f"en.save: cannot save to {json_path}: it is a directory")
    folder, json_name = os.path.split(json_path)
    folder = folder or "."
    os.makedirs(folder, exist_ok=True)
    npz = npz_bytes(arrays)
    stem = arrays_stem(json_path)
    doc["arrays_file"] = arrays_name(stem, hashlib.sha256(npz).hexdigest())
    commit(folder, json_name, json_bytes(doc), doc["arrays_file"], npz, stem)


def concrete_function_for(fn, example_args, what):
    """The ConcreteFunction to save or export for ``fn`` and its example arguments."""
    if isinstance(fn, ConcreteFunction):
        return fn
    if isinstance(fn, Module):        # traced on its examples, for any batch size
        fn = module_function(fn, example_args, what)
    if not isinstance(fn, Function):
        if not callable(fn):
            raise ArgumentTypeError(f"{what}: expected an en.function or a Python function, got "
                            f"{type(fn).__name__}")
        fn = function(fn)
    if example_args or (fn.input_signature is None and _takes_no_arguments(fn)):
        return fn.get_concrete_function(*example_args)
    if fn.input_signature is None:
        raise EngineError(f"{what}: give example arguments (as for a call) or create the "
                          f"function with an input_signature, so that it can be traced")
    # Any tensors matching the signature select its one trace (unknown dims stay unknown).
    dummies = [Tensor(np.zeros(tuple(1 if d is None else d for d in s.shape), s.dtype))
               for s in fn.input_signature]
    return fn.get_concrete_function(*dummies)


def _takes_no_arguments(fn):
    try:
        inspect.signature(fn.python_function).bind()
        return True
    except (TypeError, ValueError):
        return False


def describe(concrete):
    """``(JSON document, list of arrays)`` for a ConcreteFunction's unoptimized graph."""
    graph = concrete.unoptimized_graph
    enc = _Encoder(graph.variables)
    gdoc = enc.graph(graph, depth=0)
    # The variables' values follow the constants in the array table.
    values = [np.asarray(v.numpy()) for v in graph.variables]
    arrays = list(enc.arrays) + values
    doc = {"format": FORMAT, "version": VERSION, "name": safe_name(concrete.name),
           "arrays": [{"dtype": a.dtype.name, "shape": list(a.shape)} for a in arrays],
           "variables": [{"name": safe_label(v.name), "trainable": bool(v.trainable),
                          "shape": list(a.shape), "dtype": a.dtype.name,
                          "array": len(enc.arrays) + i}
                         for i, (v, a) in enumerate(zip(graph.variables, values))],
           "graph": gdoc}
    return doc, arrays


def json_bytes(doc):
    """The JSON document as bytes: keys sorted, one line per value that fits in
    ``LINE`` characters (so a node is usually one line), the same bytes every time."""
    return (_pretty(doc, 0) + "\n").encode("ascii")


LINE = 120


def _pretty(value, indent):
    flat = json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=False,
                      separators=(", ", ": "))
    if indent + len(flat) <= LINE or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {_pretty(value[k], indent + 1)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + _pretty(v, indent + 1) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def npz_bytes(arrays):
    """An ``.npz`` (members ``a0.npy``, ``a1.npy``, ...) with fixed timestamps, no pickle."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for i, a in enumerate(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(a, order="C"), version=(1, 0),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(f"a{i}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            info.create_system = 3   # the same bytes whichever system writes them
            zf.writestr(info, member.getvalue())
    return buf.getvalue()


class _Encoder:
    """Turns graphs into JSON-typed dicts, collecting arrays and variables."""

    def __init__(self, variables):
        self.arrays = []
        self._array_index = {}
        self._var_index = {id(v): i for i, v in enumerate(variables)}

    def graph(self, graph, depth):
        if graph.written_inputs:
            raise UnsupportedError(
                f"graph {graph.name!r} writes to its argument(s) {graph.written_inputs}; a "
                "saved graph takes its inputs by value and cannot write a caller's tensor: "
                "return the new values instead (x = f(x)) and save that function")
        index = {}
        nodes = []
        for i, node in enumerate(graph.topo_order()):
            index[node] = i
            nodes.append(self.node(node, index, depth))
        return {"name": safe_name(graph.name),
                "inputs": [index[n] for n in graph.inputs],
                "outputs": [index[n] for n in graph.outputs],
                "output_tree": self.tree(graph.output_tree, graph),
                "nodes": nodes}

    def node(self, node, index, depth):
        op = node.op
        if REGISTRY.get(op.name) is not op and op.name not in STRUCTURAL_OPS:
            why = ("it runs Python code, which a saved graph never holds"
                   if op.name in ("py_function", "print") else
                   "it is not a registry op (optimized graphs hold fused ops: save the function, "
                   "not an optimized graph)")
            raise ExportError(f"cannot save node {node.name}: op {op.name!r} cannot be "
                              f"exported: {why} (created at {format_location(node.source)})")
        entry = {"op": op.name, "name": safe_name(node.name),
                 "inputs": [index[i] for i in node.inputs],
                 "after": [index[d] for d in node.control_deps],
                 "params": {k: self.top_param(v, node, k, depth)
                            for k, v in sorted(node.params.items())}}
        if node.avals is not None:
            entry["avals"] = [aval_json(a) for a in node.avals]
        else:
            entry["aval"] = aval_json((node.shape, node.dtype))
        return entry

    def top_param(self, value, node, key, depth):
        """Arrays may only be whole param values (a constant's ``value``)."""
        if isinstance(value, np.ndarray):
            return self.array(value, node, key)
        return self.param(value, node, key, depth)

    def param(self, value, node, key, depth):
        t = type(value)
        if value is None or t is bool or t is str:
            return value
        if t is int or isinstance(value, np.integer):
            value = int(value)
            if not -INT_LIMIT <= value < INT_LIMIT:
                raise self._error(node, key, value, "the integer is out of the int64 range")
            return value
        if t is float or isinstance(value, np.floating):
            value = float(value)
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, np.bool_):
            return bool(value)
        if t is tuple or t is list:
            return [self.param(v, node, key, depth) for v in value]
        if isinstance(value, np.dtype):
            if value not in dtypes.ALL:
                raise self._error(node, key, value, "the dtype is not supported")
            return {"$dtype": value.name}
        if isinstance(value, VarRef):
            i = self._var_index.get(id(value.var))
            if i is None:
                raise self._error(node, key, value, "the variable is not among the graph's")
            return {"$var": i}
        if isinstance(value, SubGraph):
            return {"$subgraph": self.subgraph(value, depth + 1)}
        raise self._error(node, key, value, f"a {t.__name__} has no saved form")

    def array(self, value, node, key):
        if value.dtype not in dtypes.ALL:
            raise self._error(node, key, value, f"dtype {value.dtype} is not supported")
        if value.size <= INLINE_ELEMENTS or node.op.name != "constant":
            if value.size > INLINE_ELEMENTS:
                raise self._error(node, key, value, "only constants hold large arrays")
            data = [self.param(v, node, key, 0) for v in value.ravel().tolist()]
            return {"$const": {"dtype": value.dtype.name, "shape": list(value.shape),
                               "data": data}}
        i = self._array_index.get(id(value))
        if i is None:
            i = self._array_index[id(value)] = len(self.arrays)
            self.arrays.append(value)
        return {"$array": i}

    def subgraph(self, sub, depth):
        n_replay = len(sub.replay)
        outs = sub.graph.outputs
        if n_replay and [id(n) for n in outs[len(outs) - n_replay:]] != \
                [id(n) for n in sub.replay]:
            raise ExportError(f"cannot save subgraph {sub.name}: its replayed values are not "
                              "its last outputs")
        return {"name": safe_name(sub.name), "graph": self.graph(sub.graph, depth),
                "n_captures": len(sub.captures), "n_replay": n_replay}

    def tree(self, td, graph):
        if td is None:   # a graph built by hand: a flat tuple of its outputs
            return {"tuple": ["*"] * len(graph.outputs)}
        return tree_json(td)

    @staticmethod
    def _error(node, key, value, why):
        text = repr(value)
        text = text if len(text) < 80 else text[:77] + "..."
        return ExportError(f"cannot save node {node.name} (op {node.op.name!r}): param "
                           f"{key}={text}: {why} (created at {format_location(node.source)})")


def aval_json(aval):
    shape, dtype = aval
    return [[None if d is None else int(d) for d in shape], np.dtype(dtype).name]


def tree_json(td):
    """An output structure (:class:`TreeDef`) as JSON (see the module docstring)."""
    if td.kind == "leaf":
        return "*"
    if td.kind == "none":
        return None
    children = [tree_json(c) for c in td.children]
    if td.kind is tuple or is_namedtuple_type(td.kind):   # a named tuple loads as a tuple
        return {"tuple": children}
    if td.kind is list:
        return {"list": children}
    if td.kind is dict:
        keys = []
        for k in td.keys:
            if not (k is None or type(k) in (bool, int, str) or
                    (type(k) is float and math.isfinite(k))):
                raise ExportError(f"cannot save an output dict with key {k!r}: keys must be "
                                  "strings, numbers, booleans or None")
            keys.append(k)
        return {"dict": [[k, c] for k, c in zip(keys, children)]}
    raise ExportError(f"cannot save an output structure of kind {td.kind!r}")


def tree_from_json(doc, depth=0):
    """The :class:`TreeDef` for :func:`tree_json` output. Raises ValueError when malformed."""
    if depth > 64:
        raise InvalidArgumentError("the output structure is nested too deeply")
    if doc == "*":
        return LEAF
    if doc is None:
        return NONE
    if type(doc) is not dict or len(doc) != 1:
        raise InvalidArgumentError(f"bad output structure {short(doc)}")
    (kind, body), = doc.items()
    if type(body) is not list:
        raise InvalidArgumentError(f"bad output structure {short(doc)}")
    if kind in ("tuple", "list"):
        return TreeDef(tuple if kind == "tuple" else list, None,
                       tuple(tree_from_json(c, depth + 1) for c in body))
    if kind == "dict":
        keys, children = [], []
        for item in body:
            if type(item) is not list or len(item) != 2 or not (
                    item[0] is None or type(item[0]) in (bool, int, float, str)):
                raise InvalidArgumentError(f"bad dict entry {short(item)} in the output structure")
            keys.append(item[0])
            children.append(tree_from_json(item[1], depth + 1))
        if len(set(map(repr, keys))) != len(keys):
            raise InvalidArgumentError("repeated key in an output dict")
        return TreeDef(dict, tuple(keys), tuple(children))
    raise InvalidArgumentError(f"unknown output structure kind {kind!r}")


# ---- reading fields back: the rules every value in a saved file must follow (graph.export.load) ----
def short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_object(value, where, required=(), optional=()):
    """A JSON object with exactly the ``required`` keys (plus any of ``optional``;
    ``optional=None`` allows any string key)."""
    if type(value) is not dict:
        raise LoadError(f"{where} must be an object, got {short(value)}")
    if optional is None:
        return value
    missing = [k for k in required if k not in value]
    unknown = [k for k in value if k not in required and k not in optional]
    if missing or unknown:
        raise LoadError(f"{where}: missing fields {missing}, unknown fields {unknown}")
    return value


def check_list(value, where):
    if type(value) is not list:
        raise LoadError(f"{where} must be a list, got {short(value)}")
    return value


def check_arrays_file(value, where):
    if type(value) is not str or not ARRAYS_FILE_RE.match(value):
        raise LoadError(f"{where}: {short(value)} is not the plain name of an .npz beside the "
                        "JSON (letters, digits and _.- ending in .npz; no paths)")
    return value


def check_name(value, where):
    if type(value) is not str or not NAME_RE.match(value) or keyword.iskeyword(value):
        raise LoadError(f"{where}: {short(value)} is not a plain name (an identifier of at "
                        "most 128 letters, digits and _; no paths)")
    return value


def check_count(value, where):
    if type(value) is not int or not 0 <= value <= MAX_DIM:
        raise LoadError(f"{where} must be a non-negative integer, got {short(value)}")
    return value


def check_index(value, n, where):
    if type(value) is not int or not 0 <= value < n:
        raise LoadError(f"{where}: {short(value)} is not an index below {n}")
    return value


def check_earlier(value, n, where):
    if type(value) is not int:
        raise LoadError(f"{where}: {short(value)} is not a node index")
    if not 0 <= value < n:
        raise LoadError(f"{where}: node {value} is not defined before this one (inputs refer "
                        "to earlier nodes only, so a graph has no cycles)")
    return value


def check_dtype(value, where):
    if type(value) is not str or value not in DTYPES:
        raise LoadError(f"{where}: {short(value)} is not a supported dtype "
                        f"({', '.join(DTYPES)})")
    return DTYPES[value]


def check_shape(value, where, known=False):
    value = check_list(value, where)
    if len(value) > MAX_RANK:
        raise LoadError(f"{where}: rank {len(value)} is more than {MAX_RANK}")
    for d in value:
        if d is None and not known:
            continue
        if type(d) is not int or not 0 <= d <= MAX_DIM:
            raise LoadError(f"{where}: {short(d)} is not a valid dimension")
    return tuple(value)


def check_aval(value, where):
    if type(value) is not list or len(value) != 2:
        raise LoadError(f"{where} must be [shape, dtype], got {short(value)}")
    return (check_shape(value[0], f"{where} shape"), check_dtype(value[1], f"{where} dtype"))


def check_size(aval, where):
    """Bytes of an array of this type (unknown dims count as 1); at most MAX_ARRAY_BYTES."""
    shape, dtype = aval
    n = dtype.itemsize
    for d in shape:
        n *= 1 if d is None else d
        if n > MAX_ARRAY_BYTES:
            raise LoadError(f"{where}: {describe_aval(aval)} is larger than {MAX_ARRAY_BYTES} "
                            "bytes")
    return n


def decode_param(value, where, depth):
    """A JSON param value as the engine holds it (lists become tuples)."""
    t = type(value)
    if value is None or t is bool or t is str:
        if t is str and len(value) > MAX_ITEMS:
            raise LoadError(f"{where}: a string of {len(value)} characters is too long")
        return value
    if t is int:
        if not -INT_LIMIT <= value < INT_LIMIT:
            raise LoadError(f"{where}: {short(value)} is out of the int64 range")
        return value
    if t is float:
        return value
    if t is list:
        if depth >= 8 or len(value) > MAX_ITEMS:
            raise LoadError(f"{where}: a list nested too deeply or too long")
        return tuple(decode_param(v, where, depth + 1) for v in value)
    if t is dict and len(value) == 1:
        (tag, body), = value.items()
        if tag == "$dtype":
            return check_dtype(body, where)
        if tag == "$float":
            if body not in ("nan", "inf", "-inf"):
                raise LoadError(f"{where}: {short(body)} is not nan, inf or -inf")
            return float(body)
        if tag == "$const":
            return decode_inline_array(body, where)
    raise LoadError(f"{where}: {short(value)} is not a param value")


def decode_inline_array(body, where):
    body = check_object(body, where, ("dtype", "shape", "data"))
    dtype = check_dtype(body["dtype"], f"{where} dtype")
    shape = check_shape(body["shape"], f"{where} shape", known=True)
    data = check_list(body["data"], f"{where} data")
    size = 1
    for d in shape:
        size *= d
        if size > MAX_ITEMS:
            raise LoadError(f"{where}: an inline array of more than {MAX_ITEMS} elements")
    if len(data) != size:
        raise LoadError(f"{where}: {len(data)} values for shape {list(shape)}")
    values = [decode_param(v, where, 8) for v in data]
    kind = {"b": (bool,), "i": (int,), "f": (int, float)}[dtype.kind]
    if any(type(v) not in kind for v in values):
        raise LoadError(f"{where}: the values do not fit dtype {dtype.name}")
    try:
        with np.errstate(all="ignore"):
            array = np.array(values, dtype=dtype).reshape(shape)
    except (OverflowError, ValueError) as err:
        raise LoadError(f"{where}: {err}") from None
    array.flags.writeable = False
    return array


def norm_aval(aval):
    if len(aval) == 2 and isinstance(aval[1], np.dtype):
        return (tuple(aval[0]), aval[1])
    return tuple(norm_aval(a) for a in aval)


def describe_avals(aval):
    if len(aval) == 2 and isinstance(aval[1], np.dtype):
        return describe_aval(aval)
    return "(" + ", ".join(describe_avals(a) for a in aval) + ")"
