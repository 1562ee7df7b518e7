"""Shape rules shared by every op: axes, broadcasting, names, windows.

>>> broadcast((2, 1), (3,))
(2, 3)
>>> normalize_axis(-1, 3)
2
>>> normalize_axis(3, 2)
Traceback (most recent call last):
...
ValueError: given axis (3) invalid for shape with rank 2
>>> dims((2, 2.5), "shape")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
TypeError: expected shape to be a tuple of non-negative integers, got (2, 2.5): 2.5 (float)
is not an integer
"""
from __future__ import annotations

import math
import operator

import numpy as np

__all__ = ["integer", "as_int", "boolean", "is_traced", "not_traced", "dims", "normalize_axis",
           "normalize_axes", "broadcast", "broadcast_names", "merge_names", "integers",
           "check_name", "check_names", "size", "window_padding", "window_out_shape"]


def size(shape) -> int:
    return math.prod(shape)


def as_int(value):
    """``value`` as an int if it is a real integer (a Python int, a NumPy integer, a 0-d
    integer array or tensor), else None: bools and floats are not integers here, even
    where Python would take them (``True`` as 1, ``2.0`` as 2)."""
    if (isinstance(value, (bool, np.bool_))
            or getattr(getattr(value, "dtype", None), "kind", "") == "b"):
        return None
    if isinstance(value, int):
        return int(value)
    if getattr(value, "shape", ()) != ():
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _expected(what: str) -> str:
    """``"op: arg"`` → ``"op: expected arg"`` (the op first, as every op's errors read)."""
    op, _, arg = what.rpartition(": ")
    return f"{op}: expected {arg}" if op else f"expected {arg}"


def _kind(value) -> str:
    return f"{value!r} ({type(value).__name__})"


def is_traced(value) -> bool:
    """Whether ``value`` is a tensor being traced (inside ``jit``/``defn``): its value
    exists only when the compiled program runs."""
    return bool(getattr(getattr(value, "backend", None), "is_expr", False))


def not_traced(value, what: str) -> None:
    """A TypeError naming ``what`` when ``value`` is a traced tensor where a Python value
    is needed (a shape, an axis, a count, a flag): the fix is a static value, as JAX's
    ``ConcretizationTypeError`` says.

    >>> not_traced(3, "scan: length")  # a Python value: nothing to say
    """
    if is_traced(value):
        shape = "[" + ", ".join(map(str, value.shape)) + "]"
        raise TypeError(f"{_expected(what)} to be a Python value, got a traced tensor "
                        f"{value.type}{shape} (its value exists only when the compiled "
                        f"program runs): pass a Python number or bool, as a static "
                        f"argument (jit's static_argnums/static_argnames) or a closure")


def boolean(value, what: str) -> bool:
    """The one check of a flag (``reverse``, ``is_causal``, ...): a Python bool or a NumPy
    bool (a traced tensor is :func:`not_traced`'s error); anything else, ``1``, ``"yes"``
    or ``None`` included, is a TypeError naming ``what``, never read by its truth.

    >>> boolean(np.True_, "scan: reverse")
    True
    >>> boolean("yes", "scan: reverse")
    Traceback (most recent call last):
    ...
    TypeError: scan: expected reverse to be a bool, got 'yes' (str)
    """
    not_traced(value, what)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{_expected(what)} to be a bool, got {_kind(value)}")


def integer(value, what: str, *, minimum=None) -> int:
    """The one check of "a real integer" for every shape, size, axis and count argument:
    Python ints, NumPy integers and 0-d integer arrays are accepted (as an int); bools,
    floats and anything else are a TypeError naming ``what``; below ``minimum`` a
    ValueError.

    >>> integer(np.int64(3), "size"), integer(np.array(2), "size")
    (3, 2)
    >>> integer(2.0, "size")
    Traceback (most recent call last):
    ...
    TypeError: expected size to be an integer, got 2.0 (float)
    """
    v = as_int(value)
    if v is None:
        not_traced(value, what)
        raise TypeError(f"{_expected(what)} to be an integer, got {_kind(value)}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{_expected(what)} to be an integer >= {minimum}, got {v}")
    return v


def dims(shape, what: str = "shape") -> tuple:
    """A shape (one integer, or a sequence of them) as a tuple of non-negative ints."""
    one = as_int(shape)
    out = (one,) if one is not None else integers(shape, what, "a tuple of non-negative integers")
    if any(d < 0 for d in out):
        raise ValueError(f"{_expected(what)} to be a tuple of non-negative integers, got {out}")
    return out


