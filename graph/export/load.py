"""Loading a saved graph (see :mod:`graph.export.native`) with the engine alone.

Loading never runs code from the file: no pickle, ``eval``, ``exec`` or
imports named by it. Op names resolve only through ``engine.op.REGISTRY``
and the structural ops a saved graph may hold. Everything is checked before
any array is read: the format and version, every op name, its number of
inputs, its params (types, keys, and the op's own shape rule run on the
declared input types), shapes and dtypes (supported dtypes, no negative
dims, at most ``MAX_ARRAY_BYTES`` an array and ``MAX_TOTAL_BYTES`` in all),
that inputs refer only to earlier nodes (so the graph is a DAG), and the
structure of ``cond``/``while_loop``/``scan`` bodies. Then the arrays are read
(:mod:`graph.export.load_arrays`: stored members only, no pickle), each checked
against its declared shape, dtype and byte count. Any problem raises
:class:`engine.errors.LoadError`.

Cost follows the file's size, whatever the file holds: only regular files are
opened (a FIFO would block forever), only the bytes a file has are read, a
graph of more than ``MAX_NODES`` nodes is refused before any is built, names
repeated in the file cost no more than distinct ones, and the constant
folding the optimizer does at load is bounded (``en.config.fold_work_limit``).

The graph is then re-optimized with the default passes and compiled.
Variables become fresh ``en.Variable``\\ s holding the saved values.

Example:
    >>> import engine as en, tempfile, os
    >>> w = en.Variable([[1.0], [2.0]], name="w")
    >>> f = en.function(lambda x: x @ w)
    >>> path = os.path.join(tempfile.mkdtemp(), "f.json")
    >>> en.save(f, path, en.ones((1, 2)))
    >>> g = en.load(path)
    >>> [v.name for v in g.variables], g(en.ones((1, 2))).numpy().tolist()
    (['w'], [[3.0]])
"""
import inspect
import json
import math
import os

import numpy as np

from engine.errors import ArgumentTypeError, BackendError, InvalidArgumentError, LoadError
from engine import backend as backends
from engine.backend import NUMPY
from engine.files import open_regular
from engine.modes import current_mode
from engine.op import REGISTRY
from engine.pytree import unflatten
from engine.tensor import Tensor
from engine.variable import Variable

from ..jit.concrete import ConcreteFunction
from .native import (FORMAT, LABEL_RE, MAX_DEPTH, MAX_ITEMS, MAX_JSON_BYTES,
                     MAX_NODES, MAX_TOTAL_BYTES, READ_VERSIONS, STRUCTURAL_OPS, VERSION,
                     check_arrays_file, check_aval, check_count, check_dtype, check_earlier,
                     check_index, check_list, check_name, check_object, check_shape,
                     check_size, decode_param, describe_avals, norm_aval, paths_for, short,
                     tree_from_json)
from ..jit.function import Function, named_function
from ..ir.graph_ops import (STRUCTURAL, VarRef, assign_variable_op, constant_op, placeholder_op,
                        read_variable_op, unpack_op)
from ..control.interpret import interpret
from .load_arrays import read_arrays
from .reference import VerificationError, refuse, verify
from ..ir.graph import Graph, Node
from ..ir.signature import TensorSpec
from ..control.subgraph import SubGraph

_ASSIGN_KINDS = ("assign", "assign_add", "assign_sub", "scatter_update")


