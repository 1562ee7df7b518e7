"""Importer rules for ``stablehlo.custom_call``, by target (:data:`CUSTOM_CALLS`), with
the LAPACK targets JAX emits for ``jnp.linalg``/``jax.scipy.linalg`` on CPU (and nxpy's
EXLA lowerings emit): ``lapack_?potrf_ffi``, ``?trsm``, ``?getrf``, ``?geqrf``,
``?orgqr``/``?ungqr``, ``?syevd``/``?heevd``, ``?gesdd`` (``?`` = ``s``, ``d``, ``c``,
``z``). Each becomes the nxpy primitive with LAPACK's outputs rebuilt around it, so the
program's own post-processing (JAX's NaN masks on ``info``, its ``tril``, its pivot
loop) runs unchanged:

* ``info`` results are zeros (nxpy's kernels either succeed, give NaNs, or raise),
  except ``getrf``'s: the 1-based index of the first zero pivot, as LAPACK's;
* ``getrf``'s packed LU and 1-based pivots come from ``nxpy.linalg.lu``
  (``permutation_to_pivots``);
* ``geqrf``'s Householder vectors and ``tau``, and ``orgqr``'s ``q``, are computed by
  the portable Householder QR of ``nxpy.defn.portable`` (LAPACK's conventions, so a
  padded or sliced ``geqrf`` result fed to ``orgqr`` gives LAPACK's ``q``).

>>> import numpy as np, jax, jax.numpy as jnp
>>> import nxpy as nx
>>> from nxpy.stablehlo import load
>>> a = np.array([[4.0, 2.0], [2.0, 5.0]], np.float32)
>>> load(jax.jit(jnp.linalg.cholesky).lower(a).as_text())(nx.tensor(a)).tolist()
[[2.0, 0.0], [1.0, 2.0]]
"""
from __future__ import annotations

import re

from .. import ops as nx, types as T
from ..defn.portable import householder, householder_q, permutation_to_pivots
from ..ops import linalg as L
from ..registry import rule_registrar
from .rules import _fail, register_op, rtype

__all__ = ["CUSTOM_CALLS", "register_custom_call"]

#: importer rules for ``stablehlo.custom_call`` by target name (exact names, or the
#: pattern ``lapack_?<routine>_ffi`` keyed as ``"lapack_<routine>"``):
#: ``rule(scope, op, config, *operands) -> tensor or list of tensors``
CUSTOM_CALLS: dict = {}

register_custom_call = rule_registrar(
    CUSTOM_CALLS, "register_custom_call", "a custom_call importer rule",
    """Decorator: ``rule(scope, op, config, *operands)`` for ``stablehlo.custom_call`` with
    the target names given (``config``: the backend_config dictionary, as Python values).""")

_LAPACK = re.compile(r"^lapack_[sdcz]([a-z]+)_ffi$")


def _config(op) -> dict:
    """The typed-FFI attribute dictionary (``mhlo.backend_config``, or ``backend_config``
    when it is a dictionary, as nxpy prints it), values as Python ints/strings."""
    for key in ("mhlo.backend_config", "backend_config"):
        d = op.attributes.get(key)
        if isinstance(d, dict) and d:
            out = {}
            for k, v in d.items():
                v = v[0] if isinstance(v, list) and v else v
                out[k] = chr(int(v)) if isinstance(v, int) else v
            return out
    return {}


@register_op("stablehlo.custom_call")
def _custom_call(scope, op, *args):
    target = str(op.attributes.get("call_target_name", ""))
    rule = CUSTOM_CALLS.get(target)
    if rule is None:
        m = _LAPACK.match(target)
        rule = CUSTOM_CALLS.get(f"lapack_{m.group(1)}") if m else None
    if rule is None:
        _fail(op, scope, f"nxpy has no equivalent of the custom call target {target!r}",
              unsupported=True)
    out = rule(scope, op, _config(op), *args)
    return out


def _zeros_info(op, i):
    shape, t = rtype(op, i)
    return nx.full(shape, 0, type=t)


def _typed(op, i, x):
    shape, t = rtype(op, i)
    x = nx.as_type(x, t) if x.type != t else x
    return nx.reshape(x, shape) if x.shape != shape else x


