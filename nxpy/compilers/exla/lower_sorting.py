"""Lowerings of the sorting family: sort, argsort, permute_by_key (``stablehlo.sort``),
top_k (``chlo.top_k``) and the cumulative scans (``stablehlo.reduce_window`` for short
axes, an associative scan of slices for long ones). What each form is and why:
``docs/ops_sorting.md``.

Nx's order (NaN above everything, ``-0.0 == 0.0``, stable) needs a comparator that
canonicalizes floats (JAX's: ``-0.0 → 0.0``, NaN → +NaN, then a TOTALORDER compare), and
XLA:CPU runs sorts with such a comparator about seven times slower than a sort of plain
integers with ``LT``. So where the values fit, nxpy sorts *integer keys* instead:

* argsort of a type of up to 32 bits: one s64 key per element, the order key in the high
  half and the position in the low half (unique keys: the sort is stable by
  construction); the indices are the low halves.
* sort of a float of up to 32 bits: the order key in the high half and the value's own
  bits in the low half; the values are the low halves, bitcast back.
* 64-bit types: a sort with JAX's comparator (and the iota as a second operand for
  argsort).
"""
from __future__ import annotations

import numpy as np

from ... import types as T
from ...defn.expr import Expr
from .lowering import I1, Ctx, _static_slice, reducer_region, register_lowering
from .mlir import Val, i64_array

__all__ = ["SCAN_THRESHOLD"]

S32, S64 = T.Type("s", 32), T.Type("s", 64)
U8 = T.Type("u", 8)

#: axes of at least this many elements scan with the associative scan (log2(n) levels
#: of slices), shorter ones with one reduce_window (JAX's form); see docs/ops_sorting.md
SCAN_THRESHOLD = 16


def _int(bits, signed=True):
    return T.Type("s" if signed else "u", bits)


def _bitcast(c: Ctx, v: Val, t) -> Val:
    return c.op("stablehlo.bitcast_convert", [v], (v.shape, t))


def _iota(c: Ctx, shape, t, axis) -> Val:
    return c.op("stablehlo.iota", [], (tuple(shape), t), {"iota_dimension": f"{axis} : i64"})


def _compare_total(c: Ctx, a: Val, b: Val, direction) -> Val:
    return c.op("stablehlo.compare", [a, b], (a.shape, I1),
                {"comparison_direction": f"#stablehlo<comparison_direction {direction}>",
                 "compare_type": "#stablehlo<comparison_type TOTALORDER>"})


def _canonical(c: Ctx, x: Val) -> Val:
    """``-0.0 → 0.0`` and every NaN → +NaN (JAX's canonicalization before sorting)."""
    zero = c.const(0, x.type, x.shape)
    x2 = c.select(c.compare(x, zero, "EQ"), zero, x)
    return c.select(c.is_nan(x), c.const(np.nan, x.type, x.shape), x2)


def _float_key(c: Ctx, x: Val) -> Val:
    """A signed integer of ``x``'s width ordering as Nx orders the floats."""
    st = _int(x.type.bits)
    bits = _bitcast(c, _canonical(c, x), st)
    flipped = c.binop("stablehlo.xor", bits, c.const(np.iinfo(st.dtype).max, st, x.shape))
    return c.select(c.compare(bits, c.const(0, st, x.shape), "LT"), flipped, bits)


def _key32(c: Ctx, x: Val) -> Val:
    """An s32 ordering as Nx orders ``x`` (a type of up to 32 bits)."""
    t = x.type
    if t.is_float:
        return c.convert(_float_key(c, x), S32)
    if t.kind == "u" and t.bits == 32:
        return c.binop("stablehlo.xor", _bitcast(c, x, S32),
                       c.const(np.iinfo(np.int32).min, S32, x.shape))
    return c.convert(c.convert(x, U8) if t.is_pred else x, S32)


