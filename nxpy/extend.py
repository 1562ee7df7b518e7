"""Extending nxpy: new ops, per-backend implementations, and per-compiler rules.

An op is described once (its shape/type rule) and implemented per backend or compiler:

* :func:`register_op` adds an op: the front-end function with its shape/type rule, and
  optionally ``evaluate``, a portable implementation on NumPy arrays used by any backend
  (and the Evaluator) that has no kernel of its own.
* :func:`implement` gives one backend its own kernel for an op.
* :func:`register_lowering` (EXLA: emit StableHLO, or a ``stablehlo.custom_call`` via
  ``ctx.custom_call``), :func:`register_eval_rule` (the Evaluator, for ops that are not
  one backend call), :func:`register_spmd_rule` (the Evaluator inside ``shard_map``),
  :func:`register_sharding_rule` (sharding propagation in ``shard_jit``) add or override
  how a compiler treats an op. nxpy's own collectives are registered with these same
  rule registries.
* :func:`register_grad_rule` makes an op differentiable by ``nxpy.defn.grad``
  (:func:`non_differentiable` declares that it has no gradient).
* :func:`register_jvp_rule` gives an op its forward-mode rule for ``nxpy.defn.jvp``
  (:func:`zero_tangent` declares that its result's tangent is zero; an op with a
  gradient rule and no JVP rule is forward-differentiated by transposing its gradient
  rule).
* :func:`register_batch_rule` batches an op directly under ``nxpy.defn.vmap`` (without
  one, ``vmap`` runs the op once per example in a loop).
* :func:`lower_stablehlo` gives a compiler plugin that consumes StableHLO (IREE, ...) the
  module of a graph it was handed, lowered by nxpy's own rules; with
  ``custom_calls=False`` the module calls no XLA custom-call target (the linear-algebra
  solvers lower their portable form; an op with none is an error naming it), and with
  ``stable_sort=False`` sorts that need no stable ``stablehlo.sort``.
* :class:`Deferred` (``nxpy.tensor.Deferred``) is tensor data made on first use: a
  compiler plugin's results may keep its device buffer in one (copied to the host only
  when read) and take it back as it is when the tensor is passed to its next program
  (the IREE plugin does).

This module is a facade over the layers that own each registry (the op table in
:mod:`nxpy.ops.core`, the rule tables of the compilers and of sharding propagation), so
a plugin needs one import.

>>> import numpy as np, nxpy as nx
>>> from nxpy.extend import register_op, register_lowering
>>> softplus = register_op("doc_softplus", lambda x: (x.shape, nx.types.to_floating(x.type)),
...                        evaluate=lambda out, x: np.log1p(np.exp(x.to_numpy())))
>>> @register_lowering("doc_softplus")
... def _(ctx, e, x):
...     x = ctx.convert(x, e.type)
...     one_plus = ctx.op("stablehlo.exponential", [x], (e.shape, e.type))
...     return ctx.op("stablehlo.log_plus_one", [one_plus], (e.shape, e.type))
>>> [round(v, 4) for v in softplus(nx.tensor([0.0, 1.0])).tolist()]
[0.6931, 1.3133]
>>> [round(v, 4) for v in nx.defn.jit(softplus, compiler="exla")(nx.tensor([0.0, 1.0])).tolist()]
[0.6931, 1.3133]
"""
from __future__ import annotations

from . import shape as S, types as T
from .backend import get_backend
from .compilers.evaluator import register_eval_rule
from .compilers.exla.lowering import LoweringError, lower_module, register_lowering
from .compilers.spmd import register_spmd_rule
from .defn.transforms.batch_rules import register_batch_rule
from .defn.transforms.grad_rules import non_differentiable, register_grad_rule
from .defn.transforms.jvp_rules import register_jvp_rule, zero_tangent
from .defn.sharding.specs import register_sharding_rule
from .ops.core import OPS, PRIMITIVES, RESERVED, OpSpec, dispatch, fallback, to_tensor
from .tensor import Deferred, Tensor

__all__ = ["OpSpec", "OPS", "register_op", "implement", "fallback", "register_lowering",
           "register_eval_rule", "register_spmd_rule", "register_sharding_rule",
           "register_grad_rule", "non_differentiable", "register_batch_rule", "template_of",
           "register_jvp_rule", "zero_tangent", "lower_stablehlo", "LoweringError", "Deferred"]


