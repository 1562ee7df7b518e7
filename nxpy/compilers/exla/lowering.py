"""Expr graph → StableHLO text. One rule per op (or table per op family), registered in
:data:`LOWERINGS`; plugins add or override rules with :func:`register_lowering`.

A rule is ``rule(ctx, expr, *args) -> Val | list[Val]``: ``args`` are the node's args
with tensors replaced by their lowered :class:`~.mlir.Val`; static options are in
``expr.attrs``; the output template is ``expr.shape`` / ``expr.type``.

**The platform.** A module is lowered for one PJRT platform (``cpu``, ``cuda``, ``rocm``,
``tpu``): :func:`lower_module`'s ``platform`` (default :func:`default_platform`, the one
nxpy's client runs on), carried in the context (``ctx.platform``), so a rule whose form
depends on it (the linear-algebra custom calls, the host-callback target) asks there.
Almost every rule emits plain StableHLO that XLA compiles on every platform; an op whose
rule exists only on some platforms says so with :func:`register_platforms`
(:func:`lowers` answers for an op and a platform; see ``docs/gpu.md``).
"""
from __future__ import annotations

import functools

import warnings

import numpy as np

from ... import types as T
from ...ops import BINARY, binary_compute_type
from ...registry import rule_registrar
from ...tensor import Tensor
from ... import pjrt
from ...defn.expr import Expr, Fn, has_effects
from .mlir import TOKEN, Builder, Val, dense, dense_i64, i64_array, is_splat, tensor_type

__all__ = ["LOWERINGS", "register_lowering", "Ctx", "lower_module", "LoweringError",
           "default_platform", "check_platform", "register_platforms", "lowers"]

LOWERINGS: dict = {}

#: op → the platforms its lowering rule has a native form for (ops not listed: every
#: platform). Filled with :func:`register_platforms`; a compiler traces an op that has no
#: form on its platform as its portable composition (``ExlaCompiler.supports``).
PLATFORM_LOWERINGS: dict = {}


class LoweringError(NotImplementedError):
    pass


register_lowering = rule_registrar(
    LOWERINGS, "register_lowering", "a lowering",
    """Decorator: ``@register_lowering("add", "subtract")`` registers ``rule`` for ops.""")


def default_platform() -> str:
    """The platform modules are lowered for unless told otherwise: the one nxpy's XLA
    client is (or will be) created for, :func:`nxpy.pjrt.requested_platform` (asking
    does not start the client; a started client was created for exactly this name,
    whereas its own ``platform`` may spell a GPU ``gpu``)."""
    return pjrt.requested_platform()


def check_platform(platform) -> str:
    """``platform`` (None: :func:`default_platform`) as one of ``nxpy.pjrt.PLATFORMS``,
    or a ValueError naming them."""
    if platform is None:
        return default_platform()
    name = str(platform).strip().lower()
    if name not in pjrt.PLATFORMS:
        raise ValueError(f"platform must be one of {', '.join(pjrt.PLATFORMS)} (the platform "
                         f"to lower for), got {platform!r}")
    return name


def register_platforms(op: str, platforms) -> None:
    """Declares that ``op``'s lowering rule has a native form only on ``platforms``
    (elsewhere the rule lowers the op's portable composition, and a compiler traces that
    composition in its place: :func:`lowers`)."""
    PLATFORM_LOWERINGS[op] = frozenset(platforms)


def lowers(op: str, platform: str) -> bool:
    """Whether ``op`` has a native lowering on ``platform`` (a rule, not limited to other
    platforms by :func:`register_platforms`)."""
    if op not in LOWERINGS:
        return False
    only = PLATFORM_LOWERINGS.get(op)
    return only is None or platform in only


I1 = T.PRED
COMPARISON_DIRECTIONS = {"equal": "EQ", "not_equal": "NE", "less": "LT", "less_equal": "LE",
                         "greater": "GT", "greater_equal": "GE"}


