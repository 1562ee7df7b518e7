"""The NumPy backend's kernels for the base op set (elementwise, shapes, indexing,
reductions, dot, windows), and the helpers every kernel family uses (``_wrap``: a
result in the output template's type and shape)."""
from __future__ import annotations

import contextvars
import functools
import math

import numpy as np

from ... import types as T
from ...backend import Backend
from ...ops import binary_compute_type
from ...tensor import Tensor
from ...types import HALF_DTYPES, compute_dtype, convert
from . import libm, special, xla_f32

__all__ = ["BaseKernels"]


# ----------------------------------------------------------------------------------------
# Elementwise kernels (NumPy arrays in, NumPy arrays out; inputs already in compute type)
# ----------------------------------------------------------------------------------------
def _round_afz(x):
    """Rounds half away from zero. ``x - trunc(x)`` is exact, so unlike ``floor(|x| + 0.5)``
    this is right for 0.49999997 and for odd integers above 2**23 (f32)."""
    if x.dtype.kind in "iub":
        return x
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= x.dtype.type(0.5), t + np.sign(x), t)


def _sign(x):
    """XLA's sign; for complex ``x / |x|`` computed per part (so ``inf + 0j`` → ``nan + 0j``)
    and 0 at 0."""
    if x.dtype.kind != "c":
        return np.sign(x)
    a = libm.absolute(x)
    zero = a == 0
    safe = np.where(zero, 1, a)
    out = np.empty_like(x)
    out.real = np.where(zero, 0, x.real / safe)
    out.imag = np.where(zero, 0, x.imag / safe)
    return out


_erf_u = np.frompyfunc(math.erf, 1, 1)
_erfc_u = np.frompyfunc(math.erfc, 1, 1)


def _erf(x):
    return np.asarray(_erf_u(x.astype(np.float64)), dtype=np.float64)


def _erfc(x):
    return np.asarray(_erfc_u(x.astype(np.float64)), dtype=np.float64)


def _lgamma_one(v):
    try:
        return math.lgamma(v)
    except ValueError:             # a pole: 0 or a negative integer
        return math.inf


_lgamma_u = np.frompyfunc(_lgamma_one, 1, 1)


def _lgamma(x):
    """``log|Γ(x)|`` in f64 (Python's ``math.lgamma``), +inf at the poles and at ±inf."""
    y = np.asarray(_lgamma_u(x.astype(np.float64)), dtype=np.float64)
    return np.where(np.isinf(x), np.inf, y)


def _digamma(x):
    """``Γ'(x) / Γ(x)`` in f64: reflection below 1/2, the recurrence up to 8, then the
    asymptotic series (error below 1e-15); NaN at the poles and at -inf."""
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        pole = (x <= 0) & (np.floor(x) == x)
        reflect = x < 0.5
        z = np.where(reflect, 1 - x, x)
        shift = np.zeros_like(z)
        for _ in range(8):
            small = z < 8
            shift = shift - np.where(small, 1 / z, 0)
            z = np.where(small, z + 1, z)
        w = 1 / (z * z)
        series = w * (1 / 12 - w * (1 / 120 - w * (1 / 252 - w * (1 / 240 - w * (
            1 / 132 - w * (691 / 32760 - w / 12))))))
        psi = np.log(z) - 0.5 / z - series + shift
        psi = np.where(reflect, psi - np.pi / np.tan(np.pi * x), psi)
        psi = np.where(np.isposinf(x), np.inf, psi)
        return np.where(pole | np.isneginf(x), np.nan, psi)


def _erf_inv(x):
    """Inverse error function. f32 (and f16/bf16, computed in f32): XLA's own algorithm,
    bit for bit (so ``nxpy.random.normal`` gives JAX's bits here too); f64: Giles'
    approximation refined by Newton steps."""
    if x.dtype == np.float32:
        return xla_f32.erf_inv(x)
    y = x.astype(np.float64)
    w = -np.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    ws = w - 2.5
    wl = np.sqrt(np.where(small, 5.0, w)) - 3.0
    ps = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
          -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
    pl = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
          -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]
    a = np.zeros_like(y)
    b = np.zeros_like(y)
    for c in ps:
        a = a * ws + c
    for c in pl:
        b = b * wl + c
    r = np.where(small, a, b) * y
    with np.errstate(all="ignore"):
        for _ in range(2):
            err = _erf(r) - y
            r = r - err / (2.0 / math.sqrt(math.pi) * np.exp(-r * r))
    r = np.where(np.abs(y) == 1.0, np.sign(y) * np.inf, r)
    return np.where(np.abs(y) > 1.0, np.nan, r)


