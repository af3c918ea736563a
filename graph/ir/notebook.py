"""Graphs and compiled functions in notebooks: SVG drawings, HTML tables, ``explain``.

* ``Graph._repr_svg_`` draws the graph with Graphviz's ``dot`` program when it
  is installed (``shutil.which("dot")``); ``Graph._repr_html_`` shows that
  drawing, or a table of the nodes when ``dot`` is missing.
* ``fn.explain(*args)`` gathers in one place what ``en.function`` did for
  these arguments: the trace signature, the passes and what each changed,
  node counts before and after, the memory plan, and the generated source
  (with the fused kernels' sources). It prints as text and renders as HTML.

Example:
    >>> import engine as en
    >>> f = en.function(lambda x: en.tanh(x) * 2.0 + 1.0)
    >>> e = f.explain(en.ones((3,)))
    >>> e.nodes_before > e.nodes_after      # constants folded, elementwise ops fused
    True
    >>> print(str(e).splitlines()[0])
    en.function <lambda>
"""
import html
import os
import shutil
import subprocess

from engine.errors import describe_aval

from .printing import _param_text, graph_to_dot

# Graphs larger than this are shown as tables: dot would take long and draw a tangle.
MAX_SVG_NODES = 400
DOT_TIMEOUT_S = 20


def dot_program():
    """The path of Graphviz's ``dot``, or None when it is not installed."""
    return shutil.which("dot")


