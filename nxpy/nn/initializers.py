"""Initializers as ``jax.nn.initializers`` has them: each function returns an ``init(key,
shape, type=...)`` that draws a tensor of ``shape`` from a key (``nxpy.random``'s raw
``u32[2]`` keys), with JAX's algorithms so the values are ``jax.nn.initializers``' for the
same key (``jax.nn.initializers`` 0.10.2; docs/nn.md lists them and the differences). JAX's
``dtype`` is nxpy's ``type`` (default f32); JAX's ``out_sharding`` is not taken (nxpy
places results with ``with_sharding_constraint``).

>>> import nxpy as nx
>>> from nxpy.nn import initializers
>>> init = initializers.glorot_uniform()
>>> w = init(nx.random.key(0), (3, 2))
>>> w.shape, str(w.type)
((3, 2), 'f32')
>>> initializers.zeros(nx.random.key(0), (2,)).tolist()
[0.0, 0.0]
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import ops as O
from .. import shape as S
from .. import types as T
from ..defn.placement import with_out_sharding
from ..random import core as RC
from ..random.basic import uniform_split
from ..random.distributions import standard_normal, orthogonal_split, truncated_normal_split
from ..tensor import Tensor

__all__ = ["constant", "zeros", "ones", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]


def _init_type(op, type, *, complex_ok=True):
    t = T.F32 if type is None else RC.check_type(type, op)
    if not (t.is_float or (complex_ok and t.is_complex)):
        raise TypeError(f"{op}: expected type to be a float or complex type, got {t}")
    return t


def _init_shape(shape, op):
    return RC.check_shape(shape, op)


def _scalar(v, t):
    """JAX's ``jnp.array(v, dtype)``."""
    return O.tensor(v, type=t) if not isinstance(v, Tensor) else O.as_type(v, t)


def _check_key(key, op):
    return RC.check_key(key, op)


def _jax_signature(init):
    """``init(key, shape, type)`` as JAX's initializers are called: ``(key, shape, dtype,
    out_sharding)``, the last the result's layout (``nx.reshard``)."""
    @functools.wraps(init)
    def run(key, shape, *args, out_sharding=None, **kwargs):
        if len(args) > 1:
            args, out_sharding = args[:1], args[1]
        return with_out_sharding(lambda: init(key, shape, *args, **kwargs), out_sharding)
    return run


def _scaled_draw(op, draw, scale, default, *, complex_ok=True):
    """The initializer ``draw(key, shape, t) * scale`` (``t`` the call's type, or
    ``default``), its arguments checked for ``op``."""
    def init(key, shape, type=default):
        key = _check_key(key, op)
        shape = _init_shape(shape, op)
        t = _init_type(op, type, complex_ok=complex_ok)
        return O.multiply(draw(key, shape, t), _scalar(scale, t))
    return _jax_signature(init)


@_jax_signature
def zeros(key, shape, type=None) -> Tensor:
    """Zeros of ``shape`` (``jax.nn.initializers.zeros(key, shape, dtype)``; ``key`` is
    ignored, as in JAX).

    >>> import nxpy as nx
    >>> zeros(nx.random.key(0), (2, 1)).tolist()
    [[0.0], [0.0]]
    """
    shape = _init_shape(shape, "zeros")
    t = RC.check_type("f32" if type is None else type, "zeros")
    return O.broadcast(O.tensor(0, type=t), shape)


@_jax_signature
def ones(key, shape, type=None) -> Tensor:
    """Ones of ``shape`` (``jax.nn.initializers.ones(key, shape, dtype)``).

    >>> import nxpy as nx
    >>> ones(nx.random.key(0), (2,), type="s32").tolist()
    [1, 1]
    """
    shape = _init_shape(shape, "ones")
    t = RC.check_type("f32" if type is None else type, "ones")
    return O.broadcast(O.tensor(1, type=t), shape)