def _comparator(c: Ctx, types, direction, tie_break=False) -> str:
    """A sort comparator region over operands of ``types`` comparing the first one (floats
    as JAX does: canonicalized, TOTALORDER). With ``tie_break``, first operands that are
    equal in that order compare by the last operand, the positions reversed (``n - 1 -
    i``), descending: the order is unique, so any sort, stable or not, gives the stable
    result."""
    def build(cb, args):
        sub = Ctx(cb, {}, c)
        a, b = args[0], args[1]
        d = "LT" if direction == "asc" else "GT"
        if a.type.is_inexact:
            a, b = _canonical(sub, a), _canonical(sub, b)

            def cmp(x, y):
                return _compare_total(sub, x, y, d)
        else:
            def cmp(x, y):
                return sub.compare(x, y, d)
        before = cmp(a, b)
        if not tie_break:
            return [before]
        tie = _not(sub, sub.binop("stablehlo.or", before, cmp(b, a)))
        first = sub.compare(args[-2], args[-1], "GT")
        return [sub.binop("stablehlo.or", before, sub.binop("stablehlo.and", tie, first))]
    return c.b.region([((), t) for t in types for _ in range(2)], build)


def _sort(c: Ctx, operands, axis, direction, *, positions=None) -> list:
    """``stablehlo.sort`` of ``operands`` along ``axis`` by the first one, stable; with
    ``positions`` (an integer type) one more result, the positions the sorted elements
    came from (argsort, top_k).

    For a target without a stable sort (``c.stable_sort`` False) the order is made
    unique: a last operand holds the positions reversed, ``n - 1 - i``, and breaks ties
    (the positions are read back from it). Not a plain iota, and every operand once: IREE
    (3.13) cannot compile a sort given one value twice (its CSE merges an iota operand
    with another iota), and rewrites a descending sort of ``(x, iota)`` cut by slices
    into its own top_k, which judges the comparator by its first op alone."""
    shape, n = operands[0].shape, operands[0].shape[axis]
    if c.stable_sort or (len(operands) == 1 and not operands[0].type.is_inexact
                         and positions is None):
        # XLA's form (or one operand of integers: equal elements are the same bits)
        if positions is not None:
            operands = list(operands) + [_iota(c, shape, positions, axis)]
        region = _comparator(c, [v.type for v in operands], direction)
        res = c.op("stablehlo.sort", operands, [(v.shape, v.type) for v in operands],
                   {"dimension": f"{axis} : i64", "is_stable": "true"}, [region])
        return res if isinstance(res, list) else [res]
    pt = positions if positions is not None else S32 if n < 2 ** 31 else S64
    last = c.const(max(n - 1, 0), pt, shape)
    rev = c.binop("stablehlo.subtract", last, _iota(c, shape, pt, axis))
    distinct = list({v.name: v for v in operands}.values())  # in order, each once
    ops = distinct + [rev]
    region = _comparator(c, [v.type for v in ops], direction, tie_break=True)
    res = c.op("stablehlo.sort", ops, [(v.shape, v.type) for v in ops],  # unique: any sort
               {"dimension": f"{axis} : i64", "is_stable": "false"}, [region])
    sorted_of = {v.name: r for v, r in zip(distinct, res)}
    out = [sorted_of[v.name] for v in operands]
    return out + [c.binop("stablehlo.subtract", last, res[-1])] if positions is not None else out


def _not(c: Ctx, v: Val) -> Val:
    return c.op("stablehlo.not", [v], (v.shape, v.type))


def _int_sort(c: Ctx, v: Val, axis, direction) -> Val:
    """A sort of integers with an ``LT`` comparator (XLA:CPU's fast one); descending
    sorts the bitwise complements, which order the other way round."""
    if direction == "desc":
        v = _not(c, v)
    (s,) = _sort(c, [v], axis, "asc")
    return _not(c, s) if direction == "desc" else s


