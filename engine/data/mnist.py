"""MNIST: a reader for the IDX files, and a synthetic stand-in of the same shape.

The IDX format (http://yann.lecun.com/exdb/mnist/) is a big-endian header
followed by raw bytes: two zero bytes, a type code (0x08 = unsigned byte), the
number of dimensions, one 4-byte size per dimension, then the data. Image
files have 3 dimensions (magic number 2051), label files 1 (magic 2049).
"""
import gzip
import math
import os
import struct
import zlib

import numpy as np

from ..files import open_regular
from .batching import DataError
from ..errors import MissingFileError

IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049
_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def load_mnist(directory, split=None):
    """Read MNIST from the IDX files in ``directory`` (plain or ``.gz``).

    Returns float32 images scaled to [0, 1], flattened to shape
    ``(n, rows * cols)`` (``(n, 784)`` for MNIST), and int64 labels of shape
    ``(n,)``, as numpy arrays: ``((x_train, y_train), (x_test, y_test))``, or
    just ``(x, y)`` for ``split="train"`` or ``split="test"``.

    Files are looked up as ``train-images-idx3-ubyte`` (also
    ``train-images.idx3-ubyte``), each optionally with ``.gz``; likewise
    ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte`` and
    ``t10k-labels-idx1-ubyte``. A missing, truncated or malformed file raises
    an error naming the file and what is wrong with it.

    Example (with MNIST's four files in ``~/data/mnist``)::

        (x, y), (xt, yt) = load_mnist("~/data/mnist")
        x.shape, x.dtype, y.dtype     # ((60000, 784), dtype('float32'), dtype('int64'))
    """
    directory = os.path.expanduser(os.fspath(directory))
    if not os.path.isdir(directory):
        raise MissingFileError(f"load_mnist: {directory!r} is not a directory")
    if split is None:
        return _load_split(directory, "train"), _load_split(directory, "test")
    if split not in _FILES:
        raise DataError(f"load_mnist: split must be 'train', 'test' or None, got {split!r}")
    return _load_split(directory, split)


def _load_split(directory, split):
    image_name, label_name = _FILES[split]
    image_path = _find(directory, image_name)
    label_path = _find(directory, label_name)
    images = read_idx(image_path, expect_magic=IMAGES_MAGIC)
    labels = read_idx(label_path, expect_magic=LABELS_MAGIC)
    if len(images) != len(labels):
        raise DataError(f"load_mnist: {os.path.basename(image_path)} has {len(images)} images "
                        f"but {os.path.basename(label_path)} has {len(labels)} labels")
    if labels.size and labels.max() > 9:
        raise DataError(f"load_mnist: {label_path}: labels must be digits 0-9, found "
                        f"{int(labels.max())}")
    x = images.reshape(len(images), -1).astype(np.float32)
    x *= np.float32(1.0 / 255.0)
    return x, labels.astype(np.int64)


def _find(directory, name):
    dotted = name.replace("-idx", ".idx")
    candidates = [name, name + ".gz", dotted, dotted + ".gz"]
    for c in candidates:
        path = os.path.join(directory, c)
        if os.path.isfile(path):
            return path
    raise MissingFileError(f"load_mnist: no {name} in {directory!r} (looked for "
                            f"{', '.join(candidates)})")


def read_idx(path, expect_magic=None):
    """Read one IDX file of unsigned bytes (plain or gzip) into a uint8 array.

    ``expect_magic`` (2051 for images, 2049 for labels) is checked when given.
    The file size must match the sizes in its header exactly. The header is
    read first and nothing more is read (or inflated) than it declares: a
    plain file of the wrong size, or a ``.gz`` declaring more than its bytes
    can inflate to, is refused before its data is read.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "labels-idx1-ubyte")
        >>> header = np.array([2049, 3], ">i4").tobytes()   # magic, then the count
        >>> with open(path, "wb") as f:
        ...     _ = f.write(header + bytes([5, 0, 4]))
        >>> read_idx(path, expect_magic=2049)
        array([5, 0, 4], dtype=uint8)
    """
    name = os.path.basename(path)
    try:
        with open_regular(path) as raw:
            size = os.fstat(raw.fileno()).st_size
            if not path.endswith(".gz"):
                return _read_idx_stream(raw, name, expect_magic, size, None)
            with gzip.GzipFile(fileobj=raw, mode="rb") as f:
                return _read_idx_stream(f, name, expect_magic, None, size)
    except (OSError, EOFError, zlib.error) as err:     # gzip.BadGzipFile is an OSError
        raise DataError(f"{name}: cannot read the file: {err}") from None


# Deflate (gzip) turns one byte into at most 1032 (a 258-byte match per 2 bits).
MAX_INFLATION = 1032


