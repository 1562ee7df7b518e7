"""EXLA lowerings of the linear-algebra primitives: the LAPACK routines jaxlib ships for
CPU, called as ``stablehlo.custom_call`` exactly as JAX emits them (see
``docs/linalg.md``):

=================  =========================================================================
op                 targets (``?`` = ``s``/``d``/``c``/``z``)
=================  =========================================================================
cholesky           ``lapack_?potrf_ffi`` (``uplo = 'L'``), then the lower triangle, NaN
                   where ``info != 0`` (not positive definite), as JAX
triangular_solve   ``lapack_?trsm_ffi`` (``side``, ``uplo``, ``trans_x``, ``diag``)
lu                 ``lapack_?getrf_ffi``; LAPACK's 1-based row swaps become the permutation
                   matrix with a loop (as JAX's ``lu_pivots_to_permutation`` on CPU)
solve              ``getrf``, ``b``'s rows permuted, ``trsm`` (unit lower) and ``trsm``
                   (upper), as ``jnp.linalg.solve``; NaN where ``info > 0`` (singular)
qr                 ``lapack_?geqrf_ffi`` + ``lapack_?orgqr_ffi``/``?ungqr`` (padded or
                   sliced to the mode's ``q`` shape first, as JAX)
eigh               ``lapack_?syevd_ffi``/``?heevd`` (``mode = 'V'``, ``uplo = 'L'``), NaN
                   where ``info != 0``
svd                ``lapack_?gesdd_ffi`` (``mode = 'A'`` or ``'S'``), NaN where
                   ``info != 0``
=================  =========================================================================

Every call passes its matrices column-major (``operand_layouts``/``result_layouts``
``[r-2, r-1, r-3, ..., 0]``: XLA transposes around the call) with the leading dimensions
as a batch (``mhlo.frontend_attributes = {num_batch_dims = ...}``). The types LAPACK has
no routine for (f16, bf16) compute in f32. Matrices with an empty dimension never reach
LAPACK: their results are constants. The targets run only after
``nxpy.pjrt.lapack_ready()`` (``pjrt.compile`` calls it for modules that name one).
"""
from __future__ import annotations

from ... import ops, types as T
from ...defn.expr import Expr, trace_fn
from ...defn.portable import pivots_to_permutation
from ...defn import sharding as SH
from .lowering import Ctx, register_lowering
from .mlir import Val, i64_array
from .sharded import manual_region

__all__ = ["lapack_call", "lower_traced", "LAPACK_PREFIX"]

LAPACK_PREFIX = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}
_ORD = {c: ord(c) for c in "LRUNTCVAS"}


def _layout(rank: int, matrix: bool) -> str:
    if rank == 0:
        return "dense<> : tensor<0xindex>"
    dims = [rank - 2, rank - 1] + list(range(rank - 3, -1, -1)) if matrix and rank >= 2 \
        else list(range(rank - 1, -1, -1))
    return f"dense<[{', '.join(map(str, dims))}]> : tensor<{rank}xindex>"


def lapack_call(c: Ctx, routine: str, operands, results, *, matrix_in, matrix_out,
                config=None, batch_dims: int = 0):
    """``stablehlo.custom_call @lapack_<prefix><routine>_ffi`` (the prefix from the first
    operand's type) as JAX emits it: ``matrix_in``/``matrix_out`` say which operands and
    results are (batches of) matrices, passed column-major."""
    prefix = LAPACK_PREFIX[str(operands[0].type)]
    cfg = ", ".join(f"{k} = {_ORD[v]} : ui8" for k, v in (config or {}).items())
    attrs = {
        "call_target_name": f'"lapack_{prefix}{routine}_ffi"',
        "api_version": "4 : i32",
        "backend_config": "{" + cfg + "}",
        "mhlo.frontend_attributes": f'{{num_batch_dims = "{batch_dims}"}}',
        "operand_layouts": "[" + ", ".join(_layout(len(v.shape), m)
                                           for v, m in zip(operands, matrix_in)) + "]",
        "result_layouts": "[" + ", ".join(_layout(len(s), m)
                                          for (s, _), m in zip(results, matrix_out)) + "]",
    }
    outs = c.op("stablehlo.custom_call", list(operands), list(results), attrs)
    return outs[0] if len(results) == 1 else outs


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


def _empty(shape) -> bool:
    return any(d == 0 for d in shape)


def _results(e: Expr):
    return [(tuple(s), t) for s, t, _ in e.outs]


