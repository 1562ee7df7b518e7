"""``custom_vjp``: JAX's spelling of a function with its own reverse-mode rule.

``custom_vjp(f)`` is ``f``, until differentiated: then ``fwd(*args)`` gives the output
and residuals, and ``bwd(residuals, cotangent)`` (after the ``nondiff_argnums``
arguments, as in JAX) gives one cotangent per differentiable argument (a container like
the argument, or ``None`` for zero). It is built on Nx's ``custom_grad`` marker (which
stays as Nx's spelling): each floating-point output leaf becomes a ``custom_grad`` node
whose gradient function calls ``bwd`` with that leaf's cotangent (zeros for the other
leaves; ``bwd`` is linear in its cotangent, so the cotangents of all leaves add up to
``bwd`` of the whole cotangent). ``vmap``, ``jit`` and every compiler see what they see
of ``custom_grad``.

>>> import nxpy as nx
>>> from nxpy.defn import custom_vjp, grad
>>> @custom_vjp
... def clip_gradient(x):
...     return x
>>> def fwd(x):
...     return x, None
>>> def bwd(res, g):
...     return (nx.clip(g, -1.0, 1.0),)
>>> clip_gradient.defvjp(fwd, bwd)
>>> grad(lambda x: nx.sum(clip_gradient(x) * 5.0))(nx.tensor([1.0, 2.0])).tolist()
[1.0, 1.0]
"""
from __future__ import annotations

import functools
import inspect

from ... import _context
from ... import ops as O
from .. import tree as tree_mod
from ..expr import EXPR
from .grad import custom_grad
from .grad_rules import zeros

__all__ = ["custom_vjp"]