def constant(value, type=None):
    """An initializer that fills ``shape`` with ``value``
    (``jax.nn.initializers.constant(value, dtype)``); ``value`` may be a tensor that
    broadcasts to the shape.

    >>> import nxpy as nx
    >>> constant(-7)(nx.random.key(0), (2,)).tolist()
    [-7.0, -7.0]
    """
    default = type

    def init(key, shape, type=default):
        shape = _init_shape(shape, "constant")
        t = RC.check_type("f32" if type is None else type, "constant")
        v = _scalar(value, t)
        try:
            S.broadcast(v.shape, shape)
        except ValueError:
            raise ValueError(f"constant: cannot broadcast value of shape {v.shape} to shape "
                             f"{shape}") from None
        return O.broadcast(v, shape)
    return _jax_signature(init)


def uniform(scale=0.01, type=None):
    """An initializer drawing uniformly from ``[0, scale)``
    (``jax.nn.initializers.uniform(scale, dtype)``: ``uniform(key) * scale``).

    >>> import nxpy as nx
    >>> [round(v, 6) for v in uniform(1.0)(nx.random.key(0), (2,)).tolist()]
    [0.947667, 0.97858]
    """
    return _scaled_draw("uniform", lambda key, shape, t: uniform_split(key, shape=shape, type=t),
                        scale, type, complex_ok=False)


def normal(stddev=0.01, type=None):
    """An initializer drawing from a normal with mean 0 and ``stddev``
    (``jax.nn.initializers.normal(stddev, dtype)``: ``normal(key) * stddev``; complex
    types as JAX draws them).

    >>> import nxpy as nx
    >>> [round(v, 5) for v in normal(1.0)(nx.random.key(0), (2,)).tolist()]
    [1.62264, 2.02526]
    """
    return _scaled_draw("normal", standard_normal, stddev, type)


def truncated_normal(stddev=0.01, type=None, lower=-2.0, upper=2.0):
    """An initializer drawing from a normal truncated to ``(lower, upper)``, times
    ``stddev`` (``jax.nn.initializers.truncated_normal(stddev, dtype, lower, upper)``).

    >>> import nxpy as nx
    >>> w = truncated_normal(1.0)(nx.random.key(0), (100,))
    >>> bool((nx.abs(w) < 2).all())
    True
    """
    default = type

    def init(key, shape, type=default):
        op = "truncated_normal"
        key = _check_key(key, op)
        shape = _init_shape(shape, op)
        t = _init_type(op, type, complex_ok=False)
        z = truncated_normal_split(key, lower, upper, shape=shape, type=t)
        return O.multiply(z, _scalar(stddev, t))
    return _jax_signature(init)


def _axes(v, arg, op):
    if isinstance(v, bool):
        raise TypeError(f"{op}: expected {arg} to be an int or a sequence of ints, got {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    try:
        return tuple(int(a) for a in v)
    except TypeError:
        raise TypeError(f"{op}: expected {arg} to be an int or a sequence of ints, got "
                        f"{v!r}") from None


def _size(shape, axes, arg, op):
    try:
        if isinstance(axes, int):
            return shape[axes]
        return math.prod(shape[i] for i in axes)
    except IndexError:
        raise ValueError(f"{op}: {arg} {axes} is out of range for shape {shape}") from None


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=(), op="variance_scaling"):
    """JAX's ``_compute_fans``: ``(fan_in, fan_out)`` of a weight shape."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"{op}: can't compute input and output sizes of a {len(shape)}-"
                         f"dimensional weights tensor with the default in_axis; give a shape "
                         f"of rank 2 or more or specify in_axis")
    in_size = _size(shape, in_axis, "in_axis", op)
    out_size = _size(shape, out_axis, "out_axis", op)
    batch_size = _size(shape, batch_axis, "batch_axis", op)
    denominator = in_size * out_size * batch_size
    receptive = math.prod(shape) / in_size / out_size / batch_size if denominator else 0
    return in_size * receptive, out_size * receptive


def _complex_uniform(key, shape, t):
    """JAX's ``_complex_uniform``: uniform on the disk of radius sqrt(2)."""
    rt = T.to_real(t)
    keys = RC.split(key)
    r = O.as_type(O.sqrt(O.multiply(O.tensor(2, type=rt),
                                    uniform_split(keys[0], shape=shape, type=rt))), t)
    theta = O.multiply(O.tensor(2 * np.pi, type=t),
                       O.as_type(uniform_split(keys[1], shape=shape, type=rt), t))
    return O.multiply(r, O.exp(O.multiply(O.tensor(1j, type=t), theta)))


