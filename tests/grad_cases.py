"""The gradient tests' table of cases (``CASES``), read by ``tests/test_grad.py`` (nxpy's
``grad`` against ``jax.grad`` and finite differences) and ``tests/test_jvp.py`` (``jvp``
against ``jax.jvp``): each case is one function written twice, side by side, with nxpy
and with ``jax.numpy`` / ``jax.lax``, and its arguments. The elementwise ops' cases are
generated from their records (``nxpy/testing/records.py``: the JAX twin, where the
gradient is drawn, its tolerance)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import custom_grad, grad, stop_grad, value_and_grad, while_loop
from nxpy.defn.transforms.grad_rules import GRAD_RULES
from nxpy.testing.records import ANY, BINARY_RECORDS, UNARY_RECORDS, Jax

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax import lax

F32, F64, F16, BF16 = np.float32, np.float64, np.float16, ml_dtypes.bfloat16

_rng = np.random.default_rng(20240611)


def u(lo, hi, shape=(2, 3), dtype=F32):
    """Uniform values in (lo, hi)."""
    return _rng.uniform(lo, hi, size=shape).astype(dtype)


def arr(values, dtype=F32):
    return np.array(values, dtype=dtype)


def s32(v):
    return np.array(v, dtype=np.int32)


#: a fixed cotangent-shaping weight, so elementwise cases do not all see g == 1
W = arr([[1.0, -2.0, 0.5], [3.0, 1.5, -1.0]])
_W_NX = nx.tensor(W)


def wsum(y):
    return nx.sum(y * W)


def jwsum(y):
    return jnp.sum(y * W)


# ----------------------------------------------------------------------------------------
# Trees (tuples, lists, dicts of leaves)
# ----------------------------------------------------------------------------------------
def tmap(f, t):
    if isinstance(t, dict):
        return {k: tmap(f, v) for k, v in t.items()}
    if isinstance(t, tuple):
        return tuple(tmap(f, v) for v in t)
    if isinstance(t, list):
        return [tmap(f, v) for v in t]
    return f(t)


def tleaves(t):
    out = []
    tmap(out.append, t)
    return out


def treplace(t, new_leaves):
    it = iter(new_leaves)
    return tmap(lambda _: next(it), t)


# ----------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Case:
    name: str
    nx: Callable
    jax: Callable
    args: tuple
    argnums: Any = 0
    has_aux: bool = False
    vag: bool = False      # value_and_grad instead of grad
    rtol: float = 1e-5
    atol: float = 1e-6
    fd: bool = True        # also checked against finite differences (smooth at args)
    ops: tuple = ()        # elementwise ops it covers (for the coverage test)
    x64: bool = False      # JAX's twin needs x64 (also set when an argument is f64)
    xfail: str = ""        # a known engine bug: every path (and the f.d. check) xfails

    def marks(self):
        return [pytest.mark.xfail(strict=True, reason=self.xfail)] if self.xfail else []


CASES: list[Case] = []


def case(name, nxf, jf, *args, **kw):
    CASES.append(Case(name, nxf, jf, tuple(args), **kw))



# --- elementwise: every differentiable UNARY op, inside its record's domain for gradients
J = Jax(jax)


def twin(records, op):
    """The JAX twin of ``op`` the gradient tests differentiate (its record's), as a
    function of arrays."""
    f = records[op].grad_jax or records[op].jax
    return lambda *xs: f(J, *xs)


_J_UNARY = {op: twin(UNARY_RECORDS, op) for op in UNARY_RECORDS}
for _op, _r in UNARY_RECORDS.items():
    if _op in GRAD_RULES:
        case(_op, lambda x, _f=getattr(nx, _op): wsum(_f(x)),
             lambda x, _f=_J_UNARY[_op]: jwsum(_f(x)),
             u(*(_r.grad or _r.domain or ANY)[:2]), ops=(_op,), rtol=_r.grad_rtol)

case("abs_at_zero_and_negative", lambda x: wsum(nx.abs(x)), lambda x: jwsum(jnp.abs(x)),
     arr([[0.0, -1.5, 2.0], [-0.0, 0.5, -3.0]]), ops=("abs",), fd=False)
case("cbrt_negative", lambda x: wsum(nx.cbrt(x)), lambda x: jwsum(jnp.cbrt(x)),
     u(-3, -0.3), ops=("cbrt",))
# ops without a gradient: their input's cotangent is zero (as JAX's)
case("floor_sign_ceil", lambda x: wsum(nx.floor(x) * x + nx.sign(x) * x + nx.ceil(x)),
     lambda x: jwsum(jnp.floor(x) * x + jnp.sign(x) * x + jnp.ceil(x)), u(-2.9, 2.9),
     fd=False)
case("round", lambda x: wsum(nx.round(x) * x),
     lambda x: jwsum(lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO) * x),
     arr([[0.3, 1.7, -1.2], [-2.6, 2.2, 0.9]]), fd=False)

# --- elementwise: every differentiable BINARY op ---------------------------------------
for _op, _r in BINARY_RECORDS.items():
    if _op in GRAD_RULES:
        _da, _db = _r.grad or _r.domain
        case(_op, lambda a, b, _f=getattr(nx, _op): wsum(_f(a, b)),
             lambda a, b, _f=twin(BINARY_RECORDS, _op): jwsum(_f(a, b)), u(*_da[:2]), u(*_db[:2]),
             argnums=_r.grad_args, ops=(_op,), rtol=_r.grad_rtol)

case("divide_negative_divisor", lambda a, b: wsum(a / b), lambda a, b: jwsum(a / b),
     u(-2, 2), u(-2, -0.5), argnums=(0, 1), ops=("divide",))
# integer exponents (JAX's rule: 0 where the exponent is 0, even at base 0); float
# exponents (JAX's rule as it comes: NaN at 0 ** 0.0, 0 * 0 ** -1), as JAX on every path
case("pow_integer_exponents_and_zero_base", lambda a, b: wsum(nx.pow(a, b)),
     lambda a, b: jwsum(lax.pow(a, b)),
     arr([[0.0, 1.0, 2.0], [0.5, 0.0, 3.0]]), s32([[0, 2, 0], [3, 2, 1]]), ops=("pow",),
     fd=False)
case("pow_zero_base_float_exponents", lambda a, b: wsum(nx.pow(a, b)),
     lambda a, b: jwsum(lax.pow(a, b)),
     arr([[0.0, 1.0, 2.0], [0.5, 0.0, 3.0]]), arr([[1.5, 2.0, 0.0], [3.0, 0.0, 1.0]]),
     argnums=(0, 1), ops=("pow",), fd=False)
case("pow_python_exponent", lambda x: wsum(x ** 3 + 2.0 ** x), lambda x: jwsum(x ** 3 + 2.0 ** x),
     u(-2, 2), ops=("pow",))
case("max_min_ties", lambda a, b: wsum(nx.max(a, b) * 2 + nx.min(a, b)),
     lambda a, b: jwsum(jnp.maximum(a, b) * 2 + jnp.minimum(a, b)),
     arr([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]]), arr([[1.0, 1.0, -1.0], [2.0, 0.0, 3.0]]),
     argnums=(0, 1), ops=("max", "min"), fd=False)
case("max_with_scalar_tie", lambda x: wsum(nx.max(x, 0.5)), lambda x: jwsum(jnp.maximum(x, 0.5)),
     arr([[0.5, 1.0, -1.0], [0.5, 0.0, 3.0]]), ops=("max",), fd=False)
case("broadcast_operands", lambda a, b, c: wsum(a * b + c / a),
     lambda a, b, c: jwsum(a * b + c / a),
     u(0.5, 2), u(-1, 1, (3,)), u(-1, 1, (2, 1)), argnums=(0, 1, 2))
case("scalar_operand", lambda x, s: wsum(nx.atan2(x, s) - s * x),
     lambda x, s: jwsum(jnp.arctan2(x, s) - s * x), u(-2, 2), arr(1.5), argnums=(0, 1))
case("softplus_composite", lambda x: wsum(nx.log1p(nx.exp(-nx.abs(x))) + nx.max(x, 0.0)),
     lambda x: jwsum(jnp.log1p(jnp.exp(-jnp.abs(x))) + jnp.maximum(x, 0.0)), u(0.2, 2) * W)

# --- reductions ----------------------------------------------------------------------------
case("sum_all", lambda x: nx.sum(nx.sin(x)), lambda x: jnp.sum(jnp.sin(x)), u(-2, 2))
case("sum_axis", lambda x: nx.sum(nx.sum(x * x, axes=[1]) * arr([1.0, -3.0])),
     lambda x: jnp.sum(jnp.sum(x * x, axis=1) * arr([1.0, -3.0])), u(-2, 2))
case("sum_keep_axes", lambda x: wsum(x / nx.sum(x, axes=[0], keep_axes=True)),
     lambda x: jwsum(x / jnp.sum(x, axis=0, keepdims=True)), u(0.5, 2))
case("sum_rank3", lambda x: nx.sum(nx.exp(nx.sum(x, axes=[0, 2]))),
     lambda x: jnp.sum(jnp.exp(jnp.sum(x, axis=(0, 2)))), u(-1, 1, (2, 3, 2)))
case("product_all", lambda x: nx.product(x), lambda x: jnp.prod(x), u(0.5, 1.5) * np.sign(W))
case("product_axis", lambda x: nx.sum(nx.product(x, axes=[1]) * arr([2.0, -1.0])),
     lambda x: jnp.sum(jnp.prod(x, axis=1) * arr([2.0, -1.0])), u(-2, 2))
case("product_keep_axes_rank3", lambda x: nx.sum(nx.product(x, axes=[0, 2], keep_axes=True) * x),
     lambda x: jnp.sum(jnp.prod(x, axis=(0, 2), keepdims=True) * x), u(0.5, 1.5, (2, 3, 2)))
case("product_one_zero", lambda x: nx.sum(nx.product(x, axes=[1]) * arr([2.0, -1.0])),
     lambda x: jnp.sum(jnp.prod(x, axis=1) * arr([2.0, -1.0])),
     arr([[1.5, 0.0, -2.0], [0.5, 3.0, 0.0]]))
case("product_two_zeros", lambda x: nx.product(x), lambda x: jnp.prod(x),
     arr([[1.5, 0.0, -2.0], [0.5, 3.0, 0.0]]))
case("product_of_1_to_4", lambda x: nx.product(x) + nx.sum(nx.product(x, axes=[0])),
     lambda x: jnp.prod(x) + jnp.sum(jnp.prod(x, axis=0)), arr([[1.0, 2.0], [3.0, 4.0]]))
case("reduce_max_axis", lambda x: nx.sum(nx.reduce_max(x, axes=[1]) * arr([2.0, -1.0])),
     lambda x: jnp.sum(jnp.max(x, axis=1) * arr([2.0, -1.0])), u(-2, 2))
case("reduce_max_ties", lambda x: nx.sum(nx.reduce_max(x, axes=[1]) * arr([2.0, -1.0])),
     lambda x: jnp.sum(jnp.max(x, axis=1) * arr([2.0, -1.0])),
     arr([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), fd=False)
case("reduce_max_all_ties_keep_axes", lambda x: nx.sum(nx.reduce_max(x, keep_axes=True) * x),
     lambda x: jnp.sum(jnp.max(x, keepdims=True) * x),
     arr([[1.0, 3.0, 3.0], [2.0, 3.0, 0.0]]), fd=False)
case("reduce_min_ties", lambda x: nx.sum(nx.reduce_min(x, axes=[0]) * arr([2.0, -1.0, 1.0])),
     lambda x: jnp.sum(jnp.min(x, axis=0) * arr([2.0, -1.0, 1.0])),
     arr([[1.0, -3.0, 0.5], [1.0, -2.0, 0.5]]), fd=False)
case("reduce_min_all", lambda x: nx.reduce_min(x * x), lambda x: jnp.min(x * x), u(0.5, 2))
case("mean", lambda x: nx.mean(x * x), lambda x: jnp.mean(x * x), u(-2, 2))
case("mean_axes_keep", lambda x: wsum(x - nx.mean(x, axes=[0], keep_axes=True)),
     lambda x: jwsum(x - jnp.mean(x, axis=0, keepdims=True)), u(-2, 2))
case("x_at_argmax", lambda x: nx.sum(nx.select(
    nx.equal(nx.iota(x.shape, axis=1), nx.argmax(x, axis=1, keep_axis=True)), x, 0.0)),
     lambda x: jnp.sum(jnp.where(lax.broadcasted_iota(jnp.int32, x.shape, 1)
                                 == jnp.argmax(x, axis=1, keepdims=True), x, 0.0)), u(-2, 2))
case("x_at_argmin_ties", lambda x: nx.sum(nx.select(
    nx.equal(nx.iota(x.shape, axis=0), nx.argmin(x, axis=0, keep_axis=True)), x * x, 0.0)),
     lambda x: jnp.sum(jnp.where(lax.broadcasted_iota(jnp.int32, x.shape, 0)
                                 == jnp.argmin(x, axis=0, keepdims=True), x * x, 0.0)),
     arr([[1.0, -3.0, 0.5], [1.0, -2.0, 0.5]]), fd=False)
case("logsumexp", lambda x: nx.sum(nx.log(nx.sum(nx.exp(
    x - nx.reduce_max(x, axes=[1], keep_axes=True)), axes=[1])) + nx.reduce_max(x, axes=[1])),
     lambda x: jnp.sum(jax.nn.logsumexp(x, axis=1)), u(-2, 2))
case("softmax_cross_entropy", lambda x: -nx.sum(W * (x - nx.log(nx.sum(nx.exp(x), axes=[1],
                                                                             keep_axes=True)))),
     lambda x: -jnp.sum(W * jax.nn.log_softmax(x, axis=1)), u(-2, 2))

# --- contractions ------------------------------------------------------------------------
case("matmul", lambda a, b: nx.sum(nx.sin(a @ b)), lambda a, b: jnp.sum(jnp.sin(a @ b)),
     u(-1, 1, (2, 3)), u(-1, 1, (3, 4)), argnums=(0, 1))
case("dot_vectors", lambda a, b: nx.dot(a, b) ** 2, lambda a, b: jnp.dot(a, b) ** 2,
     u(-1, 1, (3,)), u(-1, 1, (3,)), argnums=(0, 1))
case("dot_matrix_vector", lambda a, b: nx.sum(nx.exp(nx.dot(a, b))),
     lambda a, b: jnp.sum(jnp.exp(jnp.dot(a, b))), u(-1, 1, (2, 3)), u(-1, 1, (3,)),
     argnums=(0, 1))
case("dot_contract_first_axes", lambda a, b: nx.sum(nx.tanh(nx.dot(a, [0], b, [0]))),
     lambda a, b: jnp.sum(jnp.tanh(lax.dot_general(a, b, (((0,), (0,)), ((), ()))))),
     u(-1, 1, (2, 3)), u(-1, 1, (2, 4)), argnums=(0, 1))
case("dot_outer", lambda a, b: nx.sum(nx.dot(a, [], b, []) * W),
     lambda a, b: jnp.sum(lax.dot_general(a, b, (((), ()), ((), ()))) * W),
     u(-1, 1, (2,)), u(-1, 1, (3,)), argnums=(0, 1))
case("dot_batch", lambda a, b: nx.sum(nx.sin(nx.dot(a, [2], [0], b, [1], [0]))),
     lambda a, b: jnp.sum(jnp.sin(lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))))),
     u(-1, 1, (2, 3, 4)), u(-1, 1, (2, 4, 2)), argnums=(0, 1))
case("dot_batch_inner_axes_two_contractions",
     lambda a, b: nx.sum(nx.cos(nx.dot(a, [0, 2], [1], b, [2, 0], [1]))),
     lambda a, b: jnp.sum(jnp.cos(lax.dot_general(a, b, (((0, 2), (2, 0)), ((1,), (1,)))))),
     u(-1, 1, (3, 2, 4, 2)), u(-1, 1, (4, 2, 3)), argnums=(0, 1))
case("dot_two_batch_axes", lambda a, b: nx.sum(nx.dot(a, [1], [0, 3], b, [0], [1, 2]) ** 2),
     lambda a, b: jnp.sum(lax.dot_general(a, b, (((1,), (0,)), ((0, 3), (1, 2)))) ** 2),
     u(-1, 1, (2, 3, 2, 2)), u(-1, 1, (3, 2, 2, 2)), argnums=(0, 1))
case("dot_unsorted_contract_and_batch_axes",
     lambda a, b: nx.sum(nx.sin(nx.dot(a, [3, 0], [2, 1], b, [1, 0], [3, 2]))),
     lambda a, b: jnp.sum(jnp.sin(lax.dot_general(a, b, (((3, 0), (1, 0)), ((2, 1), (3, 2)))))),
     u(-1, 1, (2, 3, 2, 4)), u(-1, 1, (2, 4, 3, 2)), argnums=(0, 1))
case("matmul_batched", lambda a, b: nx.sum(nx.tanh(a @ b)), lambda a, b: jnp.sum(jnp.tanh(a @ b)),
     u(-1, 1, (2, 2, 3)), u(-1, 1, (2, 3, 2)), argnums=(0, 1))
case("mlp_layer", lambda w, b, x: nx.mean(nx.sigmoid(x @ w + b) ** 2),
     lambda w, b, x: jnp.mean(jax.nn.sigmoid(x @ w + b) ** 2),
     u(-1, 1, (3, 2)), u(-1, 1, (2,)), u(-1, 1, (4, 3)), argnums=(0, 1))

# --- shapes -------------------------------------------------------------------------------
case("broadcast_rank1", lambda x: wsum(nx.broadcast(nx.exp(x), (2, 3))),
     lambda x: jwsum(jnp.broadcast_to(jnp.exp(x), (2, 3))), u(-1, 1, (3,)))
case("broadcast_axes", lambda x: wsum(nx.broadcast(x * x, (2, 3), axes=[0])),
     lambda x: jwsum(lax.broadcast_in_dim(x * x, (2, 3), (0,))), u(-1, 1, (2,)))
case("broadcast_size_one", lambda x: wsum(nx.broadcast(nx.sin(x), (2, 3))),
     lambda x: jwsum(jnp.broadcast_to(jnp.sin(x), (2, 3))), u(-1, 1, (2, 1)))
case("broadcast_rank3", lambda x: nx.sum(nx.broadcast(x, (2, 2, 3), axes=[0, 2]) * x[:, None, :]),
     lambda x: jnp.sum(lax.broadcast_in_dim(x, (2, 2, 3), (0, 2)) * x[:, None, :]), u(-1, 1))
case("reshape", lambda x: wsum(nx.reshape(nx.reshape(x, (3, 2)) * arr([1.0, 2.0]), (2, 3))),
     lambda x: jwsum(jnp.reshape(jnp.reshape(x, (3, 2)) * arr([1.0, 2.0]), (2, 3))), u(-1, 1))
case("new_axis_squeeze", lambda x: wsum(nx.squeeze(nx.new_axis(x, 1) * 2.0)),
     lambda x: jwsum(jnp.squeeze(x[:, None, :] * 2.0)), u(-1, 1))
case("transpose", lambda x: nx.sum(nx.transpose(x, [2, 0, 1]) * nx.iota((2, 2, 3), type="f32")),
     lambda x: jnp.sum(jnp.transpose(x, (2, 0, 1))
                       * jnp.arange(12, dtype=jnp.float32).reshape(2, 2, 3)), u(-1, 1, (2, 3, 2)))
case("transpose_T", lambda x: nx.sum(nx.sin(x.T @ x)), lambda x: jnp.sum(jnp.sin(x.T @ x)),
     u(-1, 1))
case("pad_interior", lambda x, v: nx.sum(nx.sin(nx.pad(x, v, [(1, 2, 1), (0, 1, 2)]))),
     lambda x, v: jnp.sum(jnp.sin(lax.pad(x, v, [(1, 2, 1), (0, 1, 2)]))),
     u(-1, 1), arr(0.5), argnums=(0, 1))
case("pad_negative", lambda x, v: nx.sum(nx.exp(nx.pad(x, v, [(-1, 1, 0), (2, -1, 1)]))),
     lambda x, v: jnp.sum(jnp.exp(lax.pad(x, v, [(-1, 1, 0), (2, -1, 1)]))),
     u(-1, 1), arr(0.25), argnums=(0, 1))
case("pad_negative_interior", lambda x: nx.sum(nx.pad(x * x, 0.0, [(0, -2, 1), (-2, 0, 2)])),
     lambda x: jnp.sum(lax.pad(x * x, 0.0, [(0, -2, 1), (-2, 0, 2)])), u(-1, 1, (3, 3)))
case("slice", lambda x: nx.sum(nx.slice(x, [0, 1], [2, 2]) ** 2),
     lambda x: jnp.sum(lax.slice(x, (0, 1), (2, 3)) ** 2), u(-1, 1))
case("slice_strided", lambda x: nx.sum(nx.sin(nx.slice(x, [0, 1], [4, 4], [2, 3]))),
     lambda x: jnp.sum(jnp.sin(lax.slice(x, (0, 1), (4, 5), (2, 3)))), u(-1, 1, (4, 5)))
case("index_syntax", lambda x: nx.sum(nx.exp(x[1:, ::2])), lambda x: jnp.sum(jnp.exp(x[1:, ::2])),
     u(-1, 1, (3, 5)))
case("dynamic_slice", lambda x, i, j: nx.sum(nx.sin(nx.slice(x, [i, j], [2, 2]))),
     lambda x, i, j: jnp.sum(jnp.sin(lax.dynamic_slice(x, (i, j), (2, 2)))),
     u(-1, 1, (4, 5)), s32(1), s32(2))
case("dynamic_slice_clamped", lambda x, i, j: nx.sum(nx.exp(nx.slice(x, [i, j], [2, 3]))),
     lambda x, i, j: jnp.sum(jnp.exp(lax.dynamic_slice(x, (i, j), (2, 3)))),
     u(-1, 1, (4, 5)), s32(3), s32(4))
# a negative start is clamped to 0 (XLA, Nx); JAX's dynamic_slice would count it from the
# end, so the JAX twin clamps explicitly
case("dynamic_slice_negative_start", lambda x, i, j: nx.sum(nx.exp(nx.slice(x, [i, j], [2, 3]))),
     lambda x, i, j: jnp.sum(jnp.exp(lax.dynamic_slice(x, (i, jnp.maximum(j, 0)), (2, 3)))),
     u(-1, 1, (4, 5)), s32(1), s32(-2))
case("dynamic_slice_strided", lambda x, i: nx.sum(nx.cos(nx.slice(x, [i, 1], [3, 4], [2, 3]))),
     lambda x, i: jnp.sum(jnp.cos(lax.dynamic_slice(x, (i, 1), (3, 4))[::2, ::3])),
     u(-1, 1, (4, 5)), s32(5))
case("put_slice", lambda x, v: nx.sum(nx.sin(nx.put_slice(x, [1, 1], v))),
     lambda x, v: jnp.sum(jnp.sin(lax.dynamic_update_slice(x, v, (1, 1)))),
     u(-1, 1, (3, 4)), u(-1, 1, (2, 2)), argnums=(0, 1))
case("put_slice_dynamic_clamped", lambda x, v, i: nx.sum(nx.exp(nx.put_slice(x, [i, 0], v))),
     lambda x, v, i: jnp.sum(jnp.exp(lax.dynamic_update_slice(x, v, (i, 0)))),
     u(-1, 1, (3, 4)), u(-1, 1, (2, 3)), s32(7), argnums=(0, 1))
case("concatenate", lambda a, b, c: nx.sum(nx.sin(nx.concatenate([a, b, c], axis=1)) * 2),
     lambda a, b, c: jnp.sum(jnp.sin(jnp.concatenate([a, b, c], axis=1)) * 2),
     u(-1, 1, (2, 1)), u(-1, 1, (2, 3)), u(-1, 1, (2, 2)), argnums=(0, 1, 2))
case("concatenate_same_operand", lambda a: nx.sum(nx.concatenate([a, a * a], axis=0) * 3),
     lambda a: jnp.sum(jnp.concatenate([a, a * a], axis=0) * 3), u(-1, 1))
case("stack", lambda a, b: nx.sum(nx.exp(nx.stack([a, b], axis=1)) * arr([1.0, -1.0])[:, None]),
     lambda a, b: jnp.sum(jnp.exp(jnp.stack([a, b], axis=1)) * arr([1.0, -1.0])[:, None]),
     u(-1, 1), u(-1, 1), argnums=(0, 1))
case("reverse", lambda x: wsum(nx.reverse(x, [0, 1]) * x),
     lambda x: jwsum(lax.rev(x, (0, 1)) * x), u(-1, 1))
case("reverse_one_axis", lambda x: wsum(nx.sin(nx.reverse(x, [1]))),
     lambda x: jwsum(jnp.sin(lax.rev(x, (1,)))), u(-1, 1))

# --- select, clip ---------------------------------------------------------------------------
case("select", lambda x: wsum(nx.select(x > 0, x * x, nx.sin(x))),
     lambda x: jwsum(jnp.where(x > 0, x * x, jnp.sin(x))), u(-2, 2))
case("select_branches_broadcast", lambda p, a, b: wsum(nx.select(p, a, b) * 2),
     lambda p, a, b: jwsum(jnp.where(p, a, b) * 2),
     np.array([[True, False, True], [False, False, True]]), u(-1, 1), arr(0.5),
     argnums=(1, 2))
case("clip_constant_bounds", lambda x: wsum(nx.clip(x, -0.5, 0.5) * x),
     lambda x: jwsum(jnp.clip(x, -0.5, 0.5) * x),
     arr([[-0.5, 0.5, 0.2], [-1.0, 1.0, 0.5]]), fd=False)
case("clip_tensor_bounds_at_ties", lambda x, lo, hi: wsum(nx.clip(x, lo, hi)),
     lambda x, lo, hi: jwsum(jnp.clip(x, lo, hi)),
     arr([[-0.5, 0.5, 0.2], [-1.0, 1.0, 0.3]]), arr([[-0.5, -0.5, 0.3], [0.0, 1.0, 0.3]]),
     arr([[0.5, 0.5, 0.3], [0.5, 1.0, 0.3]]), argnums=(0, 1, 2), fd=False)
case("clip_scalar_bounds", lambda x, lo, hi: wsum(nx.clip(x, lo, hi)),
     lambda x, lo, hi: jwsum(jnp.clip(x, lo, hi)),
     arr([[-0.5, 0.5, 0.2], [-1.0, 1.0, 0.3]]), arr(-0.5), arr(0.5), argnums=(0, 1, 2), fd=False)
case("clip_inverted_bounds", lambda x, lo, hi: wsum(nx.clip(x, lo, hi)),
     lambda x, lo, hi: jwsum(jnp.clip(x, lo, hi)),
     arr([[-0.5, 0.5, 0.2], [-1.0, 1.0, 0.3]]), arr([[1.0, 0.5, 0.2], [0.0, 2.0, 0.5]]),
     arr([[0.0, 0.5, 0.2], [-1.0, 1.5, 0.4]]), argnums=(0, 1, 2), fd=False)
case("clip_smooth", lambda x: wsum(nx.clip(x, -0.7, 0.6) ** 2),
     lambda x: jwsum(jnp.clip(x, -0.7, 0.6) ** 2), arr([[-0.5, 0.4, 0.2], [-1.0, 1.0, 0.3]]))

# --- windows ------------------------------------------------------------------------------


def jwindow(x, op, init, window, strides=None, padding="VALID", dilation=None):
    n = len(window)
    return lax.reduce_window(x, init, op, window, strides or (1,) * n, padding,
                             window_dilation=dilation or (1,) * n)


case("window_sum", lambda x: nx.sum(nx.sin(nx.window_sum(x, (2, 2)))),
     lambda x: jnp.sum(jnp.sin(jwindow(x, lax.add, 0.0, (2, 2)))), u(-1, 1, (4, 5)))
case("window_sum_strides_padding_dilation",
     lambda x: nx.sum(nx.sin(nx.window_sum(x, (2, 2), strides=(2, 1), padding=[(1, 0), (2, 1)],
                                           window_dilations=(1, 2)))),
     lambda x: jnp.sum(jnp.sin(jwindow(x, lax.add, 0.0, (2, 2), (2, 1), [(1, 0), (2, 1)],
                                       (1, 2)))), u(-1, 1, (4, 5)))
case("window_sum_same_stride3", lambda x: nx.sum(nx.window_sum(x * x, (3, 2), strides=(3, 2),
                                                                padding="same") * 1.5),
     lambda x: jnp.sum(jwindow(x * x, lax.add, 0.0, (3, 2), (3, 2), "SAME") * 1.5),
     u(-1, 1, (5, 5)))
case("window_max", lambda x: nx.sum(nx.sin(nx.window_max(x, (2, 2)))),
     lambda x: jnp.sum(jnp.sin(jwindow(x, lax.max, -jnp.inf, (2, 2)))), u(-1, 1, (4, 5)))
case("window_max_strides_padding",
     lambda x: nx.sum(nx.exp(nx.window_max(x, (2, 3), strides=(2, 2), padding=[(1, 1), (0, 1)]))),
     lambda x: jnp.sum(jnp.exp(jwindow(x, lax.max, -jnp.inf, (2, 3), (2, 2), [(1, 1), (0, 1)]))),
     u(-1, 1, (5, 5)))


def jwindow_max_dilated(x, window, strides, padding, dilation):
    """window_max as the max over the window's strided slices (JAX has no VJP for a
    dilated max window)."""
    xp = lax.pad(x, -jnp.inf, [(lo, hi, 0) for lo, hi in padding])
    out = [(d + lo + hi - (w - 1) * r - 1) // s + 1
           for d, (lo, hi), w, r, s in zip(x.shape, padding, window, dilation, strides)]
    picks = []
    for off in np.ndindex(*window):
        start = [k * r for k, r in zip(off, dilation)]
        limit = [b + (n - 1) * s + 1 for b, n, s in zip(start, out, strides)]
        picks.append(lax.slice(xp, start, limit, strides))
    return jnp.max(jnp.stack(picks), axis=0)


case("window_max_strides_padding_dilation",
     lambda x: nx.sum(nx.exp(nx.window_max(x, (2, 2), strides=(2, 2), padding=[(1, 1), (0, 1)],
                                           window_dilations=(2, 1)))),
     lambda x: jnp.sum(jnp.exp(jwindow_max_dilated(x, (2, 2), (2, 2), [(1, 1), (0, 1)],
                                                   (2, 1)))), u(-1, 1, (5, 5)))
case("window_max_ties", lambda x: nx.sum(nx.window_max(x, (2, 3), strides=(1, 2)) * 2),
     lambda x: jnp.sum(jwindow(x, lax.max, -jnp.inf, (2, 3), (1, 2)) * 2),
     arr([[1.0, 3.0, 3.0, 0.0, 3.0], [3.0, 2.0, 3.0, 3.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0]]),
     fd=False)
case("window_max_1d_overlapping",
     lambda x: nx.sum(nx.window_max(x, (3,)) * arr([1.0, 2.0, 3.0, 4.0])),
     lambda x: jnp.sum(jwindow(x, lax.max, -jnp.inf, (3,)) * arr([1.0, 2.0, 3.0, 4.0])),
     u(-1, 1, (6,)))

# --- conversions --------------------------------------------------------------------------
case("as_type_bf16_roundtrip", lambda x: wsum(nx.as_type(nx.as_type(x, "bf16") * 3, "f32")),
     lambda x: jwsum((x.astype(jnp.bfloat16) * 3).astype(jnp.float32)), u(-1, 1), fd=False)
case("as_type_to_integer_stops_gradient", lambda x: wsum(nx.as_type(x, "s32") * x),
     lambda x: jwsum(x.astype(jnp.int32) * x), u(-3, 3), fd=False)
case("as_type_f16_compute", lambda x: nx.as_type(nx.sum(nx.exp(nx.as_type(x, "f16"))), "f32"),
     lambda x: jnp.sum(jnp.exp(x.astype(jnp.float16))).astype(jnp.float32), u(-1, 1),
     rtol=2e-3, atol=1e-3, fd=False)

# --- control flow -------------------------------------------------------------------------
case("cond_true_branch",
     lambda x, y: nx.cond(nx.sum(x) > 0, lambda: nx.sum(nx.sin(x) * y), lambda: nx.sum(x * x)),
     lambda x, y: lax.cond(jnp.sum(x) > 0, lambda: jnp.sum(jnp.sin(x) * y), lambda: jnp.sum(x * x)),
     u(0.1, 1), u(-1, 1), argnums=(0, 1))
case("cond_false_branch",
     lambda x, y: nx.cond(nx.sum(x) > 0, lambda: nx.sum(nx.sin(x) * y), lambda: nx.sum(x * x)),
     lambda x, y: lax.cond(jnp.sum(x) > 0, lambda: jnp.sum(jnp.sin(x) * y), lambda: jnp.sum(x * x)),
     u(-1, -0.1), u(-1, 1), argnums=(0, 1))
case("cond_tuple_result",
     lambda x: (lambda r: nx.sum(r[0] * r[1]))(
         nx.cond(x[0, 0] < 0.5, lambda: (nx.exp(x), x * 2.0), lambda: (x, nx.cos(x)))),
     lambda x: (lambda r: jnp.sum(r[0] * r[1]))(
         lax.cond(x[0, 0] < 0.5, lambda: (jnp.exp(x), x * 2.0), lambda: (x, jnp.cos(x)))),
     u(-1, 1))
case("fori_loop",
     lambda x, x0: nx.sum(nx.fori_loop(0, 4, lambda i, v: nx.sin(v) * x + i, x0)),
     lambda x, x0: jnp.sum(lax.fori_loop(0, 4, lambda i, v: jnp.sin(v) * x + i, x0)),
     u(-1, 1), u(-1, 1), argnums=(0, 1))
case("fori_loop_tuple_state",
     lambda x: nx.sum(nx.fori_loop(1, 4, lambda i, s: (s[0] * s[1], s[1] + nx.sin(s[0]) * i),
                                   (x, x * 0.5))[0]),
     lambda x: jnp.sum(lax.fori_loop(1, 4, lambda i, s: (s[0] * s[1], s[1] + jnp.sin(s[0]) * i),
                                     (x, x * 0.5))[0]), u(-1, 1))
case("while_loop_counting",
     lambda x: nx.sum(while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * x + 1.0),
                                 (0, x))[1]),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, v: v * x + 1.0, x)), u(-1, 1))
case("while_loop_counting_down_by_3",
     lambda x: nx.sum(while_loop(lambda s: s["n"] > 0,
                                 lambda s: {"n": s["n"] - 3, "v": nx.tanh(s["v"]) + x},
                                 {"n": 10, "v": x * 2.0})["v"]),
     lambda x: jnp.sum(lax.fori_loop(0, 4, lambda i, v: jnp.tanh(v) + x, x * 2.0)), u(-1, 1))
case("while_loop_max_iterations_stops_early",
     lambda x: nx.sum(while_loop(lambda v: nx.sum(v) < 10.0, lambda v: v * 1.5 + x, x,
                                 max_iterations=8)),
     lambda x: jnp.sum(lax.fori_loop(0, 8, lambda i, v: jnp.where(jnp.sum(v) < 10.0,
                                                                   v * 1.5 + x, v), x)),
     u(0.2, 0.5))
case("while_loop_max_iterations_hits_cap",
     lambda x: nx.sum(while_loop(lambda v: nx.sum(v) < 1e6, lambda v: v * 1.5 + x, x,
                                 max_iterations=3)),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, v: v * 1.5 + x, x)), u(0.2, 0.5))
case("fori_loop_nested",
     lambda x: nx.sum(nx.fori_loop(0, 2, lambda i, v: nx.fori_loop(0, 3, lambda j, w: nx.sin(w) * x,
                                                                  v), x)),
     lambda x: jnp.sum(lax.fori_loop(0, 2, lambda i, v: lax.fori_loop(0, 3, lambda j, w:
                                                                      jnp.sin(w) * x, v), x)),
     u(-1, 1))
case("fori_loop_with_cond",
     lambda x: nx.sum(nx.fori_loop(0, 3, lambda i, v: nx.cond(i == 1, lambda: v * v,
                                                               lambda: nx.sin(v) + x), x)),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, v: lax.cond(i == 1, lambda: v * v,
                                                                 lambda: jnp.sin(v) + x), x)),
     u(-1, 1))
case("fori_loop_swapping_carries",
     lambda x: nx.sum(nx.fori_loop(0, 3, lambda i, s: (s[1] * 2.0, nx.sin(s[0])), (x, x * x))[0]),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, s: (s[1] * 2.0, jnp.sin(s[0])),
                                     (x, x * x))[0]), u(-1, 1))
case("while_loop_counter_and_max_iterations",
     lambda x: nx.sum(while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, s[1] * x), (0, x),
                                 max_iterations=3)[1]),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, v: v * x, x)), u(-1, 1))
case("fori_loop_matrix_power",
     lambda w: nx.sum(nx.fori_loop(0, 3, lambda i, v: nx.tanh(v @ w), nx.eye(3, type=w.type))),
     lambda w: jnp.sum(lax.fori_loop(0, 3, lambda i, v: jnp.tanh(v @ w), jnp.eye(3))),
     u(-1, 1, (3, 3)))
case("stop_grad_of_a_loop",
     lambda x: nx.sum(x * stop_grad(nx.fori_loop(0, 2, lambda i, v: v * x, x))),
     lambda x: jnp.sum(x * lax.stop_gradient(lax.fori_loop(0, 2, lambda i, v: v * x, x))),
     u(-1, 1), fd=False)
case("cond_with_loop_inside",
     lambda x: nx.cond(nx.sum(x) > -10, lambda: nx.sum(nx.fori_loop(0, 2, lambda i, v: v * x, x)),
                       lambda: nx.sum(x)),
     lambda x: lax.cond(jnp.sum(x) > -10,
                        lambda: jnp.sum(lax.fori_loop(0, 2, lambda i, v: v * x, x)),
                        lambda: jnp.sum(x)), u(-1, 1))

# --- nested grad (second derivatives) ---------------------------------------------------------
case("grad_of_grad", lambda x: nx.sum(grad(lambda y: nx.sum(nx.sin(y) * y * y))(x) * W),
     lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(jnp.sin(y) * y * y))(x) * W), u(-1, 1))
case("grad_of_grad_scalar", lambda x: grad(lambda y: grad(lambda z: z ** 4 * nx.exp(z))(y))(x),
     lambda x: jax.grad(lambda y: jax.grad(lambda z: z ** 4 * jnp.exp(z))(y))(x), arr(0.7))
case("hessian_vector_product",
     lambda x, v: nx.sum(grad(lambda y: nx.sum(nx.tanh(y @ y.T)))(x) * v),
     lambda x, v: jnp.sum(jax.grad(lambda y: jnp.sum(jnp.tanh(y @ y.T)))(x) * v),
     u(-1, 1), u(-1, 1), argnums=(0, 1))
case("grad_closes_over_outer_argument",
     lambda x: nx.sum(grad(lambda y: nx.sum(nx.sin(y * x)))(x * 2.0)),
     lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(jnp.sin(y * x)))(x * 2.0)), u(-1, 1))
case("grad_of_value_and_grad",
     lambda x: (lambda vg: vg[0] + nx.sum(vg[1] * W))(
         value_and_grad(lambda y: nx.sum(nx.exp(y) * y))(x)),
     lambda x: (lambda vg: vg[0] + jnp.sum(vg[1] * W))(
         jax.value_and_grad(lambda y: jnp.sum(jnp.exp(y) * y))(x)), u(-1, 1))
case("grad_of_grad_through_loop",
     lambda x: nx.sum(grad(lambda y: nx.sum(nx.fori_loop(0, 2, lambda i, v: nx.sin(v) * y, y)))(x)),
     lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(lax.fori_loop(0, 2, lambda i, v:
                                                                 jnp.sin(v) * y, y)))(x)),
     u(-1, 1))

# --- has_aux, value_and_grad, argnums, containers -----------------------------------------------
case("has_aux", lambda x: (nx.sum(nx.sin(x)), {"m": nx.mean(x), "c": x * 2.0}),
     lambda x: (jnp.sum(jnp.sin(x)), {"m": jnp.mean(x), "c": x * 2.0}), u(-1, 1), has_aux=True)
case("value_and_grad", lambda x, y: nx.sum(nx.exp(x) * y), lambda x, y: jnp.sum(jnp.exp(x) * y),
     u(-1, 1), u(-1, 1), argnums=(0, 1), vag=True)
case("value_and_grad_has_aux", lambda x: (nx.sum(x ** 2), nx.reduce_max(x)),
     lambda x: (jnp.sum(x ** 2), jnp.max(x)), u(-1, 1), vag=True, has_aux=True)
case("argnums_1", lambda x, y: nx.sum(nx.sin(x) * nx.cos(y)),
     lambda x, y: jnp.sum(jnp.sin(x) * jnp.cos(y)), u(-1, 1), u(-1, 1), argnums=1)
case("argnums_tuple_skipping", lambda x, y, z: nx.sum(x * y * nx.exp(z)),
     lambda x, y, z: jnp.sum(x * y * jnp.exp(z)), u(-1, 1), u(-1, 1), u(-1, 1), argnums=(2, 0))
case("argument_unused", lambda x, y: nx.sum(y * y),
     lambda x, y: jnp.sum(y * y), u(-1, 1), u(-1, 1), argnums=(0, 1))
case("constant_output", lambda x: nx.sum(nx.iota((2,), type="f32")),
     lambda x: jnp.sum(jnp.arange(2, dtype=jnp.float32)), u(-1, 1))
case("dict_argument", lambda p, x: nx.sum(nx.tanh(x @ p["w"] + p["b"])),
     lambda p, x: jnp.sum(jnp.tanh(x @ p["w"] + p["b"])),
     {"w": u(-1, 1, (3, 2)), "b": u(-1, 1, (2,))}, u(-1, 1, (4, 3)))
case("tuple_argument", lambda t: nx.sum(t[0] * nx.sin(t[1])),
     lambda t: jnp.sum(t[0] * jnp.sin(t[1])), (u(-1, 1), u(-1, 1)))
case("list_argument", lambda xs: nx.sum(xs[0] * xs[1] + xs[2]),
     lambda xs: jnp.sum(xs[0] * xs[1] + xs[2]), [u(-1, 1), u(-1, 1), u(-1, 1)])
case("nested_containers_and_argnums",
     lambda p, x: nx.sum(nx.exp(p["a"][0] * x) + p["a"][1] * p["b"]),
     lambda p, x: jnp.sum(jnp.exp(p["a"][0] * x) + p["a"][1] * p["b"]),
     {"a": (u(-1, 1), [u(-1, 1)][0]), "b": u(-1, 1)}, u(-1, 1), argnums=(0, 1))

# --- stop_grad, custom_grad ------------------------------------------------------------------
case("stop_grad", lambda x: wsum(x * stop_grad(x * x)),
     lambda x: jwsum(x * lax.stop_gradient(x * x)), u(-1, 1), fd=False)
case("stop_grad_container", lambda x, y: nx.sum((lambda t: t[0] * t[1] + x * y)(stop_grad((x, y)))),
     lambda x, y: jnp.sum((lambda t: t[0] * t[1] + x * y)(lax.stop_gradient((x, y)))),
     u(-1, 1), u(-1, 1), argnums=(0, 1), fd=False)


def clipped_sqrt(x):
    y = nx.sqrt(x)
    return custom_grad(y, [x], lambda g: [g * 0.5 / nx.max(y, 0.5)])


@jax.custom_vjp
def _j_clipped_sqrt(x):
    return jnp.sqrt(x)


_j_clipped_sqrt.defvjp(lambda x: (jnp.sqrt(x), jnp.sqrt(x)),
                       lambda y, g: (g * 0.5 / jnp.maximum(y, 0.5),))


def _scaled_product(a, b):
    out = a * b
    return custom_grad(out, [a, b], lambda g: [g * 2.0, g * a * 3.0])


@jax.custom_vjp
def _j_scaled_product(a, b):
    return a * b


_j_scaled_product.defvjp(lambda a, b: (a * b, (a, b)), lambda r, g: (g * 2.0, g * r[0] * 3.0))

case("custom_grad", lambda x: wsum(clipped_sqrt(x)), lambda x: jwsum(_j_clipped_sqrt(x)),
     arr([[0.0, 4.0, 0.01], [1.0, 0.2, 9.0]]), fd=False)
case("custom_grad_two_inputs", lambda a, b: nx.sum(nx.sin(_scaled_product(a, b))),
     lambda a, b: jnp.sum(jnp.sin(_j_scaled_product(a, b))), u(-1, 1), u(-1, 1),
     argnums=(0, 1), fd=False)

def second_order(nxf, jf):
    """The gradient of ``W . grad(f)``: second derivatives of ``f`` (the rules' own
    gradients)."""
    return (lambda *a: wsum(grad(nxf)(*a)), lambda *a: jwsum(jax.grad(jf)(*a)))


def _sum_of(ops):
    return lambda y: nx.sum(sum((getattr(nx, op)(y) for op in ops), nx.tensor(0.0)))


def _jsum_of(fs):
    return lambda y: jnp.sum(sum(f(y) for f in fs))


# second derivatives of every differentiable unary op, five at a time, inside the domain
# shared by all (acosh on 1 + y)
for _i, _group in enumerate([["negate", "abs", "exp", "expm1", "log"],
                             ["log1p", "sqrt", "rsqrt", "cbrt", "sin"],
                             ["cos", "tan", "asin", "acos", "atan"],
                             ["sinh", "cosh", "tanh", "asinh", "atanh"],
                             ["sigmoid", "erf", "erfc", "erf_inv"]]):
    case(f"second_order_unary_{_i}", *second_order(_sum_of(_group),
                                                   _jsum_of([_J_UNARY[o] for o in _group])),
         u(0.2, 0.8), rtol=5e-5)
case("second_order_acosh", *second_order(lambda y: nx.sum(nx.acosh(1.0 + y * y)),
                                         lambda y: jnp.sum(jnp.arccosh(1.0 + y * y))),
     u(0.5, 1.5), rtol=5e-5)
case("second_order_binary", *second_order(
    lambda y: nx.sum(nx.atan2(y, 1.5 - y) + nx.pow(y + 1.0, y) + (y * y) / (2.0 + y)
                     + nx.remainder(y * 3.0, 0.7) * y + nx.max(y, 0.5 - y) * nx.min(y * y, 0.3)),
    lambda y: jnp.sum(jnp.arctan2(y, 1.5 - y) + lax.pow(y + 1.0, y) + (y * y) / (2.0 + y)
                      + lax.rem(y * 3.0, 0.7) * y
                      + jnp.maximum(y, 0.5 - y) * jnp.minimum(y * y, 0.3))),
     arr([[0.1, 0.4, 0.75], [0.9, 0.35, 0.6]]), rtol=5e-5)
case("second_order_reductions", *second_order(
    lambda y: nx.product(y) + nx.sum(nx.reduce_max(y * y, axes=[0]))
    + nx.sum(nx.product(y, axes=[1]) ** 2) + nx.mean(nx.exp(y)) * nx.reduce_min(y),
    lambda y: jnp.prod(y) + jnp.sum(jnp.max(y * y, axis=0))
    + jnp.sum(jnp.prod(y, axis=1) ** 2) + jnp.mean(jnp.exp(y)) * jnp.min(y)),
     u(0.5, 1.5), rtol=5e-5)
case("second_order_shapes", *second_order(
    lambda y: nx.sum(nx.pad(y * y, 1.0, [(1, -1, 1), (-1, 2, 0)]) ** 3)
    + nx.sum(nx.slice(y, [nx.tensor(1), 1], [1, 2]) ** 3)
    + nx.sum(nx.put_slice(y, [0, 1], nx.slice(y, [1, 0], [1, 2]) ** 2) ** 2)
    + nx.sum(nx.concatenate([y, nx.reverse(y * y, [1])], axis=0) ** 2),
    lambda y: jnp.sum(lax.pad(y * y, 1.0, [(1, -1, 1), (-1, 2, 0)]) ** 3)
    + jnp.sum(lax.dynamic_slice(y, (1, 1), (1, 2)) ** 3)
    + jnp.sum(lax.dynamic_update_slice(y, lax.slice(y, (1, 0), (2, 2)) ** 2, (0, 1)) ** 2)
    + jnp.sum(jnp.concatenate([y, lax.rev(y * y, (1,))], axis=0) ** 2)),
     u(-1, 1))
case("second_order_windows_dot_clip_select", *second_order(
    lambda y: nx.sum(nx.window_sum(y * y, (2, 2), padding=[(1, 0), (0, 1)]) ** 2)
    + nx.sum(nx.window_max(y, (2, 2)) ** 3) + nx.sum(nx.sin(y @ y.T))
    + nx.sum(nx.clip(y, -0.5, 0.6) ** 3) + nx.sum(nx.select(y > 0, y ** 3, nx.exp(y))),
    lambda y: jnp.sum(jwindow(y * y, lax.add, 0.0, (2, 2), None, [(1, 0), (0, 1)]) ** 2)
    + jnp.sum(jwindow(y, lax.max, -jnp.inf, (2, 2)) ** 3) + jnp.sum(jnp.sin(y @ y.T))
    + jnp.sum(jnp.clip(y, -0.5, 0.6) ** 3) + jnp.sum(jnp.where(y > 0, y ** 3, jnp.exp(y)))),
     arr([[0.1, -0.4, 0.7], [0.9, 0.35, -0.8]]), rtol=5e-5)
case("second_order_cond_and_custom_grad", *second_order(
    lambda y: nx.cond(nx.sum(y) > 0, lambda: nx.sum(nx.sin(y) * y), lambda: nx.sum(y))
    + nx.sum(_scaled_product(y, y * y)),
    lambda y: lax.cond(jnp.sum(y) > 0, lambda: jnp.sum(jnp.sin(y) * y), lambda: jnp.sum(y))
    + jnp.sum(_j_scaled_product(y, y * y))), u(0.1, 1))
case("second_order_stop_grad", *second_order(
    lambda y: nx.sum(y * y * stop_grad(y * y)),
    lambda y: jnp.sum(y * y * lax.stop_gradient(y * y))), u(-1, 1), fd=False)
case("grad_at_a_computed_point",
     lambda x: nx.sum(grad(lambda y: nx.sum(nx.exp(y) * x))(x * x)),
     lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(jnp.exp(y) * x))(x * x)), u(-1, 1))
case("third_derivative", lambda x: grad(lambda a: grad(lambda b: grad(
    lambda c: nx.sin(c) * c ** 3)(b))(a))(x),
     lambda x: jax.grad(lambda a: jax.grad(lambda b: jax.grad(
         lambda c: jnp.sin(c) * c ** 3)(b))(a))(x), arr(0.8), rtol=5e-5)

# --- more edge cases ----------------------------------------------------------------------------
case("identity_scalar", lambda x: x, lambda x: x, arr(2.0))
case("scalar_times_itself", lambda x: x * x + nx.sin(x), lambda x: x * x + jnp.sin(x), arr(-0.3))
case("zero_size", lambda x, y: nx.sum(x) + nx.sum(nx.product(x, axes=[0]) * y)
     + nx.sum(nx.reduce_max(nx.concatenate([x, y[None, :]], axis=0), axes=[0])),
     lambda x, y: jnp.sum(x) + jnp.sum(jnp.prod(x, axis=0) * y)
     + jnp.sum(jnp.max(jnp.concatenate([x, y[None, :]], axis=0), axis=0)),
     np.zeros((0, 3), F32), u(-1, 1, (3,)), argnums=(0, 1))
case("empty_slice_and_pad", lambda x: nx.sum(nx.slice(x, [1, 0], [0, 3])) + nx.sum(
    nx.pad(x, 0.0, [(-2, 0, 0), (0, 0, 0)])) + nx.sum(x * x),
     lambda x: jnp.sum(lax.slice(x, (1, 0), (1, 3))) + jnp.sum(
         lax.pad(x, 0.0, [(-2, 0, 0), (0, 0, 0)])) + jnp.sum(x * x), u(-1, 1))
case("sum_no_axes", lambda x: wsum(nx.sum(x, axes=[]) ** 2),
     lambda x: jwsum(jnp.sum(x, axis=()) ** 2),
     u(-1, 1))
case("sqrt_log_at_zero", lambda x: wsum(nx.sqrt(x) + nx.log(x)),
     lambda x: jwsum(jnp.sqrt(x) + jnp.log(x)), arr([[0.0, 1.0, 2.0], [0.5, 0.0, 3.0]]), fd=False)
case("pow_negative_base", lambda a: wsum(nx.pow(a, arr([[2.0, 3.0, 0.0], [1.0, -2.0, 4.0]]))),
     lambda a: jwsum(lax.pow(a, arr([[2.0, 3.0, 0.0], [1.0, -2.0, 4.0]]))), u(-2, -0.5),
     ops=("pow",))
case("remainder_negative_divisor", lambda a, b: wsum(nx.remainder(a, b)),
     lambda a, b: jwsum(lax.rem(a, b)), u(-4, 4), u(-1.6, -0.7), argnums=(0, 1),
     ops=("remainder",))
case("select_integer_predicate", lambda n, a, b: wsum(nx.select(n, a * a, b)),
     lambda n, a, b: jwsum(jnp.where(n != 0, a * a, b)),
     s32([[0, 2, -1], [0, 0, 5]]), u(-1, 1), u(-1, 1), argnums=(1, 2))
case("dot_with_integer_operand", lambda a, n: nx.sum(nx.sin(nx.dot(a, n))),
     lambda a, n: jnp.sum(jnp.sin(jnp.dot(a, n.astype(jnp.float32)))),
     u(-1, 1, (2, 3)), s32([[1, -2], [0, 3], [2, 1]]))
case("nx_tensor_constant_captured", lambda x: nx.sum(x * _W_NX + _W_NX),
     lambda x: jnp.sum(x * W + W), u(-1, 1))
case("same_value_twice", lambda x, y: nx.sum(nx.sin(x) * y), lambda x, y: jnp.sum(jnp.sin(x) * y),
     *(2 * (u(-1, 1),)), argnums=(0, 1))
case("fori_loop_zero_trips", lambda x: nx.sum(nx.fori_loop(2, 2, lambda i, v: v * x, x * 3.0)),
     lambda x: jnp.sum(lax.fori_loop(2, 2, lambda i, v: v * x, x * 3.0)), u(-1, 1))
case("while_loop_max_iterations_zero_trips",
     lambda x: nx.sum(while_loop(lambda v: nx.sum(v) > 100.0, lambda v: v * x, x * x,
                                 max_iterations=5)),
     lambda x: jnp.sum(x * x), u(-1, 1))
case("while_loop_integer_carry_and_stop_grad",
     lambda x: nx.sum(while_loop(lambda s: s[0] < 4,
                                 lambda s: (s[0] + 2, s[1] * stop_grad(s[1]) + x, s[2] + s[0]),
                                 (0, x, nx.tensor(0)))[1]),
     lambda x: jnp.sum(lax.fori_loop(0, 2, lambda i, v: v * lax.stop_gradient(v) + x, x)),
     u(-1, 1), fd=False)
case("loop_carries_unused_float", lambda x: nx.sum(nx.fori_loop(0, 3, lambda i, s: (
    s[0] * 1.5 + x, s[1] + 1.0), (x, x))[0]),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, s: (s[0] * 1.5 + x, s[1] + 1.0), (x, x))[0]),
     u(-1, 1))
case("cond_on_argument_predicate",
     lambda p, x: nx.cond(p, lambda: nx.sum(x * x), lambda: nx.sum(x)),
     lambda p, x: lax.cond(p, lambda: jnp.sum(x * x), lambda: jnp.sum(x)),
     np.array(True), u(-1, 1), argnums=1)
case("value_and_grad_containers_has_aux_argnums",
     lambda s, p: (nx.sum(p["w"] * s[0]) + nx.sum(s[1] ** 2), [p["w"] * 2.0]),
     lambda s, p: (jnp.sum(p["w"] * s[0]) + jnp.sum(s[1] ** 2), [p["w"] * 2.0]),
     (u(-1, 1), u(-1, 1, (3,))), {"w": u(-1, 1)}, argnums=(1, 0), vag=True, has_aux=True)


case("window_sum_gaps_and_leftovers",
     lambda x: nx.sum(nx.exp(nx.window_sum(x, (2, 2), strides=(3, 4), padding=[(0, 2), (1, 0)],
                                           window_dilations=(2, 1)))),
     lambda x: jnp.sum(jnp.exp(jwindow(x, lax.add, 0.0, (2, 2), (3, 4), [(0, 2), (1, 0)],
                                       (2, 1)))), u(-1, 1, (6, 7)))
case("window_max_gaps_and_same_padding",
     lambda x: nx.sum(nx.sin(nx.window_max(x, (2, 2), strides=(3, 3), padding="same"))),
     lambda x: jnp.sum(jnp.sin(jwindow(x, lax.max, -jnp.inf, (2, 2), (3, 3), "SAME"))),
     u(-1, 1, (5, 7)))
case("reduce_max_rank3_axes_keep",
     lambda x: nx.sum(nx.reduce_max(x, axes=[0, 2], keep_axes=True) * x),
     lambda x: jnp.sum(jnp.max(x, axis=(0, 2), keepdims=True) * x),
     arr([[[1.0, 2.0], [3.0, 3.0], [0.5, 0.0]], [[2.0, 0.0], [1.0, 3.0], [-1.0, 0.5]]]),
     fd=False)
case("product_rank3_with_zeros",
     lambda x: nx.sum(nx.product(x, axes=[0, 2]) * arr([1.0, -2.0, 3.0])),
     lambda x: jnp.sum(jnp.prod(x, axis=(0, 2)) * arr([1.0, -2.0, 3.0])),
     arr([[[1.5, 2.0], [0.0, 3.0], [0.5, 0.0]], [[2.0, -1.0], [1.0, 0.7], [0.0, 0.5]]]))
case("product_length_5", lambda x: nx.sum(nx.product(x, axes=[1]) * arr([1.0, 2.0])),
     lambda x: jnp.sum(jnp.prod(x, axis=1) * arr([1.0, 2.0])), u(0.5, 1.5, (2, 5)))
case("put_slice_mixed_types", lambda x, v: nx.sum(nx.sin(nx.put_slice(x, [0, 1], v))),
     lambda x, v: jnp.sum(jnp.sin(lax.dynamic_update_slice(x, v.astype(jnp.float32), (0, 1)))),
     u(-1, 1), u(-1, 1, (2, 2), F16), argnums=(0, 1), rtol=1e-3, atol=1e-3, fd=False)
case("concatenate_mixed_types", lambda a, b: nx.sum(nx.exp(nx.concatenate([a, b], axis=0))),
     lambda a, b: jnp.sum(jnp.exp(jnp.concatenate([a, b.astype(jnp.float32)], axis=0))),
     u(-1, 1), u(-1, 1, (1, 3), F16), argnums=(0, 1), rtol=1e-3, atol=1e-3, fd=False)
case("select_clip_mixed_types", lambda x, h: wsum(nx.select(x > 0, h, x) + nx.clip(h, x, 0.6)),
     lambda x, h: jwsum(jnp.where(x > 0, h.astype(jnp.float32), x)
                        + jnp.clip(h.astype(jnp.float32), x, 0.6)),
     u(-1, 1), u(-1, 1, dtype=F16), argnums=(0, 1), rtol=1e-3, atol=1e-3, fd=False)
case("dot_mixed_types", lambda a, b: nx.sum(nx.tanh(a @ b)),
     lambda a, b: jnp.sum(jnp.tanh(a @ b.astype(jnp.float32))),
     u(-1, 1, (2, 3)), u(-1, 1, (3, 2), F16), argnums=(0, 1), rtol=1e-3, atol=1e-3, fd=False)
case("while_loop_flipped_not_equal_le",
     lambda x: nx.sum(while_loop(lambda s: nx.logical_and(nx.greater(7, s[0]),
                                                          nx.not_equal(s[1], 6)),
                                 lambda s: (s[0] + 1, s[1] + 2, nx.sin(s[2]) * x),
                                 (0, 0, x))[2]),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * x, x)), u(-1, 1))
case("while_loop_counter_last_le",
     lambda x: nx.sum(while_loop(lambda s: s[1] <= 3.0,
                                 lambda s: (s[0] * x + 0.5, s[1] + 1.5), (x, 0.0))[0]),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, v: v * x + 0.5, x)), u(-1, 1))
case("cond_mixed_output_types",
     lambda x: (lambda r: nx.sum(r[0] * nx.as_type(r[1], "f32")))(
         nx.cond(nx.sum(x) > 0, lambda: (x * x, nx.tensor(2)), lambda: (x, nx.tensor(3)))),
     lambda x: (lambda r: jnp.sum(r[0] * r[1].astype(jnp.float32)))(
         lax.cond(jnp.sum(x) > 0, lambda: (x * x, jnp.int32(2)), lambda: (x, jnp.int32(3)))),
     u(-1, 1))

case("pow_constant_exponents_at_zero", lambda x: wsum(x ** 2 + x ** 0 + 3.0 * x ** 3),
     lambda x: jwsum(x ** 2 + x ** 0 + 3.0 * x ** 3), arr([[0.0, 1.0, -2.0], [0.5, 0.0, 3.0]]),
     ops=("pow",))
case("pow_constant_fractional_negative_exponents", lambda x: wsum(x ** 0.5 + x ** -1 + x ** -2.5),
     lambda x: jwsum(x ** 0.5 + x ** -1 + x ** -2.5), u(0.5, 2), ops=("pow",))
case("while_loop_float_counter",
     lambda x: nx.sum(while_loop(lambda s: s[0] < 1.0, lambda s: (s[0] + 0.25, s[1] * x),
                                 (0.0, x))[1]),
     lambda x: jnp.sum(lax.fori_loop(0, 4, lambda i, v: v * x, x)), u(0.5, 1.5))
case("while_loop_float_counter_rounding",
     # 0.1 added in f32 reaches 2.5 only after 26 steps; in f64 after 25
     lambda x: nx.sum(while_loop(lambda s: s[0] < 2.5, lambda s: (s[0] + 0.1, s[1] * x),
                                 (0.0, x))[1]),
     lambda x: jnp.sum(lax.fori_loop(0, 26, lambda i, v: v * x, x)), u(0.9, 1.1))
case("gradient_descent_in_loop",
     lambda x: nx.sum(nx.fori_loop(0, 3, lambda i, w: w - 0.1 * grad(
         lambda v: nx.sum(nx.sin(v) * x))(w), x * 2.0) ** 2),
     lambda x: jnp.sum(lax.fori_loop(0, 3, lambda i, w: w - 0.1 * jax.grad(
         lambda v: jnp.sum(jnp.sin(v) * x))(w), x * 2.0) ** 2), u(-1, 1))
case("grad_inside_cond_branch",
     lambda x: nx.cond(nx.sum(x) < 10, lambda: nx.sum(grad(lambda v: nx.sum(nx.exp(v) * v))(x)),
                       lambda: nx.sum(x)),
     lambda x: lax.cond(jnp.sum(x) < 10, lambda: jnp.sum(jax.grad(lambda v: jnp.sum(jnp.exp(v)
                                                                                    * v))(x)),
                        lambda: jnp.sum(x)), u(-1, 1))
case("stop_and_custom_grad_in_cond_and_loop",
     lambda x: nx.sum(nx.fori_loop(0, 2, lambda i, v: _scaled_product(v, stop_grad(v)) + x, x))
     + nx.cond(nx.sum(x) > -10, lambda: nx.sum(stop_grad(x) * x + clipped_sqrt(x * x)),
               lambda: nx.sum(x)),
     lambda x: jnp.sum(lax.fori_loop(0, 2, lambda i, v: _j_scaled_product(v, lax.stop_gradient(v))
                                     + x, x))
     + lax.cond(jnp.sum(x) > -10, lambda: jnp.sum(lax.stop_gradient(x) * x
                                                  + _j_clipped_sqrt(x * x)),
                lambda: jnp.sum(x)), u(-1, 1), fd=False)
case("cond_in_cond",
     lambda x, y: nx.cond(nx.sum(x) > 0, lambda: nx.cond(nx.sum(y) > 0, lambda: nx.sum(x * y),
                                                          lambda: nx.sum(nx.sin(x) * y * y)),
                          lambda: nx.sum(x - y)),
     lambda x, y: lax.cond(jnp.sum(x) > 0, lambda: lax.cond(jnp.sum(y) > 0, lambda: jnp.sum(x * y),
                                                            lambda: jnp.sum(jnp.sin(x) * y * y)),
                           lambda: jnp.sum(x - y)),
     u(0.1, 1), u(-1, -0.1), argnums=(0, 1))
case("loops_in_sequence_capturing_derived_values",
     lambda x: (lambda y: nx.sum(nx.fori_loop(0, 2, lambda i, v: v * nx.cos(y),
                                              nx.fori_loop(0, 3, lambda i, v: nx.sin(v) + y, x))))(
         nx.exp(x)),
     lambda x: (lambda y: jnp.sum(lax.fori_loop(0, 2, lambda i, v: v * jnp.cos(y),
                                                lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) + y,
                                                              x))))(jnp.exp(x)), u(-1, 1))
case("f32_input_f64_compute",
     lambda x: nx.as_type(nx.sum(nx.sin(nx.as_type(x, "f64")) * 3.0), "f32"),
     lambda x: jnp.sum(jnp.sin(x.astype(jnp.float64)) * 3.0).astype(jnp.float32), u(-1, 1),
     x64=True, fd=False)

# --- dtypes -------------------------------------------------------------------------------------
case("f64_sin_exp", lambda x: nx.sum(nx.sin(x) * nx.exp(x)),
     lambda x: jnp.sum(jnp.sin(x) * jnp.exp(x)),
     u(-1, 1, dtype=F64), rtol=1e-12, atol=1e-14)
case("f64_dot", lambda a, b: nx.sum(nx.tanh(a @ b)), lambda a, b: jnp.sum(jnp.tanh(a @ b)),
     u(-1, 1, (2, 3), F64), u(-1, 1, (3, 2), F64), argnums=(0, 1), rtol=1e-12, atol=1e-14)
case("f64_product_window_sum", lambda x: nx.product(nx.window_sum(x, (2, 2))),
     lambda x: jnp.prod(jwindow(x, lax.add, 0.0, (2, 2))), u(0.5, 1.5, (3, 3), F64),
     rtol=1e-12, atol=1e-14)
case("f64_pow_log", lambda a, b: nx.sum(nx.log(a) * a ** b),
     lambda a, b: jnp.sum(jnp.log(a) * a ** b),
     u(0.5, 2, dtype=F64), u(-1, 1, dtype=F64), argnums=(0, 1), rtol=1e-12, atol=1e-14)
case("f16_exp_mul", lambda x, y: nx.sum(nx.exp(x) * y), lambda x, y: jnp.sum(jnp.exp(x) * y),
     u(-1, 1, dtype=F16), u(-1, 1, dtype=F16), argnums=(0, 1), rtol=1e-2, atol=1e-2, fd=False)
case("f16_dot", lambda a, b: nx.sum(nx.sin(a @ b)), lambda a, b: jnp.sum(jnp.sin(a @ b)),
     u(-1, 1, (2, 3), F16), u(-1, 1, (3, 2), F16), argnums=(0, 1), rtol=1e-2, atol=1e-2,
     fd=False)
case("f16_tanh_sum_axis", lambda x: nx.sum(nx.tanh(nx.sum(x, axes=[1]))),
     lambda x: jnp.sum(jnp.tanh(jnp.sum(x, axis=1))), u(-1, 1, dtype=F16), rtol=1e-2,
     atol=1e-2, fd=False)
case("bf16_tanh_mul", lambda x, y: nx.sum(nx.tanh(x) * y), lambda x, y: jnp.sum(jnp.tanh(x) * y),
     u(-1, 1, dtype=BF16), u(-1, 1, dtype=BF16), argnums=(0, 1), rtol=3e-2, atol=3e-2,
     fd=False)
case("bf16_log_mean", lambda x: nx.mean(nx.log(x)), lambda x: jnp.mean(jnp.log(x)),
     u(0.5, 2, dtype=BF16), rtol=3e-2, atol=3e-2, fd=False)
_LOWP_OPS = ["sin", "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "atan", "acos",
             "erf_inv"]
case("f16_unary_ops", _sum_of(_LOWP_OPS), _jsum_of([_J_UNARY[o] for o in _LOWP_OPS]),
     u(0.2, 0.8, dtype=F16), rtol=1e-2, atol=1e-2, fd=False)
case("bf16_unary_ops", _sum_of(_LOWP_OPS), _jsum_of([_J_UNARY[o] for o in _LOWP_OPS]),
     u(0.2, 0.8, dtype=BF16), rtol=3e-2, atol=3e-2, fd=False)
case("mixed_f32_f16", lambda x, y: nx.sum(x * y), lambda x, y: jnp.sum(x * y),
     u(-1, 1), u(-1, 1, dtype=F16), argnums=(0, 1), rtol=1e-3, atol=1e-3, fd=False)


# ----------------------------------------------------------------------------------------
# What running a case needs
# ----------------------------------------------------------------------------------------
def needs_x64(c: Case) -> bool:
    """JAX's twin runs with x64: asked for, or an argument is f64."""
    return c.x64 or any(np.asarray(a).dtype == F64 for a in tleaves(c.args))


def nx_args(args):
    return tmap(lambda a: nx.tensor(np.asarray(a)), args)
