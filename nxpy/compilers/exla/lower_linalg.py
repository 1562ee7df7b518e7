"""EXLA lowerings of the linear-algebra primitives: the solver routines jaxlib ships for
each platform, called as ``stablehlo.custom_call`` exactly as JAX emits them (see
``docs/linalg.md`` for CPU and ``docs/gpu.md`` for CUDA/ROCm). :data:`TARGETS` is the one
table of which target each op calls on which platform:

* ``cpu``: LAPACK (``lapack_?potrf_ffi``, ... with ``?`` = ``s``/``d``/``c``/``z``);
  triangular solves with ``lapack_?trsm_ffi``; getrf's pivots become the permutation with
  a loop traced from nxpy ops (as JAX's ``lu_pivots_to_permutation`` on CPU).
* ``cuda`` (``rocm``: the same with ``hip`` for ``cu``): cuSOLVER (``cusolver_potrf_ffi``,
  ``cusolver_getrf_ffi`` + ``cu_lu_pivots_to_permutation``, ``cusolver_geqrf_ffi`` +
  ``cusolver_orgqr_ffi``, ``cusolver_syevd_ffi``, ``cusolver_gesvdj_ffi`` for matrices of
  at most 1024 rows and columns, else ``cusolver_gesvd_ffi``), one target per routine
  for every type; triangular solves are XLA's own ``stablehlo.triangular_solve``
  (cuBLAS ``trsm``).
* any other platform (``tpu``): the portable composition of ``nxpy/defn/portable.py``,
  lowered in place (and traced in place by the compiler: ``ExlaCompiler.supports``).

=================  =========================================================================
op                 what follows the calls (every platform)
=================  =========================================================================
cholesky           the lower triangle, NaN where ``info != 0`` (not positive definite)
triangular_solve   a vector ``b`` is a column (left side) or a row (right side)
lu                 the permutation matrix from the permutation; ``l`` (unit lower) and ``u``
solve              ``b``'s rows permuted, two triangular solves (unit lower, then upper), as
                   ``jnp.linalg.solve``; NaN where ``info != 0`` (a zero pivot)
qr                 the packed matrix padded or sliced to the mode's ``q`` shape before
                   ``orgqr``, as JAX; ``r`` the upper triangle
eigh               NaN where ``info != 0``
svd                NaN where ``info != 0``; on GPUs, gesvdj's ``v`` transposed (and sliced
                   to the reduced shapes), gesvd on the transpose of a wide matrix, as JAX
=================  =========================================================================

Every call passes its matrices column-major (``operand_layouts``/``result_layouts``
``[r-2, r-1, r-3, ..., 0]``: XLA transposes around the call) with the leading dimensions
as a batch (``mhlo.frontend_attributes = {num_batch_dims = ...}``); on GPUs the first
result aliases the first operand (``output_operand_aliases``), as JAX emits it. The types
the solvers have no routine for (f16, bf16) compute in f32. Matrices with an empty
dimension never reach a solver: their results are constants. The LAPACK targets run only
after ``nxpy.pjrt.lapack_ready()`` (``pjrt.compile`` calls it for modules that name one).
"""
from __future__ import annotations

import functools

from ... import ops, types as T
from ...defn.expr import Expr, trace_fn
from ...defn.portable import pivots_to_permutation
from ...layout import NamedSharding
from ...ops.core import portable
from ...tensor import Tensor
from .lowering import Ctx, register_lowering, register_platforms
from .mlir import Val, i64_array
from .sharded import manual_region

__all__ = ["TARGETS", "TRIANGULAR_SOLVE", "PIVOTS_LOOP", "GPU_PREFIX", "LAPACK_PREFIX",
           "solver_call", "target_name", "lower_traced", "lower_portable"]

