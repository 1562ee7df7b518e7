"""Saving tensors: ``serialize``/``deserialize`` (Nx's ``Nx.serialize``/``Nx.deserialize``),
``save``/``load`` to a path, and NumPy's ``.npy``/``.npz`` files.

A serialized value is a tensor, a number, or a container of them (tuple, list, dict,
namedtuple, None), kept with every tensor's type (bf16 and complex included), shape and
names. The format (version 1) is::

    b"NXPYSER\\0"  u16 version  u64 header length  u32 CRC-32 of everything after it
    header: UTF-8 JSON {"tree": ..., "tensors": [{"type", "shape", "names", "offset", "nbytes"}]}
    data:   each tensor's bytes, little-endian, row-major, at its offset

No pickle is involved: reading a file never runs code, and a namedtuple comes back as a
namedtuple class of the same name and fields (made afresh, so it compares equal to the
original and its fields are read the same way). A file that is not one, is truncated or
is damaged raises :class:`SerializationError` saying which.

>>> import nxpy as nx
>>> blob = nx.serialize({"w": nx.tensor([[1.0, 2.0]], type="bf16", names=["i", None]), "step": 3})
>>> back = nx.deserialize(blob)
>>> str(back["w"].type), back["w"].names, back["w"].tolist(), back["step"].tolist()
('bf16', ('i', None), [[1.0, 2.0]], 3)
>>> nx.deserialize(b"PK\\x03\\x04 not ours")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
nxpy.serialize.SerializationError: deserialize: not an nxpy serialized value (it starts with
b'PK\\x03\\x04 not our', expected b'NXPYSER\\x00')
"""
from __future__ import annotations

import collections
import io
import json
import os
import struct
import sys
import tempfile
import zlib

import numpy as np

from . import types as T
from .ops import from_numpy, tensor
from .tensor import Tensor

__all__ = ["serialize", "deserialize", "save", "load", "save_numpy", "load_numpy",
           "SerializationError", "MAGIC", "VERSION"]

MAGIC = b"NXPYSER\x00"
VERSION = 1
_PREFIX = struct.Struct("<8sHQI")  # magic, version, header length, CRC-32 of the rest
_KEY_TYPES = (str, int, float, bool, type(None))


class SerializationError(ValueError):
    """Bytes or a file that do not hold a value nxpy serialized (foreign, truncated,
    damaged, or of a newer format)."""


# ----------------------------------------------------------------------------------------
# serialize / deserialize
# ----------------------------------------------------------------------------------------
def serialize(value) -> bytes:
    """``value`` (a tensor, number, or a tuple/list/dict/namedtuple/None container of
    them) as bytes; :func:`deserialize` reads them back. Numbers become tensors, as in
    Nx. Tensors on any backend are read to the host first.

    >>> import nxpy as nx
    >>> len(nx.serialize(nx.tensor([1, 2, 3]))) > 12
    True
    """
    arrays, tensors = [], []

    def leaf(x, path):
        if isinstance(x, Tensor):
            t = x
        elif isinstance(x, (bool, int, float, complex, np.generic, np.ndarray)):
            t = tensor(x)
        else:
            raise TypeError(f"serialize: expected tensors, numbers or containers (tuple, "
                            f"list, dict, namedtuple, None) of them, got {type(x).__name__} "
                            f"at {path or 'the top'}")
        arr = np.ascontiguousarray(np.asarray(t.to_numpy(), dtype=t.type.dtype)).reshape(t.shape)
        if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
            arr = arr.byteswap()
        offset = sum(a.nbytes for a in arrays)
        arrays.append(arr)
        tensors.append({"type": str(t.type), "shape": list(t.shape),
                        "names": list(t.names) if t.names else [None] * len(t.shape),
                        "offset": offset, "nbytes": arr.nbytes})
        return {"t": "tensor", "i": len(tensors) - 1}

    def rec(x, path):
        if x is None:
            return {"t": "none"}
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return {"t": "namedtuple", "name": type(x).__name__, "fields": list(x._fields),
                    "items": [rec(v, f"{path}.{k}") for k, v in zip(x._fields, x)]}
        if isinstance(x, (tuple, list)):
            return {"t": type(x).__name__,
                    "items": [rec(v, f"{path}[{i}]") for i, v in enumerate(x)]}
        if isinstance(x, dict):
            for k in x:
                if not isinstance(k, _KEY_TYPES):
                    raise TypeError(f"serialize: dict keys must be strings, numbers, booleans "
                                    f"or None, got {type(k).__name__} at {path or 'the top'}")
            return {"t": "dict", "keys": [_key(k) for k in x],
                    "items": [rec(v, f"{path}[{k!r}]") for k, v in x.items()]}
        return leaf(x, path)

    tree = rec(value, "")
    header = json.dumps({"tree": tree, "tensors": tensors}, separators=(",", ":")).encode()
    body = header + b"".join(a.tobytes() for a in arrays)
    return _PREFIX.pack(MAGIC, VERSION, len(header), zlib.crc32(body)) + body


