"""The loader's op table: one rule per StableHLO op (:data:`OPS`), tables for the
elementwise families, and the :class:`Scope` that holds a function body's values while
its ops run. :mod:`nxpy.stablehlo.sharding` adds the sharded and collective ops;
:mod:`nxpy.stablehlo.loader` runs whole programs with them.
"""
from __future__ import annotations

import re

import numpy as np

from .. import _context
from .. import ops as nx
from .. import types as T
from ..compilers.exla.lowering import BINARY_HLO, COMPARISON_DIRECTIONS, UNARY_HLO
from ..defn.expr import EXPR
from ..defn.transforms.grad import custom_grad
from ..registry import rule_registrar
from ..defn.kernel import cond as nx_cond, while_loop as nx_while_loop
from ..tensor import Tensor, shape_str
from .parser import StableHLOError
from .syntax import DenseElements, Op, Region, TensorType, Use

__all__ = ["LoadError", "UnsupportedOpError", "OPS", "register_op", "Scope", "UNARY", "BINARY",
           "COMPARISONS", "REDUCTIONS"]


class LoadError(StableHLOError):
    """The module cannot be rebuilt in nxpy; the message says which op, and where."""


class UnsupportedOpError(LoadError, NotImplementedError):
    """An op (or a form of it) that nxpy's op set cannot express."""

    def __init__(self, message, op_name=None):
        super().__init__(message)
        self.op_name = op_name


OPS: dict = {}


register_op = rule_registrar(
    OPS, "register_op", "an importer rule",
    """Decorator: ``handler(scope, op, *operand_values) -> value or list of values`` for the
    StableHLO ops ``names`` (plugins may add or override ops).""")


TERMINATORS = {"func.return", "stablehlo.return", "sdy.return"}


def _fail(op, scope, message, unsupported=False):
    where = op.where(scope.program.module.aliases)
    text = f"{op.name} at {where}: {message}"
    raise (UnsupportedOpError(text, op.name) if unsupported else LoadError(text))


# ----------------------------------------------------------------------------------------
# Scopes: the values of one function body or region
# ----------------------------------------------------------------------------------------
class Scope:
    """The SSA values of one function body or region (chained to the enclosing one), and
    what is statically known about some of them (constants, iotas)."""

    def __init__(self, program, parent=None, eager=None):
        self.program = program
        self.parent = parent
        self.values = {}
        self.known = {}
        self.eager = eager if eager is not None else (parent.eager if parent else False)

    def child(self, **kw) -> "Scope":
        return Scope(self.program, self, **kw)

    def _find(self, key, table):
        s = self
        while s is not None:
            d = getattr(s, table)
            if key in d:
                return d[key]
            s = s.parent
        raise KeyError(key)

    def get(self, use: Use, op=None):
        if not isinstance(use, Use):  # a malformed custom form: something else where a value is
            raise LoadError(f"{op.name + ' at ' + op.where() + ': ' if op else ''}operand "
                            f"`{use}` is not a value (%name)")
        keys = [str(use)] + ([use.name] if use.index == 0 else [])
        for k in keys:
            try:
                return self._find(k, "values")
            except KeyError:
                pass
        raise LoadError(f"{op.name + ' at ' + op.where() + ': ' if op else ''}value {use} is "
                        f"used before it is defined")

    def fact(self, use: Use):
        """What is known about ``use`` at load time: ``("constant", array)``,
        ``("iota", dim)``, or None."""
        try:
            return self._find(str(use), "known")
        except KeyError:
            return None

    def bind(self, names, values):
        for n, v in zip(names, values):
            self.values[n] = v

    # --- running ops ----------------------------------------------------------------------
    def run_ops(self, ops) -> list:
        """Runs ``ops`` in order; returns the operands of the terminator (if any)."""
        for op in ops:
            if op.name in TERMINATORS:
                return [self.get(u, op) for u in op.operands]
            self.run_op(op)
        return []

    def run_region(self, region: Region, args, **kw) -> list:
        """Runs the single-block ``region`` with its block arguments bound to ``args``."""
        if len(region.blocks) != 1:
            raise LoadError(f"regions with {len(region.blocks)} blocks are not supported "
                            f"(StableHLO regions have one block)")
        sub = self.child(**kw)
        block = region.blocks[0]
        if len(block.args) != len(args):
            raise LoadError(f"a region with {len(block.args)} block argument(s) was given "
                            f"{len(args)} value(s)")
        sub.bind([a.name for a in block.args], args)
        return sub.run_ops(block.ops)

    def run_op(self, op: Op):
        handler = OPS.get(op.name)
        if handler is None:
            _fail(op, self, f"nxpy has no equivalent of {op.name}", unsupported=True)
        if "custom_assembly" in op.attributes:
            _fail(op, self, f"its custom form `{op.attributes['custom_assembly']}` is not one "
                            f"nxpy reads", unsupported=True)
        args = [self.get(u, op) for u in op.operands]
        try:
            out = handler(self, op, *args)
        except LoadError:
            raise
        except Exception as e:  # any failure of a rule names the op and its line
            _fail(op, self, f"{type(e).__name__}: {e}")
        outs = list(out) if isinstance(out, list) else [out]
        if len(outs) != len(op.results):
            _fail(op, self, f"produced {len(outs)} value(s) for {len(op.results)} result(s) "
                            f"(internal error)")
        for i, (v, ty) in enumerate(zip(outs, op.result_types)):
            _check(op, self, v, ty, f"result {i}")
        self.bind(op.results, outs)
        return outs


