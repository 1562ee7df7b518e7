"""JAX and nxpy together: JAX functions called from nxpy programs (:func:`from_jax`), and
arrays handed across without a copy (:func:`to_jax_array`, :func:`from_jax_array`,
:func:`from_dlpack`).

``from_jax(fn)`` is a function of nxpy tensors in the containers JAX knows (tuples,
lists, dicts, namedtuples such as optax's states, registered dataclasses; ``None`` leaves
and empty states included). Called inside a traced function (``jit``, ``grad``, ``vmap``,
``shard_map``, any compiler), it lowers ``fn`` with JAX for the arguments' templates
(``jax.jit(fn).lower(...)``), reads the module with :mod:`nxpy.stablehlo` and **inlines
the graph** into the caller's trace: the transforms and compilers see ordinary nxpy ops.
The import is cached per templates (and per values of the non-tensor arguments, which are
baked in as JAX bakes in Python scalars it is not told to trace). Called on tensors
outside a trace, it runs the imported program under ``jit``.

Differentiated (``grad``, ``jvp``, ``linearize``, ``jacfwd``), the function's rules are
JAX's own: each float result is a ``custom_grad`` node whose gradient is the imported
program of ``jax.vjp`` of ``fn`` and whose tangent that of ``jax.jvp`` of ``fn``, so
``jax.custom_jvp``/``custom_vjp`` rules and ``stop_gradient`` inside ``fn`` (which a
StableHLO module no longer shows) hold as in JAX. Those programs are ``from_jax``
functions too, so higher orders are JAX's as well. Each runs once per float result leaf
(``custom_grad`` is per leaf), so differentiate functions with few results (a loss, a
layer) rather than an optimizer's update of a large pytree.

>>> import nxpy as nx
>>> from nxpy.interop import from_jax
>>> import jax, jax.numpy as jnp
>>> softplus = from_jax(lambda x: jnp.logaddexp(x, 0.0))
>>> [round(v, 4) for v in softplus(nx.tensor([0.0, 1.0])).tolist()]
[0.6931, 1.3133]
>>> from nxpy.defn import grad
>>> [round(v, 4) for v in grad(lambda x: nx.sum(softplus(x)))(nx.tensor([0.0, 1.0])).tolist()]
[0.5, 0.7311]
>>> relu = from_jax(jax.nn.relu)
>>> nx.defn.jvp(relu, (nx.tensor([0.0, 1.0]),), (nx.tensor([1.0, 1.0]),))[1].tolist()
[0.0, 1.0]
"""
from __future__ import annotations

import functools

import numpy as np

from . import pjrt
from . import types as T
from .backend import get_backend
from ._context import grad_depth, tracing
from .compilers.exla import to_mlir
from .defn import custom_grad, grad, jit
from .defn import jvp as nx_jvp, vmap as nx_vmap
from .defn.transforms.grad_rules import zeros
from .ops import multiply, sum as _sum, template, to_tensor
from .ops.core import from_jax_array as from_jax_array_leaf
from .stablehlo import UnsupportedOpError, load, parse
from .tensor import Tensor

__all__ = ["from_jax", "FromJax", "to_jax", "from_jax_array", "to_jax_array", "from_dlpack"]


def _dynamic(leaf) -> bool:
    """Whether an argument leaf is traced (a tensor or an array) rather than baked in."""
    return isinstance(leaf, (Tensor, np.ndarray, np.generic)) or hasattr(leaf, "__jax_array__") \
        or type(leaf).__module__.startswith("jax")


class _Import:
    """One import of the function: the program, its results' JAX treedef, the program
    under ``jit`` (for eager calls), what lowered it, and its derivatives (``from_jax``
    functions of JAX's ``vjp`` and ``jvp`` of it, made when first differentiated)."""

    def __init__(self, program, out_tree, compiled, lowering):
        self.program, self.out_tree, self.compiled = program, out_tree, compiled
        self.lowering, self.derivatives = lowering, None


