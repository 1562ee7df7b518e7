"""Tensor types and Nx's promotion rules.

A type is a kind and a bit width: ``s`` (signed), ``u`` (unsigned), ``f`` (float),
``bf`` (brain float), ``c`` (complex) and ``pred`` (boolean).

>>> from nxpy.types import parse, merge
>>> str(parse("f32")), str(parse(("s", 8))), str(parse("bool"))
('f32', 's8', 'pred')
>>> str(merge(parse("s8"), parse("u8"))), str(merge(parse("s32"), parse("f16")))
('s16', 'f16')
>>> str(merge(parse("bf16"), parse("f16")))
'f32'
"""
from __future__ import annotations

from typing import NamedTuple

import ml_dtypes
import numpy as np

__all__ = ["Type", "parse", "merge", "merge_scalar", "to_floating", "to_real", "to_aggregate",
           "infer_scalar", "ALL_TYPES", "convert", "compute_dtype", "HALF_DTYPES"]


class Type(NamedTuple):
    kind: str
    bits: int

    def __str__(self) -> str:
        return "pred" if self.kind == "pred" else f"{self.kind}{self.bits}"

    def __repr__(self) -> str:
        return f"Type({str(self)!r})"

    @property
    def dtype(self) -> np.dtype:
        return _DTYPES[self]

    # kind predicates read better than tuple compares at call sites
    is_float = property(lambda self: self.kind in ("f", "bf"))
    is_complex = property(lambda self: self.kind == "c")
    is_int = property(lambda self: self.kind in ("s", "u"))
    is_pred = property(lambda self: self.kind == "pred")
    is_inexact = property(lambda self: self.kind in ("f", "bf", "c"))


_DTYPES = {
    Type("s", 8): np.dtype(np.int8), Type("s", 16): np.dtype(np.int16),
    Type("s", 32): np.dtype(np.int32), Type("s", 64): np.dtype(np.int64),
    Type("u", 8): np.dtype(np.uint8), Type("u", 16): np.dtype(np.uint16),
    Type("u", 32): np.dtype(np.uint32), Type("u", 64): np.dtype(np.uint64),
    Type("f", 16): np.dtype(np.float16), Type("bf", 16): np.dtype(ml_dtypes.bfloat16),
    Type("f", 32): np.dtype(np.float32), Type("f", 64): np.dtype(np.float64),
    Type("c", 64): np.dtype(np.complex64), Type("c", 128): np.dtype(np.complex128),
    Type("pred", 1): np.dtype(np.bool_),
}
_FROM_DTYPE = {v: k for k, v in _DTYPES.items()}
ALL_TYPES = tuple(_DTYPES)
_BY_NAME = {str(t): t for t in ALL_TYPES} | {"bool": Type("pred", 1)}

S32, S64, U32, F32, F64, C64, PRED = (Type("s", 32), Type("s", 64), Type("u", 32), Type("f", 32),
                                      Type("f", 64), Type("c", 64), Type("pred", 1))


def parse(t) -> Type:
    """Accepts ``"f32"``, ``("f", 32)``, a :class:`Type`, or a NumPy dtype."""
    if isinstance(t, Type):
        return t
    if isinstance(t, str) and t in _BY_NAME:
        return _BY_NAME[t]
    if isinstance(t, tuple) and len(t) == 2:
        kind, bits = t
        name = "pred" if kind == "pred" else f"{kind}{bits}"
        if name in _BY_NAME:
            return _BY_NAME[name]
    try:
        dt = np.dtype(t)
    except TypeError:
        dt = None
    if dt is not None and dt in _FROM_DTYPE:
        return _FROM_DTYPE[dt]
    raise TypeError(f"invalid type {t!r}: expected one of {', '.join(_BY_NAME)} "
                    f"(a string, a (kind, bits) tuple or a NumPy dtype)")


def from_dtype(dt) -> Type:
    return _FROM_DTYPE[np.dtype(dt)]


def merge(a: Type, b: Type) -> Type:
    """The type two tensors promote to (Nx's ``Nx.Type.merge/2``); pred is the bottom."""
    if a == b:
        return a
    if a.is_pred:
        return b
    if b.is_pred:
        return a
    if a.is_complex or b.is_complex:
        other = b if a.is_complex else a
        c = a if a.is_complex else b
        need = 128 if (other.kind == "f" and other.bits == 64) or a.bits == 128 or b.bits == 128 else 64
        return Type("c", need)
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            if a.kind != b.kind:  # bf16 with f16, or bf16 with a wider f
                return Type("f", max(32, a.bits, b.bits))
            return Type(a.kind, max(a.bits, b.bits))
        return a if a.is_float else b
    if a.kind == b.kind:
        return Type(a.kind, max(a.bits, b.bits))
    s, u = (a, b) if a.kind == "s" else (b, a)
    return Type("s", min(64, max(s.bits, 2 * u.bits)))