def integers(values, what: str, expected: str = "a sequence of integers") -> tuple:
    """A sequence of integers (strides, dilations, lengths, ...) as a tuple of ints."""
    try:
        entries = tuple(values)
    except TypeError:
        raise TypeError(f"{_expected(what)} to be {expected}, got {_kind(values)}") from None
    for d in entries:
        if as_int(d) is None:
            not_traced(d, f"{what} entries")
            raise TypeError(f"{_expected(what)} to be {expected}, got {entries}: "
                            f"{_kind(d)} is not an integer")
    return tuple(as_int(d) for d in entries)


def check_name(name, what: str):
    """A dim name: a string or None."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{_expected(what)} to be a string or None, got {_kind(name)}")
    return name


def check_names(names, shape, what: str = "names") -> tuple:
    """Dim names: one string or None per dim of ``shape``."""
    if isinstance(names, str):
        raise TypeError(f"{_expected(what)} to be a list of one name (a string) or None per "
                        f"dim of shape {tuple(shape)}, got the string {names!r}")
    try:
        names = tuple(names)
    except TypeError:
        raise TypeError(f"{_expected(what)} to be a list of one name (a string) or None per "
                        f"dim of shape {tuple(shape)}, got {_kind(names)}") from None
    if len(names) != len(shape):
        raise ValueError(f"{_expected(what)} to have one name (a string) or None per dim of "
                         f"shape {tuple(shape)}, got {list(names)}")
    for n in names:
        check_name(n, f"{what} entries")
    return names


def normalize_axis(axis, rank: int, names=None) -> int:
    """An axis as index, negative index or name → a non-negative index."""
    if isinstance(axis, str):
        if names and axis in names:
            return names.index(axis)
        raise ValueError(f"axis name {axis!r} not found in names {tuple(names or ())}")
    a = as_int(axis)
    if a is None:
        not_traced(axis, "axis")
        raise TypeError(f"axis must be an integer or a name, got {_kind(axis)}")
    if not -rank <= a < rank:
        raise ValueError(f"given axis ({a}) invalid for shape with rank {rank}")
    return a % rank if rank else a


def normalize_axes(axes, rank: int, names=None, *, what="axes") -> tuple[int, ...]:
    """None → all axes; otherwise each normalised, duplicates rejected."""
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, str) or as_int(axes) is not None:
        axes = [axes]
    out = tuple(normalize_axis(a, rank, names) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{what} {list(axes)} contain a repeated axis")
    return out


def broadcast(a: tuple, b: tuple, *, op="broadcast") -> tuple:
    """NumPy/Nx broadcasting: right-aligned, each pair equal or one of them 1."""
    if a == b:
        return a
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError(f"{op}: cannot broadcast tensor of shape {tuple(a)} "
                             f"with tensor of shape {tuple(b)}")
    return tuple(out)


def merge_names(a, b, *, op="op"):
    """Names of two same-rank dims lists: None yields to a name, two names must agree."""
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise ValueError(f"{op}: cannot merge names {x!r} and {y!r}")
        out.append(x if x is not None else y)
    return tuple(out)


def broadcast_names(shape, *tensors, op="op"):
    """Names of a broadcast result: right-aligned merge of the operands' names."""
    n = len(shape)
    names = (None,) * n
    for t in tensors:
        tn = (None,) * (n - len(t.names)) + tuple(t.names)
        names = merge_names(names, tn, op=op)
    return names


def window_padding(padding, shape, window, strides, dilations=None):
    """`valid` | `same` | explicit [(lo, hi)] → explicit pairs, as XLA's reduce_window wants."""
    rank = len(shape)
    dilations = dilations or (1,) * rank
    if padding == "valid":
        return tuple((0, 0) for _ in range(rank))
    if padding == "same":
        pads = []
        for d, w, s, r in zip(shape, window, strides, dilations):
            eff = (w - 1) * r + 1
            out = -(-d // s)
            total = max((out - 1) * s + eff - d, 0)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    if isinstance(padding, (list, tuple)) and len(padding) == rank and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(as_int(v) is not None for v in p)
            for p in padding):
        return tuple((int(lo), int(hi)) for lo, hi in padding)
    raise ValueError(f"padding must be 'valid', 'same' or a list of {rank} (low, high) "
                     f"integer pairs, got {padding!r}")


def window_out_shape(shape, window, strides, padding, dilations=None):
    dilations = dilations or (1,) * len(shape)
    out = []
    for d, w, s, (lo, hi), r in zip(shape, window, strides, padding, dilations):
        eff = (w - 1) * r + 1
        span = d + lo + hi - eff
        if span < 0:
            if d == 0:  # an empty dim stays empty (as in XLA)
                out.append(0)
                continue
            raise ValueError(f"window {tuple(window)} does not fit in padded shape of "
                             f"{tuple(shape)}")
        out.append(span // s + 1)
    return tuple(out)
