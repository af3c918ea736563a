"""The quickstart notebook runs top to bottom in a real Jupyter kernel, and the notebook
displays (graph SVG/HTML, ``fn.explain``) work with and without Graphviz."""
import os
import shutil

import numpy as np
import pytest

import engine as en
from support.paths import REPO

ROOT = REPO
NOTEBOOK = os.path.join(ROOT, "examples", "quickstart.ipynb")


def test_quickstart_notebook_runs_without_errors():
    nbformat = pytest.importorskip("nbformat", reason="nbformat is part of the test extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is part of the test extra")
    pytest.importorskip("ipykernel", reason="ipykernel is part of the test extra")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + env_path if env_path else "")
    try:
        client = nbclient.NotebookClient(
            nb, timeout=120, kernel_name="python3",
            resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
        client.execute()      # raises CellExecutionError on the first failing cell
    finally:
        if env_path:
            os.environ["PYTHONPATH"] = env_path
        else:
            del os.environ["PYTHONPATH"]
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "same result: True" in text and "speed-up" in text
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("generated source" in h for h in html)    # the explain cell rendered
    # The tensor cell shows a table of the values, as the notebook says.
    table = ("<caption>tensor float32[2, 2]</caption><tbody><tr><td>1</td><td>2</td></tr>"
             "<tr><td>3</td><td>4</td></tr></tbody></table>")
    assert any(table in h for h in html)
    # The ONNX cell exported the model and onnxruntime ran it (test extra: onnxruntime).
    assert "ONNX runtime agrees: True" in text


def test_a_tensor_shows_its_values_as_an_html_table():
    html = en.tensor([[1.5, -2.0, 3.25]])._repr_html_()
    assert html == ("<table><caption>tensor float64[1, 3]</caption><tbody><tr><td>1.5</td>"
                    "<td>-2</td><td>3.25</td></tr></tbody></table>")
    assert "<td>7</td>" in en.tensor(7)._repr_html_()
    assert "<td>True</td><td>False</td>" in en.tensor([True, False])._repr_html_()
    big = en.tensor(np.arange(30 * 40).reshape(30, 40))._repr_html_()
    assert big.count("<tr>") == 11 and big.count("&hellip;") == 10 + 11   # one per row, a whole row
    assert "<td>0</td>" in big and "<td>1199</td>" in big and "<td>600</td>" not in big
    assert en.ones((2, 2, 2))._repr_html_().startswith("<pre>tensor(")   # rank 3: the text


def _fn():
    w = en.Variable(np.ones((3, 4), "float32"), name="w")
    return en.function(lambda x: en.sum(en.tanh(x @ w) * 2.0 + 1.0, axis=1)), \
        en.ones((8, 3), dtype="float32")


def test_graph_html_without_graphviz(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    f, x = _fn()
    g = f.graph_for(x)
    assert g._repr_svg_() is None
    html = g._repr_html_()
    assert html.startswith("<div>") and "<table>" in html and "matmul" in html
    assert "<svg" not in html


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_svg_with_graphviz():
    f, x = _fn()
    g = f.graph_for(x)
    svg = g._repr_svg_()
    assert svg.startswith("<svg") and "matmul" in svg
    assert "<svg" in g._repr_html_()


def test_explain_gathers_everything():
    f, x = _fn()
    e = f.explain(x)
    text = str(e)
    for section in ("signature", "passes", "nodes", "memory plan", "generated source"):
        assert f"== {section} ==" in text
    assert "x0: float32[8,3]" in e.signature and "w: float32[3,4]" in text
    assert e.nodes_before == f.get_concrete_function(x).unoptimized_graph.node_count()
    assert e.nodes_after == f.graph_for(x).node_count() < e.nodes_before
    assert e.memory == f.memory_report(x)
    assert e.source == f.source_for(x) and "def run_" in text
    assert e.kernels and all("def fused" in src for src in e.kernels.values())
    assert any(name in text for name in e.kernels)
    html = e._repr_html_()
    assert "<table>" in html and "generated source" in html
    data = e.as_dict()
    assert data["nodes_after"] == e.nodes_after and data["passes"]