@register_lowering("sort")
def _sort_rule(c: Ctx, e: Expr, x: Val):
    axis, direction = e.attrs["axis"], e.attrs["direction"]
    t = x.type
    if t.is_pred:
        return c.convert(_int_sort(c, c.convert(x, U8), axis, direction), I1)
    if t.is_float and t.bits <= 32:
        w = t.bits
        wide = _int(2 * w)
        hi = c.binop("stablehlo.shift_left", c.convert(_float_key(c, x), wide),
                     c.const(w, wide, x.shape))
        lo = c.convert(_bitcast(c, x, _int(w, False)), wide)
        s = _int_sort(c, c.binop("stablehlo.or", hi, lo), axis, direction)
        return _bitcast(c, c.convert(s, _int(w, False)), t)
    if not t.is_inexact:
        return _int_sort(c, x, axis, direction)
    (r,) = _sort(c, [x], axis, direction)
    return r


@register_lowering("argsort")
def _argsort_rule(c: Ctx, e: Expr, x: Val):
    axis, direction = e.attrs["axis"], e.attrs["direction"]
    if x.type.bits <= 32 or x.type.is_pred:
        key = _key32(c, x)
        if direction == "desc":
            key = c.op("stablehlo.not", [key], (key.shape, S32))
        packed = c.binop("stablehlo.or",
                         c.binop("stablehlo.shift_left", c.convert(key, S64),
                                 c.const(32, S64, x.shape)),
                         _iota(c, x.shape, S64, axis))
        (s,) = _sort(c, [packed], axis, "asc")
        return c.convert(c.convert(s, S32), e.type)
    _, idx = _sort(c, [x], axis, direction, positions=S64)
    return c.convert(idx, e.type)


@register_lowering("permute_by_key")
def _permute_rule(c: Ctx, e: Expr, keys: Val, values: Val):
    if keys.type.is_pred:
        keys = c.convert(keys, U8)
    _, v = _sort(c, [keys, c.convert(values, e.type)], e.attrs["axis"], e.attrs["direction"])
    return v


@register_lowering("top_k")
def _top_k_rule(c: Ctx, e: Expr, x: Val):
    k = e.attrs["k"]
    t = x.type
    y = _canonical(c, x) if t.is_float else (c.convert(x, U8) if t.is_pred else x)
    shape = x.shape[:-1] + (k,)
    if c.stable_sort:
        v, i = c.op("chlo.top_k", [y], [(shape, y.type), (shape, S32)], {"k": f"{k} : i64"})
    else:  # XLA's order (NaN first, ties by position) as a sort with a tie-break, cut
        axis = len(x.shape) - 1
        v, i = _sort(c, [y], axis, "desc", positions=S32)
        v, i = _slice_axis(c, v, axis, 0, k), _slice_axis(c, i, axis, 0, k)
    return [c.convert(v, I1) if t.is_pred else v, i]


# ----------------------------------------------------------------------------------------
# Cumulative scans
# ----------------------------------------------------------------------------------------
_SCAN = {"cumulative_sum": ("stablehlo.add", lambda t: 0),
         "cumulative_product": ("stablehlo.multiply", lambda t: 1),
         "cumulative_max": ("stablehlo.maximum", T.min_value),
         "cumulative_min": ("stablehlo.minimum", T.max_value)}


def _reduce_window_scan(c: Ctx, x: Val, op, axis, reverse) -> Val:
    name, init = _SCAN[op]
    n, r = x.shape[axis], len(x.shape)
    window = [1] * r
    window[axis] = n
    pads = [[0, 0] for _ in range(r)]
    pads[axis] = [0, n - 1] if reverse else [n - 1, 0]
    body = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in pads) + "]"
    return c.op("stablehlo.reduce_window", [x, c.const(init(x.type), x.type)], (x.shape, x.type), {
        "padding": f"dense<{body}> : tensor<{r}x2xi64>",
        "window_dimensions": i64_array(window), "window_strides": i64_array([1] * r)},
        [reducer_region(c, name, x.type)])