#: not a custom call: XLA's own ``stablehlo.triangular_solve`` (cuBLAS ``trsm`` on GPUs)
TRIANGULAR_SOLVE = "stablehlo.triangular_solve"
#: not a custom call: LAPACK's pivots made the permutation by a loop of nxpy ops
PIVOTS_LOOP = "nxpy.defn.portable.pivots_to_permutation"

#: op → platform → routine → custom-call target: the one table of what each
#: linear-algebra op calls on each platform (what ``jax.export`` prints for
#: ``jnp.linalg`` with ``platforms=[...]``, jax 0.10.2 through 0.12). ``?`` is LAPACK's
#: type letter; a pair is (real, complex) targets. A platform not listed for an op lowers
#: (and traces) its portable composition.
TARGETS = {
    "cholesky": {
        "cpu": {"potrf": "lapack_?potrf_ffi"},
        "cuda": {"potrf": "cusolver_potrf_ffi"},
        "rocm": {"potrf": "hipsolver_potrf_ffi"},
    },
    "triangular_solve": {
        "cpu": {"trsm": "lapack_?trsm_ffi"},
        "cuda": {"trsm": TRIANGULAR_SOLVE},
        "rocm": {"trsm": TRIANGULAR_SOLVE},
    },
    "lu": {
        "cpu": {"getrf": "lapack_?getrf_ffi", "permutation": PIVOTS_LOOP},
        "cuda": {"getrf": "cusolver_getrf_ffi", "permutation": "cu_lu_pivots_to_permutation"},
        "rocm": {"getrf": "hipsolver_getrf_ffi",
                 "permutation": "hip_lu_pivots_to_permutation"},
    },
    "solve": {
        "cpu": {"getrf": "lapack_?getrf_ffi", "permutation": PIVOTS_LOOP,
                "trsm": "lapack_?trsm_ffi"},
        "cuda": {"getrf": "cusolver_getrf_ffi", "permutation": "cu_lu_pivots_to_permutation",
                 "trsm": TRIANGULAR_SOLVE},
        "rocm": {"getrf": "hipsolver_getrf_ffi",
                 "permutation": "hip_lu_pivots_to_permutation", "trsm": TRIANGULAR_SOLVE},
    },
    "qr": {
        "cpu": {"geqrf": "lapack_?geqrf_ffi", "orgqr": ("lapack_?orgqr_ffi", "lapack_?ungqr_ffi")},
        "cuda": {"geqrf": "cusolver_geqrf_ffi", "orgqr": "cusolver_orgqr_ffi"},
        "rocm": {"geqrf": "hipsolver_geqrf_ffi", "orgqr": "hipsolver_orgqr_ffi"},
    },
    "eigh": {
        "cpu": {"syevd": ("lapack_?syevd_ffi", "lapack_?heevd_ffi")},
        "cuda": {"syevd": "cusolver_syevd_ffi"},
        "rocm": {"syevd": "hipsolver_syevd_ffi"},
    },
    "svd": {
        "cpu": {"gesdd": "lapack_?gesdd_ffi"},
        "cuda": {"gesvdj": "cusolver_gesvdj_ffi", "gesvd": "cusolver_gesvd_ffi"},
        "rocm": {"gesvdj": "hipsolver_gesvdj_ffi", "gesvd": "hipsolver_gesvd_ffi"},
    },
}

#: the GPU platforms and their jaxlib target prefixes (``cu``/``hip``): their calls follow
#: the GPU solvers' conventions (boolean options, the first result aliasing the input)
GPU_PREFIX = {"cuda": "cu", "rocm": "hip"}
LAPACK_PREFIX = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}
#: svd on GPUs: Jacobi (gesvdj) while both dims are at most this, else QR (gesvd) (JAX's
#: choice, after NVIDIA's advice)
GESVDJ_MAX = 1024
#: gesvdj has an "economy" mode only when both dims exceed this (JAX: its batched kernel)
GESVDJ_ECON_MIN = 32


