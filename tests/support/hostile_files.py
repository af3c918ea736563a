"""Saved-graph files built by hand that keep within every declared limit of the format
and still ask ``en.load`` for far more than their size: folding bombs, compressed
members, repeated names, too many nodes. Used by the loader's regression and fuzz tests
(and by the measurements quoted in their commit messages).

Each builder returns a JSON document of format version 1 (the ``.npz`` beside it has
the fixed name ``paths_for`` gives), which :func:`write` puts on disk.
"""
import io
import json
import zipfile

import numpy as np

from engine.graph.export.native import npz_bytes, paths_for


def node(op, name, inputs, result_shape, dtype="float32", params=None):
    return {"op": op, "name": name, "inputs": list(inputs), "after": [], "params": params or {},
            "aval": [list(result_shape), dtype]}


def full(name, shape, value=1.0, dtype="float32"):
    return node("full", name, [], shape, dtype,
                {"shape": list(shape), "value": value, "dtype": {"$dtype": dtype}})


def document(nodes, outputs=None, arrays=(), name="bomb"):
    """A whole file: node 0 must be the only placeholder; the last node is the output."""
    outputs = [len(nodes) - 1] if outputs is None else outputs
    return {"format": "dualmode-engine.graph", "version": 1, "name": name,
            "arrays": [{"dtype": a.dtype.name, "shape": list(a.shape)} for a in arrays],
            "variables": [],
            "graph": {"name": name, "inputs": [0], "outputs": outputs,
                      "output_tree": "*" if len(outputs) == 1 else {"tuple": ["*"] * len(outputs)},
                      "nodes": nodes}}


def write(path, doc, npz=None):
    """Write ``doc`` (and ``npz`` bytes, by default an empty archive) at ``path``."""
    jp, zp = paths_for(path)
    with open(jp, "w") as f:
        json.dump(doc, f)
    with open(zp, "wb") as f:
        f.write(npz_bytes([]) if npz is None else npz)
    return jp, zp


def matmul_chain(n=1000, size=362, dtype="float32"):
    """``x + c @ c @ ... @ c`` (``n`` products of ``full`` matrices): all foldable, each
    result under ``fold_size_limit_bytes``, ``n * size**3`` multiply-adds in all."""
    nodes = [node("placeholder", "x", [], (size, size), dtype), full("c", (size, size), 0.001,
                                                                     dtype)]
    prev = 1
    for i in range(n):
        nodes.append(node("matmul", f"m{i}", [prev, 1], (size, size), dtype))
        prev = len(nodes) - 1
    nodes.append(node("add", "out", [0, prev], (size, size), dtype))
    return document(nodes)


def conv_of_fulls(image=(1, 64, 64, 16), kernel=(32, 32), dtype="float32"):
    """``x + conv2d(full, full)``: a small result whose im2col patches are large
    (``OH*OW*KH*KW*C`` elements)."""
    n, h, w, c = image
    kh, kw = kernel
    out = (n, h - kh + 1, w - kw + 1, 1)
    nodes = [node("placeholder", "x", [], out, dtype), full("image", image, 1.0, dtype),
             full("filters", (kh, kw, c, 1), 1.0, dtype),
             node("conv2d", "conv", [1, 2], out, dtype, {"strides": [1, 1], "padding": "valid"}),
             node("add", "out", [0, 3], out, dtype)]
    return document(nodes)


def many_fulls(n=200, shape=(512, 512), dtype="float32"):
    """``x + full_0 + full_1 + ...``: each ``full`` folds into a constant the graph keeps
    (``n`` of ``fold_size_limit_bytes`` each) unless folding is bounded in bytes."""
    nodes = [node("placeholder", "x", [], shape, dtype)]
    prev = 0
    for i in range(n):
        nodes.append(full(f"f{i}", shape, float(i), dtype))
        nodes.append(node("add", f"a{i}", [prev, len(nodes) - 1], shape, dtype))
        prev = len(nodes) - 1
    return document(nodes)


def repeated_names(n=2000, name="x"):
    """A chain of ``n`` negations all named ``name``."""
    nodes = [node("placeholder", name, [], (2,))]
    for i in range(n):
        nodes.append(node("neg", name, [i], (2,)))
    return document(nodes)


def recompress(npz, method=zipfile.ZIP_BZIP2):
    """The same members in an archive compressed with ``method``."""
    src = zipfile.ZipFile(io.BytesIO(npz))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        for info in src.infolist():
            zf.writestr(info.filename, src.read(info), compress_type=method)
    return buf.getvalue()


def compressed_bomb(nbytes=64 << 20, method=zipfile.ZIP_BZIP2):
    """``(doc, npz)``: a graph returning one constant of ``nbytes`` zeros, stored
    compressed (a few hundred bytes)."""
    count = nbytes // 4
    zeros = np.zeros(count, np.float32)
    member = io.BytesIO()
    np.lib.format.write_array(member, zeros, version=(1, 0), allow_pickle=False)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        zf.writestr("a0.npy", member.getvalue())
    del zeros, member
    nodes = [node("placeholder", "x", [], (count,)),
             node("constant", "c", [], (count,), params={"value": {"$array": 0}}),
             node("add", "out", [0, 1], (count,))]
    doc = document(nodes, arrays=[np.empty(0, np.float32)])
    doc["arrays"] = [{"dtype": "float32", "shape": [count]}]
    return doc, buf.getvalue()
