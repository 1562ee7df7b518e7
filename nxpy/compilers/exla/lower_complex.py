"""EXLA lowerings of the complex family: ``stablehlo.real``, ``stablehlo.imag``,
``stablehlo.complex`` and ``stablehlo.fft`` (the forms JAX emits; see
``docs/ops_complex.md``).

``stablehlo.fft`` transforms the trailing ``len(fft_length)`` dims of an operand of exactly
those sizes (``IRFFT``: ``n // 2 + 1`` entries last), so a transform along another axis is
transposed there and back (as JAX does), and ``length`` pads (with zeros) or slices
first. ``rfft``/``irfft`` lower to ``RFFT``/``IRFFT``. ``eps`` is ignored, as Nx's EXLA
ignores it.
"""
from __future__ import annotations

from ... import types as T
from ...defn.expr import Expr
from ...layout import NamedSharding
from .lowering import Ctx, out_of, register_lowering
from .mlir import Val, i64_array
from .sharded import manual_region

__all__ = []


@register_lowering("real", "imag")
def _real_imag(c: Ctx, e: Expr, x: Val):
    return c.op(f"stablehlo.{e.op}", [x], out_of(e))


@register_lowering("conjugate")
def _conjugate(c: Ctx, e: Expr, x: Val):
    # StableHLO has no conjugate: complex(real(x), -imag(x)), as JAX emits it
    x = c.convert(x, e.type)
    part = (x.shape, T.Type("f", e.type.bits // 2))
    re = c.op("stablehlo.real", [x], part)
    im = c.op("stablehlo.negate", [c.op("stablehlo.imag", [x], part)], part)
    return c.op("stablehlo.complex", [re, im], out_of(e))


@register_lowering("complex")
def _complex(c: Ctx, e: Expr, re: Val, im: Val):
    part = T.Type("f", e.type.bits // 2)
    re, im = (c.bcast(c.convert(v, part), e.shape) for v in (re, im))
    return c.op("stablehlo.complex", [re, im], out_of(e))


def _resize(c: Ctx, x: Val, axis: int, n: int) -> Val:
    """``x`` truncated or zero-padded to size ``n`` along ``axis``."""
    m = x.shape[axis]
    if m == n:
        return x
    shape = list(x.shape)
    shape[axis] = n
    if m > n:
        return c.op("stablehlo.slice", [x], (tuple(shape), x.type), {
            "start_indices": i64_array([0] * len(shape)), "limit_indices": i64_array(shape),
            "strides": i64_array([1] * len(shape))})
    high = [0] * len(shape)
    high[axis] = n - m
    zero = [0] * len(shape)
    return c.op("stablehlo.pad", [x, c.const(0, x.type)], (tuple(shape), x.type), {
        "edge_padding_high": i64_array(high), "edge_padding_low": i64_array(zero),
        "interior_padding": i64_array(zero)})


def _transpose(c: Ctx, x: Val, perm) -> Val:
    if list(perm) == list(range(len(perm))):
        return x
    shape = tuple(x.shape[p] for p in perm)
    return c.op("stablehlo.transpose", [x], (shape, x.type), {"permutation": i64_array(perm)})


def _fft_result(shape, t: T.Type, fft_type: str, lengths):
    """The shape and type of ``stablehlo.fft`` on ``(shape, t)``: ``FFT``/``IFFT`` keep
    them; ``RFFT`` (real operand) ends in ``n // 2 + 1`` complex entries, ``IRFFT``
    (complex operand) in ``n`` real ones."""
    shape = list(shape)
    if fft_type == "RFFT":
        shape[-1] = lengths[-1] // 2 + 1
        t = T.Type("c", 2 * t.bits)
    elif fft_type == "IRFFT":
        shape[-1] = lengths[-1]
        t = T.to_real(t)
    return tuple(shape), t


def fft_op(c: Ctx, x: Val, fft_type: str, lengths) -> Val:
    """``stablehlo.fft`` of type ``fft_type`` over the trailing dims."""
    return c.op("stablehlo.fft", [x], _fft_result(x.shape, x.type, fft_type, lengths), {
        "fft_length": i64_array(lengths),
        "fft_type": f"#stablehlo<fft_type {fft_type}>"})


def _global_fft(c: Ctx, e: Expr, x: Val, fft_type: str, lengths, perm) -> Val:
    """In a sharded module (global view), the transform runs in a manual region whose
    operand is sharded as ``e``'s input along the other dims and replicated along the
    transformed ones: XLA:CPU's partitioner can otherwise hand the FFT an operand in a
    non-row-major layout (after an all-gather), which its FFT kernel rejects at run time
    (``fft_thunk``: ``IsMonotonicWithDim0Major``; plain JAX programs hit it too)."""
    in_sh = c.info["propagator"].of(e.args[0])
    k = len(lengths)
    sh = NamedSharding.from_axes(c.info["mesh"], tuple(in_sh[p] for p in perm[:len(perm) - k]))

    def body(s: Ctx, locals_):
        return [fft_op(s, locals_[0], fft_type, lengths)]
    out = _fft_result(x.shape, x.type, fft_type, lengths) + (sh,)
    return manual_region(c, [x], [sh], [out], body)[0]


def _lower_transform(c: Ctx, e: Expr, x: Val, axes, lengths, fft_type: str) -> Val:
    if 0 in e.shape or any(x.shape[a] == 0 for a in axes):  # zero padding, or no elements
        return c.const(0, e.type, e.shape)
    if fft_type == "IRFFT":  # a complex operand of the n // 2 + 1 entries the op reads
        x = c.convert(x, T.Type("c", 128 if e.type == T.F64 else 64))
        sizes = [lengths[-1] // 2 + 1]
    else:  # RFFT reads the real signal, FFT/IFFT the complex one
        x = c.convert(x, T.to_real(e.type) if fft_type == "RFFT" else e.type)
        sizes = lengths
    for a, n in zip(axes, sizes):
        x = _resize(c, x, a, n)
    rank = len(x.shape)
    perm = [d for d in range(rank) if d not in axes] + list(axes)
    x = _transpose(c, x, perm)
    if c.info.get("propagator") is not None and not c.info.get("manual"):
        y = _global_fft(c, e, x, fft_type, lengths, perm)
    else:
        y = fft_op(c, x, fft_type, lengths)
    # IRFFT gives f32 or f64: an f16 or bf16 result is rounded from it
    return c.convert(_transpose(c, y, [perm.index(d) for d in range(rank)]), e.type)


#: the transforms along one axis, and the ``fft_type`` each lowers to
_FFT_TYPES = {"fft": "FFT", "ifft": "IFFT", "rfft": "RFFT", "irfft": "IRFFT"}


@register_lowering(*_FFT_TYPES)
def _fft(c: Ctx, e: Expr, x: Val):
    a = e.attrs
    return _lower_transform(c, e, x, [a["axis"]], [a["length"]], _FFT_TYPES[e.op])


@register_lowering("fft2", "ifft2")
def _fft2(c: Ctx, e: Expr, x: Val):
    a = e.attrs
    return _lower_transform(c, e, x, list(a["axes"]), list(a["lengths"]),
                            "IFFT" if e.op == "ifft2" else "FFT")
