"""jax.random's distributions that are transformations of uniform, normal and gumbel draws
(issue 28, part 4), and the key utilities of ``jax.random`` that make sense on raw keys.

Each sampler comes in the package's two forms: ``name_split(key, ...)`` uses the key as
given and gives ``jax.random.name(key, ...)``'s values (JAX's algorithm, op for op), and
``name(key, ...)`` splits the key first and returns ``(value, next_key)``. JAX's
``dtype`` is nxpy's ``type``; ``shape`` and the other arguments keep JAX's names and
order (``shape`` and ``type`` are keyword-only, as in the rest of the package). Parameters
are converted to the result's type before use; Python numbers are converted straight to
it (JAX first makes them weakly typed f32, or f64 under x64, then converts).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .. import ops as O
from .. import shape as S
from .. import types as T
from ..tensor import Tensor
from .basic import _normal_real, _uniform, gumbel_split, normal_split, shuffle
from .gamma import generalized_normal_split
from .core import (S32, U32, _check_param_shapes, _finish, _jit_argument, _split2, _tensorish,
                   check_key, check_shape, check_type, split)

__all__ = ["bernoulli", "bernoulli_split", "categorical", "categorical_split",
           "truncated_normal", "truncated_normal_split", "exponential", "exponential_split",
           "laplace", "laplace_split", "logistic", "logistic_split", "cauchy", "cauchy_split",
           "rademacher", "rademacher_split", "permutation", "permutation_split",
           "orthogonal", "orthogonal_split", "pareto", "pareto_split", "weibull_min",
           "weibull_min_split", "lognormal", "lognormal_split", "rayleigh", "rayleigh_split",
           "maxwell", "maxwell_split", "double_sided_maxwell", "double_sided_maxwell_split",
           "triangular", "triangular_split", "geometric", "geometric_split", "wald",
           "wald_split", "ball", "ball_split", "key_data", "wrap_key_data", "key_impl", "clone"]


# ----------------------------------------------------------------------------------------
# Shared argument handling
# ----------------------------------------------------------------------------------------
def _out_type(op, type, *params, complex_ok=False):
    """``type`` parsed, or the floating type of the parameters merged (f32 for Python
    numbers and for no parameters); it must be a float (or complex, where JAX takes one)."""
    if type is not None:
        t = check_type(type, op)
    else:
        t = None
        for p in params:
            if isinstance(p, Tensor):
                ft = T.to_floating(p.type)
                t = ft if t is None else T.merge(t, ft)
        t = T.F32 if t is None else t
    if not (t.is_float or (complex_ok and t.is_complex)):
        kinds = "a float or complex type" if complex_ok else "a floating-point type"
        raise TypeError(f"{op}: expected type to be {kinds}, got {t}")
    return t


def _param_shape(op, shape, **params):
    """JAX's ``_check_broadcast_shapes``: ``shape`` checked against the parameters, or
    (``None``) the parameters' shapes broadcast together."""
    if shape is None:
        out = ()
        for name, v in params.items():
            if isinstance(v, Tensor):
                try:
                    out = S.broadcast(out, v.shape)
                except ValueError:
                    raise ValueError(f"{op}: the parameters' shapes do not broadcast "
                                     f"together: {name} has shape {v.shape}") from None
        return out
    shape = check_shape(shape, op)
    _check_param_shapes(op, shape, **params)
    return shape


def _checked(op, key, shape, type, complex_ok=False, **params):
    """The checks the parameterized samplers share: the key, the parameters (Python
    numbers kept as they are), the result's type and its shape (from the parameters'
    where ``shape`` is None). Returns ``key, t, shape`` and the parameters in order."""
    key = check_key(key, op)
    params = {name: _tensorish(v, name, op) for name, v in params.items()}
    t = _out_type(op, type, *params.values(), complex_ok=complex_ok)
    shape = _param_shape(op, shape, **params)
    return (key, t, shape, *params.values())


def _param(v, t, shape=None):
    """A parameter in type ``t`` (Python numbers directly), broadcast to ``shape``."""
    v = O.tensor(v, type=t) if not isinstance(v, Tensor) else O.as_type(v, t)
    if shape is not None and v.shape != shape:
        v = O.broadcast(v, shape)
    return v


def _const(v, t):
    return O.tensor(v, type=t)