def target_name(c: Ctx, op: str, routine: str, t: T.Type) -> str:
    """The target ``op``'s ``routine`` calls on ``c``'s platform for type ``t`` (from
    :data:`TARGETS`)."""
    target = TARGETS[op][c.platform][routine]
    if isinstance(target, tuple):
        target = target[1] if t.is_complex else target[0]
    return target.replace("?", LAPACK_PREFIX[str(t)]) if "?" in target else target


def _layout(rank: int, matrix: bool) -> str:
    if rank == 0:
        return "dense<> : tensor<0xindex>"
    dims = [rank - 2, rank - 1] + list(range(rank - 3, -1, -1)) if matrix and rank >= 2 \
        else list(range(rank - 1, -1, -1))
    return f"dense<[{', '.join(map(str, dims))}]> : tensor<{rank}xindex>"


def _option(v) -> str:
    """An option of a solver's ``backend_config``: booleans as they are (GPU), one
    character as LAPACK's ``ui8`` code, integers as ``ui8``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f"{ord(v)} : ui8"
    return f"{int(v)} : ui8"


def solver_call(c: Ctx, op: str, routine: str, operands, results, *, matrix_in, matrix_out,
                config=None, batch_dims: int = 0, alias: bool = True):
    """``stablehlo.custom_call`` of ``op``'s ``routine`` on ``c``'s platform (the target
    from :data:`TARGETS`, typed by the first operand) as JAX emits it: typed FFI
    (``api_version = 4``) with ``config`` as its attribute dictionary; ``matrix_in``/
    ``matrix_out`` say which operands and results are (batches of) matrices, passed
    column-major; on GPUs the first result aliases the first operand unless ``alias`` is
    False."""
    c.refuse_custom_call(target_name(c, op, routine, operands[0].type))
    cfg = ", ".join(f"{k} = {_option(v)}" for k, v in (config or {}).items())
    gpu = c.platform in GPU_PREFIX
    batch = {"mhlo.frontend_attributes": f'{{num_batch_dims = "{batch_dims}"}}'}
    attrs = {
        "call_target_name": f'"{target_name(c, op, routine, operands[0].type)}"',
        "api_version": "4 : i32",
        "backend_config": "{" + cfg + "}",
        **({} if gpu else batch),
        "operand_layouts": "[" + ", ".join(_layout(len(v.shape), m)
                                           for v, m in zip(operands, matrix_in)) + "]",
    }
    if alias and gpu:
        index = "[0]" if len(results) > 1 else "[]"
        attrs["output_operand_aliases"] = (
            f"[#stablehlo.output_operand_alias<output_tuple_indices = {index}, "
            f"operand_index = 0, operand_tuple_indices = []>]")
    attrs["result_layouts"] = "[" + ", ".join(_layout(len(s), m)
                                              for (s, _), m in zip(results, matrix_out)) + "]"
    # the batch dims go where XLA's translation keeps them (as JAX's); the CPU modules
    # keep the form they always had, among the properties (XLA drops it there: unused)
    outs = c.op("stablehlo.custom_call", list(operands), list(results), attrs,
                discardable=batch if gpu else None)
    return outs[0] if len(results) == 1 else outs


def _on_gpu(c: Ctx) -> bool:
    return c.platform in GPU_PREFIX


def _compute_type(t: T.Type) -> T.Type:
    if t.is_complex:
        return t
    return t if t in (T.F32, T.F64) else T.F32


def _rows_cols(c: Ctx, shape):
    """s32 ``shape``: the row and the column index in the two last dims."""
    r = len(shape)
    return [c.op("stablehlo.iota", [], (tuple(shape), T.S32), {"iota_dimension": f"{d} : i64"})
            for d in (r - 2, r - 1)]


def _mask(c: Ctx, shape, lower: bool, k: int = 0) -> Val:
    """pred ``shape``: ``j <= i + k`` (lower) or ``j >= i + k`` (upper) in the two last dims."""
    rows, cols = _rows_cols(c, shape)
    if k:
        rows = c.binop("stablehlo.add", rows, c.const(k, T.S32, shape))
    return c.compare(cols, rows, "LE" if lower else "GE")


def _tri(c: Ctx, x: Val, lower: bool, k: int = 0) -> Val:
    return c.select(_mask(c, x.shape, lower, k), x, c.const(0, x.type, x.shape))


def _nan_unless_ok(c: Ctx, info: Val, x: Val) -> Val:
    """``x`` with each matrix (vector) whose ``info`` is non-zero replaced by NaNs."""
    ok = c.compare(info, c.const(0, T.S32, info.shape), "EQ")
    ok = c.bcast(ok, x.shape, dims=tuple(range(len(info.shape))))
    return c.select(ok, x, c.const(float("nan"), x.type, x.shape))


def _slice(c: Ctx, x: Val, limits) -> Val:
    limits = tuple(limits)
    if limits == x.shape:
        return x
    n = len(limits)
    return c.op("stablehlo.slice", [x], (limits, x.type), {
        "start_indices": i64_array([0] * n), "limit_indices": i64_array(limits),
        "strides": i64_array([1] * n)})


def _pad_to(c: Ctx, x: Val, shape) -> Val:
    shape = tuple(shape)
    if shape == x.shape:
        return x
    n = len(shape)
    return c.op("stablehlo.pad", [x, c.const(0, x.type)], (shape, x.type), {
        "edge_padding_low": i64_array([0] * n),
        "edge_padding_high": i64_array([s - d for s, d in zip(shape, x.shape)]),
        "interior_padding": i64_array([0] * n)})


def _identity(c: Ctx, shape, t: T.Type) -> Val:
    return c.convert(_mask_eq(c, shape), t)


def _mask_eq(c: Ctx, shape) -> Val:
    return c.compare(*_rows_cols(c, shape), "EQ")


def _swap_last(c: Ctx, x: Val) -> Val:
    """The transpose of each matrix of a batch (conjugated when complex)."""
    r = len(x.shape)
    shape = x.shape[:-2] + (x.shape[-1], x.shape[-2])
    y = c.op("stablehlo.transpose", [x], (shape, x.type),
             {"permutation": i64_array(list(range(r - 2)) + [r - 1, r - 2])})
    if not x.type.is_complex:
        return y
    part = (shape, T.to_real(x.type))
    re = c.op("stablehlo.real", [y], part)
    im = c.op("stablehlo.negate", [c.op("stablehlo.imag", [y], part)], part)
    return c.op("stablehlo.complex", [re, im], (shape, x.type))


def _empty(shape) -> bool:
    return any(d == 0 for d in shape)


def _results(e: Expr):
    return [(tuple(s), t) for s, t, _ in e.outs]


# ----------------------------------------------------------------------------------------
# Lowering nxpy ops inline: the pivot loop, gathers, and the portable fallback
# ----------------------------------------------------------------------------------------
def _unsupported(platform: str, custom_calls: bool = True) -> frozenset:
    """The linear-algebra ops with no target on ``platform`` (traced as compositions):
    all of them in a module without custom calls."""
    return frozenset(op for op, by_platform in TARGETS.items()
                     if not custom_calls or platform not in by_platform)


def lower_traced(c: Ctx, fun, args: list[Val]) -> list[Val]:
    """Traces ``fun`` (nxpy ops on tensors shaped like ``args``) and lowers it here (the
    linear-algebra ops it uses that have no target on this platform as their
    compositions)."""
    fn = trace_fn(lambda *xs: fun(*xs), [(v.shape, v.type, None) for v in args],
                  expand=_unsupported(c.platform, c.custom_calls))
    sub = Ctx(c.b, {}, c)
    return sub.lower_body(fn, list(args))


def lower_portable(c: Ctx, e: Expr, args: list[Val]):
    """Node ``e`` lowered as its op's portable composition (``nxpy.ops.core.PORTABLE``):
    what a platform without a solver target for the op gets."""
    impl = portable(e.op)
    if e.outs is not None:
        outs = [Tensor(None, s, t, n) for s, t, n in e.outs]
    else:
        outs = Tensor(None, e.shape, e.type, e.names)
    vals = lower_traced(c, lambda *xs: impl(outs, *xs, **e.attrs), list(args))
    return vals if e.outs is not None else vals[0]


def _solver_lowering(op: str):
    """Registers ``rule`` as the lowering of linear-algebra op ``op`` on the platforms of
    :data:`TARGETS` (elsewhere the node lowers as its portable composition, but for
    empty matrices: ``rule`` gives their constant results without a solver)."""
    platforms = frozenset(TARGETS[op])

    def register(rule):
        @functools.wraps(rule)
        def lower(c: Ctx, e: Expr, *args):
            if ((c.platform not in platforms or not c.custom_calls)
                    and not any(_empty(v.shape) for v in args)):
                return lower_portable(c, e, list(args))
            return rule(c, e, *args)
        register_lowering(op)(lower)
        register_platforms(op, platforms)
        return rule
    return register


# ----------------------------------------------------------------------------------------
def _batch_sharded(c: Ctx, e: Expr, operands, body) -> Val:
    """``body(ctx, operands, out_shape)``, run on each device's block of the batch when
    the module is sharded (global view) and ``e``'s batch dims are sharded: a
    ``sdy.manual_computation`` whose operands are sharded along the batch dims only and
    replicated along the matrix dims (XLA's partitioner cannot split a solver call by
    itself, so it would otherwise gather the whole batch on every device)."""
    prop = c.info.get("propagator")
    if prop is None or c.info.get("manual"):
        return body(c, operands, e.shape)
    out_sh = prop.of(e)
    nb = len(e.args[0].shape) - 2
    batch = tuple(out_sh[:nb])
    if not any(batch):
        return body(c, operands, e.shape)
    sh = NamedSharding.from_axes(c.info["mesh"], batch)  # each operand's and the result's
    local_out = sh.local_shape(e.shape)

    def run(s: Ctx, locals_):
        return [body(s, locals_, local_out)]
    return manual_region(c, list(operands), [sh] * len(operands), [(e.shape, e.type, sh)],
                         run)[0]


def _trsm(c: Ctx, op: str, a: Val, b: Val, *, left: bool, lower: bool, transpose: bool,
          unit: bool, batch_dims: int) -> Val:
    """``op(a) x = b`` (left) or ``x op(a) = b``, ``a`` triangular, ``b`` a batch of
    matrices: LAPACK's ``trsm`` or ``stablehlo.triangular_solve``, per :data:`TARGETS`."""
    if TARGETS[op][c.platform]["trsm"] == TRIANGULAR_SOLVE:
        return c.op(TRIANGULAR_SOLVE, [a, b], (b.shape, b.type), {
            "left_side": "true" if left else "false", "lower": "true" if lower else "false",
            "transpose_a": f"#stablehlo<transpose {'TRANSPOSE' if transpose else 'NO_TRANSPOSE'}>",
            "unit_diagonal": "true" if unit else "false"})
    return solver_call(c, op, "trsm", [a, b], [(b.shape, b.type)], matrix_in=[True, True],
                       matrix_out=[True], batch_dims=batch_dims,
                       config={"side": "L" if left else "R", "uplo": "L" if lower else "U",
                               "trans_x": "T" if transpose else "N", "diag": "U" if unit else "N"})