def template_of(result) -> Tensor:
    """An ``infer`` result — ``(shape, type)``, ``(shape, type, names)`` or a Tensor — as an
    output template."""
    if isinstance(result, Tensor):
        return Tensor(None, tuple(result.shape), result.type, result.names)
    if isinstance(result, tuple) and len(result) in (2, 3):
        shape, type_ = result[0], T.parse(result[1])
        names = tuple(result[2]) if len(result) == 3 and result[2] is not None else None
        return Tensor(None, S.dims(shape, "the shape an infer function returned"), type_, names)
    raise TypeError(f"an op's infer function must return (shape, type), (shape, type, names) "
                    f"or a template tensor, got {result!r}")


def register_op(name, infer, *, evaluate=None, replace=False):
    """Adds op ``name`` and returns its front-end function ``f(*tensors, **options)``.

    ``infer(*tensors, **options)`` validates and returns the output template. Positional
    arguments are tensors (arrays and numbers are converted); keyword arguments are static
    options, stored on the Expr node. ``evaluate(out, *tensors, **options)`` (optional)
    computes the result as a NumPy array (or a Tensor) from tensors of any backend.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"an op name must be an identifier, got {name!r}")
    builtin = name in RESERVED or name in PRIMITIVES
    if (builtin or name in OPS) and not replace:
        raise ValueError(f"op {name!r} already exists"
                         f"{' (a built-in op)' if builtin else ''}; pick another name or pass "
                         f"replace=True")
    OPS[name] = OpSpec(name, infer, evaluate, getattr(infer, "__doc__", "") or "")

    def front(*args, **options):
        tensors = [to_tensor(a, f"argument {i} of {name}") for i, a in enumerate(args)]
        out = template_of(infer(*tensors, **options))
        return dispatch(name, out, *tensors, **options)

    front.__name__ = front.__qualname__ = name
    front.__doc__ = f"The {name!r} op (registered with nxpy.extend.register_op)."
    return front


def implement(backend, op, fn):
    """Gives ``backend`` (a name, instance or Backend subclass) its own kernel for ``op``:
    ``fn(backend, out, *args, **options) -> Tensor``."""
    target = backend if isinstance(backend, type) else type(get_backend(backend))
    setattr(target, op, fn)


def lower_stablehlo(graph, *, custom_calls: bool = True, stable_sort: bool = True,
                    compiler: str | None = None, platform: str | None = None) -> str:
    """The StableHLO module (text, module ``@nxpy``, function ``main``) of ``graph``, the
    :class:`~nxpy.defn.Fn` a compiler's ``compile(graph, opts)`` receives, lowered by
    nxpy's rules (``register_lowering``) as EXLA lowers it for ``platform`` (default: the
    platform of nxpy's XLA client; it only picks the form of platform-specific custom
    calls). Parameters and results are in ``graph.params``/``graph.outputs`` order.

    ``custom_calls=False`` is for a compiler that runs StableHLO without XLA's custom-call
    targets: the module calls none. Ops whose rule has a portable form (the
    linear-algebra solvers, ``nxpy.ops.core.PORTABLE``) lower it; any other custom call
    (a host callback: ``hook``, ``print_value``, ``runtime_call``) raises
    :class:`LoweringError` (a ``NotImplementedError``) naming the op and ``compiler``.
    A compiler without ``supports(op)`` never receives those ops anyway: ``defn`` traces
    them as their portable compositions (``nxpy.defn.Compiler``).

    ``stable_sort=False`` is for a compiler whose ``stablehlo.sort`` may reorder equal
    elements (ignores ``is_stable``) or whose ``chlo.top_k`` does not order as XLA's (NaN
    first, equal values by position): nxpy then gives every sort whose equal elements
    could be told apart (several operands, or floats: ``-0.0``/``0.0``, NaNs) a comparator
    with a unique order, an iota operand breaking ties by position, and lowers ``top_k``
    as such a sort, descending, cut to ``k``. The results are the stable ones on any sort;
    the default keeps XLA's forms (no extra operand).

    >>> import nxpy as nx
    >>> from nxpy.extend import lower_stablehlo
    >>> g = nx.defn.trace(lambda x: nx.sum(x * 2), [nx.template((3,), "f32")])
    >>> print(lower_stablehlo(g, custom_calls=False).splitlines()[1].strip())
    func.func public @main(%arg0: tensor<3xf32>) -> (tensor<f32>) {
    """
    return lower_module(graph, platform=platform, custom_calls=custom_calls,
                        stable_sort=stable_sort, compiler=compiler)