def _finfo(t):
    return ml_dtypes.finfo(t.dtype)


def _unif(key, shape, t, lo=0.0, hi=1.0, rolled=False):
    """``jax.random.uniform(key, shape, t, lo, hi)`` for Python bounds, real ``t``
    (``rolled``: the bits through JAX's CPU threefry loop, ``core._threefry2x32_rolled``)."""
    return _uniform(key, _const(lo, t), _const(hi, t), shape, t, rolled)


def standard_normal(key, shape, t):
    """``jax.random.normal(key, shape, t)`` for a parsed type ``t``, complex types as JAX
    draws them (two keys, scaled by ``1/sqrt(2)``), not as ``normal_split`` (Nx's
    ``shape + (2,)``). Not exported by the package: the samplers here and
    ``nxpy.nn.initializers`` draw with it.

    >>> import nxpy as nx
    >>> z = standard_normal(nx.random.key(0), (2,), nx.types.parse("c64"))
    >>> z.shape, str(z.type)
    ((2,), 'c64')
    """
    if not t.is_complex:
        return normal_split(key, shape=shape, type=t)
    rt = T.to_real(t)
    keys = split(key)
    re = O.as_type(normal_split(keys[0], shape=shape, type=rt), t)
    im = O.as_type(normal_split(keys[1], shape=shape, type=rt), t)
    z = O.add(re, O.multiply(O.tensor(1j, type=t), im))
    return O.divide(z, O.tensor(math.sqrt(2), type=t))


def _two_forms(split_fn, name):
    def plain(key, *args, **kwargs):
        k, nxt = _split2(key, name)
        return split_fn(k, *args, **kwargs), nxt
    plain.__name__ = plain.__qualname__ = name
    plain.__doc__ = (f"``({split_fn.__name__}(k1, ...), k0)`` where ``k0, k1 = split(key)``: "
                     f"the value and the next key.")
    return plain


# ----------------------------------------------------------------------------------------
# Samplers
# ----------------------------------------------------------------------------------------
def bernoulli_split(key, p=0.5, *, shape=None, mode="low", names=None) -> Tensor:
    """Booleans that are true with probability ``p`` (``jax.random.bernoulli(key, p, shape,
    mode)``): ``uniform < p`` in ``p``'s floating type (f32 for a Python number); mode
    ``"high"`` draws two uniforms for small ``p``. ``shape`` defaults to ``p``'s.

    >>> import nxpy as nx
    >>> bernoulli_split(nx.random.key(0), 0.3, shape=(6,)).tolist()
    [False, False, False, False, False, True]
    """
    op = "bernoulli_split"
    key = check_key(key, op)
    if mode not in ("high", "low"):
        raise ValueError(f"{op}: expected mode to be 'high' or 'low', got {mode!r}")
    p = _tensorish(p, "p", op)
    if isinstance(p, Tensor):
        if not p.type.is_float:
            raise TypeError(f"{op}: expected p to have a floating type, got {p.type}")
        t = p.type
    elif isinstance(p, (bool, int, complex)):
        raise TypeError(f"{op}: expected p to be a float or a float tensor, got {p!r}")
    else:
        t = T.F32
    shape = _param_shape(op, shape, p=p)
    pt = _param(p, t)
    if mode == "high":
        u = _unif(key, (2,) + shape, t)
        u1, u2 = u[0], u[1]
        u2 = O.multiply(u2, _const(2.0 ** -_finfo(t).nmant, t))
        out = O.less(u2, O.subtract(pt, u1))
    else:
        out = O.less(_unif(key, shape, t), pt)
    if out.shape != shape:
        out = O.broadcast(out, shape)
    return _finish(out, shape, names, op)


