"""Saving and loading a module's or an optimizer's variables: ``save(obj, path)`` /
``load_into(obj, path)``.

A path ending in ``.safetensors`` gets a safetensors file (see
:mod:`engine.nn.safetensors_io`); ``load_into`` tells the two formats apart by
their first bytes. An optimizer's state is its step counter and slots (see
:mod:`engine.nn.optimizer_state`); its learning rate and other settings are
code, not state. Otherwise the file is one ``.npz`` (no pickle, no code) holding an array per variable
(``v0.npy``, ``v1.npy``, ...) and ``meta.json``, a JSON list of each
variable's dotted name, shape and dtype. Loading checks the JSON against the
module and every array's header against the JSON before reading any data,
and raises ``en.LoadError`` for anything that does not match, leaving the
module unchanged. Saving writes a unique temporary file in the target folder
and renames it over ``path`` (``os.replace``), so a crash or a concurrent
reader never sees half a file.

Example:
    >>> import os, tempfile
    >>> import engine as en
    >>> model = en.nn.Linear(3, 2, generator=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> en.nn.save(model, path)
    >>> other = en.nn.Linear(3, 2, generator=1)
    >>> _ = en.nn.load_into(other, path)
    >>> bool((other.weight.numpy() == model.weight.numpy()).all())
    True
"""
import io
import json
import os
import zipfile

import numpy as np

from .. import dtypes
from ..errors import ArgumentTypeError, LoadError
from ..files import write_atomically
from . import optimizer_state, safetensors_io
from .module import Module, check_state

FORMAT = "engine.nn.state"
VERSION = 1
_META = "meta.json"
_MAX_META_BYTES = 16 << 20


def _named(obj, who):
    """``[(name, Variable)]`` of a module or an optimizer."""
    if isinstance(obj, Module):
        return obj.named_variables()
    if optimizer_state.is_optimizer(obj):
        return optimizer_state.named_variables(obj)
    raise ArgumentTypeError(f"{who}: expected an en.nn.Module or an en.optim optimizer, got "
                            f"{type(obj).__name__}")


def save(module, path):
    """Write every variable of ``module`` (a Module or an optimizer) to ``path``, atomically:
    a safetensors file when ``path`` ends in ``.safetensors``, else an ``.npz``."""
    named = _named(module, "en.nn.save")
    path = os.fspath(path)
    if path.endswith(".safetensors"):
        safetensors_io.write(path, named, type(module).__name__)
        return
    entries, members = [], []
    for i, (name, var) in enumerate(named):
        value = np.asarray(var.numpy(), order="C")   # 0-d stays 0-d
        entries.append({"name": name, "key": f"v{i}", "shape": list(value.shape),
                        "dtype": value.dtype.name, "trainable": var.trainable})
        members.append((f"v{i}.npy", value))
    meta = {"format": FORMAT, "version": VERSION, "module": type(module).__name__,
            "variables": entries}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(_META, json.dumps(meta, indent=1))
        for member, value in members:
            data = io.BytesIO()
            np.lib.format.write_array(data, value, allow_pickle=False)
            zf.writestr(member, data.getvalue())
    write_atomically(path, buf.getvalue())


def load_into(module, path, variables=None):
    """Assign ``module``'s variables from a file written by :func:`save`. Returns ``module``.

    ``module`` is a Module or an optimizer; an optimizer that has not stepped
    yet is first built on ``variables`` (the model's trainable variables, in
    the order its steps will pass them). Raises ``en.LoadError`` (before
    changing any variable) when the file is not such a file, or its names,
    shapes or dtypes differ from the object's.
    """
    path = os.fspath(path)
    who = f"en.nn.load_into({path!r})"
    if optimizer_state.is_optimizer(module):
        names = _file_names(path, who)
        optimizer_state.prepare(module, names, variables, who)
    named = dict(_named(module, "en.nn.load_into"))
    if os.path.exists(path) and safetensors_io.is_safetensors(path):
        header, _ = safetensors_io.read_header(path, who)
        check_state(who, named, header)
        values = safetensors_io.read_arrays(path, who)
        for name, var in named.items():
            var.assign(values[name])
        return module
    try:
        zf = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, OSError) as err:
        raise LoadError(f"{who}: not a saved module (not a zip/npz file: {err})") from None
    with zf:
        entries = _read_meta(zf, who)
        check_state(who, named, {e["name"]: (e["shape"], e["dtype"]) for e in entries})
        values = {}
        for e in entries:
            values[e["name"]] = _read_member(zf, e, who)
    for name, var in named.items():
        var.assign(values[name])
    return module


def _file_names(path, who):
    """The variable names a file written by :func:`save` holds."""
    if safetensors_io.is_safetensors(path):
        return list(safetensors_io.read_header(path, who)[0])
    try:
        with zipfile.ZipFile(path) as zf:
            return [e["name"] for e in _read_meta(zf, who)]
    except (zipfile.BadZipFile, OSError) as err:
        raise LoadError(f"{who}: not a saved state (not a zip/npz file: {err})") from None


def _read_meta(zf, who):
    try:
        info = zf.getinfo(_META)
    except KeyError:
        raise LoadError(f"{who}: no {_META} in the file; it was not written by en.nn.save") from None
    if info.file_size > _MAX_META_BYTES:
        raise LoadError(f"{who}: {_META} is {info.file_size} bytes, over the "
                        f"{_MAX_META_BYTES}-byte limit")
    try:
        meta = json.loads(zf.read(_META).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, zipfile.BadZipFile) as err:
        raise LoadError(f"{who}: {_META} is not valid JSON ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise LoadError(f"{who}: not an en.nn.save file (format {meta.get('format')!r})"
                        if isinstance(meta, dict) else f"{who}: {_META} is not a JSON object")
    if meta.get("version") != VERSION:
        raise LoadError(f"{who}: file version {meta.get('version')!r}; this engine reads "
                        f"version {VERSION}")
    entries = meta.get("variables")
    if not isinstance(entries, list):
        raise LoadError(f"{who}: 'variables' must be a list")
    seen = set()
    for i, e in enumerate(entries):
        ok = (isinstance(e, dict) and isinstance(e.get("name"), str)
              and isinstance(e.get("key"), str) and isinstance(e.get("shape"), list)
              and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                      for d in e["shape"])
              and isinstance(e.get("dtype"), str))
        if not ok:
            raise LoadError(f"{who}: variable entry {i} is malformed: {e!r:.200}")
        if e["name"] in seen:
            raise LoadError(f"{who}: variable {e['name']!r} is listed twice")
        seen.add(e["name"])
        try:
            dt = dtypes.as_dtype(e["dtype"])
        except Exception:
            raise LoadError(f"{who}: variable {e['name']!r} has unsupported dtype "
                            f"{e['dtype']!r}") from None
        e["dtype"] = dt
    return entries


def _read_member(zf, entry, who):
    member = entry["key"] + ".npy"
    try:
        with zf.open(member) as f:
            version = np.lib.format.read_magic(f)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(f)
        if tuple(shape) != tuple(entry["shape"]) or dtype != entry["dtype"] or dtype.hasobject:
            raise LoadError(f"{who}: array {member} is {dtype}{list(shape)}, its entry says "
                            f"{entry['dtype']}{entry['shape']} for {entry['name']!r}")
        with zf.open(member) as f:
            return np.lib.format.read_array(f, allow_pickle=False)
    except KeyError:
        raise LoadError(f"{who}: the file has no array {member} for {entry['name']!r}") from None
    except LoadError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise LoadError(f"{who}: array {member} for {entry['name']!r} is unreadable ({e})") from None