class Ctx:
    """What a lowering rule can use: the builder, value helpers, and sub-function lowering."""

    def __init__(self, b: Builder, env: dict, parent: "Ctx | None" = None, info=None):
        self.b = b
        self.env = env
        self.parent = parent
        self.info = info if info is not None else (parent.info if parent else {})
        #: the last side effect of this region (a TokenVal): the next one waits for it
        self.token = None

    @property
    def platform(self) -> str:
        """The platform this module is lowered for (``lower_module``'s ``platform``)."""
        p = self.info.get("platform")
        return p if p is not None else default_platform()

    @property
    def custom_calls(self) -> bool:
        """Whether the module may call ``stablehlo.custom_call`` targets (``lower_module``'s
        ``custom_calls``): False for a compiler that runs StableHLO without XLA's
        custom-call registry (rules with a portable form lower it instead)."""
        return self.info.get("custom_calls", True)

    @property
    def stable_sort(self) -> bool:
        """Whether the target's ``stablehlo.sort`` keeps equal elements in order (honours
        ``is_stable``) and its ``chlo.top_k`` orders as XLA's (``lower_module``'s
        ``stable_sort``): False makes the sorting rules give every sort a unique order
        (the positions as a tie-break operand) and lower ``top_k`` as such a sort."""
        return self.info.get("stable_sort", True)

    # --- values ------------------------------------------------------------------------
    def call_identity(self, vals) -> list:
        """``vals`` passed through a call of a private identity function (``func.call``),
        as values crossing a nested ``jax.jit`` do: the StableHLO module's folders do not
        see through the call, and XLA inlines it before it optimizes (so it folds what
        JAX's program folds). One function per signature, added after ``main``."""
        tys = tuple(v.ty for v in vals)
        fns = self.info["functions"]
        name = fns.get(tys)
        if name is None:
            name = fns[tys] = f"@identity_{len(fns)}"
            args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(tys))
            self.info["function_texts"].append(
                f"  func.func private {name}({args}) -> ({', '.join(tys)}) {{\n    return "
                + ", ".join(f"%a{i}" for i in range(len(tys))) + f" : {', '.join(tys)}\n  }}")
        return self.op("func.call", list(vals), [(v.shape, v.type) for v in vals],
                       {"callee": name})

    def lookup(self, e: Expr):
        c = self
        while c is not None:
            v = c.env.get(e.id)
            if v is not None:
                return v
            c = c.parent
        raise LoweringError(f"internal error: node {e!r} used before it was lowered")

    def op(self, name, operands, results, attrs=None, regions=None, discardable=None):
        return self.b.op(name, operands, results, attrs, regions, discardable)

    def const(self, value, t: T.Type, shape=()) -> Val:
        shape = tuple(shape)
        arr = np.asarray(value)
        if arr.shape == () or is_splat(arr):
            scalar = arr.reshape(-1)[0] if arr.size else 0
            v = self.op("stablehlo.constant", [], ((), t),
                        {"value": _scalar_attr(t, np.asarray(scalar, dtype=t.dtype).tobytes())})
            return self.bcast(v, shape)
        if arr.size == 0:
            return self.bcast(self.const(0, t), shape)
        return self.op("stablehlo.constant", [], (shape, t),
                       {"value": f"{dense(arr, t)} : {tensor_type(shape, t)}"})

    def convert(self, v: Val, t: T.Type) -> Val:
        if v.type == t:
            return v
        if t.is_pred:
            return self.compare(v, self.const(0, v.type, v.shape), "NE")
        if v.type.is_complex and not t.is_complex:
            v = self.op("stablehlo.real", [v], (v.shape, T.to_real(v.type)))
            if v.type == t:
                return v
        if v.type.kind == "s" and t.kind == "s" and t.bits < v.type.bits:
            # the same bits through the unsigned type: XLA:CPU (jaxlib 0.10.2) crashes the
            # process compiling a reduce whose signed narrowing feeds an and/or while the
            # reduce has another use (tests/test_xla_crashes.py)
            u = self.op("stablehlo.convert", [v], (v.shape, T.Type("u", t.bits)))
            return self.op("stablehlo.bitcast_convert", [u], (v.shape, t))
        return self.op("stablehlo.convert", [v], (v.shape, t))

    def bcast(self, v: Val, shape, dims=None) -> Val:
        """Broadcasts ``v`` to ``shape`` (right-aligned unless ``dims`` is given)."""
        shape = tuple(shape)
        if v.shape == shape and dims is None:
            return v
        if dims is None:
            dims = tuple(range(len(shape) - len(v.shape), len(shape)))
        return self.op("stablehlo.broadcast_in_dim", [v], (shape, v.type),
                       {"broadcast_dimensions": i64_array(dims)})

    def reshape(self, v: Val, shape) -> Val:
        shape = tuple(shape)
        return v if v.shape == shape else self.op("stablehlo.reshape", [v], (shape, v.type))

    def compare(self, a: Val, b: Val, direction: str) -> Val:
        t = a.type
        ct = "FLOAT" if t.is_inexact else ("SIGNED" if t.kind == "s" else "UNSIGNED")
        return self.op("stablehlo.compare", [a, b], (a.shape, I1),
                       {"comparison_direction": f"#stablehlo<comparison_direction {direction}>",
                        "compare_type": f"#stablehlo<comparison_type {ct}>"})

    def binop(self, name, a: Val, b: Val) -> Val:
        return self.op(name, [a, b], (a.shape, a.type))

    def select(self, p: Val, a: Val, b: Val) -> Val:
        return self.op("stablehlo.select", [p, a, b], (a.shape, a.type))

    def is_nan(self, v: Val) -> Val:
        return self.compare(v, v, "NE")

    def custom_call(self, target: str, operands, results, *, backend_config: str = "",
                    api_version: int = 4, has_side_effect: bool = False):
        """``stablehlo.custom_call @target(operands)``: the hook for kernels XLA does not
        have (the target must be registered with XLA in this process to run). In a module
        lowered with ``custom_calls=False`` it raises a :class:`LoweringError` naming the
        op being lowered, the target and the compiler."""
        self.refuse_custom_call(target)
        attrs = {"call_target_name": f'"{target}"', "api_version": f"{api_version} : i32",
                 "backend_config": f'"{backend_config}"' if api_version < 4 else
                 f"{{{backend_config}}}" if backend_config else "{}"}
        if has_side_effect:
            attrs["has_side_effect"] = "true"
        return self.op("stablehlo.custom_call", operands, results, attrs)

    def effect_token(self) -> Val:
        """The token the next side effect of this region takes (made on first use)."""
        if self.token is None:
            self.token = self.op("stablehlo.after_all", [], TOKEN)
        return self.token

    def host_callback(self, callback, operands, results=()) -> list:
        """Calls host callback ``callback`` (a :class:`nxpy.pjrt.HostCallback`) with the
        partition id and ``operands``, after this region's previous side effect; returns
        its ``results`` (``(shape, type)`` pairs) as Vals. The module's text holds it
        (:func:`nxpy.pjrt.module_text`): it stays registered while the text or a program
        compiled from it is alive."""
        self.info.setdefault("host_callbacks", []).append(callback)
        tok = self.effect_token()
        k = self.const(callback.key, T.parse("u64"))
        part = self.op("stablehlo.partition_id", [], ((), T.U32))
        target = pjrt.host_callback_target(self.platform)  # jaxlib's, for this platform
        outs = self.custom_call(target, [tok, k, part] + list(operands),
                                [TOKEN] + list(results), backend_config="index = 0 : ui64",
                                has_side_effect=True)
        self.token, *vals = outs
        return vals

    def refuse_custom_call(self, target: str) -> None:
        """Raises a :class:`LoweringError` if this module may not call custom calls (see
        :attr:`custom_calls`), naming the op being lowered, ``target`` and the compiler."""
        if not self.custom_calls:
            who = self.info.get("compiler")
            raise LoweringError(
                f"op {self.info.get('op', '?')!r} lowers to the custom call {target!r}, which "
                f"{f'compiler {who!r}' if who else 'this compiler'} cannot run (its modules "
                f"are lowered with custom_calls=False); this op has no portable form")

    # --- regions -----------------------------------------------------------------------
    def scalar_region(self, t: T.Type, n_inputs: int, body) -> str:
        """A reducer region over ``n_inputs`` scalar pairs: ``body(ctx, lhs, rhs)``."""
        def build(cb, args):
            sub = Ctx(cb, {}, self)
            return body(sub, args[:n_inputs], args[n_inputs:])
        ts = [((), t)] * (2 * n_inputs) if isinstance(t, T.Type) else [((), x) for x in t] * 2
        return self.b.region(ts, build)

    def fn_region(self, fn: Fn, arg_types, prefix=(), suffix=None, token=None) -> str:
        """Lowers sub-function ``fn`` as a region whose block args bind ``fn.params``
        (after ``prefix`` extra args that bind nothing); ``suffix(ctx, outs)`` may rewrite
        the returned values. With ``token`` (an outer token the region reads), its side
        effects follow that token and the region returns its last token after its values."""
        def build(cb, args):
            sub = Ctx(cb, {}, self)
            sub.token = token
            outs = sub.lower_body(fn, args[len(prefix):])
            outs = suffix(sub, outs, args) if suffix else outs
            return outs + [sub.token] if token is not None else outs
        return self.b.region(list(prefix) + list(arg_types), build)

    # --- graphs ------------------------------------------------------------------------
    def lower_body(self, fn: Fn, params: list) -> list:
        for p, v in zip(fn.params, params):
            self.env[p.data.id] = v
        for e in fn.nodes:
            if e.op == "parameter":
                continue
            rule = LOWERINGS.get(e.op)
            if rule is None:
                raise LoweringError(f"the EXLA compiler has no lowering for op {e.op!r}; "
                                    f"register one with nxpy.compilers.exla.register_lowering")
            args = [self._arg(a) for a in e.args]
            outer, self.info["op"] = self.info.get("op"), e.op  # for errors: the op lowered
            self.env[e.id] = _checked(e, rule, rule(self, e, *args))
            self.info["op"] = outer
        return [self.lookup(t.data) for t in fn.outputs]

    def _arg(self, a):
        if isinstance(a, Tensor):
            return self.lookup(a.data) if isinstance(a.data, Expr) else a
        if isinstance(a, Expr):
            return self.lookup(a)
        if isinstance(a, list):
            return [self._arg(x) for x in a]
        return a