def categorical_split(key, logits, axis=-1, *, shape=None, replace=True, names=None) -> Tensor:
    """Indices drawn from the categorical distributions with ``logits`` (unnormalized log
    probabilities) along ``axis`` (``jax.random.categorical(key, logits, axis, shape,
    replace)``): the Gumbel-max trick (with replacement) or Gumbel top-k (without), s32.
    ``shape`` defaults to ``logits``' shape without ``axis``; a longer ``shape`` draws
    several samples per distribution (its leading dimensions).

    >>> import nxpy as nx
    >>> logits = nx.log(nx.tensor([0.1, 0.2, 0.7]))
    >>> categorical_split(nx.random.key(0), logits, shape=(5,)).tolist()
    [1, 2, 2, 1, 2]
    """
    op = "categorical_split"
    key = check_key(key, op)
    x = O.to_tensor(logits, "logits")
    if not x.type.is_float:
        raise TypeError(f"{op}: expected logits to have a floating type, got {x.type}")
    if x.rank == 0:
        raise ValueError(f"{op}: expected logits to have rank 1 or more, got a scalar")
    try:
        ax = S.normalize_axis(axis, x.rank, x.names)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op}: axis: {e}") from None
    batch = x.shape[:ax] + x.shape[ax + 1:]
    if shape is None:
        shape = batch
    else:
        shape = check_shape(shape, op)
        try:
            ok = len(shape) >= len(batch) and S.broadcast(shape, batch) == shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{op}: expected shape to end with the batch shape {batch} of "
                             f"logits (its shape without axis), got {shape}")
    prefix = shape[:len(shape) - len(batch)]
    if replace:
        neg = ax - x.rank
        lshape = list(shape[len(shape) - len(batch):])
        lshape.insert(neg % x.rank, x.shape[ax])
        g = gumbel_split(key, shape=prefix + tuple(lshape), type=x.type)
        xl = O.reshape(x, (1,) * len(prefix) + x.shape) if prefix else x
        out = O.argmax(O.add(g, xl), axis=len(prefix) + ax + (len(lshape) - x.rank))
        return _finish(out, shape, names, op)
    k = math.prod(prefix)
    if k > x.shape[ax]:
        raise ValueError(f"{op}: cannot take more samples without replacement ({k}) than "
                         f"there are categories ({x.shape[ax]})")
    y = O.add(x, gumbel_split(key, shape=x.shape, type=x.type))
    perm = [i for i in range(x.rank) if i != ax] + [ax]
    _, idx = O.top_k(O.transpose(y, perm), k=k)
    idx = O.transpose(idx, [idx.rank - 1] + list(range(idx.rank - 1)))
    return _finish(O.reshape(idx, shape), shape, names, op)


def truncated_normal_split(key, lower, upper, *, shape=None, type=None, names=None) -> Tensor:
    """Normal samples truncated to the open interval ``(lower, upper)``
    (``jax.random.truncated_normal(key, lower, upper, shape, dtype)``): a uniform between
    ``erf(lower/sqrt(2))`` and ``erf(upper/sqrt(2))`` mapped back by ``sqrt(2) erf_inv``,
    clipped inside the bounds. ``shape`` defaults to the bounds' shapes broadcast.

    >>> import nxpy as nx
    >>> [round(v, 5) for v in truncated_normal_split(nx.random.key(0), -1.0, 1.0,
    ...                                              shape=(3,)).tolist()]
    [0.86186, 0.94129, -0.29105]
    """
    op = "truncated_normal_split"
    key, t, shape, lower, upper = _checked(op, key, shape, type, lower=lower, upper=upper)
    sqrt2 = _const(math.sqrt(2), t)
    lo, hi = _param(lower, t), _param(upper, t)
    a = O.erf(O.divide(lo, sqrt2))
    b = O.erf(O.divide(hi, sqrt2))
    u = _uniform(key, a, b, shape, t)
    out = O.multiply(sqrt2, O.erf_inv(u))
    up, down = _const(math.inf, t), _const(-math.inf, t)
    out = O.min(O.max(out, O.next_after(lo, up)), O.next_after(hi, down))
    return _finish(out, shape, names, op)


def _no_param_sampler(name, draw, doc, *, complex_ok=False):
    def sampler(key, *, shape=(), type="f32", names=None) -> Tensor:
        op = f"{name}_split"
        key = check_key(key, op)
        shape = check_shape(shape, op)
        t = _out_type(op, type, complex_ok=complex_ok)
        return _finish(draw(key, shape, t), shape, names, op)
    sampler.__name__ = sampler.__qualname__ = f"{name}_split"
    sampler.__doc__ = doc
    return sampler


def _exponential(key, shape, t):
    return O.negate(O.log1p(O.negate(_unif(key, shape, t))))


def _laplace(key, shape, t):
    u = _unif(key, shape, t, -1.0 + float(_finfo(t).epsneg), 1.0)
    return O.multiply(O.sign(u), O.log1p(O.negate(O.abs(u))))


