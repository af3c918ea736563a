"""Reading the arrays of a saved graph (the ``.npz`` beside its JSON) for :mod:`graph.export.load`.

The writer (:func:`graph.export.native.npz_bytes`) stores every member uncompressed,
so reading costs what the file holds and no more: the archive is checked
before any array is read. Members must be exactly ``a0.npy``, ``a1.npy``, ...,
stored (not deflated, bzip2'd or lzma'd: a compressed member could inflate to
far more than the file's size, so it is refused before inflating anything),
not encrypted, and lie inside the file. Each ``.npy`` header must give the
declared shape and dtype in C order, and the data exactly its byte count.
Any problem raises :class:`engine.errors.LoadError`.

Example:
    >>> import io, zipfile
    >>> import numpy as np
    >>> from engine.graph.export.native import npz_bytes
    >>> raw = npz_bytes([np.arange(3.0)])
    >>> read_arrays(io.BytesIO(raw), len(raw), [((3,), np.dtype("float64"))], "m.npz")[0]
    array([0., 1., 2.])
"""
import re
import zipfile

import numpy as np

from engine.errors import LoadError, describe_aval

# Bytes copied out of a member at a time: the array plus this much at the peak.
CHUNK = 16 << 20
_COMPRESSIONS = {zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
                 zipfile.ZIP_LZMA: "lzma", 9: "deflate64"}


def nbytes(shape, dtype):
    n = dtype.itemsize
    for d in shape:
        n *= d
    return n


def read_arrays(f, size, avals, path):
    """The arrays of the archive open as ``f`` (``size`` bytes), each checked against its
    declared ``(shape, dtype)`` in ``avals``; ``path`` names the file in errors."""
    expected = sum(nbytes(s, d) for s, d in avals)
    if size > expected + 4096 * (len(avals) + 1):
        raise LoadError(f"{path} has {size} bytes, far more than the {expected} bytes of arrays "
                        "the graph declares")
    try:
        zf = zipfile.ZipFile(f)
    except Exception as err:   # BadZipFile, a truncated directory, odd fields
        raise LoadError(f"{path} is not a valid .npz: {type(err).__name__}: {err}") from None
    with zf:
        infos = zf.infolist()
        names = [f"a{i}.npy" for i in range(len(avals))]
        present = [i.filename for i in infos]
        if sorted(present) != sorted(names):
            if not avals:
                raise LoadError(f"{path} holds arrays {present[:5]} the graph does not declare")
            extra = sorted(set(present) - set(names))[:5]
            missing = sorted(set(names) - set(present))[:5]
            raise LoadError(f"{path} does not hold the arrays the graph declares (missing "
                            f"{missing}, unexpected {extra}, {len(present)} members for "
                            f"{len(names)} arrays)")
        for info in infos:
            _check_stored(info, size, path)
        return [_read_member(zf, path, i, shape, dtype) for i, (shape, dtype) in enumerate(avals)]


def _check_stored(info, size, path):
    """A member the writer could have made: stored as is, inside the file."""
    where = f"{path}: member {info.filename}"
    if info.compress_type != zipfile.ZIP_STORED:
        kind = _COMPRESSIONS.get(info.compress_type, f"method {info.compress_type}")
        raise LoadError(f"{where} is compressed ({kind}); refused before inflating it: saved "
                        "graphs store their arrays uncompressed, and a compressed member can "
                        "inflate to far more than the file's size")
    if info.flag_bits & 0x1:
        raise LoadError(f"{where} is encrypted")
    if info.compress_size != info.file_size or info.header_offset + info.file_size > size:
        raise LoadError(f"{where} claims {info.file_size} bytes ({info.compress_size} stored at "
                        f"offset {info.header_offset}), which do not lie inside the file's "
                        f"{size} bytes")


# The header numpy writes (np.save, np.lib.format.write_array), e.g.
# {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }, padded with spaces.
_HEADER = re.compile(r"\{'descr': '([<>|=][a-z][0-9]{1,2})', 'fortran_order': (False|True), "
                     r"'shape': \((|[0-9]{1,20},|[0-9]{1,20}(?:, [0-9]{1,20})+)\), \} *\n")


def read_npy_header(f):
    """``(shape, fortran_order, dtype, data offset)`` of the ``.npy`` stream ``f``.

    Parsed by a pattern that accepts exactly what numpy writes, rather than by
    numpy's reader (``ast.literal_eval``, which is not thread-safe in CPython
    3.11: concurrent loads raised ``SystemError: AST constructor recursion depth
    mismatch``).
    """
    magic = f.read(8)
    if len(magic) != 8 or magic[:6] != b"\x93NUMPY" or magic[6:] not in (b"\x01\x00",
                                                                       b"\x02\x00"):
        raise LoadError(f"not a .npy (version 1.0 or 2.0) header: {magic[:8]!r}")
    width = 2 if magic[6] == 1 else 4
    raw = f.read(width)
    n = int.from_bytes(raw, "little")
    if len(raw) != width or n > 4096:
        raise LoadError(f"a header of {n} bytes (at most 4096)")
    text = f.read(n)
    match = _HEADER.fullmatch(text.decode("latin1")) if len(text) == n else None
    if match is None:
        raise LoadError(f"not a header numpy writes: {text[:80]!r}")
    descr, fortran, dims = match.groups()
    shape = tuple(int(d) for d in dims.replace(",", " ").split())
    return shape, fortran == "True", np.dtype(descr), 8 + width + n


def _read_member(zf, path, i, shape, dtype):
    what = f"{path}: array a{i} (declared {describe_aval((shape, dtype))})"
    info = zf.getinfo(f"a{i}.npy")
    try:
        f = zf.open(info)
    except Exception as err:
        raise LoadError(f"{what}: cannot be opened: {type(err).__name__}: {err}") from None
    with f:
        try:
            h_shape, fortran, h_dtype, offset = read_npy_header(f)
        except Exception as err:
            raise LoadError(f"{what}: bad .npy header: {type(err).__name__}: {err}") from None
        if tuple(h_shape) != tuple(shape) or h_dtype != dtype or fortran:
            raise LoadError(f"{what}: the .npz holds {h_dtype}{list(h_shape)}"
                            f"{' (Fortran order)' if fortran else ''}")
        n = nbytes(shape, dtype)
        if info.file_size != offset + n:
            raise LoadError(f"{what}: {info.file_size - offset} bytes of data for {n} expected")
        array = np.empty(shape, dtype)
        flat = array.reshape(-1).view(np.uint8)
        try:
            done = 0
            while done < n:
                chunk = f.read(min(CHUNK, n - done))
                if not chunk:
                    raise LoadError(f"the data ends after {done} of {n} bytes")
                flat[done:done + len(chunk)] = np.frombuffer(chunk, np.uint8)
                done += len(chunk)
            f.read(1)   # at the end: the CRC is checked here if it was not yet
        except Exception as err:   # CRC mismatch, truncation
            raise LoadError(f"{what}: cannot be read: {type(err).__name__}: {err}") from None
    array.flags.writeable = False
    return array
