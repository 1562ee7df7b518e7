"""The fuzzer's op table: for every op it draws, the nxpy call and its ``jax.numpy``/``lax``
twin, and what the generator must know of the op's floats (exact, discontinuous,
complex-safe). ``docs/fuzzing.md`` states the rules the twins follow."""
# A new op touches this file (and nothing else of the fuzzer) to be fuzzed: an OPS entry
# (its nxpy call and its JAX twin), for a float op its place in EXACT/DISCONTINUOUS, and,
# unless a family of generator.py already draws it (the elementwise and reduction tables,
# shapes, indexing, sorting, windows, dot, conv, control flow), a DRAWS entry. An op of
# UNARY or BINARY has its twin in its record (nxpy/testing/records.py) instead of OPS.
from __future__ import annotations

import numpy as np

import nxpy as nx
from ... import types as T
from ...defn import cond, while_loop
from ...ops.elementwise import BINARY, UNARY
from ...ops.reductions import REDUCTIONS
from ..records import BINARY_RECORDS, UNARY_RECORDS, Jax


class _Jax(Jax):
    """jax.numpy, lax and jax, and the cast to an nxpy type name."""

    def c(self, x, t):
        return self.jnp.asarray(x).astype(T.parse(t).dtype)


# ----------------------------------------------------------------------------------------
# The op table: name -> (nxpy function of tensors, JAX function (J, arg types, out type,
# *arrays)). Nx's type rules are followed by casting to the types nxpy reports. The
# elementwise ops' twins are their records' (nxpy/testing/records.py).
# ----------------------------------------------------------------------------------------
def _unary(name):
    rule = UNARY[name][0]
    twin = UNARY_RECORDS[name].jax

    def jx(J, ts, out, x):
        if name in ("floor", "ceil", "round") and not T.parse(ts[0]).is_inexact:
            return J.c(x, out)
        return J.c(twin(J, J.c(x, out if rule == "float" else ts[0])), out)
    return (lambda x: getattr(nx, name)(x)), jx


def _binary(name):
    rule = BINARY[name][0]
    twin = BINARY_RECORDS[name].jax

    def jx(J, ts, out, a, b):
        ct = str(T.merge(T.parse(ts[0]), T.parse(ts[1]))) if rule in ("compare", "logical") else out
        return J.c(twin(J, *J.jnp.broadcast_arrays(J.c(a, ct), J.c(b, ct))), out)
    return (lambda a, b: getattr(nx, name)(a, b)), jx


def _lowest(J, t):
    t = T.parse(t)
    if t.is_pred:
        return False
    return np.array(-np.inf if t.is_inexact else np.iinfo(t.dtype).min, t.dtype)


def _highest(J, t):
    t = T.parse(t)
    if t.is_pred:
        return True
    return np.array(np.inf if t.is_inexact else np.iinfo(t.dtype).max, t.dtype)


def _reduction(name):
    def jx(J, ts, out, x, axes, keep):
        ax = None if axes is None else tuple(axes)
        if name in ("all", "any"):
            return J.c(getattr(J.jnp, name)(x != 0, axis=ax, keepdims=keep), out)
        x = J.c(x, out)
        if name in ("sum", "product"):  # in Nx's type (jnp's integer sums widen to 64 bits)
            return getattr(J.jnp,
                           "sum" if name == "sum" else "prod")(x, axis=ax, keepdims=keep,
                                                               dtype=x.dtype)
        f, init = (J.jnp.max,
                   _lowest(J, out)) if name == "reduce_max" else (J.jnp.min, _highest(J, out))
        return f(x, axis=ax, keepdims=keep, initial=init)
    return (lambda x, axes, keep: getattr(nx, name)(x, axes=axes, keep_axes=keep)), jx


def _arg(name):
    def jx(J, ts, out, x, axis, keep, tie):
        f = getattr(J.jnp, name)
        if axis is None:
            x = J.jnp.ravel(x)
        ax = 0 if axis is None else axis
        if tie == "high":
            r = x.shape[ax] - 1 - f(J.jnp.flip(x, ax), axis=ax, keepdims=keep)
        else:
            r = f(x, axis=ax, keepdims=keep)
        return J.c(r, out)
    return (lambda x, axis, keep, tie: getattr(nx, name)(x, axis=axis, keep_axis=keep,
                                                         tie_break=tie)), jx


