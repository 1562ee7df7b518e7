"""The base op set's cases (elementwise, reductions, shapes, indexing, dot, windows,
creation, control flow)."""
from __future__ import annotations

import numpy as np

from ... import ops as O
from ..records import ANY, UNARY_RECORDS
from .core import Case, _arr, _tol

__all__ = ["CASES", "OPS"]


def _unary_cases():
    out = []
    for name, (rule, kinds) in O.UNARY.items():
        lo, hi = (UNARY_RECORDS[name].domain or ANY)[:2]
        types = ["float32", "float64", "float16"]
        if kinds in ("any", "num") and rule != "float":
            types += ["int32", "int8"]
        if kinds == "int":
            types = ["int32", "uint8", "bool"]
        if kinds == "any" and rule in ("float", "pred", "real"):
            types += ["complex64"] if name not in ("log", "log1p", "sqrt", "rsqrt") else []
        for dt in types:
            for shape in [(2, 3), ()]:
                a = _arr(shape, dt, lo, hi)
                exact = rule == "pred" or np.dtype(dt).kind in "iub"
                out.append(Case(name, lambda nx, x, _n=name: getattr(nx, _n)(x), (a,),
                                tol=0 if exact else _tol(dt, 1e-5)))
    return out


def _binary_cases():
    out = []
    for name, (rule, kinds) in O.BINARY.items():
        types = {"any": ["float32", "int32", "float64", "uint8"],
                 "real": ["float32", "int32", "int64"],
                 "int": ["int32", "uint8", "int16"], "intonly": ["int32", "uint8", "int64"]}[kinds]
        if name in ("left_shift", "right_shift"):
            shift = lambda s, d: _arr(s, d, 0, 5)  # noqa: E731
        else:
            shift = None
        for dt in types:
            for sa, sb in [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (4,))]:
                nonzero = name in ("quotient", "remainder", "divide") and np.dtype(dt).kind in "iu"
                a = _arr(sa, dt, 1 if name == "pow" else -3, 3)
                b = shift(sb, dt) if shift else _arr(sb, dt, 0 if name == "pow" else -3,
                                                    3 if name != "pow" else 3, seed=1,
                                                    nonzero=nonzero)
                if name == "pow" and np.dtype(dt).kind in "f":
                    a = np.abs(a) + np.asarray(0.5, dt)
                exact = rule in ("compare", "logical") or (np.dtype(dt).kind in "iub"
                                                           and rule != "float")
                ct = dt if rule != "float" or np.dtype(dt).kind == "f" else "float32"
                out.append(Case(name, lambda nx, x, y, _n=name: getattr(nx, _n)(x, y), (a, b),
                                tol=0 if exact else _tol(ct)))
    return out


def _reduction_cases():
    out = []
    for name in O.REDUCTIONS:
        types = ["int32", "bool", "float32"] if name in ("all", "any") else \
            ["float32", "int32", "int8", "float64"]
        for dt in types:
            for shape, axes, keep in [((2, 3, 4), [1], False), ((2, 3, 4), [0, 2], True),
                                      ((5,), None, False), ((2, 0), [1], False)]:
                a = _arr(shape, dt, -2, 2)
                out.append(Case(name, lambda nx, x, _n=name, _a=axes, _k=keep:
                                getattr(nx, _n)(x, axes=_a, keep_axes=_k),
                                (a,), label=f"{dt},axes={axes},keep={keep}",
                                tol=0 if np.dtype(dt).kind in "iub" else 1e-5))
    for name in ("argmax", "argmin"):
        for dt in ["float32", "int32"]:
            for axis, keep, tie in [(1, False, "low"), (0, True, "high"), (None, False, "low")]:
                a = _arr((3, 4), dt, -1, 1)
                out.append(Case(name, lambda nx, x, _n=name, _ax=axis, _k=keep, _t=tie:
                                getattr(nx, _n)(x, axis=_ax, keep_axis=_k, tie_break=_t), (a,),
                                label=f"{dt},axis={axis},keep={keep},tie={tie}"))
    return out


def _f(shape, dt="float32", lo=-3, hi=3, seed=0):
    return _arr(shape, dt, lo, hi, seed)


