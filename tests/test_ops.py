"""Op conformance: every op, on every path, against an independent oracle.

Each case runs on four paths -- (1) eager on the NumPy backend, (2) ``jit(f,
compiler="evaluator")``, (3) ``jit(f, compiler="exla")``, (4) eager on the EXLA backend --
and each result is compared with an oracle computed directly from the input arrays by
NumPy, SciPy or JAX (never by nxpy's NumPy backend). The unary and binary cases are
generated from ``nx.UNARY`` / ``nx.BINARY``, with each op's oracle, input domain and edge
values from its record (``nxpy/testing/records.py``). The harness (``run``, ``check``) is
``tests/helpers.py``'s.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import jit
from nxpy.testing import records
from nxpy.testing.records import ANY, BINARY_RECORDS, UNARY_RECORDS

from helpers import (ALL_TYPES, BF16, COMPILERS, COMPLEX, FLOATS, INTS, TOL, assert_same, check,
                     dt, gen, is_inexact, rng_for, run, tname, x64)

import jax.numpy as jnp  # after nxpy started XLA (conftest), so both share one client
from jax import lax

# accepted types per kind of the op tables (written out independently of nxpy.ops)
KIND_TYPES = {
    "any": ALL_TYPES,
    "num": [t for t in ALL_TYPES if t != "pred"],
    "real": [t for t in ALL_TYPES if t not in COMPLEX],
    "int": INTS + ["pred"],
    "intonly": INTS,
}


# ----------------------------------------------------------------------------------------
# Unary elementwise
# ----------------------------------------------------------------------------------------
UNARY_RESULT = {  # the type rules of the op tables, written out: input type -> output type
    "same": lambda t: t,
    "float": lambda t: t if is_inexact(t) else "f32",
    "pred": lambda t: "pred",
    "real": lambda t: {"c64": "f32", "c128": "f64"}.get(t, t),
}


def unary_types(op):
    """A handful of accepted types per op (rotating through the kinds, so that together
    the ops cover every type)."""
    ok = KIND_TYPES[nx.UNARY[op][1]]
    if nx.UNARY[op][0] != "float":  # cheap, type-sensitive ops: every accepted type
        return sorted(ok, key=["f32", "f64"].__contains__, reverse=True)
    i = sorted(nx.UNARY).index(op)
    floats = [t for t in ["f32", "f64"] if t in ok]
    half = [t for t in ["f16", "bf16"] if t in ok]
    ints = [t for t in INTS if t in ok]
    cplx = [t for t in COMPLEX if t in ok]
    out = floats + [half[i % 2]] if half else list(floats)
    if ints:
        out += [ints[i % len(ints)], ints[(i + 3) % len(ints)]]
    out += cplx
    if "pred" in ok and (i % 3 == 0 or not floats):
        out.append("pred")
    return out


def unary_expected(op, x, t_in, t_out):
    f = UNARY_RECORDS[op].oracle
    rule = nx.UNARY[op][0]
    if op == "bitwise_not":
        return np.logical_not(x) if t_in == "pred" else np.invert(x)
    if op in ("is_nan", "is_infinity"):
        return f(x.astype(np.complex128 if t_in in COMPLEX else np.float64)) if is_inexact(t_in) \
            else np.zeros(x.shape, bool)
    if op == "logical_not":
        return x == 0
    if not is_inexact(t_out):  # integer/pred results: computed in the integer type
        with np.errstate(all="ignore"):
            return f(x) if op in ("negate", "abs", "sign") else x
    if rule == "float":
        x = x.astype(dt(t_out))
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    with np.errstate(all="ignore"):
        return f(wide)


UNARY_CASES = []
for _op in sorted(nx.UNARY):
    for _j, _t in enumerate(unary_types(_op)):
        # 68 elements: long enough for XLA:CPU's vectorized kernels
        UNARY_CASES.append((_op, _t, (4, 17) if _t == "f32" else (2, 3)))
        if _j == 0:
            UNARY_CASES.append((_op, _t, ()))
        if _j == 1:
            UNARY_CASES.append((_op, _t, (0, 3)))


@pytest.mark.parametrize("op,t,shape", UNARY_CASES,
                         ids=[f"{o}-{t}-{'x'.join(map(str, s)) or 'scalar'}" for o, t,
                              s in UNARY_CASES])
def test_unary(op, t, shape):
    specials = UNARY_RECORDS[op].specials
    x = gen(t, shape, rng_for(op, t, shape), UNARY_RECORDS[op].domain or ANY)
    if specials and len(shape) == 2 and shape[0] and is_inexact(t):
        x = x.copy()
        x.flat[:3] = [np.nan, np.inf, -np.inf]
        if t in COMPLEX and specials == "complex":
            x.flat[3:6] = [complex(0.5, np.nan), complex(1, -np.inf), 0j]
    t_out = UNARY_RESULT[nx.UNARY[op][0]](t)
    exp = unary_expected(op, x, t, t_out)
    check(run(getattr(nx, op), x), exp, t_out, what=f"{op}({t}{list(shape)})")


@pytest.mark.parametrize("op", sorted(nx.UNARY))
def test_unary_kinds(op):
    """Accepted kinds run and give the table's result type (eagerly, on NumPy); the others
    raise TypeError naming the op, eagerly and while tracing."""
    ok = KIND_TYPES[nx.UNARY[op][1]]
    for t in ok:
        r = getattr(nx,
                    op)(nx.tensor(gen(t, (2,), rng_for(op, t), UNARY_RECORDS[op].domain or ANY)))
        assert str(r.type) == UNARY_RESULT[nx.UNARY[op][0]](t), (op, t)
    bad = [t for t in ALL_TYPES if t not in ok]
    for t in bad:
        x = nx.tensor(np.zeros((2,), dt(t)))
        with pytest.raises(TypeError, match=op):
            getattr(nx, op)(x)
        with pytest.raises(TypeError, match=op):
            jit(getattr(nx, op), compiler="exla")(x)


def test_every_elementwise_op_has_a_record():
    """The records module's import stops at an op of UNARY or BINARY without a record (or a
    record without an op), naming it."""
    records.check_complete()
    for table in ("UNARY", "BINARY"):
        tables = {"unary": nx.UNARY, "binary": nx.BINARY}
        tables[table.lower()] = {**tables[table.lower()], "new_op": ("float", "any")}
        with pytest.raises(LookupError, match=f"{table} ops without a record.*: new_op"):
            records.check_complete(**tables)
        tables = {"unary": nx.UNARY, "binary": nx.BINARY}
        tables[table.lower()] = {k: v for k,
                                 v in tables[table.lower()].items() if k != "add" and k != "exp"}
        with pytest.raises(LookupError, match=f"records .* for no {table} op: (add|exp)"):
            records.check_complete(**tables)


def test_elementwise_tables_have_docs():
    """Every row of UNARY and BINARY has its docstring row in ``DOCS`` (description,
    formula, doctest example), and no row outlives its op: each op's docstring is composed
    from it (its example runs with the module's doctests); an op without one stops the
    import, naming the table."""
    from nxpy.ops import elementwise
    assert set(elementwise.DOCS) == set(nx.UNARY) | set(nx.BINARY)
    for op, (summary, details, example, printed) in elementwise.DOCS.items():
        doc = getattr(elementwise, op).__doc__  # nx.log is log/2, wrapping it
        assert doc.startswith(summary + "\n\n") and doc.endswith(f">>> {example}\n{printed}"), op
    with pytest.raises(LookupError, match="no row in DOCS"):
        elementwise._doc("not_an_op")


def test_round_half_away_from_zero():
    vals = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 1.4999999, 2.5000002,
            0.0, -0.0, 8388609.0, -8388609.0, np.inf, -np.inf, np.nan]
    for t in ["f32", "f64", "f16", "bf16"]:
        with np.errstate(over="ignore"):
            x = np.array(vals).astype(dt(t))
        if t == "f64":
            x = np.concatenate([x, [0.49999999999999994, 4503599627370497.0, -4503599627370497.0]])
        check(run(nx.round, x), UNARY_RECORDS["round"].oracle(x.astype(np.float64)), t, rtol=0,
              atol=0,
              what=f"round {t}")


# ----------------------------------------------------------------------------------------
# Binary elementwise
# ----------------------------------------------------------------------------------------
def merge(a, b):
    """Nx's promotion of two tensor types (written out for the test)."""
    if a == b:
        return a
    if a == "pred":
        return b
    if b == "pred":
        return a
    if a in COMPLEX or b in COMPLEX:
        return "c128" if "c128" in (a, b) or "f64" in (a, b) else "c64"
    if a in FLOATS and b in FLOATS:
        return "f32" if {a, b} == {"f16", "bf16"} else max(a, b, key=lambda x: FLOATS.index(x))
    if a in FLOATS or b in FLOATS:
        return a if a in FLOATS else b
    ba, bb = int(a[1:]), int(b[1:])
    if a[0] == b[0]:
        return a[0] + str(max(ba, bb))
    s, u = (ba, bb) if a[0] == "s" else (bb, ba)
    return "s" + str(min(64, max(s, 2 * u)))


ARITH_ON_PRED = {"add", "subtract", "multiply", "pow", "remainder", "quotient"}


def binary_result(op, ta, tb):
    rule = nx.BINARY[op][0]
    m = merge(ta, tb)
    if rule == "merge":
        return "u8" if m == "pred" and op in ARITH_ON_PRED else m
    if rule == "float":
        return m if is_inexact(m) else "f32"
    return "pred"


BIN_COMBOS = [("f32", "f32"), ("s32", "s32"), ("s8", "u8"), ("f64", "s16"), ("bf16", "bf16"),
              ("f16", "u8"), ("c64", "f32"), ("u32", "u64"), ("s64", "s64"), ("pred", "pred"),
              ("c128", "c128"), ("bf16", "f16"), ("u16", "u16"), ("pred", "s8"), ("s64", "u32"),
              ("f16", "f16"), ("c64", "f64")]
BIN_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (2, 1)), ((0, 3), (1, 3)),
              ((4, 1), (1, 3)), ((), ()), ((5, 16), (16,))]


