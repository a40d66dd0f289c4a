"""Plain data across the process boundary: a JSON skeleton plus the arrays in an ``.npz``.

What crosses between the grader and a student's worker is never pickled. A value is one of
``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, a NumPy array or scalar of a
numeric or boolean dtype, or a ``tuple``/``list``/``dict`` (string keys) of those. :func:`pack`
turns a value into bytes; :func:`unpack` turns bytes back into a value and is safe on hostile
input: arrays are read with ``allow_pickle=False`` from an uncompressed zip whose sizes are
checked before anything is allocated, nesting depth and node counts are bounded, and anything
unexpected raises :class:`PlainDataError`.
"""

from __future__ import annotations

import io
import json
import math
import struct
import zipfile

import numpy as np

__all__ = ["PlainDataError", "pack", "unpack", "to_skeleton", "from_skeleton"]

_KINDS = "biufc"  # bool, signed and unsigned integers, floats, complex
MAX_DEPTH = 32
MAX_NODES = 200_000
_HEAD = struct.Struct(">I")


class PlainDataError(ValueError):
    """A value that is not plain data, or bytes that do not decode to plain data."""


def to_skeleton(value, arrays: list, *, _depth: int = 0, _count: list | None = None):
    """A JSON-able description of ``value``; arrays are appended to ``arrays`` and referenced.

    ``_count`` (a one-element list) accumulates the number of values described, so that a caller
    can keep several values together under :data:`MAX_NODES`.
    """
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_NODES:
        raise PlainDataError("too many values")
    if _depth > MAX_DEPTH:
        raise PlainDataError("value nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):  # subclasses (IntEnum, ...) become plain ints
        value = int(value)
        return {"int": str(value)} if abs(value) >= 2**53 else value
    if isinstance(value, float):  # including np.float64, a float subclass
        value = float(value)
        return value if math.isfinite(value) else {"float": repr(float(value))}
    if isinstance(value, complex):
        value = complex(value)
        return {
            "complex": [
                to_skeleton(value.real, arrays, _count=count),
                to_skeleton(value.imag, arrays, _count=count),
            ]
        }
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype.kind not in _KINDS or arr.dtype.hasobject:
            raise PlainDataError(f"array dtype {arr.dtype} is not numeric")
        arrays.append(np.array(arr, order="C", copy=True))
        return {("scalar" if isinstance(value, np.generic) else "array"): len(arrays) - 1}
    if isinstance(value, list):
        return [to_skeleton(v, arrays, _depth=_depth + 1, _count=count) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [to_skeleton(v, arrays, _depth=_depth + 1, _count=count) for v in value]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise PlainDataError("dict keys must be strings")
        return {
            "dict": [[k, to_skeleton(v, arrays, _depth=_depth + 1, _count=count)] for k, v in value.items()]
        }
    raise PlainDataError(f"{type(value).__name__} is not plain data")


def from_skeleton(node, arrays: list, *, _depth: int = 0, _count: list | None = None):
    """Inverse of :func:`to_skeleton`, validating every node."""
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_NODES:
        raise PlainDataError("too many values")
    if _depth > MAX_DEPTH:
        raise PlainDataError("value nested too deeply")
    if node is None or isinstance(node, (bool, str, int, float)):
        return node
    if isinstance(node, list):
        return [from_skeleton(v, arrays, _depth=_depth + 1, _count=count) for v in node]
    if isinstance(node, dict) and len(node) == 1:
        ((tag, body),) = node.items()
        if tag in ("array", "scalar"):
            if not isinstance(body, int) or isinstance(body, bool) or not 0 <= body < len(arrays):
                raise PlainDataError("bad array reference")
            arr = arrays[body]
            return arr[()] if tag == "scalar" else arr
        if tag == "tuple" and isinstance(body, list):
            return tuple(from_skeleton(v, arrays, _depth=_depth + 1, _count=count) for v in body)
        if tag == "dict" and isinstance(body, list):
            out = {}
            for item in body:
                if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                    raise PlainDataError("bad dict entry")
                out[item[0]] = from_skeleton(item[1], arrays, _depth=_depth + 1, _count=count)
            return out
        if tag == "int" and isinstance(body, str) and len(body) <= 4300:
            try:
                return int(body)
            except ValueError as exc:
                raise PlainDataError("bad integer") from exc
        if tag == "float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "complex" and isinstance(body, list) and len(body) == 2:
            re_, im = (from_skeleton(v, arrays, _depth=_depth + 1, _count=count) for v in body)
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (re_, im)):
                raise PlainDataError("bad complex number")
            return complex(re_, im)
    raise PlainDataError("unexpected node in plain data")


def pack(value) -> bytes:
    """Bytes holding ``value``: a length-prefixed JSON skeleton, then an uncompressed ``.npz``."""
    arrays: list = []
    skeleton = json.dumps(to_skeleton(value, arrays), separators=(",", ":"), allow_nan=False).encode()
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": a for i, a in enumerate(arrays)})
    return _HEAD.pack(len(skeleton)) + skeleton + buf.getvalue()


def _read_arrays(blob: bytes, max_bytes: int) -> list:
    try:
        zf = zipfile.ZipFile(io.BytesIO(blob))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise PlainDataError("the array archive is not a zip file") from exc
    infos = zf.infolist()
    if len(infos) > MAX_NODES:
        raise PlainDataError("too many arrays")
    total = 0
    arrays = []
    for i, info in enumerate(infos):
        if info.filename != f"a{i}.npy" or info.compress_type != zipfile.ZIP_STORED:
            raise PlainDataError("unexpected member in the array archive")
        total += info.file_size
        if total > max_bytes:
            raise PlainDataError("arrays larger than allowed")
        try:
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise PlainDataError("unsupported array format version")
                if dtype.hasobject or dtype.kind not in _KINDS or dtype.fields is not None:
                    raise PlainDataError(f"array dtype {dtype} is not numeric")
                nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize if shape else dtype.itemsize
                if nbytes < 0 or nbytes > info.file_size:
                    raise PlainDataError("array header does not match its data")
            with zf.open(info) as fh:
                arr = np.lib.format.read_array(fh, allow_pickle=False)
        except PlainDataError:
            raise
        except Exception as exc:  # noqa: BLE001 - any decoding failure is bad data
            raise PlainDataError(f"unreadable array: {type(exc).__name__}") from exc
        arrays.append(arr)
    return arrays


def unpack(data: bytes, *, max_bytes: int = 256 * 2**20):
    """Decode bytes made by :func:`pack`; raises :class:`PlainDataError` on anything else."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) < _HEAD.size:
        raise PlainDataError("truncated plain data")
    data = bytes(data)
    if len(data) > max_bytes:
        raise PlainDataError("plain data larger than allowed")
    (n,) = _HEAD.unpack_from(data)
    if n > len(data) - _HEAD.size:
        raise PlainDataError("truncated plain data")
    try:
        skeleton = json.loads(data[_HEAD.size : _HEAD.size + n].decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise PlainDataError("the skeleton is not JSON") from exc
    arrays = _read_arrays(data[_HEAD.size + n :], max_bytes)
    try:
        return from_skeleton(skeleton, arrays)
    except RecursionError as exc:
        raise PlainDataError("value nested too deeply") from exc
