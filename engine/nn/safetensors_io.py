"""safetensors files (the ecosystem's weight format: a JSON header, then raw tensor bytes;
no pickle, no code) for ``en.nn.save`` / ``load_into``.

A file holds one tensor per variable under its dotted name and, in the header's
``__metadata__``, the engine's format tag, the saved object's class and which
variables are trainable. Files written by other tools (PyTorch's
``safetensors.torch.save_file``) read the same way; only the names must fit.
Reading checks every name, shape and dtype in the header before any data is
used; writing goes through a temporary file renamed over the target.

Example:
    >>> import os, tempfile
    >>> import engine as en
    >>> model = en.nn.Linear(3, 2, generator=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> en.nn.save(model, path)
    >>> other = en.nn.load_into(en.nn.Linear(3, 2, generator=1), path)
    >>> bool((other.weight.numpy() == model.weight.numpy()).all())
    True
"""
import json
import struct

import numpy as np

from ..errors import LoadError, UnsupportedError
from ..files import write_atomically

FORMAT = "engine.nn.state"
_MAX_HEADER_BYTES = 100 << 20      # safetensors' own limit
# The header's dtype codes (safetensors' names) that numpy reads.
_DTYPES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
           "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64,
           "F16": np.float16, "F32": np.float32, "F64": np.float64}


def _library():
    """``safetensors.numpy``: an optional dependency, imported when a file is written or read."""
    try:
        import safetensors.numpy
    except ImportError:
        raise UnsupportedError("safetensors files need the safetensors package (pip install "
                               "safetensors); an .npz path needs nothing more") from None
    return safetensors.numpy


def is_safetensors(path):
    """Whether ``path`` starts as a safetensors file does (a header length, then ``{``)."""
    with open(path, "rb") as f:
        head = f.read(9)
    if len(head) < 9:
        return False
    (n,) = struct.unpack("<Q", head[:8])
    return 0 < n <= _MAX_HEADER_BYTES and head[8:9] == b"{"


def write(path, named, kind):
    """``named`` (``[(name, Variable)]``) as a safetensors file at ``path``, atomically."""
    save = _library().save
    arrays = {name: np.array(var.numpy(), order="C") for name, var in named}   # 0-d stays 0-d
    meta = {"format": FORMAT, "object": kind,
            "trainable": json.dumps([name for name, var in named if var.trainable])}
    write_atomically(path, save(arrays, metadata=meta))


def read_header(path, who):
    """``{name: (shape, numpy dtype)}`` and the metadata of the file at ``path``."""
    with open(path, "rb") as f:
        raw = f.read(8)
        (n,) = struct.unpack("<Q", raw) if len(raw) == 8 else (0,)
        if not 0 < n <= _MAX_HEADER_BYTES:
            raise LoadError(f"{who}: not a safetensors file (header length {n})")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            raise LoadError(f"{who}: the safetensors header is not valid JSON ({err})") from None
    if not isinstance(header, dict):
        raise LoadError(f"{who}: the safetensors header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    entries = {}
    for name, info in header.items():
        code = info.get("dtype") if isinstance(info, dict) else None
        if code not in _DTYPES:
            raise LoadError(f"{who}: tensor {name!r} has dtype {code!r}, which numpy cannot "
                            f"hold (supported: {', '.join(_DTYPES)}); convert it when saving, "
                            "e.g. tensor.float()")
        entries[name] = (tuple(info["shape"]), np.dtype(_DTYPES[code]))
    return entries, meta


def read_arrays(path, who):
    """Every tensor of the file as ``{name: numpy array}`` (after :func:`read_header`)."""
    load_file = _library().load_file
    try:
        return load_file(path)
    except Exception as err:      # safetensors raises its own SafetensorError
        raise LoadError(f"{who}: the safetensors data is unreadable ({err})") from None