@libm.widened
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@libm.widened
def _rsqrt(x):
    return 1 / np.sqrt(x)


def _is_nan(x):
    return np.isnan(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)


def _is_inf(x):
    return np.isinf(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)


def _bitwise_not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


UNARY_NP = {
    "negate": np.negative, "abs": libm.absolute, "sign": _sign,
    "floor": lambda x: x if x.dtype.kind in "iub" else np.floor(x),
    "ceil": lambda x: x if x.dtype.kind in "iub" else np.ceil(x),
    "round": _round_afz, "exp": libm.exp, "expm1": libm.expm1, "log": libm.log,
    "log1p": libm.log1p, "sqrt": libm.sqrt, "rsqrt": _rsqrt, "cbrt": libm.cbrt, "sin": libm.sin,
    "cos": libm.cos, "tan": libm.tan, "asin": libm.arcsin, "acos": libm.arccos,
    "atan": libm.arctan, "sinh": libm.sinh, "cosh": libm.cosh, "tanh": libm.tanh,
    "asinh": libm.arcsinh, "acosh": libm.arccosh, "atanh": libm.arctanh, "sigmoid": _sigmoid,
    "erf": _erf, "erfc": _erfc, "erf_inv": _erf_inv,
    "lgamma": _lgamma, "digamma": _digamma, "bessel_i1e": special.bessel_i1e,
    "is_nan": _is_nan, "is_infinity": _is_inf, "bitwise_not": _bitwise_not,
    "logical_not": lambda x: x == 0,
}
# unary ops whose input is converted to the output type first (the others read the input as is)
_UNARY_READS_INPUT = {"abs", "is_nan", "is_infinity", "logical_not"}