def _logistic(key, shape, t):
    x = _unif(key, shape, t, float(_finfo(t).tiny), 1.0)
    return O.subtract(O.log(x), O.log1p(O.negate(x)))


def _cauchy(key, shape, t):
    u = _unif(key, shape, t, float(_finfo(t).eps), 1.0)
    return O.tan(O.multiply(_const(math.pi, t), O.subtract(u, _const(0.5, t))))


def _jnp_sum(x, axis):
    """``jnp.sum(x, axis)``: 16-bit floats are summed in f32 and rounded back, as JAX."""
    if x.type.is_float and x.type.bits == 16:
        return O.as_type(O.sum(O.as_type(x, T.F32), axes=[axis]), x.type)
    return O.sum(x, axes=[axis])


def _maxwell(key, shape, t):
    # the bits as JAX's CPU program draws them: XLA then orders and contracts the norm's
    # multiply-adds as it does JAX's (docs/random.md)
    z = _normal_real(key, shape + (3,), t, rolled=True)
    return O.sqrt(_jnp_sum(O.multiply(z, z), len(shape)))  # jnp.linalg.norm(z, axis=-1)


exponential_split = _no_param_sampler("exponential", _exponential, """Standard exponential
    samples ``-log1p(-u)`` (``jax.random.exponential(key, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 5) for v in exponential_split(nx.random.key(0), shape=(3,)).tolist()]
    [2.95013, 3.84342, 0.4039]
    """)
laplace_split = _no_param_sampler("laplace", _laplace, """Standard Laplace samples
    ``sign(u) log1p(-|u|)``, ``u`` uniform in ``(-1, 1)``
    (``jax.random.laplace(key, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 5) for v in laplace_split(nx.random.key(0), shape=(3,)).tolist()]
    [-2.25698, -3.15028, 0.4086]
    """)
logistic_split = _no_param_sampler("logistic", _logistic, """Standard logistic samples
    ``log(u) - log1p(-u)`` (``jax.random.logistic(key, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 5) for v in logistic_split(nx.random.key(0), shape=(3,)).tolist()]
    [2.89638, 3.82177, -0.69784]
    """)
cauchy_split = _no_param_sampler("cauchy", _cauchy, """Standard Cauchy samples
    ``tan(pi (u - 1/2))`` (``jax.random.cauchy(key, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in cauchy_split(nx.random.key(0), shape=(3,)).tolist()]
    [6.0275, 14.8379, -0.5817]
    """)
maxwell_split = _no_param_sampler("maxwell", _maxwell, """Maxwell samples: the norm of
    three standard normals (``jax.random.maxwell(key, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in maxwell_split(nx.random.key(0), shape=(2,)).tolist()]
    [2.6311, 0.991]
    """)


def rademacher_split(key, *, shape=(), type="s32", names=None) -> Tensor:
    """-1 or 1 with equal probability, of any numeric ``type``
    (``jax.random.rademacher(key, shape, dtype)``: ``2 * bernoulli(key, 0.5) - 1``).

    >>> import nxpy as nx
    >>> rademacher_split(nx.random.key(0), shape=(5,)).tolist()
    [-1, -1, 1, 1, -1]
    """
    op = "rademacher_split"
    key = check_key(key, op)
    shape = check_shape(shape, op)
    t = check_type(type, op)
    if t.kind == "pred":
        raise TypeError(f"{op}: expected type to be a numeric type, got {t}")
    return _finish(_rademacher(key, shape, t, T.F32), shape, names, op)


def _rademacher(key, shape, t, ut, rolled=False):
    """``2 * bernoulli(key, 0.5) - 1`` in ``t``, the uniform drawn in ``ut`` (JAX's
    ``0.5``: f32, or f64 under x64)."""
    b = O.as_type(O.less(_unif(key, shape, ut, rolled=rolled), _const(0.5, ut)), t)
    return O.as_type(O.subtract(O.multiply(O.tensor(2, type=t), b), O.tensor(1, type=t)), t)