def load(path, backend=None, verify=False):
    """Load a function saved by ``en.save``: a :class:`LoadedFunction`.

    Call it with tensors (or arrays) matching the saved inputs, in order;
    ``.variables`` holds fresh variables with the saved values. ``backend`` (a
    name or a Backend; numpy by default) is the back end it runs on: its variables
    hold that back end's arrays and it takes that back end's tensors. Raises
    :class:`LoadError` for a malformed or unsafe file. ``verify=True`` runs the
    reference inputs stored by ``en.save(..., reference=True)`` and raises
    :class:`VerificationError` when the outputs differ beyond the stored tolerance
    here (a file saved without a reference is refused too); ``f.verify()`` checks later.

    Example:
        >>> import os, tempfile
        >>> import engine as en
        >>> path = os.path.join(tempfile.mkdtemp(), "double")
        >>> en.save(lambda x: x * 2.0, path, en.ones(2))
        >>> f = en.load(path, backend="array_api_strict")
        >>> f(en.tensor([1.0, 2.0], backend="array_api_strict")).backend.name
        'array_api_strict'
    """
    target = backends.get(backend) if backend is not None else NUMPY
    json_path, legacy_npz = paths_for(path)
    try:
        for attempt in range(_ATTEMPTS):
            data, doc = _read_json(json_path)
            _check_node_count(doc)
            reader = _Reader()
            reader.read(doc)
            name = reader.arrays_file
            npz_path = legacy_npz if name is None else \
                os.path.join(os.path.dirname(json_path), name)
            try:
                f = open_regular(npz_path)
            except FileNotFoundError as err:
                # A save that replaced the JSON since it was read removes the .npz the
                # old JSON named: read the new one. A later save of the same function
                # may have put the same JSON and .npz back meanwhile (the bytes match,
                # the file is there again): read again too.
                if attempt + 1 < _ATTEMPTS and (_replaced(json_path, data) or
                                                os.path.exists(npz_path)):
                    continue
                raise LoadError(f"cannot read {npz_path}: {err}") from None
            except OSError as err:
                raise LoadError(f"cannot read {npz_path}: {err}") from None
            with f:
                arrays = read_arrays(f, os.fstat(f.fileno()).st_size, reader.array_avals,
                                     npz_path)
            f = reader.finish(arrays, target)
            if verify:
                _verify_on_load(f, json_path)
            return f
    except LoadError:
        raise
    except (RecursionError, MemoryError) as err:
        raise LoadError(f"cannot load {path}: the file is too large or nested too deeply "
                        f"({type(err).__name__})") from None
    except Exception as err:   # a check missed something: still a malformed file
        raise LoadError(f"cannot load {path}: {type(err).__name__}: {err}") from err


_ATTEMPTS = 8   # reads of a JSON that concurrent saves keep replacing


def _verify_on_load(f, json_path):
    if f.reference is None:
        raise VerificationError(f"en.load(verify=True): {json_path} holds no reference outputs; "
                                "save it with en.save(fn, path, *example_args, reference=True)")
    report = f.verify()
    if not report.ok:
        raise refuse(f.name, report)


# ---- reading the files --------------------------------------------------------------------------
def _replaced(path, data):
    try:
        return _read_json(path)[0] != data
    except LoadError:
        return False