def _getrf(c: Ctx, op: str, a: Val, ct: T.Type):
    """LU with partial pivoting: the packed factors, the 1-based pivots (s32, ``min(m,
    n)`` per matrix) and ``info``."""
    return solver_call(c, op, "getrf", [a], [(a.shape, ct), (a.shape[:-1], T.S32),
                                             (a.shape[:-2], T.S32)],
                       matrix_in=[True], matrix_out=[True, False, False],
                       batch_dims=len(a.shape) - 2)


def _permutation(c: Ctx, op: str, ipiv: Val, m: int) -> Val:
    """The row permutation (s32, ``m`` per matrix) of getrf's 1-based pivots ``ipiv``:
    the GPU target on the 0-based pivots (as JAX), or the loop of nxpy ops."""
    if TARGETS[op][c.platform]["permutation"] == PIVOTS_LOOP:
        (perm,) = lower_traced(c, lambda p: pivots_to_permutation(p, m), [ipiv])
        return perm
    zero_based = c.binop("stablehlo.subtract", ipiv, c.const(1, T.S32, ipiv.shape))
    return solver_call(c, op, "permutation", [zero_based], [(ipiv.shape[:-1] + (m,), T.S32)],
                       matrix_in=[False], matrix_out=[False],
                       batch_dims=len(ipiv.shape) - 1, alias=False)


