"""Elementwise ops: the unary and binary tables (one line per op: its type rule and the
kinds it accepts), plus select, clip, bitcast and Python's ``//`` and ``%``.

>>> import nxpy as nx
>>> str((nx.tensor([1, 2], type="s8") + 1).type)   # Python scalars are weak
's8'
>>> str((nx.tensor([1, 2]) * 0.5).type)           # int with float gives float
'f32'
>>> nx.floor_divide(-7, 2).tolist(), nx.quotient(-7, 2).tolist()
(-4, -3)
"""
from __future__ import annotations

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_binary_operands, _out, as_type, check_kind, dispatch, dispatch_multi,
                   primitive, to_tensor)

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

U8 = T.Type("u", 8)

primitive("elementwise", *UNARY, *BINARY, "select", "clip", "bitcast", props=("elementwise",))
primitive("elementwise", "optimization_barrier")


def binary_compute_type(op: str, out: Tensor, a: Tensor, b: Tensor) -> T.Type:
    """The type both operands of a binary op are converted to before computing."""
    if BINARY[op][0] in ("compare", "logical"):
        return T.merge(a.type, b.type)
    return out.type


#: per op, ``(backend, operand devices and templates) → (shape, type, names, backend,
#: kernel, device, template, data type)`` or
#: False: eager elementwise ops on tensors seen before skip validation and inference and
#: run the backend's ``fast_kernel`` directly (see Backend.fast_kernel)
_FAST: dict = {}
_FAST_MAX = 1024  # signatures per op


def _remember(cache, key, name, out, backend, args):
    if len(cache) >= _FAST_MAX:
        cache.clear()
    if any(a.sharding is not None for a in args):  # a sharded program each time
        cache[key] = False
        return
    k = backend.fast_kernel(name, out, *args)
    # the type of data the kernel takes: operands holding it skip Tensor.data (which
    # resolves Deferred data, and raises for donated tensors)
    cache[key] = False if k is None else (out.shape, out.type, out.names, backend, k,
                                          args[0].device_id, out.template,
                                          type(args[0].data))


def _unary(name, x, cache=None, key=None):
    if key is not None and x.backend is not None and not x.backend.is_expr:
        out = _unary_out(name, x)
        _remember(cache, key, name, out, x.backend, (x,))
        return dispatch(name, out, x)
    x = to_tensor(x, "x")
    return dispatch(name, _unary_out(name, x), x)


def _unary_out(name, x):
    rule, kinds = UNARY[name]
    check_kind(name, "x", x.type, kinds)
    t = {"same": x.type, "float": T.to_floating(x.type), "pred": T.PRED,
         "real": T.to_real(x.type)}[rule]
    return _out(x.shape, t, x.names)


def _binary(name, a, b, cache=None, key=None):
    if (key is not None and a.backend is b.backend and a.backend is not None
            and not a.backend.is_expr):
        out = _binary_out(name, a, b)
        _remember(cache, key, name, out, a.backend, (a, b))
        return dispatch(name, out, a, b)
    a, b = _binary_operands(a, b, name)
    return dispatch(name, _binary_out(name, a, b), a, b)


def _binary_out(name, a, b):
    rule, kinds = BINARY[name]
    check_kind(name, "left operand", a.type, kinds)
    check_kind(name, "right operand", b.type, kinds)
    shape = S.broadcast(a.shape, b.shape, op=name)
    names = S.broadcast_names(shape, a, b, op=name)
    m = T.merge(a.type, b.type)
    if rule == "merge":
        t = U8 if (m.is_pred and name in _ARITH_ON_PRED) else m
    elif rule == "float":
        t = T.to_floating(m)
    else:
        t = T.PRED
    return _out(shape, t, names)


def _make_unary(name):
    cache = _FAST[name] = {}
    get = cache.get

    def f(x):
        if type(x) is Tensor:
            key = (x.backend, x.device_id, x._tk or x.template)
            hit = get(key)
            if hit:
                shape, t, names, b, k, dev, tk, dt = hit
                d = x._data
                try:
                    return Tensor(k(d if type(d) is dt else x.data), shape, t, names, b, dev,
                                  tk)
                except Exception:  # the kernel declines this call: the op's full path
                    return _unary(name, x)
            if hit is None:
                return _unary(name, x, cache, key)
        return _unary(name, x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}``; type rule: {UNARY[name][0]}."
    return f