def _check(op, scope, v, ty, what):
    if not isinstance(ty, TensorType):
        return
    if not isinstance(v, Tensor):
        _fail(op, scope, f"{what} should be a {ty}, got {type(v).__name__} (internal error)")
    want = (tuple(ty.shape), ty.nx_type)
    if (v.shape, v.type) != want:
        ins = ", ".join(str(t) for t in op.operand_types) or "no operands"
        _fail(op, scope, f"the module declares {what} as {ty}, but {op.name} of ({ins}) "
                         f"gives {v.type}{shape_str(v.shape)}: the module's types are "
                         f"inconsistent (if it is valid StableHLO, please report this as an "
                         f"nxpy bug)")


def rtype(op, i=0):
    """Result ``i``'s ``(shape, nxpy type)``."""
    t = op.result_types[i]
    if not isinstance(t, TensorType):
        raise LoadError(f"{op.name} at {op.where()}: expected a tensor result, got {t}")
    return tuple(t.shape), t.nx_type


def constant(scope, value, type, shape=()):
    """A tensor holding ``value`` (broadcast to ``shape``): an Expr node when tracing, a
    NumPy-backend tensor when the scope runs eagerly on load-time values. A splat (all
    elements bitwise equal) becomes a scalar broadcast."""
    arr = np.asarray(value)
    backend = "numpy" if scope.eager or not _context.tracing() else EXPR
    shape = tuple(shape)
    if arr.size == 0:
        arr = np.zeros((), type.dtype)
    if arr.shape == () or is_splat(arr):
        scalar = nx.tensor(arr.reshape(-1)[0], type=type, backend=backend)
        return nx.broadcast(scalar, shape) if shape != () else scalar
    return nx.tensor(arr.reshape(shape), type=type, backend=backend)