@_solver_lowering("cholesky")
def _cholesky(c: Ctx, e: Expr, x: Val):
    return _batch_sharded(c, e, [x], lambda s, v, shape: _cholesky_local(s, e, v[0], shape))


def _cholesky_local(c: Ctx, e: Expr, x: Val, shape):
    if _empty(x.shape):
        return c.const(0, e.type, shape)
    ct = _compute_type(e.type)
    a = c.convert(x, ct)
    nb = len(a.shape) - 2
    config = {"lower": True} if _on_gpu(c) else {"uplo": "L"}
    f, info = solver_call(c, "cholesky", "potrf", [a], [(a.shape, ct), (a.shape[:-2], T.S32)],
                          matrix_in=[True], matrix_out=[True, False], config=config,
                          batch_dims=nb)
    return c.convert(_tri(c, _nan_unless_ok(c, info, f), True), e.type)


@_solver_lowering("triangular_solve")
def _triangular_solve(c: Ctx, e: Expr, a: Val, b: Val):
    return _batch_sharded(c, e, [a, b], lambda s, v, shape: _trsm_local(s, e, *v, shape))


def _trsm_local(c: Ctx, e: Expr, a: Val, b: Val, shape):
    if _empty(b.shape) or _empty(a.shape):
        return c.const(0, e.type, shape)
    ct = _compute_type(e.type)
    a, b = c.convert(a, ct), c.convert(b, ct)
    left, lower, tr = e.attrs["left_side"], e.attrs["lower"], e.attrs["transform_a"]
    vec = len(b.shape) == len(a.shape) - 1
    if vec:  # a column on the left side, a row on the right
        b = c.reshape(b, b.shape + (1,) if left else b.shape[:-1] + (1, b.shape[-1]))
    x = _trsm(c, "triangular_solve", a, b, left=left, lower=lower,
              transpose=tr == "transpose", unit=False, batch_dims=len(a.shape) - 2)
    return c.convert(c.reshape(x, shape), e.type)