def binary_expected(op, a, b, ta, tb):
    f = BINARY_RECORDS[op].oracle
    rule = nx.BINARY[op][0]
    if rule == "logical":
        return f(a != 0, b != 0)
    ct = merge(ta, tb) if rule == "compare" else binary_result(op, ta, tb)
    x, y = a.astype(dt(ct)), b.astype(dt(ct))
    if is_inexact(ct):
        wide = np.complex128 if ct in COMPLEX else np.float64
        x, y = x.astype(wide), y.astype(wide)
    with np.errstate(all="ignore"):
        r = f(x, y)
    return r


BINARY_CASES = []
for _op in sorted(nx.BINARY):
    _ok = KIND_TYPES[nx.BINARY[_op][1]]
    _j = 0
    for _ta, _tb in BIN_COMBOS:
        if _ta in _ok and _tb in _ok:
            BINARY_CASES.append((_op, _ta, _tb, BIN_SHAPES[(_j + len(_op)) % len(BIN_SHAPES)]))
            _j += 1


@pytest.mark.parametrize("op,ta,tb,shapes", BINARY_CASES,
                         ids=[f"{o}-{a}-{b}-{i}" for i, (o, a, b, _) in enumerate(BINARY_CASES)])
def test_binary(op, ta, tb, shapes):
    da, db = BINARY_RECORDS[op].domain
    rng = rng_for(op, ta, tb)
    a, b = gen(ta, shapes[0], rng, da), gen(tb, shapes[1], rng, db)
    if op in ("left_shift", "right_shift"):
        b = (gen(tb, shapes[1], rng, "small").astype(np.int64) % 8).astype(dt(tb))
    if op == "pow" and ta in INTS + ["pred"]:
        a = gen(ta, shapes[0], rng, "any")
    if op == "pow" and is_inexact(tb):  # negative exponents too (the base is positive)
        b = gen(tb, shapes[1], rng, "any")
    t_out = binary_result(op, ta, tb)
    exp = binary_expected(op, a, b, ta, tb)
    check(run(getattr(nx, op), a, b), exp, t_out,
          what=f"{op}({ta}{list(a.shape)}, {tb}{list(b.shape)})")


@pytest.mark.parametrize("op", sorted(nx.BINARY))
def test_binary_kinds(op):
    ok = KIND_TYPES[nx.BINARY[op][1]]
    for t in ALL_TYPES:
        if t in ok:
            r = getattr(nx, op)(nx.tensor(np.ones(2, dt(t))), nx.tensor(np.ones(2, dt(t))))
            assert str(r.type) == binary_result(op, t, t), (op, t)
            continue
        x = nx.tensor(np.zeros((2,), dt(t)))
        y = nx.tensor(np.zeros((2,), dt(ok[0])))
        for args in ((x, y), (y, x)):
            with pytest.raises(TypeError, match=op):
                getattr(nx, op)(*args)
        with pytest.raises(TypeError, match=op):
            jit(getattr(nx, op), compiler="exla")(x, y)


def test_binary_nan_semantics():
    a = np.array([np.nan, 1.0, np.nan, -np.inf, 0.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, np.inf, -0.0], np.float32)
    for op in ["min", "max", "equal", "not_equal", "less", "greater_equal"]:
        check(run(getattr(nx, op), a, b), BINARY_RECORDS[op].oracle(a, b),
              binary_result(op, "f32", "f32"), what=op)


@pytest.mark.parametrize("op", [op for op, r in BINARY_RECORDS.items() if r.edges])
def test_binary_float_edges(op):
    v = BINARY_RECORDS[op].edges  # every pair of them
    a = np.repeat(np.array(v), len(v))
    b = np.tile(np.array(v), len(v))
    f = BINARY_RECORDS[op].oracle
    with np.errstate(all="ignore"):
        e32 = f(a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64))
        e64 = f(a, b)
        e32 = e32.astype(np.float32)
    check(run(lambda x, y, z, w: (getattr(nx, op)(x, y), getattr(nx, op)(z, w)),
              a.astype(np.float32), b.astype(np.float32), a, b),
          [e32, e64], ["f32", "f64"], what=op)


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
def test_next_after_bits(t):
    """``next_after`` is one step of ``t``'s own grid, bit for bit as ``lax.nextafter``: at
    0 (the smallest subnormal, signed as the direction), at ±inf and the largest finite
    values, toward equal values and NaN, on every path."""
    big = float(np.finfo(dt(t)).max) if t != "bf16" else 3.3895e38
    v = [0.0, -0.0, 1.0, -1.0, 1.5, big, -big, np.inf, -np.inf, np.nan, 1e-3, -2.5]
    a = np.repeat(np.array(v), len(v)).astype(dt(t))
    b = np.tile(np.array(v), len(v)).astype(dt(t))
    with x64() if t == "f64" else contextlib.nullcontext():
        want = np.asarray(lax.nextafter(jnp.asarray(a), jnp.asarray(b)))
    for path, got in run(nx.next_after, a, b).items():
        assert str(got.type) == t, (path, got.type)
        bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dt(t).itemsize]
        nan = np.isnan(want.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(got.to_numpy().astype(np.float64)), nan,
                                      err_msg=path)
        np.testing.assert_array_equal(got.to_numpy().view(bits)[~nan], want.view(bits)[~nan],
                                      err_msg=f"{t} on {path}")


# XLA's f32 algorithms for these (Cephes' series, nine terms and Euler-Maclaurin) against
# the same steps in NumPy: a few ulps apart (pow and FMA differ); polygamma multiplies
# zeta by n!, and cancels near its zeros
_SPECIAL_RTOL = {"f16": 2e-3, "bf16": 1e-2, "f32": 3e-5, "f64": 1e-12}


@pytest.mark.parametrize("t", ["bf16", "f32", "f64"])
def test_special_functions_against_jax(t):
    """``bessel_i1e``, ``zeta`` and ``polygamma`` (integer orders 0 to 4, at and between
    the poles) as the ``chlo`` ops JAX emits, on every path, edge values included."""
    v = np.array([0.0, 1e-3, 0.5, -0.5, 1.0, 2.5, -2.5, -3.0, 7.9, 8.0, 8.1, 30.0, -30.0,
                  np.inf, -np.inf, np.nan])
    n = np.repeat(np.arange(5.0), len(v))
    xs = np.tile(v, 5)
    zx = np.repeat(np.array([1.0, 1.5, 2.0, 3.0, 4.5]), len(v))
    args = [a.astype(dt(t)) for a in (v, n, xs, zx, np.abs(xs))]
    with x64() if t == "f64" else contextlib.nullcontext():
        j = [jnp.asarray(a) for a in args]
        want = [np.asarray(w) for w in (lax.bessel_i1e(j[0]), lax.polygamma(j[1], j[2]),
                                        lax.zeta(j[3], j[4]))]
    # digamma's pole at 0 is NaN in nxpy on every jaxlib (0.12's XLA gives -inf)
    want[1] = np.where((args[1] == 0) & (args[2] == 0), np.nan, want[1]).astype(want[1].dtype)
    for path, got in run(lambda a, b, c, d, e: (nx.bessel_i1e(a), nx.polygamma(b, c),
                                                nx.zeta(d, e)), *args).items():
        for name, g, w in zip(("bessel_i1e", "polygamma", "zeta"), got, want):
            assert str(g.type) == t, (path, name)
            np.testing.assert_allclose(g.to_numpy().astype(np.float64), w.astype(np.float64),
                                       rtol=_SPECIAL_RTOL[t], atol=1e-30, equal_nan=True,
                                       err_msg=f"{name} {t} on {path}")


def test_integer_division_by_zero_xla_semantics():
    # XLA: x / 0 is -1 (all bits set), x rem 0 is x, MIN / -1 is MIN and MIN rem -1 is 0
    a = np.array([7, -7, -128, -128, 0, 5], np.int8)
    b = np.array([0, 0, -1, 0, 0, -2], np.int8)
    check(run(nx.quotient, a, b), np.array([-1, -1, -128, -1, -1, -2], np.int8), "s8")
    check(run(nx.remainder, a, b), np.array([7, -7, 0, -128, 0, 1], np.int8), "s8")
    a = np.array([7, 0, 255], np.uint8)
    b = np.array([0, 0, 2], np.uint8)
    check(run(nx.quotient, a, b), np.array([255, 255, 127], np.uint8), "u8")
    check(run(nx.remainder, a, b), np.array([7, 0, 1], np.uint8), "u8")
    a = np.array([-2**63, 9, -2**63, -2**63, -2**63, 2**63 - 1], np.int64)
    b = np.array([-1, 0, 0, 2, 3, -3], np.int64)
    check(run(nx.quotient, a, b), np.array([-2**63, -1, -1, -2**62, -3074457345618258602,
                                            -3074457345618258602], np.int64), "s64")
    check(run(nx.remainder, a, b), np.array([0, 9, -2**63, 0, -2, 1], np.int64), "s64")
    a = np.array([-2**31, -2**31, 2**31 - 1], np.int32)
    b = np.array([3, -1, -2], np.int32)
    check(run(nx.quotient, a, b), np.array([-715827882, -2**31, -1073741823], np.int32), "s32")
    a = np.array([2**64 - 1, 2**63], np.uint64)
    b = np.array([2, 0], np.uint64)
    check(run(nx.quotient, a, b), np.array([2**63 - 1, 2**64 - 1], np.uint64), "u64")


def test_float_division_by_zero():
    a = np.array([1.0, -1.0, 0.0], np.float32)
    b = np.zeros(3, np.float32)
    check(run(nx.divide, a, b), np.array([np.inf, -np.inf, np.nan]), "f32")
    check(run(nx.divide, a.astype(np.int32), b.astype(np.int32)),
          np.array([np.inf, -np.inf, np.nan]), "f32")