def _make_binary(name):
    cache = _FAST[name] = {}
    get = cache.get

    def f(a, b):
        if type(a) is Tensor and type(b) is Tensor:
            key = (a.backend, a.device_id, a._tk or a.template, b.device_id,
                   b._tk or b.template)
            hit = get(key)
            if hit:
                shape, t, names, bk, k, dev, tk, dt = hit
                if bk is b.backend:
                    da, db = a._data, b._data
                    if type(da) is not dt or type(db) is not dt:
                        da, db = a.data, b.data
                    try:
                        return Tensor(k(da, db), shape, t, names, bk, dev, tk)
                    except Exception:  # the kernel declines this call: the op's full path
                        return _binary(name, a, b)
            elif hit is None:
                return _binary(name, a, b, cache, key)
        return _binary(name, a, b)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` with broadcasting; type rule: {BINARY[name][0]}."
    return f


for _n in UNARY:
    globals()[_n] = _make_unary(_n)
for _n in BINARY:
    globals()[_n] = _make_binary(_n)
del _n
abs = globals()["abs"]  # noqa: A001 - the op, as in Nx
min = globals()["min"]  # noqa: A001
max = globals()["max"]  # noqa: A001
pow = globals()["pow"]  # noqa: A001
round = globals()["round"]  # noqa: A001


def floor_divide(a, b):
    """Python's ``//``: floor of the quotient (integers round toward negative infinity)."""
    a, b = _binary_operands(a, b, "floor_divide")
    if T.merge(a.type, b.type).is_inexact:
        return floor(divide(a, b))  # noqa: F821 - defined from the UNARY table
    q = quotient(a, b)  # noqa: F821
    r = remainder(a, b)  # noqa: F821
    fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))  # noqa: F821
    return subtract(q, as_type(fix, q.type))  # noqa: F821


def mod(a, b):
    """Python's ``%``: the remainder takes the sign of the divisor."""
    a, b = _binary_operands(a, b, "mod")
    r = remainder(a, b)  # noqa: F821
    fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))  # noqa: F821
    return select(fix, add(r, b), r)  # noqa: F821


def select(pred, on_true, on_false) -> Tensor:
    """``on_true`` where ``pred`` is non-zero, else ``on_false`` (all three broadcast)."""
    pred = to_tensor(pred, "pred")
    on_true, on_false = _binary_operands(on_true, on_false, "select", ("on_true", "on_false"))
    shape = S.broadcast(S.broadcast(pred.shape, on_true.shape, op="select"), on_false.shape,
                        op="select")
    t = T.merge(on_true.type, on_false.type)
    names = S.broadcast_names(shape, pred, on_true, on_false, op="select")
    return dispatch("select", _out(shape, t, names), pred, on_true, on_false)


def clip(x, min, max) -> Tensor:  # noqa: A002
    """Clamps ``x`` to ``[min, max]``; the bounds broadcast to ``x``'s shape."""
    x = to_tensor(x, "x")
    check_kind("clip", "x", x.type, "real")
    _, lo = _binary_operands(x, min, "clip", ("x", "min"))
    _, hi = _binary_operands(x, max, "clip", ("x", "max"))
    for arg, b in (("min", lo), ("max", hi)):
        check_kind("clip", arg, b.type, "real")
        if S.broadcast(x.shape, b.shape, op="clip") != x.shape:
            raise ValueError(f"clip: {arg} of shape {b.shape} does not broadcast to x's "
                             f"shape {x.shape}")
    t = T.merge(T.merge(x.type, lo.type), hi.type)
    return dispatch("clip", _out(x.shape, t, x.names), x, lo, hi)


def bitcast(x, type) -> Tensor:
    """Reinterprets the bits as ``type`` of the same width."""
    x = to_tensor(x, "x")
    t = T.parse(type)
    if x.type.is_pred or t.is_pred or x.type.bits != t.bits:
        raise TypeError(f"bitcast: expected a type of the same bit width as {x.type} "
                        f"(and not pred), got {t}")
    return dispatch("bitcast", _out(x.shape, t, x.names), x)


def optimization_barrier(x):
    """``x`` (a tensor, or a tuple or list of them), as values the compiler may not look
    through (``stablehlo.optimization_barrier``, as ``jax.lax.optimization_barrier``):
    computations on the results are not merged with the same computations on ``x``, and
    none of the results is available before all of ``x`` is (``checkpoint`` recomputes
    its forward pass from such values, barriered together with the incoming cotangent, so
    that XLA neither folds the recomputation back into the forward pass nor runs it before
    the backward pass reaches it). Its gradient is the identity.

    >>> import nxpy as nx
    >>> nx.optimization_barrier(nx.tensor([1.0, 2.0])).tolist()
    [1.0, 2.0]
    >>> a, b = nx.optimization_barrier((nx.tensor(1), nx.tensor([2.0])))
    >>> a.tolist(), b.tolist()
    (1, [2.0])
    """
    many = isinstance(x, (tuple, list))
    xs = [to_tensor(v, f"x[{i}]" if many else "x") for i, v in enumerate(x if many else [x])]
    if many and not xs:
        return type(x)()
    outs = dispatch_multi("optimization_barrier", [(v.shape, v.type, v.names) for v in xs],
                          *xs)
    return type(x)(outs) if many else outs[0]


__all__ = sorted(UNARY) + sorted(BINARY) + ["floor_divide", "mod", "select", "clip", "bitcast",
                                            "optimization_barrier", "binary_compute_type",
                                            "UNARY", "BINARY"]