@_solver_lowering("lu")
def _lu(c: Ctx, e: Expr, x: Val):
    (ps, pt), (ls, lt), (us, ut) = _results(e)
    n = x.shape[-1]
    if n == 0:
        return [c.const(0, pt, ps), c.const(0, lt, ls), c.const(0, ut, us)]
    ct = _compute_type(lt)
    a = c.convert(x, ct)
    nb = len(a.shape) - 2
    f, ipiv, _info = _getrf(c, "lu", a, ct)
    perm = _permutation(c, "lu", ipiv, n)
    # a = p l u with p[perm[i], i] = 1: p[r, c] = (perm[c] == r)
    rows = c.op("stablehlo.iota", [], (ps, T.S32), {"iota_dimension": f"{len(ps) - 2} : i64"})
    pb = c.bcast(perm, ps, dims=tuple(range(nb)) + (len(ps) - 1,))
    p = c.convert(c.compare(pb, rows, "EQ"), pt)
    low = c.binop("stablehlo.add", _tri(c, f, True, -1), _identity(c, ls, ct))
    u = _tri(c, f, False)
    return [p, c.convert(low, lt), c.convert(u, ut)]


def _permute_rows(b, perm):
    """``b[..., perm, :]`` (nxpy ops, traced into the module)."""
    idx = ops.broadcast(ops.new_axis(perm, -1), b.shape)
    return ops.take_along_axis(b, idx, axis=b.rank - 2)