def _unsigned_size(x: int) -> int:
    return next((b for b, top in ((8, 255), (16, 65535), (32, 2**32 - 1)) if x <= top), 64)


def _signed_size(x: int) -> int:
    x = -x - 1 if x < 0 else x
    return next((b for b, top in ((8, 127), (16, 32767), (32, 2**31 - 1)) if x <= top), 64)


def merge_scalar(t: Type, value) -> Type:
    """Promotion with a weakly typed Python scalar (Nx's ``Nx.Type.merge_number``): the
    tensor's type is kept as far as it can hold the number. An integer widens an integer
    type only as much as the value needs, and a negative one makes an unsigned type
    signed (twice as wide); floats keep float types and make integers f32.

    >>> [str(merge_scalar(parse(t), v)) for t, v in [("u8", 255), ("u8", 256), ("u8", -1),
    ...                                               ("s8", -129), ("u64", -1), ("f16", 7)]]
    ['u8', 'u16', 's16', 's16', 's64', 'f16']
    """
    if isinstance(value, bool):
        return t
    if isinstance(value, int):
        if t.is_pred:
            return Type("s", max(32, _signed_size(value)))
        if t.kind == "u":
            if value >= 0:
                return Type("u", max(t.bits, _unsigned_size(value)))
            return Type("s", max(min(2 * t.bits, 64), _signed_size(value)))
        if t.kind == "s":
            return Type("s", max(t.bits, _signed_size(value)))
        return t
    if isinstance(value, float):
        return t if t.is_inexact else F32
    if isinstance(value, complex):
        if t.is_complex:
            return t
        return Type("c", 128) if t == F64 else C64
    raise TypeError(f"expected a number, got {type(value).__name__}")


def infer_scalar(value) -> Type:
    """The type of a Python scalar on its own: bool→pred, int→s32, float→f32, complex→c64."""
    if isinstance(value, (bool, np.bool_)):
        return PRED
    if isinstance(value, (int, np.integer)):
        return S32
    if isinstance(value, (float, np.floating)):
        return F32
    if isinstance(value, (complex, np.complexfloating)):
        return C64
    raise TypeError(f"expected a number, got {type(value).__name__}")


def to_floating(t: Type) -> Type:
    """Integers and pred become f32; floats and complex stay."""
    return t if t.is_inexact else F32


def to_real(t: Type) -> Type:
    """c64→f32, c128→f64; other types stay."""
    return Type("f", t.bits // 2) if t.is_complex else t


def to_aggregate(t: Type) -> Type:
    """Accumulator type of sum/product: small integers widen to 32 bits, pred to s32."""
    if t.is_pred:
        return S32
    if t.is_int and t.bits < 32:
        return Type(t.kind, 32)
    return t


def min_value(t: Type):
    if t.is_inexact:
        return -np.inf
    if t.is_pred:
        return False
    return np.iinfo(t.dtype).min


def max_value(t: Type):
    if t.is_inexact:
        return np.inf
    if t.is_pred:
        return True
    return np.iinfo(t.dtype).max


# ----------------------------------------------------------------------------------------
# Values: converting NumPy arrays between types with XLA's semantics
# ----------------------------------------------------------------------------------------
_F32 = np.dtype(np.float32)
HALF_DTYPES = {np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)}


def compute_dtype(dt):
    """f16/bf16 compute in f32 and round once at the end, as XLA:CPU does."""
    return _F32 if dt in HALF_DTYPES else dt


def convert(arr: np.ndarray, t: Type) -> np.ndarray:
    """Element type conversion with XLA semantics (float→int saturates, NaN→0)."""
    dt = t.dtype
    if arr.dtype == dt:
        return arr
    if t.is_int and arr.dtype.kind in "fcV" or (t.is_int and arr.dtype in HALF_DTYPES):
        src = (arr.real if arr.dtype.kind == "c" else arr).astype(np.float64)
        info = np.iinfo(dt)
        # compare in f64 before casting: float(info.max) may round up (2**63 for s64)
        lo, hi = float(info.min), float(info.max)
        src = np.trunc(src)
        big, small = src >= hi, src <= lo
        inside = np.where(big | small | np.isnan(src), 0, src).astype(dt)
        return np.where(big, info.max, np.where(small, info.min, inside)).astype(dt)
    if t.is_pred:
        return arr != 0
    with np.errstate(all="ignore"):
        if arr.dtype.kind == "c" and not t.is_complex:
            return arr.real.astype(dt)
        return arr.astype(dt)
