"""Front-end ops: validation and shape/type/names inference, then dispatch.

Each op is described here once. The inferred output template ``out`` goes to the
backend first; backends (NumPy, Expr, EXLA, plugins) only compute.

>>> import nxpy as nx
>>> x = nx.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> nx.sum(x, axes=[1]).tolist()
[3.0, 7.0]
>>> str((nx.tensor([1, 2], type="s8") + 1).type)   # Python scalars are weak
's8'
>>> str((nx.tensor([1, 2]) * 0.5).type)           # int with float gives float
'f32'
>>> nx.dot(x, x).tolist()
[[7.0, 10.0], [15.0, 22.0]]
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from . import _context, shape as S, types as T
from .backend import default_backend, get_backend, op_method, pick
from .tensor import Tensor

_Number = (numbers.Number, np.generic)

# ----------------------------------------------------------------------------------------
# Op tables: the elementwise families, one line per op (type rule, accepted kinds).
#   type rules: same | float (ints→f32) | pred | real (complex→float)
#   kinds: any | num (no pred) | real (no complex) | int (integers and pred) | realf (real,
#          floats keep, ints→f32)
# ----------------------------------------------------------------------------------------
UNARY = {
    "negate": ("same", "num"), "abs": ("real", "any"), "sign": ("same", "num"),
    "floor": ("same", "real"), "ceil": ("same", "real"), "round": ("same", "real"),
    "exp": ("float", "any"), "expm1": ("float", "any"), "log": ("float", "any"),
    "log1p": ("float", "any"), "sqrt": ("float", "any"), "rsqrt": ("float", "any"),
    "cbrt": ("float", "real"), "sin": ("float", "any"), "cos": ("float", "any"),
    "tan": ("float", "any"), "asin": ("float", "real"), "acos": ("float", "real"),
    "atan": ("float", "real"), "sinh": ("float", "real"), "cosh": ("float", "real"),
    "tanh": ("float", "any"), "asinh": ("float", "real"), "acosh": ("float", "real"),
    "atanh": ("float", "real"), "sigmoid": ("float", "real"), "erf": ("float", "real"),
    "erfc": ("float", "real"), "erf_inv": ("float", "real"),
    "is_nan": ("pred", "any"), "is_infinity": ("pred", "any"),
    "bitwise_not": ("same", "int"), "logical_not": ("pred", "any"),
}

#   type rules: merge | float | compare (→pred, computed in the merged type) | logical
BINARY = {
    "add": ("merge", "any"), "subtract": ("merge", "any"), "multiply": ("merge", "any"),
    "divide": ("float", "any"), "quotient": ("merge", "intonly"), "remainder": ("merge", "real"),
    "pow": ("merge", "any"), "atan2": ("float", "real"), "min": ("merge", "real"),
    "max": ("merge", "real"), "bitwise_and": ("merge", "int"), "bitwise_or": ("merge", "int"),
    "bitwise_xor": ("merge", "int"), "left_shift": ("merge", "intonly"),
    "right_shift": ("merge", "intonly"),
    "equal": ("compare", "any"), "not_equal": ("compare", "any"), "less": ("compare", "real"),
    "less_equal": ("compare", "real"), "greater": ("compare", "real"),
    "greater_equal": ("compare", "real"),
    "logical_and": ("logical", "any"), "logical_or": ("logical", "any"),
    "logical_xor": ("logical", "any"),
}
# arithmetic on two preds computes in u8, as Nx (which has no boolean type) does
_ARITH_ON_PRED = {"add", "subtract", "multiply", "pow", "remainder", "quotient"}

REDUCTIONS = {"sum": "aggregate", "product": "aggregate", "reduce_max": "same",
              "reduce_min": "same", "all": "pred", "any": "pred"}

U8 = T.Type("u", 8)


def _kind_ok(t: T.Type, kinds: str) -> bool:
    return {"any": True, "num": not t.is_pred, "real": not t.is_complex,
            "int": t.is_int or t.is_pred, "intonly": t.is_int}[kinds]


_KIND_TEXT = {"num": "a numeric (non-pred) type", "real": "a real (non-complex) type",
              "int": "an integer or pred type", "intonly": "an integer type"}


def _axes_of(op, f, *args, **kw):
    """``S.normalize_axis``/``normalize_axes`` with the op named in their errors."""
    try:
        return f(*args, **kw)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op}: {e}") from None


def _check_kind(op, arg, t: T.Type, kinds: str):
    if not _kind_ok(t, kinds):
        raise TypeError(f"{op}: expected {arg} to have {_KIND_TEXT[kinds]}, got {t}")


def binary_compute_type(op: str, out: Tensor, a: Tensor, b: Tensor) -> T.Type:
    """The type both operands of a binary op are converted to before computing."""
    if BINARY[op][0] in ("compare", "logical"):
        return T.merge(a.type, b.type)
    return out.type


# ----------------------------------------------------------------------------------------
# Dispatch
# ----------------------------------------------------------------------------------------
def template(shape, type, names=None) -> Tensor:
    """A tensor with a shape, type and names but no data (for ``defn.compile``)."""
    shape = tuple(int(d) for d in shape)
    return Tensor(None, shape, T.parse(type), tuple(names) if names else None)


def _out(shape, type, names=None) -> Tensor:
    return Tensor(None, tuple(shape), type, tuple(names) if names is not None else None)


def _flat(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _flat(a)


def _to_backend(a, backend):
    if isinstance(a, Tensor):
        return a if a.backend is backend else backend.from_tensor(a)
    if isinstance(a, list):
        return [_to_backend(x, backend) for x in a]
    if isinstance(a, tuple):
        return tuple(_to_backend(x, backend) for x in a)
    return a


def _creation_backend(backend):
    if backend is not None:
        return get_backend(backend)
    ctx = _context.current()
    return ctx.backend if ctx is not None else default_backend()


def dispatch(name: str, out: Tensor, *args, backend=None, **attrs) -> Tensor:
    """Runs op ``name`` on the backend of its operands (or ``backend`` for creation ops)."""
    tensors = list(_flat(args))
    b = pick(tensors) if tensors else _creation_backend(backend)
    if tensors and builtins.any(t.backend is not b for t in tensors):
        args = _to_backend(args, b)
    fn = getattr(b, name, None) or op_method(b, name)
    return fn(out, *args, **attrs)


def to_tensor(x, arg="tensor") -> Tensor:
    """Tensors pass through; NumPy arrays, numbers and nested lists become tensors."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return from_numpy(np.asarray(x))
    if isinstance(x, (_Number, list, tuple)):
        return tensor(x)
    raise TypeError(f"expected {arg} to be a tensor, a number or a NumPy array, "
                    f"got {type(x).__name__}")