def _complex_truncated_normal(key, upper, shape, t):
    """JAX's ``_complex_truncated_normal``: modulus of a truncated complex normal."""
    rt = T.to_real(t)
    keys = RC.split(key)
    a = O.subtract(O.tensor(1, type=t), O.exp(O.tensor(-upper ** 2, type=t)))
    tt = O.multiply(a, O.as_type(uniform_split(keys[0], shape=shape, type=rt), t))
    r = O.sqrt(O.negate(O.log(O.subtract(O.tensor(1, type=t), tt))))
    theta = O.multiply(O.tensor(2 * np.pi, type=t),
                       O.as_type(uniform_split(keys[1], shape=shape, type=rt), t))
    return O.multiply(r, O.exp(O.multiply(O.tensor(1j, type=t), theta)))


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     type=None):
    """An initializer whose samples have variance ``scale / n``, ``n`` the fan in, the fan
    out, their mean (``"fan_avg"``) or their geometric mean (``"fan_geo_avg"``) of the
    weight shape, drawn from a truncated normal, a normal or a uniform distribution
    (``jax.nn.initializers.variance_scaling(scale, mode, distribution, in_axis, out_axis,
    batch_axis, dtype)``; complex types as JAX draws them).

    >>> import nxpy as nx
    >>> init = variance_scaling(2.0, "fan_in", "uniform")
    >>> w = init(nx.random.key(0), (50, 4))
    >>> bool((nx.abs(w) <= (3 * 2.0 / 50) ** 0.5).all())
    True
    """
    op = "variance_scaling"
    if mode not in _MODES:
        raise ValueError(f"{op}: expected mode to be one of {', '.join(map(repr, _MODES))}, "
                         f"got {mode!r}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"{op}: expected distribution to be one of "
                         f"{', '.join(map(repr, _DISTRIBUTIONS))}, got {distribution!r}")
    in_axis = _axes(in_axis, "in_axis", op)
    out_axis = _axes(out_axis, "out_axis", op)
    batch_axis = _axes(batch_axis, "batch_axis", op)
    default = type

    def init(key, shape, type=default):
        key = _check_key(key, op)
        shape = _init_shape(shape, op)
        t = _init_type(op, type)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out,
                       "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = O.tensor(scale / denominator if denominator != 0 else 0, type=t)
        if distribution == "truncated_normal":
            if t.is_float:
                stddev = O.divide(O.sqrt(variance), O.tensor(0.8796256610342398, type=t))
                z = truncated_normal_split(key, -2, 2, shape=shape, type=t)
                return O.multiply(z, stddev)
            stddev = O.divide(O.sqrt(variance), O.tensor(0.9531116438049121, type=t))
            return O.multiply(_complex_truncated_normal(key, 2, shape, t), stddev)
        if distribution == "normal":
            return O.multiply(standard_normal(key, shape, t), O.sqrt(variance))
        if t.is_float:
            u = uniform_split(key, -1, 1, shape=shape, type=t)
            return O.multiply(u, O.sqrt(O.multiply(O.tensor(3, type=t), variance)))
        return O.multiply(_complex_uniform(key, shape, t), O.sqrt(variance))
    return _jax_signature(init)


def _variance_scaling_preset(name, scale, mode, distribution, jax_doc):
    def preset(in_axis=-2, out_axis=-1, batch_axis=(), type=None):
        return variance_scaling(scale, mode, distribution, in_axis=in_axis,
                                out_axis=out_axis, batch_axis=batch_axis, type=type)
    preset.__name__ = preset.__qualname__ = name
    preset.__doc__ = (f"{jax_doc} (``jax.nn.initializers.{name}(in_axis, out_axis, "
                      f"batch_axis, dtype)``): ``variance_scaling({scale}, {mode!r}, "
                      f"{distribution!r})``.\n\n"
                      f"    >>> import nxpy as nx\n"
                      f"    >>> {name}()(nx.random.key(0), (4, 3)).shape\n"
                      f"    (4, 3)\n")
    return preset


glorot_uniform = _variance_scaling_preset(
    "glorot_uniform", 1.0, "fan_avg", "uniform", "Glorot (Xavier) uniform initializer")
glorot_normal = _variance_scaling_preset(
    "glorot_normal", 1.0, "fan_avg", "truncated_normal", "Glorot (Xavier) normal initializer")