def _cumulative(name):
    lax_name = {"cumulative_sum": "cumsum", "cumulative_product": "cumprod",
                "cumulative_max": "cummax", "cumulative_min": "cummin"}[name]
    return ((lambda x, axis, reverse: getattr(nx, name)(x, axis=axis, reverse=reverse)),
            lambda J, ts, out, x, axis, reverse: getattr(J.lax,
                                                         lax_name)(J.c(x, out), axis, reverse))


def _canonical_zero(J, x, t):
    """Nx's sorts take -0.0 and 0.0 as equal; JAX's order them: add +0.0 first."""
    return x + J.jnp.zeros((), x.dtype) if T.parse(t).is_float else x


TRANSFORMS = {  # type-preserving bodies for cond and while_loop
    "identity": (lambda x: x, lambda J, x: x),
    "negate": (lambda x: nx.negate(x), lambda J, x: -x),
    "double": (lambda x: x + x, lambda J, x: x + x),
    "reverse": (lambda x: nx.reverse(x), lambda J, x: J.jnp.flip(x) if x.ndim else x),
}
EXACT_TRANSFORMS = {"identity", "negate", "reverse"}


def _cond_jx(J, ts, out, p, x, then, other):
    take = J.jnp.sum(J.c(p, "f64")) > 0
    return J.jnp.where(take, TRANSFORMS[then][1](J, x), TRANSFORMS[other][1](J, x))


def _while_jx(J, ts, out, x, n, body):
    for _ in range(n):
        x = TRANSFORMS[body][1](J, x)
    return x


def _dot_jx(J, ts, out, a, b, ca, ba, cb, bb):
    return J.lax.dot_general(J.c(a, out), J.c(b, out),
                             ((tuple(ca), tuple(cb)), (tuple(ba), tuple(bb))),
                             preferred_element_type=T.parse(out).dtype)


def _conv_jx(J, ts, out, x, k, strides, padding, input_dilation, kernel_dilation, groups):
    return J.lax.conv_general_dilated(J.c(x, out), J.c(k, out), strides,
                                      [tuple(p) for p in padding],
                                      input_dilation, kernel_dilation, feature_group_count=groups,
                                      precision=J.lax.Precision.HIGHEST,
                                      preferred_element_type=T.parse(out).dtype)


def _gather_jx(J, ts, out, x, idx):
    return x[tuple(idx[..., j].astype(np.int64) for j in range(idx.shape[-1]))]


def _scatter(kind):
    def jx(J, ts, out, x, idx, u):
        where = tuple(idx[..., j].astype(np.int64) for j in range(idx.shape[-1]))
        ref = J.c(x, out).at[where]
        return ref.add(J.c(u, out)) if kind == "add" else ref.set(J.c(u, out))
    return (lambda x, idx, u: getattr(nx, f"indexed_{kind}")(x, idx, u)), jx


