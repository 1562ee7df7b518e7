"""The program generator: :func:`generate` draws program ``index`` of the stream ``seed``
(deterministic), op family by op family, writing the rules for ill-conditioned cases
(``docs/fuzzing.md``) into the program as it draws it."""
from __future__ import annotations

import math
import warnings

import numpy as np

import nxpy as nx
from ... import types as T
from ...ops.core import kind_ok
from ...ops.elementwise import BINARY, UNARY
from ...ops.reductions import REDUCTIONS
from ..records import DOMAINS
from .program import NAMES, TYPES, Leaf, Program, Step, _numpy_backend
from .twins import (COMPLEX_UNARY, DISCONTINUOUS, DRAWS, EXACT, EXACT_ARITH, EXACT_TRANSFORMS,
                    OPS, REDUCE_FNS, TRANSFORMS)


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
        if "special" not in kw and T.parse(type).is_float:  # complex: docs/fuzzing.md
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
            return None  # e.g. complex arithmetic on infinities: docs/fuzzing.md
        self.nodes.append(step)
        self.vals.append(v)
        exact = all(self.exact[a] for a in args) and (
            op in EXACT or (op in EXACT_ARITH and v.type in (T.F32, T.F64))
            or (op == "abs" and not self.t(args[0]).is_complex)
            or (op in ("cond", "while")
                and {kw.get("then"), kw.get("other"), kw.get("body")} - {None}
                <= EXACT_TRANSFORMS))
        self.exact.append(exact or not v.type.is_inexact)
        return len(self.nodes) - 1

    def exact_ok(self, op, i):
        return op not in DISCONTINUOUS or self.exact[i] or not self.t(i).is_inexact

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
               and (not t.is_complex or n in COMPLEX_UNARY) and self.exact_ok(n, i)]
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
                 and (self.vals[j].shape == s
                      or self.vals[j].shape == s[len(s) - self.vals[j].rank:])]
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
            int(a) for a in self.rng.choice(x.rank, int(self.rng.integers(1, x.rank + 1)),
                                            replace=False))
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
            return self.step(op, [i],
                             shape=lead + tuple(self.pick([1, 3]) if d == 1 else d for d in s))
        if op == "squeeze":
            return self.step(op, [i])
        if op == "new_axis":
            return self.step(op, [i], axis=int(self.rng.integers(-r - 1, r + 1)))
        if op == "pad":
            cfg = [[int(self.rng.integers(-1, 3)), int(self.rng.integers(-1, 3)),
                    int(self.rng.integers(0, 2))]
                   for _ in s]
            return self.step(op, [i], config=cfg)
        if op == "reverse":
            return self.step(op, [i], axes=sorted(
                int(a) for a in self.rng.choice(r, int(self.rng.integers(0, r + 1)),
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
            p = self.leaf(s[int(self.rng.integers(0, r + 1)):],
                          self.pick(["pred", "pred", "s8", "f32"]))
            j = self.operand_like(i, "any")
            return self.step(op, [p, i, j])
        return self.clip(i, -2, 2.5)

    def _refactor(self, s):
        n = int(np.prod(s, dtype=np.int64))
        if n == 0:
            return tuple(self.pick([0, 2]) if k == 0 else 3
                         for k in range(int(self.rng.integers(1, 3))))
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
        ok = [n for n in TRANSFORMS if not (t.is_pred and n in ("negate", "double"))
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
        op = self.pick(["take", "gather", "dynamic_slice", "put_slice", "indexed_add",
                        "indexed_put"])
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
            u = self.leaf(tuple(int(self.rng.integers(0, n + 1)) for n in s),
                          self.pick([str(x.type)] + TYPES))
            return self.step(op, [i, u], starts=[int(self.rng.integers(0, n + 2)) for n in s])
        if 0 in s:
            return None
        n = int(self.rng.integers(1, 5))
        flat = self.rng.choice(int(np.prod(s)), min(n, int(np.prod(s))),
                               replace=op == "indexed_add")
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
            return self.step(op, [i], axis=axis, desc=self.chance(0.5),
                             type=self.pick(["s32", "s64", "u32"]))
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
            fn = self.pick(list(REDUCE_FNS))
            acc = self.pick({"add": [0, 1, -2], "multiply": [1, 2, -1], "max": [-4, 0, 1],
                             "min": [4, 0, -1]}[fn])
            acc = abs(acc) if t.kind == "u" else acc
            return self.step(op, [i], fn=fn, acc=acc, window=window, strides=strides,
                             padding=padding, dilations=dil)
        if not scatter:
            return self.step(op, [i], window=window, strides=strides, padding=padding,
                             dilations=dil)
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

    def drawn(self, i):
        """An op that draws its own arguments (twins.py's ``DRAWS``)."""
        return DRAWS[self.pick(sorted(DRAWS))](self, i)

    def conv(self):
        nsp = int(self.rng.integers(1, 3))
        g = int(self.pick([1, 1, 2]))
        cin, cout = int(self.rng.integers(1, 3)), g * int(self.rng.integers(1, 3))
        t = self.pick(["f32", "f32", "f64", "f16", "s32"])
        x = self.leaf((int(self.rng.integers(1, 3)), cin * g)
                      + tuple(int(self.rng.integers(2, 6)) for _ in range(nsp)),
                      t, special=False)
        k = self.leaf((cout, cin) + tuple(int(self.rng.integers(1, 3)) for _ in range(nsp)), t,
                      special=False)
        return self.step("conv", [x, k], strides=[int(self.rng.integers(1, 3)) for _ in range(nsp)],
                         padding=[[int(self.rng.integers(0, 2)), int(self.rng.integers(0, 2))]
                                  for _ in range(nsp)],
                         input_dilation=[int(self.rng.integers(1, 3)) for _ in range(nsp)],
                         kernel_dilation=[int(self.rng.integers(1, 3)) for _ in range(nsp)],
                         groups=g)


def _value_rules_hold(n: Step, args, v) -> bool:
    """The rules (docs/fuzzing.md) that look at values, not only at types and the
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
    twin holds exactly in f64 (twins.py's _window_scatter); with the source's type, no 64-bit
    operand holding the value nxpy pads it with, when padded (ties: docs/fuzzing.md)."""
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
             "control", "indexing", "sorting", "windows", "drawn", "drawn"]
_SMOOTH = ["sin", "cos", "tanh", "exp", "log", "sqrt", "sigmoid", "negate", "atan", "erf"]


def _input(g: _Gen, float_only=False):
    t = g.pick(["f32", "f64"] if float_only else TYPES + ["f32", "s32"])
    s = g.shape()
    return g.leaf(s, t, g.names_for(s), grid=not float_only,
                  special=False if float_only else None) \
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
            j = g.leaf(x.shape, str(x.type), x.names if any(x.names) else None, lo=-2, hi=2,
                       grid=False, special=False)
            if op == "divide":
                j = g.clip(g.step("abs", [j]) or j, 0.5, 2)
            r = g.step(op, [i, j])
        elif kind == "reduce":
            r = g.step(g.pick(["sum", "product", "reduce_max"]), [i],
                       axes=[0] if x.rank else None, keep=False)
        elif kind == "shape":
            r = g.shaping(i) if g.chance(0.5) else (g.step("transpose", [i],
                                                             axes=list(range(x.rank))[::-1]))
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
            # drop the nodes the output does not use (an unused input would have a zero
            # gradient anyway)
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