class FromJax:
    """A JAX function as an nxpy function (:func:`from_jax`). ``order`` counts how many
    derivatives of the user's function this one is (its ``vjp``/``jvp`` are ``order + 1``):
    under ``d`` nested differentiations only orders below ``d`` need rules of their own,
    which bounds the tower of derivatives each differentiated call makes."""

    def __init__(self, fn, compiler=None, order=0, name=None):
        if not callable(fn):
            raise TypeError(f"from_jax: expected fn to be a callable (a JAX function), got "
                            f"{fn!r}")
        self.fn, self.compiler, self.order = fn, compiler, order
        self.__name__ = name or getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self._imports = {}

    def __repr__(self):
        return f"from_jax({self.__name__})"

    def _import(self, treedef, leaves, dynamic, tensors):
        key = (treedef, tuple((t.shape, t.type) for t in tensors),
               tuple((i, repr(v)) for i, v in enumerate(leaves) if i not in dynamic))
        entry = self._imports.get(key)
        if entry is None:
            specs = [(t.shape, np.dtype(t.type.dtype)) for t in tensors]
            text, out_tree = pjrt.lower_function(self.fn, treedef, leaves, dynamic, specs)
            try:
                program = load(text)
            except UnsupportedOpError as e:
                raise UnsupportedOpError(f"from_jax({self.__name__}): {e}") from None
            entry = self._imports[key] = _Import(program, out_tree,
                                                 jit(program, compiler=self.compiler),
                                                 (treedef, leaves, dynamic, specs))
        return entry

    def _derivatives(self, entry):
        """``(vjp, jvp)`` of ``entry``'s function: JAX's ``jax.vjp`` and ``jax.jvp`` of
        ``fn`` (:func:`nxpy.pjrt.vjp_function`), themselves ``from_jax`` functions, so
        their own derivatives are JAX's too."""
        if entry.derivatives is None:
            outs = [(tuple(r.type.shape), np.dtype(r.type.nx_type.dtype))
                    for r in entry.program.func.results]
            args = (self.fn, *entry.lowering, outs)
            entry.derivatives = tuple(
                FromJax(make(*args), self.compiler, self.order + 1, f"{kind} of {self.__name__}")
                for kind, make in (("vjp", pjrt.vjp_function), ("jvp", pjrt.jvp_function)))
        return entry.derivatives

    def _differentiable(self, entry, tensors):
        """``entry``'s program, each float result a ``custom_grad`` node whose gradient is
        JAX's ``vjp`` of ``fn`` and whose tangent is JAX's ``jvp`` of ``fn``."""
        outs = entry.program(*tensors)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        float_ins = [i for i, t in enumerate(tensors) if t.type.is_inexact]
        float_outs = [j for j, o in enumerate(outs) if o.type.is_inexact]
        if not float_ins or not float_outs:
            return outs
        vjp, jvp = self._derivatives(entry)

        def grad_fun(j, g):
            cts = [g if k == j else zeros(outs[k].shape, outs[k].type) for k in float_outs]
            got = vjp(*tensors, *cts)
            return list(got)

        def tangent(j, *a):
            primals = list(tensors)
            for i, v in zip(float_ins, a):
                primals[i] = v
            return jvp(*primals, *a[len(float_ins):])[float_outs.index(j)]
        xs = [tensors[i] for i in float_ins]
        return [custom_grad(o, xs, functools.partial(grad_fun, j),
                            jvp=functools.partial(tangent, j)) if j in float_outs else o
                for j, o in enumerate(outs)]

    def __call__(self, *args, **kwargs):
        leaves, treedef = pjrt.tree_flatten((args, kwargs))
        dynamic = [i for i, leaf in enumerate(leaves) if _dynamic(leaf)]
        tensors = [to_tensor(np.asarray(leaves[i]) if not isinstance(leaves[i], Tensor)
                             else leaves[i], f"argument leaf {i}") for i in dynamic]
        entry = self._import(treedef, leaves, dynamic, tensors)
        if not tracing():
            outs = entry.compiled(*tensors)
        elif grad_depth() > self.order:
            outs = self._differentiable(entry, tensors)
        else:
            outs = entry.program(*tensors)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        return pjrt.tree_unflatten(entry.out_tree, outs)