def permutation_split(key, x, axis=0, independent=False) -> Tensor:
    """A random permutation of ``range(x)`` (an int) or of ``x`` along ``axis``
    (``jax.random.permutation(key, x, axis, independent)``; the values of
    :func:`nxpy.random.shuffle`, without the next key).

    >>> import nxpy as nx
    >>> permutation_split(nx.random.key(42), 5).tolist()
    [4, 2, 3, 0, 1]
    """
    op = "permutation_split"
    key = check_key(key, op)
    if isinstance(x, bool):
        raise TypeError(f"{op}: expected x to be an int or a tensor of rank 1 or more, got "
                        f"{x!r}")
    if isinstance(x, (int, np.integer)):
        if x < 0:
            raise ValueError(f"{op}: expected x to be a non-negative int, got {x}")
        if axis not in (0, -1):
            raise ValueError(f"{op}: axis: expected 0 or -1 for an int x, got {axis!r}")
        x = O.iota((int(x),), type=S32)
    else:
        x = O.to_tensor(x, "x")
        if x.rank == 0:
            if not x.type.is_int:
                raise TypeError(f"{op}: expected x to be an integer or at least 1-dimensional, "
                                f"got a scalar of type {x.type}")
            raise ValueError(f"{op}: x as an integer must be a Python int (the size is "
                             f"static), got a scalar tensor")
    try:
        return shuffle(key, x, axis=axis, independent=independent)[0]
    except (ValueError, TypeError) as e:
        raise type(e)(str(e).replace("shuffle:", f"{op}:")) from None


def orthogonal_split(key, n, *, shape=(), type="f32", m=None, names=None) -> Tensor:
    """Random ``n x m`` matrices (``m`` defaults to ``n``) with orthonormal columns (rows
    when ``n < m``), uniformly distributed (Haar), batched by ``shape``
    (``jax.random.orthogonal(key, n, shape, dtype, m)``): the QR factorization of a
    normal matrix, columns signed by ``r``'s diagonal.

    >>> import nxpy as nx
    >>> q = orthogonal_split(nx.random.key(0), 3)
    >>> [round(v, 5) for v in nx.dot(q, [0], q, [0]).to_numpy().diagonal().tolist()]
    [1.0, 1.0, 1.0]
    """
    op = "orthogonal_split"
    key = check_key(key, op)
    for arg, v in (("n", n), ("m", m)):
        if v is None and arg == "m":
            continue
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise TypeError(f"{op}: expected {arg} to be a non-negative int, got {v!r}")
    n = int(n)
    m = n if m is None else int(m)
    shape = check_shape(shape, op)
    t = _out_type(op, type, complex_ok=True)
    big, small = max(n, m), min(n, m)
    z = standard_normal(key, shape + (big, small), t)
    if big == 0 or small == 0 or math.prod(shape) == 0:
        out = O.broadcast(_const(0, t), shape + (n, m))
        return _finish(out, shape + (n, m), names, op)
    q, r = O.linalg.qr(z)
    d = O.take_diagonal(r) if r.rank == 2 else _batched_diagonal(r)
    sign = _sign(d)
    x = O.multiply(q, O.new_axis(sign, len(shape)))
    if n < m:
        x = O.transpose(x, list(range(len(shape))) + [len(shape) + 1, len(shape)])
    return _finish(x, shape + (n, m), names, op)


def _batched_diagonal(r):
    k = min(r.shape[-2], r.shape[-1])
    eye = O.equal(O.iota((k, k), axis=0), O.iota((k, k), axis=1))
    sq = O.slice_along_axis(O.slice_along_axis(r, 0, k, axis=r.rank - 2), 0, k, axis=r.rank - 1)
    return O.sum(O.select(eye, sq, _const(0, r.type)), axes=[r.rank - 1])


def _sign(d):
    if not d.type.is_complex:
        return O.sign(d)
    a = O.abs(d)
    zero = O.equal(a, 0)
    safe = O.select(zero, O.tensor(1, type=a.type), a)
    return O.select(zero, O.tensor(0, type=d.type), O.divide(d, O.as_type(safe, d.type)))


def pareto_split(key, b, *, shape=None, type=None, names=None) -> Tensor:
    """Pareto samples of shape ``b``: ``exp(e / b)``, ``e`` standard exponential
    (``jax.random.pareto(key, b, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in pareto_split(nx.random.key(0), 3.0, shape=(3,)).tolist()]
    [2.6735, 3.6007, 1.1441]
    """
    op = "pareto_split"
    key, t, shape, b = _checked(op, key, shape, type, b=b)
    e = _exponential(key, shape, t)
    return _finish(O.exp(O.divide(e, _param(b, t))), shape, names, op)


