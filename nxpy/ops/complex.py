"""Complex numbers and discrete Fourier transforms: real, imag, conjugate, phase, complex,
fft, ifft, fft2, ifft2, rfft, irfft (Nx's ``Nx.real`` ... ``Nx.irfft``), with their
gradient rules.

Types follow Nx: ``real``/``imag``/``phase`` of ``c64`` are ``f32`` (``c128``: ``f64``);
on real inputs ``real`` is the value itself (integers become ``f32``), ``imag`` is zeros,
and ``conjugate`` and the transforms promote to complex (``f64`` → ``c128``, everything
else → ``c64``); ``irfft`` returns ``real``'s type of its input.

>>> import nxpy as nx
>>> z = nx.complex(nx.tensor([1.0, 2.0]), nx.tensor([3.0, -4.0]))
>>> str(z.type), nx.real(z).tolist(), nx.imag(z).tolist(), nx.conjugate(z).tolist()
('c64', [1.0, 2.0], [3.0, -4.0], [(1-3j), (2+4j)])
>>> nx.fft(nx.tensor([1, 1, 0, 0])).tolist()
[(2+0j), (1-1j), 0j, (1+1j)]
>>> nx.rfft(nx.tensor([1, 1, 0, 0])).tolist(), nx.irfft(nx.tensor([2, 1 - 1j, 0])).tolist()
([(2+0j), (1-1j), 0j], [1.0, 1.0, 0.0, 0.0])
"""
from __future__ import annotations

import numbers

from .. import shape as S, types as T
from ..backend import pick
from ..tensor import Tensor
from .core import (_axes_of, _binary_operands, _out, _scalar_like, as_type, dispatch,
                   primitive, register_grad_rule, to_tensor)
from .elementwise import atan2, negate
from .indexing import slice as _slice
from .shaping import broadcast, pad

__all__ = ["real", "imag", "conjugate", "phase", "complex", "fft", "ifft", "fft2", "ifft2",
           "rfft", "irfft", "to_complex_type", "to_real_type"]

primitive("complex", "real", "imag", "conjugate", "complex", props=("elementwise",))
primitive("complex", "fft", "ifft", "fft2", "ifft2", "rfft", "irfft", props=("along_axes",))

#: Nx's default ``:eps`` of the transforms
DEFAULT_EPS = 1.0e-10


def to_complex_type(t: T.Type) -> T.Type:
    """Nx.Type.to_complex: ``f64`` → ``c128``, complex types stay, everything else → ``c64``."""
    if t.is_complex:
        return t
    return T.Type("c", 128) if t == T.F64 else T.C64