def from_jax(fn, *, compiler=None) -> FromJax:
    """``fn``, a function of JAX arrays and pytrees, as a function of nxpy tensors (see the
    module docstring); ``compiler`` runs it when called outside a trace (default: nxpy's
    default compiler)."""
    return FromJax(fn, compiler)


# ----------------------------------------------------------------------------------------
# nxpy functions inside JAX programs
# ----------------------------------------------------------------------------------------
class _Flat:
    """An nxpy function of flat tensors returning a flat tuple, as :func:`to_jax` lowers
    it (the object :func:`nxpy.pjrt.jax_function` asks for), and its derived functions:
    ``vmap`` (nxpy's ``vmap``), ``jvp`` (nxpy's ``jvp``), ``vjp`` (nxpy's ``grad``)."""

    def __init__(self, fn, out_trees=None):
        self.fn, self.out_trees = fn, out_trees

    def lower(self, specs):
        templates = [template(shape, T.parse(dt)) for shape, dt in specs]
        text = to_mlir(self.fn, *templates)
        results = parse(text).main.results
        out_specs = [(tuple(r.type.shape), np.dtype(r.type.nx_type.dtype)) for r in results]
        return text, out_specs, self.out_trees[0] if self.out_trees else None

    def derive(self, kind, arg):
        return _Flat(getattr(self, "_" + kind)(arg))

    def _vmap(self, batched):
        axes = tuple(0 if b else None for b in batched)
        return lambda *ts: tuple(nx_vmap(self.fn, in_axes=axes)(*ts))

    def _on_floats(self, primals):
        """``(g, float positions)``: ``fn`` as a function of the float ``primals``."""
        float_ins = [i for i, p in enumerate(primals) if p.type.is_inexact]

        def g(*diff):
            full = list(primals)
            for i, v in zip(float_ins, diff):
                full[i] = v
            return tuple(self.fn(*full))
        return g, float_ins

    def _jvp(self, n):
        def tangents(*values):
            g, float_ins = self._on_floats(values[:n])
            outs, t_out = nx_jvp(g, tuple(values[i] for i in float_ins), tuple(values[n:]))
            return tuple(t for o, t in zip(outs, t_out) if o.type.is_inexact)
        return tangents

    def _vjp(self, n):
        def cotangents(*values):
            g, float_ins = self._on_floats(values[:n])
            cts = values[n:]

            def pairing(*diff):  # <outputs, cotangents>: its gradient is the VJP
                outs = [o for o in g(*diff) if o.type.is_inexact]
                terms = [_sum(multiply(o, ct)) for o, ct in zip(outs, cts)]
                return functools.reduce(lambda a, b: a + b, terms)
            got = grad(pairing, argnums=tuple(range(len(float_ins))))(
                *[values[i] for i in float_ins])
            return tuple(got) if isinstance(got, (tuple, list)) else (got,)
        return cotangents