@functools.lru_cache(maxsize=4096)  # modules repeat a few scalars (0, 1, 0.5) many times
def _scalar_attr(t: T.Type, raw: bytes) -> str:
    """The ``value`` attribute of a scalar constant of type ``t`` with bytes ``raw``."""
    return f"{dense(np.frombuffer(raw, dtype=t.dtype)[0], t)} : {tensor_type((), t)}"


def _checked(e: Expr, rule, result):
    """A rule's result checked against the node's inferred templates before XLA sees the
    module: a rule that emits other types is named with its op (XLA's verifier would
    only quote the StableHLO)."""
    want = list(e.outs) if e.outs is not None else [(e.shape, e.type, None)]
    got = result if isinstance(result, (list, tuple)) else [result]
    if all(isinstance(v, Val) for v in got) and (
            len(got) != len(want) or any((tuple(v.shape), v.type) != (tuple(s), t)
                                         for v, (s, t, _) in zip(got, want))):
        where = f"{getattr(rule, '__module__', '?')}.{getattr(rule, '__qualname__', rule)}"
        raise LoweringError(
            f"the EXLA lowering of op {e.op!r} ({where}) produced "
            f"{', '.join(tensor_type(v.shape, v.type) for v in got)} but the op's inferred "
            f"result is {', '.join(tensor_type(s, t) for s, t, _ in want)}: the lowering rule "
            f"(or the op's infer rule) is wrong")
    return result


def out_of(e: Expr):
    return (e.shape, e.type)


