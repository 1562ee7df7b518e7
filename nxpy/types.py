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
           "infer_scalar", "ALL_TYPES", "convert", "compute_dtype", "HALF_DTYPES",
           "check_representable", "UNSUPPORTED"]


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


#: Nx's types nxpy does not support (its 2- and 4-bit integers and 8-bit floats): their
#: names are rejected, never read as NumPy's byte-size codes ("u4" is not uint32)
UNSUPPORTED = {"s2": "2-bit signed integer", "s4": "4-bit signed integer",
               "u2": "2-bit unsigned integer", "u4": "4-bit unsigned integer",
               "f8": "8-bit float"}
_NUMPY_NAMES = {t.dtype.name: str(t) for t in ALL_TYPES}


def _invalid(t, why=""):
    return TypeError(f"invalid type {t!r}{why}: expected one of {', '.join(_BY_NAME)} "
                     f"(a string, a (kind, bits) tuple or a NumPy dtype)")


def parse(t) -> Type:
    """Accepts ``"f32"``, ``("f", 32)``, a :class:`Type`, or a NumPy dtype (or its full
    name, ``"float32"``). A name is never reinterpreted: NumPy's byte-size codes
    (``"u4"``, ``"f8"``, ``"i4"``) are rejected, as ``"u4"`` and ``"f8"`` are Nx's 4-bit
    integer and 8-bit float, which nxpy does not support.

    >>> str(parse("float32")), str(parse(np.int8))
    ('f32', 's8')
    >>> parse("u4")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: invalid type 'u4' (Nx's 4-bit unsigned integer, which nxpy does not support):
    expected one of s8, s16, s32, s64, u8, u16, u32, u64, f16, bf16, f32, f64, c64, c128,
    pred, bool (a string, a (kind, bits) tuple or a NumPy dtype)
    """
    if isinstance(t, Type):
        return t
    if isinstance(t, tuple):
        if len(t) == 2 and isinstance(t[0], str) and isinstance(t[1], int):
            t = "pred" if t[0] == "pred" else f"{t[0]}{t[1]}"
        else:
            raise _invalid(t)
    if isinstance(t, str):
        if t in _BY_NAME:
            return _BY_NAME[t]
        if t in UNSUPPORTED:
            raise _invalid(t, f" (Nx's {UNSUPPORTED[t]}, which nxpy does not support)")
        if t in _NUMPY_NAMES:  # NumPy's full names only, never its byte-size codes
            return _BY_NAME[_NUMPY_NAMES[t]]
        raise _invalid(t)
    try:
        dt = np.dtype(t)
    except (TypeError, ValueError):
        dt = None
    if dt is not None and dt in _FROM_DTYPE:
        return _FROM_DTYPE[dt]
    raise _invalid(t)


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
        wide = (other.kind == "f" and other.bits == 64) or a.bits == 128 or b.bits == 128
        return Type("c", 128 if wide else 64)
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


def max_finite(t: Type) -> float:
    """The largest finite value of the floating-point type ``t``.

    >>> max_finite(parse("f16")), max_finite(parse("bf16")) > 3e38
    (65504.0, True)
    """
    return float(ml_dtypes.finfo(t.dtype).max)


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


def _first(arr, mask):
    v = arr[mask].flat[0] if arr.ndim else arr.item()
    return v.item() if isinstance(v, np.generic) else v


def check_representable(data, t: Type, what: str = "value") -> None:
    """Raises unless every number of ``data`` (a Python number, or a NumPy array of
    numbers: an object array for integers beyond 64 bits) can be held by type ``t``.

    This is the check on values *entering* nxpy (tensor creation, ``full``, Python
    scalars in ops), as NumPy 2 and JAX make it: an integer out of ``t``'s range, or too
    big for a float type, is an OverflowError; NaN or infinity into an integer type a
    ValueError; a complex number with an imaginary part into a real type a TypeError.
    Floats into integer types truncate toward zero, as in NumPy; float values beyond a
    float type's range round to infinity (IEEE). Conversions of tensors (``as_type``)
    keep XLA's semantics and are not checked.

    >>> check_representable(255, parse("u8"))
    >>> check_representable(300, parse("u8"), "x")
    Traceback (most recent call last):
    ...
    OverflowError: x: integer 300 is out of range for u8 (0 to 255)
    >>> check_representable(float("nan"), parse("s32"))
    Traceback (most recent call last):
    ...
    ValueError: value: nan cannot be converted to the integer type s32
    """
    if t.is_pred or type(data) is bool or (type(data) is float and not t.is_int):
        return
    if type(data) is int:  # the common case (a scalar in an op), without NumPy
        _check_ints((data,), t, what)
        return
    arr = data if isinstance(data, np.ndarray) else np.asarray(data)
    if not arr.size or arr.dtype.kind == "b":
        return
    if arr.dtype.kind in "iuO":  # an object array holds Python ints beyond 64 bits
        ints = [int(arr.min()), int(arr.max())] if arr.dtype.kind != "O" else \
            [int(v) for v in arr.flat]
        _check_ints(ints, t, what)
        return
    if arr.dtype.kind == "c" and not t.is_complex:
        bad = arr.imag != 0
        if np.any(bad):
            raise TypeError(f"{what}: complex number {_first(arr, bad)} cannot be held by the "
                            f"real type {t}: take nx.real of it, or use a complex type")
        arr = arr.real
    if t.is_int:
        f = arr.astype(np.float64)
        bad = ~np.isfinite(f)
        if np.any(bad):
            raise ValueError(f"{what}: {_first(f, bad)} cannot be converted to the integer "
                             f"type {t}")
        info = np.iinfo(t.dtype)
        tr = np.trunc(f)  # the bounds are exact in f64 (0 or powers of two)
        bad = (tr < float(info.min)) | (tr >= float(int(info.max) + 1))
        if np.any(bad):
            raise OverflowError(f"{what}: value {_first(f, bad)} is out of range for {t} "
                                f"({info.min} to {info.max})")


def _int_text(v: int) -> str:
    s = str(v)
    return s if len(s) <= 24 else f"{s[:12]}...({len(s.lstrip('-'))} digits)"


def _int_range(t: Type) -> tuple:
    """The integers type ``t`` holds: its range, or ± the largest finite float."""
    if t.is_int:
        info = np.iinfo(t.dtype)
        return int(info.min), int(info.max)
    top = int(float(ml_dtypes.finfo(to_real(t).dtype).max))
    return -top, top


_INT_RANGES = {t: _int_range(t) for t in ALL_TYPES if not t.is_pred}


def _check_ints(ints, t: Type, what) -> None:
    lo, hi = _INT_RANGES[t]
    bad = next((v for v in ints if not lo <= v <= hi), None)
    if bad is None:
        return
    if t.is_int:
        raise OverflowError(f"{what}: integer {_int_text(bad)} is out of range for {t} "
                            f"({lo} to {hi})")
    raise OverflowError(f"{what}: integer {_int_text(bad)} is too large for {t} (its largest "
                        f"finite value is {float(hi):g})")