# ----------------------------------------------------------------------------------------
def _batch_sharded(c: Ctx, e: Expr, operands, body) -> Val:
    """``body(ctx, operands, out_shape)``, run on each device's block of the batch when
    the module is sharded (global view) and ``e``'s batch dims are sharded: a
    ``sdy.manual_computation`` whose operands are sharded along the batch dims only and
    replicated along the matrix dims (XLA's partitioner cannot split a LAPACK call by
    itself, so it would otherwise gather the whole batch on every device)."""
    prop = c.info.get("propagator")
    if prop is None or c.info.get("manual"):
        return body(c, operands, e.shape)
    out_sh = prop.of(e)
    nb = len(e.args[0].shape) - 2
    batch = tuple(out_sh[:nb])
    if not any(batch):
        return body(c, operands, e.shape)
    in_sh = [batch + ((),) * (len(v.shape) - nb) for v in operands]
    sh = batch + ((),) * (len(e.shape) - nb)
    local_out = SH.local_shape(e.shape, sh, c.info["mesh"])

    def run(s: Ctx, locals_):
        return [body(s, locals_, local_out)]
    return manual_region(c, list(operands), in_sh, [(e.shape, e.type, sh)], run)[0]


@register_lowering("cholesky")
def _cholesky(c: Ctx, e: Expr, x: Val):
    return _batch_sharded(c, e, [x], lambda s, v, shape: _cholesky_local(s, e, v[0], shape))


def _cholesky_local(c: Ctx, e: Expr, x: Val, shape):
    if _empty(x.shape):
        return c.const(0, e.type, shape)
    ct = _compute_type(e.type)
    a = c.convert(x, ct)
    nb = len(a.shape) - 2
    f, info = lapack_call(c, "potrf", [a], [(a.shape, ct), (a.shape[:-2], T.S32)],
                          matrix_in=[True], matrix_out=[True, False], config={"uplo": "L"},
                          batch_dims=nb)
    return c.convert(_tri(c, _nan_unless_ok(c, info, f), True), e.type)


@register_lowering("triangular_solve")
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
    nb = len(a.shape) - 2
    x = lapack_call(c, "trsm", [a, b], [(b.shape, ct)], matrix_in=[True, True],
                    matrix_out=[True], batch_dims=nb,
                    config={"side": "L" if left else "R", "uplo": "L" if lower else "U",
                            "trans_x": "T" if tr == "transpose" else "N", "diag": "N"})
    return c.convert(c.reshape(x, shape), e.type)


def lower_traced(c: Ctx, fun, args: list[Val]) -> list[Val]:
    """Traces ``fun`` (nxpy ops on tensors shaped like ``args``) and lowers it here."""
    fn = trace_fn(lambda *xs: fun(*xs), [(v.shape, v.type, None) for v in args])
    sub = Ctx(c.b, {}, c)
    return sub.lower_body(fn, list(args))


@register_lowering("lu")
def _lu(c: Ctx, e: Expr, x: Val):
    (ps, pt), (ls, lt), (us, ut) = _results(e)
    n = x.shape[-1]
    if n == 0:
        return [c.const(0, pt, ps), c.const(0, lt, ls), c.const(0, ut, us)]
    ct = _compute_type(lt)
    a = c.convert(x, ct)
    nb = len(a.shape) - 2
    f, ipiv, _info = lapack_call(c, "getrf", [a], [(a.shape, ct), (a.shape[:-1], T.S32),
                                                    (a.shape[:-2], T.S32)],
                                 matrix_in=[True], matrix_out=[True, False, False],
                                 batch_dims=nb)
    (perm,) = lower_traced(c, lambda p: pivots_to_permutation(p, n), [ipiv])
    # a = p l u with p[perm[i], i] = 1: p[r, c] = (perm[c] == r)
    rows = c.op("stablehlo.iota", [], (ps, T.S32), {"iota_dimension": f"{len(ps) - 2} : i64"})
    pb = c.bcast(perm, ps, dims=tuple(range(nb)) + (len(ps) - 1,))
    p = c.convert(c.compare(pb, rows, "EQ"), pt)
    l = c.binop("stablehlo.add", _tri(c, f, True, -1), _identity(c, ls, ct))
    u = _tri(c, f, False)
    return [p, c.convert(l, lt), c.convert(u, ut)]


def _permute_rows(b, perm):
    """``b[..., perm, :]`` (nxpy ops, traced into the module)."""
    idx = ops.broadcast(ops.new_axis(perm, -1), b.shape)
    return ops.take_along_axis(b, idx, axis=b.rank - 2)


@register_lowering("solve")
def _solve(c: Ctx, e: Expr, a: Val, b: Val):
    return _batch_sharded(c, e, [a, b], lambda s, v, shape: _solve_local(s, e, *v, shape))


