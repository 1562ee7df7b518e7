"""``custom_jvp``: JAX's way of giving a function its own forward-mode rule, which reverse
mode uses too.

``custom_jvp(f)`` is ``f`` until differentiated. Then each floating-point output leaf
becomes a ``custom_grad`` node (the marker of :mod:`nxpy.defn.transforms.grad`) that carries two
functions traced from the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``:

* **forward mode** (:func:`nxpy.defn.jvp`) calls the rule's tangent for that leaf;
* **reverse mode** (:func:`nxpy.defn.grad`) uses the transpose of the rule's tangent map
  ``t -> tangent_out(primals, t)``, which is linear in ``t``: the cotangent of the inputs
  for a cotangent ``g`` of the leaf is the gradient, with respect to ``t``, of
  ``sum(tangent_out(primals, t) * g)`` (taken at ``t = 0``: the map is linear, so any
  point gives the same). JAX derives the VJP the same way (linearize, then transpose);
  nxpy transposes with its own reverse mode, so the rule's tangent must be built from
  differentiable ops (any op a gradient exists for), and linear in the tangents, as
  JAX requires.

The primal output is ``f``'s (JAX takes the rule's: they agree for a correct rule).
Inside its own rule the function is its plain primal (so a rule may call it for
``primal_out``, as JAX rules do); a second derivative of the rule's tangent therefore
differentiates those calls as ordinary code. ``vmap`` batches both functions.

>>> import nxpy as nx
>>> from nxpy.defn import custom_jvp, grad, jvp
>>> @custom_jvp
... def log1pexp(x):
...     return nx.log(1.0 + nx.exp(x))
>>> @log1pexp.defjvp
... def log1pexp_jvp(primals, tangents):
...     (x,), (t,) = primals, tangents
...     return log1pexp(x), t * (1.0 - 1.0 / (1.0 + nx.exp(x)))
>>> grad(lambda x: log1pexp(x))(nx.tensor(100.0)).tolist()    # stable, where f's own is NaN
1.0
>>> jvp(log1pexp, (nx.tensor(100.0),), (nx.tensor(2.0),))[1].tolist()
2.0
"""
from __future__ import annotations

import functools
import inspect

from ... import _context
from ... import ops as O
from .. import tree as tree_mod
from ..expr import EXPR
from .grad import custom_grad, grad
from .grad_rules import zeros

__all__ = ["custom_jvp"]