def is_splat(arr) -> bool:
    """Whether every element of ``arr`` has the same bits (so ``-0.0`` and ``0.0`` differ)."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    if flat.size == 0:
        return False
    raw = flat.view(np.dtype((np.void, flat.itemsize)))
    return bool((raw == raw[0]).all())


# ----------------------------------------------------------------------------------------
# Elementwise tables
# ----------------------------------------------------------------------------------------
# Read back through the tables the EXLA lowering writes with, so each name mapping is
# stated once; the extras are forms JAX emits that nxpy does not.
#: StableHLO / CHLO elementwise unary op → nxpy op
UNARY = {hlo: op for op, hlo in UNARY_HLO.items()} | {"chlo.tan": "tan",
                                                      "chlo.is_inf": "is_infinity"}

#: StableHLO elementwise binary op → nxpy op (operands and result share one type);
#: divide has its own rule (float divide or integer quotient), and and/or/xor read as the
#: bitwise ops (on i1 those are the logical ones)
BINARY = {hlo: op for op, hlo in BINARY_HLO.items()
          if op not in ("divide", "quotient", "logical_and", "logical_or", "logical_xor")}
#: on i1 (pred) operands, arithmetic is logic
_PRED_BINARY = {"stablehlo.add": "bitwise_or", "stablehlo.multiply": "bitwise_and",
                "stablehlo.maximum": "bitwise_or", "stablehlo.minimum": "bitwise_and"}

#: comparison_direction → nxpy op
COMPARISONS = {d: op for op, d in COMPARISON_DIRECTIONS.items()}


def _unary(name):
    def handler(scope, op, x):
        return getattr(nx, name)(x)
    return handler


def _binary(hlo):
    def handler(scope, op, a, b):
        name = BINARY[hlo]
        if a.type.is_pred:
            name = _PRED_BINARY.get(hlo, name if name.startswith("bitwise") else None)
            if name is None:
                _fail(op, scope, f"{hlo} on i1 values", unsupported=True)
        return getattr(nx, name)(a, b)
    return handler


for _k, _v in UNARY.items():
    OPS[_k] = _unary(_v)
for _k in BINARY:
    OPS[_k] = _binary(_k)


@register_op("stablehlo.divide")
def _divide(scope, op, a, b):
    return nx.divide(a, b) if a.type.is_inexact else nx.quotient(a, b)


def _as_kind(x, kind):
    """``x`` bitcast to the signed (``"s"``) or unsigned (``"u"``) type of its width."""
    if x.type.kind == kind or not x.type.is_int:
        return x
    return nx.bitcast(x, T.Type(kind, x.type.bits))


@register_op("stablehlo.shift_right_arithmetic", "stablehlo.shift_right_logical")
def _shift_right(scope, op, a, b):
    kind = "s" if op.name.endswith("arithmetic") else "u"
    r = nx.right_shift(_as_kind(a, kind), _as_kind(b, kind))
    return _as_kind(r, a.type.kind)


@register_op("stablehlo.compare")
def _compare(scope, op, a, b):
    direction = str(op.attributes["comparison_direction"])
    ct = str(op.attributes.get("compare_type", ""))
    if ct == "TOTALORDER" and a.type.is_float:
        a, b = _total_order_key(a), _total_order_key(b)
    elif ct in ("SIGNED", "UNSIGNED") and a.type.is_int:
        a, b = _as_kind(a, ct[0].lower()), _as_kind(b, ct[0].lower())
    if direction not in COMPARISONS:
        _fail(op, scope, f"unknown comparison direction {direction}")
    return getattr(nx, COMPARISONS[direction])(a, b)


def _total_order_key(x):
    """A signed integer that orders floats as IEEE totalOrder does (-NaN < -inf < ... <
    -0 < +0 < ... < +inf < +NaN)."""
    s = T.Type("s", x.type.bits)
    bits = nx.bitcast(x, s)
    flipped = nx.bitwise_xor(bits, np.iinfo(s.dtype).max)
    return nx.select(nx.less(bits, 0), flipped, bits)


@register_op("chlo.square")
def _square(scope, op, x):
    return nx.multiply(x, x)


@register_op("stablehlo.is_finite")
def _is_finite(scope, op, x):
    return nx.logical_not(nx.logical_or(nx.is_nan(x), nx.is_infinity(x)))


@register_op("chlo.is_pos_inf", "chlo.is_neg_inf")
def _is_signed_inf(scope, op, x):
    side = nx.greater(x, 0) if op.name.endswith("pos_inf") else nx.less(x, 0)
    return nx.logical_and(nx.is_infinity(x), side)


@register_op("stablehlo.round_nearest_even")
def _round_even(scope, op, x):
    """Round half to even: ``floor(x)``, plus one above the midpoint, plus the parity of
    the floor at it."""
    f = nx.floor(x)
    d = nx.subtract(x, f)
    up = nx.add(f, 1)
    even = nx.add(f, nx.abs(nx.remainder(f, 2)))
    r = nx.select(nx.greater(d, 0.5), up, nx.select(nx.less(d, 0.5), f, even))
    return nx.select(nx.logical_or(nx.is_nan(x), nx.is_infinity(x)), x, r)


@register_op("stablehlo.convert")
def _convert(scope, op, x):
    return nx.as_type(x, rtype(op)[1])


@register_op("stablehlo.bitcast_convert")
def _bitcast_convert(scope, op, x):
    shape, t = rtype(op)
    if shape != x.shape:
        _fail(op, scope, "a bitcast_convert that changes the shape (element width)",
              unsupported=True)
    return nx.bitcast(x, t)


@register_op("stablehlo.select")
def _select(scope, op, p, a, b):
    return nx.select(p, a, b)


@register_op("stablehlo.clamp")
def _clamp(scope, op, lo, x, hi):
    return nx.clip(x, lo, hi)


@register_op("stablehlo.optimization_barrier")
def _optimization_barrier(scope, op, *xs):
    return nx.optimization_barrier(list(xs))


# ----------------------------------------------------------------------------------------
# Creation and shapes
# ----------------------------------------------------------------------------------------
@register_op("stablehlo.constant")
def _constant(scope, op):
    shape, t = rtype(op)
    value = op.attributes["value"]
    if not isinstance(value, DenseElements):
        _fail(op, scope, f"cannot read the value {value!r}")
    scope.known[op.results[0]] = ("constant", value.array)
    return constant(scope, value.array, t, shape)


@register_op("stablehlo.iota")
def _iota(scope, op):
    shape, t = rtype(op)
    d = int(op.attributes["iota_dimension"])
    scope.known[op.results[0]] = ("iota", d)
    backend = "numpy" if scope.eager else None
    return nx.iota(shape, axis=d, type=t, backend=backend)


@register_op("stablehlo.reshape")
def _reshape(scope, op, x):
    return nx.reshape(x, rtype(op)[0])


@register_op("stablehlo.broadcast_in_dim")
def _broadcast_in_dim(scope, op, x):
    shape, _ = rtype(op)
    dims = [int(d) for d in op.attributes["broadcast_dimensions"]]
    if dims != sorted(dims):  # a transposing broadcast: transpose first
        perm = sorted(range(len(dims)), key=lambda i: dims[i])
        x = nx.transpose(x, perm)
        dims = sorted(dims)
    fact = scope.fact(op.operands[0])
    if fact is not None and fact[0] == "constant" and shape == ():
        scope.known[op.results[0]] = fact
    elif fact is not None and fact[0] == "iota" and x.shape[fact[1]] == shape[dims[fact[1]]]:
        # a broadcast iota counts along its dim
        scope.known[op.results[0]] = ("iota", dims[fact[1]])
    return nx.broadcast(x, shape, axes=dims)


@register_op("stablehlo.transpose")
def _transpose(scope, op, x):
    return nx.transpose(x, [int(a) for a in op.attributes["permutation"]])


@register_op("stablehlo.reverse")
def _reverse(scope, op, x):
    return nx.reverse(x, axes=[int(a) for a in op.attributes["dimensions"]])


@register_op("stablehlo.slice")
def _slice(scope, op, x):
    a = op.attributes
    starts = [int(v) for v in a["start_indices"]]
    limits = [int(v) for v in a["limit_indices"]]
    strides = [int(v) for v in a.get("strides", [1] * len(starts))]
    return nx.slice(x, starts, [lim - s for s, lim in zip(starts, limits)], strides)


class CounterRow:
    """A loop constant the scan importer (``rules_scan``) hands the loop body row by row:
    ``row`` is the one row the body's ``dynamic_slice`` reads at the loop counter (the
    only use the importer found for it), so the constant is never captured whole."""

    def __init__(self, row):
        self.row = row


@register_op("stablehlo.dynamic_slice")
def _dynamic_slice(scope, op, x, *starts):
    if isinstance(x, CounterRow):
        return nx.new_axis(x.row, 0)
    return nx.slice(x, list(starts), [int(v) for v in op.attributes["slice_sizes"]])


@register_op("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(scope, op, x, update, *starts):
    return nx.put_slice(x, list(starts), update)


@register_op("stablehlo.pad")
def _pad(scope, op, x, value):
    a = op.attributes
    cfg = list(zip((int(v) for v in a["edge_padding_low"]),
                   (int(v) for v in a["edge_padding_high"]),
                   (int(v) for v in a["interior_padding"])))
    return nx.pad(x, value, cfg)


@register_op("stablehlo.concatenate")
def _concatenate(scope, op, *xs):
    return nx.concatenate(list(xs), axis=int(op.attributes["dimension"]))


@register_op("stablehlo.tuple")
def _tuple(scope, op, *xs):
    return tuple(xs)


@register_op("stablehlo.get_tuple_element")
def _get_tuple_element(scope, op, t):
    return t[int(op.attributes["index"])]


# ----------------------------------------------------------------------------------------
# Dot, reductions, windows
# ----------------------------------------------------------------------------------------
@register_op("stablehlo.dot_general")
def _dot_general(scope, op, a, b):
    dn = op.attributes["dot_dimension_numbers"]

    def dims(key):
        return [int(v) for v in dn.get(key, [])]
    _, t = rtype(op)
    a, b = nx.as_type(a, t), nx.as_type(b, t)
    return nx.dot(a, dims("lhs_contracting_dimensions"), dims("lhs_batching_dimensions"),
                  b, dims("rhs_contracting_dimensions"), dims("rhs_batching_dimensions"))


@register_op("stablehlo.dot")
def _dot(scope, op, a, b):
    _, t = rtype(op)
    a, b = nx.as_type(a, t), nx.as_type(b, t)
    return nx.dot(a, [a.rank - 1], b, [0])


def binary_body(region: Region):
    """The op a reducer region applies, when the region is just ``return op(lhs, rhs)``
    (for each operand pair); else None."""
    args = [a.name for a in region.args]
    ops = region.ops
    n = len(args) // 2
    if len(ops) != n + 1 or ops[-1].name not in TERMINATORS:
        return None
    names = set()
    for i, o in enumerate(ops[:-1]):
        pair = {str(u) for u in o.operands}
        if len(o.operands) != 2 or pair != {args[i], args[n + i]} and not (
                args[i] == args[n + i] and pair == {args[i]}):
            return None
        if str(ops[-1].operands[i]) != o.results[0]:
            return None
        names.add(o.name)
    return names.pop() if len(names) == 1 else None


#: reducer op → (nxpy reduction, its identity as a function of the type); per kind of type
REDUCTIONS = {
    "stablehlo.add": ("sum", lambda t: 0), "stablehlo.multiply": ("product", lambda t: 1),
    "stablehlo.maximum": ("reduce_max", T.min_value),
    "stablehlo.minimum": ("reduce_min", T.max_value),
}
_PRED_REDUCTIONS = {
    "stablehlo.and": ("all", lambda t: True), "stablehlo.or": ("any", lambda t: False),
    "stablehlo.maximum": ("any", lambda t: False), "stablehlo.minimum": ("all", lambda t: True),
    "stablehlo.add": ("any", lambda t: False), "stablehlo.multiply": ("all", lambda t: True),
}
_COMBINE = {"sum": "add", "product": "multiply", "reduce_max": "max", "reduce_min": "min",
            "all": "logical_and", "any": "logical_or"}


def _is_identity(scope, use, value) -> bool:
    fact = scope.fact(use)
    if fact is None or fact[0] != "constant" or fact[1] is None:
        return False
    arr = np.asarray(fact[1])
    v = arr.reshape(-1)[0] if arr.size else None
    return arr.size == 1 and (v == value or (isinstance(value, float) and np.isnan(value)
                                             and np.isnan(v)))


@register_op("stablehlo.reduce")
def _reduce(scope, op, *operands):
    n = len(operands) // 2
    inputs, inits = operands[:n], operands[n:]
    axes = [int(d) for d in op.attributes["dimensions"]]
    body = op.regions[0]
    if n == 1:
        return _reduce_one(scope, op, inputs[0], inits[0], axes, body)
    if n == 2:
        return _arg_reduce(scope, op, inputs, inits, axes, body)
    _fail(op, scope, f"a reduce over {n} operands", unsupported=True)


def _reduce_one(scope, op, x, init, axes, body):
    kind = binary_body(body)
    table = _PRED_REDUCTIONS if x.type.is_pred else REDUCTIONS
    if kind not in table:
        _fail(op, scope, "a reduce whose body is not a single add, multiply, maximum or "
                         "minimum (and, or on i1)", unsupported=True)
    name, identity = table[kind]
    _, t = rtype(op)
    r = getattr(nx, name)(x, axes=axes)
    if r.type != t:
        r = nx.as_type(r, t)
    if not _is_identity(scope, op.operands[1], identity(t)):
        r = getattr(nx, _COMBINE[name])(r, init)
    return r


def _probe(scope, body, vt, it, a, b):
    """Runs the two-operand reducer ``body`` eagerly on ``(value, index)`` pairs."""
    sub_vals = [nx.tensor(a[0], type=vt, backend="numpy"),
                nx.tensor(a[1], type=it, backend="numpy"),
                nx.tensor(b[0], type=vt, backend="numpy"),
                nx.tensor(b[1], type=it, backend="numpy")]
    v, i = scope.run_region(body, sub_vals, eager=True)
    return v.to_numpy().item(), int(i.to_numpy())


def _classify_arg_reduce(scope, body, vt, it):
    """``("argmax" | "argmin", "low" | "high")`` if ``body`` behaves as nxpy's argmax or
    argmin reducer on (value, index) pairs (NaN counts as the largest / smallest), else None."""
    def probe(a, b):
        return _probe(scope, body, vt, it, a, b)
    lo, hi = (0, 1) if vt.is_pred else (1, 2)
    v, i = probe((lo, 0), (hi, 1))
    kind = "argmax" if (v, i) == (hi, 1) else "argmin" if (v, i) == (lo, 0) else None
    if kind is None:
        return None
    tie = "low" if probe((lo, 0), (lo, 1))[1] == 0 else "high"
    best = (lambda x, y: x > y) if kind == "argmax" else (lambda x, y: x < y)
    cases = [((hi, 0), (lo, 1)), ((lo, 3), (hi, 2)), ((lo, 1), (lo, 0)), ((hi, 2), (hi, 7))]
    if vt.is_inexact:
        nan = float("nan")
        cases += [((nan, 0), (lo, 1)), ((lo, 0), (nan, 1)), ((nan, 3), (hi, 1))]
    for a, b in cases:
        got = probe(a, b)
        an, bn = a[0] != a[0], b[0] != b[0]
        if an or bn:  # NaN counts as the largest (argmax) and the smallest (argmin)
            want_i = a[1] if an else b[1]
        elif a[0] == b[0]:
            want_i = min(a[1], b[1]) if tie == "low" else max(a[1], b[1])
        else:
            want_i = a[1] if best(a[0], b[0]) else b[1]
        if got[1] != want_i:
            return None
    return kind, tie


def _arg_reduce(scope, op, inputs, inits, axes, body):
    x, idx = inputs
    fact = scope.fact(op.operands[1])
    if len(axes) != 1 or fact is None or fact != ("iota", axes[0]):
        _fail(op, scope, "a two-operand reduce that is not an argmax/argmin (the second "
                         "operand must be an iota along the reduced dimension)", unsupported=True)
    vt, it = x.type, idx.type
    try:
        found = _classify_arg_reduce(scope, body, vt, it)
    except LoadError as e:
        _fail(op, scope, f"its reducer cannot be evaluated: {e}", unsupported=True)
    if found is None:
        _fail(op, scope, "a two-operand reduce whose body is not an argmax/argmin reducer",
              unsupported=True)
    kind, tie = found
    axis = axes[0]
    index = getattr(nx, kind)(x, axis=axis, tie_break=tie, type=it)
    value = (nx.reduce_max if kind == "argmax" else nx.reduce_min)(x, axes=[axis])
    return [value, index]


@register_op("stablehlo.reduce_window")
def _reduce_window(scope, op, *operands):
    if len(operands) != 2:
        _fail(op, scope, f"a reduce_window over {len(operands) // 2} operands", unsupported=True)
    x, init = operands
    a = op.attributes
    r = x.rank
    kind = binary_body(op.regions[0])
    name = {"stablehlo.add": "window_sum", "stablehlo.maximum": "window_max"}.get(kind)
    if name is None:
        _fail(op, scope, "a reduce_window whose body is not a single add or maximum",
              unsupported=True)
    window = [int(v) for v in a["window_dimensions"]]
    strides = [int(v) for v in a.get("window_strides", [1] * r)]
    base = [int(v) for v in a.get("base_dilations", [1] * r)]
    dil = [int(v) for v in a.get("window_dilations", [1] * r)]
    pad = a.get("padding")
    pads = [tuple(int(v) for v in p) for p in pad.tolist()] if pad is not None and \
        pad.array.size else [(0, 0)] * r
    if any(b != 1 for b in base):
        _fail(op, scope, "a reduce_window with base dilations", unsupported=True)
    identity = 0 if name == "window_sum" else T.min_value(x.type)
    ident = _is_identity(scope, op.operands[1], identity)
    if not ident and any(p != (0, 0) for p in pads):
        _fail(op, scope, "a padded reduce_window whose init value is not the identity",
              unsupported=True)
    out = getattr(nx, name)(x, window, strides=strides, padding=pads, window_dilations=dil)
    if not ident:
        out = (nx.add if name == "window_sum" else nx.max)(out, init)
    return out


# ----------------------------------------------------------------------------------------
# Control flow and calls
# ----------------------------------------------------------------------------------------
def _branch(scope, region):
    return lambda: tuple(scope.run_region(region, []))


@register_op("stablehlo.if")
def _if(scope, op, pred):
    t_reg, f_reg = op.regions
    return list(nx_cond(pred, _branch(scope, t_reg), _branch(scope, f_reg)))


@register_op("stablehlo.case")
def _case(scope, op, index):
    regions = op.regions  # an index out of range takes the last branch, as in StableHLO
    clauses = [(nx.equal(index, k), _branch(scope, r)) for k, r in enumerate(regions[:-1])]
    return list(nx_cond(clauses + [(True, _branch(scope, regions[-1]))]))


@register_op("stablehlo.while")
def _while(scope, op, *init):
    c_reg, b_reg = op.regions

    def cond_fun(state):
        (p,) = scope.run_region(c_reg, list(state))
        return p

    def body_fun(state):
        return tuple(scope.run_region(b_reg, list(state)))
    return list(nx_while_loop(cond_fun, body_fun, tuple(init)))


#: JAX's private functions that implement a primitive in StableHLO ops (jax 0.12 lowers
#: f32 ``lax.lgamma`` as ``@lgamma_impl``, bit tricks included): their bodies give the
#: values, the primitive's derivative the gradient and tangent (the body's own derivative,
#: through bitcasts, is 0). The name, and ``_N`` when JAX tells apart several of them.
PRIMITIVE_CALLS = {
    "lgamma_impl": lambda x: nx.digamma(x),
}
_CALL_SUFFIX = re.compile(r"_\d+$")


@register_op("func.call")
def _call(scope, op, *args):
    callee = str(op.attributes["callee"])
    try:
        f = scope.program.module.func(callee)
    except KeyError as e:
        _fail(op, scope, str(e.args[0]))
    outs = scope.program.run_func(f, list(args), scope)
    derivative = PRIMITIVE_CALLS.get(_CALL_SUFFIX.sub("", callee.lstrip("@")))
    if derivative is not None and len(args) == 1 and len(outs) == 1:
        (x,), (y,) = args, outs
        outs = [custom_grad(y, [x], lambda g: [g * derivative(x)],
                            jvp=lambda x, t: t * derivative(x))]
    return outs