def to_jax(fn, compiler="exla"):
    """``fn``, a function of nxpy tensors in JAX's containers, as a function of
    ``jax.Array`` pytrees that JAX can call eagerly and under ``jax.jit``, ``jax.grad``,
    ``jax.jvp`` and ``jax.vmap``: nxpy traces ``fn`` for the arguments' shapes and types
    and lowers it to StableHLO (EXLA's lowering; ``compiler`` must be ``"exla"``), and
    JAX embeds that module in its own program (``jax.export``'s ``call``), so it is
    compiled with the rest, no callback. Transformed, it runs the module of nxpy's own
    transform of ``fn``, lowered the same way (once per argument templates): ``jax.vmap``
    nxpy's ``vmap`` (a ``jax.custom_batching.custom_vmap``), ``jax.jvp`` nxpy's ``jvp``
    (a ``jax.custom_jvp``), and ``jax.grad``, which transposes that tangent, nxpy's
    ``grad`` (a ``linear_call`` whose transpose is nxpy's reverse mode). Sharded
    arguments are partitioned by XLA with the rest of the program.

    >>> import jax, jax.numpy as jnp
    >>> import nxpy as nx
    >>> f = to_jax(lambda x: nx.sum(nx.tanh(x) ** 2))
    >>> round(float(jax.jit(f)(jnp.ones(3))), 4), round(float(jax.grad(f)(jnp.ones(3))[0]), 4)
    (1.7401, 0.6397)
    >>> [round(float(v), 4) for v in jax.vmap(f)(jnp.ones((2, 3)))]
    [1.7401, 1.7401]
    """
    if not callable(fn):
        raise TypeError(f"to_jax: expected fn to be a callable (an nxpy function), got {fn!r}")
    if compiler != "exla":
        raise ValueError(f"to_jax: expected compiler to be 'exla' (JAX compiles the "
                         f"StableHLO EXLA lowers), got {compiler!r}")
    name = getattr(fn, "__name__", "fn")
    calls = {}  # (treedef, the static leaves) -> the JAX function of the traced leaves

    def call(*args, **kwargs):
        leaves, treedef = pjrt.tree_flatten((args, kwargs))
        dynamic = [i for i, leaf in enumerate(leaves) if _dynamic(leaf)]
        static = tuple((i, repr(v)) for i, v in enumerate(leaves) if i not in dynamic)
        f = calls.get((treedef, static))
        if f is None:
            # arguments that are no arrays (a Python number JAX was told is static, a
            # string) reach fn as they are, as JAX hands them to its functions
            base = [None if i in dynamic else v for i, v in enumerate(leaves)]  # no tracer
            scalars = _python_scalars(args, kwargs, leaves)
            f = calls[(treedef, static)] = pjrt.jax_function(
                lambda _: _Flat(*_traced_with(fn, name, treedef, base, dynamic, scalars)),
                f"nxpy_{name}")
        return f(*[leaves[i] for i in dynamic])
    call.__name__ = f"nxpy_{name}"
    return call


def _python_scalars(args, kwargs, leaves):
    """``{leaf position: (label, JAX's option)}`` for the arguments that are scalars JAX
    traced from Python numbers (weakly typed: what ``jax.jit`` makes of a Python int)."""
    out, i = {}, 0
    for where, a in [(p, a) for p, a in enumerate(args)] + sorted(kwargs.items()):
        n = len(pjrt.tree_flatten(a)[0])
        aval = getattr(leaves[i], "aval", None) if n == 1 else None
        if aval is not None and getattr(aval, "weak_type", False) and not aval.shape:
            out[i] = ((f"argument {where}", f"static_argnums={where}") if isinstance(where, int)
                      else (f"argument {where!r}", f"static_argnames={where!r}"))
        i += n
    return out


def _traced_with(fn, name, treedef, leaves, dynamic, scalars):
    """``(flat, out_trees)``: ``fn`` as :class:`_Flat` traces it, a function of the traced
    leaves returning a flat tuple (the others, ``leaves``, baked in), and the list it
    appends its results' treedef to. An error tracing it while a Python number came in traced
    (``scalars``) says to make that argument static, as JAX's ConcretizationTypeError
    does."""
    def flat(*ts):
        full = list(leaves)
        for i, t in zip(dynamic, ts):
            full[i] = t
        args, kwargs = pjrt.tree_unflatten(treedef, full)
        try:
            out = fn(*args, **kwargs)
        except TypeError as e:
            traced = [scalars[i] for i in dynamic if i in scalars]
            if not traced:
                raise
            labels = ", ".join(label for label, _ in traced)
            msg = (f"to_jax({name}): {e}\n{labels} of {name} came in as a traced tensor: "
                   f"jax.jit traces every argument, Python numbers too. Where {name} needs "
                   f"a Python value (a shape, an axis, a count, a Python if), make it static: "
                   f"jax.jit(..., {traced[0][1]}), or bind it with functools.partial")
            try:
                err = type(e)(msg)
            except TypeError:
                err = TypeError(msg)
            raise err from e
        outs, tree = pjrt.tree_flatten(out)
        out_trees.append(tree)
        return tuple(outs)
    out_trees = []
    return flat, out_trees