def test_shift_xla_semantics():
    # shifts by >= the bit width (or negative amounts) give 0, or -1 for arithmetic
    # right shifts of negative numbers
    a = np.array([1, -128, 64, -1, 3, 100], np.int8)
    b = np.array([8, 9, 9, -1, 1, 2], np.int8)
    check(run(nx.left_shift, a, b), np.array([0, 0, 0, 0, 6, -112], np.int8), "s8")
    check(run(nx.right_shift, a, b), np.array([0, -1, 0, -1, 1, 25], np.int8), "s8")
    a = np.array([200, 1, 255, 128], np.uint8)
    b = np.array([8, 200, 1, 7], np.uint8)
    check(run(nx.left_shift, a, b), np.array([0, 0, 254, 0], np.uint8), "u8")
    check(run(nx.right_shift, a, b), np.array([0, 0, 127, 1], np.uint8), "u8")
    a = np.array([-2**62, 1], np.int64)
    b = np.array([64, 63], np.int64)
    check(run(nx.right_shift, a, b), np.array([-1, 0], np.int64), "s64")
    check(run(nx.left_shift, a, b), np.array([0, -2**63], np.int64), "s64")


def test_integer_pow_negative_exponents():
    # XLA: negative integer exponents give 0 unless the base is 1 or -1
    a = np.array([2, 1, -1, -1, 0, 3, -2], np.int32)
    b = np.array([-1, -5, -1, -2, -1, 0, 3], np.int32)
    check(run(nx.pow, a, b), np.array([0, 1, -1, 1, 0, 1, -8], np.int32), "s32")
    a = np.array([2, 3, 255], np.uint8)
    b = np.array([8, 5, 2], np.uint8)  # wraps
    check(run(nx.pow, a, b), np.array([0, 243, 1], np.uint8), "u8")


@pytest.mark.parametrize("t", INTS)
def test_integer_pow_large_exponents(t):
    # every exponent bit counts (XLA:CPU's stablehlo.power honours only the low ones);
    # oracle: Python's modular pow, wrapped to the type's width
    info, bits = np.iinfo(dt(t)), np.dtype(dt(t)).itemsize * 8
    rng = rng_for("pow_large", t)
    bases = [3, 5, 7, 2, 1, 0] + ([-3, -1, -2] if info.min < 0 else [])
    exps = [info.max, info.max - 1, bits - 1, bits, bits + 1, 2 * bits + 1, 63, 64, 65, 128, 0]
    exps += [int(v) for v in rng.integers(0, info.max, 8, dtype=dt(t), endpoint=True)]
    pairs = [(x, e) for x in bases for e in exps if e <= info.max]
    a = np.array([x for x, _ in pairs], dt(t))
    b = np.array([e for _, e in pairs], dt(t))
    wrap = [pow(x, e, 2 ** bits) for x, e in pairs]
    expected = np.array([v - 2 ** bits if info.min < 0 and v > info.max else v for v in wrap],
                        dtype=object).astype(dt(t))
    check(run(nx.pow, a, b), expected, t)


@pytest.mark.parametrize("op", sorted(op for op, r in UNARY_RECORDS.items() if r.edges))
def test_unary_extremes(op):
    """At and beyond the edges of the op's domain: overflow, poles, NaN results."""
    edges = list(UNARY_RECORDS[op].edges)
    vals = np.array(edges + [np.nan], np.float64)
    f = getattr(nx, op)
    fo = UNARY_RECORDS[op].oracle
    x32 = vals.astype(np.float32)
    with np.errstate(all="ignore"):
        e32, e64 = fo(x32.astype(np.float64)).astype(np.float32), fo(vals)
    check(run(lambda a, b: (f(a), f(b)), x32, vals), [e32, e64], ["f32", "f64"],
          what=f"{op} at {edges}")


def test_integer_edges_wrap():
    for t in ["s8", "s16", "s32", "s64"]:
        info = np.iinfo(dt(t))
        x = np.array([info.min, info.max, -1, 0, 1], dt(t))
        with np.errstate(all="ignore"):
            check(run(lambda v: (nx.negate(v), nx.abs(v), nx.sign(v), v + 1, v * 2, v - 1), x),
                  [-x, np.abs(x), np.sign(x), x + dt(t).type(1), x * dt(t).type(2),
                   x - dt(t).type(1)], t)
    for t in ["u8", "u64"]:
        info = np.iinfo(dt(t))
        x = np.array([0, 1, info.max], dt(t))
        with np.errstate(all="ignore"):
            check(run(lambda v: (nx.negate(v), v + 1, v - 1, v * 3), x),
                  [(0 - x.astype(object)) % (int(info.max) + 1), x + dt(t).type(1),
                   x - dt(t).type(1), x * dt(t).type(3)], t)


def test_aggregates_widen_before_summing():
    x = np.array([100, 100, 100], np.int8)
    check(run(lambda v: (nx.sum(v), nx.product(v), nx.sum(v, axes=[0], keep_axes=True)), x),
          [np.int32(300), np.int32(1000000), np.array([300], np.int32)], "s32")
    x = np.array([200, 200, 2], np.uint8)
    check(run(lambda v: (nx.sum(v), nx.product(v)), x), [np.uint32(402), np.uint32(80000)], "u32")
    x = np.array([True] * 300)
    check(run(nx.sum, x), np.int32(300), "s32")
    x = np.array([100, 100, 100], np.int8)  # windows keep the type (and wrap)
    check(run(lambda v: nx.window_sum(v, (2,)), x), np.array([-56, -56], np.int8), "s8")


def test_mixed_backends():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones(3, np.float32)
    x, y = nx.tensor(a), nx.tensor(b, backend="exla")
    for r in (x + y, y + x, nx.select(nx.tensor(a > 2), y, x)):
        assert r.backend.name == "exla"
    assert_same(nx.add(x, y).to_numpy(), a + b, "f32")
    assert_same(nx.select(nx.tensor(a > 2), y, x).to_numpy(), np.where(a > 2, b, a), "f32")


def test_numpy_scalars_are_strong():
    x = np.array([1, 2], np.int8)
    check(run(lambda v: (v + np.float32(2), np.float32(2) + v, np.int16(3) * v, v - np.int8(1)), x),
          [x + np.float32(2), np.float32(2) + x, np.int16(3) * x, x - np.int8(1)],
          ["f32", "f32", "s16", "s8"])


def test_axis_errors_name_the_op():
    x = nx.iota((2, 3))
    for op, f in [("sum", lambda: nx.sum(x, axes=[0, 0])),
                  ("reduce_max", lambda: nx.reduce_max(x, axes=[2])),
                  ("argmin", lambda: nx.argmin(x, axis=-3)),
                  ("reverse", lambda: nx.reverse(x, axes=[5])),
                  ("squeeze", lambda: nx.squeeze(x, axes=[9])),
                  ("new_axis", lambda: nx.new_axis(x, 3)),
                  ("concatenate", lambda: nx.concatenate([x, x], axis=2)),
                  ("stack", lambda: nx.stack([x, x], axis=4)),
                  ("iota", lambda: nx.iota((2,), axis=1)),
                  ("dot", lambda: nx.dot(x, [2], x, [0])),
                  ("transpose", lambda: nx.transpose(x, [0, 2])),
                  ("broadcast", lambda: nx.broadcast(x, (2, 3), axes=[0, 5]))]:
        with pytest.raises(ValueError, match=op):
            f()


def test_half_precision_aggregates_accumulate_in_f32():
    for t in ["f16", "bf16"]:
        x = np.ones(1000, dt(t))
        check(run(lambda v: (nx.sum(v), nx.window_sum(v, (1000,)), nx.dot(v, v)), x),
              [np.array(1000.0), np.array([1000.0]), np.array(1000.0)], t, rtol=0, atol=0)


def test_weak_python_scalars():
    cases = [
        (lambda x: x + 1, "s8", "s8"), (lambda x: x * 0.5, "s8", "f32"),
        (lambda x: 2.0 * x, "f16", "f16"), (lambda x: x - 1, "u8", "u8"),
        (lambda x: x * 1j, "f32", "c64"),
        (lambda x: x * 1j, "f64", "c128"), (lambda x: 1.5 + x, "bf16", "bf16"),
        (lambda x: x > 1, "u16", "pred"), (lambda x: x / 2, "s16", "f32"),
        (lambda x: x - 3, "u8", "u8"), (lambda x: 1 - x, "u32", "u32"),
        (lambda x: x ** 2, "s16", "s16"),
        (lambda x: x + 1e10, "f16", "f16",
         lambda x: np.full(x.shape, np.inf)),  # 1e10 is inf in f16
        (lambda x: x + 1, "pred", "s32", lambda x: x.astype(np.int32) + 1),
    ]
    for f, t, t_out, *oracle in cases:
        x = gen(t, (3,), rng_for("weak", t), "small")
        if oracle:
            exp = oracle[0](x)
        elif is_inexact(t_out):
            exp = f(x.astype(np.complex128 if t_out in COMPLEX else np.float64))
        else:
            exp = f(x.astype(np.int64)).astype(dt(t_out))
        check(run(f, x), exp, t_out, what=f"scalar op on {t}")