def _key(k):
    # JSON has no int/bool/None keys: each key is stored with its kind
    return [type(k).__name__, k]


def _unkey(k, fail):
    kinds = {"str": str, "int": int, "float": float, "bool": bool, "NoneType": type(None)}
    ok = isinstance(k, list) and len(k) == 2 and k[0] in kinds and (
        isinstance(k[1], kinds[k[0]]) or (k[0] == "float" and isinstance(k[1], int)))
    if not ok:
        fail(f"a dict key of unknown form {k!r}")
    return float(k[1]) if k[0] == "float" else k[1]


def deserialize(data, *, backend=None):
    """The value :func:`serialize` wrote into ``data`` (bytes), its tensors on ``backend``
    (a name such as ``"exla"``, or a backend; default: the default backend)."""
    what = "deserialize"

    def fail(msg):
        raise SerializationError(f"{what}: {msg}")

    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if data[:len(MAGIC)] != MAGIC:
        fail(f"not an nxpy serialized value (it starts with {data[:12]!r}, expected {MAGIC!r})")
    if len(data) < _PREFIX.size:
        fail(f"truncated: {len(data)} bytes, shorter than the {_PREFIX.size}-byte header")
    _, version, hlen, crc = _PREFIX.unpack_from(data)
    if version != VERSION:
        fail(f"format version {version}; this nxpy reads version {VERSION} (a newer nxpy "
             f"wrote it?)")
    body = data[_PREFIX.size:]
    if len(body) < hlen:
        fail(f"truncated: the header needs {hlen} bytes, {len(body)} are there")
    try:
        header = json.loads(body[:hlen])
        tree, metas = header["tree"], header["tensors"]
    except (ValueError, KeyError, TypeError):
        fail("the header is damaged (not the JSON nxpy writes)")
    payload = body[hlen:]
    need = max((m.get("offset", 0) + m.get("nbytes", 0) for m in metas), default=0)
    if len(payload) < need:
        fail(f"truncated: the tensors need {need} bytes of data, {len(payload)} are there")
    if zlib.crc32(body) != crc:
        fail("damaged: the checksum of its contents does not match")
    leaves = [_read_tensor(m, payload, backend, fail) for m in metas]
    return _rebuild(tree, leaves, fail)