# ----------------------------------------------------------------------------------------
# Arrays both ways
# ----------------------------------------------------------------------------------------
def _one_to_jax(t: Tensor):
    if t.backend is not None and t.backend.is_expr:
        raise TypeError("to_jax_array: expected a tensor with values, got one being traced "
                        "(inside jit or grad)")
    if t.backend is get_backend("exla"):
        return t.data
    return get_backend("exla").from_numpy(t.to_numpy(), t.type, device_id=None).data


def _tree_map(f, tree, leaf, what, expected, fix):
    """``f`` on the leaves of ``tree`` that ``leaf`` picks, the others passed through;
    a tree with leaves, none of them picked (``"abc"``, ``[1, 2, 3]``), converts nothing:
    a TypeError naming ``what`` (JAX's ``device_put("abc")`` is one too)."""
    leaves, treedef = pjrt.tree_flatten(tree)
    picked = [leaf(x) for x in leaves]
    if leaves and not any(picked):
        raise TypeError(f"{what}: expected {expected} (or a pytree holding some), got "
                        f"{tree!r} ({type(tree).__name__}){fix}")
    return pjrt.tree_unflatten(treedef, [f(x) if p else x for x, p in zip(leaves, picked)])


def from_jax_array(a):
    """A ``jax.Array`` (or a pytree of them) as nxpy tensors on the EXLA backend holding
    the same device buffers, no copy: one on a single device becomes a tensor on that
    device; one with a ``NamedSharding`` a sharded tensor over an ``nx.Mesh`` of the same
    devices, axes and spec. Other leaves pass through (tensors too), but a tree with no
    ``jax.Array`` among its leaves (``[1, 2, 3]``) is a TypeError: it converts nothing.

    >>> import jax.numpy as jnp
    >>> t = from_jax_array(jnp.arange(3.0))
    >>> t.backend.name, t.tolist()
    ('exla', [0.0, 1.0, 2.0])
    """
    return _tree_map(lambda x: x if isinstance(x, Tensor) else from_jax_array_leaf(x), a,
                     lambda x: pjrt.is_jax_array(x) or isinstance(x, Tensor), "from_jax_array",
                     "a jax.Array", ": for NumPy arrays and lists use nx.tensor")


def to_jax_array(t):
    """An nxpy tensor (or a pytree of them) as ``jax.Array`` objects: an EXLA tensor's own
    device buffers (a sharded tensor's global array), no copy; a tensor of another
    backend is copied to the default device. Other leaves pass through (``jax.Array``
    objects too), but a tree with no tensor among its leaves (``"abc"``) is a TypeError:
    it converts nothing.

    >>> import nxpy as nx
    >>> a = to_jax_array(nx.tensor([1.0, 2.0], backend="exla"))
    >>> type(a).__name__, a.tolist()
    ('ArrayImpl', [1.0, 2.0])
    """
    return _tree_map(lambda x: _one_to_jax(x) if isinstance(x, Tensor) else x, t,
                     lambda x: isinstance(x, Tensor) or pjrt.is_jax_array(x), "to_jax_array",
                     "an nxpy tensor", ": for NumPy arrays and lists use jnp.asarray")


def from_dlpack(obj) -> Tensor:
    """A tensor from any object with the DLPack protocol (``__dlpack__``): a ``jax.Array``
    is taken without a copy (:func:`from_jax_array`); anything else (a NumPy array, a
    PyTorch CPU tensor) is read through ``numpy.from_dlpack`` and copied into a NumPy
    backend tensor (nxpy's host tensors never alias memory they do not own).

    >>> import numpy as np
    >>> from_dlpack(np.arange(3, dtype=np.int32)).tolist()
    [0, 1, 2]
    """
    if pjrt.is_jax_array(obj):
        return from_jax_array_leaf(obj, "obj")
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a jax.Array, a "
                        f"NumPy array, a DLPack producer), got {type(obj).__name__}")
    return to_tensor(np.array(np.from_dlpack(obj)), "obj")