def weibull_min_split(key, scale, concentration, *, shape=(), type="f32",
                      names=None) -> Tensor:
    """Weibull samples ``(-log1p(-u)) ** (1 / concentration) * scale``
    (``jax.random.weibull_min(key, scale, concentration, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in weibull_min_split(nx.random.key(0), 2.0, 0.5,
    ...                                         shape=(2,)).tolist()]
    [17.4065, 29.5438]
    """
    op = "weibull_min_split"
    key = check_key(key, op)
    scale = _tensorish(scale, "scale", op)
    conc = _tensorish(concentration, "concentration", op)
    shape = check_shape(shape, op)
    t = _out_type(op, type)
    u = _unif(key, shape, t)
    inv = O.divide(_const(1.0, t), _param(conc, t))
    out = O.multiply(O.pow(O.negate(O.log1p(O.negate(u))), inv), _param(scale, t))
    out_shape = S.broadcast(shape, out.shape)
    return _finish(out, out_shape, names, op)


def lognormal_split(key, sigma=1.0, *, shape=None, type=None, names=None) -> Tensor:
    """Log-normal samples ``exp(sigma * z)``, ``z`` standard normal
    (``jax.random.lognormal(key, sigma, shape, dtype)``; complex types as JAX draws them).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in lognormal_split(nx.random.key(0), shape=(3,)).tolist()]
    [5.0665, 7.5781, 0.6482]
    """
    op = "lognormal_split"
    key, t, shape, sigma = _checked(op, key, shape, type, complex_ok=True, sigma=sigma)
    z = standard_normal(key, shape, t)
    return _finish(O.exp(O.multiply(z, _param(sigma, t))), shape, names, op)


def rayleigh_split(key, scale, *, shape=None, type=None, names=None) -> Tensor:
    """Rayleigh samples ``scale * sqrt(-2 log u)``
    (``jax.random.rayleigh(key, scale, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in rayleigh_split(nx.random.key(0), 1.0, shape=(3,)).tolist()]
    [0.3279, 0.2081, 1.4844]
    """
    op = "rayleigh_split"
    key, t, shape, scale = _checked(op, key, shape, type, scale=scale)
    u = _unif(key, shape, t)
    s = _param(scale, t, shape)
    r = O.sqrt(O.multiply(O.log(u), _const(-2, t)))
    return _finish(O.multiply(s, r), shape, names, op)


def double_sided_maxwell_split(key, loc, scale, *, shape=(), type="f32",
                               names=None) -> Tensor:
    """Double-sided Maxwell samples ``sign * maxwell * scale + loc``
    (``jax.random.double_sided_maxwell(key, loc, scale, shape, dtype)``). As JAX, the
    result has shape ``shape + broadcast(loc, scale)`` (``shape`` alone when it is ``()``
    and the parameters are scalars).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in double_sided_maxwell_split(nx.random.key(0), 0.0, 1.0,
    ...                                                  shape=(2,)).tolist()]
    [1.5457, 1.5741]
    """
    op = "double_sided_maxwell_split"
    key = check_key(key, op)
    loc = _tensorish(loc, "loc", op)
    scale = _tensorish(scale, "scale", op)
    shape = check_shape(shape, op)
    t = _out_type(op, type)
    params = _param_shape(op, None, loc=loc, scale=scale)
    shape = (shape or params) + params
    keys = split(key)
    mx = _maxwell(keys[0], shape, t)
    # JAX's f64 needs x64, under which rademacher's 0.5 (so its uniform) is f64 too
    sign = _rademacher(keys[1], shape, t, T.F64 if t == T.F64 else T.F32, rolled=True)
    out = O.add(O.multiply(O.multiply(sign, mx), _param(scale, t)), _param(loc, t))
    return _finish(out, shape, names, op)