def to_real_type(t: T.Type) -> T.Type:
    """Nx.Type.to_real: ``c64`` → ``f32``, ``c128`` → ``f64``, floats stay, the rest → ``f32``."""
    if t.is_complex:
        return T.Type("f", t.bits // 2)
    return t if t.is_float else T.F32


# ----------------------------------------------------------------------------------------
# Elementwise
# ----------------------------------------------------------------------------------------
def real(x) -> Tensor:
    """The real part of each element, as a float tensor (``c64`` → ``f32``, ``c128`` →
    ``f64``). A float tensor is returned as is; integers and pred become ``f32``.

    >>> import nxpy as nx
    >>> nx.real(nx.tensor([1 + 2j, 2 - 4j])).tolist(), str(nx.real(nx.tensor(1)).type)
    ([1.0, 2.0], 'f32')
    """
    x = to_tensor(x, "x")
    if x.type.is_complex:
        return dispatch("real", _out(x.shape, to_real_type(x.type), x.names), x)
    if x.type.is_float:
        return x
    return as_type(x, T.F32)


def imag(x) -> Tensor:
    """The imaginary part of each element, as a float tensor (``c64`` → ``f32``, ``c128`` →
    ``f64``). For a real tensor: zeros of its floating type (integers and pred: ``f32``).

    >>> import nxpy as nx
    >>> nx.imag(nx.tensor([1 + 2j, 2 - 4j])).tolist(), nx.imag(nx.tensor(1, type="bf16")).tolist()
    ([2.0, -4.0], 0.0)
    """
    x = to_tensor(x, "x")
    if x.type.is_complex:
        return dispatch("imag", _out(x.shape, to_real_type(x.type), x.names), x)
    zero = _scalar_like(0, T.to_floating(x.type), pick([x]))
    return broadcast(zero, x.shape, names=x.names) if x.shape != () else zero


def conjugate(x) -> Tensor:
    """The complex conjugate of each element. The result is always complex (Nx): a real
    tensor is promoted first (``f64`` → ``c128``, the others → ``c64``), so its imaginary
    parts become ``-0.0``.

    >>> import nxpy as nx
    >>> nx.conjugate(nx.tensor([1 + 2j, 2 - 4j])).tolist(), nx.conjugate(1).tolist()
    ([(1-2j), (2+4j)], (1-0j))
    """
    x = to_tensor(x, "x")
    return dispatch("conjugate", _out(x.shape, to_complex_type(x.type), x.names), x)


def phase(x) -> Tensor:
    """The phase angle of each element, ``atan2(imag(x), real(x))`` (Nx's definition; the
    type is ``real``'s).

    >>> import nxpy as nx
    >>> [round(v, 7) for v in nx.phase(nx.tensor([1 + 2j, -2 + 1j])).tolist()]
    [1.1071488, 2.6779451]
    """
    x = to_tensor(x, "x")
    return atan2(imag(x), real(x))


def complex(real, imag) -> Tensor:  # the op, as in Nx
    """``real + imag * i`` from two real tensors (they broadcast; Python numbers take the
    other side's type). The type is the complex type of the merged input type (``f64`` →
    ``c128``, the others → ``c64``). Complex inputs are an error.

    >>> import nxpy as nx
    >>> nx.complex(nx.tensor([1, 2]), nx.tensor([3, 4])).tolist()
    [(1+3j), (2+4j)]
    """
    for arg, v in (("real", real), ("imag", imag)):
        t = v.type if isinstance(v, Tensor) else to_tensor(v, arg).type
        if t.is_complex:
            raise TypeError(f"complex: expected {arg} to have a real (non-complex) type, got {t}")
    re, im = _binary_operands(real, imag, "complex", ("real", "imag"))
    shape = S.broadcast(re.shape, im.shape, op="complex")
    names = S.broadcast_names(shape, re, im, op="complex")
    t = to_complex_type(T.merge(re.type, im.type))
    return dispatch("complex", _out(shape, t, names), re, im)


# ----------------------------------------------------------------------------------------
# Fourier transforms
# ----------------------------------------------------------------------------------------
def _length(op, arg, value, n, power_of_two=True):
    """Nx's ``:length``: None → the axis size, ``"power_of_two"`` (where the op takes it) →
    the next power of two, or a positive integer."""
    if value is None:
        return n
    if power_of_two and isinstance(value, str) and value == "power_of_two":
        if n == 0:
            raise ValueError(f"{op}: {arg} 'power_of_two' needs a non-empty axis, the axis "
                             f"has size 0")
        return 1 << (n - 1).bit_length()
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0:
        return int(value)
    allowed = "a positive integer or 'power_of_two'" if power_of_two else "a positive integer"
    raise ValueError(f"{op}: expected {arg} to be {allowed}, got {value!r}")


def _eps(op, eps):
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0:
        raise TypeError(f"{op}: expected eps to be a non-negative number, got {eps!r}")
    return float(eps)


def _one_axis(name, x, axis, eps):
    """The checked operand, axis and ``eps`` of a transform along one axis."""
    x = to_tensor(x, "x")
    if x.rank == 0:
        raise ValueError(f"{name}: expected a tensor with rank > 0, got tensor with rank 0")
    axis = _axes_of(name, S.normalize_axis, axis, x.rank, x.names)
    return x, axis, _eps(name, eps)


def _dispatch1(name, x, axis, size, t, length, eps):
    """The transform ``name`` along ``axis``, whose result has ``size`` there and type ``t``."""
    shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
    return dispatch(name, _out(shape, t, x.names), x, length=length, axis=axis, eps=eps)


def _transform(name, x, length, axis, eps):
    x, axis, eps = _one_axis(name, x, axis, eps)
    length = _length(name, "length", length, x.shape[axis])
    return _dispatch1(name, x, axis, length, to_complex_type(x.type), length, eps)


def fft(x, length=None, axis=-1, eps=DEFAULT_EPS) -> Tensor:
    """The discrete Fourier transform of ``x`` along ``axis`` (default: the last),
    ``y[k] = sum_j x[j] exp(-2 pi i j k / n)``, in ``x``'s complex type.

    ``length`` (a positive integer, or ``"power_of_two"`` for the next power of two)
    pads the axis with zeros or truncates it first. ``eps`` is a threshold backends may
    use to clean results: the NumPy backend (as Nx's binary backend) computes in double
    precision and sets real and imaginary parts with magnitude ``<= eps`` to zero; EXLA
    ignores it, as Nx's EXLA does.

    >>> import nxpy as nx
    >>> nx.fft(nx.tensor([1, 1]), length=4).tolist()
    [(2+0j), (1-1j), 0j, (1+1j)]
    >>> nx.fft(nx.tensor([[1, 1, 1, 0, 1, 1], [1, 1, 1, 0, 1, 1]]), axis=0).shape
    (2, 6)
    """
    return _transform("fft", x, length, axis, eps)


def ifft(x, length=None, axis=-1, eps=DEFAULT_EPS) -> Tensor:
    """The inverse discrete Fourier transform along ``axis``, ``y[k] = (1/n) sum_j x[j]
    exp(2 pi i j k / n)``; options as :func:`fft`.

    >>> import nxpy as nx
    >>> nx.ifft(nx.tensor([2, 1 - 1j, 0, 1 + 1j])).tolist()
    [(1+0j), (1+0j), 0j, 0j]
    """
    return _transform("ifft", x, length, axis, eps)


def _transform2(name, x, lengths, axes, eps):
    x = to_tensor(x, "x")
    if x.rank < 2:
        raise ValueError(f"{name}: expected a tensor with rank > 1, got tensor with rank "
                         f"{x.rank}")
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise ValueError(f"{name}: expected axes to be a list with 2 axes, got {axes!r}")
    axes = _axes_of(name, S.normalize_axes, list(axes), x.rank, x.names)
    if lengths is None:
        lengths = [None, None]
    if not isinstance(lengths, (list, tuple)) or len(lengths) != 2:
        raise ValueError(f"{name}: expected lengths to be a list of 2 lengths (positive "
                         f"integers or 'power_of_two'), got {lengths!r}")
    lengths = tuple(_length(name, "lengths", v, x.shape[a]) for v, a in zip(lengths, axes))
    eps = _eps(name, eps)
    shape = list(x.shape)
    for a, n in zip(axes, lengths):
        shape[a] = n
    return dispatch(name, _out(shape, to_complex_type(x.type), x.names), x, lengths=lengths,
                    axes=tuple(axes), eps=eps)


def fft2(x, lengths=None, axes=(-2, -1), eps=DEFAULT_EPS) -> Tensor:
    """The 2-D discrete Fourier transform over ``axes`` (default: the last two): the
    transform along ``axes[1]``, then along ``axes[0]``. ``lengths`` pads or truncates
    each axis (a positive integer or ``"power_of_two"`` per axis); ``eps`` as :func:`fft`.

    >>> import nxpy as nx
    >>> nx.real(nx.fft2(nx.tensor([[1, 0, 1, 0], [1, 1, 1, 1]]))).tolist()
    [[6.0, 0.0, 2.0, 0.0], [-2.0, 0.0, 2.0, 0.0]]
    """
    return _transform2("fft2", x, lengths, axes, eps)


def ifft2(x, lengths=None, axes=(-2, -1), eps=DEFAULT_EPS) -> Tensor:
    """The inverse 2-D discrete Fourier transform over ``axes``; options as :func:`fft2`.

    >>> import nxpy as nx
    >>> nx.real(nx.ifft2(nx.tensor([[6, 0, 2, 0], [-2, 0, 2, 0]]))).tolist()
    [[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]
    """
    return _transform2("ifft2", x, lengths, axes, eps)


def rfft(x, length=None, axis=-1, eps=DEFAULT_EPS) -> Tensor:
    """The discrete Fourier transform of the real tensor ``x`` along ``axis``, keeping the
    ``length // 2 + 1`` non-redundant entries (those of non-negative frequency: the rest
    are their conjugates); Nx's ``Nx.rfft``. The type is ``x``'s complex type (``f64`` →
    ``c128``, the other real types → ``c64``); complex ``x`` is an error.

    ``length`` (a positive integer, or ``"power_of_two"``) pads the axis with zeros or
    truncates it first; ``eps`` as :func:`fft`.

    >>> import nxpy as nx
    >>> nx.rfft(nx.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])).tolist()
    [(5+0j), (1+0j), (-1+0j), (1+0j)]
    >>> nx.rfft(nx.tensor([1.0, 1.0]), length=5).shape
    (3,)
    """
    x = to_tensor(x, "x")
    if x.type.is_complex:
        raise TypeError(f"rfft: expected x to have a real (non-complex) type, got {x.type}")
    x, axis, eps = _one_axis("rfft", x, axis, eps)
    length = _length("rfft", "length", length, x.shape[axis])
    return _dispatch1("rfft", x, axis, length // 2 + 1, to_complex_type(x.type), length, eps)


def irfft(x, length=None, axis=-1, eps=DEFAULT_EPS) -> Tensor:
    """The inverse of :func:`rfft` (Nx's ``Nx.irfft``): the real signal of ``length``
    samples whose spectrum along ``axis`` starts with ``x`` and is completed by Hermitian
    symmetry. ``x`` is padded with zeros or truncated to ``length // 2 + 1`` entries
    first; the imaginary parts of the zero-frequency entry (and, for an even ``length``,
    of the last one) do not contribute.

    ``length`` is a positive integer; by default ``2 * (m - 1)`` for an axis of size ``m``
    (an even-length signal: give ``length`` to recover an odd one). The type is
    :func:`real`'s of ``x`` (``c64`` → ``f32``, ``c128`` → ``f64``, floats keep theirs,
    integers → ``f32``); ``eps`` as :func:`fft`.

    >>> import nxpy as nx
    >>> nx.irfft(nx.tensor([5.0, 1.0, -1.0, 1.0])).tolist()
    [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    >>> nx.irfft(nx.rfft(nx.tensor([1.0, 2.0, 3.0])), length=3).tolist()
    [1.0, 2.0, 3.0]
    """
    x, axis, eps = _one_axis("irfft", x, axis, eps)
    if length is None:
        m = x.shape[axis]
        if m < 2:
            raise ValueError(f"irfft: expected length to be given for an axis of size {m} "
                             f"(the default, 2 * (m - 1), is {2 * (m - 1)})")
        length = 2 * (m - 1)
    length = _length("irfft", "length", length, None, power_of_two=False)
    return _dispatch1("irfft", x, axis, length, to_real_type(x.type), length, eps)


# ----------------------------------------------------------------------------------------
# Gradient rules, with JAX's convention for complex values (rules transpose without
# conjugating: the cotangent of a real value read as complex is its real part)
# ----------------------------------------------------------------------------------------
def _zeros(like):
    return broadcast(_scalar_like(0, like.type, pick([like])), like.shape) if like.shape else \
        _scalar_like(0, like.type, pick([like]))


@register_grad_rule("real")
def _real_grad(ctx, e, xs, out, g):
    return [complex(g, _zeros(g))]


@register_grad_rule("imag")
def _imag_grad(ctx, e, xs, out, g):
    return [complex(_zeros(g), negate(g))]


@register_grad_rule("conjugate")
def _conjugate_grad(ctx, e, xs, out, g):
    (x,) = xs
    return [conjugate(g) if x.type.is_complex else real(g)]


@register_grad_rule("complex")
def _complex_grad(ctx, e, xs, out, g):
    return [real(g), negate(imag(g))]


def _fit_axis(c, axis, n):
    """``c`` padded with zeros or truncated to size ``n`` along ``axis``: the transpose of
    the transform's own padding or truncation."""
    m = c.shape[axis]
    if m == n:
        return c
    if m > n:
        lengths = list(c.shape)
        lengths[axis] = n
        return _slice(c, [0] * c.rank, lengths)
    cfg = [(0, 0, 0)] * c.rank
    cfg[axis] = (0, n - m, 0)
    return pad(c, 0, cfg)


@register_grad_rule("fft", "ifft")
def _fft_grad(ctx, e, xs, out, g):
    # the DFT matrix is symmetric, so the transform is its own transpose (JAX's rule);
    # the padding or truncation to ``length`` transposes to truncation or padding
    (x,) = xs
    a = e.attrs
    f = fft if e.op == "fft" else ifft
    ct = f(g, axis=a["axis"], eps=a["eps"])
    return [_fit_axis(ct, a["axis"], x.shape[a["axis"]])]


@register_grad_rule("fft2", "ifft2")
def _fft2_grad(ctx, e, xs, out, g):
    (x,) = xs
    a = e.attrs
    f = fft2 if e.op == "fft2" else ifft2
    ct = f(g, axes=list(a["axes"]), eps=a["eps"])
    for ax in a["axes"]:
        ct = _fit_axis(ct, ax, x.shape[ax])
    return [ct]


@register_grad_rule("rfft")
def _rfft_grad(ctx, e, xs, out, g):
    # rfft is the transform of the padded or truncated x, sliced to length // 2 + 1: its
    # transpose pads g back to length with zeros, transforms it, and undoes the padding
    # or truncation (the engine keeps the real part, x being real)
    (x,) = xs
    a = e.attrs
    ct = fft(_fit_axis(g, a["axis"], a["length"]), axis=a["axis"], eps=a["eps"])
    return [_fit_axis(ct, a["axis"], x.shape[a["axis"]])]


@register_grad_rule("irfft")
def _irfft_grad(ctx, e, xs, out, g):
    # irfft is real(ifft(h)) of the spectrum h = [y, conj(reverse(y[1:n - m + 1]))] of the
    # m = n // 2 + 1 entries y (x padded or truncated to m). Transposed: c = ifft(g), then
    # y's cotangent is c[:m] plus conj(reverse(c[m:])) placed at 1 .. n - m, which, g being
    # real (so c Hermitian), is c[1 : n - m + 1] again: entries 1 .. n - m count twice
    (x,) = xs
    a = e.attrs
    ax, n = a["axis"], a["length"]
    m = n // 2 + 1
    head = _fit_axis(ifft(g, axis=ax, eps=a["eps"]), ax, m)
    if n - m > 0:
        starts = [0] * head.rank
        starts[ax] = 1
        lengths = list(head.shape)
        lengths[ax] = n - m
        cfg = [(0, 0, 0)] * head.rank
        cfg[ax] = (1, m - 1 - (n - m), 0)
        head = head + pad(_slice(head, starts, lengths), 0, cfg)
    return [_fit_axis(head, ax, x.shape[ax])]