# ----------------------------------------------------------------------------------------
# Elementwise
# ----------------------------------------------------------------------------------------
UNARY_HLO = {
    "negate": "stablehlo.negate", "abs": "stablehlo.abs", "sign": "stablehlo.sign",
    "floor": "stablehlo.floor", "ceil": "stablehlo.ceil", "round": "stablehlo.round_nearest_afz",
    "exp": "stablehlo.exponential", "expm1": "stablehlo.exponential_minus_one",
    "log": "stablehlo.log", "log1p": "stablehlo.log_plus_one", "sqrt": "stablehlo.sqrt",
    "rsqrt": "stablehlo.rsqrt", "cbrt": "stablehlo.cbrt", "sin": "stablehlo.sine",
    "cos": "stablehlo.cosine", "tan": "stablehlo.tan", "asin": "chlo.asin", "acos": "chlo.acos",
    "atan": "chlo.atan", "sinh": "chlo.sinh", "cosh": "chlo.cosh", "tanh": "stablehlo.tanh",
    "asinh": "chlo.asinh", "acosh": "chlo.acosh", "atanh": "chlo.atanh",
    "sigmoid": "stablehlo.logistic", "erf": "chlo.erf", "erfc": "chlo.erfc",
    "erf_inv": "chlo.erf_inv", "lgamma": "chlo.lgamma", "digamma": "chlo.digamma",
    "bessel_i1e": "chlo.bessel_i1e",
    "bitwise_not": "stablehlo.not",
}
_INT_IDENTITY = {"floor", "ceil", "round"}


def _unary_rule(op):
    name = UNARY_HLO[op]

    def rule(c: Ctx, e: Expr, x: Val):
        if op == "abs":  # stablehlo.abs takes signless ints (and floats, complex) only
            return x if x.type.kind in ("u", "pred") else c.op(name, [x], out_of(e))
        x = c.convert(x, e.type)
        if op in _INT_IDENTITY and not e.type.is_inexact:
            return x
        if op == "sign" and e.type.kind == "u":  # likewise stablehlo.sign
            return c.convert(c.convert(x, I1), e.type)
        y = c.op(name, [x], out_of(e))
        if op == "digamma":  # a pole: NaN, as XLA before jaxlib 0.12 (which gives -inf at 0)
            zero = c.compare(x, c.const(0, e.type, e.shape), "EQ")
            return c.select(zero, c.const(float("nan"), e.type, e.shape), y)
        return y
    return rule


for _op in UNARY_HLO:
    LOWERINGS[_op] = _unary_rule(_op)


@register_lowering("is_nan", "is_infinity")
def _is_nan_inf(c: Ctx, e: Expr, x: Val):
    if not x.type.is_inexact:
        return c.const(False, I1, e.shape)
    parts = [x]
    if x.type.is_complex:
        rt = (x.shape, T.to_real(x.type))
        parts = [c.op("stablehlo.real", [x], rt), c.op("stablehlo.imag", [x], rt)]
    if e.op == "is_nan":
        rs = [c.is_nan(p) for p in parts]
    else:
        rs = [c.op("chlo.is_inf", [p], out_of(e)) for p in parts]
    return rs[0] if len(rs) == 1 else c.binop("stablehlo.or", rs[0], rs[1])


@register_lowering("logical_not")
def _logical_not(c: Ctx, e: Expr, x: Val):
    return c.compare(x, c.const(0, x.type, x.shape), "EQ")


BINARY_HLO = {
    "add": "stablehlo.add", "subtract": "stablehlo.subtract", "multiply": "stablehlo.multiply",
    "divide": "stablehlo.divide", "quotient": "stablehlo.divide",
    "remainder": "stablehlo.remainder",
    "pow": "stablehlo.power", "atan2": "stablehlo.atan2", "min": "stablehlo.minimum",
    "next_after": "chlo.next_after", "zeta": "chlo.zeta", "polygamma": "chlo.polygamma",
    "max": "stablehlo.maximum", "bitwise_and": "stablehlo.and", "bitwise_or": "stablehlo.or",
    "bitwise_xor": "stablehlo.xor", "left_shift": "stablehlo.shift_left",
    "logical_and": "stablehlo.and", "logical_or": "stablehlo.or", "logical_xor": "stablehlo.xor",
}


def _binary_rule(op):
    kind = BINARY[op][0]

    def rule(c: Ctx, e: Expr, a: Val, b: Val):
        t = binary_compute_type(op, e, a, b)
        a, b = c.bcast(c.convert(a, t), e.shape), c.bcast(c.convert(b, t), e.shape)
        if kind == "compare":
            return c.compare(a, b, COMPARISON_DIRECTIONS[op])
        if kind == "logical":
            a, b = c.convert(a, I1), c.convert(b, I1)
        if op == "right_shift":
            name = ("stablehlo.shift_right_arithmetic" if t.kind == "s"
                    else "stablehlo.shift_right_logical")
            return c.binop(name, a, b)
        if op == "pow" and t.is_int:
            return _int_pow(c, a, b)
        y = c.binop(BINARY_HLO[op], a, b)
        if op == "polygamma":  # digamma's pole at 0 is NaN, as digamma's (jaxlib 0.12: -inf)
            zero = c.const(0, t, e.shape)
            pole = c.binop("stablehlo.and", c.compare(a, zero, "EQ"), c.compare(b, zero, "EQ"))
            return c.select(pole, c.const(float("nan"), t, e.shape), y)
        return y
    return rule