def _int_div(a, b):
    """XLA integer division: truncates; x/0 = -1 (all ones); MIN/-1 = MIN."""
    zero = b == 0
    safe_b = np.where(zero, 1, b).astype(a.dtype)
    if a.dtype.kind == "i":
        overflow = (a == np.iinfo(a.dtype).min) & (b == -1)
        safe_b = np.where(overflow, 1, safe_b).astype(a.dtype)
        # a - fmod(a, b) is an exact multiple of b (and cannot overflow), so // truncates
        q = (a - np.fmod(a, safe_b)) // safe_b
        q = np.where(overflow, a, q)
        return np.where(zero, a.dtype.type(-1), q).astype(a.dtype)
    return np.where(zero, np.iinfo(a.dtype).max, a // safe_b).astype(a.dtype)


def _remainder(a, b):
    if a.dtype.kind in "iu":
        zero = b == 0
        safe_b = np.where(zero, 1, b)
        if a.dtype.kind == "i":
            safe_b = np.where((a == np.iinfo(a.dtype).min) & (b == -1), 1, safe_b)
        return np.where(zero, a, np.fmod(a, safe_b)).astype(a.dtype)
    return np.fmod(a, b)


def _int_pow(a, b):
    """Wrapping integer power by squaring; negative exponents as XLA (0 unless |a| == 1)."""
    base = a.copy()
    e = b.astype(np.int64) if b.dtype.kind == "i" else b.astype(np.uint64)
    neg = e < 0
    e = np.where(neg, 0, e)
    out = np.ones_like(a)
    with np.errstate(over="ignore"):
        while np.any(e > 0):
            odd = (e & 1) == 1
            out = np.where(odd, out * base, out)
            base = base * base
            e = e >> 1
    if a.dtype.kind == "i":
        neg_res = np.where(a == 1, 1, np.where(a == -1, np.where((b & 1) == 1, -1, 1), 0))
        out = np.where(neg, neg_res.astype(a.dtype), out)
    return out.astype(a.dtype)


def _pow(a, b):
    if a.dtype.kind in "iu":
        return _int_pow(a, b)
    return libm.power(a, b)


def _shift(a, b, left):
    bits = a.dtype.itemsize * 8
    if b.size and not any(b.strides):  # one shift for all (a broadcast scalar): no masks
        s = int(b.flat[0])
        if 0 <= s < bits:
            return (np.left_shift if left else np.right_shift)(a, a.dtype.type(s))
    bad = (b < 0) | (b >= bits) if b.dtype.kind == "i" else b >= bits
    sb = np.where(bad, 0, b).astype(a.dtype)
    if left:
        return np.where(bad, 0, np.left_shift(a, sb)).astype(a.dtype)
    fill = np.where(a < 0, a.dtype.type(-1), 0) if a.dtype.kind == "i" else 0
    return np.where(bad, fill, np.right_shift(a, sb)).astype(a.dtype)


def _bitwise(fb, fi):
    return lambda a, b: fb(a, b) if a.dtype == np.bool_ else fi(a, b)


BINARY_NP = {
    "add": np.add, "subtract": np.subtract, "multiply": libm.multiply,
    "divide": np.divide, "quotient": _int_div, "remainder": _remainder, "pow": _pow,
    "atan2": libm.arctan2, "min": np.minimum, "max": np.maximum, "next_after": np.nextafter,
    "zeta": special.zeta, "polygamma": lambda n, x: special.polygamma(n, x, _digamma),
    "bitwise_and": _bitwise(np.logical_and, np.bitwise_and),
    "bitwise_or": _bitwise(np.logical_or, np.bitwise_or),
    "bitwise_xor": _bitwise(np.logical_xor, np.bitwise_xor),
    "left_shift": lambda a, b: _shift(a, b, True), "right_shift": lambda a, b: _shift(a, b, False),
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": lambda a, b: (a != 0) & (b != 0), "logical_or": lambda a, b: (a != 0) | (b != 0),
    "logical_xor": lambda a, b: (a != 0) ^ (b != 0),
}

# ----------------------------------------------------------------------------------------
# The backend
# ----------------------------------------------------------------------------------------
_F32 = np.dtype(np.float32)

# NumPy's error state as a context variable, set and reset directly: the same as
# ``np.errstate(all="ignore")`` at a tenth of its cost (eager ops run it on every call)
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ
    with np.errstate(all="ignore"):
        _IGNORE = _EXTOBJ.get()
except (ImportError, AttributeError):  # pragma: no cover - another NumPy layout
    _EXTOBJ = None


def _quietly(f):
    """``f`` with floating-point warnings off (XLA computes inf/NaN silently)."""
    if _EXTOBJ is None:  # pragma: no cover
        def q(*arrays):
            with np.errstate(all="ignore"):
                return f(*arrays)
        return q
    setv, reset, ignore = _EXTOBJ.set, _EXTOBJ.reset, _IGNORE

    def quiet(*arrays):
        token = setv(ignore)
        try:
            return f(*arrays)
        finally:
            reset(token)
    return quiet


def _in_quiet_context(f):
    """``f`` run inside a context of its own whose NumPy error state ignores everything:
    as :func:`_quietly`, with no Python frame per call (the fast kernels' form). A
    context is entered by one thread at a time: a concurrent call raises RuntimeError,
    and the op takes its full path instead (``Backend.fast_kernel``)."""
    if _EXTOBJ is None:  # pragma: no cover
        return _quietly(f)
    ctx = contextvars.Context()
    ctx.run(_EXTOBJ.set, _IGNORE)
    return functools.partial(ctx.run, f)


class BaseKernels(Backend):
    """Eager ops on NumPy arrays, in the output type ``out`` says: the base op set."""

    def _wrap(self, out: Tensor, arr) -> Tensor:
        arr = np.asarray(arr)
        if arr.dtype != out.type.dtype:
            arr = convert(arr, out.type)
        if arr.shape != out.shape:
            arr = np.broadcast_to(arr, out.shape)
        return Tensor(arr, out.shape, out.type, out.names, self)

    def from_numpy(self, array, type, names=None) -> Tensor:
        arr = np.asarray(array)
        if arr.dtype != type.dtype:
            arr = convert(arr, type)
        return Tensor(arr, arr.shape, type, names, self)

    def to_numpy(self, t: Tensor) -> np.ndarray:
        return t.data

    def constant(self, out, value):
        return self._wrap(out, convert(np.asarray(value), out.type))

    # --- elementwise --------------------------------------------------------------------
    def _elementwise(self, out, f, *arrays):
        q = _QUIET.get(f) or _quietly(f)
        return self._wrap(out, q(*arrays))

    def fast_kernel(self, name, out, *args):
        """The op's NumPy function itself when the operands need no conversion (they are
        of the compute type already and no half-precision widening is needed) and it
        yields ``out``'s dtype and shape (tried once, on these operands)."""
        if getattr(type(self), name, None) is not getattr(BaseKernels, name, None):
            return None  # a subclass's own kernel: run it
        if name in BINARY_NP:
            a, b = args
            t = binary_compute_type(name, out, a, b)
            f = BINARY_NP[name]
            if a.type != t or b.type != t:
                return None
        elif name in UNARY_NP:
            (a,) = args
            f = UNARY_NP[name]
            if name not in _UNARY_READS_INPUT and a.type != out.type:
                return None
        else:
            return None
        datas = [x.data for x in args]
        if any(d.dtype != compute_dtype(d.dtype) for d in datas):
            return None
        f = libm.for_dtype(f, datas[0].dtype)
        q = _QUIET[f]
        try:
            r = q(*datas)
        except Exception:  # the op method reports it
            return None
        if not isinstance(r, np.ndarray) or r.dtype != out.type.dtype or r.shape != out.shape:
            if out.shape == () and np.asarray(r).dtype == out.type.dtype:
                return lambda *d: np.asarray(q(*d))  # NumPy gives scalars for 0-d arrays
            return None
        return _FAST_QUIET[f]

    def select(self, out, pred, on_true, on_false):
        a = convert(on_true.data, out.type)
        b = convert(on_false.data, out.type)
        return self._wrap(out, np.where(pred.data != 0, a, b))

    def clip(self, out, x, lo, hi):
        x, lo, hi = (convert(v.data, out.type) for v in (x, lo, hi))
        return self._wrap(out, np.minimum(np.maximum(x, lo), hi))

    def as_type(self, out, x):
        return self._wrap(out, convert(x.data, out.type))

    def optimization_barrier(self, outs, *xs, call=False):
        return [self._wrap(o, x.data) for o, x in zip(outs, xs)]

    def bitcast(self, out, x):
        # not np.ascontiguousarray: it turns 0-d arrays into 1-d ones
        data = x.data if x.data.flags.c_contiguous else x.data.copy(order="C")
        return self._wrap(out, data.view(out.type.dtype))

    # --- shapes -------------------------------------------------------------------------
    def reshape(self, out, x):
        return self._wrap(out, x.data.reshape(out.shape))

    def broadcast(self, out, x, axes):
        shape = [1] * len(out.shape)
        for d, a in zip(x.shape, axes):
            shape[a] = d
        return self._wrap(out, np.broadcast_to(x.data.reshape(shape), out.shape))

    def transpose(self, out, x, axes):
        return self._wrap(out, np.transpose(x.data, axes))

    def reverse(self, out, x, axes):
        return self._wrap(out, np.flip(x.data, axes))

    def pad(self, out, x, value, config):
        a = x.data
        lo_pos = [max(lo, 0) for lo, _, _ in config]
        inner = [d + max(d - 1, 0) * it for d, (_, _, it) in zip(a.shape, config)]
        big = [lo + n + max(hi, 0) for lo, n, (_, hi, _) in zip(lo_pos, inner, config)]
        res = np.full(big, value.data, dtype=out.type.dtype)
        res[tuple(slice(lo, lo + n, it + 1)
                  for lo, n, (_, _, it) in zip(lo_pos, inner, config))] = a
        crop = tuple(slice(-min(lo, 0), b - (-min(hi, 0))) for b, (lo, hi, _) in zip(big, config))
        return self._wrap(out, res[crop])

    def slice(self, out, x, start_indices, lengths, strides):
        idx = tuple(slice(s, s + n, st) for s, n, st in zip(start_indices, lengths, strides))
        return self._wrap(out, x.data[idx])

    def dynamic_slice(self, out, x, starts, lengths, strides):
        s = [min(max(int(t.data), 0), d - n) for t, d, n in zip(starts, x.shape, lengths)]
        return self.slice(out, x, s, lengths, strides)

    def put_slice(self, out, x, starts, update):
        s = [min(max(int(t.data), 0), d - u) for t, d, u in zip(starts, x.shape, update.shape)]
        res = convert(x.data, out.type).copy()
        res[tuple(slice(a, a + u) for a, u in zip(s, update.shape))] = convert(update.data,
                                                                               out.type)
        return self._wrap(out, res)

    def concatenate(self, out, tensors, axis):
        return self._wrap(out, np.concatenate([convert(t.data, out.type) for t in tensors], axis))

    # --- creation -----------------------------------------------------------------------
    def iota(self, out, axis):
        n = out.shape[axis]
        shape = [1] * len(out.shape)
        shape[axis] = n
        return self._wrap(out, np.arange(n).reshape(shape).astype(out.type.dtype))

    def eye(self, out):
        n, m = out.shape[-2:]
        return self._wrap(out, np.eye(n, m, dtype=out.type.dtype))

    # --- reductions ---------------------------------------------------------------------
    def _reduce(self, out, x, axes, keep_axes, f, **kw):
        a = convert(x.data, out.type)
        dt = compute_dtype(a.dtype)
        with np.errstate(all="ignore"):
            r = f(a.astype(dt), axis=tuple(axes), keepdims=keep_axes, **kw)
        return self._wrap(out, r)

    def sum(self, out, x, axes, keep_axes):
        return self._reduce(out, x, axes, keep_axes, np.sum)

    def product(self, out, x, axes, keep_axes):
        return self._reduce(out, x, axes, keep_axes, libm.prod)

    def reduce_max(self, out, x, axes, keep_axes):
        return self._reduce(out, x, axes, keep_axes, np.max, initial=T.min_value(out.type))

    def reduce_min(self, out, x, axes, keep_axes):
        return self._reduce(out, x, axes, keep_axes, np.min, initial=T.max_value(out.type))

    def all(self, out, x, axes, keep_axes):
        return self._wrap(out, np.all(x.data != 0, axis=tuple(axes), keepdims=keep_axes))

    def any(self, out, x, axes, keep_axes):
        return self._wrap(out, np.any(x.data != 0, axis=tuple(axes), keepdims=keep_axes))

    def _arg(self, out, x, axis, keep_axis, tie_break, f):
        a = x.data.astype(compute_dtype(x.data.dtype))
        if tie_break == "high":
            a = np.flip(a, axis)
        r = f(a, axis=axis, keepdims=keep_axis)
        if tie_break == "high":
            r = x.shape[axis] - 1 - r
        return self._wrap(out, r)

    def argmax(self, out, x, axis, keep_axis, tie_break):
        return self._arg(out, x, axis, keep_axis, tie_break, np.argmax)

    def argmin(self, out, x, axis, keep_axis, tie_break):
        return self._arg(out, x, axis, keep_axis, tie_break, np.argmin)

    # --- dot and windows ----------------------------------------------------------------
    def dot(self, out, a, b, contract_a, batch_a, contract_b, batch_b):
        letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        sa = [None] * a.rank
        sb = [None] * b.rank
        for i, j in zip(batch_a, batch_b):
            sa[i] = sb[j] = next(letters)
        for i, j in zip(contract_a, contract_b):
            sa[i] = sb[j] = next(letters)
        for i in range(a.rank):
            sa[i] = sa[i] or next(letters)
        for j in range(b.rank):
            sb[j] = sb[j] or next(letters)
        free_a = [sa[i] for i in range(a.rank) if i not in contract_a and i not in batch_a]
        free_b = [sb[j] for j in range(b.rank) if j not in contract_b and j not in batch_b]
        res = "".join([sa[i] for i in batch_a] + free_a + free_b)
        dt = compute_dtype(out.type.dtype)
        x, y = convert(a.data, out.type).astype(dt), convert(b.data, out.type).astype(dt)
        with np.errstate(all="ignore"):
            r = np.einsum(f"{''.join(sa)},{''.join(sb)}->{res}", x, y)
        return self._wrap(out, r)

    def _window(self, out, x, window_dimensions, strides, padding, window_dilations, init, f):
        if 0 in out.shape:
            return self._wrap(out, np.zeros(out.shape, out.type.dtype))
        a = convert(x.data, out.type)
        a = a.astype(compute_dtype(a.dtype))
        if any(lo or hi for lo, hi in padding):
            a = np.pad(a, padding, constant_values=init)
        eff = [(w - 1) * r + 1 for w, r in zip(window_dimensions, window_dilations)]
        v = np.lib.stride_tricks.sliding_window_view(a, eff)
        n = a.ndim
        v = v[(slice(None, None),) * n + tuple(slice(None, None, r) for r in window_dilations)]
        v = v[tuple(slice(None, None, s) for s in strides)]
        with np.errstate(all="ignore"):
            return self._wrap(out, f(v, axis=tuple(range(n, 2 * n))))

    def window_sum(self, out, x, window_dimensions, strides, padding, window_dilations):
        return self._window(out, x, window_dimensions, strides, padding, window_dilations, 0,
                            np.sum)

    def window_max(self, out, x, window_dimensions, strides, padding, window_dilations):
        return self._window(out, x, window_dimensions, strides, padding, window_dilations,
                            T.min_value(out.type), np.max)


def _unary_method(name):
    f = UNARY_NP[name]

    def method(self, out, x):
        a = x.data
        if name not in _UNARY_READS_INPUT:
            a = convert(a, out.type)
            a = a.astype(compute_dtype(a.dtype), copy=False)
        elif a.dtype in HALF_DTYPES:
            a = a.astype(_F32)
        return self._elementwise(out, f, a)
    method.__name__ = name
    return method


def _binary_method(name):
    f = BINARY_NP[name]

    def method(self, out, a, b):
        t = binary_compute_type(name, out, a, b)
        x, y = convert(a.data, t), convert(b.data, t)
        dt = compute_dtype(x.dtype)
        return self._elementwise(out, f, x.astype(dt, copy=False), y.astype(dt, copy=False))
    method.__name__ = name
    return method


_QUIET = {f: _quietly(f) for g in list(UNARY_NP.values()) + list(BINARY_NP.values())
          for f in (g, getattr(g, "raw", g))}
_FAST_QUIET = {f: _in_quiet_context(f) for f in _QUIET}
for _n in UNARY_NP:
    setattr(BaseKernels, _n, _unary_method(_n))
for _n in BINARY_NP:
    setattr(BaseKernels, _n, _binary_method(_n))
del _n


def _next_after_bits(x, y):
    """``nextafter`` on arrays of one float dtype by their bits (NumPy has none for bf16,
    and f16 must step on its own grid, not f32's)."""
    u = np.dtype(f"u{x.dtype.itemsize}")
    xb, yb = x.view(u), y.view(u)
    sign = u.type(1) << u.type(8 * x.dtype.itemsize - 1)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    away = (yf > xf) == (xf > 0)
    step = np.where(away, xb + u.type(1), xb - u.type(1))
    tiny = (yb & sign) | u.type(1)
    out = np.where(xf == 0, tiny, step)
    out = np.where(xf == yf, yb, out)
    nan = np.array(np.nan, x.dtype).view(u)
    return np.where(np.isnan(xf) | np.isnan(yf), nan, out).astype(u).view(x.dtype)


def _next_after_method(self, out, a, b):
    t = out.type
    x, y = convert(a.data, t), convert(b.data, t)
    if t.bits == 16:
        return self._wrap(out, _next_after_bits(x, y))
    return self._elementwise(out, np.nextafter, x, y)


BaseKernels.next_after = _next_after_method
