"""Sliding windows and reductions with a function: window_sum, window_mean, window_max,
window_min, window_product, window_reduce, window_scatter_max, window_scatter_min, and
reduce (Nx's ``Nx.reduce``).

Options follow Nx: ``strides`` (an int or one per dim), ``padding`` (``"valid"``,
``"same"``: ``window - 1`` elements split low/high as Nx does, whatever the strides, or
explicit non-negative ``(low, high)`` pairs) and ``window_dilations``.

>>> import nxpy as nx
>>> nx.window_max(nx.tensor([1, 3, 2, 5]), (2,)).tolist()
[3, 3, 5]
>>> nx.window_reduce(nx.tensor([1, 3, 2, 5]), 0, (2,), lambda x, acc: x + acc).tolist()
[4, 5, 7]
>>> nx.reduce(nx.tensor([[1, 2], [3, 4]]), 1, lambda x, acc: x * acc, axes=[1]).tolist()
[2, 12]
"""
from __future__ import annotations

import builtins
import itertools
import numbers

import numpy as np

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_axes_of, _out, check_kind, dispatch, primitive,
                   register_grad_rule, to_tensor)
from .creation import full
from .core import as_type
from .elementwise import (add, divide, equal, greater, greater_equal, less, less_equal,
                          logical_and, logical_not, logical_or, multiply, select)
from .indexing import slice as _slice
from .reductions import argmax, argmin, product, sum as _sum
from .shaping import broadcast, pad, reshape, stack

__all__ = ["window_sum", "window_mean", "window_max", "window_min", "window_product",
           "window_reduce", "window_scatter_max", "window_scatter_min", "reduce"]

primitive("windows", "window_sum", "window_max", "window_min", "window_product",
          props=("windowed",))
primitive("windows", "window_reduce", "window_scatter_max", "window_scatter_min", "reduce")

_Number = (numbers.Number, np.generic)


# ----------------------------------------------------------------------------------------
# Shapes (Nx.Shape.pool)
# ----------------------------------------------------------------------------------------
def _ints(name, what, value, rank):
    """An int or a list of ``rank`` ints, all positive → a tuple."""
    if S.as_int(value) is not None:
        value = (S.as_int(value),) * rank
    try:
        out = S.integers(value, what)
    except TypeError:
        raise TypeError(f"{name}: expected {what} to be a positive integer or a list of "
                        f"{rank} positive integers, got {value!r}") from None
    if len(out) != rank or builtins.any(v < 1 for v in out):
        raise ValueError(f"{name}: expected {what} to be {rank} positive integers (one per "
                         f"dimension), got {list(out)}")
    return out