def _other_cases():
    C = Case
    x23 = _f((2, 3))
    i23 = _arr((2, 3), "int32", -5, 5)
    return [
        C("select", lambda nx, p, a, b: nx.select(p, a, b),
          (_arr((2, 3), "bool"), x23, _f((3,), seed=2))),
        C("select", lambda nx, p, a, b: nx.select(p, a, b),
          (_arr((2, 3), "int32", 0, 1), i23, _arr((2, 3), "int8"))),
        C("clip", lambda nx, x: nx.clip(x, -1, 1.5), (x23,)),
        C("clip", lambda nx, x: nx.clip(x, -2, 2), (i23,)),
        C("as_type", lambda nx, x: nx.as_type(x, "s32"), (x23 * 10,), label="f32->s32"),
        C("as_type", lambda nx, x: nx.as_type(x, "f64"), (i23,), label="s32->f64"),
        C("as_type", lambda nx, x: nx.as_type(x, "pred"), (x23,), label="f32->pred"),
        C("as_type", lambda nx, x: nx.as_type(x, "u8"), (i23,), label="s32->u8"),
        C("bitcast", lambda nx, x: nx.bitcast(x, "s32"), (x23,)),
        C("bitcast", lambda nx, x: nx.bitcast(x, "f32"), (i23,)),
        C("optimization_barrier", lambda nx, x: nx.optimization_barrier(x), (x23,)),
        C("reshape", lambda nx, x: nx.reshape(x, (3, 2)), (x23,)),
        C("reshape", lambda nx, x: nx.reshape(x, (6, 1, -1)), (i23,)),
        C("reshape", lambda nx, x: nx.squeeze(x), (_f((1, 3, 1)),), label="squeeze"),
        C("reshape", lambda nx, x: nx.new_axis(x, -1), (x23,), label="new_axis"),
        C("broadcast", lambda nx, x: nx.broadcast(x, (4, 2, 3)), (x23,)),
        C("broadcast", lambda nx, x: nx.broadcast(x, (2, 4, 3), axes=[0, 2]), (i23,)),
        C("broadcast", lambda nx, x: nx.broadcast(x, (2, 2)), (np.asarray(2.5, np.float32),)),
        C("transpose", lambda nx, x: nx.transpose(x), (x23,)),
        C("transpose", lambda nx, x: nx.transpose(x, axes=[1, 2, 0]), (_arr((2, 3, 4), "int16"),)),
        C("pad", lambda nx, x: nx.pad(x, 0.5, [(1, 2, 0), (0, 1, 1)]), (x23,)),
        C("pad", lambda nx, x: nx.pad(x, 7, [(-1, 1, 0), (2, -1, 2)]), (i23,)),
        C("reverse", lambda nx, x: nx.reverse(x), (x23,)),
        C("reverse", lambda nx, x: nx.reverse(x, axes=[1]), (i23,)),
        C("slice", lambda nx, x: nx.slice(x, [0, 1], [2, 2]), (x23,)),
        C("slice", lambda nx, x: nx.slice(x, [1, 0], [3, 4], strides=[2, 2]),
          (_arr((4, 5), "int32"),)),
        C("dynamic_slice", lambda nx, x, i: nx.slice(x, [i, 1], [2, 2]),
          (_f((4, 3)), np.asarray(3, np.int32)),
          label="clamped"),
        C("dynamic_slice", lambda nx, x, i: nx.slice(x, [0, i], [1, 2]),
          (i23, np.asarray(1, np.int32))),
        C("put_slice", lambda nx, x, u: nx.put_slice(x, [0, 1], u), (x23, _f((2, 2), seed=3))),
        C("put_slice", lambda nx, x, u, i: nx.put_slice(x, [i, 2], u),
          (i23, _arr((1, 2), "int32"), np.asarray(5, np.int32)),
          label="clamped"),
        C("concatenate", lambda nx, a, b: nx.concatenate([a, b], axis=1),
          (x23, _f((2, 1), seed=4))),
        C("concatenate", lambda nx, a, b: nx.stack([a, b], axis=0), (i23, _arr((2, 3), "int8")),
          label="stack"),
        C("dot", lambda nx, a, b: nx.dot(a, b), (x23, _f((3, 4), seed=5)), tol=1e-5),
        C("dot", lambda nx, a, b: nx.dot(a, b), (i23, _arr((3,), "int32")), label="matrix-vector"),
        C("dot", lambda nx, a, b: nx.dot(a, [2], [0], b, [1], [0]),
          (_f((2, 3, 4)), _f((2, 4, 5), seed=6)),
          label="batched", tol=1e-5),
        C("dot", lambda nx, a, b: nx.dot(a, [0], b, [0]),
          (_f((3, 2), "float64"), _f((3, 4), "float64", seed=7)),
          label="contract-0", tol=1e-12),
        C("window_sum", lambda nx, x: nx.window_sum(x, (2, 2)), (_f((4, 5)),), tol=1e-5),
        C("window_sum", lambda nx, x: nx.window_sum(x, (3,), strides=2, padding="same"),
          (_arr((7,), "int32"),)),
        C("window_max", lambda nx, x: nx.window_max(x, (2, 3), padding=[(1, 0), (1, 1)]),
          (_f((4, 5)),)),
        C("window_max", lambda nx, x: nx.window_max(x, (2,), window_dilations=2),
          (_arr((6,), "int8"),)),
        C("iota", lambda nx: nx.iota((2, 3), axis=1), ()),
        C("iota", lambda nx: nx.iota((3, 2), type="f32"), (), label="flat-f32"),
        C("eye", lambda nx: nx.eye(3, type="f32"), ()),
        C("eye", lambda nx: nx.eye((2, 3, 4)), (), label="batched"),
        C("constant", lambda nx: nx.full((2, 2), 1.5), ()),
        C("constant", lambda nx, x: x + nx.tensor([[1, 2, 3]]), (i23,), label="tensor"),
        C("cond", lambda nx, x: nx.cond(nx.sum(x) > 0, lambda: x * 2, lambda: x - 1), (x23,)),
        C("while",
          lambda nx, x: nx.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2),
                                      (0, x))[1],
          (i23,)),
    ]


CASES = _unary_cases() + _binary_cases() + _reduction_cases() + _other_cases()
OPS = (sorted(O.UNARY) + sorted(O.BINARY) + sorted(O.REDUCTIONS) + [
    "argmax", "argmin", "select", "clip", "as_type", "bitcast", "optimization_barrier", "reshape",
    "broadcast", "transpose",
    "pad", "reverse", "slice", "dynamic_slice", "put_slice", "concatenate", "dot", "window_sum",
    "window_max", "iota", "eye", "constant", "cond", "while"])
