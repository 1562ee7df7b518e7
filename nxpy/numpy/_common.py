"""What every module of nxpy.numpy shares: NumPy's type names, ``dtype=`` arguments, array
conversion and ``axis=`` arguments."""
from __future__ import annotations

import numbers

import numpy as np

from .. import ops as O
from .. import shape as S
from .. import types as T
from ..ops.methods import axes_of  # noqa: F401 - the modules' axis= arguments
from ..tensor import Tensor

__all__ = ["asarray", "array", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "float16", "bfloat16", "float32", "float64", "complex64",
           "complex128", "dtype_of", "e", "pi", "inf", "nan", "euler_gamma", "newaxis"]

#: NumPy's constants (``jnp.pi``, ...); ``newaxis`` is None, as in NumPy
e, pi, inf, nan = np.e, np.pi, np.inf, np.nan
euler_gamma = np.euler_gamma
newaxis = None

bool_, int8, int16, int32, int64 = (T.parse(t) for t in ("pred", "s8", "s16", "s32", "s64"))
uint8, uint16, uint32, uint64 = (T.parse(t) for t in ("u8", "u16", "u32", "u64"))
float16, bfloat16, float32, float64 = (T.parse(t) for t in ("f16", "bf16", "f32", "f64"))
complex64, complex128 = T.parse("c64"), T.parse("c128")


def dtype_of(dtype, fn: str, arg: str = "dtype"):
    """``dtype`` (a NumPy dtype or type, a name such as ``"float32"``, an nxpy type, or
    None) as an nxpy type (None stays None), or a TypeError naming ``fn`` and ``arg``.

    >>> dtype_of("float32", "zeros"), dtype_of(np.int8, "zeros"), dtype_of(None, "zeros")
    (Type('f32'), Type('s8'), None)
    """
    if dtype is None:
        return None
    try:
        return T.parse(dtype)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fn}: expected {arg} to be a NumPy dtype or an nxpy type, got "
                        f"{dtype!r} ({e})") from None


def real_number(value, fn: str, arg: str, *, tensors: bool = False):
    """``value`` as NumPy's real-number arguments (``ddof``, ``nan=``, ``rtol``): a Python
    or NumPy int or float (a 0-d array too); with ``tensors``, also a real scalar tensor,
    traced or not (as ``jnp`` takes them). Bools, strings, complex numbers and sequences are
    a TypeError naming ``fn`` and ``arg``, never parsed or read by their truth.

    >>> real_number(np.float32(0.5), "std", "ddof"), real_number(np.array(2), "std", "ddof")
    (np.float32(0.5), np.int64(2))
    >>> real_number("1", "std", "ddof")
    Traceback (most recent call last):
    ...
    TypeError: std: expected ddof to be a real number, got '1' (str)
    """
    if isinstance(value, Tensor):
        if value.rank == 0 and not (value.type.is_complex or value.type.is_pred):
            if tensors:
                return value
            S.not_traced(value, f"{fn}: {arg}")
            return value.item()
    elif isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}: expected {arg} to be a real number, got {value!r} "
                        f"({type(value).__name__})")
    return value


def asarray(a, dtype=None, order=None, *, copy=None) -> Tensor:
    """``a`` (a tensor, a NumPy array, a number or nested lists) as a tensor, converted to
    ``dtype`` when given (``jnp.asarray``; ``order`` and ``copy`` change nothing: tensors
    are immutable and row-major).

    >>> asarray([1, 2], dtype="float32").tolist()
    [1.0, 2.0]
    """
    t = dtype_of(dtype, "asarray")
    x = O.to_tensor(a, "a")
    return x if t is None or x.type == t else O.as_type(x, t)


def array(object, dtype=None, *args, copy=True, order="K", ndmin=0) -> Tensor:
    """``jnp.array``: as :func:`asarray`, with at least ``ndmin`` axes (leading size-1
    ones added); tensors are immutable, so ``copy`` changes nothing.

    >>> array([1, 2], ndmin=2).shape
    (1, 2)
    """
    if args:
        raise TypeError(f"array: expected at most 2 positional arguments, got {2 + len(args)}")
    x = asarray(object, dtype)
    return x if x.rank >= ndmin else O.reshape(x, (1,) * (ndmin - x.rank) + x.shape)