lecun_uniform = _variance_scaling_preset(
    "lecun_uniform", 1.0, "fan_in", "uniform", "LeCun uniform initializer")
lecun_normal = _variance_scaling_preset(
    "lecun_normal", 1.0, "fan_in", "truncated_normal", "LeCun normal initializer")
he_uniform = _variance_scaling_preset(
    "he_uniform", 2.0, "fan_in", "uniform", "He (Kaiming) uniform initializer")
he_normal = _variance_scaling_preset(
    "he_normal", 2.0, "fan_in", "truncated_normal", "He (Kaiming) normal initializer")
xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def _column_axis(column_axis, rank, op):
    if isinstance(column_axis, bool) or not isinstance(column_axis, (int, np.integer)):
        raise TypeError(f"{op}: expected column_axis to be an int, got {column_axis!r}")
    if not -rank <= column_axis < rank:
        raise ValueError(f"{op}: column_axis {column_axis} is out of range for a shape of "
                         f"rank {rank}")
    return int(column_axis) % rank


def orthogonal(scale=1.0, column_axis=-1, type=None):
    """An initializer of matrices with orthonormal columns (or rows, whichever are
    fewer) along ``column_axis``, times ``scale``: the other axes are flattened into rows
    (``jax.nn.initializers.orthogonal(scale, column_axis, dtype)``; ``random.orthogonal``
    underneath).

    >>> import nxpy as nx
    >>> w = orthogonal()(nx.random.key(0), (4, 2))
    >>> [round(v, 5) for v in nx.dot(w, [0], w, [0]).to_numpy().ravel().tolist()]
    [1.0, 0.0, 0.0, 1.0]
    """
    default = type

    def init(key, shape, type=default):
        op = "orthogonal"
        key = _check_key(key, op)
        shape = _init_shape(shape, op)
        t = _init_type(op, type)
        if len(shape) < 2:
            raise ValueError(f"{op}: the orthogonal initializer requires a shape of rank 2 or "
                             f"more, got {shape}")
        ax = _column_axis(column_axis, len(shape), op)
        if 0 in shape:
            return O.broadcast(O.tensor(0, type=t), shape)
        n_cols = shape[ax]
        n_rows = math.prod(shape) // n_cols
        q = orthogonal_split(key, n_rows, shape=(), type=t, m=n_cols)
        rest = shape[:ax] + shape[ax + 1:]
        q = O.reshape(q, rest + (n_cols,))
        perm = list(range(len(rest)))
        perm.insert(ax, len(rest))
        q = O.transpose(q, perm)
        return O.multiply(_scalar(scale, t), q)
    return _jax_signature(init)


def delta_orthogonal(scale=1.0, column_axis=-1, type=None):
    """The delta orthogonal initializer for convolution kernels of rank 3, 4 or 5
    (``jax.nn.initializers.delta_orthogonal(scale, column_axis, dtype)``): zeros with an
    orthogonal matrix (over the last two axes) at the spatial center.

    >>> import nxpy as nx
    >>> w = delta_orthogonal()(nx.random.key(0), (3, 2, 2))
    >>> w.to_numpy()[0].tolist()
    [[0.0, 0.0], [0.0, 0.0]]
    """
    default = type

    def init(key, shape, type=default):
        op = "delta_orthogonal"
        key = _check_key(key, op)
        shape = _init_shape(shape, op)
        t = _init_type(op, type)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"{op}: the delta orthogonal initializer requires a shape of "
                             f"rank 3, 4 or 5, got {shape}")
        if shape[-1] < shape[-2]:
            raise ValueError(f"{op}: expected fan_in (shape[-2] = {shape[-2]}) to be at most "
                             f"fan_out (shape[-1] = {shape[-1]})")
        ortho = orthogonal(scale=scale, column_axis=column_axis, type=t)(key, shape[-2:])
        w = O.broadcast(O.tensor(0, type=t), shape)
        if 0 in shape:
            return w
        center = [(k - 1) // 2 for k in shape[:-2]]
        upd = O.reshape(ortho, (1,) * len(center) + shape[-2:])
        return O.put_slice(w, center + [0, 0], upd)
    return _jax_signature(init)