# ----------------------------------------------------------------------------------------
# Python operators on Tensor, floor_divide and mod
# ----------------------------------------------------------------------------------------
OPERATORS = [
    ("a + b", lambda a, b: a + b), ("a - b", lambda a, b: a - b), ("a * b", lambda a, b: a * b),
    ("a / b", lambda a, b: a / b), ("a // b", lambda a, b: a // b), ("a % b", lambda a, b: a % b),
    ("a ** 2", lambda a, b: a ** 2), ("a == b", lambda a, b: a == b),
    ("a != b", lambda a, b: a != b), ("a < b", lambda a, b: a < b),
    ("a <= b", lambda a, b: a <= b), ("a > b", lambda a, b: a > b),
    ("a >= b", lambda a, b: a >= b), ("-a", lambda a, b: -a), ("abs(a)", lambda a, b: abs(a)),
    ("3 - a", lambda a, b: 3 - a), ("7 // b", lambda a, b: 7 // b), ("7 % b", lambda a, b: 7 % b),
    ("a % 3", lambda a, b: a % 3), ("a // -3", lambda a, b: a // -3),
    ("2 * a + b", lambda a, b: 2 * a + b),
]


@pytest.mark.parametrize("t", ["s32", "f32", "s8", "f64"])
def test_python_operators(t):
    rng = rng_for("ops", t)
    a = (gen(t, (2, 3), rng, "any") * (5 if t in INTS else 3)).astype(dt(t))
    b = gen(t, (3,), rng, "nonzero")
    fs = [f for _, f in OPERATORS]

    def all_ops(x, y):
        return tuple(f(x, y) for f in fs)

    exps, types = [], []
    for name, f in OPERATORS:  # NumPy's operators have Python's floor semantics for // and %
        with np.errstate(all="ignore"):
            e = np.asarray(f(a.astype(np.float64),
                             b.astype(np.float64)) if is_inexact(t) or name == "a / b"
                           else f(a, b))
        types.append("pred" if e.dtype == np.bool_
                     else ("f32" if name == "a / b" and t in INTS else t))
        exps.append(e)
    check(run(all_ops, a, b), exps, types, what=f"operators on {t}")


BIT_OPERATORS = [
    ("a & b", lambda a, b: a & b), ("a | b", lambda a, b: a | b), ("a ^ b", lambda a, b: a ^ b),
    ("~a", lambda a, b: ~a), ("a << 2", lambda a, b: a << 2), ("a >> 1", lambda a, b: a >> 1),
    ("3 & a", lambda a, b: 3 & a), ("1 < a", lambda a, b: 1 < a), ("2 == a", lambda a, b: 2 == a),
    ("5 > b", lambda a, b: 5 > b), ("a <= 1", lambda a, b: a <= 1), ("1 << b", lambda a, b: 1 << b),
]


@pytest.mark.parametrize("t", ["s32", "u8", "s16"])
def test_bitwise_operators(t):
    rng = rng_for("bitops", t)
    a, b = gen(t, (2, 4), rng, "small") * 3, gen(t, (4,), rng, "small")
    a = a.astype(dt(t))
    fs = [f for _, f in BIT_OPERATORS]
    exps = [np.asarray(f(a, b)) for f in fs]
    exps = [e if e.dtype == np.bool_ else e.astype(dt(t)) for e in exps]
    types = ["pred" if e.dtype == np.bool_ else t for e in exps]
    check(run(lambda x, y: tuple(f(x, y) for f in fs), a, b), exps, types,
          what=f"bit operators {t}")
    p, q = gen("pred", (5,), rng), gen("pred", (5,), rng)
    check(run(lambda x, y: (x & y, x | y, x ^ y, ~x), p, q), [p & q, p | q, p ^ q, ~p], "pred")


def test_binary_broadcast_errors():
    for op in ["add", "less", "logical_and", "atan2"]:
        with pytest.raises(ValueError, match=op):
            getattr(nx, op)(nx.iota((2, 3)), nx.iota((4,)))
    with pytest.raises(ValueError, match="select"):
        nx.select(nx.iota((2,)), nx.iota((3,)), 0)


def test_floor_divide_and_mod_signs():
    a = np.array([7, -7, 7, -7, 0, 6, -6], np.int32)
    b = np.array([2, 2, -2, -2, 3, -3, 4], np.int32)
    check(run(nx.floor_divide, a, b), np.floor_divide(a, b), "s32")
    check(run(nx.mod, a, b), np.mod(a, b), "s32")
    af, bf = a.astype(np.float32) + 0.5, b.astype(np.float32)
    check(run(nx.floor_divide, af, bf), np.floor(af / bf), "f32")
    check(run(nx.mod, af, bf), np.mod(af, bf), "f32")
    au = np.array([7, 250, 0], np.uint8)
    bu = np.array([2, 7, 3], np.uint8)
    check(run(nx.floor_divide, au, bu), au // bu, "u8")
    check(run(nx.mod, au, bu), au % bu, "u8")


def test_matmul_operator():
    rng = rng_for("matmul")
    for sa, sb in [((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2))]:
        a, b = gen("f32", sa, rng), gen("f32", sb, rng)
        check(run(lambda x, y: x @ y, a, b), np.matmul(a.astype(np.float64), b), "f32",
              what=f"{sa} @ {sb}")
        check(run(lambda x, y: nx.matmul(x, y), a, b), np.matmul(a.astype(np.float64), b), "f32")
    a, b = gen("s32", (2, 2, 3), rng), gen("s32", (2, 3, 4), rng)
    check(run(nx.matmul, a, b), np.matmul(a, b), "s32", what="batched matmul")


def test_matmul_operator_batched():
    rng = rng_for("matmul3")
    a, b = gen("f32", (2, 2, 3), rng), gen("f32", (2, 3, 4), rng)
    check(run(lambda x, y: x @ y, a, b), np.matmul(a.astype(np.float64), b), "f32")


def test_exla_scalar_upload():
    t = nx.tensor(np.float32(2.5), backend="exla")
    assert t.to_numpy().shape == ()
    assert nx.full((), 3.0, backend="exla").to_numpy().shape == ()
    # a captured EXLA scalar becomes a (1,)-shaped constant inside a defn
    for compiler in COMPILERS:
        r = jit(lambda x: x + t, compiler=compiler)(nx.tensor(np.float32(1)))
        assert r.to_numpy().shape == () and float(r) == 3.5


INDEXES = [
    ("x[1]", lambda x: x[1]), ("x[-1]", lambda x: x[-1]), ("x[1:3]", lambda x: x[1:3]),
    ("x[::2]", lambda x: x[::2]), ("x[None]", lambda x: x[None]),
    ("x[..., 0]", lambda x: x[..., 0]),
    ("x[:, None, 1:]", lambda x: x[:, None, 1:]), ("x[1, 2, 3]", lambda x: x[1, 2, 3]),
    ("x[-2:, ..., ::3]", lambda x: x[-2:, ..., ::3]), ("x[2:1]", lambda x: x[2:1]),
    ("x[:, 1:100:2, -1]", lambda x: x[:, 1:100:2, -1]), ("x[...]", lambda x: x[...]),
]


def test_indexing():
    x = np.arange(3 * 4 * 5, dtype=np.int16).reshape(3, 4, 5)
    fs = [f for _, f in INDEXES]
    check(run(lambda t: tuple(f(t) for f in fs), x), [f(x) for f in fs], "s16")


def test_indexing_with_tensors_clamps():
    # negative scalar tensor indices count from the end (NumPy, jnp), then clamp (XLA's
    # dynamic_slice; Nx clamps a negative one to 0)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def at(i, d):
        return min(max(i + d if i < 0 else i, 0), d - 1)

    for i, j in [(1, 2), (5, -3), (-1, 7), (2, 0), (-9, -5)]:
        exp = x[at(i, 3), at(j, 4)]
        check(run(lambda t, a, b: t[a, b], x, np.array(i, np.int32), np.array(j, np.int64)),
              exp, "f32", what=f"x[{i}, {j}]")
        check(run(lambda t, a: t[a, 1:3], x, np.array(i, np.int8)),
              x[at(i, 3), 1:3], "f32", what=f"x[{i}, 1:3]")


def test_indexing_errors():
    x = nx.iota((3, 4))
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[x > 1]  # a boolean mask (negative steps are supported: x[::-1])
    with pytest.raises(IndexError):
        x[1.5]


# ----------------------------------------------------------------------------------------
# select, clip, as_type, bitcast
# ----------------------------------------------------------------------------------------
def test_select():
    rng = rng_for("select")
    cases = [("pred", "f32", "f32", (2, 3), (2, 3), (2, 3)), ("s32", "s8", "u8", (2, 3), (3,), ()),
             ("f32", "f16", "f32", (), (2, 3), (2, 3)),
             ("pred", "c64", "f64", (0, 3), (3,), (1, 3)),
             ("u8", "pred", "pred", (4,), (4,), (4,)), ("pred", "bf16", "s64", (2, 1), (1, 3), ())]
    for tp, ta, tb, sp, sa, sb in cases:
        p, a, b = gen(tp, sp, rng), gen(ta, sa, rng), gen(tb, sb, rng)
        t = merge(ta, tb)
        exp = np.where(p != 0, a.astype(dt(t)), b.astype(dt(t)))
        check(run(nx.select, p, a, b), exp, t, rtol=0, atol=0, what=f"select {tp} {ta} {tb}")
    p = np.array([np.nan, 0.0, -0.0, 2.0], np.float32)  # NaN is non-zero
    check(run(lambda q: nx.select(q, 1, 0.5), p), np.array([1, 0.5, 0.5, 1]), "f32")
    check(run(lambda q: nx.select(q, 7, -1), np.array([-3, 0, 0, 2], np.int8)),
          np.array([7, -1, -1, 7]), "s32")


def test_clip():
    rng = rng_for("clip")
    x = gen("s32", (2, 3), rng) * 3
    check(run(lambda v: nx.clip(v, -2, 4), x), np.clip(x, -2, 4), "s32")
    x = gen("f32", (3, 4), rng)
    lo, hi = gen("f32", (4,), rng) - 1, gen("f32", (3, 1), rng, "pos")
    check(run(nx.clip, x, lo, hi), np.minimum(np.maximum(x, lo), hi), "f32")
    x = gen("u8", (5,), rng, "small")
    lo, hi = np.array(1, np.int16), np.array(2, np.int16)
    check(run(nx.clip, x, lo, hi), np.clip(x.astype(np.int16), 1, 2), "s16")
    x = gen("bf16", (), rng)
    check(run(lambda v: nx.clip(v, -0.5, 0.5), x), np.clip(x.astype(np.float64), -0.5, 0.5), "bf16")
    x = gen("f64", (0, 2), rng)
    check(run(lambda v: nx.clip(v, 0, 1), x), x, "f64")
    x = np.array([np.nan, -np.inf, np.inf, 0.5, -3.0], np.float32)
    check(run(lambda v: nx.clip(v, -1.0, 1.0), x), np.minimum(np.maximum(x, -1), 1), "f32")
    check(run(lambda v: nx.clip(v, 2, 1), x), np.minimum(np.maximum(x, 2), 1), "f32")  # min > max
    with pytest.raises(TypeError, match="clip"):
        nx.clip(nx.tensor([1j]), 0, 1)
    with pytest.raises(ValueError, match="clip"):
        nx.clip(nx.iota((3,)), nx.iota((2, 3)), 5)


FLOAT_SOURCE = [0.0, 1.0, -1.0, 2.5, -2.5, 0.7, -0.7, 100.9, -100.9, 200.5, 300.0, -300.0,
                40000.5, 70000.0, -70000.0, 2.0**31, -2.0**31, 3e9, -3e9, 2.0**63, -2.0**63,
                1e19, 2.0**64, -1e19, 1e30, -1e30, np.nan, np.inf, -np.inf]
INT_SOURCE = [0, 1, -1, 2, 100, -100, 127, -128, 200, 255, 256, 300, -300, 32767, -32768, 40000,
              65535, 65536, 70000, 2**24 + 1, 2**31 - 1, -2**31, 2**32 - 1, 2**40 + 1, 2**53 + 1,
              2**63 - 1, -2**63, 2**64 - 1]


def as_type_source(t):
    if t == "pred":
        return np.array([True, False, True])
    if t in INTS:
        info = np.iinfo(dt(t))
        return np.array([v for v in INT_SOURCE if info.min <= v <= info.max], dt(t))
    with np.errstate(all="ignore"):
        v = np.array(FLOAT_SOURCE, np.float64).astype(dt(t))
    if t in COMPLEX:
        c = np.empty(v.shape, dt(t))
        c.real, c.imag = v.real, np.array(FLOAT_SOURCE[::-1])
        v = c
        v = np.concatenate([v, np.array([complex(np.nan, 0), complex(0, 1), 0j], dt(t))])
    return v


def convert_oracle(x, src, dst):
    """Element conversion, as XLA defines it (float→int saturates, NaN→0; int→int wraps;
    complex→real takes the real part; x→pred tests x != 0)."""
    if dst == "pred":
        return x != 0
    if src in COMPLEX and dst not in COMPLEX:
        x = x.real
    if dst in INTS:
        info = np.iinfo(dt(dst))
        out = []
        for v in x.tolist():
            if isinstance(v, float):
                v = 0 if math.isnan(v) else (info.max if v == math.inf else (
                    info.min if v == -math.inf else math.trunc(v)))
                v = min(max(v, int(info.min)), int(info.max))
            else:
                v = int(v)
                v = (v - int(info.min)) % (int(info.max) - int(info.min) + 1) + int(info.min)
            out.append(v)
        return np.array(out, dt(dst)).reshape(x.shape)
    with np.errstate(all="ignore"):
        return x.astype(dt(dst))


@pytest.mark.parametrize("src", ALL_TYPES)
def test_as_type_all_pairs(src):
    x = as_type_source(src)
    targets = [t for t in ALL_TYPES if t != src]

    def f(v):
        return tuple(nx.as_type(v, t) for t in targets)

    exps = [convert_oracle(x, src, t) for t in targets]
    check(run(f, x), exps, targets, rtol=0, atol=0, what=f"as_type from {src}")


def test_as_type_same_type_and_scalars():
    for t in ["s8", "f32", "pred", "c64"]:
        x = gen(t, (), rng_for("ast", t))
        check(run(lambda v: nx.as_type(v, t), x), x, t)


BITCASTS = [("s8", "u8"), ("u8", "s8"), ("s16", "f16"), ("f16", "bf16"), ("bf16", "u16"),
            ("u16", "s16"), ("s32", "f32"), ("f32", "u32"), ("u32", "s32"), ("s64", "f64"),
            ("f64", "u64"), ("u64", "s64"), ("c64", "s64"), ("f64", "c64")]


@pytest.mark.parametrize("src,dst", BITCASTS)
def test_bitcast(src, dst):
    rng = rng_for("bitcast", src, dst)
    if src in INTS:
        info = np.iinfo(dt(src))
        x = rng.integers(int(info.min) // 2, int(info.max) // 2, size=(2, 3),
                         dtype=np.int64 if src[0] == "s" else np.uint64).astype(dt(src))
    else:
        x = gen(src, (2, 3), rng)
    check(run(lambda v: nx.bitcast(v, dst), x), x.view(dt(dst)), dst, rtol=0, atol=0)


@pytest.mark.parametrize("src,dst", [("f32", "s32"), ("u64", "f64"), ("c64", "s64")])
def test_bitcast_scalars_and_transposed(src, dst):
    x = gen(src, (2, 3), rng_for("bitcast0", src, dst))
    check(run(lambda v: nx.bitcast(v, dst), x[0, 0]), x[:1, 0].view(dt(dst))[0], dst, rtol=0,
          atol=0)
    check(run(lambda v: nx.bitcast(nx.transpose(v), dst), x),
          np.ascontiguousarray(x.T).view(dt(dst)), dst, rtol=0, atol=0)


def test_bitcast_rejects():
    for src, dst in [("s8", "s16"), ("pred", "u8"), ("f32", "f64"), ("c128", "f64"),
                     ("u8", "pred")]:
        with pytest.raises(TypeError, match="bitcast"):
            nx.bitcast(nx.tensor(np.zeros(2, dt(src))), dst)


# ----------------------------------------------------------------------------------------
# Shape ops
# ----------------------------------------------------------------------------------------
def test_reshape():
    rng = rng_for("reshape")
    for t, shape, new in [("f32", (2, 3), (3, 2)), ("s8", (2, 3), (-1,)), ("pred", (), (1, 1)),
                          ("c64", (1, 1), ()), ("u64", (0, 3), (3, 0)),
                          ("bf16", (2, 3, 4), (4, -1, 2))]:
        x = gen(t, shape, rng)
        check(run(lambda v: nx.reshape(v, new), x), x.reshape(new), t, 0, 0,
              f"reshape {shape}->{new}")
        check(run(lambda v: v.reshape(new), x), x.reshape(new), t, 0, 0)
    with pytest.raises(ValueError, match="reshape"):
        nx.reshape(nx.iota((2, 3)), (4,))
    with pytest.raises(ValueError, match="reshape"):
        nx.reshape(nx.iota((2, 3)), (-1, -1))


def test_squeeze_and_new_axis():
    rng = rng_for("squeeze")
    x = gen("f32", (1, 3, 1, 2), rng)
    check(run(nx.squeeze, x), x.reshape(3, 2), "f32", 0, 0)
    check(run(lambda v: nx.squeeze(v, axes=[2]), x), x.reshape(1, 3, 2), "f32", 0, 0)
    check(run(lambda v: nx.squeeze(v, axes=[-4, 2]), x), x.reshape(3, 2), "f32", 0, 0)
    s = gen("s16", (), rng)
    for axis, exp in [(0, s.reshape(1))]:
        check(run(lambda v: nx.new_axis(v, axis), s), exp, "s16")
    y = gen("u8", (2, 3), rng)
    for axis in [0, 1, 2, -1, -3]:
        check(run(lambda v: nx.new_axis(v, axis), y), np.expand_dims(y, axis), "u8",
              what=f"axis {axis}")
    e = gen("pred", (0, 1), rng)
    check(run(nx.squeeze, e), e.reshape(0), "pred")
    with pytest.raises(ValueError, match="squeeze"):
        nx.squeeze(nx.iota((2, 1)), axes=[0])


def test_broadcast():
    rng = rng_for("broadcast")
    cases = [("f32", (3,), (2, 3), None), ("s8", (), (2, 3), None), ("u16", (3,), (3, 2), [0]),
             ("pred", (2, 1), (2, 4, 3), [0, 2]), ("c64", (1,), (0, 4), None),
             ("bf16", (2, 1), (2, 1), None), ("s64", (3,), (2, 3, 4), [1]),
             ("f16", (1, 3), (0, 3), None)]
    for t, shape, new, axes in cases:
        x = gen(t, shape, rng)
        ax = axes if axes is not None else list(range(len(new) - len(shape), len(new)))
        expand = [1] * len(new)
        for d, a in zip(shape, ax):
            expand[a] = d
        exp = np.broadcast_to(x.reshape(expand), new)
        check(run(lambda v: nx.broadcast(v, new, axes=axes), x), exp, t, 0, 0,
              f"{shape}->{new} {axes}")
    with pytest.raises(ValueError, match="broadcast"):
        nx.broadcast(nx.iota((3,)), (3, 2))
    with pytest.raises(ValueError, match="broadcast"):
        nx.broadcast(nx.iota((2, 3)), (3, 2, 3), axes=[1, 0])


def test_transpose():
    rng = rng_for("transpose")
    for t, shape, axes in [("f32", (2, 3), None), ("s32", (2, 3, 4), [1, 2, 0]),
                           ("c128", (2, 3, 4), [2, 0, 1]), ("u8", (0, 2, 3), [2, 0, 1]),
                           ("pred", (), None), ("bf16", (3, 1), [-1, 0])]:
        x = gen(t, shape, rng)
        check(run(lambda v: nx.transpose(v, axes=axes), x), np.transpose(x, axes), t, 0, 0)
    y = gen("s8", (2, 3), rng)
    check(run(lambda v: v.T, y), y.T, "s8", 0, 0)
    with pytest.raises(ValueError, match="transpose"):
        nx.transpose(nx.iota((2, 3)), axes=[0, 0])
    with pytest.raises(ValueError, match="transpose"):
        nx.transpose(nx.iota((2, 3)), axes=[1])


PAD_CASES = [
    ("f32", (3,), [(1, 2, 0)]), ("s32", (3,), [(0, 0, 2)]),
    ("u8", (2, 3), [(1, -1, 1), (-1, 2, 0)]),
    ("f64", (4, 3), [(-2, -1, 0), (0, 0, 3)]), ("pred", (2,), [(1, 1, 1)]),
    ("c64", (2, 2), [(0, 1, 1), (1, 0, 0)]), ("bf16", (), []),
    ("s8", (0, 2), [(1, 1, 2), (0, 0, 1)]),
    ("f16", (3,), [(-3, 2, 1)]), ("s64", (2, 3), [(-1, -1, 2), (2, -3, 0)]),
]


@pytest.mark.parametrize("t,shape,cfg", PAD_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(PAD_CASES)])
def test_pad(t, shape, cfg):
    x = gen(t, shape, rng_for("pad", t, shape))
    v = {"pred": True, "c64": 2 - 1j}.get(t, 7 if t in INTS else -1.5)
    with x64():
        exp = np.asarray(lax.pad(jnp.asarray(x), jnp.asarray(v, dt(t)), [tuple(c) for c in cfg]))
    check(run(lambda a: nx.pad(a, v, cfg), x), exp, t, 0, 0, f"pad {cfg}")


def test_pad_tensor_value_and_errors():
    x = gen("f32", (2, 2), rng_for("padv"))
    v = np.array(3, np.int32)
    with x64():
        exp = np.asarray(lax.pad(jnp.asarray(x), jnp.float32(3), [(1, 0, 1), (0, 1, 0)]))
    check(run(lambda a, b: nx.pad(a, b, [(1, 0, 1), (0, 1, 0)]), x, v), exp, "f32", 0, 0)
    with pytest.raises(ValueError, match="pad"):
        nx.pad(nx.iota((2,)), 0, [(0, 0, -1)])
    with pytest.raises(ValueError, match="pad"):
        nx.pad(nx.iota((2,)), 0, [(-2, -1, 0)])


def test_reverse():
    rng = rng_for("reverse")
    for t, shape, axes in [("f32", (2, 3), None), ("s16", (2, 3, 4), [0, 2]), ("pred", (3,), [-1]),
                           ("c64", (0, 3), [1]), ("u32", (), None), ("bf16", (4, 1), [0])]:
        x = gen(t, shape, rng)
        exp = np.flip(x, axis=tuple(range(x.ndim)) if axes is None else tuple(axes))
        check(run(lambda v: nx.reverse(v, axes=axes), x), exp, t, 0, 0)


SLICE_CASES = [
    ("f32", (5,), [1], [3], None), ("s32", (4, 6), [1, 2], [2, 3], None),
    ("u8", (4, 6), [0, 1], [4, 5], [2, 3]), ("c64", (3, 4), [0, 0], [3, 4], [1, 2]),
    ("pred", (5, 2), [4, 0], [1, 2], None), ("bf16", (3, 0), [1, 0], [2, 0], None),
    ("s64", (7,), [0], [7], 3), ("f16", (2, 3, 4), [1, 0, 1], [1, 3, 2], [1, 2, 1]),
]


@pytest.mark.parametrize("t,shape,starts,lengths,strides", SLICE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SLICE_CASES)])
def test_slice_static(t, shape, starts, lengths, strides):
    x = gen(t, shape, rng_for("slice", t, shape))
    st = [1] * len(shape) if strides is None else (
        [strides] * len(shape) if isinstance(strides, int) else strides)
    exp = x[tuple(slice(s, s + n, k) for s, n, k in zip(starts, lengths, st))]
    check(run(lambda v: nx.slice(v, starts, lengths, strides=strides), x), exp, t, 0, 0)


DYN_SLICE_CASES = [
    ("f32", (5,), [2], [3], None, "s32"), ("f32", (5,), [4], [3], None, "s32"),
    ("s16", (4, 6), [-2, 3], [2, 4], None, "s64"), ("u8", (4, 6), [1, 9], [3, 5], [2, 2], "u8"),
    ("c64", (3, 4), [100, -100], [1, 2], [1, 1], "s8"), ("bf16", (6,), [3], [6], 3, "u32"),
    ("pred", (2, 0), [1, 0], [1, 0], None, "s32"),
]


@pytest.mark.parametrize("t,shape,starts,lengths,strides,it", DYN_SLICE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(DYN_SLICE_CASES)])
def test_slice_dynamic_clamps(t, shape, starts, lengths, strides, it):
    x = gen(t, shape, rng_for("dslice", t, shape))
    idx = [np.array(s, dt(it)) if it[0] == "s" or s >= 0 else np.array(0, dt(it)) for s in starts]
    st = [1] * len(shape) if strides is None else (
        [strides] * len(shape) if isinstance(strides, int) else strides)
    exp = clamped_slice(x, [int(i) for i in idx], lengths, st)

    def f(v, *s):
        return nx.slice(v, list(s), lengths, strides=strides)
    check(run(f, x, *idx), exp, t, 0, 0, f"dynamic slice at {starts}")
    if len(shape) == 2:  # a tensor start and an int start
        s1 = starts[1] if 0 <= starts[1] <= shape[1] - lengths[1] else 0
        check(run(lambda v, i: nx.slice(v, [i, s1], lengths, strides=strides), x, idx[0]),
              clamped_slice(x, [int(idx[0]), s1], lengths, st), t, 0, 0)