@register_custom_call("lapack_potrf")
def _potrf(scope, op, cfg, a):
    if cfg.get("uplo", "L") == "L":
        f = L.cholesky(a)
    else:  # U^H U = a, from the upper triangle
        f = L.adjoint(L.cholesky(L.adjoint(a)))
    return [_typed(op, 0, f), _zeros_info(op, 1)]


@register_custom_call("lapack_trsm")
def _trsm(scope, op, cfg, a, b):
    lower = cfg.get("uplo", "L") == "L"
    if cfg.get("diag", "N") == "U":  # unit diagonal: LAPACK does not read it
        diagonal = nx.equal(nx.iota(a.shape, axis=a.rank - 2), nx.iota(a.shape, axis=a.rank - 1))
        a = nx.select(diagonal, nx.full((), 1, type=a.type), a)
    trans = cfg.get("trans_x", "N")
    if trans == "C":
        a = nx.conjugate(a) if a.type.is_complex else a
    # a zero on the diagonal: LAPACK divides by it (infinities, NaNs) where nxpy's NumPy
    # kernel raises, as Nx's; such matrices get all-NaN solutions here, on every backend
    eye = nx.equal(nx.iota(a.shape, axis=a.rank - 2), nx.iota(a.shape, axis=a.rank - 1))
    zero = nx.any(nx.equal(nx.take_diagonal(a), 0), axes=[a.rank - 2])
    a = nx.select(nx.logical_and(eye, nx.broadcast(nx.new_axis(nx.new_axis(zero, -1), -1),
                                                   a.shape)), nx.full((), 1, type=a.type), a)
    x = L.triangular_solve(a, b, left_side=cfg.get("side", "L") == "L", lower=lower,
                           transform_a="none" if trans == "N" else "transpose")
    bad = zero
    for _ in range(x.rank - zero.rank):
        bad = nx.new_axis(bad, -1)
    x = nx.select(nx.broadcast(bad, x.shape), nx.full((), float("nan"), type=x.type), x)
    return _typed(op, 0, x)


@register_custom_call("lapack_getrf")
def _getrf(scope, op, cfg, a):
    if a.shape[-1] != a.shape[-2]:
        _fail(op, scope, f"getrf of a non-square matrix {a.shape} (nxpy's lu takes square "
                         f"matrices)", unsupported=True)
    p, low, u = L.lu(a)
    packed = nx.add(nx.tril(low, -1), u)
    r = p.rank
    perm = nx.argmax(nx.real(p) if p.type.is_complex else p, axis=r - 2)  # p[perm[c], c] = 1
    k = rtype(op, 1)[0][-1]
    ipiv = permutation_to_pivots(nx.as_type(perm, T.S32), k)
    # LAPACK's info: the 1-based index of the first exactly zero pivot, else 0
    zero = nx.equal(nx.take_diagonal(u), 0)
    first = nx.add(nx.argmax(nx.as_type(zero, T.S32), axis=zero.rank - 1), 1)
    info = nx.select(nx.any(zero, axes=[zero.rank - 1]), first, 0)
    return [_typed(op, 0, packed), _typed(op, 1, ipiv), _typed(op, 2, info)]


@register_custom_call("lapack_geqrf")
def _geqrf(scope, op, cfg, a):
    packed, tau = householder(a)
    return [_typed(op, 0, packed), _typed(op, 1, tau)]


@register_custom_call("lapack_orgqr", "lapack_ungqr")
def _orgqr(scope, op, cfg, packed, tau):
    return _typed(op, 0, householder_q(packed, tau))


@register_custom_call("lapack_syevd", "lapack_heevd")
def _syevd(scope, op, cfg, a):
    if cfg.get("uplo", "L") != "L":
        a = L.adjoint(a)
    w, v = L.eigh(a)
    return [_typed(op, 0, v), _typed(op, 1, w), _zeros_info(op, 2)]


@register_custom_call("lapack_gesdd")
def _gesdd(scope, op, cfg, a):
    mode = cfg.get("mode", "A")
    if a.type.is_complex:
        _fail(op, scope, "svd of complex matrices (nxpy's svd is real only, as Nx)",
              unsupported=True)
    u, s, vt = L.svd(a, full_matrices=mode == "A")
    outs = [a, s, u, vt]
    res = []
    for i, x in enumerate(outs):
        shape, t = rtype(op, i)
        res.append(_typed(op, i, x) if x.shape == shape else nx.full(shape, 0, type=t))
    return res + [_zeros_info(op, 4)]
