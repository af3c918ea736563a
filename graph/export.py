"""Saving a traced function: a versioned JSON graph plus its arrays in an ``.npz``.

``en.save(fn, path, *example_args)`` traces ``fn`` (or uses its
``input_signature`` when no arguments are given) and writes the
*unoptimized* graph, so only registry ops and the structural ops
(placeholder, constant, read_variable, assign_variable, unpack, cond,
while_loop, scan) appear; :func:`graph.load.load` re-optimizes. Two layouts:

* ``path`` ending in ``.json``: ``path`` and the same name ending in ``.npz``;
* any other ``path``: a directory holding ``graph.json`` and ``arrays.npz``.

The JSON side (keys sorted, so saving twice gives the same bytes) holds::

    {"format": "dualmode-engine.graph", "version": 1, "name": "mlp",
     "arrays": [{"dtype": "float32", "shape": [3, 4]}, ...],     # npz members a0, a1, ...
     "variables": [{"name": "w", "trainable": true, "array": 0}, ...],
     "graph": {"name": "mlp", "inputs": [0], "outputs": [7], "output_tree": "*",
               "nodes": [{"op": "placeholder", "name": "x0", "inputs": [], "after": [],
                          "params": {}, "aval": [[null, 3], "float32"]}, ...]}}

Nodes refer to their inputs (and ``after``: the control dependencies that
order side effects) by index, always to earlier nodes. Params are JSON
values; tuples become lists, and the few other kinds are tagged objects:
``{"$dtype": "float32"}``, ``{"$float": "nan"}``, ``{"$array": 3}`` (an npz
member), ``{"$const": {"dtype", "shape", "data"}}`` (a small array inline),
``{"$var": 0}`` (a variable) and ``{"$subgraph": {...}}`` (a body of
cond/while_loop/scan, with its own ``graph``). Output structures are ``"*"``
(a leaf), ``null`` (None), ``{"tuple": [...]}``, ``{"list": [...]}`` or
``{"dict": [[key, child], ...]}``.

The ``.npz`` is written without pickle, with fixed zip timestamps, so the
bytes depend on the graph and the values only.

Example:
    >>> import engine as en, tempfile, os
    >>> f = en.function(lambda x: en.tanh(x) * 2.0)
    >>> d = tempfile.mkdtemp()
    >>> en.save(f, os.path.join(d, "model"), en.tensor([0.5, 1.0]))
    >>> g = en.load(os.path.join(d, "model"))
    >>> g(en.tensor([0.5, 1.0])).numpy().round(4).tolist()
    [0.9242, 1.5232]
"""
import io
import json
import keyword
import math
import os
import re
import zipfile

import numpy as np

from engine import dtypes
from engine.errors import EngineError, format_location
from engine.pytree import TreeDef
from engine.tensor import Tensor

from .graph_ops import VarRef

FORMAT = "dualmode-engine.graph"
VERSION = 1
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
INT_LIMIT = 1 << 63


def paths_for(path):
    """``(json path, npz path)`` for a save location (see the module docstring)."""
    path = os.fspath(path)
    if path.endswith(".json"):
        return path, path[:-len(".json")] + ".npz"
    return os.path.join(path, GRAPH_FILE), os.path.join(path, ARRAYS_FILE)


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
def save(fn, path, *example_args):
    """Save the graph that ``fn`` traces for ``example_args`` (or its ``input_signature``).

    ``fn`` is an ``en.function``, a plain Python function (traced here) or a
    ``ConcreteFunction``. Variables the function uses are saved with their
    current values. Saving the same function twice writes the same bytes.
    ``en.load(path)`` gives a callable back; see the module docstring for the
    layout. Raises :class:`ExportError` for ops that run Python
    (``py_function``, ``print``).
    """
    concrete = concrete_function_for(fn, example_args, "en.save")
    doc, arrays = describe(concrete)
    json_path, npz_path = paths_for(path)
    folder = os.path.dirname(json_path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    _write_atomically(npz_path, npz_bytes(arrays))
    _write_atomically(json_path, json_bytes(doc))


def concrete_function_for(fn, example_args, what):
    """The ConcreteFunction to save or export for ``fn`` and its example arguments."""
    from .concrete import ConcreteFunction
    from .function import Function
    if isinstance(fn, ConcreteFunction):
        return fn
    if not isinstance(fn, Function):
        if not callable(fn):
            raise TypeError(f"{what}: expected an en.function or a Python function, got "
                            f"{type(fn).__name__}")
        from .function import function
        fn = function(fn)
    if example_args:
        return fn.get_concrete_function(*example_args)
    if fn.input_signature is None:
        raise EngineError(f"{what}: give example arguments (as for a call) or create the "
                          f"function with an input_signature, so that it can be traced")
    # Any tensors matching the signature select its one trace (unknown dims stay unknown).
    dummies = [Tensor(np.zeros(tuple(1 if d is None else d for d in s.shape), s.dtype))
               for s in fn.input_signature]
    return fn.get_concrete_function(*dummies)


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
                          "array": len(enc.arrays) + i} for i, v in enumerate(graph.variables)],
           "graph": gdoc}
    return doc, arrays


def json_bytes(doc):
    """The JSON document as bytes, keys sorted (deterministic)."""
    return (json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False)
            + "\n").encode("ascii")


def npz_bytes(arrays):
    """An ``.npz`` (members ``a0.npy``, ``a1.npy``, ...) with fixed timestamps, no pickle."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for i, a in enumerate(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(a), version=(1, 0),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(f"a{i}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            info.create_system = 3   # the same bytes whichever system writes them
            zf.writestr(info, member.getvalue())
    return buf.getvalue()


def _write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class _Encoder:
    """Turns graphs into JSON-typed dicts, collecting arrays and variables."""

    def __init__(self, variables):
        self.arrays = []
        self._array_index = {}
        self._var_index = {id(v): i for i, v in enumerate(variables)}

    def graph(self, graph, depth):
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
        from engine.op import REGISTRY
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
        from .subgraph import SubGraph
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
    if td.kind is tuple:
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
    from engine.pytree import LEAF, NONE
    if depth > 64:
        raise ValueError("the output structure is nested too deeply")
    if doc == "*":
        return LEAF
    if doc is None:
        return NONE
    if type(doc) is not dict or len(doc) != 1:
        raise ValueError(f"bad output structure {_short(doc)}")
    (kind, body), = doc.items()
    if type(body) is not list:
        raise ValueError(f"bad output structure {_short(doc)}")
    if kind in ("tuple", "list"):
        return TreeDef(tuple if kind == "tuple" else list, None,
                       tuple(tree_from_json(c, depth + 1) for c in body))
    if kind == "dict":
        keys, children = [], []
        for item in body:
            if type(item) is not list or len(item) != 2 or not (
                    item[0] is None or type(item[0]) in (bool, int, float, str)):
                raise ValueError(f"bad dict entry {_short(item)} in the output structure")
            keys.append(item[0])
            children.append(tree_from_json(item[1], depth + 1))
        if len(set(map(repr, keys))) != len(keys):
            raise ValueError("repeated key in an output dict")
        return TreeDef(dict, tuple(keys), tuple(children))
    raise ValueError(f"unknown output structure kind {kind!r}")


def _short(value):
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


