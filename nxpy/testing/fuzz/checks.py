"""The transforms' checks on fuzzed programs: :func:`check_vmap` (the program on a batch
of examples, against the examples run alone and ``jax.vmap`` of the twin) and
:func:`check_jvp` (forward mode along random tangents, against ``jax.jvp`` of the twin or
nxpy's own ``grad``). ``docs/fuzzing.md`` states what they compare."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

import nxpy as nx
from ... import pjrt, types as T
from ...defn import grad, jit, jvp, vmap
from .compare import _leaf_tensor, _leaves, _values_match, tolerances
from .generator import _value_rules_hold
from .program import Leaf, Mismatch, Program, Step, _numpy_backend
from .twins import OPS

__all__ = ["VMAP_SIZE", "VmapSpec", "vmap_spec", "check_vmap", "check_jvp"]


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
                shown = "as above" if leaf == prog.nodes[i] else leaf
                lines.append(f"    n{i} example {k}: {shown}")
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


def _rules_hold(prog: Program, leaves) -> bool:
    """Whether the inputs ``leaves`` (one Leaf per input) keep the rules that look at
    values (:func:`~nxpy.testing.fuzz.generator._value_rules_hold`), node by node on the
    NumPy backend."""
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
    except Exception:  # an example the program cannot take is not drawn
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
    uses = {(n.op, k) for n in prog.nodes if isinstance(n, Step)
            for k, a in enumerate(n.args) if a == node}
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
    from its domain (an example whose values break a rule of ``docs/fuzzing.md`` is
    drawn again, then given up for the program's own inputs)."""
    rng = np.random.default_rng([prog.seed, prog.index, 2])
    leaves = prog.leaves()
    ids = [i for i, n in enumerate(prog.nodes) if isinstance(n, Leaf)]
    in_axes = [None if rng.random() < 0.3 else _axis_choice(rng, len(leaf.shape))
               for leaf in leaves]
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
    tols = tolerances(prog)
    per_example = []
    with _numpy_backend(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(VMAP_SIZE):
            try:
                per_example.append(_leaves(fn(*[_leaf_tensor(exs[k]) for exs in spec.examples])))
            except Exception as err:
                _fail_vmap(prog, spec, f"the NumPy backend failed on example {k}: "
                                       f"{type(err).__name__}: {err}")
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
            except Exception as err:  # reported as a mismatch
                _fail_vmap(prog, spec, f"vmap/{compiler} failed: {type(err).__name__}: {err}")
            if len(got) != len(want):
                _fail_vmap(prog, spec, f"vmap/{compiler}: {len(got)} results, expected {len(want)}")
            for k, (t, (w, wt, wn)) in enumerate(zip(got, want)):
                g = np.asarray(t.to_numpy()).reshape(t.shape)
                where = (f"vmap/{compiler} result {k} vs the examples run alone "
                         f"(NumPy backend), stacked")
                if str(t.type) != wt or g.shape != w.shape:
                    _fail_vmap(prog, spec, f"{where}: {t.type}{list(g.shape)}, "
                                           f"expected {wt}{list(w.shape)}")
                if tuple(t.names) != wn:
                    _fail_vmap(prog, spec, f"{where}: names {list(t.names)}, expected {list(wn)}")
                d = _values_match(w, g, tols[k])
                if d:
                    _fail_vmap(prog, spec, f"{where}: {d}")
    if not with_jax or not _jax_vmap_ok(prog):
        return
    jax = pjrt.oracle()
    try:
        with warnings.catch_warnings(), jax.enable_x64(True):
            warnings.simplefilter("ignore")
            f = jax.jit(jax.vmap(prog.jax_function(jax), in_axes=spec.in_axes,
                                 out_axes=spec.vmap_out_axes()))
            got = [np.asarray(x) for x in jax.tree_util.tree_leaves(f(*arrays))]
    except Exception as err:
        _fail_vmap(prog, spec, f"jax.vmap of the JAX twin failed: {type(err).__name__}: {err}")
    if len(got) != len(want):
        _fail_vmap(prog, spec, f"jax.vmap gave {len(got)} results, expected {len(want)}")
    for k, (g, (w, _, _)) in enumerate(zip(got, want)):
        g = g.astype(w.dtype) if not prog.grad else g
        d = _values_match(g, w, tols[k])
        if d:
            _fail_vmap(prog, spec, f"result {k}: the examples run alone (NumPy backend), "
                                   f"stacked, vs jax.vmap: {d}")


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

    >>> from nxpy.testing.fuzz import generate
    >>> check_jvp(generate(0, 1))   # when nxpy's jvp agrees with JAX's
    'jax'
    """
    if not isinstance(prog, Program):  # a sharded program
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
    except Exception:  # JAX cannot differentiate it: against grad
        return _check_jvp_by_grad(prog, fn, args, targs, rng)
    tols = tolerances(prog)
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
            rtol, atol = tols[k % max(half, 1)]
            d = _values_match(w, g, (rtol * scale, atol * scale))
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
            return None  # a known limit of forward mode (nxpy/defn/transforms/jvp_rules.py)
        _fail_jvp(prog, f"{compiler} failed: {type(err).__name__}: {err}")
    except Exception as err:  # reported as a mismatch
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
        except Exception:  # reverse mode cannot run it either
            return "skipped"
        lhs = sum(float(np.sum(np.asarray(got[half + k].to_numpy(), np.float64) * w))
                  for k, w in zip(outs, ws))
        rhs = sum(float(np.sum(np.asarray(g.to_numpy(), np.float64)
                               * np.asarray(targs[i].to_numpy(), np.float64)))
                  for g, i in zip(gs, live))
        rtol, atol = max(tolerances(prog)[k] for k in outs)
        scale = max(1.0, abs(lhs), abs(rhs))
        if not (np.isfinite(lhs) and np.isfinite(rhs)) or \
                abs(lhs - rhs) > 100 * (rtol * scale + atol):
            if np.isnan(lhs) and np.isnan(rhs):
                continue
            _fail_jvp(prog, f"{compiler}: <w, J t> = {lhs!r} by jvp but {rhs!r} by grad "
                            f"(<grad <w, f>, t>)")
    return "grad"