def graph_svg(graph):
    """The graph drawn as SVG text by ``dot``, or None (no ``dot``, or too large)."""
    dot = dot_program()
    if dot is None or len(graph) > MAX_SVG_NODES:
        return None
    try:
        done = subprocess.run([dot, "-Tsvg"], input=graph_to_dot(graph).encode(),
                              capture_output=True, timeout=DOT_TIMEOUT_S, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    svg = done.stdout.decode("utf-8", "replace")
    start = svg.find("<svg")   # drop the XML prologue and doctype: the SVG embeds in HTML
    return svg[start:] if start >= 0 else None


def _type_text(node):
    if node.avals is not None:
        return "(" + ", ".join(describe_aval(a) for a in node.avals) + ")"
    return describe_aval((node.shape, node.dtype))


def _params_text(node):
    parts = []
    for key, value in sorted(node.params.items()):
        text = _param_text(value)
        parts.append(f"{key}={text if len(text) <= 60 else text[:57] + '...'}")
    return ", ".join(parts)


def graph_table_html(graph):
    """An HTML table, one row per node: name, op, inputs, params, type and source line."""
    outputs = {o: i for i, o in enumerate(graph.outputs)}
    rows = []
    for node in graph.topo_order():
        inputs = html.escape(", ".join("%" + i.name for i in node.inputs))
        if node.control_deps:
            after = html.escape(", ".join("%" + d.name for d in node.control_deps))
            inputs = f"{inputs} <i>after</i> {after}".strip()
        where = (f"{os.path.basename(node.source[0])}:{node.source[1]}" if node.source else "")
        role = ("input" if node in graph.inputs else
                f"output {outputs[node]}" if node in outputs else "")
        rows.append("<tr>" + "".join(
            f"<td style='text-align:left'>{cell}</td>" for cell in (
                f"<code>%{html.escape(node.name)}</code>", html.escape(node.op.name),
                inputs,
                html.escape(_params_text(node)), html.escape(_type_text(node)),
                html.escape(where), role)) + "</tr>")
    head = "".join(f"<th style='text-align:left'>{h}</th>" for h in
                   ("node", "op", "inputs", "params", "type", "line", ""))
    return (f"<div><b>graph {html.escape(graph.name)}</b> &mdash; {graph.node_count()} nodes"
            f"<table><tr>{head}</tr>{''.join(rows)}</table></div>")


def graph_html(graph):
    """The drawing when ``dot`` is installed (the table folded below it), else the table."""
    svg = graph_svg(graph)
    table = graph_table_html(graph)
    if svg is None:
        return table
    return (f"<div>{svg}<details><summary>nodes as a table</summary>{table}</details></div>")


# ---- explain ------------------------------------------------------------------------------------
class Explanation:
    """What ``en.function`` did for one signature. ``str()`` is a text report,
    ``_repr_html_`` the same in HTML, ``as_dict()`` the figures as data.

    Attributes: ``name``, ``signature`` (input and output types), ``report``
    (the OptimizationReport), ``nodes_before``/``nodes_after``,
    ``ops_before``/``ops_after`` (op name -> count), ``memory`` (the memory
    plan dict), ``source`` (generated Python) and ``kernels`` (fused kernel
    name -> source), plus ``graph`` and ``unoptimized_graph``.
    """

    def __init__(self, name, concrete):
        self.name = name
        self.concrete = concrete
        self.graph = concrete.graph
        self.unoptimized_graph = concrete.unoptimized_graph
        self.inputs = [(n.name, _type_text(n)) for n in self.graph.inputs]
        self.outputs = [_type_text(n) for n in self.graph.outputs]
        self.signature = (f"({', '.join(f'{n}: {t}' for n, t in self.inputs)}) -> "
                          f"({', '.join(self.outputs)})")
        self.variables = [(v.name, describe_aval((v.shape, v.dtype)))
                          for v in self.graph.variables]
        self.report = concrete.report
        self.nodes_before = self.unoptimized_graph.node_count()
        self.nodes_after = self.graph.node_count()
        self.ops_before = _op_counts(self.unoptimized_graph)
        self.ops_after = _op_counts(self.graph)
        self.memory = concrete.memory_report()
        self.source = concrete.source
        self.kernels = {n.op.name: n.meta["kernel_source"] for n in self.graph.topo_order()
                        if "kernel_source" in n.meta}

    def as_dict(self):
        return {"name": self.name, "signature": self.signature, "variables": self.variables,
                "passes": self.report.as_data(), "nodes_before": self.nodes_before,
                "nodes_after": self.nodes_after, "ops_before": self.ops_before,
                "ops_after": self.ops_after, "memory": dict(self.memory),
                "source": self.source, "kernels": dict(self.kernels)}

    def _sections(self):
        """(title, text) pairs shared by the text and HTML forms."""
        ops = ", ".join(f"{k} {v}" for k, v in sorted(self.ops_after.items()))
        counts = (f"{self.nodes_before} nodes traced -> {self.nodes_after} after optimization"
                  f"\nops after: {ops or '-'}")
        variables = "\n".join(f"{n}: {t}" for n, t in self.variables) or "none"
        memory = "\n".join(f"{k}: {_bytes(k, v)}" for k, v in self.memory.items())
        out = [("signature", self.signature + "\nvariables: " + variables.replace("\n", ", ")),
               ("passes", str(self.report) if len(self.report) else "no passes ran"),
               ("nodes", counts), ("memory plan", memory), ("generated source", self.source)]
        for name, src in self.kernels.items():
            out.append((f"fused kernel {name}", src))
        return out

    def __str__(self):
        lines = [f"en.function {self.name}"]
        for title, text in self._sections():
            lines.append(f"\n== {title} ==")
            lines.append(text.rstrip("\n"))
        return "\n".join(lines)

    def __repr__(self):
        return (f"<explanation of {self.name}{self.signature}: {self.nodes_before} -> "
                f"{self.nodes_after} nodes>")

    def _repr_html_(self):
        parts = [f"<div><h3>en.function <code>{html.escape(self.name)}</code></h3>"]
        for title, text in self._sections():
            if title == "passes" and len(self.report):
                body = _report_table(self.report)
            else:
                body = f"<pre>{html.escape(text)}</pre>"
            fold = title.startswith(("generated source", "fused kernel"))
            if fold:
                parts.append(f"<details><summary><b>{html.escape(title)}</b></summary>{body}"
                             "</details>")
            else:
                parts.append(f"<h4>{html.escape(title)}</h4>{body}")
        parts.append("<details><summary><b>optimized graph</b></summary>"
                     f"{graph_html(self.graph)}</details></div>")
        return "".join(parts)


def _op_counts(graph):
    counts: dict[str, int] = {}
    for node in graph.nodes:
        if node not in graph.inputs:
            counts[node.op.name] = counts.get(node.op.name, 0) + 1
    return counts


def _bytes(key, value):
    if "bytes" in key and isinstance(value, int):
        return f"{value:,} bytes" if value < 1 << 20 else f"{value / (1 << 20):.1f} MiB"
    return str(value)


def _report_table(report):
    head = "".join(f"<th style='text-align:left'>{h}</th>"
                   for h in ("pass", "nodes before", "nodes after", "time", "what it did"))
    rows = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{html.escape(str(c))}</td>" for c in (
            r.name, r.nodes_before, r.nodes_after, f"{r.seconds * 1e3:.2f} ms", r.note or "-"))
        + "</tr>" for r in report)
    return f"<table><tr>{head}</tr>{rows}</table>"


def explain(function, *args, **kwargs):
    """The :class:`Explanation` of ``function`` (an ``en.function``) for these arguments."""
    concrete = function.get_concrete_function(*args, **kwargs)
    return Explanation(function.name, concrete)
