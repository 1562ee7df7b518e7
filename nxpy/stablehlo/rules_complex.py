"""Importer rules of the complex family: ``stablehlo.real``, ``stablehlo.imag``,
``stablehlo.complex`` and ``stablehlo.fft`` (all four ``fft_type`` values: ``FFT`` and
``IFFT`` become ``nx.fft``/``nx.fft2``/``nx.ifft``/``nx.ifft2`` over the trailing dims,
``RFFT`` and ``IRFFT`` -- what ``jnp.fft.rfft``/``irfft`` emit -- ``nx.rfft``/``nx.irfft``
along the last dim, with the complex transforms over the dims before it for ``rfft2``,
``rfftn`` and their inverses), and the custom form JAX prints for ``stablehlo.fft``
(``stablehlo.fft %x, type = FFT, length = [8]``).

Transforms are rebuilt with ``eps=0``: the imported program computes what XLA computes,
without the NumPy backend's clean-up of tiny parts.

>>> import nxpy as nx
>>> from nxpy.stablehlo import load
>>> prog = load('''
... func.func @main(%x: tensor<4xcomplex<f32>>) -> tensor<4xf32> {
...   %0 = stablehlo.fft %x, type = FFT, length = [4]
...        : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
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


def _complex_transform(x, k, inverse, last=-1):
    """The ``k``-D transform (``k`` <= 3) over the trailing dims of complex ``x`` that end
    at ``last`` (-1: the last dim; -2: the dims before it)."""
    one, two = (nx.ifft, nx.ifft2) if inverse else (nx.fft, nx.fft2)
    if k == 1:
        return one(x, axis=last, eps=0)
    if k == 3:
        x = one(x, axis=last - 2, eps=0)
    return two(x, axes=[last - 1, last], eps=0)


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
    # RFFT and IRFFT: the real transform along the last dim, complex ones over the others
    # (in the order that keeps the operand of nx.rfft real, of nx.irfft Hermitian)
    if kind == "RFFT":
        y = nx.rfft(x, length=lengths[-1], eps=0)
        return _complex_transform(y, k - 1, False, last=-2) if k > 1 else y
    if k > 1:
        x = _complex_transform(x, k - 1, True, last=-2)
    return nx.irfft(x, length=lengths[-1], eps=0)
