"""Importer rules of the complex family: ``stablehlo.real``, ``stablehlo.imag``,
``stablehlo.complex`` and ``stablehlo.fft`` (all four ``fft_type`` values: ``FFT`` and
``IFFT`` become ``nx.fft``/``nx.fft2``/``nx.ifft``/``nx.ifft2`` over the trailing dims,
``RFFT`` and ``IRFFT`` -- what ``jnp.fft.rfft``/``irfft`` emit -- become compositions of
them), and the custom form JAX prints for ``stablehlo.fft``
(``stablehlo.fft %x, type = FFT, length = [8]``).

Transforms are rebuilt with ``eps=0``: the imported program computes what XLA computes,
without the NumPy backend's clean-up of tiny parts.

>>> import nxpy as nx
>>> from nxpy.stablehlo import load
>>> prog = load('''
... func.func @main(%x: tensor<4xcomplex<f32>>) -> tensor<4xf32> {
...   %0 = stablehlo.fft %x, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
...   %1 = stablehlo.real %0 : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
...   return %1 : tensor<4xf32>
... }''')
>>> prog(nx.tensor([1, 1, 0, 0], type="c64")).tolist()
[2.0, 1.0, 0.0, 1.0]
"""
from __future__ import annotations

from .. import ops as nx
from .assembly import FormError, i64_array, ints, register_form
from .rules import _fail, constant, register_op, rtype
from .syntax import EnumAttr, Word

__all__ = []

_FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


@register_op("stablehlo.real")
def _real(scope, op, x):
    return nx.real(x)


@register_op("stablehlo.imag")
def _imag(scope, op, x):
    return nx.imag(x)


@register_op("stablehlo.complex")
def _complex(scope, op, re, im):
    return nx.complex(re, im)


@register_form("stablehlo.fft")
def _fft_form(form):
    """``stablehlo.fft %x, type = FFT, length = [8]`` (the form JAX prints)."""
    kind = form.keyword("type")
    if len(kind) != 1 or not isinstance(kind[0], Word) or str(kind[0]) not in _FFT_TYPES:
        raise FormError(f"stablehlo.fft: expected type = one of {', '.join(_FFT_TYPES)}")
    attrs = {"fft_type": EnumAttr(kind[0], "stablehlo", "fft_type"),
             "fft_length": i64_array(ints(form.keyword("length"))), **form.attr_dict()}
    operands = form.uses()
    ot, rt = form.types(len(operands))
    return dict(operands=operands, attributes=attrs, regions=[], operand_types=ot,
                result_types=rt)


def _complex_transform(x, k, inverse):
    """The ``k``-D transform (``k`` <= 3) over the trailing dims of complex ``x``."""
    one, two = (nx.ifft, nx.ifft2) if inverse else (nx.fft, nx.fft2)
    if k == 1:
        return one(x, eps=0)
    if k == 3:
        x = one(x, axis=-3, eps=0)
    return two(x, eps=0)


def _irfft(x, n):
    """Nx's ``irfft`` along the last axis: the spectrum completed by Hermitian symmetry
    (its first ``n // 2 + 1`` entries, conjugated and mirrored), inverted, real part."""
    m = n // 2 + 1
    rank = x.rank
    have = x.shape[-1]
    if have > m:
        x = nx.slice(x, [0] * rank, x.shape[:-1] + (m,))
    elif have < m:
        x = nx.pad(x, 0, [(0, 0, 0)] * (rank - 1) + [(0, m - have, 0)])
    parts = [x]
    if n - m > 0:
        start = [0] * (rank - 1) + [1]
        mirror = nx.slice(x, start, x.shape[:-1] + (n - m,))
        parts.append(nx.reverse(nx.conjugate(mirror), axes=[rank - 1]))
    full = nx.concatenate(parts, axis=rank - 1) if len(parts) > 1 else x
    return nx.real(nx.ifft(full, eps=0))


@register_op("stablehlo.fft")
def _fft(scope, op, x):
    kind = str(op.attributes["fft_type"])
    lengths = [int(v) for v in op.attributes["fft_length"]]
    shape, t = rtype(op)
    k = len(lengths)
    if kind not in _FFT_TYPES:
        _fail(op, scope, f"unknown fft_type {kind}")
    if not 1 <= k <= 3 or k > x.rank:
        _fail(op, scope, f"an fft over {k} dims of a rank-{x.rank} operand", unsupported=True)
    if 0 in x.shape or 0 in shape:  # no elements, or transforms of zero padding
        return constant(scope, 0, t, shape)
    if kind in ("FFT", "IFFT"):
        return _complex_transform(x, k, kind == "IFFT")
    if kind == "RFFT":
        y = _complex_transform(nx.as_type(x, t), k, False)
        return nx.slice(y, [0] * y.rank, shape)
    # IRFFT: the leading dims are complex transforms, the last one is Hermitian
    if k > 1:
        x = nx.ifft(x, axis=-2, eps=0) if k == 2 else nx.ifft2(x, axes=[-3, -2], eps=0)
    return nx.as_type(_irfft(x, lengths[-1]), t)