def clamped_slice(x, starts, lengths, strides):
    """XLA's dynamic_slice: each start is clamped to [0, dim - length] (no negative
    indexing, unlike jax.lax.dynamic_slice)."""
    s = [min(max(i, 0), d - n) for i, d, n in zip(starts, x.shape, lengths)]
    return x[tuple(slice(a, a + n, k) for a, n, k in zip(s, lengths, strides))]


def test_slice_errors():
    x = nx.iota((4, 5))
    # an integer start that does not fit is clamped, as in Nx (tests/test_ops_indexing.py)
    assert nx.slice(x, [3, 0], [2, 5]).tolist() == nx.slice(x, [2, 0], [2, 5]).tolist()
    with pytest.raises(ValueError, match="slice"):
        nx.slice(x, [0, 0], [5, 5])
    with pytest.raises(TypeError, match="slice"):
        nx.slice(x, [nx.tensor(1.0), 0], [1, 1])


PUT_CASES = [("f32", (5,), "f32", (2,), [1]), ("s32", (4, 5), "s8", (2, 3), [3, -1]),
             ("u8", (3, 3), "f32", (1, 3), [1, 0]), ("c64", (2, 4), "f64", (2, 2), [0, 9]),
             ("pred", (3,), "pred", (3,), [1]), ("bf16", (2, 3), "bf16", (0, 2), [1, 1]),
             ("s64", (), "s64", (), [])]


