"""Printers: a short text form (one line per node), Graphviz dot, and an HTML table."""
import html
import os

import numpy as np

from engine.errors import describe_aval


def _param_text(value):
    if isinstance(value, np.ndarray):
        if value.size <= 4:
            return np.array2string(value, separator=",").replace("\n", "")
        return f"<array {describe_aval((value.shape, value.dtype))}>"
    if isinstance(value, np.dtype):
        return value.name
    return repr(value)


def node_text(node):
    """One line: ``%name = op(%a, %b, key=value) : dtype[shape]``."""
    args = [f"%{i.name}" for i in node.inputs]
    args += [f"{k}={_param_text(v)}" for k, v in sorted(node.params.items())]
    if node.avals is not None:
        typ = "(" + ", ".join(describe_aval(a) for a in node.avals) + ")"
    else:
        typ = describe_aval((node.shape, node.dtype))
    line = f"%{node.name} = {node.op.name}({', '.join(args)}) : {typ}"
    if node.control_deps:
        line += "  after " + ", ".join(f"%{d.name}" for d in node.control_deps)
    return line


def graph_to_text(graph, with_source=False):
    """The whole graph as text, inputs first and outputs last.

    Example output::

        graph f(%x0: float32[2,3]) {
          %exp = exp(%x0) : float32[2,3]
          return (%exp)
        }
    """
    ins = ", ".join(f"%{n.name}: {describe_aval((n.shape, n.dtype))}" for n in graph.inputs)
    lines = [f"graph {graph.name}({ins}) {{"]
    for node in graph.topo_order():
        if node in graph.inputs:
            continue
        line = "  " + node_text(node)
        if with_source and node.source:
            line += f"   # {os.path.basename(node.source[0])}:{node.source[1]}"
        lines.append(line)
    lines.append("  return (" + ", ".join(f"%{o.name}" for o in graph.outputs) + ")")
    lines.append("}")
    return "\n".join(lines)


def graph_to_dot(graph):
    """Graphviz ``dot`` text: ops as boxes, data edges solid, control edges dashed."""
    lines = [f'digraph "{graph.name}" {{', "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for node in graph.topo_order():
        shape = "ellipse" if node in graph.inputs else "box"
        aval = ("tuple" if node.avals is not None else describe_aval((node.shape, node.dtype)))
        label = f"{node.name}\\n{node.op.name}\\n{aval}"
        extra = ", style=bold" if node in graph.outputs else ""
        lines.append(f'  n{node.id} [label="{label}", shape={shape}{extra}];')
        for inp in node.inputs:
            lines.append(f"  n{inp.id} -> n{node.id};")
        for dep in node.control_deps:
            lines.append(f"  n{dep.id} -> n{node.id} [style=dashed];")
    lines.append("}")
    return "\n".join(lines)


def graph_to_html(graph):
    """An HTML table, one row per node (used by notebooks when Graphviz is missing)."""
    rows = []
    for node in graph.topo_order():
        rows.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            html.escape(node.name), html.escape(node.op.name),
            html.escape(", ".join(i.name for i in node.inputs)),
            html.escape(describe_aval((node.shape, node.dtype)) if node.avals is None else "tuple")))
    return ("<table><tr><th>node</th><th>op</th><th>inputs</th><th>type</th></tr>"
            + "".join(rows) + "</table>")