def padding_config(name, padding, dims, window, *, allow_negative=False):
    """Nx's padding modes → explicit ``(low, high)`` pairs. ``window`` is the (dilated)
    window/kernel size of each dim; ``"same"`` pads ``window - 1`` in total, the odd one
    high (Nx.Shape.to_padding_config, independent of the strides)."""
    rank = len(dims)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * rank
        if padding == "same":
            return tuple(((k - 1) // 2, (k - 1) - (k - 1) // 2) for k in window)
    elif isinstance(padding, (list, tuple)) and len(padding) == rank and builtins.all(
            isinstance(p, (list, tuple)) and len(p) == 2 and builtins.all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in p)
            for p in padding):
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
        if not allow_negative and builtins.any(lo < 0 or hi < 0 for lo, hi in pads):
            raise ValueError(f"{name}: padding cannot have negative values, got {list(pads)}")
        return pads
    raise ValueError(f"{name}: expected padding to be 'valid', 'same' or a list of {rank} "
                     f"(low, high) integer pairs, got {padding!r}")


def _pool(name, shape, window, strides, padding, dilations):
    """Nx.Shape.pool: ``(output shape, padding config)``. An empty input dim gives an empty
    output dim (Nx raises there); a window that does not fit raises as in Nx."""
    if len(window) != len(shape):
        raise ValueError(f"{name}: expected window_dimensions of rank {len(shape)} (the rank "
                         f"of the tensor of shape {shape}), got {list(window)}")
    eff = [(w - 1) * r + 1 for w, r in zip(window, dilations)]
    pads = padding_config(name, padding, shape, eff)
    out = []
    for d, k, s, (lo, hi) in zip(shape, eff, strides, pads):
        span = d + lo + hi - k
        if span < 0 and d == 0:
            out.append(0)
        elif span < 0:
            raise ValueError(f"{name}: the window {tuple(window)} (dilated to {tuple(eff)}) "
                             f"does not fit in the padded shape of {tuple(shape)} (padding "
                             f"{list(pads)})")
        else:
            out.append(span // s + 1)
    return tuple(out), pads


def _window_args(name, x, window_dimensions, strides, padding, window_dilations):
    if S.as_int(window_dimensions) is not None:
        window_dimensions = (window_dimensions,)
    try:
        window = S.integers(window_dimensions, "window_dimensions")
    except TypeError:
        raise TypeError(f"{name}: expected window_dimensions to be a tuple of positive "
                        f"integers, got {window_dimensions!r}") from None
    if builtins.any(w < 1 for w in window):
        raise ValueError(f"{name}: expected window_dimensions to be positive integers, got "
                         f"{list(window)}")
    if len(window) != x.rank:
        raise ValueError(f"{name}: expected window_dimensions of rank {x.rank} (the rank of "
                         f"the tensor of shape {x.shape}), got {list(window)}")
    strides = _ints(name, "strides", 1 if strides is None else strides, x.rank)
    dil = _ints(name, "window_dilations", 1 if window_dilations is None else window_dilations,
                x.rank)
    shape, pads = _pool(name, x.shape, window, strides, padding, dil)
    return window, strides, pads, dil, shape


def _window(name, x, window_dimensions, strides, padding, window_dilations, kinds="num"):
    x = to_tensor(x, "x")
    check_kind(name, "x", x.type, kinds)
    window, strides, pads, dil, shape = _window_args(name, x, window_dimensions, strides,
                                                     padding, window_dilations)
    return dispatch(name, _out(shape, x.type, x.names), x, window_dimensions=window,
                    strides=strides, padding=pads, window_dilations=dil)


def window_sum(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """Sum over each window (the type of ``x``; padding adds 0).

    >>> import nxpy as nx
    >>> nx.window_sum(nx.iota((4,)), (2,)).tolist()
    [1, 3, 5]
    """
    return _window("window_sum", x, window_dimensions, strides, padding, window_dilations, "any")


def window_max(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """Max over each window (padding counts as the type's minimum, -inf for floats).

    >>> import nxpy as nx
    >>> nx.window_max(nx.tensor([[1, 2], [3, 0]]), (1, 2), padding="same").tolist()
    [[2, 2], [3, 0]]
    """
    return _window("window_max", x, window_dimensions, strides, padding, window_dilations, "real")


def window_min(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """Min over each window (padding counts as the type's maximum, inf for floats).

    >>> import nxpy as nx
    >>> nx.window_min(nx.tensor([4, 2, 3, 1]), (2,), strides=2).tolist()
    [2, 1]
    """
    return _window("window_min", x, window_dimensions, strides, padding, window_dilations, "real")


def window_product(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """Product over each window (the type of ``x``; padding multiplies by 1).

    >>> import nxpy as nx
    >>> nx.window_product(nx.tensor([1, 2, 3, 4]), (2,)).tolist()
    [2, 6, 12]
    """
    return _window("window_product", x, window_dimensions, strides, padding, window_dilations,
                   "any")


def window_mean(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """The window sums divided by the window's size (padding counts, as in Nx); a float.

    >>> import nxpy as nx
    >>> nx.window_mean(nx.tensor([1, 2, 3, 5]), (2,)).tolist()
    [1.5, 2.5, 4.0]
    """
    s = window_sum(x, window_dimensions, strides, padding, window_dilations)
    return divide(s, S.size(_as_window(window_dimensions)))


def _as_window(window_dimensions):
    if S.as_int(window_dimensions) is not None:
        return (S.as_int(window_dimensions),)
    return S.integers(window_dimensions, "window_dimensions")


# ----------------------------------------------------------------------------------------
# Reductions with a function
# ----------------------------------------------------------------------------------------
def _check_fun_when_empty(name, fun, x, t):
    """An empty operand makes an eager backend call ``fun`` never, where a defn traces it
    always: it is called once on zeros of type ``t`` so it fails (or not) on every path
    alike."""
    if x.backend is None or x.backend.is_expr or 0 not in x.shape:
        return
    zero = full((), 0, type=t)
    r = fun(zero, zero)
    if not isinstance(r, Tensor) or r.shape != ():
        raise ValueError(f"{name}: the reduction function must return one scalar tensor, "
                         f"got {type(r).__name__ if not isinstance(r, Tensor) else r.shape}")


def _fun_and_opts(name, args, kwargs, allowed):
    """``(fun)`` or ``(opts, fun)`` positional forms (Nx's argument order) plus keywords."""
    if len(args) == 1:
        opts, fun = {}, args[0]
    elif len(args) == 2:
        opts, fun = args
        if isinstance(opts, (list, tuple)):
            try:
                opts = dict(opts)
            except (TypeError, ValueError):
                raise TypeError(f"{name}: expected options as a dict or a list of (name, value) "
                                f"pairs, got {opts!r}") from None
        if not isinstance(opts, dict):
            raise TypeError(f"{name}: expected options as a dict or a list of (name, value) "
                            f"pairs, got {type(opts).__name__}")
    else:
        raise TypeError(f"{name}: expected the reduction function (and, before it, "
                        f"optionally a dict of options), got {len(args)} extra argument(s)")
    opts = {**opts, **kwargs}
    unknown = set(opts) - set(allowed)
    if unknown:
        raise TypeError(f"{name}: unknown option(s) {sorted(unknown)}; expected some of "
                        f"{list(allowed)}")
    if not callable(fun):
        raise TypeError(f"{name}: expected the reduction function to be a callable of two "
                        f"scalar tensors, got {type(fun).__name__}")
    return fun, opts


def _acc_type(name, x, acc):
    """The accumulator as a scalar tensor and the result type (Nx's binary_type: a Python
    number is weak)."""
    if isinstance(acc, _Number) and not isinstance(acc, np.generic):
        t = T.merge_scalar(x.type, acc)
        return full((), acc, type=t), t
    acc = to_tensor(acc, "acc")
    if acc.shape != ():
        raise ValueError(f"{name}: the accumulator must be a scalar, got a tensor of shape "
                         f"{acc.shape}")
    return acc, T.merge(x.type, acc.type)


def reduce(tensor, acc, *args, **kwargs) -> Tensor:
    """``Nx.reduce(tensor, acc, opts, fun)``: reduces ``axes`` (default: all) with
    ``fun(x, acc)``, a function of two scalar tensors, starting from ``acc``. Options:
    ``axes``, ``keep_axes``, ``type`` (default: ``tensor``'s type merged with ``acc``'s).
    As in Nx, the reduction order is unspecified (XLA may combine in any order), so
    ``fun`` should be associative.

    >>> import nxpy as nx
    >>> nx.reduce(nx.tensor([1, 2, 3]), 0, lambda x, y: nx.add(x, y)).tolist()
    6
    >>> t = nx.tensor([[1, 2, 3], [4, 5, 6]], names=["x", "y"])
    >>> r = nx.reduce(t, 0, {"axes": ["y"], "keep_axes": True}, lambda x, y: x + y)
    >>> r.tolist(), r.names
    ([[6], [15]], ('x', 'y'))
    """
    fun, opts = _fun_and_opts("reduce", args, kwargs, ("axes", "keep_axes", "type"))
    x = to_tensor(tensor, "tensor")
    acc, t = _acc_type("reduce", x, acc)
    if opts.get("type") is not None:
        t = T.parse(opts["type"])
    keep = bool(opts.get("keep_axes", False))
    axes = opts.get("axes")
    if axes is not None:
        axes = _axes_of("reduce", S.normalize_axes, axes, x.rank, x.names)
        if len(axes) == 0:
            return x
    else:
        axes = tuple(range(x.rank))
    if keep:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        names = x.names
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        names = tuple(n for i, n in enumerate(x.names) if i not in axes)
    _check_fun_when_empty("reduce", fun, x, t)
    return dispatch("reduce", _out(shape, t, names), x, acc, axes=tuple(sorted(axes)),
                    keep_axes=keep, fun=fun)


def window_reduce(tensor, acc, window_dimensions, *args, **kwargs) -> Tensor:
    """``Nx.window_reduce(tensor, acc, window_dimensions, opts, fun)``: reduces each window
    with ``fun(x, acc)`` starting from ``acc``. Options: ``strides``, ``padding``,
    ``window_dilations``; padded positions are skipped (XLA's semantics, what EXLA gives:
    Nx's BinaryBackend folds ``acc`` in for each of them instead, which differs when
    ``acc`` is not the function's identity). The result keeps ``tensor``'s type and names.

    >>> import nxpy as nx
    >>> t = nx.tensor([[1, 2, 3], [4, 5, 6]])
    >>> nx.window_reduce(t, 0, (1, 2), {"padding": "same"}, lambda x, acc: x + acc).tolist()
    [[3, 5, 3], [9, 11, 6]]
    """
    fun, opts = _fun_and_opts("window_reduce", args, kwargs,
                              ("strides", "padding", "window_dilations"))
    x = to_tensor(tensor, "tensor")
    acc = to_tensor(acc, "acc")
    if acc.shape != ():
        raise ValueError(f"window_reduce: the accumulator must be a scalar, got a tensor of "
                         f"shape {acc.shape}")
    window, strides, pads, dil, shape = _window_args(
        "window_reduce", x, window_dimensions, opts.get("strides"),
        opts.get("padding", "valid"), opts.get("window_dilations"))
    _check_fun_when_empty("window_reduce", fun, x, x.type)
    return dispatch("window_reduce", _out(shape, x.type, x.names), x, acc,
                    window_dimensions=window, strides=strides, padding=pads,
                    window_dilations=dil, fun=fun)


# ----------------------------------------------------------------------------------------
# Select and scatter
# ----------------------------------------------------------------------------------------
def _window_scatter(name, tensor, source, init_value, window_dimensions, strides, padding,
                    tie_break):
    x = to_tensor(tensor, "tensor")
    src = to_tensor(source, "source")
    init = to_tensor(init_value, "init_value")
    check_kind(name, "tensor", x.type, "real")
    if init.shape != ():
        raise ValueError(f"{name}: init_value must be a scalar, got a tensor of shape "
                         f"{init.shape}")
    window, strides, pads, _dil, shape = _window_args(name, x, window_dimensions, strides,
                                                      padding, None)
    if shape != src.shape:
        raise ValueError(f"{name}: source shape must match the valid windows in the input "
                         f"tensor: the windows of {x.shape} give {shape}, source has shape "
                         f"{src.shape}")
    t = T.merge(src.type, init.type)
    check_kind(name, "source and init_value", t, "real")
    if tie_break not in ("low", "high"):
        raise ValueError(f"{name}: tie_break must be 'low' or 'high', got {tie_break!r}")
    return dispatch(name, _out(x.shape, t, x.names), x, src, init, window_dimensions=window,
                    strides=strides, padding=pads, tie_break=tie_break)


def window_scatter_max(tensor, source, init_value, window_dimensions, strides=None,
                       padding="valid") -> Tensor:
    """Nx's select-and-scatter with max: a tensor of ``tensor``'s shape filled with
    ``init_value``, to which each element of ``source`` is added at the position of the
    maximum of its window (the last one in row-major order on ties, as Nx; padding is never
    selected). The type merges ``source``'s and ``init_value``'s. This is the gradient of
    ``window_max``.

    >>> import nxpy as nx
    >>> t = nx.tensor([[7, 2, 5, 3, 8], [3, 8, 9, 3, 4], [1, 5, 7, 5, 6], [0, 6, 2, 10, 2]])
    >>> nx.window_scatter_max(t, nx.tensor([[2, 6], [3, 1]]), 0, (2, 3), strides=[2, 2]).tolist()
    [[0, 0, 0, 0, 0], [0, 0, 8, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 1, 0]]
    """
    return _window_scatter("window_scatter_max", tensor, source, init_value, window_dimensions,
                           strides, padding, "high")


def window_scatter_min(tensor, source, init_value, window_dimensions, strides=None,
                       padding="valid") -> Tensor:
    """As :func:`window_scatter_max`, at the position of each window's minimum (the last one
    on ties, as Nx). This is the gradient of ``window_min``.

    >>> import nxpy as nx
    >>> t = nx.tensor([[7, 2, 5, 3, 8], [3, 8, 9, 3, 4], [1, 5, 7, 5, 6], [0, 6, 2, 10, 2]])
    >>> nx.window_scatter_min(t, nx.tensor([[2, 6], [3, 1]]), 0, (2, 3), strides=[2, 2]).tolist()
    [[0, 2, 0, 0, 0], [0, 0, 0, 6, 0], [0, 0, 0, 0, 0], [3, 0, 0, 0, 1]]
    """
    return _window_scatter("window_scatter_min", tensor, source, init_value, window_dimensions,
                           strides, padding, "high")


def select_and_scatter(name, tensor, source, init_value, window_dimensions, strides, padding,
                       tie_break):
    """``window_scatter_max``/``window_scatter_min`` with the tie break chosen: ``"low"``
    sends each source value to the first extremum of its window (XLA's select with >= / <=,
    what JAX's gradients and programs use), ``"high"`` to the last (Nx's)."""
    return _window_scatter(name, tensor, source, init_value, window_dimensions, strides,
                           padding, tie_break)


# ----------------------------------------------------------------------------------------
# Gradients
# ----------------------------------------------------------------------------------------
def _attrs(e):
    return (e.attrs["window_dimensions"], e.attrs["strides"], e.attrs["padding"],
            e.attrs["window_dilations"])


def _zeros_like(t):
    return broadcast(full((), 0, type=t.type), t.shape)


def _window_sum_grad(x, g, w, s, pads, dil):
    """The transpose of window_sum: ``g`` spread back over each window."""
    cfg = []
    for d, wd, st, (lo, _), r, n in zip(x.shape, w, s, pads, dil, g.shape):
        eff = (wd - 1) * r + 1
        before = eff - 1 - lo
        after = d + eff - 1 - ((n - 1) * st + 1 if n else 0) - before
        cfg.append((before, after, st - 1))
    padded = pad(g, full((), 0, type=g.type), cfg)
    return window_sum(padded, w, strides=1, padding="valid", window_dilations=dil)


def _offsets(w):
    return list(itertools.product(*[range(k) for k in w]))


def _picks(xp, w, s, dil, out_shape):
    """One strided slice of the padded input per window offset (row-major order): slice
    ``k`` holds element ``k`` of every window."""
    lengths = [(n - 1) * st + 1 if n else 0 for n, st in zip(out_shape, s)]
    return [_slice(xp, [k * r for k, r in zip(off, dil)], lengths, s) for off in _offsets(w)]


def _scatter_strided(part, padded_shape, start, strides):
    """``part`` placed in a zero tensor of ``padded_shape`` at ``start`` with ``strides``
    (the transpose of a strided slice)."""
    cfg = []
    for n, d, b, st in zip(part.shape, padded_shape, start, strides):
        span = (n - 1) * st + 1 if n else 0
        cfg.append((b, d - b - span, st - 1))
    return pad(part, full((), 0, type=part.type), cfg)


def _spread_picks(parts, x, w, s, pads, dil):
    """Sum of each offset's part scattered back to its window position, cropped to ``x``."""
    padded_shape = [d + lo + hi for d, (lo, hi) in zip(x.shape, pads)]
    total = None
    for part, off in zip(parts, _offsets(w)):
        if part is None:
            continue
        placed = _scatter_strided(part, padded_shape, [k * r for k, r in zip(off, dil)], s)
        total = placed if total is None else add(total, placed)
    if total is None:
        return _zeros_like(x)
    return _slice(total, [lo for lo, _ in pads], x.shape)


def _chooser_grad(kind, x, g, w, s, pads, dil):
    """The gradient of window_max (``kind="max"``) or window_min: the cotangent goes to the
    first extremum of each window in row-major order (XLA's select_and_scatter with >= / <=,
    JAX's rule). Without window dilations it is one window_scatter; select_and_scatter has
    no window dilations, so dilated windows pick through their strided slices."""
    if builtins.all(r == 1 for r in dil):
        name = "window_scatter_max" if kind == "max" else "window_scatter_min"
        return select_and_scatter(name, x, g, full((), 0, type=g.type), w, s, list(pads), "low")
    fill = T.min_value(x.type) if kind == "max" else T.max_value(x.type)
    xp = pad(x, full((), fill, type=x.type), [(lo, hi, 0) for lo, hi in pads])
    picks = _picks(xp, w, s, dil, g.shape)
    first = (argmax if kind == "max" else argmin)(stack(picks), axis=0, tie_break="low")
    zero = _zeros_like(g)
    parts = [select(equal(first, i), g, zero) for i in range(len(picks))]
    return _spread_picks(parts, x, w, s, pads, dil)


def _product_grad(x, g, w, s, pads, dil):
    """d window_product: for element k of a window, ``g`` times the product of the other
    elements (prefix and suffix products over the window's elements: exact with zeros)."""
    xp = pad(x, full((), 1, type=x.type), [(lo, hi, 0) for lo, hi in pads])
    picks = _picks(xp, w, s, dil, g.shape)
    n = len(picks)
    prefix = [None] * n
    suffix = [None] * n
    acc = None
    for i in range(n):
        prefix[i] = acc
        acc = picks[i] if acc is None else multiply(acc, picks[i])
    acc = None
    for i in reversed(range(n)):
        suffix[i] = acc
        acc = picks[i] if acc is None else multiply(picks[i], acc)
    parts = []
    for i in range(n):
        others = [p for p in (prefix[i], suffix[i]) if p is not None]
        if not others:
            parts.append(g)
        elif len(others) == 1:
            parts.append(multiply(g, others[0]))
        else:
            parts.append(multiply(g, multiply(others[0], others[1])))
    return _spread_picks(parts, x, w, s, pads, dil)


@register_grad_rule("window_max", "window_min")
def _grad_window_chooser(ctx, e, xs, out, g):
    (x,) = xs
    if not out.type.is_inexact:
        return [None]
    return [_chooser_grad("max" if e.op == "window_max" else "min", x, g, *_attrs(e))]


@register_grad_rule("window_product")
def _grad_window_product(ctx, e, xs, out, g):
    (x,) = xs
    if not out.type.is_inexact:
        return [None]
    return [_product_grad(x, g, *_attrs(e))]


def fn_kind(fn):
    """The monoid a traced reduction function computes, when it is one binary op of its two
    parameters (``add``, ``multiply``, ``max``, ``min``, in either order), else None."""
    nodes = [n for n in fn.nodes if n.op != "parameter"]
    if len(fn.outputs) != 1 or len(nodes) != 1 or fn.captures:
        return None
    (n,) = nodes
    if n is not fn.outputs[0].data or n.op not in ("add", "multiply", "max", "min"):
        return None
    args = [a.data if isinstance(a, Tensor) else a for a in n.args]
    params = {p.data.id for p in fn.params}
    if len(args) != 2 or {a.id for a in args} != params or len(params) != 2:
        return None
    return n.op


_NO_GRAD = ("the gradient of {op} is defined when its function is add, multiply, max or "
            "min of its two arguments (it then differentiates as the named reduction); "
            "{what} is not differentiable: use the named reduction, or write the reduction "
            "with differentiable ops (such as a while loop)")


@register_grad_rule("reduce")
def _grad_reduce(ctx, e, xs, out, g):
    x, acc = xs
    kind = fn_kind(e.fns[0])
    if not out.type.is_inexact:
        return [None, None]
    if kind is None:
        raise NotImplementedError(_NO_GRAD.format(op="reduce", what="this reduction function"))
    axes, keep = e.attrs["axes"], e.attrs["keep_axes"]
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    gk = reshape(g, kept)
    xf = as_type(x, out.type)
    if kind == "add":
        return [broadcast(gk, x.shape), g]
    if kind == "multiply":
        # the product of the other elements along the axes, zero-safe: JAX's rule for prod
        # (through cumulative products) is emulated with the exclusive products of a flat view
        r = reshape(out, kept)
        safe = select(equal(xf, 0), full((), 1, type=xf.type), xf)
        zeros = _sum(select(equal(xf, 0), full((), 1, type=out.type),
                            full((), 0, type=out.type)), axes=list(axes), keep_axes=True)
        nz_prod = product(safe, axes=list(axes), keep_axes=True)
        nz_prod = multiply(nz_prod, as_type(acc, out.type))
        d = select(equal(xf, 0), select(equal(zeros, 1), nz_prod, full((), 0, type=out.type)),
                   divide(r, safe))
        return [multiply(broadcast(gk, x.shape), d),
                multiply(g, product(xf, axes=list(axes), keep_axes=keep))]
    # max / min: the cotangent is shared by the positions equal to the result (as JAX)
    r = reshape(out, kept)
    hit = select(equal(xf, r), full((), 1, type=out.type), full((), 0, type=out.type))
    count = _sum(hit, axes=list(axes), keep_axes=True)
    none = equal(count, 0)  # acc beats every element: the cotangent is acc's
    share = divide(gk, select(none, full((), 1, type=out.type), count))
    return [multiply(broadcast(share, x.shape), hit),
            _sum(select(none, gk, _zeros_like(gk)))]


@register_grad_rule("window_reduce")
def _grad_window_reduce(ctx, e, xs, out, g):
    x, acc = xs
    kind = fn_kind(e.fns[0])
    if not out.type.is_inexact:
        return [None, None]
    if kind is None:
        raise NotImplementedError(_NO_GRAD.format(op="window_reduce",
                                                  what="this window function"))
    w, s, pads, dil = _attrs(e)
    if kind == "add":  # acc enters each window once (the padding is no element)
        return [_window_sum_grad(x, g, w, s, pads, dil), g]
    if kind == "multiply":
        return [_product_grad(x, g, w, s, pads, dil), None]
    # max / min: where acc beats every element of a window, the cotangent is acc's
    ext = (window_max if kind == "max" else window_min)(x, w, s, [list(p) for p in pads], dil)
    acc_wins = (greater if kind == "max" else less)(out, ext)
    zero = _zeros_like(g)
    return [_chooser_grad(kind, x, select(acc_wins, zero, g), w, s, pads, dil),
            _sum(select(acc_wins, g, zero))]


def _gather_selected(kind, tie_break, x, g, w, s, pads):
    """``g`` (of ``x``'s shape) read at the position each window selects (the transpose of
    the scatter), through the window's strided slices: XLA's selection walks each window in
    row-major order, skipping padding, and moves to a candidate unless
    ``select(current, candidate)`` (>= or <= for ``"low"``, > or < for ``"high"``) holds."""
    ones = (1,) * x.rank
    out_shape = _pool("window_scatter", x.shape, w, s, [list(p) for p in pads], ones)[0]
    cfg = [(lo, hi, 0) for lo, hi in pads]
    xp = pad(x, full((), 0, type=x.type), cfg)
    valid = pad(broadcast(full((), True, type=T.PRED), x.shape), full((), False, type=T.PRED), cfg)
    gp = pad(g, full((), 0, type=g.type), cfg)
    xs_, vs, gs = (_picks(a, w, s, ones, out_shape) for a in (xp, valid, gp))
    keep = {("max", "low"): greater_equal, ("max", "high"): greater,
            ("min", "low"): less_equal, ("min", "high"): less}[(kind, tie_break)]
    sel, selv, out = xs_[0], vs[0], gs[0]
    for xi, vi, gi in zip(xs_[1:], vs[1:], gs[1:]):
        take = logical_and(vi, logical_or(logical_not(selv), logical_not(keep(sel, xi))))
        sel, selv, out = select(take, xi, sel), logical_or(selv, vi), select(take, gi, out)
    return select(selv, out, _zeros_like(out))


@register_grad_rule("window_scatter_max", "window_scatter_min")
def _grad_window_scatter(ctx, e, xs, out, g):
    x, src, init = xs
    if not out.type.is_inexact:
        return [None, None, None]
    kind = "max" if e.op == "window_scatter_max" else "min"
    gsrc = _gather_selected(kind, e.attrs["tie_break"], x, g, e.attrs["window_dimensions"],
                            e.attrs["strides"], e.attrs["padding"])
    return [None, gsrc, _sum(g)]