def triangular_split(key, left, mode, right, *, shape=None, type=None, names=None) -> Tensor:
    """Triangular samples on ``[left, right]`` with peak ``mode``, by inverting the CDF
    (``jax.random.triangular(key, left, mode, right, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in triangular_split(nx.random.key(0), 0.0, 0.5, 1.0,
    ...                                        shape=(3,)).tolist()]
    [0.8382, 0.8965, 0.4076]
    """
    op = "triangular_split"
    key, t, shape, left, mode, right = _checked(op, key, shape, type, left=left, mode=mode,
                                                right=right)
    lo, md, hi = (_param(v, t, shape) for v in (left, mode, right))
    fc = O.divide(O.subtract(md, lo), O.subtract(hi, lo))
    u = _unif(key, shape, t)
    out1 = O.add(lo, O.sqrt(O.multiply(O.multiply(u, O.subtract(hi, lo)), O.subtract(md, lo))))
    out2 = O.subtract(hi, O.sqrt(O.multiply(O.multiply(O.subtract(_const(1, t), u),
                                                       O.subtract(hi, lo)),
                                            O.subtract(hi, md))))
    return _finish(O.select(O.less(u, fc), out1, out2), shape, names, op)


def geometric_split(key, p, *, shape=None, type="s32", names=None) -> Tensor:
    """Geometric samples (trials up to the first success, from 1) with success probability
    ``p``: ``floor(log u / log1p(-p)) + 1`` (``jax.random.geometric(key, p, shape, dtype)``).
    ``p`` is drawn in its floating type (f32 for a Python number or an integer).

    >>> import nxpy as nx
    >>> geometric_split(nx.random.key(0), 0.3, shape=(5,)).tolist()
    [1, 1, 4, 3, 2]
    """
    op = "geometric_split"
    key = check_key(key, op)
    p = _tensorish(p, "p", op)
    t = check_type(type, op)
    if not t.is_int:
        raise TypeError(f"{op}: expected type to be an integer type, got {t}")
    pt = T.to_floating(p.type) if isinstance(p, Tensor) else T.F32
    if pt.is_complex:
        raise TypeError(f"{op}: expected p to be real, got type {pt}")
    shape = _param_shape(op, shape, p=p)
    u = _unif(key, shape, pt)
    u = O.select(O.equal(u, 0), _const(1, pt), u)
    lp = _param(p, pt)
    l1p = O.log1p(O.negate(lp))
    if l1p.shape != shape:
        l1p = O.broadcast(l1p, shape)
    g = O.add(O.floor(O.divide(O.log(u), l1p)), _const(1, pt))
    return _finish(O.as_type(g, t), shape, names, op)


def wald_split(key, mean, *, shape=None, type=None, names=None) -> Tensor:
    """Wald (inverse Gaussian) samples with ``mean`` (and scale 1), by Michael, Schucany
    and Haas' transformation (``jax.random.wald(key, mean, shape, dtype)``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in wald_split(nx.random.key(0), 1.0, shape=(3,)).tolist()]
    [0.3806, 0.4157, 0.4811]
    """
    op = "wald_split"
    key, t, shape, mean = _checked(op, key, shape, type, mean=mean)
    keys = split(key)
    mu = _jit_argument(_param(mean, t))
    if mu.shape != shape:
        mu = O.broadcast(mu, shape)
    v = _normal_real(keys[0], shape, t, rolled=True)  # JAX's CPU program: see _maxwell
    z = _unif(keys[1], shape, t, rolled=True)
    y = O.multiply(v, v)
    y_sq = O.multiply(y, y)
    mu_sq = O.multiply(mu, mu)
    sqrt_term = O.sqrt(O.add(O.multiply(O.multiply(_const(4, t), mu), y),
                             O.multiply(mu_sq, y_sq)))
    x = O.subtract(O.add(mu, O.divide(O.multiply(mu_sq, y), _const(2, t))),
                   O.multiply(O.divide(mu, _const(2, t)), sqrt_term))
    w = O.select(O.less_equal(z, O.divide(mu, O.add(mu, x))), x, O.divide(mu_sq, x))
    return _finish(w, shape, names, op)