def _scalar_like(value, type, backend) -> Tensor:
    return backend.constant(_out((), type), value)


# ----------------------------------------------------------------------------------------
# Creation
# ----------------------------------------------------------------------------------------
def _infer_list_type(data) -> T.Type:
    arr = np.asarray(data)
    if arr.dtype == np.bool_:
        return T.PRED
    if np.issubdtype(arr.dtype, np.integer):
        return T.S32
    if np.issubdtype(arr.dtype, np.floating):
        return T.F32
    if np.issubdtype(arr.dtype, np.complexfloating):
        return T.C64
    raise TypeError(f"cannot build a tensor from {data!r}: expected numbers or nested "
                    f"lists of numbers of equal lengths")


def _big_ints(arr, data):
    """``data`` as an object array of Python ints when it holds integers NumPy could not
    represent as int64 (2**63 and up), else None."""
    if arr.dtype.kind not in "fO" or not arr.size:
        return None
    obj = np.array(data, dtype=object)
    if obj.shape != arr.shape or not builtins.all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            for v in obj.flat):
        return None
    try:
        return np.array(data, dtype=np.uint64)
    except OverflowError:
        return obj


def _wrap_ints(arr, t: T.Type):
    """Integers (an object or uint64 array) wrapped into integer type ``t``."""
    info = np.iinfo(t.dtype)
    lo, n = int(info.min), int(info.max) - int(info.min) + 1
    return np.array([(int(v) - lo) % n + lo for v in arr.flat], dtype=t.dtype).reshape(arr.shape)


def tensor(data, type=None, names=None, backend=None) -> Tensor:
    """A tensor from a number, nested lists, a NumPy array or another tensor.

    Lists infer s32 for integers, f32 for floats, c64 for complex and pred for bools.

    >>> import nxpy as nx
    >>> str(nx.tensor([1.5, 2]).type), nx.tensor(3, type="f64").tolist()
    ('f32', 3.0)
    """
    if isinstance(data, Tensor):
        return data if type is None else as_type(data, type)
    if isinstance(data, (np.ndarray, np.generic)):
        arr = np.array(data)  # a copy: tensors are values, later writes to `data` must not show
        t = T.parse(type) if type is not None else T.from_dtype(arr.dtype)
    else:
        try:
            arr = np.array(data)
        except ValueError as e:
            raise ValueError(f"cannot build a tensor from {data!r}: nested lists must have "
                             f"equal lengths") from e
        big = _big_ints(arr, data)
        if big is not None:  # ints beyond int64: NumPy made floats or objects of them
            if type is None:
                raise ValueError(f"integer {builtins.max(int(v) for v in big.flat)} does not "
                                 f"fit in s32: pass a wider type, such as type='u64'")
            arr = _wrap_ints(big, T.parse(type)) if T.parse(type).is_int else big.astype(np.float64)
        if arr.dtype == object:
            raise TypeError(f"cannot build a tensor from {data!r}: expected numbers or "
                            f"nested lists of numbers of equal lengths")
        t = T.parse(type) if type is not None else _infer_list_type(arr)
        if t == T.S32 and type is None and arr.size and (arr.max() > 2**31 - 1 or arr.min() < -2**31):
            raise ValueError(f"integer {arr.max() if arr.max() > 2**31 - 1 else arr.min()} does "
                             f"not fit in s32: pass a wider type, such as type='s64'")
    if arr.dtype != t.dtype:
        from .backends.numpy import convert  # XLA's conversion semantics (saturating, ...)
        arr = convert(arr, t)
    if names is not None and len(names) != arr.ndim:
        raise ValueError(f"names {list(names)} must have one entry per dim of shape {arr.shape}")
    b = get_backend(backend) if backend is not None else default_backend()
    return b.from_numpy(arr, t, tuple(names) if names is not None else None)