def _int_pow(c: Ctx, a: Val, b: Val) -> Val:
    """Wrapping integer power by squaring over every exponent bit: XLA:CPU's
    ``stablehlo.power`` only honours the low bits of an integer exponent. Negative
    exponents give 0 unless ``|a| == 1`` (the NumPy backend's rule)."""
    t, shape = a.type, a.shape
    def k(v):
        return c.const(v, t, shape)
    def has_bit(v, bit):
        return c.compare(c.binop("stablehlo.and", v, k(bit)), k(0), "NE")
    signed = t.kind == "s"
    neg = c.compare(b, k(0), "LT") if signed else None
    e = c.select(neg, k(0), b) if signed else b
    out, base = k(1), a
    nbits = t.bits - 1 if signed else t.bits  # the sign bit of a clamped exponent is 0
    for i in range(nbits):
        out = c.select(has_bit(e, 1 << i), c.binop("stablehlo.multiply", out, base), out)
        if i + 1 < nbits:
            base = c.binop("stablehlo.multiply", base, base)
    if not signed:
        return out
    minus_one_pow = c.select(has_bit(b, 1), k(-1), k(1))
    on_neg = c.select(c.compare(a, k(1), "EQ"), k(1),
                      c.select(c.compare(a, k(-1), "EQ"), minus_one_pow, k(0)))
    return c.select(neg, on_neg, out)


for _op in BINARY:
    LOWERINGS[_op] = _binary_rule(_op)


@register_lowering("select")
def _select(c: Ctx, e: Expr, p: Val, a: Val, b: Val):
    p = c.bcast(c.convert(p, I1), e.shape)
    return c.select(p, c.bcast(c.convert(a, e.type), e.shape),
                    c.bcast(c.convert(b, e.type), e.shape))


@register_lowering("clip")
def _clip(c: Ctx, e: Expr, x: Val, lo: Val, hi: Val):
    x, lo, hi = (c.bcast(c.convert(v, e.type), e.shape) for v in (x, lo, hi))
    return c.op("stablehlo.clamp", [lo, x, hi], out_of(e))


@register_lowering("as_type")
def _as_type(c: Ctx, e: Expr, x: Val):
    if e.type.is_int and x.type.is_inexact:
        return _float_to_int(c, e, x)
    return c.convert(x, e.type)


def _float_to_int(c: Ctx, e: Expr, x: Val):
    """Saturating float→int conversion with NaN→0 (the NumPy backend's semantics)."""
    if x.type.is_complex:
        x = c.convert(x, T.to_real(x.type))
    ft = T.F64 if x.type.bits < 64 or e.type.bits > 32 else x.type
    f = c.convert(x, T.F64 if ft == T.F64 else x.type)
    info = np.iinfo(e.type.dtype)
    lo, hi = c.const(float(info.min), f.type, f.shape), c.const(float(info.max), f.type, f.shape)
    nan = c.is_nan(f)
    f = c.select(nan, c.const(0.0, f.type, f.shape), f)
    r = c.convert(f, e.type)
    r = c.select(c.compare(f, lo, "LE"), c.const(info.min, e.type, e.shape), r)
    return c.select(c.compare(f, hi, "GE"), c.const(info.max, e.type, e.shape), r)


@register_lowering("optimization_barrier")
def _optimization_barrier(c: Ctx, e: Expr, *xs: Val):
    if e.attrs.get("call"):
        return c.call_identity(xs)
    return c.op("stablehlo.optimization_barrier", list(xs), [(s, t) for s, t, _ in e.outs])


@register_lowering("bitcast")
def _bitcast(c: Ctx, e: Expr, x: Val):
    if x.type.is_complex != e.type.is_complex:  # XLA has no complex<->real bitcast
        return _bitcast_complex(c, e, x)
    return c.op("stablehlo.bitcast_convert", [x], out_of(e))


def _bitcast_complex(c: Ctx, e: Expr, x: Val):
    """c64 <-> a 64-bit type, through the two 32-bit halves (real part in the low bits,
    as in memory)."""
    u32, u64, f32 = T.Type("u", 32), T.Type("u", 64), T.F32
    sh = x.shape

    def bits(v, t):
        return c.op("stablehlo.bitcast_convert", [v], (sh, t))
    if x.type.is_complex:
        re, im = (c.convert(bits(c.op(f"stablehlo.{p}", [x], (sh, f32)), u32), u64)
                  for p in ("real", "imag"))
        hi = c.binop("stablehlo.shift_left", im, c.const(32, u64, sh))
        r = c.binop("stablehlo.or", hi, re)
        return r if e.type == u64 else bits(r, e.type)
    u = x if x.type == u64 else bits(x, u64)
    lo = c.convert(u, u32)
    hi = c.convert(c.binop("stablehlo.shift_right_logical", u, c.const(32, u64, sh)), u32)
    return c.op("stablehlo.complex", [bits(lo, f32), bits(hi, f32)], out_of(e))


# ----------------------------------------------------------------------------------------
# Creation, constants, structure
# ----------------------------------------------------------------------------------------
@register_lowering("constant", "tensor")
def _constant(c: Ctx, e: Expr):
    return c.const(e.attrs["value"], e.type, e.shape)


@register_lowering("iota")
def _iota(c: Ctx, e: Expr):
    dim = {"iota_dimension": f"{e.attrs['axis']} : i64"}
    if e.type.is_pred:  # stablehlo.iota has no i1: count in s32, then != 0 (as NumPy's astype)
        return c.convert(c.op("stablehlo.iota", [], (e.shape, T.S32), dim), e.type)
    return c.op("stablehlo.iota", [], out_of(e), dim)


