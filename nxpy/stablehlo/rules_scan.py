"""The importer reads JAX's ``lax.scan`` loops back as :func:`nxpy.defn.scan`.

JAX lowers ``scan(f, init, xs)`` (``unroll=1``) to one ``stablehlo.while`` whose state is
``(xs and other loop constants..., i, carry..., ys buffers...)``: the condition is
``i < length`` with ``i`` starting at 0, the body reads ``xs[i]`` with dynamic slices,
writes each ``y`` into its buffer with one dynamic update slice at row ``i`` (row
``length - 1 - i`` for ``reverse=True``) and returns ``i + 1``. A loop of that shape (at
least one such buffer, read nowhere else) becomes ``scan`` over ``i`` = 0..length-1 whose
step runs the loop body on the carries, which gives it scan's gradient (its residuals,
not a copy of the buffers per iteration); any other loop stays a ``while_loop`` (the rule
registered before this one). A loop constant the body only reads one row of, at row ``i``
(or ``length - 1 - i``), is JAX's ``xs``: it becomes one of the scan's ``xs`` too, so
the step never closes over it whole and its cotangent is written a row per step.

>>> import nxpy as nx
>>> import jax, jax.numpy as jnp
>>> from nxpy.stablehlo import load
>>> f = lambda c, xs: jax.lax.scan(lambda c, x: (c + x, c * x), c, xs)
>>> prog = load(jax.jit(f).lower(jnp.zeros(2), jnp.zeros((3, 2))).as_text())
>>> xs = nx.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
>>> c, ys = prog.jit("evaluator")(nx.tensor([1.0, 2.0]), xs)
>>> c.tolist(), ys.tolist()
([7.0, 8.0], [[1.0, 2.0], [4.0, 6.0], [12.0, 15.0]])
"""
from __future__ import annotations

from .. import _context
from .. import ops as nx
from ..defn.expr import Expr, trace_fn
from ..defn.transforms.scan import scan
from ..tensor import Tensor
from . import rules as R
from .rules import register_op

__all__ = ["scan_pattern"]

_base_while = R.OPS["stablehlo.while"]


def _node(v):
    return v.data if isinstance(v, Tensor) else v


def _const(v):
    """The Python value of a scalar constant argument (or None)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    e = _node(v)
    if isinstance(e, Expr) and e.op == "constant":
        return e.attrs["value"].item()
    return None


def _is(v, e):
    return _node(v) is e


def scan_pattern(c_fn, b_fn, init):
    """``(k, length, reversed_rows, consts, carries, ys, xs)`` (state positions; ``xs``:
    ``{position: "forward" or "reversed"}`` of the constants the body reads only one row
    of, at row ``i`` or ``length - 1 - i``) when the loop is JAX's scan (see the module's
    description), else None."""
    pred = c_fn.outputs[0].data
    if pred.op != "less" or len(pred.args) != 2:
        return None
    a, b = pred.args
    params = {p.data.id: i for i, p in enumerate(c_fn.params)}
    if not isinstance(_node(a), Expr) or _node(a).id not in params or _const(b) is None:
        return None
    k, n = params[_node(a).id], _const(b)
    if _const(init[k]) != 0 or not isinstance(n, int) or n < 1 or init[k].shape != ():
        return None
    counter = b_fn.params[k].data
    step = b_fn.outputs[k].data
    if step.op != "add" or not any(_is(x, counter) for x in step.args) or \
            1 not in [_const(x) for x in step.args]:
        return None
    consts, carries, ys, rows = [], [], [], set()
    for j, (p, o) in enumerate(zip(b_fn.params, b_fn.outputs)):
        if j == k:
            continue
        p, o = p.data, o.data
        if o is p:
            consts.append(j)
            continue
        row = _row_written(o, p, counter, n)
        if row is not None and _only_use(b_fn, p, o):
            ys.append(j)
            rows.add(row)
        else:
            carries.append(j)
    if not ys or len(rows) != 1:
        return None
    xs = {}
    for j in consts:
        kind = _rows_read(b_fn, b_fn.params[j].data, counter, n)
        if kind is not None:
            xs[j] = kind
    return k, n, rows.pop() == "reversed", consts, carries, ys, xs


def _row_at(i, counter, n):
    """"forward" when index ``i`` is the counter, "reversed" for JAX's ``(n - i) - 1``."""
    i = _node(i)
    if i is counter:
        return "forward"
    if isinstance(i, Expr) and i.op == "subtract" and _const(i.args[1]) == 1:
        j = _node(i.args[0])
        if isinstance(j, Expr) and j.op == "subtract" and _const(j.args[0]) == n \
                and _is(j.args[1], counter):
            return "reversed"
    return None