def _slice_axis(c: Ctx, v: Val, axis, start, stop, stride=1) -> Val:
    r = len(v.shape)
    starts, lengths, strides = [0] * r, list(v.shape), [1] * r
    starts[axis], lengths[axis], strides[axis] = start, stop - start, stride
    shape = list(v.shape)
    shape[axis] = -(-(stop - start) // stride)
    return _static_slice(c, v, starts, lengths, strides, (tuple(shape), v.type))


def _interleave(c: Ctx, even: Val, odd: Val, axis, n) -> Val:
    """``out[2i] = even[i]``, ``out[2i + 1] = odd[i]`` (no arithmetic: -0.0 stays)."""
    ne, no = even.shape[axis], odd.shape[axis]
    if no < ne:  # one more even element: extend the odd ones, cut the result
        pads = [(0, 0, 0)] * len(odd.shape)
        pads[axis] = (0, ne - no, 0)
        odd = c.op("stablehlo.pad", [odd, c.const(0, odd.type)],
                   (tuple(d + (ne - no if i == axis else 0) for i, d in enumerate(odd.shape)),
                    odd.type),
                   {"edge_padding_high": i64_array([h for _, h, _ in pads]),
                    "edge_padding_low": i64_array([0] * len(pads)),
                    "interior_padding": i64_array([0] * len(pads))})
    split = even.shape[:axis + 1] + (1,) + even.shape[axis + 1:]
    both = c.op("stablehlo.concatenate", [c.reshape(even, split), c.reshape(odd, split)],
                (even.shape[:axis + 1] + (2,) + even.shape[axis + 1:], even.type),
                {"dimension": f"{axis + 1} : i64"})
    merged = c.reshape(both, even.shape[:axis] + (2 * ne,) + even.shape[axis + 1:])
    return merged if 2 * ne == n else _slice_axis(c, merged, axis, 0, n)


def _associative_scan(c: Ctx, x: Val, op, axis) -> Val:
    """JAX's associative_scan of ``x`` along ``axis``: pairs combined, the scan of the
    pairs (recursively), then the even positions filled in."""
    name, _ = _SCAN[op]
    n = x.shape[axis]
    if n < 2:
        return x
    a, b = _slice_axis(c, x, axis, 0, n - 1, 2), _slice_axis(c, x, axis, 1, n, 2)
    odd = _associative_scan(c, c.binop(name, a, b), op, axis)
    x2 = _slice_axis(c, x, axis, 2, n, 2)
    o_used = odd if n % 2 else _slice_axis(c, odd, axis, 0, odd.shape[axis] - 1)
    first = _slice_axis(c, x, axis, 0, 1)
    if x2.shape[axis]:
        evens = c.op("stablehlo.concatenate", [first, c.binop(name, o_used, x2)],
                     (first.shape[:axis] + (1 + x2.shape[axis],) + first.shape[axis + 1:], x.type),
                     {"dimension": f"{axis} : i64"})
    else:
        evens = first
    return _interleave(c, evens, odd, axis, n)


@register_lowering(*_SCAN)
def _scan_rule(c: Ctx, e: Expr, x: Val):
    axis, reverse = e.attrs["axis"], e.attrs["reverse"]
    pred = e.type.is_pred  # min/max of pred: as u8
    half = e.type.is_float and e.type.bits == 16  # f16/bf16: in f32, rounded once (as NumPy's)
    x = c.convert(x, U8 if pred else T.F32 if half else e.type)
    n = x.shape[axis]
    if n < 2 or 0 in x.shape:
        r = x
    elif n < SCAN_THRESHOLD:
        r = _reduce_window_scan(c, x, e.op, axis, reverse)
    else:
        if reverse:
            x = c.op("stablehlo.reverse", [x], (x.shape, x.type), {"dimensions": i64_array([axis])})
        r = _associative_scan(c, x, e.op, axis)
        if reverse:
            r = c.op("stablehlo.reverse", [r], (r.shape, r.type), {"dimensions": i64_array([axis])})
    return c.convert(r, I1) if pred else c.convert(r, e.type) if half else r