@register_lowering("eye")
def _eye(c: Ctx, e: Expr):
    n = len(e.shape)
    rows = c.op("stablehlo.iota", [], (e.shape, T.S32), {"iota_dimension": f"{n - 2} : i64"})
    cols = c.op("stablehlo.iota", [], (e.shape, T.S32), {"iota_dimension": f"{n - 1} : i64"})
    return c.convert(c.compare(rows, cols, "EQ"), e.type)


@register_lowering("elem")
def _elem(c: Ctx, e: Expr, multi):
    return multi[e.attrs["index"]]


@register_lowering("reshape")
def _reshape(c: Ctx, e: Expr, x: Val):
    return c.reshape(x, e.shape)


@register_lowering("broadcast")
def _broadcast(c: Ctx, e: Expr, x: Val):
    return c.bcast(x, e.shape, e.attrs["axes"])


@register_lowering("transpose")
def _transpose(c: Ctx, e: Expr, x: Val):
    return c.op("stablehlo.transpose", [x], out_of(e), {"permutation": i64_array(e.attrs["axes"])})


@register_lowering("reverse")
def _reverse(c: Ctx, e: Expr, x: Val):
    return c.op("stablehlo.reverse", [x], out_of(e), {"dimensions": i64_array(e.attrs["axes"])})


@register_lowering("pad")
def _pad(c: Ctx, e: Expr, x: Val, v: Val):
    cfg = e.attrs["config"]
    return c.op("stablehlo.pad", [x, v], out_of(e), {
        "edge_padding_high": i64_array([h for _, h, _ in cfg]),
        "edge_padding_low": i64_array([lo for lo, _, _ in cfg]),
        "interior_padding": i64_array([i for _, _, i in cfg])})


def _static_slice(c, x, starts, lengths, strides, out):
    return c.op("stablehlo.slice", [x], out, {
        "start_indices": i64_array(starts),
        "limit_indices": i64_array([s + n for s, n in zip(starts, lengths)]),
        "strides": i64_array(strides)})


@register_lowering("slice")
def _slice(c: Ctx, e: Expr, x: Val):
    a = e.attrs
    return _static_slice(c, x, a["start_indices"], a["lengths"], a["strides"], out_of(e))


@register_lowering("dynamic_slice")
def _dynamic_slice(c: Ctx, e: Expr, x: Val, starts):
    lengths, strides = e.attrs["lengths"], e.attrs["strides"]
    r = c.op("stablehlo.dynamic_slice", [x, *starts], (tuple(lengths), x.type),
             {"slice_sizes": i64_array(lengths)})
    if any(s != 1 for s in strides):
        r = _static_slice(c, r, [0] * len(lengths), lengths, strides, out_of(e))
    return r


@register_lowering("put_slice")
def _put_slice(c: Ctx, e: Expr, x: Val, starts, update: Val):
    return c.op("stablehlo.dynamic_update_slice",
                [c.convert(x, e.type), c.convert(update, e.type), *starts], out_of(e))


@register_lowering("concatenate")
def _concatenate(c: Ctx, e: Expr, tensors):
    return c.op("stablehlo.concatenate", [c.convert(t, e.type) for t in tensors], out_of(e),
                {"dimension": f"{e.attrs['axis']} : i64"})


# ----------------------------------------------------------------------------------------
# Reductions, dot, windows
# ----------------------------------------------------------------------------------------
_REDUCERS = {"sum": ("stablehlo.add", lambda t: 0), "product": ("stablehlo.multiply", lambda t: 1),
             "reduce_max": ("stablehlo.maximum", T.min_value),
             "reduce_min": ("stablehlo.minimum", T.max_value),
             "all": ("stablehlo.and", lambda t: True), "any": ("stablehlo.or", lambda t: False)}


def reducer_region(c: Ctx, op_name: str, t: T.Type) -> str:
    return c.scalar_region(t, 1, lambda sub, lhs, rhs: [sub.binop(op_name, lhs[0], rhs[0])])


@register_lowering(*_REDUCERS)
def _reduce(c: Ctx, e: Expr, x: Val):
    name, init = _REDUCERS[e.op]
    axes = e.attrs["axes"]
    x = c.convert(x, e.type)
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    r = c.op("stablehlo.reduce", [x, c.const(init(e.type), e.type)], (shape, e.type),
             {"dimensions": i64_array(axes)}, [reducer_region(c, name, e.type)])
    return c.reshape(r, e.shape)


