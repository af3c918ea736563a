"""``Report.write_repro``: the smallest subgraph that still diverges, as a script.

Around the first diverging traced node the candidates grow one producer level at a
time: the node alone (or the fused region it belongs to), then with the nodes feeding
it, and so on up to everything it depends on. Each candidate is rebuilt as a Python
function of the engine's ops, its outside inputs taking eager's values, and compared
again (same passes, same ``en.config.lowering``); the first that still diverges is
written as a standalone script with its inputs saved beside it (``np.save``).
"""
import os

import numpy as np

from engine.config import config
from engine.errors import UnsupportedError
from engine.modes import apply
from engine.tensor import wrap

from ...ir.graph_ops import constant_op, placeholder_op, unpack_op
from ...lowering.codegen import _is_literal


def writer(concrete, eager, make_function):
    """``write(divergence, path)`` for a report on ``concrete`` (``eager``: its eager values;
    ``make_function(fn, name, passes)``: an ``en.function`` of ``fn``)."""
    def write(divergence, path):
        return write_repro(concrete, eager, divergence, path, make_function)
    return write


def _opaque(node):
    """A node a subgraph takes as an input rather than recomputing."""
    return node.op is placeholder_op or node.op.random or node.side_effects or \
        node.op.name == "read_variable" or node.params.get("var") is not None


def candidates(graph, target, members=()):
    """Node sets around ``target`` (a traced node), smallest first."""
    current = {target} | {n for n in graph.nodes if f"%{n.name}" in members}
    current = {n for n in current if not _opaque(n)}
    while True:
        # Constants come along: a folded or fused constant is part of what diverged.
        current |= {i for n in current for i in n.inputs if i.op is constant_op}
        yield current
        grown = current | {i for n in current for i in n.inputs if not _opaque(i)}
        if grown == current:
            return
        current = grown


def _inputs_of(nodes):
    """The values a node set reads from outside, in a stable order."""
    outside = []
    for n in sorted(nodes, key=lambda n: n.id):
        for i in n.inputs:
            if i not in nodes and i not in outside:
                outside.append(i)
    return outside


def build(nodes, target):
    """``(fn, outside inputs)``: ``fn(*inputs)`` computes ``target`` from them with the ops
    of ``nodes`` (in eager mode, or traced by ``en.function``)."""
    order = sorted(nodes, key=lambda n: n.id)
    outside = _inputs_of(nodes)

    def subgraph(*xs):
        env = dict(zip(outside, xs))
        for n in order:
            if n.op is constant_op:
                env[n] = wrap(np.asarray(n.params["value"]))
            elif n.op is unpack_op:
                env[n] = env[n.inputs[0]][n.params["index"]]
            else:
                env[n] = apply(n.op, *[env[i] for i in n.inputs], **n.params)
        return env[target]
    return subgraph, outside


def write_repro(concrete, eager, divergence, path, make_function):
    """Write the script for ``divergence`` to ``path``; return ``path``."""
    graph, passes = concrete.unoptimized_graph, concrete._passes
    target = divergence.region_node or divergence.traced_node   # a region: its result
    if divergence.body is not None:
        # Inside a loop or conditional: the body's graph, on the inputs of the call that
        # diverged, compiled as the body is (no passes).
        graph, eager, passes = divergence.body[0], divergence.body[1], []
        target = divergence.traced_node
    chosen = None
    for nodes in candidates(graph, target, divergence.members):
        fn, outside = build(nodes, target)
        tensors = [wrap(np.asarray(eager[i])) for i in outside]
        function = make_function(fn, f"repro_{target.name}", passes)
        chosen = nodes
        if not function.compare(*tensors).ok:
            break
    return _write(path, chosen, target, eager, passes, divergence)


def _param_text(name, value, save):
    if isinstance(value, np.dtype):
        return f"np.dtype({value.name!r})"
    if isinstance(value, type) and issubclass(value, np.generic):
        return f"np.{value.__name__}"
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return f"np.asarray({save(name, np.asarray(value))})"
    if _is_literal(value):
        return repr(value)
    raise UnsupportedError(f"write_repro: the parameter {name} ({type(value).__name__}) cannot be "
                     "written as Python source")


def _write(path, nodes, target, eager, passes, divergence):
    path = os.path.abspath(path)
    folder, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    os.makedirs(folder, exist_ok=True)
    saved = []

    def save(name, array):
        file = f"{stem}_{name}.npy"
        np.save(os.path.join(folder, file), array)
        saved.append(file)
        return f"load({file!r})"

    outside = _inputs_of(nodes)
    names = {n: f"x{k}" for k, n in enumerate(outside)}
    lines = [f"def subgraph({', '.join(names[n] for n in outside)}):"]
    for n in sorted(nodes, key=lambda n: n.id):
        var = f"v_{n.name}"
        names[n] = var
        if n.op is constant_op:
            lines.append(f"    {var} = en.tensor({_param_text(n.name, n.params['value'], save)})")
            continue
        if n.op is unpack_op:
            lines.append(f"    {var} = {names[n.inputs[0]]}[{n.params['index']}]")
            continue
        args = [names[i] for i in n.inputs]
        args += [f"{k}={_param_text(f'{n.name}_{k}', v, save)}" for k, v in sorted(n.params.items())]
        where = f"  # {os.path.basename(n.source[0])}:{n.source[1]}" if n.source else ""
        lines.append(f"    {var} = apply(lookup({n.op.name!r}), {', '.join(args)}){where}")
    lines.append(f"    return {names[target]}")
    inputs = [f"{names[n]} = en.tensor({save(names[n], np.asarray(eager[n]))})" for n in outside]
    passes_text = "" if passes is None else f", passes={[getattr(p, '__name__', p) for p in passes]!r}"
    text = HEADER.format(node=divergence.node, traced=target.name, op=target.op.name,
                         line=divergence.line, made_by=divergence.made_by,
                         lowering=config.lowering) + "\n".join(lines) + "\n\n\n" + \
        "\n".join(inputs) + "\n" + FOOTER.format(
            args=", ".join(names[n] for n in outside), passes=passes_text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


HEADER = '''"""Reproduces a divergence between a compiled graph and eager mode.

Found by en.debug.compare at node %{node}, standing for the traced node %{traced}
(op '{op}') made at {line}; made by: {made_by}.
Run it: it prints the comparison and exits with status 1 while the graph diverges.
"""
import os

import numpy as np

import engine as en
from engine.modes import apply
from engine.op import lookup

HERE = os.path.dirname(os.path.abspath(__file__))
en.config.lowering = {lowering!r}


def load(name):
    return np.load(os.path.join(HERE, name))


'''

FOOTER = '''
if __name__ == "__main__":
    report = en.debug.compare(en.function(subgraph, autograph=False{passes}), {args})
    print(report)
    raise SystemExit(0 if report.ok else 1)
'''