@pytest.mark.parametrize("tx,sx,tu,su,starts", PUT_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(PUT_CASES)])
def test_put_slice(tx, sx, tu, su, starts):
    rng = rng_for("put", tx, sx)
    x, u = gen(tx, sx, rng), gen(tu, su, rng)
    t = merge(tx, tu)
    idx = [np.array(s, np.int32) for s in starts]
    exp = x.astype(dt(t))
    at = [min(max(i, 0), d - n) for i, d, n in zip(starts, sx, su)]  # clamped, as XLA
    exp[tuple(slice(a, a + n) for a, n in zip(at, su))] = u.astype(dt(t))

    def f(v, w, *s):
        return nx.put_slice(v, list(s), w)
    check(run(f, x, u, *idx), exp, t, 0, 0, f"put_slice at {starts}")
    # static (Python int) starts
    check(run(lambda v, w: nx.put_slice(v, starts, w), x, u), exp, t, 0, 0)


def test_concatenate_and_stack():
    rng = rng_for("concat")
    a, b, c = gen("f32", (2, 3), rng), gen("f32", (1, 3), rng), gen("f32", (0, 3), rng)
    check(run(lambda x, y, z: nx.concatenate([x, y, z]), a, b, c), np.concatenate([a, b, c]), "f32",
          0, 0)
    a, b = gen("s8", (2, 3), rng), gen("u8", (2, 2), rng)
    check(run(lambda x, y: nx.concatenate([x, y], axis=-1), a, b),
          np.concatenate([a.astype(np.int16), b.astype(np.int16)], axis=1), "s16", 0, 0)
    a, b = gen("c64", (2,), rng), gen("f64", (3,), rng)
    check(run(lambda x, y: nx.concatenate([x, y]), a, b),
          np.concatenate([a, b]).astype(np.complex128), "c128")
    a = gen("bf16", (2, 2), rng)
    check(run(lambda x: nx.concatenate([x]), a), a, "bf16")
    a, b = gen("pred", (3,), rng), gen("pred", (3,), rng)
    check(run(lambda x, y: nx.concatenate([x, y, x]), a, b), np.concatenate([a, b, a]), "pred")
    for axis in [0, 1, 2, -1]:
        a, b = gen("s32", (2, 3), rng), gen("s32", (2, 3), rng)
        check(run(lambda x, y: nx.stack([x, y], axis=axis), a, b), np.stack([a, b], axis=axis),
              "s32")
    a, b = gen("f16", (), rng), gen("s8", (), rng)
    check(run(lambda x, y: nx.stack([x, y]), a, b), np.stack([a, b.astype(np.float16)]), "f16")
    with pytest.raises(ValueError, match="concatenate"):
        nx.concatenate([nx.iota((2, 3)), nx.iota((2, 2))])
    with pytest.raises(ValueError, match="stack"):
        nx.stack([nx.iota((2,)), nx.iota((3,))])


# ----------------------------------------------------------------------------------------
# Reductions
# ----------------------------------------------------------------------------------------
def aggregate(t):
    return {"pred": "s32", "s8": "s32", "s16": "s32", "u8": "u32", "u16": "u32"}.get(t, t)


