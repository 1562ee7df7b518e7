"""Convolution (Nx's ``Nx.conv``), with every Nx option, and its gradient (JAX's
transpose rules for ``conv_general_dilated``).

The layouts are given as permutations, as in Nx: ``input_permutation`` lists the input's
``[batch, feature, spatial...]`` axes, ``kernel_permutation`` the kernel's
``[output feature, input feature, spatial...]`` axes and ``output_permutation`` where the
result's ``[batch, feature, spatial...]`` go (JAX's ``ConvDimensionNumbers`` are the same
three lists).

>>> import nxpy as nx
>>> nx.conv(nx.iota((1, 1, 3, 3)), nx.iota((4, 1, 1, 1)), strides=[1, 1])[0, 1].tolist()
[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_axes_of, _out, as_type, dispatch, primitive, register_batch_rule,
                   register_grad_rule, to_tensor)
from .shaping import reshape, reverse, transpose
from .windows import padding_config

__all__ = ["conv"]

primitive("conv", "conv")


def _spatial_ints(what, value, n):
    if S.as_int(value) is not None:
        value = [S.as_int(value)] * n
    try:
        out = S.integers(value, what)
    except TypeError:
        raise TypeError(f"conv: expected {what} to be a positive integer or a list of {n} "
                        f"positive integers, got {value!r}") from None
    if len(out) != n:
        raise ValueError(f"conv: expected {what} to have one entry per spatial dimension "
                         f"({n}), got {list(out)}")
    if builtins.any(v < 1 for v in out):
        raise ValueError(f"conv: expected {what} to be positive integers, got {list(out)}")
    return out


def _perm(what, perm, t):
    if perm is None:
        return tuple(range(t.rank))
    p = _axes_of("conv", S.normalize_axes, list(perm), t.rank, t.names, what=what)
    if len(p) != t.rank:
        raise ValueError(f"conv: expected {what} to list all {t.rank} axes of the shape "
                         f"{t.shape}, got {list(perm)}")
    return p


def _dilate(d, r):
    return 0 if d == 0 else (d - 1) * r + 1


def conv(tensor, kernel, strides=1, padding="valid", input_dilation=1, kernel_dilation=1,
         feature_group_size=1, batch_group_size=1, input_permutation=None,
         kernel_permutation=None, output_permutation=None) -> Tensor:
    """An n-D convolution (a cross-correlation: the kernel is not reversed, nor conjugated)
    of ``tensor`` ``[batch, in channels, spatial...]`` with ``kernel``
    ``[out channels, in channels / feature_group_size, spatial...]``, as Nx's ``conv``.

    ``padding`` is ``"valid"``, ``"same"`` (``kernel - 1`` in total per spatial dim, after
    dilations, the odd one high, as Nx) or ``(low, high)`` pairs per spatial dim (negative
    values crop). The result is a float (the merged type of both operands, made floating)
    of shape ``[batch / batch_group_size, out channels, spatial...]``, permuted by
    ``output_permutation``; its names come from the input's.

    >>> import nxpy as nx
    >>> out = nx.conv(nx.iota((1, 1, 3, 3)), nx.iota((4, 1, 2, 1)), strides=2, padding="same",
    ...               kernel_dilation=[2, 1])
    >>> out.shape, out[0, 1].tolist()
    ((1, 4, 2, 2), [[9.0, 15.0], [6.0, 10.0]])
    """
    x = to_tensor(tensor, "tensor")
    k = to_tensor(kernel, "kernel")
    if x.rank < 3:
        raise ValueError(f"conv: input shape in conv requires at least rank 3, shape {x.shape} "
                         f"has rank {x.rank}")
    if k.rank < 3:
        raise ValueError(f"conv: kernel shape in conv requires at least rank 3, shape "
                         f"{k.shape} has rank {k.rank}")
    if k.rank != x.rank:
        raise ValueError(f"conv: expected the kernel to have the input's rank {x.rank}, got "
                         f"shape {k.shape} for an input of shape {x.shape}")
    n = x.rank - 2
    ip = _perm("input_permutation", input_permutation, x)
    kp = _perm("kernel_permutation", kernel_permutation, k)
    op = _perm("output_permutation", output_permutation, x)
    strides = _spatial_ints("strides", strides, n)
    in_dil = _spatial_ints("input_dilation", input_dilation, n)
    k_dil = _spatial_ints("kernel_dilation", kernel_dilation, n)
    for what, g in (("feature_group_size", feature_group_size),
                    ("batch_group_size", batch_group_size)):
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 1:
            raise ValueError(f"conv: expected {what} to be a positive integer, got {g!r}")
    fg, bg = int(feature_group_size), int(batch_group_size)
    xs = [x.shape[i] for i in ip]
    ks = [k.shape[i] for i in kp]
    batch, in_ch, o_ch, k_in = xs[0], xs[1], ks[0], ks[1]
    if bg != 1 and fg != 1:
        raise ValueError(f"conv: either batch groups or feature groups must be 1, got "
                         f"batch_group_size={bg} and feature_group_size={fg}")
    if batch % bg:
        raise ValueError(f"conv: batch_group_size ({bg}) must evenly divide the input batch "
                         f"size ({batch})")
    if o_ch % fg:
        raise ValueError(f"conv: the kernel's output channels ({o_ch}) must be evenly "
                         f"divisible by feature_group_size ({fg}) (kernel shape {k.shape})")
    if o_ch % bg:
        raise ValueError(f"conv: the kernel's output channels ({o_ch}) must be evenly "
                         f"divisible by batch_group_size ({bg}) (kernel shape {k.shape})")
    if in_ch != k_in * fg:
        raise ValueError(f"conv: the input channels ({in_ch}) divided by feature_group_size "
                         f"({fg}) must match the kernel's input channels ({k_in}), for shapes "
                         f"{x.shape} and {k.shape}")
    spatial = [_dilate(d, r) for d, r in zip(xs[2:], in_dil)]
    window = [_dilate(d, r) for d, r in zip(ks[2:], k_dil)]
    pads = padding_config("conv", padding, spatial, window, allow_negative=True)
    out_sp = []
    for d, w, s, (lo, hi) in zip(spatial, window, strides, pads):
        span = d + lo + hi - w
        if span < 0 or d == 0 or w == 0:
            raise ValueError(f"conv: the kernel (spatial {tuple(ks[2:])}, dilated to "
                             f"{tuple(window)}) does not fit in the input (spatial "
                             f"{tuple(xs[2:])}, dilated and padded to "
                             f"{tuple(a + lo_ + hi_ for a, (lo_, hi_) in zip(spatial, pads))}): "
                             f"conv would result in an empty tensor")
        out_sp.append(span // s + 1)
    canon = [batch // bg, o_ch] + out_sp
    canon_names = [x.names[i] for i in ip]
    inv = sorted(range(x.rank), key=lambda i: op[i])
    shape = tuple(canon[i] for i in inv)
    names = tuple(canon_names[i] for i in inv)
    t = T.to_floating(T.merge(x.type, k.type))
    return dispatch("conv", _out(shape, t, names), x, k, strides=strides, padding=pads,
                    input_dilation=in_dil, kernel_dilation=k_dil, feature_group_size=fg,
                    batch_group_size=bg, input_permutation=ip, kernel_permutation=kp,
                    output_permutation=op)


# ----------------------------------------------------------------------------------------
# Gradient: JAX's _conv_general_dilated_transpose_lhs / _rhs, in Nx's permutation terms
# ----------------------------------------------------------------------------------------
def _swap(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _axis_out_of(src, size1, x):
    shape = list(x.shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(x, shape)


def _axis_into(src, dst, x):
    """JAX's _reshape_axis_into: axis ``src`` merged into axis ``dst`` (numbered after
    ``src`` is removed), as its major part."""
    perm = [i for i in range(x.rank) if i != src]
    perm.insert(dst, src)
    new_shape = [d for i, d in enumerate(x.shape) if i != src]
    new_shape[dst] *= x.shape[src]
    return reshape(transpose(x, perm), new_shape)


def _dilate_shape(shape, dil):
    return [_dilate(d, r) for d, r in zip(shape, dil)]


@register_grad_rule("conv")
def _grad_conv(ctx, e, xs, out, g):
    lhs, rhs = xs
    t = out.type
    if not t.is_inexact:
        return [None, None]
    at = e.attrs
    ls, rs, os = at["input_permutation"], at["kernel_permutation"], at["output_permutation"]
    strides, pads = list(at["strides"]), list(at["padding"])
    ld, rd = list(at["input_dilation"]), list(at["kernel_dilation"])
    fg, bg = at["feature_group_size"], at["batch_group_size"]
    lsd, rsd, osd = ls[2:], rs[2:], os[2:]
    in_sp = [lhs.shape[i] for i in lsd]
    k_sp = [rhs.shape[i] for i in rsd]
    g_sp = [g.shape[i] for i in osd]
    lhs_dil = _dilate_shape(in_sp, ld)
    rhs_dil = _dilate_shape(k_sp, rd)
    out_dil = _dilate_shape(g_sp, strides)
    lhs_c, rhs_c = as_type(lhs, t), as_type(rhs, t)

    # d lhs: g convolved with the reversed kernel, in and out features swapped
    w = rhs_c
    fgc = fg
    if fg > 1:
        w = _axis_into(rs[0], rs[1], _axis_out_of(rs[0], fg, w))
    elif bg > 1:
        w = _axis_into(rs[0], rs[1], _axis_out_of(rs[0], bg, w))
        fgc = bg
    before = [r - lo - 1 for r, (lo, _) in zip(rhs_dil, pads)]
    after = [a + r - 1 - o - b for a, r, o, b in zip(lhs_dil, rhs_dil, out_dil, before)]
    dl = conv(g, reverse(w, list(rsd)), strides=ld, padding=list(zip(before, after)),
              input_dilation=strides, kernel_dilation=rd, feature_group_size=fgc,
              input_permutation=os, kernel_permutation=_swap(rs), output_permutation=ls)
    if bg > 1:
        dl = _axis_into(ls[1], ls[0], _axis_out_of(ls[1], bg, dl))

    # d rhs: the input convolved with g, batch and feature roles swapped
    r_fg, r_bg = fg, bg
    if bg > 1:
        r_fg, r_bg = bg, 1
    elif fg > 1:
        r_fg, r_bg = 1, fg
    lo_r = [lo for lo, _ in pads]
    hi_r = [(o - a) + (r - lo - 1) for o, a, r, lo in zip(out_dil, lhs_dil, rhs_dil, lo_r)]
    dr = conv(lhs_c, g, strides=rd, padding=list(zip(lo_r, hi_r)), input_dilation=ld,
              kernel_dilation=strides, feature_group_size=r_fg, batch_group_size=r_bg,
              input_permutation=_swap(ls), kernel_permutation=_swap(os),
              output_permutation=_swap(rs))
    return [dl, dr]


# ----------------------------------------------------------------------------------------
# Batching (nxpy.defn.vmap): JAX's _conv_general_dilated_batch_rule, in Nx's terms. The
# examples join the convolution's batch (an input batched alone), its output features
# (a kernel batched alone) or its feature groups (both batched)
# ----------------------------------------------------------------------------------------
@register_batch_rule("conv")
def _batch_conv(ctx, e, xs, dims):
    (x, k), (dx, dk) = xs, dims
    a = e.attrs
    ls, rs, os = a["input_permutation"], a["kernel_permutation"], a["output_permutation"]
    fg, bg, n = a["feature_group_size"], a["batch_group_size"], ctx.size
    if bg != 1 or (dx is None and fg != 1):
        return NotImplemented  # batch groups, or a batched kernel with feature groups: the loop
    if dk is None:  # examples x batch, as one batch
        x, k, out_axis = _axis_into(dx, ls[0], x), k, os[0]
    elif dx is None:  # examples x output features, as the output features
        x, k, out_axis = x, _axis_into(dk, rs[0], k), os[1]
    else:  # one feature group per example (and per group of each)
        x, k, out_axis = _axis_into(dx, ls[1], x), _axis_into(dk, rs[0], k), os[1]
        fg *= n
    y = conv(x, k, strides=a["strides"], padding=list(a["padding"]),
             input_dilation=a["input_dilation"], kernel_dilation=a["kernel_dilation"],
             feature_group_size=fg, input_permutation=ls, kernel_permutation=rs,
             output_permutation=os)
    return _axis_out_of(out_axis, n, y), out_axis