def _read_json(path):
    """``(bytes, parsed document)`` of the JSON at ``path``."""
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_JSON_BYTES:
                raise LoadError(f"{path}: {size} bytes, more than the {MAX_JSON_BYTES} a saved "
                                "graph may have")
            # Only what the file holds (one byte more tells a file that grew meanwhile).
            data = f.read(size + 1)
    except OSError as err:
        raise LoadError(f"cannot read {path}: {err}") from None
    if len(data) > MAX_JSON_BYTES:
        raise LoadError(f"{path}: more than the {MAX_JSON_BYTES} bytes a saved graph may have")
    try:
        text = data.decode("utf-8")
        return data, json.loads(text, object_pairs_hook=_no_duplicates,
                                parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as err:
        raise LoadError(f"{path} is not valid JSON: {err}") from None
    except RecursionError:
        raise LoadError(f"{path}: the JSON is nested too deeply") from None


def _check_node_count(doc):
    """Refuse a file of more than ``MAX_NODES`` nodes (bodies included) before building any:
    a quick walk over the parsed document that skips whatever is malformed (the full
    checks report that)."""
    graphs, count = [doc.get("graph") if type(doc) is dict else None], 0
    while graphs:
        g = graphs.pop()
        nodes = g.get("nodes") if type(g) is dict else None
        if type(nodes) is not list:
            continue
        count += len(nodes)
        if count > MAX_NODES:
            raise LoadError(f"the graph has more than {MAX_NODES} nodes (counting its "
                            "control-flow bodies): refused before building any")
        for nd in nodes:
            params = nd.get("params") if type(nd) is dict else None
            for value in params.values() if type(params) is dict else ():
                if type(value) is dict and type(value.get("$subgraph")) is dict:
                    graphs.append(value["$subgraph"].get("graph"))


def _no_duplicates(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        raise InvalidArgumentError("repeated key in an object")
    return out


def _no_constant(name):
    raise InvalidArgumentError(f"{name} is not allowed (non-finite floats are written as {{'$float': ...}})")


# ---- checking and rebuilding the graph ----------------------------------------------------------
class _Pending:
    """An array not read yet: the constant's value once the ``.npz`` is read."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class _VarStandIn:
    """A variable's name, shape and dtype, before its value is read."""

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, shape, dtype


class _Reader:
    """Checks a JSON document and builds its graphs (arrays and variables pending)."""

    def __init__(self):
        self.n_nodes = 0
        self.pending = []       # (node, index into the array table)
        self.subgraphs = []

    # -- the document ----------------------------------------------------------------
    def read(self, doc):
        doc = check_object(doc, "the file",
                           ("format", "version", "name", "arrays", "variables", "graph"),
                           ("arrays_file", "reference"))
        if doc["format"] != FORMAT:
            raise LoadError(f"not a saved graph: format is {short(doc['format'])}, expected "
                            f"{FORMAT!r}")
        version = doc["version"]
        if type(version) is not int:
            raise LoadError(f"the format version must be an integer, got {short(version)}")
        if version not in READ_VERSIONS:
            newer = " (written by a newer version of the engine)" if version > VERSION else ""
            raise LoadError(f"format version {version} is not supported{newer}; this engine "
                            f"reads versions {', '.join(map(str, READ_VERSIONS))}")
        if (version >= 2) != ("arrays_file" in doc):
            raise LoadError("arrays_file (the .npz's name) is required from format version 2 "
                            f"on, and unknown before; the file is version {version}")
        self.arrays_file = (check_arrays_file(doc["arrays_file"], "arrays_file")
                            if version >= 2 else None)
        self.name = check_name(doc["name"], "the function name")
        self.array_avals = self._array_table(doc["arrays"])
        self.var_specs, self.var_refs = self._variable_table(doc["variables"])
        self.graph = self._graph(doc["graph"], 0, "graph", n_replay=0)
        self.reference = None if "reference" not in doc else self._reference(doc["reference"])

    def _reference(self, desc):
        """``(input indices, output indices, rtol, atol)`` of a ``reference`` field, whose
        arrays are none of the graph's or the variables'."""
        desc = check_object(desc, "reference", ("inputs", "outputs", "rtol", "atol"))
        n = len(self.array_avals)
        ins, outs = ([check_index(i, n, f"reference.{key}")
                      for i in check_list(desc[key], f"reference.{key}")]
                     for key in ("inputs", "outputs"))
        taken = {index for _, index in self.pending} | {index for _, _, index in self.var_specs}
        if len(set(ins + outs)) != len(ins + outs) or set(ins + outs) & taken:
            raise LoadError("reference: an array is listed twice, or is the graph's or a "
                            "variable's")
        if len(ins) != len(self.graph.inputs):
            raise LoadError(f"reference: {len(ins)} inputs for a graph of "
                            f"{len(self.graph.inputs)}")
        tol = []
        for key in ("rtol", "atol"):
            value = desc[key]
            if type(value) not in (int, float) or not (math.isfinite(value) and value >= 0):
                raise LoadError(f"reference.{key} must be a finite number >= 0, got "
                                f"{short(value)}")
            tol.append(float(value))
        return ins, outs, tol[0], tol[1]

    def _array_table(self, table):
        table = check_list(table, "arrays")
        avals, total = [], 0
        for i, entry in enumerate(table):
            entry = check_object(entry, f"arrays[{i}]", ("dtype", "shape"))
            aval = (check_shape(entry["shape"], f"arrays[{i}].shape", known=True),
                    check_dtype(entry["dtype"], f"arrays[{i}].dtype"))
            total += check_size(aval, f"arrays[{i}]")
            if total > MAX_TOTAL_BYTES:
                raise LoadError(f"the arrays add up to more than {MAX_TOTAL_BYTES} bytes")
            avals.append(aval)
        return avals

    def _variable_table(self, table):
        table = check_list(table, "variables")
        specs, refs, used = [], [], set()
        for i, entry in enumerate(table):
            where = f"variables[{i}]"
            entry = check_object(entry, where, ("name", "trainable", "shape", "dtype", "array"))
            label = entry["name"]
            if type(label) is not str or not LABEL_RE.match(label) or ".." in label:
                raise LoadError(f"{where}.name: {short(label)} is not a plain name (letters, "
                                "digits and _:.- only, no paths)")
            if type(entry["trainable"]) is not bool:
                raise LoadError(f"{where}.trainable must be true or false")
            index = check_index(entry["array"], len(self.array_avals), f"{where}.array")
            if index in used:
                raise LoadError(f"{where}.array: array {index} is already another variable's")
            used.add(index)
            aval = (check_shape(entry["shape"], f"{where}.shape", known=True),
                    check_dtype(entry["dtype"], f"{where}.dtype"))
            if norm_aval(aval) != norm_aval(self.array_avals[index]):
                raise LoadError(f"{where}: declared {describe_avals(aval)} but its array is "
                                f"{describe_avals(self.array_avals[index])}")
            specs.append((label, entry["trainable"], index))
            refs.append(VarRef(_VarStandIn(label, *self.array_avals[index])))
        return specs, refs

    # -- graphs ----------------------------------------------------------------------
    def _graph(self, desc, depth, where, n_replay):
        desc = check_object(desc, where, ("name", "inputs", "outputs", "output_tree", "nodes"))
        graph = Graph(check_name(desc["name"], f"{where}.name"))
        nodes: list[Node] = []
        suffixes: dict[str, int] = {}    # base name -> the next suffix to try
        for i, nd in enumerate(check_list(desc["nodes"], f"{where}.nodes")):
            self.n_nodes += 1
            if self.n_nodes > MAX_NODES:
                raise LoadError(f"more than {MAX_NODES} nodes")
            nodes.append(self._node(graph, nd, nodes, depth, f"{where} node {i}", suffixes))
        inputs = [check_index(j, len(nodes), f"{where}.inputs")
                  for j in check_list(desc["inputs"], f"{where}.inputs")]
        if len(set(inputs)) != len(inputs):
            raise LoadError(f"{where}.inputs: an input is listed twice")
        graph.inputs = [nodes[j] for j in inputs]
        for node in graph.inputs:
            if node.op is not placeholder_op:
                raise LoadError(f"{where}.inputs: {node.name} is a {node.op.name}, not a "
                                "placeholder")
        listed = set(graph.inputs)
        for node in nodes:
            if node.op is placeholder_op and node not in listed:
                raise LoadError(f"{where}: placeholder {node.name} is not among the inputs")
        outputs = [check_index(j, len(nodes), f"{where}.outputs")
                   for j in check_list(desc["outputs"], f"{where}.outputs")]
        graph.outputs = [nodes[j] for j in outputs]
        for node in graph.outputs:
            if node.avals is not None:
                raise LoadError(f"{where}.outputs: {node.name} has several results; outputs "
                                "are single values (unpack nodes)")
        if n_replay > len(graph.outputs):
            raise LoadError(f"{where}: {n_replay} replayed values but only "
                            f"{len(graph.outputs)} outputs")
        try:
            graph.output_tree = tree_from_json(desc["output_tree"])
        except ValueError as err:
            raise LoadError(f"{where}.output_tree: {err}") from None
        if graph.output_tree.num_leaves != len(graph.outputs) - n_replay:
            raise LoadError(f"{where}.output_tree has {graph.output_tree.num_leaves} leaves for "
                            f"{len(graph.outputs) - n_replay} outputs")
        return graph

    def _node(self, graph, nd, nodes, depth, where, suffixes):
        nd = check_object(nd, where, ("op", "name", "inputs", "after", "params"),
                          optional=("aval", "avals"))
        op_name = nd["op"]
        op = _op(op_name, where)
        where = f"{where} ({op.name})"
        name = check_name(nd["name"], f"{where} name")
        inputs = [nodes[check_earlier(j, len(nodes), f"{where} input")]
                  for j in check_list(nd["inputs"], f"{where} inputs")]
        after = [nodes[check_earlier(j, len(nodes), f"{where} control dependency")]
                 for j in check_list(nd["after"], f"{where} after")]
        if op.n_inputs is not None and len(inputs) != op.n_inputs:
            raise LoadError(f"{where}: {len(inputs)} inputs, the op takes {op.n_inputs}")
        for inp in inputs:
            if (inp.avals is not None) != (op is unpack_op):
                raise LoadError(f"{where}: input {inp.name} " + (
                    "has several results: only unpack takes those" if inp.avals is not None
                    else "has one result: unpack takes a node with several"))
        declared = self._declared(nd, op, where)
        params = self._params(nd["params"], op, depth, where)
        if op is assign_variable_op:
            arity = 2 if params["kind"] == "scatter_update" else 1   # value (, indices)
            if len(inputs) != arity:
                raise LoadError(f"{where}: {len(inputs)} inputs, kind {params['kind']!r} "
                                f"takes {arity}")
        aval = self._aval(op, [i.aval for i in inputs], params, declared, where)
        node = graph.add(op, inputs, params, aval, name=_free_name(graph, name, suffixes))
        for dep in after:
            graph.add_control_dep(node, dep)
        if op is constant_op and isinstance(params["value"], _Pending):
            self.pending.append((node, params["value"].index))
        return node

    def _declared(self, nd, op, where):
        if op.multiple_results:
            if "avals" not in nd or "aval" in nd:
                raise LoadError(f"{where}: a multiple-result op needs 'avals' (and no 'aval')")
            avals = check_list(nd["avals"], f"{where} avals")
            if len(avals) > MAX_ITEMS:
                raise LoadError(f"{where}: more than {MAX_ITEMS} results")
            return tuple(check_aval(a, f"{where} avals[{k}]") for k, a in enumerate(avals))
        if "aval" not in nd or "avals" in nd:
            raise LoadError(f"{where}: needs 'aval' (and no 'avals')")
        return check_aval(nd["aval"], f"{where} aval")

    def _aval(self, op, in_avals, params, declared, where):
        """The node's result type by its op's rule, which must equal the declared one."""
        if op is placeholder_op:
            got = declared
        elif op is constant_op:
            value = params["value"]
            got = (self.array_avals[value.index] if isinstance(value, _Pending)
                   else (value.shape, value.dtype))
        else:
            check = op.rules.get("load_check")   # bounds and structure the rule relies on
            if check is not None:
                check(in_avals, params, declared, where)
            try:
                got = op.abstract_eval(*in_avals, **params)
            except Exception as err:
                raise LoadError(f"{where}: the params or input types do not fit the op: "
                                f"{type(err).__name__}: {err}") from None
        if norm_aval(got) != norm_aval(declared):
            raise LoadError(f"{where}: declared type {describe_avals(declared)}, but the op gives "
                            f"{describe_avals(got)}")
        for a in (declared if op.multiple_results else (declared,)):
            check_size(a, where)
        return got

    # -- params ----------------------------------------------------------------------
    def _params(self, raw, op, depth, where):
        raw = check_object(raw, f"{where} params", optional=None)
        required, optional = _param_keys(op)
        missing = [k for k in required if k not in raw]
        unknown = [k for k in raw if k not in required and (optional is not None and
                                                            k not in optional)]
        if missing or unknown:
            raise LoadError(f"{where}: params {sorted(raw)} do not fit the op (missing "
                            f"{missing}, unknown {unknown})")
        params = {}
        for key, value in raw.items():
            # Keys become keyword arguments in generated code: identifiers only.
            check_name(key, f"{where}: param name")
            params[key] = self._top_param(value, op, key, depth, f"{where} param {key!r}")
        if op is assign_variable_op and params.get("kind") not in _ASSIGN_KINDS:
            raise LoadError(f"{where}: kind must be one of {_ASSIGN_KINDS}")
        if op in (read_variable_op, assign_variable_op) and not isinstance(params["var"], VarRef):
            raise LoadError(f"{where}: var must be a variable ({{'$var': index}})")
        if op is constant_op and not isinstance(params["value"], (_Pending, np.ndarray)):
            raise LoadError(f"{where}: value must be an array")
        if op is unpack_op and type(params["index"]) is not int:
            raise LoadError(f"{where}: index must be an integer")
        return params

    def _top_param(self, value, op, key, depth, where):
        if type(value) is dict and set(value) == {"$array"}:
            if op is not constant_op:
                raise LoadError(f"{where}: only constants refer to stored arrays")
            return _Pending(check_index(value["$array"], len(self.array_avals), where))
        if type(value) is dict and set(value) == {"$subgraph"}:
            if op.name not in ("cond", "while_loop", "scan"):
                raise LoadError(f"{where}: only cond, while_loop and scan have bodies")
            return self._subgraph(value["$subgraph"], depth + 1, where)
        if type(value) is dict and set(value) == {"$var"}:
            return self.var_refs[check_index(value["$var"], len(self.var_refs), where)]
        return decode_param(value, where, 0)

    def _subgraph(self, desc, depth, where):
        if depth > MAX_DEPTH:
            raise LoadError(f"{where}: control flow nested more than {MAX_DEPTH} deep")
        desc = check_object(desc, where, ("name", "graph", "n_captures", "n_replay"))
        name = check_name(desc["name"], f"{where} name")
        n_replay = check_count(desc["n_replay"], f"{where} n_replay")
        graph = self._graph(desc["graph"], depth, f"{where} body {name}", n_replay)
        n_captures = check_count(desc["n_captures"], f"{where} n_captures")
        if n_captures > len(graph.inputs):
            raise LoadError(f"{where}: {n_captures} captures but {len(graph.inputs)} inputs")
        sub = SubGraph.__new__(SubGraph)   # a traced body, rebuilt without tracing
        sub.name = name
        sub.graph = graph
        # Only the number of captured values matters once traced: the values
        # themselves arrive as the control-flow node's inputs.
        sub.captures = [None] * n_captures
        outs = graph.outputs
        sub.replay = list(outs[len(outs) - n_replay:])
        sub.out_avals = tuple((o.shape, o.dtype) for o in outs[:len(outs) - n_replay])
        sub.out_tree = graph.output_tree
        sub.has_side_effects = any(n.side_effects for n in graph.nodes)
        sub._compiled = None
        self.subgraphs.append(sub)
        self._set_variables(sub)
        return sub

    @staticmethod
    def _set_variables(sub):
        variables: list[Variable] = []
        assigned: list[Variable] = []
        for node in sub.graph.topo_order():
            nested = [p for p in node.params.values() if isinstance(p, SubGraph)]
            direct = node.op in (read_variable_op, assign_variable_op)
            for v in [node.params["var"].var] if direct else \
                    [v for s in nested for v in s.variables]:
                if not any(v is u for u in variables):
                    variables.append(v)
            if node.op is assign_variable_op:
                assigned.append(node.params["var"].var)
        sub.variables, sub.assigned = variables, assigned
        sub.graph.variables = list(variables)

    # -- finishing ---------------------------------------------------------------------
    def finish(self, arrays, backend=None):
        """Put the arrays in place, make the variables (on ``backend``, numpy by
        default), and compile: a LoadedFunction."""
        backend = backend or NUMPY
        for node, index in self.pending:
            node.params["value"] = arrays[index]
        variables = [Variable(arrays[index] if backend.numpy_arrays
                              else backend.from_numpy(arrays[index]),
                              name=label, trainable=trainable)
                     for label, trainable, index in self.var_specs]
        for ref, var in zip(self.var_refs, variables):
            ref.var = var
        for sub in self.subgraphs:   # inner bodies first: they were read first
            self._set_variables(sub)
        self.graph.variables = variables
        try:
            f = LoadedFunction(self.graph, self.name, variables, backend)
        except Exception as err:
            raise LoadError(f"the graph {self.name} cannot be compiled: "
                            f"{type(err).__name__}: {err}") from err
        if self.reference is not None:
            ins, outs, rtol, atol = self.reference
            f.reference = ([arrays[i] for i in ins], [arrays[i] for i in outs], rtol, atol)
        return f


def _free_name(graph, name, suffixes):
    """``name``, or the first of ``name_1``, ``name_2``, ... not taken in ``graph`` (what
    ``Graph.add`` would pick), found from where the last search for ``name`` stopped: a
    file repeating one name n times costs O(n), not O(n**2)."""
    if name not in graph.names:
        return name
    i = suffixes.get(name, 1)
    while f"{name}_{i}" in graph.names:
        i += 1
    suffixes[name] = i + 1
    return f"{name}_{i}"


_KEYS: dict[object, tuple[tuple[str, ...], tuple[str, ...] | None]] = {}


def _op(name, where):
    if type(name) is not str:
        raise LoadError(f"{where}: op {short(name)} is not an op name")
    if name in STRUCTURAL_OPS:
        return STRUCTURAL[name]
    op = REGISTRY.get(name)
    if op is None:
        raise LoadError(f"{where}: unknown op {short(name)}")
    if op.abstract_eval is None:
        raise LoadError(f"{where}: op {name!r} has no shape rule, so it cannot be checked")
    return op


def _param_keys(op):
    """``(required, allowed or None)`` param names, from the op's shape rule and kernel."""
    if op in _KEYS:
        return _KEYS[op]
    required, allowed, open_ = set(), set(), False
    for fn in (op.abstract_eval, op.impl):
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):   # a numpy ufunc: no keyword params
            continue
        for p in sig.parameters.values():
            if p.kind is p.KEYWORD_ONLY:
                allowed.add(p.name)
                if p.default is p.empty:
                    required.add(p.name)
            elif p.kind is p.VAR_KEYWORD and fn is op.abstract_eval:
                open_ = True
    if open_ and op.impl is not None:
        open_ = False   # the kernel's keywords say which params are meant
    _KEYS[op] = (tuple(sorted(required)), None if open_ else tuple(sorted(allowed)))
    return _KEYS[op]


# ---- the loaded function ------------------------------------------------------------------------
class _LoadedConcrete(ConcreteFunction):
    """A ConcreteFunction whose graph comes from a file instead of a trace."""

    def __init__(self, graph, name, specs, body, backend=NUMPY):
        self._loaded_graph = graph
        graph.backend = backend
        key = ("input_signature",) if backend.numpy_arrays else ("input_signature", backend.name)
        super().__init__(body, name, key, None, None, specs=specs,
                         compile_function=named_function, backend=backend)

    def _trace(self, graph):
        return self._loaded_graph


class LoadedFunction(Function):
    """A saved function, loaded: call it with tensors matching ``input_signature``.

    ``variables`` are fresh variables holding the saved values (assign to
    them, or train them: gradients flow through calls under a tape as for any
    ``en.function``). ``graph`` is the optimized graph that runs,
    ``unoptimized_graph`` the one read from the file.
    """

    def __init__(self, graph, name, variables, backend=NUMPY):
        specs = tuple(TensorSpec(n.shape, n.dtype, name=n.name) for n in graph.inputs)
        super().__init__(_python_body(graph, name), input_signature=specs, name=name)
        self.variables = list(variables)
        self.backend = backend
        self.concrete = _LoadedConcrete(graph, name, specs, self.python_function, backend)
        # (inputs, outputs, rtol, atol) stored by en.save(..., reference=True), else None.
        self.reference = None

    def verify(self):
        """Run the stored reference inputs; a :class:`VerificationReport` (``.ok``, the
        largest difference and where). Raises :class:`VerificationError` when the file
        holds no reference."""
        if self.reference is None:
            raise VerificationError(f"{self.name}: saved without reference outputs "
                                    "(en.save(..., reference=True))")
        inputs, outputs, rtol, atol = self.reference
        return verify(self, [Tensor(self.backend.from_numpy(a)) for a in inputs], outputs, rtol,
                      atol)

    def _trace(self, key, tensors, leaves, treedef, specs=None, call=None, budgeted=False):
        if key != self.concrete.key:   # ("input_signature"[, back end]): another back end
            given = key[1] if len(key) > 1 else "numpy"
            raise BackendError(f"{self.name}: this loaded graph runs on {self.backend.name} "
                               f"(en.load(path, backend=...)), got tensors on back end "
                               f"{given}; move them with t.to({self.backend.name!r}) or load "
                               "it for that back end")
        self._cache[key] = self.concrete
        return self.concrete

    @property
    def graph(self):
        return self.concrete.graph

    @property
    def unoptimized_graph(self):
        return self.concrete.unoptimized_graph

    @property
    def source(self):
        return self.concrete.source

    def __repr__(self):
        ins = ", ".join(f"{s.dtype}{list(s.shape)}" for s in self.input_signature)
        return (f"<en.load {self.name}({ins}): {self.graph.node_count()} nodes, "
                f"{len(self.variables)} variables>")


def _python_body(graph, name):
    """The graph run op by op through ``apply`` (for run_functions_eagerly and for a call
    inside another traced function, which inlines it)."""
    def body(*args):
        if len(args) != len(graph.inputs):
            raise ArgumentTypeError(f"{name} takes {len(graph.inputs)} arguments, got {len(args)}")
        outs = interpret(graph, current_mode().lift(list(args)))
        return unflatten(graph.output_tree, outs)
    body.__name__ = name
    return body