def _read_tensor(m, payload, backend, fail):
    try:
        t = T.parse(m["type"])
        shape = tuple(int(d) for d in m["shape"])
        names = tuple(m["names"])
        off, n = int(m["offset"]), int(m["nbytes"])
    except (KeyError, TypeError, ValueError):
        fail(f"a tensor entry is damaged: {m!r}")
    dt = t.dtype.newbyteorder("<") if t.dtype.itemsize > 1 and t.dtype.kind in "iufc" else t.dtype
    if n != int(np.prod(shape, dtype=np.int64)) * t.dtype.itemsize or len(names) != len(shape):
        fail(f"a tensor entry is inconsistent: {m!r}")
    arr = np.frombuffer(payload, dtype=dt, count=n // t.dtype.itemsize, offset=off)
    arr = arr.astype(t.dtype).reshape(shape)  # native byte order, a copy the tensor owns
    return from_numpy(arr, names=names if any(names) else None, backend=backend)


def _rebuild(node, leaves, fail):
    if not isinstance(node, dict) or "t" not in node:
        fail(f"the container structure is damaged: {node!r}")
    kind = node["t"]
    if kind == "tensor":
        i = node.get("i")
        if not isinstance(i, int) or not 0 <= i < len(leaves):
            fail(f"the container structure names tensor {i!r} of {len(leaves)}")
        return leaves[i]
    if kind == "none":
        return None
    items = [_rebuild(v, leaves, fail) for v in node.get("items", [])]
    if kind == "tuple":
        return tuple(items)
    if kind == "list":
        return items
    if kind == "dict":
        keys = [_unkey(k, fail) for k in node.get("keys", [])]
        if len(keys) != len(items):
            fail("a dict's keys and values do not match")
        return dict(zip(keys, items))
    if kind == "namedtuple":
        try:
            cls = collections.namedtuple(node["name"], node["fields"])
        except (KeyError, TypeError, ValueError):
            fail(f"a namedtuple entry is damaged: name {node.get('name')!r}, fields "
                 f"{node.get('fields')!r}")
        return cls(*items)
    fail(f"unknown container kind {kind!r}")


# ----------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------
def _write(path, blob: bytes):
    """Writes ``blob`` to ``path`` through a temporary file and a rename: a reader never
    sees half a file."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".nxpy-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def save(value, path) -> None:
    """Writes :func:`serialize` of ``value`` to ``path``.

    A sharded tensor is written whole. Across processes, each process writes what it
    holds: a tensor whose shards live on several processes cannot be read by one (the
    error names ``nxpy.distributed.process_allgather``), so gather it first (every process
    calls ``process_allgather``, a collective) and write from one process
    (``nxpy.distributed.process_index() == 0``), as ``examples/gpt.py`` does; ``save``
    itself never communicates, so calling it from process 0 alone cannot hang.

    >>> import nxpy as nx, os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "params.nx")
    >>> nx.save((nx.tensor([1, 2]), None), p)
    >>> nx.load(p)[0].tolist()
    [1, 2]
    """
    _write(path, serialize(value))


def load(path, *, backend=None):
    """The value :func:`save` wrote to ``path`` (see :func:`deserialize`)."""
    with open(os.fspath(path), "rb") as f:
        blob = f.read()
    try:
        return deserialize(blob, backend=backend)
    except SerializationError as e:
        raise SerializationError(f"load {os.fspath(path)!r}: {str(e).split(': ', 1)[1]}") from None


# ----------------------------------------------------------------------------------------
# NumPy's formats
# ----------------------------------------------------------------------------------------
def _numpy_array(t, what):
    if not isinstance(t, Tensor):
        t = tensor(t)
    if t.type == T.parse("bf16"):
        raise TypeError(f"save_numpy: {what} is bf16, which NumPy's .npy format cannot "
                        f"describe (it would read back as raw bytes); convert it first "
                        f"(nx.as_type(t, 'f32')) or use nx.save, which keeps bf16")
    return np.asarray(t.to_numpy(), dtype=t.type.dtype).reshape(t.shape)


def save_numpy(path, value) -> None:
    """Writes a tensor to a ``.npy`` file, or a dict of name → tensor to a ``.npz``
    archive (uncompressed, as ``np.savez``), readable by ``np.load``. Names of dims are
    not kept (NumPy has none).

    >>> import nxpy as nx, numpy as np, os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> nx.save_numpy(os.path.join(d, "x.npy"), nx.tensor([1.5, 2.5]))
    >>> np.load(os.path.join(d, "x.npy")).tolist()
    [1.5, 2.5]
    >>> nx.save_numpy(os.path.join(d, "p.npz"), {"w": nx.tensor([[1]]), "b": nx.tensor(0)})
    >>> sorted(nx.load_numpy(os.path.join(d, "p.npz")))
    ['b', 'w']
    """
    path = os.fspath(path)
    buf = io.BytesIO()
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise TypeError(f"save_numpy: the names of a .npz archive's arrays must be "
                                f"strings, got {k!r}")
        np.savez(buf, **{k: _numpy_array(v, f"entry {k!r}") for k, v in value.items()})
    else:
        np.save(buf, _numpy_array(value, "the tensor"), allow_pickle=False)
    _write(path, buf.getvalue())


def load_numpy(path, *, backend=None):
    """A tensor from a ``.npy`` file, or a dict of name → tensor from a ``.npz`` archive
    (Nx's ``Nx.from_numpy/1`` and ``Nx.from_numpy_archive/1``). Object arrays (pickles)
    are refused; so are dtypes nxpy has no type for."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        start = f.read(6)
    if start[:4] == b"PK\x03\x04":
        kind = "npz"
    elif start == b"\x93NUMPY":
        kind = "npy"
    else:
        raise SerializationError(f"load_numpy {path!r}: not a NumPy .npy file or .npz archive "
                                 f"(it starts with {start!r})")
    try:
        loaded = np.load(path, allow_pickle=False)
        if kind == "npy":
            return _from_array(loaded, path, backend)
        with loaded as z:
            return {k: _from_array(z[k], f"{path}[{k!r}]", backend) for k in z.files}
    except (ValueError, EOFError, OSError) as e:
        if isinstance(e, SerializationError):
            raise
        raise SerializationError(f"load_numpy {path!r}: cannot read it ({e}); truncated or "
                                 f"damaged?") from None


def _from_array(arr, where, backend):
    try:
        T.from_dtype(arr.dtype)
    except KeyError:
        raise SerializationError(f"load_numpy {where}: NumPy dtype {arr.dtype} has no nxpy "
                                 f"type (expected one of "
                                 f"{', '.join(str(x) for x in T.ALL_TYPES)})") from None
    return from_numpy(np.ascontiguousarray(arr), backend=backend)