# -- windows, top_k and bitcast ---------------------------------------------------------
def _nx_pads(window, dilations, padding):
    """Nx's padding modes as explicit (low, high) pairs, written out here for JAX (not
    nxpy's own helper): "same" pads the dilated window's size minus one in total, the odd
    one high, whatever the strides (JAX's "SAME" depends on the strides)."""
    if padding == "valid":
        return [(0, 0)] * len(window)
    if padding == "same":
        eff = [(w - 1) * r + 1 for w, r in zip(window, dilations)]
        return [((k - 1) // 2, (k - 1) - (k - 1) // 2) for k in eff]
    return [tuple(p) for p in padding]


# the monoid of each window op: (lax op, identity), and for pred (XLA's add and multiply
# on pred are or and and)
_WINDOW_MONOIDS = {"window_sum": ("add", "bitwise_or", 0),
                   "window_product": ("mul", "bitwise_and", 1),
                   "window_max": ("max", "bitwise_or", "lowest"),
                   "window_min": ("min", "bitwise_and", "highest")}


def _reduce_window(J, x, t, kind, window, strides, padding, dilations, init=None):
    """``x`` (of nxpy type ``t``) reduced over each window with lax.reduce_window."""
    op, pred_op, ident = _WINDOW_MONOIDS[kind]
    tt = T.parse(t)
    if init is None:
        init = ({"lowest": _lowest, "highest": _highest}[ident](J, t) if isinstance(ident, str)
                else ident)
    x = J.c(x, t)
    pads = _nx_pads(window, dilations, padding)
    if not x.ndim:  # XLA skips the init value at rank 0 (docs/fuzzing.md)
        return _reduce_window(J, x.reshape(1), t, kind, (1,), (1,), "valid", (1,), init).reshape(())
    return J.lax.reduce_window(x, np.array(init, tt.dtype),
                               getattr(J.lax, pred_op if tt.is_pred else op),
                               tuple(window), tuple(strides), pads,
                               window_dilation=tuple(dilations))


def _window(name):
    def nxf(x, window, strides, padding, dilations):
        return getattr(nx, name)(x, window, strides=strides, padding=padding,
                                 window_dilations=dilations)

    def jx(J, ts, out, x, window, strides, padding, dilations):
        if name == "window_mean":
            s = _reduce_window(J, x, ts[0], "window_sum", window, strides, padding, dilations)
            return J.c(s, out) / J.c(int(np.prod(window, dtype=np.int64)), out)
        return _reduce_window(J, x, out, name, window, strides, padding, dilations)
    return nxf, jx


REDUCE_FNS = {"add": ("window_sum", lambda a, b: nx.add(a, b)),
              "multiply": ("window_product", lambda a, b: nx.multiply(a, b)),
              "max": ("window_max", lambda a, b: nx.max(a, b)),
              "min": ("window_min", lambda a, b: nx.min(a, b))}


def _window_reduce_nx(x, fn, acc, window, strides, padding, dilations):
    return nx.window_reduce(x, nx.tensor(acc, type=x.type), window,
                            {"strides": strides, "padding": padding, "window_dilations": dilations},
                            REDUCE_FNS[fn][1])


def _window_reduce_jx(J, ts, out, x, fn, acc, window, strides, padding, dilations):
    # XLA's reduce_window folds acc in once per window and skips the padding (as nxpy)
    return _reduce_window(J, x, out, REDUCE_FNS[fn][0], window, strides, padding, dilations,
                          init=acc)


def _window_scatter(kind):
    name = f"window_scatter_{kind}"

    def nxf(x, src, init, window, strides, padding):
        return getattr(nx, name)(x, src, nx.tensor(init, type=src.type), window, strides=strides,
                                 padding=padding)

    def jx(J, ts, out, x, src, init, window, strides, padding):
        # XLA's select_and_scatter, all in f64 (the operand's values are below 2**53 or
        # 1e300 in magnitude: generator.py's _scatter_operand_ok), with infinities moved to
        # +-1e301 so the padding (+-inf) is strictly worse than every element: Nx never
        # selects the padding. A window keeps its pick while select(current, candidate)
        # holds: > / < move to the last extremum on ties, Nx's choice. Rank 0 as rank 1 (XLA
        # aborts on rank 0).
        lax, jnp = J.lax, J.jnp
        shape = x.shape
        pads = _nx_pads(window, (1,) * len(window), padding)
        if not shape:
            x, src, window, strides, pads = x.reshape(1), src.reshape(1), (1,), (1,), [(0, 0)]
        xf = J.c(x, "f64")
        xf = jnp.where(jnp.isinf(xf), jnp.sign(xf) * 1e301, xf)
        xp = lax.pad(xf, -np.inf if kind == "max" else np.inf, [(lo, hi, 0) for lo, hi in pads])
        sas = J.jax._src.lax.windowed_reductions._select_and_scatter
        r = sas(xp, lax.gt if kind == "max" else lax.lt, tuple(window), tuple(strides),
                [(0, 0)] * len(window), J.c(src, "f64"), np.float64(0), lax.add)
        r = lax.slice(r, [lo for lo, _ in pads], [lo + d for (lo, _), d in zip(pads, xf.shape)])
        return J.c(r.reshape(shape) + J.c(init, "f64"), out)
    return nxf, jx


def _nan_last(J, x, t):
    """Nx's top_k order (NaN above everything, whatever its sign; -0.0 equal to 0.0) for
    lax.top_k, which orders floats totally: every NaN made +NaN, every zero +0.0."""
    if not T.parse(t).is_float:
        return x
    return J.jnp.where(J.jnp.isnan(x), J.jnp.array(np.nan, x.dtype), _canonical_zero(J, x, t))


def _top_k_jx(J, ts, out, x, k, part):
    t = T.parse(ts[0])
    xs = J.c(x, "u8") if t.is_pred else _nan_last(J, x, ts[0])
    values, indices = J.lax.top_k(xs, k)
    return J.c(values if part == "values" else indices, out)


def _bitcast_jx(J, ts, out, x, type):
    t, to = T.parse(ts[0]), T.parse(out)
    # lax.bitcast_convert_type has no complex types: complex as (real, imag) pairs of the
    # component type, which is what its memory is
    if t.is_complex:
        x = J.jnp.stack([J.jnp.real(x), J.jnp.imag(x)], axis=-1)
    if to.is_complex:
        part = np.float32 if to.bits == 64 else np.float64
        pair = J.lax.bitcast_convert_type(x, part)
        return J.lax.complex(pair[..., 0], pair[..., 1])
    return J.lax.bitcast_convert_type(x, to.dtype)


def _real_of(t):
    return str(T.to_real(T.parse(t)))


_FFTS = {"fft": "fft", "ifft": "ifft", "rfft": "rfft", "irfft": "irfft"}


def _fft(name):
    def nxf(x, length, axis):
        return getattr(nx, name)(x, length=length, axis=axis)

    def jx(J, ts, out, x, length, axis):
        # nxpy computes in the result's complex type (real input for rfft; irfft: complex)
        src = out if name in ("fft", "ifft") else (ts[0] if name == "irfft" else _real_of(out))
        return J.c(getattr(J.jnp.fft, _FFTS[name])(J.c(x, src), n=length, axis=axis), out)
    return nxf, jx


def _fft2(name):
    def nxf(x, lengths):
        return getattr(nx, name)(x, lengths=lengths)

    def jx(J, ts, out, x, lengths):
        return J.c(getattr(J.jnp.fft, name)(J.c(x, out), s=lengths, axes=(-2, -1)), out)
    return nxf, jx


_REDUCE_IDENTITY = {"add": 0, "multiply": 1, "max": "lowest", "min": "highest"}


def _reduce_nx(x, fn, axes, keep):
    acc = _REDUCE_IDENTITY[fn]
    acc = {"lowest": T.min_value,
           "highest": T.max_value}[acc](x.type) if isinstance(acc, str) else acc
    return nx.reduce(x, nx.tensor(acc, type=x.type), {"axes": axes, "keep_axes": keep},
                     REDUCE_FNS[fn][1])


def _reduce_jx(J, ts, out, x, fn, axes, keep):
    t = T.parse(out)
    ident = _REDUCE_IDENTITY[fn]
    init = {"lowest": _lowest, "highest": _highest}[ident](J,
                                                           out) if isinstance(ident, str) else ident
    dims = tuple(range(x.ndim)) if axes is None else tuple(axes)
    op = {"add": J.lax.add, "multiply": J.lax.mul, "max": J.lax.max, "min": J.lax.min}[fn]
    r = J.lax.reduce(J.c(x, out), np.array(init, t.dtype), op, dims)
    return J.jnp.expand_dims(r, dims) if keep else r


OPS = {
    **{n: _unary(n) for n in UNARY},
    **{n: _binary(n) for n in BINARY},
    **{n: _reduction(n) for n in REDUCTIONS},
    "argmax": _arg("argmax"), "argmin": _arg("argmin"),
    **{n: _cumulative(n) for n in ("cumulative_sum", "cumulative_product", "cumulative_max",
                                   "cumulative_min")},
    "clip": (lambda x, lo, hi: nx.clip(x, lo, hi),
             lambda J, ts, out, x, lo, hi: J.c(J.jnp.clip(x, lo, hi), out)),
    "as_type": (lambda x, type: nx.as_type(x, type), lambda J, ts, out, x, type: J.c(x, out)),
    "select": (lambda p, a, b: nx.select(p, a, b),
               lambda J, ts, out, p, a, b: J.jnp.where(p != 0, J.c(a, out), J.c(b, out))),
    "reshape": (lambda x, shape: nx.reshape(x, shape),
                lambda J, ts, out, x, shape: J.jnp.reshape(x, shape)),
    "transpose": (lambda x, axes: nx.transpose(x, axes=axes),
                  lambda J, ts, out, x, axes: J.jnp.transpose(x, axes)),
    "broadcast": (lambda x, shape: nx.broadcast(x, shape),
                  lambda J, ts, out, x, shape: J.jnp.broadcast_to(x, shape)),
    "squeeze": (lambda x: nx.squeeze(x), lambda J, ts, out, x: J.jnp.squeeze(x)),
    "new_axis": (lambda x, axis: nx.new_axis(x, axis),
                 lambda J, ts, out, x, axis: J.jnp.expand_dims(x, axis)),
    "pad": (lambda x, config: nx.pad(x, 0, config),
            lambda J, ts, out, x, config: J.lax.pad(x, J.jnp.zeros((), x.dtype),
                                                    [tuple(c) for c in config])),
    "reverse": (lambda x, axes: nx.reverse(x, axes=axes),
                lambda J, ts, out, x, axes: J.jnp.flip(x, tuple(axes)) if axes else x),
    "concatenate": (lambda a, b, axis: nx.concatenate([a, b], axis=axis),
                    lambda J, ts, out, a, b, axis: J.jnp.concatenate([J.c(a, out), J.c(b, out)],
                                                                     axis)),
    "slice": (lambda x, starts, lengths, strides: nx.slice(x, starts, lengths, strides=strides),
              lambda J, ts, out, x, starts, lengths, strides: J.lax.slice(
                  x, starts, [s + n for s, n in zip(starts, lengths)], strides)),
    "dynamic_slice": (lambda x, i, lengths: nx.slice(x, [i] + [0] * (len(lengths) - 1), lengths),
                      lambda J, ts, out, x, i, lengths: J.lax.dynamic_slice(
                          x, [i.astype(np.int64)] + [0] * (len(lengths) - 1), lengths)),
    "put_slice": (lambda x, u, starts: nx.put_slice(x, starts, u),
                  lambda J, ts, out, x, u, starts: J.lax.dynamic_update_slice(
                      J.c(x, out), J.c(u, out), starts)),
    "take": (lambda x, idx, axis: nx.take(x, idx, axis=axis),
             lambda J, ts, out, x, idx, axis: J.jnp.take(x, idx.astype(np.int64), axis=axis,
                                                         mode="clip")),
    "gather": (lambda x, idx: nx.gather(x, idx), _gather_jx),
    "indexed_add": _scatter("add"), "indexed_put": _scatter("put"),
    "sort": (lambda x, axis, desc: nx.sort(x, axis=axis, direction="desc" if desc else "asc"),
             lambda J, ts, out, x, axis, desc: J.jnp.sort(_canonical_zero(J, x, out), axis=axis,
                                                          descending=desc)),
    "argsort": (lambda x, axis, desc, type: nx.argsort(x, axis=axis,
                                                       direction="desc" if desc else "asc",
                                                       type=type),
                lambda J, ts, out, x, axis, desc, type: J.c(J.jnp.argsort(
                    _canonical_zero(J, x, ts[0]), axis=axis, stable=True, descending=desc), out)),
    "dot": (lambda a, b, ca, ba, cb, bb: nx.dot(a, ca, ba, b, cb, bb), _dot_jx),
    "conv": (lambda x, k, strides, padding, input_dilation, kernel_dilation, groups: nx.conv(
        x, k, strides=strides, padding=padding, input_dilation=input_dilation,
        kernel_dilation=kernel_dilation, feature_group_size=groups), _conv_jx),
    **{n: _window(n) for n in ("window_sum", "window_max", "window_min", "window_product",
                               "window_mean")},
    "window_reduce": (_window_reduce_nx, _window_reduce_jx),
    "window_scatter_max": _window_scatter("max"), "window_scatter_min": _window_scatter("min"),
    "top_k": (lambda x, k, part: nx.top_k(x, k=k)[0 if part == "values" else 1], _top_k_jx),
    "bitcast": (lambda x, type: nx.bitcast(x, type), _bitcast_jx),
    "population_count": (lambda x: nx.population_count(x),
                         lambda J, ts, out, x: J.c(J.lax.population_count(x), out)),
    "count_leading_zeros": (lambda x: nx.count_leading_zeros(x),
                            lambda J, ts, out, x: J.c(J.lax.clz(x), out)),
    "real": (lambda x: nx.real(x), lambda J, ts, out, x: J.c(J.jnp.real(x), out)),
    "imag": (lambda x: nx.imag(x), lambda J, ts, out, x: J.c(J.jnp.imag(x), out)),
    "conjugate": (lambda x: nx.conjugate(x), lambda J, ts, out, x: J.c(J.jnp.conj(x), out)),
    "complex": (lambda a, b: nx.complex(a, b), lambda J, ts, out, a, b: J.lax.complex(
        J.c(a, _real_of(out)), J.c(b, _real_of(out)))),
    **{n: _fft(n) for n in _FFTS}, **{n: _fft2(n) for n in ("fft2", "ifft2")},
    "reduce": (_reduce_nx, _reduce_jx),
    "iota": (lambda x, axis: nx.iota(x.shape, axis=axis, type=x.type),
             lambda J, ts, out, x, axis: J.c(
                 J.lax.broadcasted_iota("int64", x.shape, axis) if axis is not None else
                 J.jnp.arange(int(np.prod(x.shape, dtype=np.int64))).reshape(x.shape), out)),
    "eye": (lambda x: nx.eye(x.shape, type=x.type),
            lambda J, ts, out, x: J.c(J.jnp.eye(*x.shape), out)),
    "optimization_barrier": (lambda x: nx.optimization_barrier(x),
                             lambda J, ts, out, x: J.lax.optimization_barrier(x)),
    "permute_by_key": (lambda k, v, desc: nx.permute_by_key(k, v, axis=-1,
                                                             direction="desc" if desc else "asc"),
                       lambda J, ts, out, k, v, desc: J.c(J.jnp.take_along_axis(
                           v, J.jnp.argsort(_canonical_zero(J, k, ts[0]), axis=-1, stable=True,
                                            descending=desc), axis=-1), out)),
    "cond": (lambda p, x, then, other: cond(nx.sum(p) > 0, lambda: TRANSFORMS[then][0](x),
                                            lambda: TRANSFORMS[other][0](x)), _cond_jx),
    "while": (lambda x, n, body: while_loop(lambda s: s[0] < n,
                                            lambda s: (s[0] + 1, TRANSFORMS[body][0](s[1])),
                                            (0, x))[1], _while_jx),
}

# exactness (docs/fuzzing.md): ops whose float results stay bit-identical
EXACT = {"negate", "floor", "ceil", "round", "max", "min", "select", "clip", "reshape",
         "transpose", "broadcast", "squeeze", "new_axis", "pad", "reverse", "concatenate",
         "slice", "dynamic_slice", "put_slice", "take", "gather", "indexed_put", "sort",
         "cumulative_max", "cumulative_min", "reduce_max", "reduce_min", "as_type",
         "window_max", "window_min", "top_k", "bitcast", "real", "imag", "conjugate",
         "complex", "optimization_barrier", "permute_by_key", "iota", "eye"}
EXACT_ARITH = {"add", "subtract", "multiply"}   # correctly rounded in f32/f64
# ops whose result jumps when a float operand moves by an ulp
DISCONTINUOUS = ({"floor", "ceil", "round", "sign", "argmax", "argmin", "argsort", "remainder",
                  "atan2",
                  "all", "any", "select", "cond", "is_nan", "is_infinity", "logical_not",
                  "window_scatter_max", "window_scatter_min", "bitcast"}
                 | {n for n, (rule, _) in BINARY.items() if rule in ("compare", "logical")})
COMPLEX_UNARY = {"negate", "abs", "exp", "sin", "cos", "tanh", "is_nan", "is_infinity",
                 "logical_not"}



# ----------------------------------------------------------------------------------------
# Draws: how the generator (generator.py's ``drawn`` family) makes a node of the ops no
# family draws. ``draw(g, i)`` appends the op to operand ``i`` with ``g.step`` (and any
# operand it needs: ``g.leaf``, ``g.operand_like``), returning the node or None.
# ----------------------------------------------------------------------------------------
def _draw_bits(op):
    return lambda g, i: g.step(op, [i]) if g.t(i).is_int else None


def _complex_of(g, i):
    """A complex node from ``i``: itself when complex, else complex(i, a float like it)."""
    if g.t(i).is_complex:
        return i
    if not g.t(i).is_float:
        return None
    j = g.operand_like(i, "real")
    if not g.t(j).is_float or g.vals[j].shape != g.vals[i].shape:
        return None
    return g.step("complex", [i, j])


def _draw_part(op):
    def draw(g, i):
        z = _complex_of(g, i)
        return None if z is None else g.step(op, [z])
    return draw


def _draw_fft(op):
    def draw(g, i):
        x = g.vals[i]
        if not x.rank or x.type.is_pred or (op == "rfft" and x.type.is_complex):
            return None
        axis = int(g.rng.integers(-x.rank, x.rank))
        length = None if g.chance(0.5) else int(g.rng.integers(1, 6))
        if x.shape[axis] == 0 and ((op == "rfft" and length is None)
                                   or (op == "irfft" and not x.type.is_complex)):
            return None  # rfft of nothing: NumPy raises, JAX cannot lower it (0 vs 1 result)
        if op == "irfft" and not x.type.is_complex:  # the inverse of a spectrum
            i = g.step("rfft", [i], length=None, axis=axis)
            if i is None:
                return None
        return g.step(op, [i], length=length, axis=axis)
    return draw


def _draw_fft2(op):
    def draw(g, i):
        x = g.vals[i]
        if x.rank < 2 or x.type.is_pred:
            return None
        lengths = None if g.chance(0.5) else [int(g.rng.integers(1, 5)) for _ in range(2)]
        return g.step(op, [i], lengths=lengths)
    return draw


def _draw_reduce(g, i):
    x = g.vals[i]
    if x.type.is_pred or x.type.is_complex:
        return None
    axes = None if g.chance(0.4) or not x.rank else [int(g.rng.integers(x.rank))]
    return g.step("reduce", [i], fn=g.pick(list(REDUCE_FNS)), axes=axes,
                  keep=axes is not None and g.chance(0.3))


def _draw_permute_by_key(g, i):
    x = g.vals[i]
    if not x.rank or x.type.is_complex:
        return None
    keys = g.leaf(x.shape, g.pick(["s32", "u8", "s8"]))
    return g.step("permute_by_key", [keys, i], desc=g.chance(0.5))


def _draw_iota(g, i):
    x = g.vals[i]
    axis = None if g.chance(0.3) or not x.rank else int(g.rng.integers(x.rank))
    return g.step("iota", [i], axis=axis)


DRAWS = {
    "population_count": _draw_bits("population_count"),
    "count_leading_zeros": _draw_bits("count_leading_zeros"),
    "complex": _complex_of,
    **{op: _draw_part(op) for op in ("real", "imag", "conjugate")},
    **{op: _draw_fft(op) for op in _FFTS}, **{op: _draw_fft2(op) for op in ("fft2", "ifft2")},
    "reduce": _draw_reduce,
    "permute_by_key": _draw_permute_by_key,
    "optimization_barrier": lambda g, i: g.step("optimization_barrier", [i]),
    "iota": _draw_iota,
    "eye": lambda g, i: g.step("eye", [i]) if g.vals[i].rank == 2 else None,
}
assert set(DRAWS) <= set(OPS)