def reduce_expected(op, x, t, axes, keep):
    ax = tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)
    if op in ("all", "any"):
        return getattr(np, op)(x != 0, axis=ax, keepdims=keep)
    if op in ("sum", "product"):
        tout = aggregate(t)
        f = np.sum if op == "sum" else np.prod
        if is_inexact(tout):
            return f(x.astype(np.complex128 if tout in COMPLEX else np.float64), axis=ax,
                     keepdims=keep)
        return f(x.astype(dt(tout)), axis=ax, keepdims=keep, dtype=dt(tout))
    f, init = (np.max, -np.inf) if op == "reduce_max" else (np.min, np.inf)
    if t == "pred":
        init = op == "reduce_min"
    elif t in INTS:
        init = np.iinfo(dt(t)).min if op == "reduce_max" else np.iinfo(dt(t)).max
    xx = x.astype(np.float64) if t in FLOATS else x
    return f(xx, axis=ax, keepdims=keep, initial=init)


REDUCE_TYPES = {"sum": ["s8", "u8", "pred", "s64", "u32", "f16", "bf16", "f32", "f64", "c64"],
                "product": ["s16", "u16", "f32", "c128", "pred", "u64", "bf16"],
                "reduce_max": ["s8", "u64", "f32", "bf16", "pred", "f64", "s32"],
                "reduce_min": ["s16", "u8", "f32", "f16", "pred", "s64"],
                "all": ["f32", "s32", "pred", "c64"], "any": ["f16", "u8", "pred", "c128"]}
REDUCE_SHAPES = [((2, 3, 4), None, False), ((2, 3, 4), [0, 2], False), ((2, 3, 4), [-1], True),
                 ((), None, False), ((0, 3), [0], False), ((0, 3), [1], True), ((2, 3), None, True)]
REDUCE_CASES = [(op, t, *REDUCE_SHAPES[(i + j) % len(REDUCE_SHAPES)])
                for i, op in enumerate(sorted(nx.REDUCTIONS)) for j,
                t in enumerate(REDUCE_TYPES[op])]


@pytest.mark.parametrize("op,t,shape,axes,keep", REDUCE_CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(REDUCE_CASES)])
def test_reductions(op, t, shape, axes, keep):
    x = gen(t, shape, rng_for("reduce", op, t, shape), "any")
    if op in ("reduce_max", "reduce_min") and t in FLOATS and x.size > 3:
        x = x.copy()
        x.flat[5] = np.nan
        x.flat[1] = np.inf if op == "reduce_min" else -np.inf
    t_out = {"aggregate": aggregate(t), "same": t, "pred": "pred"}[nx.REDUCTIONS[op]]
    exp = reduce_expected(op, x, t, axes, keep)
    rtol = None
    if op in ("sum", "product") and t in ("f16", "bf16"):
        rtol = 3 * TOL[t][0]
    check(run(lambda v: getattr(nx, op)(v, axes=axes, keep_axes=keep), x), exp, t_out, rtol=rtol,
          what=f"{op} {t}{list(shape)} axes={axes} keep={keep}")


def test_reductions_reject_complex_max():
    for op in ("reduce_max", "reduce_min"):
        with pytest.raises(TypeError, match=op):
            getattr(nx, op)(nx.tensor([1j]))


def test_mean():
    x = gen("s32", (2, 3), rng_for("mean"))
    check(run(lambda v: nx.mean(v, axes=[1]), x), x.mean(axis=1), "f32")


ARG_CASES = [("argmax", "f32", (2, 5), 1, False, "low", "s32"),
             ("argmax", "f32", (2, 5), 1, False, "high", "s32"),
             ("argmin", "s8", (3, 4), 0, True, "low", "s64"),
             ("argmin", "s8", (3, 4), 0, False, "high", "u8"),
             ("argmax", "u16", (4, 3), None, False, "high", "s32"),
             ("argmin", "bf16", (6,), 0, False, "low", "s32"),
             ("argmax", "pred", (2, 3), -1, False, "low", "s16"),
             ("argmin", "f64", (3, 2, 4), 2, True, "high", "s32"),
             ("argmax", "f32", (), None, False, "low", "s32"),
             ("argmax", "f16", (3, 0), 0, False, "low", "s32")]


def arg_oracle(op, x, axis, keep, tie_break):
    """jnp.argmax/argmin take the first of equal values and treat NaN as the extreme."""
    f = jnp.argmax if op == "argmax" else jnp.argmin
    if axis is None:
        x, axis = x.reshape(-1), 0
    with x64():
        if tie_break == "low":
            r = np.asarray(f(jnp.asarray(x), axis=axis, keepdims=keep))
        else:
            r = x.shape[axis] - 1 - np.asarray(f(jnp.asarray(np.flip(x, axis)), axis=axis,
                                                 keepdims=keep))
    return r


@pytest.mark.parametrize("op,t,shape,axis,keep,tie,it", ARG_CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(ARG_CASES)])
def test_arg_reductions(op, t, shape, axis, keep, tie, it):
    rng = rng_for("arg", op, t, shape, tie)
    x = gen(t, shape, rng, "small")
    if t in FLOATS:
        x = np.floor(x.astype(np.float64)).astype(dt(t))  # ties
        if x.size > 4:
            x.flat[[1, 3]] = np.nan

    def f(v):
        return getattr(nx, op)(v, axis=axis, keep_axis=keep, tie_break=tie, type=it)
    if x.size == 0 and (axis is None or shape[axis] == 0):
        with pytest.raises(ValueError, match=op):
            f(nx.tensor(x))
        return
    if x.size == 0:
        exp = np.zeros(tuple(d for i, d in enumerate(shape) if i != axis), dt(it))
    else:
        exp = arg_oracle(op, x, axis, keep, tie)
    check(run(f, x), exp.astype(dt(it)), it, what=f"{op} {t}{list(shape)} axis={axis} tie={tie}")


def test_arg_reductions_nan_and_infinities():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [-np.inf, 2.0, -np.inf, np.inf],
                  [np.inf, np.inf, 0.0, 0.0]], np.float32)
    for op in ("argmax", "argmin"):
        for tie in ("low", "high"):
            exp = arg_oracle(op, x, 1, False, tie)
            check(run(lambda v: getattr(nx, op)(v, axis=1, tie_break=tie), x), exp.astype(np.int32),
                  "s32", what=f"{op} {tie}")
    with pytest.raises(TypeError, match="argmax"):
        nx.argmax(nx.tensor([1j, 2j]))
    with pytest.raises(ValueError, match="tie_break"):
        nx.argmax(nx.tensor([1, 2]), tie_break="middle")


# ----------------------------------------------------------------------------------------
# Dot and windows
# ----------------------------------------------------------------------------------------
DOT_CASES = [
    ("f32", "f32", (3,), (3,), None), ("f32", "f32", (2, 3), (3,), None),
    ("s32", "s32", (3,), (3, 4), None), ("f64", "f64", (2, 3), (3, 4), None),
    ("s8", "u8", (2, 3, 4), (4, 5), None), ("f16", "f16", (2, 3), (3, 2), None),
    ("bf16", "f32", (4, 8), (8, 2), None), ("c64", "c64", (2, 3), (3, 2), None),
    ("pred", "pred", (2, 3), (3, 2), None), ("s64", "u32", (2, 3), (3,), None),
    ("f32", "f32", (3, 2, 4), (4, 5, 3), ([0, 2], [2, 0])),
    ("s32", "s32", (2, 3, 4), (2, 4, 5), ([2], [0], [1], [0])),
    ("f32", "f32", (3, 2, 4), (4, 2), ([2], [1], [0], [1])),
    ("f32", "f32", (2, 0), (0, 3), None), ("s16", "s16", (0, 3), (3, 2), None),
    ("f32", "s32", (), (2, 3), None), ("u8", "u8", (2, 3), (4, 3), ([1], [1])),
]


def dot_oracle(a, b, ta, tb, spec):
    t = merge(ta, tb)
    t = "u8" if t == "pred" else t
    wide = np.complex128 if t in COMPLEX else (np.float64 if t in FLOATS else dt(t))
    x, y = a.astype(dt(t)).astype(wide), b.astype(dt(t)).astype(wide)
    if spec is None:
        if x.ndim == 0 or y.ndim == 0:
            return x * y, t
        return np.dot(x, y), t
    if len(spec) == 2:
        return np.tensordot(x, y, axes=spec), t
    ca, ba, cb, bb = spec
    letters = iter("abcdefghij")
    sa, sb = [None] * x.ndim, [None] * y.ndim
    for i, j in zip(ba + ca, bb + cb):
        sa[i] = sb[j] = next(letters)
    sa = [s or next(letters) for s in sa]
    sb = [s or next(letters) for s in sb]
    out = [sa[i] for i in ba] + [sa[i] for i in range(x.ndim) if i not in ba + ca] + \
        [sb[j] for j in range(y.ndim) if j not in bb + cb]
    return np.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", x, y), t


@pytest.mark.parametrize("ta,tb,sa,sb,spec", DOT_CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(DOT_CASES)])
def test_dot(ta, tb, sa, sb, spec):
    rng = rng_for("dot", ta, tb, sa, sb)
    a, b = gen(ta, sa, rng), gen(tb, sb, rng)
    exp, t = dot_oracle(a, b, ta, tb, spec)
    if spec is None:
        f = nx.dot
    elif len(spec) == 2:
        def f(x, y):
            return nx.dot(x, spec[0], y, spec[1])
    else:
        def f(x, y):
            return nx.dot(x, spec[0], spec[1], y, spec[2], spec[3])
    rtol = {"f16": 1e-2, "bf16": 3e-2}.get(t)
    check(run(f, a, b), exp, t, rtol=rtol, atol=rtol,
          what=f"dot {ta}{list(sa)} {tb}{list(sb)} {spec}")