def _read_idx_stream(f, name, expect_magic, size, gz_size):
    """The array of the IDX stream ``f``: ``size`` bytes (a plain file), or the inflated
    content of a ``.gz`` of ``gz_size`` bytes."""
    head = _read_up_to(f, 4)
    if len(head) < 4:
        raise DataError(f"{name}: not an IDX file: only {len(head)} bytes, fewer than the "
                        "4-byte magic number")
    magic = struct.unpack(">i", head)[0]
    zero, dtype_code, ndim = head[0:2], head[2], head[3]
    want = f"{expect_magic} (0x{expect_magic:08x})" if expect_magic is not None else "0x000008NN"
    bad_magic = (f"{name}: bad magic number {magic} (0x{magic & 0xffffffff:08x}), expected "
                 f"{want}; is this the right file, and is it decompressed?")
    if zero != b"\x00\x00":
        raise DataError(bad_magic)
    if dtype_code != 0x08:
        raise DataError(f"{name}: IDX type code 0x{dtype_code:02x} is not supported; MNIST uses "
                        "0x08 (unsigned byte)")
    if expect_magic is not None and magic != expect_magic:
        raise DataError(bad_magic)
    header = 4 + 4 * ndim
    sizes = _read_up_to(f, header - 4)
    if len(sizes) < header - 4:
        raise DataError(f"{name}: truncated header: {ndim} dimensions need {header} bytes, the "
                        f"file has {4 + len(sizes)}")
    dims = struct.unpack(f">{ndim}I", sizes)
    expected = header + math.prod(dims)
    says = f"the header says shape {tuple(dims)}, which needs {expected} bytes"
    if size is not None and size != expected:
        what = "truncated" if size < expected else "too long"
        raise DataError(f"{name}: {what}: {says}, but the file has {size}")
    if gz_size is not None and expected > MAX_INFLATION * gz_size:
        raise DataError(f"{name}: {says}, more than a .gz of {gz_size} bytes can hold "
                        f"(deflate inflates a byte to at most {MAX_INFLATION}); refused before "
                        "inflating it")
    data = np.empty(expected - header, np.uint8)
    got = header + _read_into(f, data)
    if got < expected:
        raise DataError(f"{name}: truncated: {says}, but the file has {got}")
    if gz_size is not None and _read_up_to(f, 1):     # stop inflating one byte past the end
        raise DataError(f"{name}: too long: {says}, but the file holds more (inflating "
                        "stopped there)")
    return data.reshape(dims)


def _read_up_to(f, n):
    """Up to ``n`` bytes (fewer only at the end of the stream)."""
    parts, left = [], n
    while left:
        chunk = f.read(left)
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _read_into(f, out):
    """Fill the uint8 array ``out`` from ``f``; returns how many bytes there were."""
    view, done = memoryview(out), 0
    while done < len(out):
        n = f.readinto(view[done:done + (16 << 20)])
        if not n:
            break
        done += n
    return done


def synthetic_mnist(n=60000, seed=0):
    """Deterministic MNIST-shaped data for benchmarks: ``(x, y)`` numpy arrays.

    ``x`` is float32 of shape ``(n, 784)`` with values in [0, 1] and about
    19% nonzero pixels (as in MNIST), roughly a third of them saturated at 1;
    ``y`` is int64 in 0..9. Each class has its own smooth "ink" probability
    map over a 28x28 image, mixed per example with one of a few shared
    "style" maps, so the classes are learnable but overlap. The same ``n`` and
    ``seed`` give the same arrays.

    Example:
        >>> x, y = synthetic_mnist(1000)
        >>> x.shape, x.dtype, y.dtype, bool(0.17 < (x > 0).mean() < 0.21)
        ((1000, 784), dtype('float32'), dtype('int64'), True)
    """
    n = int(n)
    if n < 0:
        raise DataError(f"synthetic_mnist: n must be >= 0, got {n}")
    label_seq, pixel_seq, proto_seq = np.random.SeedSequence(seed).spawn(3)
    maps = _ink_maps(np.random.default_rng(proto_seq), 10 + _STYLES)   # (10 + styles, 784)
    classes, styles = maps[:10], maps[10:]
    y = np.random.default_rng(label_seq).integers(0, 10, size=n, dtype=np.int64)
    x = np.empty((n, 784), dtype=np.float32)
    rng = np.random.default_rng(pixel_seq)
    chunk = 8192
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        # Each example mixes its class map with a random "handwriting style"
        # map shared by all classes, so the classes overlap as real digits do.
        style = rng.integers(0, _STYLES, size=stop - start)
        p = _CLASS_WEIGHT * classes[y[start:stop]] + (1 - _CLASS_WEIGHT) * styles[style]
        u = rng.random((stop - start, 784), dtype=np.float32)
        # A pixel is inked when u < p; u / p is then uniform on [0, 1), which
        # gives the intensity: the lowest third saturate at 1, the rest fade.
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.float32(1.4) - np.float32(1.2) * (u / p)
        np.clip(level, 0.0, 1.0, out=level)
        x[start:stop] = np.where(u < p, level, np.float32(0.0))
    return x, y


_STYLES = 32
_CLASS_WEIGHT = np.float32(0.6)


def _ink_maps(rng, count, density=0.19):
    """``count`` smooth per-pixel ink probabilities, each averaging ``density``."""
    rows, cols = np.mgrid[0:28, 0:28].astype(np.float32)
    maps = np.empty((count, 784), dtype=np.float32)
    for c in range(count):
        # A stroke: a chain of Gaussian bumps along a random walk in the centre.
        field = np.zeros((28, 28), dtype=np.float32)
        point = rng.uniform(9.0, 19.0, size=2)
        for _ in range(8):
            field += np.exp(-((rows - point[0]) ** 2 + (cols - point[1]) ** 2) / (2 * 2.2 ** 2))
            point = np.clip(point + rng.normal(0.0, 2.5, size=2), 5.0, 23.0)
        field /= field.max()
        # Scale so the clipped probabilities average `density` (a few fixed-point rounds).
        scale = density / field.mean()
        for _ in range(20):
            p = np.clip(field * scale, 0.0, 0.97)
            scale *= density / p.mean()
        maps[c] = np.clip(field * scale, 0.0, 0.97).reshape(-1)
    return maps