def from_numpy(array, names=None, backend=None) -> Tensor:
    """A tensor holding ``array`` (its dtype decides the type)."""
    array = np.asarray(array)
    try:
        t = T.from_dtype(array.dtype)
    except KeyError:
        raise TypeError(f"unsupported NumPy dtype {array.dtype}: expected one of "
                        f"{', '.join(str(x) for x in T.ALL_TYPES)}") from None
    return tensor(array, t, names, backend)


def _shape_arg(shape, op):
    if isinstance(shape, Tensor):
        return shape.shape
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{op}: expected a shape (tuple of non-negative ints), got {shape!r}") from None
    if builtins.any(d < 0 for d in shape):
        raise ValueError(f"{op}: expected a shape of non-negative ints, got {shape}")
    return shape


def iota(shape, axis=None, type="s32", names=None, backend=None) -> Tensor:
    """Counts along ``axis`` (or across the whole tensor when ``axis`` is None).

    >>> import nxpy as nx
    >>> nx.iota((2, 3), axis=1).tolist()
    [[0, 1, 2], [0, 1, 2]]
    >>> nx.iota((2, 2)).tolist()
    [[0, 1], [2, 3]]
    """
    shape = _shape_arg(shape, "iota")
    t = T.parse(type)
    if axis is None:
        flat = dispatch("iota", _out((S.size(shape),), t), backend=backend, axis=0)
        return reshape(flat, shape, names=names)
    axis = _axes_of("iota", S.normalize_axis, axis, len(shape), names)
    return dispatch("iota", _out(shape, t, names), backend=backend, axis=axis)


def eye(n, type="s32", names=None, backend=None) -> Tensor:
    """Identity matrix: ``eye(3)`` or, with batch dims, ``eye((2, 3, 3))``."""
    shape = (n, n) if isinstance(n, int) else _shape_arg(n, "eye")
    if len(shape) < 2:
        raise ValueError(f"eye: expected a shape of rank >= 2, got {shape}")
    return dispatch("eye", _out(shape, T.parse(type), names), backend=backend)


def full(shape, value, type=None, names=None, backend=None) -> Tensor:
    """A tensor of ``shape`` filled with ``value``."""
    shape = _shape_arg(shape, "full")
    if isinstance(value, Tensor):
        v = value if type is None else as_type(value, type)
    else:
        t = T.parse(type) if type is not None else T.infer_scalar(value)
        v = _scalar_like(value, t, _creation_backend(backend))
    return broadcast(v, shape, names=names)


# ----------------------------------------------------------------------------------------
# Elementwise
# ----------------------------------------------------------------------------------------
def _unary(name, x):
    x = to_tensor(x, "x")
    rule, kinds = UNARY[name]
    _check_kind(name, "x", x.type, kinds)
    t = {"same": x.type, "float": T.to_floating(x.type), "pred": T.PRED,
         "real": T.to_real(x.type)}[rule]
    return dispatch(name, _out(x.shape, t, x.names), x)


def _binary_operands(a, b):
    """Tensors for a binary op; Python scalars take the other side's type, weakly."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a, b
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        if isinstance(a, _Number) and not isinstance(a, np.generic):
            a = tensor(a)
        else:
            a = to_tensor(a, "left operand")
    if isinstance(a, Tensor) and isinstance(b, _Number) and not isinstance(b, np.generic):
        return a, _scalar_like(b, T.merge_scalar(a.type, b), pick([a]))
    if isinstance(b, Tensor) and isinstance(a, _Number) and not isinstance(a, np.generic):
        return _scalar_like(a, T.merge_scalar(b.type, a), pick([b])), b
    return to_tensor(a, "left operand"), to_tensor(b, "right operand")


def _binary(name, a, b):
    a, b = _binary_operands(a, b)
    rule, kinds = BINARY[name]
    _check_kind(name, "left operand", a.type, kinds)
    _check_kind(name, "right operand", b.type, kinds)
    shape = S.broadcast(a.shape, b.shape, op=name)
    names = S.broadcast_names(shape, a, b)
    m = T.merge(a.type, b.type)
    if rule == "merge":
        t = U8 if (m.is_pred and name in _ARITH_ON_PRED) else m
    elif rule == "float":
        t = T.to_floating(m)
    else:
        t = T.PRED
    return dispatch(name, _out(shape, t, names), a, b)


def _make_unary(name):
    def f(x):
        return _unary(name, x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}``; type rule: {UNARY[name][0]}."
    return f


def _make_binary(name):
    def f(a, b):
        return _binary(name, a, b)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` with broadcasting; type rule: {BINARY[name][0]}."
    return f


for _n in UNARY:
    globals()[_n] = _make_unary(_n)
for _n in BINARY:
    globals()[_n] = _make_binary(_n)
abs = globals()["abs"]  # noqa: A001 - the op, as in Nx
min = globals()["min"]  # noqa: A001
max = globals()["max"]  # noqa: A001
pow = globals()["pow"]  # noqa: A001
round = globals()["round"]  # noqa: A001
all = None  # replaced below; keeps linters quiet about shadowing
any = None


def floor_divide(a, b):
    """Python's ``//``: floor of the quotient (integers round toward negative infinity)."""
    a, b = _binary_operands(a, b)
    if T.merge(a.type, b.type).is_inexact:
        return floor(divide(a, b))  # noqa: F821 - defined from the UNARY table
    q = quotient(a, b)  # noqa: F821
    r = remainder(a, b)  # noqa: F821
    fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))  # noqa: F821
    return subtract(q, as_type(fix, q.type))  # noqa: F821


