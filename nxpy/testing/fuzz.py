"""Differential fuzzing: seeded random programs, run every way nxpy can run them and
compared with one another and with JAX.

A program is a small graph of nxpy ops over random inputs (shapes of rank 0 to 3, zero-size
dims included, every nxpy type, dim names), drawn from a seed and an index:
elementwise (every op of ``UNARY``/``BINARY``, with the kinds each accepts), reductions,
argmax/argmin, shape ops, ``dot``, ``cond`` and ``while_loop``, indexing (``take``,
``gather``, static and dynamic ``slice``, ``put_slice``, ``indexed_add``/``indexed_put``),
``sort``/``argsort``/``top_k``, cumulative ops, ``bitcast``, the window ops
(``window_sum``/``max``/``min``/``product``/``mean``, ``window_reduce`` with add, multiply,
max or min and an ``acc`` that need not be the identity, ``window_scatter_max``/``min``;
window shapes, strides, dilations, and ``"valid"``, ``"same"`` or explicit padding),
``conv``, and ``grad`` of float programs. Each
program runs on the NumPy backend (eagerly), under the Evaluator and EXLA, and through
StableHLO (``to_mlir``, then :func:`nxpy.stablehlo.load`, run on EXLA and the Evaluator);
the same description also builds a ``jax.numpy`` program (run under ``jax.jit`` with x64
on), the independent oracle. Sharded programs (:func:`generate_sharded`): ``shard_map``
bodies with collectives and ``shard_jit`` programs on 2x2 and 2x4 meshes, compared per
device between the Evaluator's mesh simulation, EXLA and JAX, and round-tripped too: the
program's module (``to_mlir``, with its ``sdy.mesh`` and shardings) is loaded back and
run with ``Program.shard_jit`` on its own mesh (``prog.mesh()``), on EXLA and the
Evaluator (a ``shard_map`` under ``jit`` makes a module of replicated global values:
every device holds the whole result).

What must agree:

* nxpy's paths with the NumPy backend: result structure, shapes, types and dim names
  (StableHLO has no names), integer and boolean values exactly, floats within
  :data:`TOLERANCES` (the loaded module with EXLA's own result within the round trip's
  tighter :data:`nxpy.stablehlo.roundtrip.TOLERANCES`, via its ``compare_results``);
* sharded programs, per device: the Evaluator and EXLA with JAX (the ``shard_map`` or
  the ``jit`` of the same body, split as nxpy's output sharding says), and each loaded
  module with the original program on the same compiler, within the round trip's
  tolerances (:func:`nxpy.stablehlo.roundtrip.compare_per_device`);
* JAX with the NumPy backend: shapes and values (types are Nx's, which the JAX program
  follows by casting to the types nxpy reports);
* ``jvp`` (:func:`check_jvp`; ``make test``'s slice every fifth program): forward mode
  along random tangents of the float and complex inputs, under the Evaluator and EXLA,
  against ``jax.jvp`` of the JAX twin (where JAX can differentiate it);
* ``vmap`` (:func:`check_vmap`, with ``check(prog, vmap=True)``; ``make fuzz`` batches
  every program, ``make test``'s slice every fifth): the program (a grad program: its
  per-example gradients) on a batch of :data:`VMAP_SIZE` examples, with random
  ``in_axes`` per input (0, another axis, or None: shared by every example) and random
  ``out_axes`` (0 or another axis), under the Evaluator and EXLA, against the program run
  on each example alone on the NumPy backend and stacked along ``out_axes``: types,
  shapes, dim names (the batch axis unnamed) and values as above; and ``jax.vmap`` of the
  JAX twin against the same stack, where JAX can batch the twin (not ``select_and_scatter``,
  which has no batching rule, nor complex ``bitcast_convert_type``, whose rule fails with
  the batch axis last). Example 0 is the program's own input; the others are drawn afresh
  from each input's domain (same range, grid and specials), index inputs permuted (so
  ``take``/``gather`` indices stay in range and ``indexed_put`` rows distinct) and
  ``dynamic_slice`` starts moved (clamped everywhere); a draw whose values break one of
  the rules below that look at values (complex ops on infinities, NaN into ``bitcast``,
  ``window_scatter`` operands) is drawn again, then given up for the program's own input.

Rules for ill-conditioned cases (the generator writes them into the program, so a
reproduced program shows them):

* inputs are small: floats are multiples of 1/8 in [-4, 4] (real floats sometimes with
  NaN, +-inf and -0.0; no op with a complex result takes them: complex products with
  infinities have no agreed result, naive and C99 formulas differ), integers in [-4, 4] ([0, 4] unsigned);
* a unary op with a restricted domain (:data:`nxpy.testing.cases.base.DOMAINS`: log,
  sqrt, asin, exp, tan, ...) gets its operand clipped into the domain first; ``sin`` and
  ``cos`` into [-64, 64] (no huge-argument range reduction); complex operands only meet
  ops without branch cuts;
* integer ``quotient``/``remainder`` divisors are clipped to [1, 7] (or [-7, -2]): no
  division by zero, no ``MIN // -1``; integer ``pow`` has base in [-3, 3] and exponent
  in [0, 3], float ``pow`` base in [1/4, 4] and exponent in [-2, 2]; shift amounts are
  clipped to [0, bits - 1];
* discontinuous ops on floats (floor, ceil, round, sign, comparisons, logical ops,
  float-to-integer ``as_type``, ``argmax``/``argmin``, ``argsort``, float ``remainder``,
  the predicates of ``select``/``cond``, ``all``/``any``, and ``atan2``, where the sign
  of a zero decides between 0 and pi, and XLA's fused ``atan2`` of an inexact zero over a
  computed zero can even give NaN, as under ``jax.jit``) only take *exact* operands:
  values every implementation computes bit for bit (inputs, and what selection, data
  movement, rounding and f32/f64 add/subtract/multiply make of them); transcendental
  functions, divisions, sums and products are not exact;
* ``conv`` operands are finite: what an inf or NaN times a padding zero gives differs
  between XLA's own kernels (f32 and f64 disagree);
* window padding follows Nx (``"same"``: the dilated window's size minus one in total,
  the odd one high, whatever the strides), written out for ``lax.reduce_window``;
  ``window_reduce`` skips padded positions and folds ``acc`` in once per window; at rank 0
  XLA (so JAX) returns a ``reduce_window``'s operand without folding ``acc`` in, so the
  JAX twin reduces a one-element window at rank 1 there;
* ``window_scatter_max``/``min`` operands are exact and NaN-free (the selection compares
  them); ties are kept: Nx's tie break (the last extremum) is XLA's select with ``>``/``<``,
  which the JAX twin runs in f64 with a padding that loses to every element, infinities
  included (Nx never selects padding). An operand of a 64-bit merged type holding that
  type's lowest (highest) value is not drawn when padded: nxpy pads 64-bit operands with
  that value (``docs/ops_windows.md``);
* ``top_k`` values are a selection (exact when the operand is); its indices need an exact
  operand. Ties go to the lower index in both; Nx orders every NaN above everything and
  takes -0.0 equal to 0.0, ``lax.top_k`` orders floats totally, so the JAX twin makes
  every NaN +NaN and every zero +0.0 first;
* ``bitcast`` of a float needs an exact operand without NaN (a NaN's sign and payload are
  the implementation's); complex values bitcast as (real, imag) pairs;
* grad programs take finite continuous inputs (no ties for max, no NaN to route a
  cotangent through);
* ``take``/``gather`` indices are in range (JAX's ``take`` fills out-of-range reads
  where XLA's gather clamps), ``indexed_put`` indices are distinct (duplicates have no
  defined winner); ``argmax`` skips zero-size axes (JAX rejects them);
* candidate ops nxpy's front end rejects (``TypeError``/``ValueError``: names that do
  not merge, unsupported kinds) are dropped and drawn again: the fuzzer looks for wrong
  results; wrong errors are the bad-input tests' business.

From the command line (``make fuzz N=... SEED=...``)::

    python -m nxpy.testing.fuzz --seed 0 --count 1000      # fuzz (vmap too), report mismatches
    python -m nxpy.testing.fuzz --seed 0 --count 1000 --vmap-every 0  # without vmap
    python -m nxpy.testing.fuzz --seed 0 --index 17 --show  # one program, described
    python -m nxpy.testing.fuzz --seed 0 --index 17 --vmap --show  # with its batch
    python -m nxpy.testing.fuzz --sharded --seed 0 --index 19 --show  # one sharded program

>>> p = generate(0, 3)
>>> p.index, len(p.leaves()) >= 1
(3, True)
>>> check(p)   # raises Mismatch when two paths disagree
>>> check(p, vmap=True)   # and batched
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
import warnings

import numpy as np

import nxpy as nx
from .. import pjrt, types as T
from ..compilers.exla import to_mlir
from ..defn import (all_gather, all_to_all, axis_index, cond, grad, jit, jvp, pmax, pmean,
                    pmin, ppermute, psum, psum_scatter, shard_jit, shard_map, tree, vmap,
                    while_loop)
from ..defn import sharding as SH
from ..ops.core import kind_ok
from ..ops.elementwise import BINARY, UNARY
from ..ops.reductions import REDUCTIONS
from ..stablehlo import load
from ..stablehlo.roundtrip import RoundTripError, compare_per_device, compare_results
from . import _default_backend
from .cases.base import DOMAINS

__all__ = ["Program", "Leaf", "Step", "generate", "generate_sharded", "check", "Mismatch",
           "run_many", "TOLERANCES", "main", "VmapSpec", "vmap_spec", "check_vmap", "VMAP_SIZE",
           "check_jvp"]

#: (rtol, atol) between implementations (NumPy kernels, XLA, JAX): transcendental
#: functions differ in the last bits and sums reassociate; ``atol`` is scaled by the
#: largest finite magnitude of the expected result (cancellation loses digits relative
#: to it, not to the element)
TOLERANCES = {"float16": (1e-2, 1e-2), "bfloat16": (6e-2, 6e-2), "float32": (2e-4, 2e-5),
              "float64": (1e-9, 1e-11), "complex64": (2e-4, 2e-5), "complex128": (1e-9, 1e-11)}

TYPES = [str(t) for t in T.ALL_TYPES]
FLOATS = [t for t in TYPES if t[0] in "fb"]
INTS = [t for t in TYPES if t[0] in "su"]
NAMES = ("w", "h", "c", "b")  # a dim's name depends on its position from the right


class Mismatch(AssertionError):
    """Two paths disagree (or one fails) on a fuzzed program."""


# ----------------------------------------------------------------------------------------
# Program descriptions
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Leaf:
    """An input: its values are drawn from ``seed`` (or given as ``data``)."""
    shape: tuple
    type: str
    names: tuple | None = None
    lo: float = -4
    hi: float = 4
    grid: bool = True            # floats on multiples of 1/8
    special: bool = False        # a few NaN, inf, -inf, -0.0
    seed: int = 0
    data: list | None = None

    def array(self) -> np.ndarray:
        dt = T.parse(self.type).dtype
        if self.data is not None:
            return np.asarray(self.data).astype(dt).reshape(self.shape)
        r = np.random.default_rng(self.seed)
        t = T.parse(self.type)
        if t.is_pred:
            return r.integers(0, 2, self.shape).astype(bool)
        if t.is_int:
            lo = max(self.lo, 0) if t.kind == "u" else self.lo
            return r.integers(int(lo), int(self.hi) + 1, self.shape).astype(dt)

        def draw():
            if self.grid:
                return r.integers(round(self.lo * 8), round(self.hi * 8) + 1, self.shape) / 8
            return r.uniform(self.lo, self.hi, self.shape)
        v = draw() + (1j * draw() if t.is_complex else 0)
        v = np.asarray(v).astype(dt)
        if self.special and v.size:
            flat = v.reshape(-1)
            for i in r.choice(v.size, min(2, v.size), replace=False):
                flat[i] = r.choice([np.nan, np.inf, -np.inf, -0.0])
        return v

    def __str__(self):
        names = f" names={list(self.names)}" if self.names and any(self.names) else ""
        if self.data is not None:
            return f"input {self.type}{list(self.shape)}{names} = {self.data}"
        how = ("grid" if self.grid else "uniform") + (", with NaN/inf/-0" if self.special else "")
        return f"input {self.type}{list(self.shape)}{names} {how} [{self.lo}, {self.hi}] seed={self.seed}"


@dataclasses.dataclass
class Step:
    op: str
    args: tuple
    kw: dict

    def __str__(self):
        kw = "".join(f", {k}={v!r}" for k, v in self.kw.items())
        return f"{self.op}({', '.join(f'n{a}' for a in self.args)}{kw})"


@dataclasses.dataclass
class Program:
    """``nodes`` (leaves and steps, each referring to earlier nodes by index), the
    ``outputs``, and each node's type as nxpy inferred it. ``grad``: the program is the
    gradient of the sum of its (float) output with respect to every input."""
    seed: int
    index: int
    nodes: list
    types: list
    outputs: tuple
    grad: bool = False

    def leaves(self):
        return [n for n in self.nodes if isinstance(n, Leaf)]

    def __str__(self):
        lines = [f"program seed={self.seed} index={self.index}" + (" (grad of sum)" if self.grad else "")]
        for i, (n, t) in enumerate(zip(self.nodes, self.types)):
            lines.append(f"  n{i} = {n}" + ("" if isinstance(n, Leaf) else f"   -> {t}"))
        lines.append(f"  outputs: {', '.join(f'n{i}' for i in self.outputs)}")
        return "\n".join(lines)

    def repro(self, vmap: bool = False) -> str:
        how = " --vmap" if vmap else ""
        return f"python -m nxpy.testing.fuzz --seed {self.seed} --index {self.index}{how} --show"

    # -- the nxpy program and its JAX twin, built from the description -----------------
    def _body(self, xs):
        it = iter(xs)
        vals = []
        for n in self.nodes:
            vals.append(next(it) if isinstance(n, Leaf) else OPS[n.op][0](*[vals[a] for a in n.args], **n.kw))
        outs = tuple(vals[i] for i in self.outputs)
        return outs[0] if len(outs) == 1 else outs

    def argnums(self):
        """The inputs a grad program differentiates: the float ones."""
        return tuple(k for k, leaf in enumerate(self.leaves()) if T.parse(leaf.type).is_float)

    def function(self):
        """The nxpy function of the inputs."""
        if not self.grad:
            return lambda *xs: self._body(xs)
        return lambda *xs: grad(lambda *ys: nx.sum(self._body(ys)), argnums=self.argnums())(*xs)

    def jax_function(self, jax):
        J = _Jax(jax)

        def body(*xs):
            it = iter(xs)
            vals = []
            for i, n in enumerate(self.nodes):
                if isinstance(n, Leaf):
                    vals.append(next(it))
                    continue
                ts = [self.types[a] for a in n.args]
                vals.append(OPS[n.op][1](J, ts, self.types[i], *[vals[a] for a in n.args], **n.kw))
            outs = tuple(vals[i] for i in self.outputs)
            return outs[0] if len(outs) == 1 else outs
        if not self.grad:
            return body
        return jax.grad(lambda *ys: jax.numpy.sum(body(*ys)), argnums=self.argnums())


class _Jax:
    """jax.numpy, lax and jax, and the cast to an nxpy type name."""

    def __init__(self, jax):
        self.jax, self.jnp, self.lax = jax, jax.numpy, jax.lax

    def c(self, x, t):
        return self.jnp.asarray(x).astype(T.parse(t).dtype)


# ----------------------------------------------------------------------------------------
# The op table: name -> (nxpy function of tensors, JAX function (J, arg types, out type,
# *arrays)). Nx's type rules are followed by casting to the types nxpy reports.
# ----------------------------------------------------------------------------------------
def _round(J, x):
    return J.lax.round(x, J.lax.RoundingMethod.AWAY_FROM_ZERO)


_JU = {
    "negate": lambda J, x: -x, "abs": lambda J, x: J.jnp.abs(x), "sign": lambda J, x: J.jnp.sign(x),
    "floor": lambda J, x: J.jnp.floor(x), "ceil": lambda J, x: J.jnp.ceil(x), "round": _round,
    "exp": lambda J, x: J.jnp.exp(x), "expm1": lambda J, x: J.jnp.expm1(x),
    "log": lambda J, x: J.jnp.log(x), "log1p": lambda J, x: J.jnp.log1p(x),
    "sqrt": lambda J, x: J.jnp.sqrt(x), "rsqrt": lambda J, x: J.lax.rsqrt(x),
    "cbrt": lambda J, x: J.lax.cbrt(x), "sin": lambda J, x: J.jnp.sin(x),
    "cos": lambda J, x: J.jnp.cos(x), "tan": lambda J, x: J.jnp.tan(x),
    "asin": lambda J, x: J.jnp.arcsin(x), "acos": lambda J, x: J.jnp.arccos(x),
    "atan": lambda J, x: J.jnp.arctan(x), "sinh": lambda J, x: J.jnp.sinh(x),
    "cosh": lambda J, x: J.jnp.cosh(x), "tanh": lambda J, x: J.jnp.tanh(x),
    "asinh": lambda J, x: J.jnp.arcsinh(x), "acosh": lambda J, x: J.jnp.arccosh(x),
    "atanh": lambda J, x: J.jnp.arctanh(x), "sigmoid": lambda J, x: J.jax.nn.sigmoid(x),
    "erf": lambda J, x: J.lax.erf(x), "erfc": lambda J, x: J.lax.erfc(x),
    "erf_inv": lambda J, x: J.lax.erf_inv(x), "is_nan": lambda J, x: J.jnp.isnan(x),
    "is_infinity": lambda J, x: J.jnp.isinf(x), "bitwise_not": lambda J, x: J.jnp.invert(x),
    "logical_not": lambda J, x: J.jnp.logical_not(x),
}
_JB = {
    "add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
    "quotient": lambda J, a, b: J.lax.div(a, b), "remainder": lambda J, a, b: J.lax.rem(a, b),
    "pow": "power", "atan2": "arctan2", "min": "minimum", "max": "maximum", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "left_shift": "left_shift",
    "right_shift": "right_shift", "equal": "equal", "not_equal": "not_equal", "less": "less",
    "less_equal": "less_equal", "greater": "greater", "greater_equal": "greater_equal",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
}
assert set(_JU) == set(UNARY) and set(_JB) == set(BINARY)


def _unary(name):
    rule = UNARY[name][0]

    def jx(J, ts, out, x):
        if name in ("floor", "ceil", "round") and not T.parse(ts[0]).is_inexact:
            return J.c(x, out)
        return J.c(_JU[name](J, J.c(x, out if rule == "float" else ts[0])), out)
    return (lambda x: getattr(nx, name)(x)), jx


def _binary(name):
    rule = BINARY[name][0]
    f = _JB[name]

    def jx(J, ts, out, a, b):
        ct = str(T.merge(T.parse(ts[0]), T.parse(ts[1]))) if rule in ("compare", "logical") else out
        g = f if callable(f) else (lambda J, x, y: getattr(J.jnp, f)(x, y))
        return J.c(g(J, *J.jnp.broadcast_arrays(J.c(a, ct), J.c(b, ct))), out)
    return (lambda a, b: getattr(nx, name)(a, b)), jx


def _lowest(J, t):
    t = T.parse(t)
    if t.is_pred:
        return False
    return np.array(-np.inf if t.is_inexact else np.iinfo(t.dtype).min, t.dtype)


def _highest(J, t):
    t = T.parse(t)
    if t.is_pred:
        return True
    return np.array(np.inf if t.is_inexact else np.iinfo(t.dtype).max, t.dtype)


def _reduction(name):
    def jx(J, ts, out, x, axes, keep):
        ax = None if axes is None else tuple(axes)
        if name in ("all", "any"):
            return J.c(getattr(J.jnp, name)(x != 0, axis=ax, keepdims=keep), out)
        x = J.c(x, out)
        if name in ("sum", "product"):  # in Nx's type (jnp's integer sums widen to 64 bits)
            return getattr(J.jnp, "sum" if name == "sum" else "prod")(x, axis=ax, keepdims=keep, dtype=x.dtype)
        f, init = (J.jnp.max, _lowest(J, out)) if name == "reduce_max" else (J.jnp.min, _highest(J, out))
        return f(x, axis=ax, keepdims=keep, initial=init)
    return (lambda x, axes, keep: getattr(nx, name)(x, axes=axes, keep_axes=keep)), jx


def _arg(name):
    def jx(J, ts, out, x, axis, keep, tie):
        f = getattr(J.jnp, name)
        if axis is None:
            x = J.jnp.ravel(x)
        ax = 0 if axis is None else axis
        if tie == "high":
            r = x.shape[ax] - 1 - f(J.jnp.flip(x, ax), axis=ax, keepdims=keep)
        else:
            r = f(x, axis=ax, keepdims=keep)
        return J.c(r, out)
    return (lambda x, axis, keep, tie: getattr(nx, name)(x, axis=axis, keep_axis=keep, tie_break=tie)), jx


def _cumulative(name):
    lax_name = {"cumulative_sum": "cumsum", "cumulative_product": "cumprod",
                "cumulative_max": "cummax", "cumulative_min": "cummin"}[name]
    return ((lambda x, axis, reverse: getattr(nx, name)(x, axis=axis, reverse=reverse)),
            lambda J, ts, out, x, axis, reverse: getattr(J.lax, lax_name)(J.c(x, out), axis, reverse))


def _canonical_zero(J, x, t):
    """Nx's sorts take -0.0 and 0.0 as equal; JAX's order them: add +0.0 first."""
    return x + J.jnp.zeros((), x.dtype) if T.parse(t).is_float else x


_TRANSFORMS = {  # type-preserving bodies for cond and while_loop
    "identity": (lambda x: x, lambda J, x: x),
    "negate": (lambda x: nx.negate(x), lambda J, x: -x),
    "double": (lambda x: x + x, lambda J, x: x + x),
    "reverse": (lambda x: nx.reverse(x), lambda J, x: J.jnp.flip(x) if x.ndim else x),
}
_EXACT_TRANSFORMS = {"identity", "negate", "reverse"}


def _cond_jx(J, ts, out, p, x, then, other):
    take = J.jnp.sum(J.c(p, "f64")) > 0
    return J.jnp.where(take, _TRANSFORMS[then][1](J, x), _TRANSFORMS[other][1](J, x))


def _while_jx(J, ts, out, x, n, body):
    for _ in range(n):
        x = _TRANSFORMS[body][1](J, x)
    return x


def _dot_jx(J, ts, out, a, b, ca, ba, cb, bb):
    return J.lax.dot_general(J.c(a, out), J.c(b, out), ((tuple(ca), tuple(cb)), (tuple(ba), tuple(bb))),
                             preferred_element_type=T.parse(out).dtype)


def _conv_jx(J, ts, out, x, k, strides, padding, input_dilation, kernel_dilation, groups):
    return J.lax.conv_general_dilated(J.c(x, out), J.c(k, out), strides, [tuple(p) for p in padding],
                                      input_dilation, kernel_dilation, feature_group_count=groups,
                                      precision=J.lax.Precision.HIGHEST,
                                      preferred_element_type=T.parse(out).dtype)


def _gather_jx(J, ts, out, x, idx):
    return x[tuple(idx[..., j].astype(np.int64) for j in range(idx.shape[-1]))]


def _scatter(kind):
    def jx(J, ts, out, x, idx, u):
        where = tuple(idx[..., j].astype(np.int64) for j in range(idx.shape[-1]))
        ref = J.c(x, out).at[where]
        return ref.add(J.c(u, out)) if kind == "add" else ref.set(J.c(u, out))
    return (lambda x, idx, u: getattr(nx, f"indexed_{kind}")(x, idx, u)), jx


# -- windows, top_k and bitcast ---------------------------------------------------------
def _nx_pads(window, dilations, padding):
    """Nx's padding modes as explicit (low, high) pairs, written out here for JAX (not
    nxpy's own helper): "same" pads the dilated window's size minus one in total, the odd
    one high, whatever the strides (JAX's "SAME" depends on the strides)."""
    if padding == "valid":
        return [(0, 0)] * len(window)
    if padding == "same":
        eff = [(w - 1) * r + 1 for w, r in zip(window, dilations)]
        return [((k - 1) // 2, (k - 1) - (k - 1) // 2) for k in eff]
    return [tuple(p) for p in padding]


# the monoid of each window op: (lax op, identity), and for pred (XLA's add and multiply
# on pred are or and and)
_WINDOW_MONOIDS = {"window_sum": ("add", "bitwise_or", 0), "window_product": ("mul", "bitwise_and", 1),
                   "window_max": ("max", "bitwise_or", "lowest"),
                   "window_min": ("min", "bitwise_and", "highest")}


def _reduce_window(J, x, t, kind, window, strides, padding, dilations, init=None):
    """``x`` (of nxpy type ``t``) reduced over each window with lax.reduce_window."""
    op, pred_op, ident = _WINDOW_MONOIDS[kind]
    tt = T.parse(t)
    if init is None:
        init = {"lowest": _lowest, "highest": _highest}[ident](J, t) if isinstance(ident, str) else ident
    x = J.c(x, t)
    pads = _nx_pads(window, dilations, padding)
    if not x.ndim:  # XLA skips the init value at rank 0 (see the module docstring)
        return _reduce_window(J, x.reshape(1), t, kind, (1,), (1,), "valid", (1,), init).reshape(())
    return J.lax.reduce_window(x, np.array(init, tt.dtype), getattr(J.lax, pred_op if tt.is_pred else op),
                               tuple(window), tuple(strides), pads, window_dilation=tuple(dilations))


def _window(name):
    def nxf(x, window, strides, padding, dilations):
        return getattr(nx, name)(x, window, strides=strides, padding=padding, window_dilations=dilations)

    def jx(J, ts, out, x, window, strides, padding, dilations):
        if name == "window_mean":
            s = _reduce_window(J, x, ts[0], "window_sum", window, strides, padding, dilations)
            return J.c(s, out) / J.c(int(np.prod(window, dtype=np.int64)), out)
        return _reduce_window(J, x, out, name, window, strides, padding, dilations)
    return nxf, jx


_REDUCE_FNS = {"add": ("window_sum", lambda a, b: nx.add(a, b)),
               "multiply": ("window_product", lambda a, b: nx.multiply(a, b)),
               "max": ("window_max", lambda a, b: nx.max(a, b)),
               "min": ("window_min", lambda a, b: nx.min(a, b))}


def _window_reduce_nx(x, fn, acc, window, strides, padding, dilations):
    return nx.window_reduce(x, nx.tensor(acc, type=x.type), window,
                            {"strides": strides, "padding": padding, "window_dilations": dilations},
                            _REDUCE_FNS[fn][1])


def _window_reduce_jx(J, ts, out, x, fn, acc, window, strides, padding, dilations):
    # XLA's reduce_window folds acc in once per window and skips the padding (as nxpy)
    return _reduce_window(J, x, out, _REDUCE_FNS[fn][0], window, strides, padding, dilations, init=acc)


def _window_scatter(kind):
    name = f"window_scatter_{kind}"

    def nxf(x, src, init, window, strides, padding):
        return getattr(nx, name)(x, src, nx.tensor(init, type=src.type), window, strides=strides,
                                 padding=padding)

    def jx(J, ts, out, x, src, init, window, strides, padding):
        # XLA's select_and_scatter, all in f64 (the operand's values are below 2**53 or
        # 1e300 in magnitude, see windows()), with infinities moved to +-1e301 so the padding
        # (+-inf) is strictly worse than every element: Nx never selects the padding. A
        # window keeps its pick while select(current, candidate) holds: > / < move to the
        # last extremum on ties, Nx's choice. Rank 0 as rank 1 (XLA aborts on rank 0).
        lax, jnp = J.lax, J.jnp
        shape = x.shape
        pads = _nx_pads(window, (1,) * len(window), padding)
        if not shape:
            x, src, window, strides, pads = x.reshape(1), src.reshape(1), (1,), (1,), [(0, 0)]
        xf = J.c(x, "f64")
        xf = jnp.where(jnp.isinf(xf), jnp.sign(xf) * 1e301, xf)
        xp = lax.pad(xf, -np.inf if kind == "max" else np.inf, [(lo, hi, 0) for lo, hi in pads])
        sas = J.jax._src.lax.windowed_reductions._select_and_scatter
        r = sas(xp, lax.gt if kind == "max" else lax.lt, tuple(window), tuple(strides),
                [(0, 0)] * len(window), J.c(src, "f64"), np.float64(0), lax.add)
        r = lax.slice(r, [lo for lo, _ in pads], [lo + d for (lo, _), d in zip(pads, xf.shape)])
        return J.c(r.reshape(shape) + J.c(init, "f64"), out)
    return nxf, jx


def _nan_last(J, x, t):
    """Nx's top_k order (NaN above everything, whatever its sign; -0.0 equal to 0.0) for
    lax.top_k, which orders floats totally: every NaN made +NaN, every zero +0.0."""
    if not T.parse(t).is_float:
        return x
    return J.jnp.where(J.jnp.isnan(x), J.jnp.array(np.nan, x.dtype), _canonical_zero(J, x, t))


def _top_k_jx(J, ts, out, x, k, part):
    t = T.parse(ts[0])
    xs = J.c(x, "u8") if t.is_pred else _nan_last(J, x, ts[0])
    values, indices = J.lax.top_k(xs, k)
    return J.c(values if part == "values" else indices, out)


def _bitcast_jx(J, ts, out, x, type):
    t, to = T.parse(ts[0]), T.parse(out)
    # lax.bitcast_convert_type has no complex types: complex as (real, imag) pairs of the
    # component type, which is what its memory is
    if t.is_complex:
        x = J.jnp.stack([J.jnp.real(x), J.jnp.imag(x)], axis=-1)
    if to.is_complex:
        part = np.float32 if to.bits == 64 else np.float64
        pair = J.lax.bitcast_convert_type(x, part)
        return J.lax.complex(pair[..., 0], pair[..., 1])
    return J.lax.bitcast_convert_type(x, to.dtype)


OPS = {
    **{n: _unary(n) for n in UNARY},
    **{n: _binary(n) for n in BINARY},
    **{n: _reduction(n) for n in REDUCTIONS},
    "argmax": _arg("argmax"), "argmin": _arg("argmin"),
    **{n: _cumulative(n) for n in ("cumulative_sum", "cumulative_product", "cumulative_max",
                                   "cumulative_min")},
    "clip": (lambda x, lo, hi: nx.clip(x, lo, hi), lambda J, ts, out, x, lo, hi: J.c(J.jnp.clip(x, lo, hi), out)),
    "as_type": (lambda x, type: nx.as_type(x, type), lambda J, ts, out, x, type: J.c(x, out)),
    "select": (lambda p, a, b: nx.select(p, a, b),
               lambda J, ts, out, p, a, b: J.jnp.where(p != 0, J.c(a, out), J.c(b, out))),
    "reshape": (lambda x, shape: nx.reshape(x, shape), lambda J, ts, out, x, shape: J.jnp.reshape(x, shape)),
    "transpose": (lambda x, axes: nx.transpose(x, axes=axes), lambda J, ts, out, x, axes: J.jnp.transpose(x, axes)),
    "broadcast": (lambda x, shape: nx.broadcast(x, shape),
                  lambda J, ts, out, x, shape: J.jnp.broadcast_to(x, shape)),
    "squeeze": (lambda x: nx.squeeze(x), lambda J, ts, out, x: J.jnp.squeeze(x)),
    "new_axis": (lambda x, axis: nx.new_axis(x, axis), lambda J, ts, out, x, axis: J.jnp.expand_dims(x, axis)),
    "pad": (lambda x, config: nx.pad(x, 0, config),
            lambda J, ts, out, x, config: J.lax.pad(x, J.jnp.zeros((), x.dtype), [tuple(c) for c in config])),
    "reverse": (lambda x, axes: nx.reverse(x, axes=axes),
                lambda J, ts, out, x, axes: J.jnp.flip(x, tuple(axes)) if axes else x),
    "concatenate": (lambda a, b, axis: nx.concatenate([a, b], axis=axis),
                    lambda J, ts, out, a, b, axis: J.jnp.concatenate([J.c(a, out), J.c(b, out)], axis)),
    "slice": (lambda x, starts, lengths, strides: nx.slice(x, starts, lengths, strides=strides),
              lambda J, ts, out, x, starts, lengths, strides: J.lax.slice(
                  x, starts, [s + n for s, n in zip(starts, lengths)], strides)),
    "dynamic_slice": (lambda x, i, lengths: nx.slice(x, [i] + [0] * (len(lengths) - 1), lengths),
                      lambda J, ts, out, x, i, lengths: J.lax.dynamic_slice(
                          x, [i.astype(np.int64)] + [0] * (len(lengths) - 1), lengths)),
    "put_slice": (lambda x, u, starts: nx.put_slice(x, starts, u),
                  lambda J, ts, out, x, u, starts: J.lax.dynamic_update_slice(J.c(x, out), J.c(u, out), starts)),
    "take": (lambda x, idx, axis: nx.take(x, idx, axis=axis),
             lambda J, ts, out, x, idx, axis: J.jnp.take(x, idx.astype(np.int64), axis=axis, mode="clip")),
    "gather": (lambda x, idx: nx.gather(x, idx), _gather_jx),
    "indexed_add": _scatter("add"), "indexed_put": _scatter("put"),
    "sort": (lambda x, axis, desc: nx.sort(x, axis=axis, direction="desc" if desc else "asc"),
             lambda J, ts, out, x, axis, desc: J.jnp.sort(_canonical_zero(J, x, out), axis=axis,
                                                          descending=desc)),
    "argsort": (lambda x, axis, desc, type: nx.argsort(x, axis=axis, direction="desc" if desc else "asc", type=type),
                lambda J, ts, out, x, axis, desc, type: J.c(J.jnp.argsort(
                    _canonical_zero(J, x, ts[0]), axis=axis, stable=True, descending=desc), out)),
    "dot": (lambda a, b, ca, ba, cb, bb: nx.dot(a, ca, ba, b, cb, bb), _dot_jx),
    "conv": (lambda x, k, strides, padding, input_dilation, kernel_dilation, groups: nx.conv(
        x, k, strides=strides, padding=padding, input_dilation=input_dilation,
        kernel_dilation=kernel_dilation, feature_group_size=groups), _conv_jx),
    **{n: _window(n) for n in ("window_sum", "window_max", "window_min", "window_product", "window_mean")},
    "window_reduce": (_window_reduce_nx, _window_reduce_jx),
    "window_scatter_max": _window_scatter("max"), "window_scatter_min": _window_scatter("min"),
    "top_k": (lambda x, k, part: nx.top_k(x, k=k)[0 if part == "values" else 1], _top_k_jx),
    "bitcast": (lambda x, type: nx.bitcast(x, type), _bitcast_jx),
    "cond": (lambda p, x, then, other: cond(nx.sum(p) > 0, lambda: _TRANSFORMS[then][0](x),
                                            lambda: _TRANSFORMS[other][0](x)), _cond_jx),
    "while": (lambda x, n, body: while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, _TRANSFORMS[body][0](s[1])),
                                            (0, x))[1], _while_jx),
}

# exactness (see the module docstring): ops whose float results stay bit-identical
_EXACT = {"negate", "floor", "ceil", "round", "max", "min", "select", "clip", "reshape",
          "transpose", "broadcast", "squeeze", "new_axis", "pad", "reverse", "concatenate",
          "slice", "dynamic_slice", "put_slice", "take", "gather", "indexed_put", "sort",
          "cumulative_max", "cumulative_min", "reduce_max", "reduce_min", "as_type",
          "window_max", "window_min", "top_k", "bitcast"}
_EXACT_ARITH = {"add", "subtract", "multiply"}   # correctly rounded in f32/f64
# ops whose result jumps when a float operand moves by an ulp
_DISCONTINUOUS = ({"floor", "ceil", "round", "sign", "argmax", "argmin", "argsort", "remainder", "atan2",
                   "all", "any", "select", "cond", "is_nan", "is_infinity", "logical_not",
                   "window_scatter_max", "window_scatter_min", "bitcast"}
                  | {n for n, (rule, _) in BINARY.items() if rule in ("compare", "logical")})
_COMPLEX_UNARY = {"negate", "abs", "exp", "sin", "cos", "tanh", "is_nan", "is_infinity",
                  "logical_not"}


# ----------------------------------------------------------------------------------------
# The generator
# ----------------------------------------------------------------------------------------
def _numpy_backend():
    return _default_backend("numpy")


class _Gen:
    def __init__(self, rng):
        self.rng = rng
        self.types = TYPES  # what new inputs may be (grad programs: floats only)
        self.specials = True  # NaN/inf/-0.0 in some float inputs (not in grad programs)
        self.nodes, self.vals, self.exact = [], [], []

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p):
        return self.rng.random() < p

    def t(self, i):
        return self.vals[i].type

    def shape(self, max_rank=3):
        rank = int(self.rng.integers(0, max_rank + 1))
        return tuple(0 if self.chance(0.07) else int(self.rng.integers(1, 5)) for _ in range(rank))

    def names_for(self, shape):
        if not self.chance(0.3):
            return None
        n = len(shape)
        return tuple(NAMES[n - 1 - d] if self.chance(0.6) else None for d in range(n))

    def leaf(self, shape, type, names=None, **kw):
        if "special" not in kw and T.parse(type).is_float:  # complex: see the docstring
            kw["special"] = self.specials and self.chance(0.1)
        leaf = Leaf(tuple(shape), type, names, seed=int(self.rng.integers(2**31)), **kw)
        self.nodes.append(leaf)
        self.vals.append(nx.tensor(leaf.array(), type=type, names=list(names) if names else None))
        self.exact.append(True)
        return len(self.nodes) - 1

    def step(self, op, args, **kw):
        """Appends ``op`` if nxpy's front end accepts it; the new node, or None."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = OPS[op][0](*[self.vals[a] for a in args], **kw)
        except (TypeError, ValueError):
            return None
        step = Step(op, tuple(args), kw)
        if not _value_rules_hold(step, [self.vals[a] for a in args], v):
            return None  # e.g. complex arithmetic on infinities: see the module docstring
        self.nodes.append(step)
        self.vals.append(v)
        exact = all(self.exact[a] for a in args) and (
            op in _EXACT or (op in _EXACT_ARITH and v.type in (T.F32, T.F64))
            or (op == "abs" and not self.t(args[0]).is_complex)
            or (op in ("cond", "while") and {kw.get("then"), kw.get("other"), kw.get("body")} - {None}
                <= _EXACT_TRANSFORMS))
        self.exact.append(exact or not v.type.is_inexact)
        return len(self.nodes) - 1

    def exact_ok(self, op, i):
        return op not in _DISCONTINUOUS or self.exact[i] or not self.t(i).is_inexact

    def clip(self, i, lo, hi):
        """``i`` clipped into [lo, hi] (integer bounds for integers); unchanged for pred and
        complex operands."""
        t = self.t(i)
        if t.is_pred or t.is_complex:
            return i
        if t.is_int:
            lo, hi = math.ceil(lo), math.floor(hi)
            if t.kind == "u":
                lo, hi = max(lo, 0), max(hi, 0)
            if lo > hi:
                lo = hi
        r = self.step("clip", [i], lo=lo, hi=hi)
        return i if r is None else r

    # -- families: each appends steps to operand ``i``, returns the new node or None -------
    def unary(self, i):
        t = self.t(i)
        ops = [n for n, (rule, kinds) in UNARY.items() if kind_ok(t, kinds)
               and (not t.is_complex or n in _COMPLEX_UNARY) and self.exact_ok(n, i)]
        if not ops:
            return None
        op = self.pick(ops)
        if op in DOMAINS:
            if t.is_pred:
                return None
            i = self.clip(i, *DOMAINS[op])
        elif op in ("sin", "cos"):
            i = self.clip(i, -64, 64)
        return self.step(op, [i])

    def operand_like(self, i, kinds):
        """A second operand broadcastable with ``i``: an earlier node or a new input."""
        s = self.vals[i].shape
        cands = [j for j in range(len(self.nodes)) if j != i and kind_ok(self.t(j), kinds)
                 and (self.vals[j].shape == s or self.vals[j].shape == s[len(s) - self.vals[j].rank:])]
        if cands and self.chance(0.4):
            return self.pick(cands)
        shape = s[int(self.rng.integers(0, len(s) + 1)):] if self.chance(0.3) else s
        types = [t for t in TYPES if kind_ok(T.parse(t), kinds)]
        tb = str(self.t(i)) if self.chance(0.5) and str(self.t(i)) in types else self.pick(types)
        names = self.vals[i].names[len(s) - len(shape):] if self.vals[i].names else None
        if names is not None and not any(names):
            names = None
        return self.leaf(shape, tb, names)

    def binary(self, i):
        op = self.pick(list(BINARY))
        rule, kinds = BINARY[op]
        if not kind_ok(self.t(i), kinds):
            return None
        j = self.operand_like(i, kinds)
        a, b = (i, j) if self.chance(0.7) else (j, i)
        if not (self.exact_ok(op, a) and self.exact_ok(op, b)):
            return None
        ct = T.merge(self.t(a), self.t(b))
        if op in ("quotient", "remainder") and ct.is_int:
            b = self.clip(b, -7, -2) if ct.kind == "s" and self.chance(0.3) else self.clip(b, 1, 7)
        elif op == "pow":
            if ct.is_complex:
                return None
            if ct.is_int or ct.is_pred:
                a, b = self.clip(a, -3, 3), self.clip(b, 0, 3)
            else:
                a, b = self.clip(a, 0.25, 4), self.clip(b, -2, 2)
        elif op in ("left_shift", "right_shift"):
            b = self.clip(b, 0, ct.bits - 1)
        return self.step(op, [a, b])

    def reduction(self, i):
        x = self.vals[i]
        axes = None if self.chance(0.3) or not x.rank else sorted(
            int(a) for a in self.rng.choice(x.rank, int(self.rng.integers(1, x.rank + 1)), replace=False))
        keep = self.chance(0.3)
        if self.chance(0.25) and x.rank:
            op = self.pick(["argmax", "argmin"])
            axis = None if self.chance(0.3) else int(self.rng.integers(x.rank))
            if 0 in (x.shape if axis is None else (x.shape[axis],)) or not self.exact_ok(op, i):
                return None
            return self.step(op, [i], axis=axis, keep=keep and axis is not None,
                             tie=self.pick(["low", "high"]))
        op = self.pick(list(REDUCTIONS))
        if not self.exact_ok(op, i):
            return None
        return self.step(op, [i], axes=axes, keep=keep)

    def shaping(self, i):
        x = self.vals[i]
        s, r = x.shape, x.rank
        op = self.pick(["reshape", "transpose", "broadcast", "squeeze", "new_axis", "pad",
                        "reverse", "concatenate", "slice", "as_type", "select", "clip", "bitcast"])
        if op == "reshape":
            return self.step(op, [i], shape=self._refactor(s))
        if op == "transpose":
            return self.step(op, [i], axes=[int(a) for a in self.rng.permutation(r)])
        if op == "broadcast":
            lead = tuple(int(self.rng.integers(1, 4)) for _ in range(int(self.rng.integers(0, 3))))
            return self.step(op, [i], shape=lead + tuple(self.pick([1, 3]) if d == 1 else d for d in s))
        if op == "squeeze":
            return self.step(op, [i])
        if op == "new_axis":
            return self.step(op, [i], axis=int(self.rng.integers(-r - 1, r + 1)))
        if op == "pad":
            cfg = [[int(self.rng.integers(-1, 3)), int(self.rng.integers(-1, 3)), int(self.rng.integers(0, 2))]
                   for _ in s]
            return self.step(op, [i], config=cfg)
        if op == "reverse":
            return self.step(op, [i], axes=sorted(int(a) for a in self.rng.choice(r, int(self.rng.integers(0, r + 1)),
                                                                                replace=False)))
        if op == "concatenate":
            if not r:
                return None
            axis = int(self.rng.integers(r))
            shape = tuple(int(self.rng.integers(0, 4)) if d == axis else n for d, n in enumerate(s))
            j = self.leaf(shape, self.pick(self.types) if self.chance(0.3) else str(x.type),
                          x.names if any(x.names) else None)
            return self.step(op, [i, j], axis=axis)
        if op == "slice":
            starts = [int(self.rng.integers(0, n + 1)) for n in s]
            lengths = [int(self.rng.integers(0, n - st + 1)) for n, st in zip(s, starts)]
            strides = [int(self.rng.integers(1, 3)) for _ in s]
            return self.step(op, [i], starts=starts, lengths=lengths, strides=strides)
        if op == "as_type":
            to = T.parse(self.pick(TYPES))
            if x.type.is_complex and not to.is_complex and not to.is_float:
                return None
            if x.type.is_inexact and not to.is_inexact and not self.exact[i]:
                return None
            return self.step(op, [i], type=str(to))
        if op == "bitcast":
            # a float's bits only when every implementation has the same float: exact, and
            # no NaN (whose sign and payload are the implementation's)
            if x.type.is_pred or not self.exact_ok(op, i) or (
                    x.type.is_inexact and np.isnan(x.to_numpy()).any()):
                return None
            to = [t for t in TYPES if t != "pred" and T.parse(t).bits == x.type.bits]
            return self.step(op, [i], type=self.pick(to))
        if op == "select":
            p = self.leaf(s[int(self.rng.integers(0, r + 1)):], self.pick(["pred", "pred", "s8", "f32"]))
            j = self.operand_like(i, "any")
            return self.step(op, [p, i, j])
        return self.clip(i, -2, 2.5)

    def _refactor(self, s):
        n = int(np.prod(s, dtype=np.int64))
        if n == 0:
            return tuple(self.pick([0, 2]) if k == 0 else 3 for k in range(int(self.rng.integers(1, 3))))
        out = []
        for p in (2, 3, 5, 7):
            while n % p == 0:
                n //= p
                out.append(p)
        self.rng.shuffle(out)
        dims, k = [], 0
        while k < len(out):
            m = int(self.rng.integers(1, 3))
            dims.append(int(np.prod(out[k:k + m])))
            k += m
        if self.chance(0.3):
            dims.insert(int(self.rng.integers(0, len(dims) + 1)), 1)
        if dims and self.chance(0.3):
            dims[int(self.rng.integers(len(dims)))] = -1
        return tuple(dims)

    def dot(self, i):
        x = self.vals[i]
        if not x.rank or x.type.is_pred:
            return None
        ca = int(self.rng.integers(x.rank))
        batched = x.rank >= 2 and self.chance(0.4)
        ba = [int(self.pick([d for d in range(x.rank) if d != ca]))] if batched else []
        free = [int(self.rng.integers(0, 4)) for _ in range(int(self.rng.integers(0, 2)))]
        shape = [x.shape[d] for d in ba] + [x.shape[ca]] + free
        t = self.pick([str(x.type)] + [t for t in self.types if t != "pred"])
        j = self.leaf(shape, t)
        return self.step("dot", [i, j], ca=[ca], ba=ba, cb=[len(ba)], bb=list(range(len(ba))))

    def control(self, i):
        t = self.t(i)
        ok = [n for n in _TRANSFORMS if not (t.is_pred and n in ("negate", "double"))
              and not (t.kind == "u" and n == "negate")]
        if self.chance(0.5):
            p = self.leaf(self.shape(2), self.pick([t for t in TYPES if t[0] != "c"]))
            return self.step("cond", [p, i], then=self.pick(ok), other=self.pick(ok))
        return self.step("while", [i], n=int(self.rng.integers(0, 4)), body=self.pick(ok))

    def indexing(self, i):
        x = self.vals[i]
        s, r = x.shape, x.rank
        if not r:
            return None
        itype = self.pick(["s32", "s64", "u8", "u32", "s16"])
        op = self.pick(["take", "gather", "dynamic_slice", "put_slice", "indexed_add", "indexed_put"])
        if op == "take":
            axis = int(self.rng.integers(r))
            if not s[axis]:
                return None
            shape = self.shape(2)
            idx = self.leaf(shape, itype, data=self.rng.integers(0, s[axis], shape).tolist())
            return self.step(op, [i, idx], axis=axis)
        if op == "dynamic_slice":
            k = self.leaf((), itype, data=int(self.rng.integers(0, s[0] + 3)))
            lengths = [int(self.rng.integers(0, n + 1)) for n in s]
            return self.step(op, [i, k], lengths=lengths)
        if op == "put_slice":
            u = self.leaf(tuple(int(self.rng.integers(0, n + 1)) for n in s), self.pick([str(x.type)] + TYPES))
            return self.step(op, [i, u], starts=[int(self.rng.integers(0, n + 2)) for n in s])
        if 0 in s:
            return None
        n = int(self.rng.integers(1, 5))
        flat = self.rng.choice(int(np.prod(s)), min(n, int(np.prod(s))), replace=op == "indexed_add")
        coords = np.stack(np.unravel_index(flat, s), axis=-1)
        idx = self.leaf(coords.shape, itype, data=coords.tolist())
        if op == "gather":
            return self.step(op, [i, idx])
        if x.type.is_pred and op == "indexed_add":
            return None
        u = self.leaf((coords.shape[0],), self.pick([str(x.type), str(x.type), "f32", "s8"]))
        return self.step(op, [i, idx, u])

    def sorting(self, i):
        x = self.vals[i]
        if not x.rank or x.type.is_complex:
            return None
        axis = int(self.rng.integers(x.rank))
        op = self.pick(["sort", "argsort", "cumulative_sum", "cumulative_product", "cumulative_max",
                        "cumulative_min", "top_k"])
        if op == "top_k":
            # the values are a selection; which index holds them needs exact operands
            part = self.pick(["values", "indices"])
            if not x.shape[-1] or (part == "indices" and not self.exact_ok("argsort", i)):
                return None
            return self.step(op, [i], k=int(self.rng.integers(1, x.shape[-1] + 1)), part=part)
        if op == "sort":
            return self.step(op, [i], axis=axis, desc=self.chance(0.5))
        if op == "argsort":
            if not self.exact_ok(op, i):
                return None
            return self.step(op, [i], axis=axis, desc=self.chance(0.5), type=self.pick(["s32", "s64", "u32"]))
        if x.type.is_pred:
            return None
        return self.step(op, [i], axis=axis, reverse=self.chance(0.5))

    def windows(self, i):
        x = self.vals[i]
        s = x.shape
        op = self.pick(["window_sum", "window_max", "window_min", "window_product", "window_mean",
                        "window_reduce", "window_scatter_max", "window_scatter_min"])
        scatter = op.startswith("window_scatter")
        window = [int(self.rng.integers(1, max(1, min(3, d)) + 1)) for d in s]
        strides = [int(self.rng.integers(1, 3)) for _ in s]
        dil = [1 if scatter or self.chance(0.7) else 2 for _ in s]
        padding = self.pick(["valid", "same", "explicit"])
        if padding == "explicit":
            padding = [[int(self.rng.integers(0, 3)), int(self.rng.integers(0, 3))] for _ in s]
        if op == "window_reduce":
            t = x.type
            if t.is_pred:
                return None
            fn = self.pick(list(_REDUCE_FNS))
            acc = self.pick({"add": [0, 1, -2], "multiply": [1, 2, -1], "max": [-4, 0, 1],
                             "min": [4, 0, -1]}[fn])
            acc = abs(acc) if t.kind == "u" else acc
            return self.step(op, [i], fn=fn, acc=acc, window=window, strides=strides, padding=padding,
                             dilations=dil)
        if not scatter:
            return self.step(op, [i], window=window, strides=strides, padding=padding, dilations=dil)
        if not self.exact_ok(op, i) or not _scatter_operand_ok(op, x, None, padding):
            return None
        try:
            pooled = nx.window_max(x, window, strides=strides, padding=padding).shape
        except (TypeError, ValueError):
            return None
        src = self.leaf(pooled, self.pick([str(x.type), "f32", "s8", "f64", "u8"]))
        init = self.pick([0, 1, -2])
        init = abs(init) if self.t(src).kind == "u" else init
        if not _scatter_operand_ok(op, x, self.t(src), padding):
            return None
        return self.step(op, [i, src], init=init, window=window, strides=strides, padding=padding)

    def conv(self):
        nsp = int(self.rng.integers(1, 3))
        g = int(self.pick([1, 1, 2]))
        cin, cout = int(self.rng.integers(1, 3)), g * int(self.rng.integers(1, 3))
        t = self.pick(["f32", "f32", "f64", "f16", "s32"])
        x = self.leaf((int(self.rng.integers(1, 3)), cin * g) + tuple(int(self.rng.integers(2, 6)) for _ in range(nsp)),
                      t, special=False)
        k = self.leaf((cout, cin) + tuple(int(self.rng.integers(1, 3)) for _ in range(nsp)), t, special=False)
        return self.step("conv", [x, k], strides=[int(self.rng.integers(1, 3)) for _ in range(nsp)],
                         padding=[[int(self.rng.integers(0, 2)), int(self.rng.integers(0, 2))] for _ in range(nsp)],
                         input_dilation=[int(self.rng.integers(1, 3)) for _ in range(nsp)],
                         kernel_dilation=[int(self.rng.integers(1, 3)) for _ in range(nsp)], groups=g)


def _value_rules_hold(n: Step, args, v) -> bool:
    """The rules of the module docstring that look at values, not only at types and the
    program's structure, for node ``n`` computing ``v`` from ``args``: no complex result
    from infinities or NaN, no NaN bitcast from a float, ``window_scatter_max``/``min``
    operands they may select on. (The generator checks them as it draws; vmap's examples,
    drawn afresh, are checked again.)"""
    if v.type.is_complex and not all(np.isfinite(a.to_numpy()).all() for a in args):
        return False
    if n.op == "bitcast" and args[0].type.is_inexact and np.isnan(args[0].to_numpy()).any():
        return False
    if n.op in ("window_scatter_max", "window_scatter_min"):
        return _scatter_operand_ok(n.op, args[0], args[1].type, n.kw["padding"])
    return True


def _scatter_operand_ok(op, x, src_type, padding) -> bool:
    """Whether ``window_scatter_max``/``min`` (``op``) may select on operand ``x``:
    select and scatter picks by comparing the operand, so no NaN and magnitudes the JAX
    twin holds exactly in f64 (see _window_scatter); with the source's type, no 64-bit
    operand holding the value nxpy pads it with, when padded (ties, see the docstring)."""
    v = x.to_numpy()
    if x.type.is_inexact:
        big = np.isnan(v).any() or (np.abs(v[np.isfinite(v)]) >= 1e300).any()
    else:
        big = (np.abs(v.astype(np.float64)) >= 2.0**53).any()
    if big:
        return False
    if src_type is None:
        return True
    m = T.merge(x.type, src_type)
    worst = T.min_value(m) if op == "window_scatter_max" else T.max_value(m)
    return not (m.bits == 64 and padding != "valid" and (v.astype(m.dtype) == worst).any())


_FAMILIES = ["unary", "unary", "binary", "binary", "reduction", "shaping", "shaping", "dot",
             "control", "indexing", "sorting", "windows"]
_SMOOTH = ["sin", "cos", "tanh", "exp", "log", "sqrt", "sigmoid", "negate", "atan", "erf"]


def _input(g: _Gen, float_only=False):
    t = g.pick(["f32", "f64"] if float_only else TYPES + ["f32", "s32"])
    s = g.shape()
    return g.leaf(s, t, g.names_for(s), grid=not float_only, special=False if float_only else None) \
        if not float_only else g.leaf(s, t, g.names_for(s), lo=-2, hi=2, grid=False, special=False)


def _grad_program(g: _Gen):
    g.types, g.specials = ["f32", "f64"], False
    i = _input(g, float_only=True)
    for _ in range(int(g.rng.integers(1, 4))):
        kind = g.pick(["unary", "binary", "reduce", "shape", "dot"])
        x = g.vals[i]
        if kind == "unary":
            op = g.pick(_SMOOTH)
            if op in DOMAINS:
                i = g.clip(i, *DOMAINS[op])
            r = g.step(op, [i])
        elif kind == "binary":
            op = g.pick(["add", "subtract", "multiply", "divide", "max"])
            j = g.leaf(x.shape, str(x.type), x.names if any(x.names) else None, lo=-2, hi=2, grid=False,
                       special=False)
            if op == "divide":
                j = g.clip(g.step("abs", [j]) or j, 0.5, 2)
            r = g.step(op, [i, j])
        elif kind == "reduce":
            r = g.step(g.pick(["sum", "product", "reduce_max"]), [i], axes=[0] if x.rank else None, keep=False)
        elif kind == "shape":
            r = g.shaping(i) if g.chance(0.5) else (g.step("transpose", [i], axes=list(range(x.rank))[::-1]))
            if r is not None and g.nodes[r].op in ("as_type", "select", "concatenate") :
                r = None
        else:
            r = g.dot(i)
            if r is not None and not g.t(r).is_float:
                r = None
        if r is not None and g.t(r).is_float:
            i = r
    return i


def generate(seed: int, index: int) -> Program:
    """The program ``index`` of the stream ``seed`` (deterministic)."""
    rng = np.random.default_rng([seed, index])
    g = _Gen(rng)
    with _numpy_backend(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        is_grad = rng.random() < 0.12
        if is_grad:
            out = _grad_program(g)
            # drop the nodes the output does not use (an unused input would have a zero gradient anyway)
            outputs = (out,)
        else:
            i = g.conv() if rng.random() < 0.06 else _input(g)
            if i is None:
                i = _input(g)
            for _ in range(int(rng.integers(1, 5))):
                r = getattr(g, g.pick(_FAMILIES))(i)
                if r is not None:
                    i = r
            outputs = (i,)
            steps = [k for k, n in enumerate(g.nodes) if isinstance(n, Step) and k != i]
            if steps and rng.random() < 0.2:
                outputs = (i, g.pick(steps))
    return Program(seed, index, g.nodes, [str(v.type) for v in g.vals], outputs, grad=is_grad)


# ----------------------------------------------------------------------------------------
# Running and comparing
# ----------------------------------------------------------------------------------------
def _leaves(r):
    return tree.flatten(r)[0]


def _tolerance(prog) -> tuple:
    """The loosest (rtol, atol) of the float types anywhere in ``prog``: a value computed
    in f32 and widened to f64 carries f32's error."""
    tols = [TOLERANCES[T.parse(t).dtype.name] for t in prog.types if T.parse(t).is_inexact]
    return max(tols, default=(0.0, 0.0))