def test_dot_errors():
    with pytest.raises(ValueError, match="dot"):
        nx.dot(nx.iota((2, 3)), nx.iota((2, 3)))
    with pytest.raises(ValueError, match="dot"):
        nx.dot(nx.iota((2, 3)), [1], [0], nx.iota((3, 3)), [0], [1])


WINDOW_CASES = [
    ("window_sum", "f32", (4, 5), (2, 2), None, "valid", None),
    ("window_sum", "s32", (4, 5), (2, 3), (2, 1), "same", None),
    ("window_sum", "f64", (5, 6), (2, 2), (1, 2), [(1, 0), (2, 1)], (2, 1)),
    ("window_sum", "f16", (7,), (3,), 2, "same", None),
    ("window_sum", "u8", (3, 4), (1, 2), None, "valid", (1, 2)),
    ("window_sum", "c64", (3, 3), (2, 2), None, [(0, 1), (1, 0)], None),
    ("window_sum", "s64", (0, 4), (1, 2), None, [(1, 0), (0, 0)], None),
    ("window_sum", "bf16", (2, 3, 4), (1, 2, 2), (1, 1, 2), "same", (1, 1, 2)),
    ("window_max", "f32", (4, 5), (2, 2), None, "valid", None),
    ("window_max", "s8", (4, 5), (3, 2), (1, 2), "same", None),
    ("window_max", "u8", (6,), (2,), 1, [(2, 3)], 3),
    ("window_max", "f16", (3, 4), (2, 2), (2, 2), "same", (2, 1)),
    ("window_max", "s64", (4, 3), (4, 1), None, "valid", None),
    ("window_max", "bf16", (5,), (2,), None, [(1, 1)], None),
    ("window_max", "pred", (3, 3), (2, 2), None, "same", None),
    ("window_max", "f64", (), (), None, "valid", None),
]


@pytest.mark.parametrize("op,t,shape,window,strides,padding,dil", WINDOW_CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(WINDOW_CASES)])
def test_windows(op, t, shape, window, strides, padding, dil):
    x = gen(t, shape, rng_for("window", op, t, shape))
    if op == "window_max" and t in FLOATS and x.size > 3:
        x = x.copy()
        x.flat[2] = -np.inf
    n = len(shape)
    st = (1,) * n if strides is None else ((strides,) * n if isinstance(strides, int) else strides)
    dl = (1,) * n if dil is None else ((dil,) * n if isinstance(dil, int) else dil)
    pad = padding.upper() if isinstance(padding, str) else padding
    if padding == "same":  # Nx's "same": window - 1 in total, the odd one high (any strides)
        pad = [((w - 1) * r // 2, (w - 1) * r - (w - 1) * r // 2) for w, r in zip(window, dl)]
    wide = np.complex128 if t in COMPLEX else (np.float64 if t in FLOATS else dt(t))
    xx = x.astype(wide)
    with x64():
        if op == "window_sum":
            exp = lax.reduce_window(jnp.asarray(xx), jnp.zeros((), wide), lax.add, window, st, pad,
                                    window_dilation=dl)
        else:
            init = -np.inf if t in FLOATS else (False if t == "pred" else np.iinfo(dt(t)).min)
            exp = lax.reduce_window(jnp.asarray(xx), jnp.asarray(init, wide), lax.max, window, st,
                                    pad,
                                    window_dilation=dl)
        exp = np.asarray(exp)

    def f(v):
        return getattr(nx, op)(v, window, strides=strides, padding=padding, window_dilations=dil)
    check(run(f, x), exp, t, what=f"{op} {t}{list(shape)} {window} {strides} {padding} {dil}")


def test_window_errors():
    with pytest.raises(ValueError, match="window_sum"):
        nx.window_sum(nx.iota((3, 3)), (2,))
    with pytest.raises(ValueError):
        nx.window_sum(nx.iota((3,)), (4,))
    with pytest.raises(TypeError, match="window_max"):
        nx.window_max(nx.tensor([1j, 2j]), (1,))


# ----------------------------------------------------------------------------------------
# Creation and constants
# ----------------------------------------------------------------------------------------
def test_iota():
    for shape, axis, t in [((5,), 0, "s32"), ((2, 3), 1, "f32"), ((2, 3), 0, "u8"),
                           ((2, 3, 4), None, "s64"), ((), None, "f64"), ((0, 3), 1, "bf16"),
                           ((3, 2), -1, "f16"), ((4,), 0, "c64"), ((2, 2), None, "s8"),
                           ((2, 3), 1, "pred"), ((3,), None, "pred")]:  # pred: fuzzer-found
        n = int(np.prod(shape))
        if axis is None:
            exp = np.arange(n).reshape(shape)
        else:
            view = [1] * len(shape)
            view[axis] = shape[axis]
            exp = np.broadcast_to(np.arange(shape[axis]).reshape(view), shape)
        check(run(lambda: nx.iota(shape, axis=axis, type=t)), exp.astype(dt(t)), t, 0, 0,
              f"iota {shape} {axis} {t}")


def test_eye():
    for n, t in [(3, "s32"), ((2, 3), "f32"), ((2, 3, 3), "pred"), ((4, 2), "bf16"), (0, "u8"),
                 ((1, 1), "c128")]:
        shape = (n, n) if isinstance(n, int) else n
        exp = np.broadcast_to(np.eye(shape[-2], shape[-1]), shape).astype(dt(t))
        check(run(lambda: nx.eye(n, type=t)), exp, t, 0, 0, f"eye {n} {t}")


def test_full():
    for shape, v, t, t_out in [((2, 3), 7, None, "s32"), ((), 2.5, None, "f32"),
                               ((3,), True, None, "pred"),
                               ((0, 2), 1, "f16", "f16"), ((2,), 255, "u8", "u8"),
                               ((2, 2), 1 + 2j, None, "c64"), ((3,), 2**40, "s64", "s64"),
                               ((2,), 0.1, "f64", "f64"), ((2,), -100.7, "s8", "s8")]:
        # (values the type cannot hold, -1 as u8 or 300.7 as s8, are errors: test_validation)
        src = np.full(shape, v)
        exp = convert_oracle(src, tname(src.dtype), t_out) if t is not None else np.full(shape, v,
                                                                                         dt(t_out))
        check(run(lambda: nx.full(shape, v, type=t)), exp, t_out, 0, 0, f"full {shape} {v} {t}")


CONSTANTS = [
    (np.array([1, -2, 3], np.int8), "s8"), (np.array([2**64 - 1, 0], np.uint64), "u64"),
    (np.array([-2**63, 2**63 - 1], np.int64), "s64"),
    (np.array([0.1, np.nan, -np.inf], np.float64), "f64"),
    (np.array([1.5, -2.25, 3.0], BF16), "bf16"), (np.array([[1 + 2j, -3j]], np.complex64), "c64"),
    (np.array([True, False, True]), "pred"), (np.array(0.1, np.float32), "f32"),
    (np.array([1.0 + 1e-12j], np.complex128), "c128"), (np.array([65504, -0.0], np.float16), "f16"),
    (np.array([[7, 7], [7, 7]], np.uint16), "u16"),
]


@pytest.mark.parametrize("c,t", CONSTANTS, ids=[t + str(i) for i, (_, t) in enumerate(CONSTANTS)])
def test_constants(c, t):
    # a constant captured by the function (lifted into the graph inside a defn)
    x = np.zeros(c.shape, dt(t))
    check(run(lambda v: nx.add(v, nx.tensor(c)), x) if t != "pred" else
          run(lambda v: nx.logical_or(v, nx.tensor(c)), x), c, t, 0, 0, f"constant {t}")
    check(run(lambda: nx.tensor(c)), c, t, 0, 0, f"constant output {t}")
    check(run(lambda: nx.tensor(c.tolist(), type=t)), c, t, 0, 0, f"constant from list {t}")


def test_constants_keep_signed_zeros_and_nans():
    for t in ["f32", "f64", "f16", "bf16"]:
        c = np.array([0.0, -0.0, -0.0, 0.0]).astype(dt(t))
        n = np.array([np.nan, np.nan, 1.0]).astype(dt(t))
        x = np.full(4, -0.0, dt(t))
        res = run(lambda v: (nx.divide(1.0, nx.add(v, nx.tensor(c))), nx.tensor(n)), x)
        check(res, [np.array([np.inf, -np.inf, -np.inf, np.inf]), n], [t, t],
              what=f"signed zeros {t}")
    c = np.array([complex(0.0, -0.0), complex(-0.0, 0.0), complex(np.nan, 1)], np.complex64)
    for path, r in run(lambda: nx.tensor(c)).items():
        a = r.to_numpy()
        assert np.array_equal(np.signbit(a.real[:2]), [False, True]), path
        assert np.array_equal(np.signbit(a.imag[:2]), [True, False]), path
        assert np.isnan(a.real[2]) and a.imag[2] == 1, path


def test_list_type_inference():
    for data, t in [([1, 2], "s32"), ([1.5, 2], "f32"), ([True, False], "pred"), ([1j], "c64"),
                    (3, "s32"), (2.0, "f32")]:
        check(run(lambda: nx.tensor(data)), np.array(data).astype(dt(t)), t, 0, 0)


def test_windows_over_empty_dims():
    x = np.zeros((0, 4), np.float32)
    for f in (lambda t: nx.window_sum(t, (1, 2)), lambda t: nx.window_max(t, (1, 2))):
        check(run(f, x), np.zeros((0, 3), np.float32), "f32", what="window over an empty dim")
    with pytest.raises(ValueError, match="does not fit"):
        nx.window_sum(nx.iota((1, 4)), (3, 1))


def test_tensors_do_not_alias_numpy_arrays():
    a = np.arange(3, dtype=np.int32)
    t, u = nx.tensor(a), nx.from_numpy(a)
    a[0] = 100
    assert t.tolist() == [0, 1, 2] and u.tolist() == [0, 1, 2]