def mod(a, b):
    """Python's ``%``: the remainder takes the sign of the divisor."""
    a, b = _binary_operands(a, b)
    r = remainder(a, b)  # noqa: F821
    fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))  # noqa: F821
    return select(fix, add(r, b), r)  # noqa: F821


def select(pred, on_true, on_false) -> Tensor:
    """``on_true`` where ``pred`` is non-zero, else ``on_false`` (all three broadcast)."""
    pred = to_tensor(pred, "pred")
    on_true, on_false = _binary_operands(on_true, on_false)
    shape = S.broadcast(S.broadcast(pred.shape, on_true.shape, op="select"), on_false.shape,
                        op="select")
    t = T.merge(on_true.type, on_false.type)
    names = S.broadcast_names(shape, pred, on_true, on_false)
    return dispatch("select", _out(shape, t, names), pred, on_true, on_false)


def clip(x, min, max) -> Tensor:  # noqa: A002
    """Clamps ``x`` to ``[min, max]``; the bounds broadcast to ``x``'s shape."""
    x = to_tensor(x, "x")
    _check_kind("clip", "x", x.type, "real")
    _, lo = _binary_operands(x, min)
    _, hi = _binary_operands(x, max)
    for arg, b in (("min", lo), ("max", hi)):
        _check_kind("clip", arg, b.type, "real")
        if S.broadcast(x.shape, b.shape, op="clip") != x.shape:
            raise ValueError(f"clip: {arg} of shape {b.shape} does not broadcast to x's "
                             f"shape {x.shape}")
    t = T.merge(T.merge(x.type, lo.type), hi.type)
    return dispatch("clip", _out(x.shape, t, x.names), x, lo, hi)


def as_type(x, type) -> Tensor:
    """Converts elementwise to ``type`` (floats to ints truncate; to pred tests non-zero)."""
    x = to_tensor(x, "x")
    t = T.parse(type)
    if t == x.type:
        return x
    return dispatch("as_type", _out(x.shape, t, x.names), x)


def bitcast(x, type) -> Tensor:
    """Reinterprets the bits as ``type`` of the same width."""
    x = to_tensor(x, "x")
    t = T.parse(type)
    if x.type.is_pred or t.is_pred or x.type.bits != t.bits:
        raise TypeError(f"bitcast: expected a type of the same bit width as {x.type} "
                        f"(and not pred), got {t}")
    return dispatch("bitcast", _out(x.shape, t, x.names), x)