def _values_match(expected: np.ndarray, got: np.ndarray, tol: tuple) -> str | None:
    """None when ``got`` matches ``expected`` (integers and booleans exactly, floats
    within ``tol`` or their own type's tolerance, NaNs in the same places), else what
    differs."""
    if expected.shape != got.shape:
        return f"shape {list(got.shape)}, expected {list(expected.shape)}"
    name = np.dtype(expected.dtype).name
    if name not in TOLERANCES:
        if np.array_equal(expected, got.astype(expected.dtype)):
            return None
        return f"values differ:\n    expected {expected.tolist()}\n    got      {got.tolist()}"
    rtol, atol = max(tol, TOLERANCES[name])
    wide = np.complex128 if expected.dtype.kind == "c" else np.float64
    e, g = expected.astype(wide), got.astype(wide)
    finite = np.abs(e[np.isfinite(e)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    try:
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol * scale, equal_nan=True)
    except AssertionError as err:
        return f"values differ beyond rtol={rtol}, atol={atol}*{scale:g}:{err}"
    return None


def _paths(prog: Program):
    """Results of every nxpy path: name -> list of (array, type, names)."""
    args = [nx.tensor(leaf.array(), type=leaf.type, names=list(leaf.names) if leaf.names else None)
            for leaf in prog.leaves()]
    fn = prog.function()
    out = {}

    def record(name, f, names=True):
        try:
            r = f()
        except Exception as err:  # noqa: BLE001 - reported as a mismatch
            out[name] = err
            return
        out[name] = [(np.asarray(t.to_numpy()).reshape(t.shape), str(t.type),
                      tuple(t.names) if names else None) for t in _leaves(r)]

    with _numpy_backend():
        record("numpy", lambda: fn(*args))
        record("evaluator", lambda: jit(fn, compiler="evaluator")(*args))
        record("exla", lambda: jit(fn, compiler="exla")(*args))
        loaded = {}
        try:
            prog_ = load(to_mlir(fn, *args))
            loaded["exla"] = prog_.jit("exla")(*args)
        except Exception as err:  # noqa: BLE001
            out["stablehlo"] = err
        else:
            record("stablehlo/exla", lambda: loaded["exla"], names=False)
            record("stablehlo/evaluator", lambda: prog_.jit("evaluator")(*args), names=False)
            if not isinstance(out.get("exla"), Exception):
                try:
                    compare_results(_leaves(jit(fn, compiler="exla")(*args)), _leaves(loaded["exla"]))
                except RoundTripError as err:
                    out["stablehlo/exla vs exla"] = err
    return out


def _jax_results(prog: Program):
    jax = pjrt.oracle()
    with warnings.catch_warnings(), jax.enable_x64(True):
        warnings.simplefilter("ignore")
        arrays = [leaf.array() for leaf in prog.leaves()]
        r = jax.jit(prog.jax_function(jax))(*arrays)
        leaves = jax.tree_util.tree_leaves(r)
        return [np.asarray(x) for x in leaves]


def _fail(prog, what):
    raise Mismatch(f"{what}\n{prog}\nrepro: {prog.repro()}")


def check(prog, *, with_jax: bool = True, vmap: bool = False) -> None:
    """Runs ``prog`` on every path; raises :class:`Mismatch` (with the program's
    description and a repro command) when two disagree. ``vmap``: then checks
    :func:`check_vmap` too (single-device programs)."""
    if isinstance(prog, ShardedProgram):
        return check_sharded(prog)
    _check_paths(prog, with_jax)
    if vmap:
        check_vmap(prog, with_jax=with_jax)


def _check_paths(prog, with_jax):
    res = _paths(prog)
    ref = res.pop("numpy")
    if isinstance(ref, Exception):
        _fail(prog, f"the NumPy backend failed: {type(ref).__name__}: {ref}")
    tol = _tolerance(prog)
    for path, got in res.items():
        if isinstance(got, Exception):
            _fail(prog, f"{path} failed: {type(got).__name__}: {got}")
        if len(got) != len(ref):
            _fail(prog, f"{path}: {len(got)} results, the NumPy backend {len(ref)}")
        for k, ((g, gt, gn), (w, wt, wn)) in enumerate(zip(got, ref)):
            if gt != wt or g.shape != w.shape:
                _fail(prog, f"{path} result {k}: {gt}{list(g.shape)}, the NumPy backend {wt}{list(w.shape)}")
            if gn is not None and gn != wn:
                _fail(prog, f"{path} result {k}: names {list(gn)}, the NumPy backend {list(wn)}")
            d = _values_match(w, g, tol)
            if d:
                _fail(prog, f"{path} result {k} vs the NumPy backend: {d}")
    if not with_jax:
        return
    try:
        want = _jax_results(prog)
    except Exception as err:  # noqa: BLE001
        _fail(prog, f"the JAX twin failed: {type(err).__name__}: {err}")
    if len(want) != len(ref):
        _fail(prog, f"JAX gave {len(want)} results, nxpy {len(ref)}")
    for k, (w, (g, gt, _)) in enumerate(zip(want, ref)):
        w = w.astype(g.dtype) if not prog.grad else w
        d = _values_match(w, g, tol)
        if d:
            _fail(prog, f"result {k}: the NumPy backend vs JAX: {d}")


# ----------------------------------------------------------------------------------------
# vmap: the program on a batch of examples
# ----------------------------------------------------------------------------------------
#: examples in the batch of :func:`check_vmap`
VMAP_SIZE = 3


@dataclasses.dataclass
class VmapSpec:
    """How :func:`check_vmap` batches a program. ``examples``: per input, its
    :data:`VMAP_SIZE` examples as Leaf descriptions (the program's own input first, then
    inputs drawn afresh from the same domain; the program's own each time for a shared
    input); ``in_axes``: per input, the axis of the batched input its examples are
    stacked along (possibly negative), or None (shared: the same for every example,
    passed unbatched); ``out_axes``: per result, where vmap puts the batch; ``nested``:
    the program returns a tuple (else one tensor)."""
    in_axes: tuple
    out_axes: tuple
    examples: list
    nested: bool

    def vmap_out_axes(self):
        return self.out_axes if self.nested else self.out_axes[0]

    def describe(self, prog) -> str:
        ids = [i for i, n in enumerate(prog.nodes) if isinstance(n, Leaf)]
        lines = [f"  vmap over {VMAP_SIZE} examples: in_axes={self.in_axes!r}, "
                 f"out_axes={self.vmap_out_axes()!r}"]
        for i, a, exs in zip(ids, self.in_axes, self.examples):
            if a is None:
                lines.append(f"    n{i}: shared (in_axes None)")
                continue
            for k, leaf in enumerate(exs):
                lines.append(f"    n{i} example {k}: {'as above' if leaf == prog.nodes[i] else leaf}")
        return "\n".join(lines)


def _jax_vmap_ok(prog: Program) -> bool:
    """Whether ``jax.vmap`` batches ``prog``'s JAX twin: lax's select_and_scatter has no
    batching rule, and lax.bitcast_convert_type's rule fails to a wider type when the
    batch axis is the last one (the one the bitcast merges), so complex bitcasts (pairs
    of floats) are left out too."""
    for i, n in enumerate(prog.nodes):
        if isinstance(n, Step) and (n.op in ("window_scatter_max", "window_scatter_min") or (
                n.op == "bitcast" and "c" in (prog.types[n.args[0]][0], prog.types[i][0]))):
            return False
    return True


def _leaf_tensor(leaf: Leaf, array=None):
    return nx.tensor(leaf.array() if array is None else array, type=leaf.type,
                     names=list(leaf.names) if leaf.names else None)


def _rules_hold(prog: Program, leaves) -> bool:
    """Whether the inputs ``leaves`` (one Leaf per input) keep the rules of the module
    docstring that look at values (:func:`_value_rules_hold`), node by node on the NumPy
    backend."""
    it = iter(leaves)
    vals = []
    try:
        with _numpy_backend(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for n in prog.nodes:
                if isinstance(n, Leaf):
                    vals.append(_leaf_tensor(next(it)))
                    continue
                args = [vals[a] for a in n.args]
                vals.append(OPS[n.op][0](*args, **n.kw))
                if not _value_rules_hold(n, args, vals[-1]):
                    return False
    except Exception:  # noqa: BLE001 - an example the program cannot take is not drawn
        return False
    return True


def _redraw(prog: Program, node: int, leaf: Leaf, rng) -> Leaf:
    """Another example of input ``leaf`` (node ``node``) from its domain: a fresh draw;
    for the generator's index inputs (``data``), a permutation of the same indices (so
    ``take``/``gather`` indices stay in range and ``indexed_put`` rows distinct), or for a
    ``dynamic_slice`` start, another start (out-of-range starts are clamped everywhere)."""
    if leaf.data is None:
        return dataclasses.replace(leaf, seed=int(rng.integers(2**31)))
    d = np.asarray(leaf.data)
    uses = {(n.op, k) for n in prog.nodes if isinstance(n, Step) for k, a in enumerate(n.args) if a == node}
    if not d.ndim:
        if uses <= {("dynamic_slice", 1)}:
            return dataclasses.replace(leaf, data=int(d) + int(rng.integers(1, 4)))
        return leaf
    if d.ndim >= 2:  # gather/indexed_* coordinates: whole rows move
        return dataclasses.replace(leaf, data=d[rng.permutation(d.shape[0])].tolist())
    return dataclasses.replace(leaf, data=rng.permutation(d.reshape(-1)).reshape(d.shape).tolist())


def _axis_choice(rng, rank):
    """0 (leading), another axis of the batched value (of rank ``rank + 1``; sometimes
    written negative)."""
    if not rank or rng.random() < 0.5:
        return 0
    a = int(rng.integers(1, rank + 1))
    return a - (rank + 1) if rng.random() < 0.3 else a


def vmap_spec(prog: Program) -> VmapSpec:
    """The batch :func:`check_vmap` runs ``prog`` on (deterministic in the program's seed
    and index): random ``in_axes`` (0, another axis or None, at least one input
    batched), random ``out_axes``, examples 1 and 2 of each batched input drawn afresh
    from its domain (an example whose values break a rule of the module docstring is
    drawn again, then given up for the program's own inputs)."""
    rng = np.random.default_rng([prog.seed, prog.index, 2])
    leaves = prog.leaves()
    ids = [i for i, n in enumerate(prog.nodes) if isinstance(n, Leaf)]
    in_axes = [None if rng.random() < 0.3 else _axis_choice(rng, len(leaf.shape)) for leaf in leaves]
    if all(a is None for a in in_axes):
        in_axes[int(rng.integers(len(leaves)))] = 0
    examples = [[leaf] for leaf in leaves]
    for _ in range(1, VMAP_SIZE):
        for _attempt in range(3):
            drawn = [leaf if a is None else _redraw(prog, i, leaf, rng)
                     for i, leaf, a in zip(ids, leaves, in_axes)]
            if _rules_hold(prog, drawn):
                break
        else:
            drawn = leaves
        for exs, leaf in zip(examples, drawn):
            exs.append(leaf)
    with _numpy_backend(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = prog.function()(*[_leaf_tensor(leaf) for leaf in leaves])
    outs = _leaves(r)
    out_axes = tuple(_axis_choice(rng, t.rank) for t in outs)
    return VmapSpec(tuple(in_axes), out_axes, examples, isinstance(r, (tuple, list)))


def _fail_vmap(prog, spec, what):
    raise Mismatch(f"vmap: {what}\n{prog}\n{spec.describe(prog)}\nrepro: {prog.repro(vmap=True)}")


def check_vmap(prog: Program, spec: VmapSpec | None = None, *, with_jax: bool = True) -> None:
    """``vmap`` of ``prog`` (grad programs: per-example gradients) on the batch of
    ``spec`` (default: :func:`vmap_spec`), under the Evaluator and EXLA, against the
    program run on each example alone on the NumPy backend, the results stacked along
    ``out_axes``: types, shapes, dim names (the batch axis unnamed) and values as
    :func:`check` compares them; then ``jax.vmap`` of the JAX twin against the same
    stack. Raises :class:`Mismatch` naming vmap, with the batch and a repro command."""
    spec = spec or vmap_spec(prog)
    fn = prog.function()
    leaves = prog.leaves()
    tol = _tolerance(prog)
    per_example = []
    with _numpy_backend(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(VMAP_SIZE):
            try:
                per_example.append(_leaves(fn(*[_leaf_tensor(exs[k]) for exs in spec.examples])))
            except Exception as err:  # noqa: BLE001
                _fail_vmap(prog, spec, f"the NumPy backend failed on example {k}: {type(err).__name__}: {err}")
        want = []
        for r, oa in enumerate(spec.out_axes):
            ts = [pe[r] for pe in per_example]
            oa = oa % (ts[0].rank + 1)
            names = list(ts[0].names)
            names.insert(oa, None)
            want.append((np.stack([np.asarray(t.to_numpy()).reshape(t.shape) for t in ts], axis=oa),
                         str(ts[0].type), tuple(names)))
        arrays, args = [], []
        for leaf, a, exs in zip(leaves, spec.in_axes, spec.examples):
            if a is None:
                arrays.append(leaf.array())
                args.append(_leaf_tensor(leaf))
                continue
            a = a % (len(leaf.shape) + 1)
            arrays.append(np.stack([x.array() for x in exs], axis=a))
            names = list(leaf.names) if leaf.names else [None] * len(leaf.shape)
            names.insert(a, None)
            args.append(nx.tensor(arrays[-1], type=leaf.type, names=names if any(names) else None))
        batched = vmap(fn, in_axes=spec.in_axes, out_axes=spec.vmap_out_axes())
        for compiler in ("evaluator", "exla"):
            try:
                got = _leaves(jit(batched, compiler=compiler)(*args))
            except Exception as err:  # noqa: BLE001 - reported as a mismatch
                _fail_vmap(prog, spec, f"vmap/{compiler} failed: {type(err).__name__}: {err}")
            if len(got) != len(want):
                _fail_vmap(prog, spec, f"vmap/{compiler}: {len(got)} results, expected {len(want)}")
            for k, (t, (w, wt, wn)) in enumerate(zip(got, want)):
                g = np.asarray(t.to_numpy()).reshape(t.shape)
                where = f"vmap/{compiler} result {k} vs the examples run alone (NumPy backend), stacked"
                if str(t.type) != wt or g.shape != w.shape:
                    _fail_vmap(prog, spec, f"{where}: {t.type}{list(g.shape)}, expected {wt}{list(w.shape)}")
                if tuple(t.names) != wn:
                    _fail_vmap(prog, spec, f"{where}: names {list(t.names)}, expected {list(wn)}")
                d = _values_match(w, g, tol)
                if d:
                    _fail_vmap(prog, spec, f"{where}: {d}")
    if not with_jax or not _jax_vmap_ok(prog):
        return
    jax = pjrt.oracle()
    try:
        with warnings.catch_warnings(), jax.enable_x64(True):
            warnings.simplefilter("ignore")
            f = jax.jit(jax.vmap(prog.jax_function(jax), in_axes=spec.in_axes, out_axes=spec.vmap_out_axes()))
            got = [np.asarray(x) for x in jax.tree_util.tree_leaves(f(*arrays))]
    except Exception as err:  # noqa: BLE001
        _fail_vmap(prog, spec, f"jax.vmap of the JAX twin failed: {type(err).__name__}: {err}")
    if len(got) != len(want):
        _fail_vmap(prog, spec, f"jax.vmap gave {len(got)} results, expected {len(want)}")
    for k, (g, (w, _, _)) in enumerate(zip(got, want)):
        g = g.astype(w.dtype) if not prog.grad else g
        d = _values_match(g, w, tol)
        if d:
            _fail_vmap(prog, spec, f"result {k}: the examples run alone (NumPy backend), stacked, vs jax.vmap: {d}")


# ----------------------------------------------------------------------------------------
# jvp: forward mode against jax.jvp
# ----------------------------------------------------------------------------------------
def _fail_jvp(prog, what):
    raise Mismatch(f"jvp: {what}\n{prog}\nrepro: {prog.repro()} (then fuzz.check_jvp)")


def check_jvp(prog: Program) -> str:
    """``jvp`` of ``prog`` (grad programs: forward over reverse) along fixed random
    tangents of its float inputs, under the Evaluator and EXLA, against ``jax.jvp`` of the
    JAX twin: the primal results and their tangents, values as :func:`check` compares them
    (with a tolerance 100 times looser for the tangents: derivatives amplify rounding).

    Where ``jax.jvp`` cannot differentiate the twin, the tangents are checked against
    nxpy's reverse mode instead (:func:`_check_jvp_by_grad`: for random weights ``w`` of
    the results, ``<w, J t>`` equals ``<grad <w, f>, t>``, the directional derivative a
    finite difference would estimate, computed without rounding noise). Programs with an
    op whose complex tangent nxpy does not compute yet are skipped. Returns ``"jax"``,
    ``"grad"`` or ``"skipped"`` (what the tangents were checked against); raises
    :class:`Mismatch` naming jvp.

    >>> check_jvp(generate(0, 1))   # when nxpy's jvp agrees with JAX's
    'jax'
    """
    if isinstance(prog, ShardedProgram):
        return "skipped"
    jax = pjrt.oracle()
    leaves = prog.leaves()
    rng = np.random.default_rng([prog.seed, prog.index, 7])
    arrays = [leaf.array() for leaf in leaves]
    live = [T.parse(leaf.type).is_inexact for leaf in leaves]
    tans = []
    for a, f in zip(arrays, live):
        t = rng.standard_normal(a.shape) if f else None
        if f and np.iscomplexobj(a):
            t = t + 1j * rng.standard_normal(a.shape)
        tans.append(t.astype(a.dtype) if f else None)
    fn = prog.function()
    args = [_leaf_tensor(leaf) for leaf in leaves]
    targs = [_leaf_tensor(leaf, t) if t is not None else _leaf_tensor(leaf)
             for leaf, t in zip(leaves, tans)]
    try:
        with warnings.catch_warnings(), jax.enable_x64(True):
            warnings.simplefilter("ignore")
            jt = [t if t is not None else np.zeros(a.shape, jax.dtypes.float0)
                  for a, t in zip(arrays, tans)]
            y, ty = jax.jit(lambda p, t: jax.jvp(prog.jax_function(jax), p, t))(arrays, jt)
            want = [np.asarray(x) for x in jax.tree_util.tree_leaves((y, ty))]
    except Exception:  # noqa: BLE001 - JAX cannot differentiate it: against grad
        return _check_jvp_by_grad(prog, fn, args, targs, rng)
    tol = _tolerance(prog)
    for compiler in ("evaluator", "exla"):
        got = _nx_jvp(prog, fn, args, targs, compiler)
        if got is None:
            return "skipped"
        if len(got) != len(want):
            _fail_jvp(prog, f"{compiler}: {len(got)} results, jax.jvp {len(want)}")
        half = len(got) // 2
        for k, (t, w) in enumerate(zip(got, want)):
            g = np.asarray(t.to_numpy()).reshape(t.shape)
            if w.dtype == jax.dtypes.float0:
                continue  # an integer result's tangent
            w = w.astype(g.dtype) if not prog.grad else w
            scale = 1.0 if k < half else 100.0
            d = _values_match(w, g, (tol[0] * scale, tol[1] * scale))
            if d:
                what = "result" if k < half else "tangent of result"
                _fail_jvp(prog, f"{compiler} {what} {k % max(half, 1)} vs jax.jvp: {d}")
    return "jax"


def _nx_jvp(prog, fn, args, targs, compiler):
    """nxpy's ``jvp`` of ``fn`` on ``compiler``: the flat (results, tangents), or None
    where an op's complex tangent is not computed yet."""
    try:
        got = jit(lambda p, t: jvp(fn, p, t), compiler=compiler)(tuple(args), tuple(targs))
    except NotImplementedError as err:
        if "of complex values is not supported yet" in str(err):
            return None  # a known limit of forward mode (nxpy/defn/jvp_rules.py)
        _fail_jvp(prog, f"{compiler} failed: {type(err).__name__}: {err}")
    except Exception as err:  # noqa: BLE001 - reported as a mismatch
        _fail_jvp(prog, f"{compiler} failed: {type(err).__name__}: {err}")
    return _leaves(got)


def _check_jvp_by_grad(prog, fn, args, targs, rng) -> str:
    """The tangents ``J t`` of ``prog``'s real float results against nxpy's ``grad``:
    ``<w, J t> == <grad(x -> <w, f(x)>), t>`` for random weights ``w``, on the Evaluator
    and EXLA, in f64 (the two sides sum the same products in other orders). Returns
    ``"grad"``, or ``"skipped"`` when no result is a real float or grad cannot run."""
    live = [i for i, a in enumerate(args) if a.type.is_inexact and not a.type.is_complex]
    if not live:
        return "skipped"
    for compiler in ("evaluator", "exla"):
        got = _nx_jvp(prog, fn, args, targs, compiler)
        if got is None:
            return "skipped"
        half = len(got) // 2
        outs = [k for k in range(half) if got[k].type.is_inexact and not got[k].type.is_complex]
        if not outs:
            return "skipped"
        ws = [rng.standard_normal(got[k].shape) for k in outs]

        def weighted(*xs, outs=outs, ws=ws):
            full = list(args)
            for i, x in zip(live, xs):
                full[i] = x
            ys = _leaves(fn(*full))
            return sum(nx.sum(nx.as_type(ys[k], "f64") * nx.tensor(w, type="f64"))
                       for k, w in zip(outs, ws))
        try:
            gs = jit(grad(weighted, argnums=tuple(range(len(live)))), compiler=compiler)(
                *[args[i] for i in live])
        except Exception:  # noqa: BLE001 - reverse mode cannot run it either
            return "skipped"
        lhs = sum(float(np.sum(np.asarray(got[half + k].to_numpy(), np.float64) * w))
                  for k, w in zip(outs, ws))
        rhs = sum(float(np.sum(np.asarray(g.to_numpy(), np.float64)
                               * np.asarray(targs[i].to_numpy(), np.float64)))
                  for g, i in zip(gs, live))
        rtol, atol = _tolerance(prog)
        scale = max(1.0, abs(lhs), abs(rhs))
        if not (np.isfinite(lhs) and np.isfinite(rhs)) or \
                abs(lhs - rhs) > 100 * (rtol * scale + atol):
            if np.isnan(lhs) and np.isnan(rhs):
                continue
            _fail_jvp(prog, f"{compiler}: <w, J t> = {lhs!r} by jvp but {rhs!r} by grad "
                            f"(<grad <w, f>, t>)")
    return "grad"


# ----------------------------------------------------------------------------------------
# Sharded programs
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class ShardedProgram:
    """A ``shard_map`` body (``kind="shard_map"``: pre-op, collective, post-op, on the
    local shard) or a ``shard_jit`` program (``kind="shard_jit"``: an elementwise op, an
    optional reduction, an optional ``all_gather``) on a mesh."""
    seed: int
    index: int
    kind: str
    mesh_shape: tuple
    leaf: Leaf
    spec: tuple            # shard_map: the in_spec; shard_jit: {dim: [mesh axis]}
    pre: str
    collective: tuple      # (name, axes, options)
    post: str

    def __str__(self):
        return (f"sharded program seed={self.seed} index={self.index}: {self.kind} on mesh "
                f"{self.mesh_shape} (x, y)\n  x = {self.leaf}\n  spec {self.spec}\n"
                f"  body: {self.post}({self.collective[0]}({self.pre}(x), axes={self.collective[1]!r}, "
                f"{self.collective[2]}))")

    def repro(self):
        return f"python -m nxpy.testing.fuzz --sharded --seed {self.seed} --index {self.index} --show"


_SHARD_UNARY = {"identity": (lambda x: x, lambda J, x: x), "negate": (nx.negate, lambda J, x: -x),
                "abs": (nx.abs, lambda J, x: J.jnp.abs(x)), "square": (lambda x: x * x, lambda J, x: x * x)}
_MESHES: dict = {}
_JMESHES: dict = {}


def _mesh(shape):
    if shape not in _MESHES:
        _MESHES[shape] = nx.Mesh("fuzz", shape, axis_names=("x", "y"))
    return _MESHES[shape]


def _jmesh(jax, shape):
    if shape not in _JMESHES:
        devs = np.empty(int(np.prod(shape)), dtype=object)
        devs[:] = jax.devices()[:devs.size]
        _JMESHES[shape] = jax.sharding.Mesh(devs.reshape(shape), ("x", "y"))
    return _JMESHES[shape]


def _nx_collective(name, axes, kw):
    f = {"psum": psum, "pmax": pmax, "pmin": pmin, "pmean": pmean}.get(name)
    if f:
        return lambda a: f(a, axes)
    if name == "all_gather":
        return lambda a: all_gather(a, axes=axes, all_gather_dim=kw["dim"], tiled=kw["tiled"])
    if name == "psum_scatter":
        return lambda a: psum_scatter(a, axes, scatter_dimension=kw["dim"], tiled=True)
    if name == "all_to_all":
        return lambda a: all_to_all(a, axes, kw["split"], kw["concat"], tiled=True)
    if name == "ppermute":
        return lambda a: ppermute(a, axes, kw["perm"])
    if name == "axis_index":
        return lambda a: a + nx.as_type(axis_index(axes), a.type)
    if name == "sum":
        return lambda a: nx.sum(a, axes=[kw["dim"]], keep_axes=True)
    if name == "all_gather_global":
        return lambda a: all_gather(a, all_gather_dim=kw["dim"])
    return lambda a: a


def _jax_collective(J, name, axes, kw):
    lax = J.lax
    if name in ("psum", "pmax", "pmin", "pmean"):
        return lambda a: getattr(lax, name)(a, axes)
    if name == "all_gather":
        return lambda a: lax.all_gather(a, axes, axis=kw["dim"], tiled=kw["tiled"])
    if name == "psum_scatter":
        return lambda a: lax.psum_scatter(a, axes, scatter_dimension=kw["dim"], tiled=True)
    if name == "all_to_all":
        return lambda a: lax.all_to_all(a, axes, kw["split"], kw["concat"], tiled=True)
    if name == "ppermute":
        return lambda a: lax.ppermute(a, axes, kw["perm"])
    if name == "axis_index":
        return lambda a: a + lax.axis_index(axes).astype(a.dtype)
    if name == "sum":
        return lambda a: J.jnp.sum(a, axis=kw["dim"], keepdims=True)
    return lambda a: a


def generate_sharded(seed: int, index: int) -> ShardedProgram:
    rng = np.random.default_rng([seed, index, 1])
    g = _Gen(rng)
    mesh_shape = (2, 2) if rng.random() < 0.5 else (2, 4)
    size = {"x": mesh_shape[0], "y": mesh_shape[1]}
    t = g.pick(["f32", "s32"])
    shape = (8, 8) if rng.random() < 0.7 else (8, 8, 2)
    leaf = Leaf(shape, t, seed=int(rng.integers(2**31)))
    pre, post = g.pick(list(_SHARD_UNARY)), g.pick(list(_SHARD_UNARY))
    if rng.random() < 0.6:
        spec = g.pick([("x", "y"), ("x", None), (None, "y"), (("x", "y"), None), ("y", "x"), (None, None)])
        axes = g.pick(["x", "y", ("x", "y")])
        n = int(np.prod([size[a] for a in (axes if isinstance(axes, tuple) else (axes,))]))
        local = [d // int(np.prod([size[a] for a in ((s,) if isinstance(s, str) else (s or ()))]))
                 for d, s in zip(shape, spec + (None,) * (len(shape) - len(spec)))]
        names = ["psum", "pmax", "pmin", "all_gather", "axis_index"] + (["pmean"] if t == "f32" else [])
        names += [c for c, ok in (("psum_scatter", local[0] % n == 0), ("all_to_all", local[1] % n == 0),
                                  ("ppermute", isinstance(axes, str))) if ok]
        name = g.pick(names)
        kw = {}
        if name == "all_gather":
            kw = {"dim": int(rng.integers(len(shape))), "tiled": bool(rng.random() < 0.7)}
        elif name == "psum_scatter":
            kw = {"dim": 0}
        elif name == "all_to_all":
            kw = {"split": 1, "concat": 0}
        elif name == "ppermute":
            k = int(rng.integers(1, n))
            kw = {"perm": [(i, (i + k) % n) for i in range(n)]}
        return ShardedProgram(seed, index, "shard_map", mesh_shape, leaf, spec, pre, (name, axes, kw), post)
    spec = g.pick([{0: ["x"], 1: ["y"]}, {0: ["x", "y"]}, {1: ["y"]}, {0: ["y"], 1: ["x"]}, {}])
    name = g.pick(["none", "sum", "all_gather_global"])
    kw = {"dim": int(rng.integers(2))}
    return ShardedProgram(seed, index, "shard_jit", mesh_shape, leaf, spec, pre, (name, None, kw), post)


def _sharded_nx(p: ShardedProgram):
    pre, post = _SHARD_UNARY[p.pre][0], _SHARD_UNARY[p.post][0]
    coll = _nx_collective(*p.collective)
    return lambda a: post(coll(pre(a)))


def _shard_map(p: ShardedProgram, body, mesh, **opts):
    """``p``'s ``shard_map``: results concatenated along dim 0 in partition order."""
    return shard_map(body, mesh, in_specs=p.spec, out_specs=nx.P(("x", "y")), check_vma=False, **opts)


def _sharded_round_trip(p: ShardedProgram, body, mesh, args, original) -> None:
    """Emits ``p``'s module (``to_mlir``, as EXLA compiles it), loads it back, runs it with
    ``Program.shard_jit`` (on the module's own mesh, ``prog.mesh()``) on EXLA and the
    Evaluator, and compares each device's results with the ``original`` ones of the same
    compiler (:func:`nxpy.stablehlo.roundtrip.compare_per_device`). ``args``: what the
    original took (the global input for ``shard_map``, per-device lists for ``shard_jit``)."""
    try:
        if p.kind == "shard_map":
            text = to_mlir(_shard_map(p, body, mesh), *args)
            per_device_args = [list(args)] * mesh.size
        else:
            text = to_mlir(body, args, mesh=mesh, input_shardings=[p.spec])
            per_device_args = args
        prog = load(text)
    except Exception as err:  # noqa: BLE001 - reported as a mismatch
        _fail(p, f"stablehlo failed: {type(err).__name__}: {err}")
    for compiler in ("exla", "evaluator"):
        try:
            loaded = prog.shard_jit(compiler)(per_device_args)
        except Exception as err:  # noqa: BLE001
            _fail(p, f"stablehlo/{compiler} failed: {type(err).__name__}: {err}\n--- module ---\n{text}")
        try:
            compare_per_device(original[compiler], loaded, f"stablehlo/{compiler} vs {compiler}")
        except RoundTripError as err:
            _fail(p, f"{err}\n--- module ---\n{text}")


def check_sharded(p: ShardedProgram) -> None:
    jax = pjrt.oracle()
    J = _Jax(jax)
    mesh = _mesh(p.mesh_shape)
    x = p.leaf.array()
    body = _sharded_nx(p)
    jpre, jpost = _SHARD_UNARY[p.pre][1], _SHARD_UNARY[p.post][1]
    jcoll = _jax_collective(J, *p.collective)
    jbody = lambda a: jpost(J, jcoll(jpre(J, a)))  # noqa: E731
    got, per_device = {}, {}  # per_device: each compiler's result tensors, one per device
    with _numpy_backend(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for compiler in ("evaluator", "exla"):
            try:
                if p.kind == "shard_map":
                    f = _shard_map(p, body, mesh, compiler=compiler)
                    args = (nx.tensor(x),)
                    res = f(*args)
                    got[compiler] = np.split(np.asarray(res.to_numpy()), mesh.size, axis=0)
                    # jit of a shard_map: its module takes and returns global, replicated
                    # values, so every device of the loaded module holds the whole result
                    per_device[compiler] = [res] * mesh.size
                else:
                    f = shard_jit(body, mesh, input_shardings=[p.spec], compiler=compiler)
                    args = [[s] for s in SH.shard(nx.tensor(x), mesh, SH.normalize(p.spec, x.shape, mesh))]
                    res = f(args)
                    got[compiler] = [np.asarray(r.to_numpy()) for r in res]
                    got["out_sharding"] = SH.normalize(f.output_shardings, res[0].shape, mesh)
                    per_device[compiler] = res
            except Exception as err:  # noqa: BLE001
                raise Mismatch(f"{compiler} failed: {type(err).__name__}: {err}\n{p}\nrepro: {p.repro()}") from err
        _sharded_round_trip(p, body, mesh, args, per_device)
        P = jax.sharding.PartitionSpec
        with jax.enable_x64(False):
            if p.kind == "shard_map":
                jf = jax.jit(jax.shard_map(jbody, mesh=_jmesh(jax, p.mesh_shape), in_specs=P(*p.spec),
                                           out_specs=P(("x", "y")), check_vma=False))
                want = np.split(np.asarray(jf(x)), mesh.size, axis=0)
            else:
                full = np.asarray(jax.jit(jbody)(x))
                want = SH.shard_array(full, got["out_sharding"], mesh)
    tol = (1e-5, 1e-5) if p.leaf.type == "f32" else (0, 0)
    for who in ("evaluator", "exla"):
        for d, (g, w) in enumerate(zip(got[who], want)):
            try:
                if g.shape != w.shape:
                    raise AssertionError(f"shape {g.shape}, JAX {w.shape}")
                np.testing.assert_allclose(g, w, rtol=tol[0], atol=tol[1] * max(1, np.abs(w).max(initial=0)))
            except AssertionError as err:
                raise Mismatch(f"{who}, device {d}, vs JAX: {err}\n{p}\nrepro: {p.repro()}") from None


# ----------------------------------------------------------------------------------------
# Many programs, and the command line
# ----------------------------------------------------------------------------------------
def run_many(seed: int, count: int, start: int = 0, sharded_every: int = 10, stop_on_first=False,
             out=None, vmap_every: int = 1) -> list:
    """Checks programs ``start .. start+count-1`` of stream ``seed`` (every
    ``sharded_every``-th is a sharded one; single-device programs whose index is a
    multiple of ``vmap_every`` also batched, :func:`check_vmap`; 0: none); returns the
    mismatches."""
    found = []
    for k in range(start, start + count):
        prog = generate_sharded(seed, k) if sharded_every and k % sharded_every == sharded_every - 1 \
            else generate(seed, k)
        try:
            check(prog, vmap=bool(vmap_every) and k % vmap_every == 0)
        except Mismatch as err:
            found.append(err)
            if out:
                print(f"MISMATCH {err}\n", file=out, flush=True)
            if stop_on_first:
                break
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nxpy.testing.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--index", type=int, help="one program (with --show: print it)")
    ap.add_argument("--sharded", action="store_true", help="with --index: the sharded program")
    ap.add_argument("--vmap", action="store_true",
                    help="with --index: check vmap of the program too (with --show: print the batch)")
    ap.add_argument("--vmap-every", type=int, default=1, metavar="N",
                    help="when fuzzing: check vmap of every N-th program (0: none; default 1)")
    ap.add_argument("--show", action="store_true")
    a = ap.parse_args(argv)
    if a.vmap and a.sharded:
        ap.error("--vmap: sharded programs are not batched")
    pjrt.oracle()
    warnings.simplefilter("ignore")
    if a.index is not None:
        prog = (generate_sharded if a.sharded else generate)(a.seed, a.index)
        if a.show:
            print(prog)
            if a.vmap:
                print(vmap_spec(prog).describe(prog))
        try:
            check(prog, vmap=a.vmap)
        except Mismatch as err:
            print(f"MISMATCH {err}")
            return 1
        print("ok")
        return 0
    t0 = time.perf_counter()
    found = run_many(a.seed, a.count, a.start, out=sys.stdout, vmap_every=a.vmap_every)
    print(f"fuzzed {a.count} programs (seed {a.seed}, from {a.start}) in "
          f"{time.perf_counter() - t0:.0f} s: {len(found)} mismatch(es)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