@_solver_lowering("solve")
def _solve(c: Ctx, e: Expr, a: Val, b: Val):
    return _batch_sharded(c, e, [a, b], lambda s, v, shape: _solve_local(s, e, *v, shape))


def _solve_local(c: Ctx, e: Expr, a: Val, b: Val, shape):
    # as jnp.linalg.solve: getrf, the rows of b permuted, a unit lower and an upper
    # triangular solve; NaN where a pivot is exactly zero (getrf's info > 0)
    if _empty(a.shape) or _empty(b.shape):
        return c.const(0, e.type, shape)
    ct = _compute_type(e.type)
    a, b = c.convert(a, ct), c.convert(b, ct)
    n = a.shape[-1]
    nb = len(a.shape) - 2
    vec = len(b.shape) == len(a.shape) - 1
    if vec:
        b = c.reshape(b, b.shape + (1,))
    f, ipiv, info = _getrf(c, "solve", a, ct)
    if TARGETS["solve"][c.platform]["permutation"] == PIVOTS_LOOP:  # one traced program
        (pb,) = lower_traced(c, lambda p, y: _permute_rows(y, pivots_to_permutation(p, n)),
                             [ipiv, b])
    else:
        perm = _permutation(c, "solve", ipiv, n)
        (pb,) = lower_traced(c, lambda p, y: _permute_rows(y, p), [perm, b])
    y = _trsm(c, "solve", f, pb, left=True, lower=True, transpose=False, unit=True,
              batch_dims=nb)
    x = _trsm(c, "solve", f, y, left=True, lower=False, transpose=False, unit=False,
              batch_dims=nb)
    return c.convert(c.reshape(_nan_unless_ok(c, info, x), shape), e.type)


@_solver_lowering("qr")
def _qr(c: Ctx, e: Expr, x: Val):
    (qs, qt), (rs, rt) = _results(e)
    *batch, m, n = x.shape
    batch = tuple(batch)
    if _empty(x.shape):
        q = _identity(c, qs, qt) if qs[-1] == m and m else c.const(0, qt, qs)
        return [q, c.const(0, rt, rs)]
    ct = _compute_type(qt)
    a = c.convert(x, ct)
    nb = len(batch)
    k = min(m, n)
    f, tau = solver_call(c, "qr", "geqrf", [a], [(a.shape, ct), (batch + (k,), ct)],
                         matrix_in=[True], matrix_out=[True, False], batch_dims=nb)
    qcols = qs[-1]
    qin = _pad_to(c, _slice(c, f, batch + (m, min(n, qcols))), batch + (m, qcols))
    q = solver_call(c, "qr", "orgqr", [qin, tau], [(qin.shape, ct)],
                    matrix_in=[True, False], matrix_out=[True], batch_dims=nb)
    r = _tri(c, _pad_to(c, _slice(c, f, batch + (min(m, rs[-2]), n)), rs), False)
    return [c.convert(q, qt), c.convert(r, rt)]


@_solver_lowering("eigh")
def _eigh(c: Ctx, e: Expr, x: Val):
    (ws, wt), (vs, vt) = _results(e)
    if _empty(x.shape):
        return [c.const(0, wt, ws), c.const(0, vt, vs)]
    ct = _compute_type(vt)
    a = c.convert(x, ct)
    nb = len(a.shape) - 2
    real = T.to_real(ct) if ct.is_complex else ct
    # the lower triangle is read; GPUs: algorithm 0 = cuSOLVER's default (as JAX)
    config = {"algorithm": 0, "lower": True} if _on_gpu(c) else {"mode": "V", "uplo": "L"}
    v, w, info = solver_call(c, "eigh", "syevd", [a],
                             [(a.shape, ct), (ws, real), (ws[:-1], T.S32)],
                             matrix_in=[True], matrix_out=[True, False, False],
                             config=config, batch_dims=nb)
    return [c.convert(_nan_unless_ok(c, info, w), wt), c.convert(_nan_unless_ok(c, info, v), vt)]