def _solve_local(c: Ctx, e: Expr, a: Val, b: Val, shape):
    # as jnp.linalg.solve: getrf, the rows of b permuted, trsm (unit lower), trsm (upper);
    # NaN where a pivot is exactly zero (getrf's info > 0)
    if _empty(a.shape) or _empty(b.shape):
        return c.const(0, e.type, shape)
    ct = _compute_type(e.type)
    a, b = c.convert(a, ct), c.convert(b, ct)
    n = a.shape[-1]
    nb = len(a.shape) - 2
    vec = len(b.shape) == len(a.shape) - 1
    if vec:
        b = c.reshape(b, b.shape + (1,))
    f, ipiv, info = lapack_call(c, "getrf", [a], [(a.shape, ct), (a.shape[:-1], T.S32),
                                                  (a.shape[:-2], T.S32)],
                                matrix_in=[True], matrix_out=[True, False, False], batch_dims=nb)
    (pb,) = lower_traced(c, lambda p, y: _permute_rows(y, pivots_to_permutation(p, n)), [ipiv, b])
    y = lapack_call(c, "trsm", [f, pb], [(b.shape, ct)], matrix_in=[True, True], matrix_out=[True],
                    batch_dims=nb, config={"side": "L", "uplo": "L", "trans_x": "N", "diag": "U"})
    x = lapack_call(c, "trsm", [f, y], [(b.shape, ct)], matrix_in=[True, True], matrix_out=[True],
                    batch_dims=nb, config={"side": "L", "uplo": "U", "trans_x": "N", "diag": "N"})
    return c.convert(c.reshape(_nan_unless_ok(c, info, x), shape), e.type)


@register_lowering("qr")
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
    f, tau = lapack_call(c, "geqrf", [a], [(a.shape, ct), (batch + (k,), ct)],
                         matrix_in=[True], matrix_out=[True, False], batch_dims=nb)
    qcols = qs[-1]
    qin = _pad_to(c, _slice(c, f, batch + (m, min(n, qcols))), batch + (m, qcols))
    q = lapack_call(c, "ungqr" if ct.is_complex else "orgqr", [qin, tau], [(qin.shape, ct)],
                    matrix_in=[True, False], matrix_out=[True], batch_dims=nb)
    r = _tri(c, _pad_to(c, _slice(c, f, batch + (min(m, rs[-2]), n)), rs), False)
    return [c.convert(q, qt), c.convert(r, rt)]


@register_lowering("eigh")
def _eigh(c: Ctx, e: Expr, x: Val):
    (ws, wt), (vs, vt) = _results(e)
    if _empty(x.shape):
        return [c.const(0, wt, ws), c.const(0, vt, vs)]
    ct = _compute_type(vt)
    a = c.convert(x, ct)
    nb = len(a.shape) - 2
    real = T.to_real(ct) if ct.is_complex else ct
    v, w, info = lapack_call(c, "heevd" if ct.is_complex else "syevd", [a],
                             [(a.shape, ct), (ws, real), (ws[:-1], T.S32)],
                             matrix_in=[True], matrix_out=[True, False, False],
                             config={"mode": "V", "uplo": "L"}, batch_dims=nb)
    return [c.convert(_nan_unless_ok(c, info, w), wt), c.convert(_nan_unless_ok(c, info, v), vt)]


@register_lowering("svd")
def _svd(c: Ctx, e: Expr, x: Val):
    (us, ut), (ss, st), (vs, vt) = _results(e)
    if _empty(x.shape):
        def eye_or_zeros(s, t):
            return _identity(c, s, t) if s[-1] == s[-2] and s[-1] else c.const(0, t, s)
        return [eye_or_zeros(us, ut), c.const(0, st, ss), eye_or_zeros(vs, vt)]
    ct = _compute_type(ut)
    a = c.convert(x, ct)
    nb = len(a.shape) - 2
    real = T.to_real(ct) if ct.is_complex else ct
    _, s, u, v, info = lapack_call(
        c, "gesdd", [a], [(a.shape, ct), (ss, real), (us, ct), (vs, ct), (ss[:-1], T.S32)],
        matrix_in=[True], matrix_out=[True, False, True, True, False],
        config={"mode": "A" if e.attrs["full_matrices"] else "S"}, batch_dims=nb)
    return [c.convert(_nan_unless_ok(c, info, u), ut), c.convert(_nan_unless_ok(c, info, s), st),
            c.convert(_nan_unless_ok(c, info, v), vt)]