@register_lowering("argmax", "argmin")
def _arg_reduce(c: Ctx, e: Expr, x: Val):
    axis, high = e.attrs["axis"], e.attrs["tie_break"] == "high"
    better = "GT" if e.op == "argmax" else "LT"
    vt, it = x.type, e.type
    idx = c.op("stablehlo.iota", [], (x.shape, it), {"iota_dimension": f"{axis} : i64"})
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)

    def body(s: Ctx, lhs, rhs):
        (av, ai), (bv, bi) = lhs, rhs
        idx_wins = s.compare(ai, bi, "GT" if high else "LT")
        if vt.is_inexact:
            an, bn = s.is_nan(av), s.is_nan(bv)
            strictly = s.binop("stablehlo.and", s.compare(av, bv, better),
                               s.op("stablehlo.not", [bn], ((), I1)))
            a_only_nan = s.binop("stablehlo.and", an, s.op("stablehlo.not", [bn], ((), I1)))
            tie = s.binop("stablehlo.or", s.compare(av, bv, "EQ"), s.binop("stablehlo.and", an, bn))
            pick = s.binop("stablehlo.or", s.binop("stablehlo.or", a_only_nan, strictly),
                           s.binop("stablehlo.and", tie, idx_wins))
        else:
            pick = s.binop("stablehlo.or", s.compare(av, bv, better),
                           s.binop("stablehlo.and", s.compare(av, bv, "EQ"), idx_wins))
        return [s.select(pick, av, bv), s.select(pick, ai, bi)]

    region = c.scalar_region((vt, it), 2, body)
    init_v = c.const(T.min_value(vt) if e.op == "argmax" else T.max_value(vt), vt)
    if vt.is_inexact and e.op == "argmin":
        init_v = c.const(np.inf, vt)
    init_i = c.const(0, it)
    _, r = c.op("stablehlo.reduce", [x, idx, init_v, init_i], [(shape, vt), (shape, it)],
                {"dimensions": i64_array([axis])}, [region])
    return c.reshape(r, e.shape)


@register_lowering("dot")
def _dot(c: Ctx, e: Expr, a: Val, b: Val):
    at = e.attrs
    a, b = c.convert(a, e.type), c.convert(b, e.type)
    fields = [("lhs_batching_dimensions", at["batch_a"]),
              ("rhs_batching_dimensions", at["batch_b"]),
              ("lhs_contracting_dimensions", at["contract_a"]),
              ("rhs_contracting_dimensions", at["contract_b"])]
    dn = ", ".join(f"{k} = [{', '.join(str(i) for i in v)}]" for k, v in fields if v)
    return c.op("stablehlo.dot_general", [a, b], out_of(e),
                {"dot_dimension_numbers": f"#stablehlo.dot<{dn}>"})


@register_lowering("window_sum", "window_max")
def _window(c: Ctx, e: Expr, x: Val):
    at = e.attrs
    if e.op == "window_sum":
        name, init = "stablehlo.add", 0
    else:
        name, init = "stablehlo.maximum", T.min_value(e.type)
    x = c.convert(x, e.type)
    return c.op("stablehlo.reduce_window", [x, c.const(init, e.type)], out_of(e), {
        "padding": dense_i64(at["padding"]) if at["padding"] else "dense<> : tensor<0x2xi64>",
        "window_dilations": i64_array(at["window_dilations"]),
        "window_dimensions": i64_array(at["window_dimensions"]),
        "window_strides": i64_array(at["strides"])}, [reducer_region(c, name, e.type)])


# ----------------------------------------------------------------------------------------
# Control flow
# ----------------------------------------------------------------------------------------
@register_lowering("cond")
def _cond(c: Ctx, e: Expr, *preds: Val):
    # a branch with side effects runs after the ones before the cond (the token goes in)
    token = c.effect_token() if any(has_effects(fn) for fn in e.fns) else None
    regions = [c.fn_region(fn, [], token=token) for fn in e.fns]
    outs = [(s, t) for s, t, _ in e.outs] + ([TOKEN] if token is not None else [])
    if len(preds) == 1:
        res = c.op("stablehlo.if", [preds[0]], outs, None, regions)
    else:  # several clauses: one case on the index of the first predicate that holds
        index = c.const(len(preds), T.S32)
        for i in reversed(range(len(preds))):
            index = c.select(preds[i], c.const(i, T.S32), index)
        res = c.op("stablehlo.case", [index], outs, None, regions)
    if token is not None:
        c.token = res[-1]
        res = res[:-1]
    return res


@register_lowering("call")
def _call(c: Ctx, e: Expr, *args: Val):
    """A private function per called sub-function (``nxpy.defn.call``), emitted once and
    called with ``func.call`` at each site; its captures are passed as extra arguments (a
    body with side effects never gets here: ``call`` traces it in place)."""
    (fn,) = e.fns
    caps = [c.lookup(x) for x in fn.captures]
    calls = c.info["calls"]
    got = calls.get(id(fn))
    if got is None:
        name = base = e.attrs.get("name") or "call"
        taken = {n for _, n in calls.values()}
        k = 0
        while name in taken or name == "main":
            k += 1
            name = f"{base}_{k}"
        calls[id(fn)] = got = (fn, name)  # keeps ``fn`` alive while its id names it
        b = Builder()
        params = [Val(f"%arg{i}", v.shape, v.type) for i, v in enumerate(list(args) + caps)]
        sub = Ctx(b, {x.id: p for x, p in zip(fn.captures, params[len(args):])}, info=c.info)
        outs = sub.lower_body(fn, params[:len(args)])
        sig = ", ".join(f"{p.name}: {p.ty}" for p in params)
        tys = ", ".join(v.ty for v in outs)
        c.info["function_texts"].append(
            f"  func.func private @{name}({sig}) -> ({tys}) {{\n{b.text()}\n    return "
            f"{', '.join(v.name for v in outs)} : {tys}\n  }}")
    return c.op("func.call", list(args) + caps, [(s, t) for s, t, _ in e.outs],
                {"callee": f"@{got[1]}"})