@_solver_lowering("svd")
def _svd(c: Ctx, e: Expr, x: Val):
    (us, ut), (ss, st), (vs, vt) = _results(e)
    if _empty(x.shape):
        def eye_or_zeros(s, t):
            return _identity(c, s, t) if s[-1] == s[-2] and s[-1] else c.const(0, t, s)
        return [eye_or_zeros(us, ut), c.const(0, st, ss), eye_or_zeros(vs, vt)]
    ct = _compute_type(ut)
    a = c.convert(x, ct)
    full = e.attrs["full_matrices"]
    if _on_gpu(c):
        s, u, v, info = _svd_gpu(c, a, ct, full, us, vs)
    else:
        real = T.to_real(ct) if ct.is_complex else ct
        _, s, u, v, info = solver_call(
            c, "svd", "gesdd", [a],
            [(a.shape, ct), (ss, real), (us, ct), (vs, ct), (ss[:-1], T.S32)],
            matrix_in=[True], matrix_out=[True, False, True, True, False],
            config={"mode": "A" if full else "S"}, batch_dims=len(a.shape) - 2)
    return [c.convert(_nan_unless_ok(c, info, u), ut), c.convert(_nan_unless_ok(c, info, s), st),
            c.convert(_nan_unless_ok(c, info, v), vt)]


def _svd_gpu(c: Ctx, a: Val, ct: T.Type, full: bool, us, vts):
    """The GPU solvers' SVD as JAX calls them: ``gesvdj`` (Jacobi; it returns ``v``, which
    is transposed, and has no reduced mode below 33x33: the full ``u``/``v`` are sliced)
    while both dims are at most 1024, else ``gesvd`` (on the transpose of a wide matrix,
    passed row-major, its ``u`` and ``vt`` swapped). Returns ``s, u, vt, info``."""
    *batch, m, n = a.shape
    batch, nb, k = tuple(batch), len(batch), min(m, n)
    real = T.to_real(ct) if ct.is_complex else ct
    info_r = (batch, T.S32)
    if m <= GESVDJ_MAX and n <= GESVDJ_MAX:
        econ = not full and m > GESVDJ_ECON_MIN and n > GESVDJ_ECON_MIN
        uc, vc = (k, k) if econ else (m, n)
        _, s, u, v, info = solver_call(
            c, "svd", "gesvdj", [a],
            [(a.shape, ct), (batch + (k,), real), (batch + (m, uc), ct), (batch + (n, vc), ct),
             info_r],
            matrix_in=[True], matrix_out=[True, False, True, True, False],
            config={"compute_uv": True, "full_matrices": not econ}, batch_dims=nb)
        vt = _swap_last(c, v)
        if not full and not econ:
            u, vt = _slice(c, u, batch + (m, k)), _slice(c, vt, batch + (k, n))
        return s, u, vt, info
    wide = m < n  # gesvd wants m >= n: a wide matrix goes as its transpose (row-major)
    cm = not wide
    _, s, r3, r4, info = solver_call(
        c, "svd", "gesvd", [a],
        [(a.shape, ct), (batch + (k,), real), (vts if wide else us, ct),
         (us if wide else vts, ct), info_r],
        matrix_in=[cm], matrix_out=[cm, False, cm, cm, False],
        config={"compute_uv": True, "full_matrices": full, "transposed": wide},
        batch_dims=nb)
    u, vt = (r4, r3) if wide else (r3, r4)
    return s, u, vt, info