class custom_jvp:
    """A function with a custom forward-mode rule, as ``jax.custom_jvp``: decorate ``f``,
    then give the rule with :meth:`defjvp` (or one rule per argument with
    :meth:`defjvps`). ``nondiff_argnums`` names positional arguments that are not
    differentiated (any Python value); the rule receives them first.

    >>> import nxpy as nx
    >>> from nxpy.defn import custom_jvp, jvp
    >>> from functools import partial
    >>> @partial(custom_jvp, nondiff_argnums=(0,))
    ... def scale(k, x):
    ...     return x * k
    >>> @scale.defjvp
    ... def _(k, primals, tangents):
    ...     return scale(k, primals[0]), tangents[0] * k * 10
    >>> jvp(lambda x: scale(2.0, x), (nx.tensor(3.0),), (nx.tensor(1.0),))[1].tolist()
    20.0
    """

    def __init__(self, fun, nondiff_argnums=()):
        if not callable(fun):
            raise TypeError(f"custom_jvp: expected a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        try:
            self.nondiff_argnums = tuple(int(i) for i in nondiff_argnums)
        except TypeError:
            raise TypeError(f"custom_jvp: expected nondiff_argnums to be a tuple of integers, "
                            f"got {nondiff_argnums!r}") from None
        self.jvp = None
        self._in_rule = 0  # calls of the function inside its own rule are its primal

    def __get__(self, obj, objtype=None):  # a method: bind as functions do
        return self if obj is None else functools.partial(self, obj)

    def defjvp(self, jvp, symbolic_zeros=False):
        """Sets the rule ``jvp(*nondiff_args, primals, tangents) -> (primal_out,
        tangent_out)`` (``primals``/``tangents``: tuples of the other arguments; a zero
        tangent is given as zeros, ``symbolic_zeros`` is accepted for JAX's signature).
        Returns ``jvp``, so it can be used as a decorator."""
        if not callable(jvp):
            raise TypeError(f"custom_jvp.defjvp: expected a function, got "
                            f"{type(jvp).__name__}")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps):
        """One rule per differentiable argument: ``jvps[i](t_i, primal_out, *primals)``
        gives argument ``i``'s share of the output tangent (``None``: the output does not
        depend on it); the shares add up."""
        if self.nondiff_argnums:
            raise TypeError("custom_jvp.defjvps: not supported with nondiff_argnums "
                            "(as in JAX); use defjvp")

        def rule(primals, tangents):
            out = self.fun(*primals)
            if len(jvps) != len(primals):
                raise TypeError(f"custom_jvp.defjvps: expected one rule per argument "
                                f"({len(primals)}), got {len(jvps)}")
            total = None
            for j, t in zip(jvps, tangents):
                if j is None:
                    continue
                part = j(t, out, *primals)
                total = part if total is None else tree_mod.unflatten(
                    tree_mod.flatten(total)[1],
                    [a + b for a, b in zip(tree_mod.flatten(total)[0],
                                           tree_mod.flatten(part)[0])])
            if total is None:
                total = tree_mod.unflatten(tree_mod.flatten(out)[1],
                                           [zeros(o.shape, o.type)
                                            for o in tree_mod.flatten(out)[0]])
            return out, total
        self.jvp = rule

    def _bind(self, args, kwargs):
        if not kwargs:
            return tuple(args)
        try:
            bound = inspect.signature(self.fun).bind(*args, **kwargs)
        except (TypeError, ValueError) as err:
            raise TypeError(f"custom_jvp: cannot bind the arguments of "
                            f"{getattr(self.fun, '__name__', 'the function')}: {err}") from None
        bound.apply_defaults()
        return tuple(bound.args)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "function")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using "
                                 f"defjvp.")
        args = self._bind(args, kwargs)
        if _context.grad_depth() == 0 or self._in_rule:
            return self.fun(*args)
        nd = [i % len(args) for i in self.nondiff_argnums] if args else []
        for i in self.nondiff_argnums:
            if not -len(args) <= i < len(args):
                raise ValueError(f"custom_jvp: nondiff_argnums {self.nondiff_argnums} out of "
                                 f"range for {len(args)} positional argument(s)")
        diff = [i for i in range(len(args)) if i not in nd]
        leaves, tree = tree_mod.flatten(tuple(args[i] for i in diff))
        leaves = [EXPR.lift(O.to_tensor(x, f"argument leaf {i}")) for i, x in enumerate(leaves)]
        full = list(args)
        for i, v in zip(diff, tree_mod.unflatten(tree, leaves)):
            full[i] = v
        out = self.fun(*full)
        out_leaves, out_tree = tree_mod.flatten(out)
        out_leaves = [O.to_tensor(o, f"output leaf {j}") for j, o in enumerate(out_leaves)]
        flo = [i for i, x in enumerate(leaves) if x.type.is_inexact]
        if not flo:
            return out
        nondiff = [args[i] for i in nd]

        def tangent_out(prim, tans):
            primals = tuple(tree_mod.unflatten(tree, prim))
            tangents = tuple(tree_mod.unflatten(tree, tans))
            self._in_rule += 1
            try:
                res = self.jvp(*nondiff, primals, tangents)
            finally:
                self._in_rule -= 1
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise TypeError(f"custom_jvp: the rule of {name} must return a pair "
                                f"(primal_out, tangent_out), got {type(res).__name__}")
            t_leaves, t_tree = tree_mod.flatten(res[1])
            if len(t_leaves) != len(out_leaves):
                raise ValueError(f"custom_jvp: the rule of {name} returned a tangent with "
                                 f"{len(t_leaves)} leaves, the function's output has "
                                 f"{len(out_leaves)}")
            return [O.to_tensor(t) if t is not None else zeros(o.shape, o.type)
                    for t, o in zip(t_leaves, out_leaves)]

        def split(a):
            nf = len(flo)
            prim, tans = list(leaves), [zeros(x.shape, x.type) for x in leaves]
            for i, p, t in zip(flo, a[:nf], a[nf:]):
                prim[i], tans[i] = p, t
            return prim, tans

        def leaf_jvp(j, *a):
            return tangent_out(*split(a))[j]

        def leaf_vjp(j, g):
            def pairing(ts):
                t = leaf_jvp(j, *[leaves[i] for i in flo], *ts)
                return O.sum(O.as_type(t, g.type) * g)
            return list(grad(pairing)([zeros(leaves[i].shape, leaves[i].type) for i in flo]))

        wrapped = []
        for j, o in enumerate(out_leaves):
            if not o.type.is_inexact:
                wrapped.append(o)
                continue
            wrapped.append(custom_grad(o, [leaves[i] for i in flo],
                                       functools.partial(leaf_vjp, j),
                                       jvp=functools.partial(leaf_jvp, j)))
        return tree_mod.unflatten(out_tree, wrapped)