@register_lowering("while")
def _while(c: Ctx, e: Expr, init):
    c_fn, b_fn = e.fns
    # captures of both sub-functions ride along as loop-carried values
    caps = list({x.id: x for x in c_fn.captures + b_fn.captures}.values())
    cap_vals = [c.lookup(x) for x in caps]
    state_types = [(v.shape, v.type) for v in init]
    cap_types = [(v.shape, v.type) for v in cap_vals]
    n, m = len(init), len(caps)
    # side effects in the loop: a token rides along, so each iteration's follow the last's
    tok = [c.effect_token()] if has_effects(c_fn) or has_effects(b_fn) else []

    def bind_caps(fn):
        def build(cb, args):
            sub = Ctx(cb, {x.id: a for x, a in zip(caps, args[n:n + m])}, c)
            sub.token = args[-1] if tok else None
            outs = sub.lower_body(fn, args[:n])
            if fn is not b_fn:
                return outs
            return outs + list(args[n:n + m]) + ([sub.token] if tok else [])
        return build

    types = state_types + cap_types + [TOKEN] * len(tok)
    regions = [c.b.region(types, bind_caps(fn)) for fn in (c_fn, b_fn)]
    res = c.op("stablehlo.while", list(init) + cap_vals + tok, types, None, regions)
    if tok:
        c.token = res[-1]
    return res[:n]


# ----------------------------------------------------------------------------------------
# Modules
# ----------------------------------------------------------------------------------------
def donation_aliases(graph: Fn, in_shardings=None, out_shardings=None) -> dict:
    """``{parameter: output}`` for the donated parameters: each goes to the first output
    not yet taken of the same shape and type (and sharding), as JAX pairs them. A donated
    parameter without one gets a warning (its memory cannot be reused; it is still given
    up)."""
    taken, alias, unusable = set(), {}, []
    for i in graph.donated:
        p = graph.params[i]
        for j, o in enumerate(graph.outputs):
            if (j not in taken and o.shape == p.shape and o.type == p.type
                    and (in_shardings is None
                         or in_shardings[i] == out_shardings[j])):
                alias[i] = j
                taken.add(j)
                break
        else:
            unusable.append(f"{p.type}{list(p.shape)}")
    if unusable:
        warnings.warn(f"{graph.where or 'a function'}: some donated arguments could not be "
                      f"reused, no result has their shape "
                      f"and type{' and sharding' if in_shardings is not None else ''}: "
                      f"{', '.join(unusable)}", UserWarning, stacklevel=2)
    return alias


def lower_module(graph: Fn, *, name: str = "nxpy", num_partitions: int = 1,
                 arg_attrs=None, result_attrs=None, preamble: str = "", info=None,
                 in_shardings=None, out_shardings=None, platform=None,
                 custom_calls: bool = True, stable_sort: bool = True,
                 compiler: str | None = None) -> str:
    """The whole module for ``graph`` as ``main``, lowered for ``platform`` (``cpu``,
    ``cuda``, ``rocm``, ``tpu``; default :func:`default_platform`); ``arg_attrs``/
    ``result_attrs`` are optional per-position attribute dicts (shardings). Donated
    parameters are aliased to results (``tf.aliasing_output``, as JAX emits it). A module
    calling host callbacks is a :class:`nxpy.pjrt.CallbackModule`: the text holds its
    callbacks. With ``custom_calls=False`` (for ``compiler``, a name for errors) the module
    calls no ``stablehlo.custom_call``: ops with a portable form (the linear-algebra
    solvers) lower it, and any other custom call (host callbacks) is a
    :class:`LoweringError` naming the op (``nxpy.extend.lower_stablehlo``). With
    ``stable_sort=False`` sorts and ``top_k`` take a form that needs no stable sort
    (:attr:`Ctx.stable_sort`)."""
    platform = check_platform(platform)
    if graph.donated:
        arg_attrs = [dict(a) for a in arg_attrs] if arg_attrs else \
            [{} for _ in graph.params]
        for i, j in donation_aliases(graph, in_shardings, out_shardings).items():
            arg_attrs[i]["tf.aliasing_output"] = f"{j} : i32"
    b = Builder()
    # one list for the whole module (sub-contexts share it, copies of ``info`` too)
    info = {**(info or {}), "host_callbacks": [], "functions": {}, "function_texts": [],
            "calls": {},
            "platform": platform,
            "custom_calls": bool(custom_calls), "stable_sort": bool(stable_sort),
            "compiler": compiler}
    ctx = Ctx(b, {}, info=info)
    params = [Val(f"%arg{i}", p.shape, p.type) for i, p in enumerate(graph.params)]
    outs = ctx.lower_body(graph, params)

    def attrs(d):
        return " {" + ", ".join(f"{k} = {v}" for k, v in d.items()) + "}" if d else ""

    sig = ", ".join(f"{p.name}: {p.ty}{attrs(arg_attrs[i] if arg_attrs else None)}"
                    for i, p in enumerate(params))
    res = ", ".join(f"{v.ty}{attrs(result_attrs[i] if result_attrs else None)}"
                    for i, v in enumerate(outs))
    ret = ("    return " + ", ".join(v.name for v in outs) + " : " + ", ".join(v.ty for v in outs)
           if outs else "    return")
    head = (f"module @{name} attributes {{mhlo.num_partitions = {num_partitions} : i32, "
            f"mhlo.num_replicas = 1 : i32}} {{")
    body = b.text()
    text = "\n".join(x for x in [head, preamble, f"  func.func public @main({sig}) -> ({res}) {{",
                                 body, ret, "  }", *info["function_texts"], "}"] if x)
    return pjrt.module_text(text, info["host_callbacks"])


del _op