class custom_vjp:
    """A function with a custom reverse-mode rule, as ``jax.custom_vjp``: decorate ``f``,
    then give the rule with :meth:`defvjp`. ``nondiff_argnums`` names positional
    arguments that are not differentiated (any Python value: functions, shapes, flags);
    ``bwd`` receives them first.

    >>> import nxpy as nx
    >>> from nxpy.defn import custom_vjp, grad, jit
    >>> from functools import partial
    >>> @partial(custom_vjp, nondiff_argnums=(0,))
    ... def scaled(k, x):
    ...     return x * k
    >>> scaled.defvjp(lambda k, x: (x * k, None), lambda k, res, g: (g * k * 10,))
    >>> jit(grad(lambda x: scaled(2.0, x)))(nx.tensor(3.0)).tolist()
    20.0
    >>> scaled(2.0, nx.tensor(3.0)).tolist()   # undifferentiated: f itself
    6.0
    """

    def __init__(self, fun, nondiff_argnums=()):
        if not callable(fun):
            raise TypeError(f"custom_vjp: expected a function, got {type(fun).__name__}")
        try:
            nums = tuple(int(n) for n in nondiff_argnums)
        except TypeError:
            raise TypeError(f"custom_vjp: nondiff_argnums must be a tuple of integers, got "
                            f"{nondiff_argnums!r}") from None
        functools.update_wrapper(self, fun)
        self.fun, self.nondiff_argnums = fun, nums
        self.fwd = self.bwd = None
        self._in_fwd = 0  # fwd may call the function itself (as JAX's examples do): f

    def defvjp(self, fwd, bwd):
        """Sets the rule: ``fwd(*args) -> (out, residuals)`` and
        ``bwd(*nondiff_args, residuals, cotangent) -> tuple`` of one cotangent per
        differentiable argument (``None`` for zero)."""
        if not callable(fwd) or not callable(bwd):
            raise TypeError("custom_vjp.defvjp: fwd and bwd must be functions")
        self.fwd, self.bwd = fwd, bwd

    def _positional(self, args, kwargs):
        if not kwargs:
            return args
        try:
            bound = inspect.signature(self.fun).bind(*args, **kwargs)
        except (TypeError, ValueError) as err:
            raise TypeError(f"custom_vjp: cannot pass the keyword arguments "
                            f"{sorted(kwargs)} positionally: {err}") from None
        bound.apply_defaults()
        if bound.kwargs:
            raise TypeError(f"custom_vjp: keyword-only arguments {sorted(bound.kwargs)} are "
                            f"not supported; pass them positionally")
        return bound.args

    def __get__(self, obj, objtype=None):  # decorating a method
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        args = tuple(self._positional(args, kwargs))
        n = len(args)
        for i in self.nondiff_argnums:
            if not -n <= i < n:
                raise ValueError(f"custom_vjp: nondiff_argnums {self.nondiff_argnums!r} out "
                                 f"of range for {n} positional argument(s)")
        if self.fwd is None:
            raise AttributeError(f"custom_vjp: no rule for {getattr(self.fun, '__name__', 'f')}"
                                 f"; call .defvjp(fwd, bwd) first")
        if _context.grad_depth() == 0 or self._in_fwd:
            return self.fun(*args)
        nondiff = sorted(i % n for i in self.nondiff_argnums)
        diff = [i for i in range(n) if i not in nondiff]
        out, res = self._fwd(args)
        arg_leaves, arg_tree = tree_mod.flatten(tuple(args[i] for i in diff))
        counts = [len(tree_mod.flatten(args[i])[0]) for i in diff]
        inputs = []
        for j, v in enumerate(arg_leaves):
            t = O.to_tensor(v, f"argument leaf {j}")
            inputs.append(EXPR.lift(t) if t.type.is_inexact else None)
        kept = [i for i, t in enumerate(inputs) if t is not None]
        out_leaves, out_tree = tree_mod.flatten(out)
        out_leaves = [O.to_tensor(o, f"output leaf {j}") for j, o in enumerate(out_leaves)]
        nondiff_args = [args[i] for i in nondiff]

        def grad_fun(j, g):
            cts_out = [g if k == j else zeros(o.shape, o.type) for k, o in enumerate(out_leaves)]
            cts = self.bwd(*nondiff_args, res, tree_mod.unflatten(out_tree, cts_out))
            if not isinstance(cts, (tuple, list)) or len(cts) != len(diff):
                raise ValueError(f"custom_vjp: bwd must return a tuple of {len(diff)} "
                                 f"cotangent(s), one per differentiable argument, got {cts!r}")
            flat = []
            for a, (c, count) in enumerate(zip(cts, counts)):
                if c is None:
                    flat.extend([None] * count)
                    continue
                leaves = tree_mod.flatten(c)[0]
                if len(leaves) > count:
                    raise ValueError(f"custom_vjp: bwd's cotangent {a} has {len(leaves)} "
                                     f"leaves, its argument {count}")
                if len(leaves) < count:  # Nones inside the container
                    leaves = _with_nones(c, args[diff[a]])
                flat.extend(leaves)
            return [flat[i] if flat[i] is not None else
                    zeros(inputs[i].shape, inputs[i].type) for i in kept]

        wrapped = []
        for j, o in enumerate(out_leaves):
            if not o.type.is_inexact or not kept:
                wrapped.append(o)
                continue
            wrapped.append(custom_grad(o, [inputs[i] for i in kept],
                                       functools.partial(grad_fun, j), jvp="custom_vjp"))
        return tree_mod.unflatten(out_tree, wrapped)

    def _fwd(self, args):
        self._in_fwd += 1
        try:
            pair = self.fwd(*args)
        finally:
            self._in_fwd -= 1
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"custom_vjp: fwd must return a pair (output, residuals), got "
                            f"{type(pair).__name__}")
        return pair


def _with_nones(ct, arg):
    """The leaves of cotangent ``ct`` aligned with those of ``arg``, ``None`` where ``ct``
    holds ``None`` for a leaf."""
    if ct is None:
        return [None] * len(tree_mod.flatten(arg)[0])
    if isinstance(arg, dict) and isinstance(ct, dict):
        return [x for k in arg for x in _with_nones(ct.get(k), arg[k])]
    if isinstance(arg, (tuple, list)) and isinstance(ct, (tuple, list)) and len(arg) == len(ct):
        return [x for c, a in zip(ct, arg) for x in _with_nones(c, a)]
    leaves = tree_mod.flatten(ct)[0]
    if len(leaves) == len(tree_mod.flatten(arg)[0]):
        return leaves
    raise ValueError(f"custom_vjp: bwd's cotangent {ct!r} does not match its argument's "
                     f"structure")