# ----------------------------------------------------------------------------------------
# Shape ops
# ----------------------------------------------------------------------------------------
def reshape(x, shape, names=None) -> Tensor:
    """Same values, new shape; one dim may be -1 (inferred)."""
    x = to_tensor(x, "x")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: at most one dim can be -1, got {shape}")
    if -1 in shape:
        rest = S.size([d for d in shape if d != -1])
        if rest == 0 or x.size % rest:
            raise ValueError(f"reshape: cannot infer -1 in {shape} for a tensor of shape "
                             f"{x.shape} ({x.size} elements)")
        shape = tuple(x.size // rest if d == -1 else d for d in shape)
    if builtins.any(d < 0 for d in shape) or S.size(shape) != x.size:
        raise ValueError(f"reshape: cannot reshape tensor of shape {x.shape} ({x.size} "
                         f"elements) to {shape} ({S.size(shape)} elements)")
    if shape == x.shape and names is None:
        return x
    return dispatch("reshape", _out(shape, x.type, names), x)


def squeeze(x, axes=None) -> Tensor:
    """Removes size-1 dims (all of them, or ``axes``)."""
    x = to_tensor(x, "x")
    if axes is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = _axes_of("squeeze", S.normalize_axes, axes, x.rank, x.names)
        bad = [a for a in axes if x.shape[a] != 1]
        if bad:
            raise ValueError(f"squeeze: cannot squeeze dims {bad} of shape {x.shape}: "
                             f"only size-1 dims can be squeezed")
    keep = [i for i in range(x.rank) if i not in axes]
    return reshape(x, [x.shape[i] for i in keep], names=[x.names[i] for i in keep])


def new_axis(x, axis, name=None) -> Tensor:
    """Inserts a size-1 dim at ``axis`` (negative counts from the end of the new shape)."""
    x = to_tensor(x, "x")
    axis = _axes_of("new_axis", S.normalize_axis, axis, x.rank + 1)
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    names = x.names[:axis] + (name,) + x.names[axis:]
    return dispatch("reshape", _out(shape, x.type, names), x)


def broadcast(x, shape, axes=None, names=None) -> Tensor:
    """Broadcasts ``x`` to ``shape``; ``axes`` says where each dim of ``x`` goes
    (default: right-aligned)."""
    x = to_tensor(x, "x")
    shape = shape.shape if isinstance(shape, Tensor) else _shape_arg(shape, "broadcast")
    if axes is None:
        if x.rank > len(shape):
            raise ValueError(f"broadcast: cannot broadcast tensor of shape {x.shape} to "
                             f"lower rank shape {shape}")
        axes = tuple(range(len(shape) - x.rank, len(shape)))
    else:
        axes = tuple(_axes_of("broadcast", S.normalize_axis, a, len(shape)) for a in axes)
        if len(axes) != x.rank or list(axes) != sorted(set(axes)):
            raise ValueError(f"broadcast: axes {list(axes)} must be {x.rank} increasing "
                             f"dims of the target shape {shape}")
    for d, a in zip(x.shape, axes):
        if d != 1 and d != shape[a]:
            raise ValueError(f"broadcast: cannot broadcast tensor of shape {x.shape} to "
                             f"{shape} with axes {list(axes)}")
    if shape == x.shape and names is None:
        return x
    if names is None:
        names = [None] * len(shape)
        for i, a in enumerate(axes):
            names[a] = x.names[i]
    return dispatch("broadcast", _out(shape, x.type, tuple(names)), x, axes=axes)


def transpose(x, axes=None) -> Tensor:
    """Permutes dims (default: reverses them)."""
    x = to_tensor(x, "x")
    axes = tuple(reversed(range(x.rank))) if axes is None else _axes_of(
        "transpose", S.normalize_axes, axes, x.rank, x.names)
    if sorted(axes) != list(range(x.rank)):
        raise ValueError(f"transpose: axes {list(axes)} must be a permutation of "
                         f"{list(range(x.rank))}")
    if axes == tuple(range(x.rank)):
        return x
    return dispatch("transpose", _out([x.shape[a] for a in axes], x.type,
                                      tuple(x.names[a] for a in axes)), x, axes=axes)


def pad(x, pad_value, padding_config) -> Tensor:
    """Pads each dim by ``(low, high, interior)``; negative low/high crop."""
    x = to_tensor(x, "x")
    _, v = _binary_operands(x, pad_value)
    if v.shape != ():
        raise ValueError(f"pad: expected pad_value to be a scalar, got shape {v.shape}")
    v = as_type(v, x.type)
    cfg = [tuple(int(c) for c in p) for p in padding_config]
    if len(cfg) != x.rank or builtins.any(len(p) != 3 or p[2] < 0 for p in cfg):
        raise ValueError(f"pad: expected padding_config to be {x.rank} (low, high, interior) "
                         f"triples with interior >= 0, got {padding_config!r}")
    shape = []
    for d, (lo, hi, it) in zip(x.shape, cfg):
        n = lo + hi + d + builtins.max(d - 1, 0) * it
        if n < 0:
            raise ValueError(f"pad: padding {cfg} gives a negative dim for shape {x.shape}")
        shape.append(n)
    return dispatch("pad", _out(shape, x.type), x, v, config=tuple(cfg))


def reverse(x, axes=None) -> Tensor:
    """Reverses the order of elements along ``axes`` (default: all)."""
    x = to_tensor(x, "x")
    axes = _axes_of("reverse", S.normalize_axes, axes, x.rank, x.names)
    if not axes:
        return x
    return dispatch("reverse", _out(x.shape, x.type, x.names), x, axes=axes)


def _start_indices(x, start_indices, op):
    if len(start_indices) != x.rank:
        raise ValueError(f"{op}: expected {x.rank} start indices for shape {x.shape}, "
                         f"got {len(start_indices)}")
    out = []
    for i, s in enumerate(start_indices):
        if isinstance(s, Tensor):
            if s.shape != () or not s.type.is_int:
                raise TypeError(f"{op}: start index {i} must be an int or a scalar integer "
                                f"tensor, got {s.type}{list(s.shape)}")
            out.append(s)
        elif isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            out.append(int(s))
        else:
            raise TypeError(f"{op}: start index {i} must be an int or a scalar integer "
                            f"tensor, got {s!r}")
    return out


def slice(x, start_indices, lengths, strides=None) -> Tensor:  # noqa: A001
    """Static or dynamic slice. Integer starts must fit; tensor starts are clamped so the
    slice fits (as in Nx and XLA)."""
    x = to_tensor(x, "x")
    starts = _start_indices(x, start_indices, "slice")
    lengths = tuple(int(v) for v in lengths)
    strides = (1,) * x.rank if strides is None else (
        (int(strides),) * x.rank if isinstance(strides, int) else tuple(int(v) for v in strides))
    if len(lengths) != x.rank or len(strides) != x.rank:
        raise ValueError(f"slice: expected {x.rank} lengths and strides for shape {x.shape}, "
                         f"got {list(lengths)} and {list(strides)}")
    for i, (s, l, st, d) in enumerate(zip(starts, lengths, strides, x.shape)):
        if l < 0 or l > d or st < 1:
            raise ValueError(f"slice: length {l} (stride {st}) invalid for dim {i} of size {d}")
        if isinstance(s, int) and not 0 <= s <= d - l:
            raise ValueError(f"slice: start index {s} with length {l} is out of bounds for "
                             f"dim {i} of size {d}")
    shape = tuple(-(-l // st) for l, st in zip(lengths, strides))
    if builtins.all(isinstance(s, int) for s in starts):
        if shape == x.shape:
            return x
        return dispatch("slice", _out(shape, x.type, x.names), x, start_indices=tuple(starts),
                        lengths=lengths, strides=strides)
    starts = [s if isinstance(s, Tensor) else _scalar_like(s, T.S32, pick([x])) for s in starts]
    starts = [as_type(s, T.S32) for s in starts]
    return dispatch("dynamic_slice", _out(shape, x.type, x.names), x, starts, lengths=lengths,
                    strides=strides)


def put_slice(x, start_indices, update) -> Tensor:
    """``x`` with ``update`` written at ``start_indices`` (clamped so it fits)."""
    x = to_tensor(x, "x")
    update = to_tensor(update, "update")
    if update.rank != x.rank or builtins.any(u > d for u, d in zip(update.shape, x.shape)):
        raise ValueError(f"put_slice: update of shape {update.shape} does not fit in tensor "
                         f"of shape {x.shape}")
    starts = _start_indices(x, start_indices, "put_slice")
    starts = [as_type(s, T.S32) if isinstance(s, Tensor) else _scalar_like(s, T.S32, pick([x]))
              for s in starts]
    t = T.merge(x.type, update.type)
    return dispatch("put_slice", _out(x.shape, t, x.names), x, starts, update)


def concatenate(tensors, axis=0) -> Tensor:
    """Joins tensors along ``axis``; other dims must match; types merge."""
    tensors = [to_tensor(t, f"tensors[{i}]") for i, t in enumerate(tensors)]
    if not tensors:
        raise ValueError("concatenate: expected a non-empty list of tensors")
    first = tensors[0]
    axis = _axes_of("concatenate", S.normalize_axis, axis, first.rank, first.names)
    t = first.type
    for i, x in enumerate(tensors[1:], 1):
        if x.rank != first.rank or builtins.any(
                a != b for j, (a, b) in enumerate(zip(x.shape, first.shape)) if j != axis):
            raise ValueError(f"concatenate: tensors[{i}] has shape {x.shape}, expected "
                             f"{first.shape} in all dims but {axis}")
        t = T.merge(t, x.type)
    if len(tensors) == 1:
        return as_type(first, t)
    shape = list(first.shape)
    shape[axis] = builtins.sum(x.shape[axis] for x in tensors)
    return dispatch("concatenate", _out(shape, t, first.names), tensors, axis=axis)


def stack(tensors, axis=0, name=None) -> Tensor:
    """Joins same-shape tensors along a new dim ``axis``."""
    tensors = [to_tensor(t, f"tensors[{i}]") for i, t in enumerate(tensors)]
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    for i, x in enumerate(tensors[1:], 1):
        if x.shape != tensors[0].shape:
            raise ValueError(f"stack: tensors[{i}] has shape {x.shape}, expected "
                             f"{tensors[0].shape}")
    axis = _axes_of("stack", S.normalize_axis, axis, tensors[0].rank + 1)
    return concatenate([new_axis(x, axis, name) for x in tensors], axis=axis)


def index(x, idx) -> Tensor:
    """``x[idx]`` with ints, slices (positive steps), ``...``, ``None`` and scalar tensors."""
    x = to_tensor(x, "x")
    idx = idx if isinstance(idx, tuple) else (idx,)
    n_real = builtins.sum(1 for i in idx if i is not None and i is not Ellipsis)
    if builtins.sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis")
    if n_real > x.rank:
        raise IndexError(f"too many indices ({n_real}) for tensor of rank {x.rank}")
    full_idx = []
    for i in idx:
        if i is Ellipsis:
            full_idx.extend([builtins.slice(None)] * (x.rank - n_real))
        else:
            full_idx.append(i)
    full_idx.extend([builtins.slice(None)] * (x.rank - builtins.sum(1 for i in full_idx if i is not None)))
    starts, lengths, strides, out_shape, dim = [], [], [], [], 0
    for i in full_idx:
        if i is None:
            out_shape.append(1)
            continue
        d = x.shape[dim]
        if isinstance(i, builtins.slice):
            a, b, s = i.indices(d)
            if s < 0:
                raise IndexError("negative slice steps are not supported: use nx.reverse")
            n = builtins.max(0, -(-(b - a) // s))
            starts.append(a if n else 0)
            lengths.append((n - 1) * s + 1 if n else 0)
            strides.append(s)
            out_shape.append(n)
        elif isinstance(i, Tensor):
            starts.append(i)
            lengths.append(1)
            strides.append(1)
        elif isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            i = int(i)
            if not -d <= i < d:
                raise IndexError(f"index {i} is out of bounds for dim {dim} of size {d}")
            starts.append(i % d)
            lengths.append(1)
            strides.append(1)
        else:
            raise IndexError(f"unsupported index {i!r}: use ints, slices, ..., None or scalar "
                             f"integer tensors")
        dim += 1
    return reshape(slice(x, starts, lengths, strides), out_shape)


# ----------------------------------------------------------------------------------------
# Reductions
# ----------------------------------------------------------------------------------------
def _reduce(name, x, axes=None, keep_axes=False):
    x = to_tensor(x, "x")
    if name in ("reduce_max", "reduce_min"):
        _check_kind(name, "x", x.type, "real")
    axes = _axes_of(name, S.normalize_axes, axes, x.rank, x.names)
    rule = REDUCTIONS[name]
    t = {"aggregate": T.to_aggregate(x.type), "same": x.type, "pred": T.PRED}[rule]
    if keep_axes:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        names = tuple(None if i in axes else n for i, n in enumerate(x.names))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        names = tuple(n for i, n in enumerate(x.names) if i not in axes)
    return dispatch(name, _out(shape, t, names), x, axes=tuple(sorted(axes)),
                    keep_axes=bool(keep_axes))


def _make_reduction(name):
    def f(x, axes=None, keep_axes=False):
        return _reduce(name, x, axes, keep_axes)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"``{name}`` over ``axes`` (default: all); ``keep_axes`` keeps them as "
                 f"size 1. Type rule: {REDUCTIONS[name]}.")
    return f


for _n in REDUCTIONS:
    globals()[_n] = _make_reduction(_n)
all = globals()["all"]  # noqa: A001
any = globals()["any"]  # noqa: A001


def _arg_reduce(name, x, axis, keep_axis, tie_break, type):
    x = to_tensor(x, "x")
    _check_kind(name, "x", x.type, "real")
    if tie_break not in ("low", "high"):
        raise ValueError(f"{name}: tie_break must be 'low' or 'high', got {tie_break!r}")
    t = T.parse(type)
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{name}: cannot take the {name} of an empty tensor of shape "
                             f"{x.shape}")
        return _arg_reduce(name, reshape(x, (x.size,)), 0, False, tie_break, type)
    axis = _axes_of(name, S.normalize_axis, axis, x.rank, x.names)
    if x.shape[axis] == 0:
        raise ValueError(f"{name}: cannot take the {name} along axis {axis} of size 0 "
                         f"(shape {x.shape})")
    if keep_axis:
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    return dispatch(name, _out(shape, t), x, axis=axis, keep_axis=bool(keep_axis),
                    tie_break=tie_break)


def argmax(x, axis=None, keep_axis=False, tie_break="low", type="s32") -> Tensor:
    """Index of the largest element along ``axis`` (default: of the flattened tensor);
    NaN counts as the largest."""
    return _arg_reduce("argmax", x, axis, keep_axis, tie_break, type)


def argmin(x, axis=None, keep_axis=False, tie_break="low", type="s32") -> Tensor:
    """Index of the smallest element along ``axis`` (default: of the flattened tensor);
    NaN counts as the smallest."""
    return _arg_reduce("argmin", x, axis, keep_axis, tie_break, type)


def mean(x, axes=None, keep_axes=False) -> Tensor:
    """Mean over ``axes`` (a float result)."""
    x = to_tensor(x, "x")
    ax = _axes_of("mean", S.normalize_axes, axes, x.rank, x.names)
    n = S.size([x.shape[a] for a in ax])
    return divide(sum(as_type(x, T.to_floating(x.type)), axes, keep_axes), n)  # noqa: F821


# ----------------------------------------------------------------------------------------
# Dot and windows
# ----------------------------------------------------------------------------------------
def dot(a, *args) -> Tensor:
    """``dot(a, b)``, ``dot(a, contract_a, b, contract_b)`` or
    ``dot(a, contract_a, batch_a, b, contract_b, batch_b)`` (as Nx).

    The result's dims are the batch dims, then ``a``'s free dims, then ``b``'s.

    >>> import nxpy as nx
    >>> nx.dot(nx.iota((2, 3)), [0], nx.iota((2, 4)), [0]).shape
    (3, 4)
    """
    if len(args) == 1:
        a, b = _binary_operands(a, args[0])
        if a.rank == 0 or b.rank == 0:
            return multiply(a, b)  # noqa: F821
        ca, cb, ba, bb = [a.rank - 1], [builtins.max(b.rank - 2, 0)], [], []
    elif len(args) == 3:
        ca, b, cb = args
        ba, bb = [], []
    elif len(args) == 5:
        ca, ba, b, cb, bb = args
    else:
        raise TypeError(f"dot: expected dot(a, b), dot(a, contract_a, b, contract_b) or "
                        f"dot(a, contract_a, batch_a, b, contract_b, batch_b), got {len(args) + 1} "
                        f"arguments")
    a, b = to_tensor(a, "a"), to_tensor(b, "b")
    ca = _axes_of("dot", S.normalize_axes, ca, a.rank, a.names, what="contract_a")
    cb = _axes_of("dot", S.normalize_axes, cb, b.rank, b.names, what="contract_b")
    ba = _axes_of("dot", S.normalize_axes, ba, a.rank, a.names, what="batch_a")
    bb = _axes_of("dot", S.normalize_axes, bb, b.rank, b.names, what="batch_b")
    if len(ca) != len(cb) or len(ba) != len(bb):
        raise ValueError(f"dot: expected as many contract and batch axes on both sides, got "
                         f"contract {list(ca)} / {list(cb)} and batch {list(ba)} / {list(bb)}")
    for what, xa, xb in (("contract", ca, cb), ("batch", ba, bb)):
        for i, j in zip(xa, xb):
            if a.shape[i] != b.shape[j]:
                raise ValueError(f"dot: cannot {what} axis {i} of shape {a.shape} (size "
                                 f"{a.shape[i]}) with axis {j} of shape {b.shape} (size {b.shape[j]})")
    if set(ca) & set(ba) or set(cb) & set(bb):
        raise ValueError("dot: an axis cannot be both a contract and a batch axis")
    free_a = [i for i in range(a.rank) if i not in ca and i not in ba]
    free_b = [i for i in range(b.rank) if i not in cb and i not in bb]
    shape = [a.shape[i] for i in ba] + [a.shape[i] for i in free_a] + [b.shape[i] for i in free_b]
    names = [a.names[i] for i in ba] + [a.names[i] for i in free_a] + [b.names[i] for i in free_b]
    m = T.merge(a.type, b.type)
    t = U8 if m.is_pred else m
    return dispatch("dot", _out(shape, t, tuple(names)), a, b, contract_a=ca, batch_a=ba,
                    contract_b=cb, batch_b=bb)


def matmul(a, b) -> Tensor:
    """``a @ b``: ``dot`` for rank <= 2; leading dims are batch dims for higher ranks."""
    a, b = _binary_operands(a, b)
    if a.rank >= 3 and b.rank >= 3 and a.rank == b.rank:
        nb = a.rank - 2
        return dot(a, [a.rank - 1], list(range(nb)), b, [b.rank - 2], list(range(nb)))
    return dot(a, b)


def _window(name, x, window_dimensions, strides, padding, window_dilations):
    x = to_tensor(x, "x")
    if name == "window_max":
        _check_kind(name, "x", x.type, "real")
    window = tuple(int(w) for w in window_dimensions)
    if len(window) != x.rank or builtins.any(w < 1 for w in window):
        raise ValueError(f"{name}: expected window_dimensions of {x.rank} positive ints for "
                         f"shape {x.shape}, got {list(window_dimensions)}")
    strides = (1,) * x.rank if strides is None else (
        (int(strides),) * x.rank if isinstance(strides, int) else tuple(int(s) for s in strides))
    dil = (1,) * x.rank if window_dilations is None else (
        (int(window_dilations),) * x.rank if isinstance(window_dilations, int)
        else tuple(int(s) for s in window_dilations))
    if len(strides) != x.rank or builtins.any(s < 1 for s in strides):
        raise ValueError(f"{name}: expected {x.rank} positive strides, got {list(strides)}")
    if len(dil) != x.rank or builtins.any(s < 1 for s in dil):
        raise ValueError(f"{name}: expected {x.rank} positive window_dilations, got {list(dil)}")
    pads = S.window_padding(padding, x.shape, window, strides, dil)
    shape = S.window_out_shape(x.shape, window, strides, pads, dil)
    return dispatch(name, _out(shape, x.type), x, window_dimensions=window, strides=strides,
                    padding=pads, window_dilations=dil)


def window_sum(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """Sum over sliding windows; padding is ``valid``, ``same`` or explicit (low, high) pairs.

    >>> import nxpy as nx
    >>> nx.window_sum(nx.iota((4,)), (2,)).tolist()
    [1, 3, 5]
    """
    return _window("window_sum", x, window_dimensions, strides, padding, window_dilations)


def window_max(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """Max over sliding windows (padding counts as -inf / the type's minimum)."""
    return _window("window_max", x, window_dimensions, strides, padding, window_dilations)


del _n

__all__ = (sorted(UNARY) + sorted(BINARY) + sorted(REDUCTIONS) + [
    "template", "dispatch", "to_tensor", "tensor", "from_numpy", "iota", "eye", "full",
    "floor_divide", "mod", "select", "clip", "as_type", "bitcast", "reshape", "squeeze",
    "new_axis", "broadcast", "transpose", "pad", "reverse", "slice", "put_slice", "concatenate",
    "stack", "index", "argmax", "argmin", "mean", "dot", "matmul", "window_sum", "window_max",
    "binary_compute_type"])