def ball_split(key, d, p=2, *, shape=(), type="f32", names=None) -> Tensor:
    """Points uniformly distributed in the unit ``p``-norm ball of dimension ``d``,
    batched by ``shape`` (result ``shape + (d,)``; ``jax.random.ball(key, d, p, shape,
    dtype)``): generalized normal coordinates ``g`` and an exponential ``e``, scaled by
    ``(sum |g|**p + e) ** (-1/p)``.

    >>> import nxpy as nx
    >>> x = ball_split(nx.random.key(0), 3, shape=(100,))
    >>> x.shape, bool((nx.sum(x * x, axes=[1]) <= 1).all())
    ((100, 3), True)
    """
    op = "ball_split"
    key = check_key(key, op)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
        raise TypeError(f"{op}: expected d to be a non-negative int, got {d!r}")
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: expected p to be a number, got {p!r}")
    shape = check_shape(shape, op)
    t = _out_type(op, type)
    keys = split(key)
    g = generalized_normal_split(keys[0], float(p), shape=shape + (int(d),), type=t)
    e = _exponential(keys[1], shape, t)
    pt = _const(float(p), t)
    norm = O.add(_jnp_sum(O.pow(O.abs(g), pt), len(shape)), e)
    scale = O.pow(norm, O.divide(_const(1.0, t), pt))
    return _finish(O.divide(g, O.new_axis(scale, len(shape))), shape + (int(d),), names, op)


ball = _two_forms(ball_split, "ball")
bernoulli = _two_forms(bernoulli_split, "bernoulli")
categorical = _two_forms(categorical_split, "categorical")
truncated_normal = _two_forms(truncated_normal_split, "truncated_normal")
exponential = _two_forms(exponential_split, "exponential")
laplace = _two_forms(laplace_split, "laplace")
logistic = _two_forms(logistic_split, "logistic")
cauchy = _two_forms(cauchy_split, "cauchy")
rademacher = _two_forms(rademacher_split, "rademacher")
permutation = _two_forms(permutation_split, "permutation")
orthogonal = _two_forms(orthogonal_split, "orthogonal")
pareto = _two_forms(pareto_split, "pareto")
weibull_min = _two_forms(weibull_min_split, "weibull_min")
lognormal = _two_forms(lognormal_split, "lognormal")
rayleigh = _two_forms(rayleigh_split, "rayleigh")
maxwell = _two_forms(maxwell_split, "maxwell")
double_sided_maxwell = _two_forms(double_sided_maxwell_split, "double_sided_maxwell")
triangular = _two_forms(triangular_split, "triangular")
geometric = _two_forms(geometric_split, "geometric")
wald = _two_forms(wald_split, "wald")


# ----------------------------------------------------------------------------------------
# Key utilities: nxpy's keys are JAX's raw key data (u32[..., 2], threefry2x32)
# ----------------------------------------------------------------------------------------
def _keys(keys, op):
    keys = O.to_tensor(keys, "keys") if not isinstance(keys, Tensor) else keys
    if keys.rank < 1 or keys.shape[-1] != 2 or keys.type != U32:
        raise ValueError(f"{op}: expected keys of type u32 and shape (..., 2), got a tensor "
                         f"of type {keys.type} and shape {keys.shape}")
    return keys


def key_data(keys) -> Tensor:
    """The raw data of ``keys`` (``jax.random.key_data``): nxpy's keys are raw data
    already (u32, last axis 2), so this checks them and returns them.

    >>> import nxpy as nx
    >>> key_data(nx.random.key(7)).tolist()
    [0, 7]
    """
    return _keys(keys, "key_data")


def wrap_key_data(key_bits_array, *, impl=None) -> Tensor:
    """Keys from raw key data (``jax.random.wrap_key_data``): nxpy's keys are the raw data
    (threefry2x32, the only ``impl``), so this checks them and returns them.

    >>> import nxpy as nx
    >>> wrap_key_data(nx.tensor([0, 7], type="u32")).tolist()
    [0, 7]
    """
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"wrap_key_data: expected impl None or 'threefry2x32' (the only "
                         f"implementation), got {impl!r}")
    return _keys(key_bits_array, "wrap_key_data")


def key_impl(keys) -> str:
    """The name of the keys' generator (``jax.random.key_impl``): always
    ``"threefry2x32"``.

    >>> import nxpy as nx
    >>> key_impl(nx.random.key(0))
    'threefry2x32'
    """
    _keys(keys, "key_impl")
    return "threefry2x32"


def clone(key) -> Tensor:
    """``key`` itself (``jax.random.clone``): nxpy's tensors are immutable values, so a
    key can be reused as is (a clone is only needed in JAX for typed keys that are
    donated or consumed).

    >>> import nxpy as nx
    >>> clone(nx.random.key(3)).tolist()
    [0, 3]
    """
    return _keys(key, "clone")