def _rows_read(fn, p, counter, n):
    """"forward" / "reversed" when every use of constant ``p`` (of ``n`` rows) in ``fn``
    is a one-row ``dynamic_slice`` at row ``i`` / ``n - 1 - i``, else None."""
    if p.shape[:1] != (n,):
        return None
    kinds = set()
    for e in fn.nodes:
        if any(c.id == p.id for f in e.fns for c in f.captures):
            return None
        args = e.tensor_args()
        if not any(a.id == p.id for a in args):
            continue
        if e.op != "dynamic_slice" or not _is(e.args[0], p) or \
                tuple(e.attrs["lengths"]) != (1,) + tuple(p.shape[1:]) or \
                any(s != 1 for s in e.attrs["strides"]):
            return None
        starts = e.args[1]
        if any(_const(s) != 0 for s in starts[1:]) or any(_is(s, p) for s in starts):
            return None
        kinds.add(_row_at(starts[0], counter, n))
    return kinds.pop() if len(kinds) == 1 and None not in kinds else None


def _row_written(o, p, counter, n):
    """"forward" when ``o`` is ``put_slice(p, [i, 0, ...], update)`` with a one-row
    update of a buffer of ``n`` rows, "reversed" for row ``n - 1 - i``; else None."""
    if o.op != "put_slice" or not _is(o.args[0], p) or o.shape[:1] != (n,):
        return None
    starts, update = o.args[1], o.args[2]
    if not isinstance(starts, (list, tuple)) or any(_const(s) != 0 for s in starts[1:]) \
            or update.shape[:1] != (1,):
        return None
    return _row_at(starts[0], counter, n)


def _only_use(fn, p, o):
    """Buffer ``p`` is read only by its update ``o`` (no other node, no sub-function)."""
    for e in fn.nodes:
        if e is o:
            continue
        if any(a.id == p.id for a in e.tensor_args()) or \
                any(c.id == p.id for f in e.fns for c in f.captures):
            return False
    return True


@register_op("stablehlo.while")
def _while(scope, op, *init):
    c_reg, b_reg = op.regions
    if not _context.tracing():
        return _base_while(scope, op, *init)
    templates = [(t.shape, t.type, t.names) for t in init]
    parent = _context.current()
    c_fn = trace_fn(lambda *s: scope.run_region(c_reg, list(s))[0], templates, parent=parent)
    b_fn = trace_fn(lambda *s: tuple(scope.run_region(b_reg, list(s))), templates,
                    parent=parent)
    found = scan_pattern(c_fn, b_fn, init)
    if found is None:
        return _base_while(scope, op, *init)
    k, n, rev, consts, carries, ys, xs = found
    sliced = sorted(xs)

    def step(carry, x):
        i, rows = x
        state = list(init)
        state[k] = i
        for j, c in zip(carries, carry):
            state[j] = c
        for j, r in zip(sliced, rows):  # the row the body reads, not the whole constant
            state[j] = R.CounterRow(r)
        outs = scope.run_region(b_reg, state)
        ys_out = []
        for j in ys:
            update = outs[j].data.args[2]
            ys_out.append(nx.reshape(update, update.shape[1:]))
        return tuple(outs[j] for j in carries), tuple(ys_out)

    rows = tuple(nx.reverse(init[j], axes=[0]) if xs[j] == "reversed" else init[j]
                 for j in sliced)
    carry, stacked = scan(step, tuple(init[j] for j in carries),
                          (nx.iota((n,), type=init[k].type), rows))
    out = list(init)
    out[k] = nx.full((), n, type=init[k].type)
    for j, c in zip(carries, carry):
        out[j] = c
    for j, y in zip(ys, stacked):
        out[j] = nx.reverse(y, axes=[0]) if rev else y
    return out
