"""Jacobians and Hessians: ``jacobian`` (JAX's ``jax.jacrev``), ``jacfwd`` and
``hessian``.

Reverse mode, built from the two transforms: the Jacobian of an output with ``m``
elements is ``m`` gradients, one per row of the identity (a cotangent picking one
element), and ``vmap`` computes them as one batched gradient. So ``jacobian`` is an
ordinary graph that every compiler runs. Forward mode, ``jacfwd``, is ``vmap`` of
:func:`~nxpy.defn.jvp` over the rows of the identity (one tangent per element of the
input), as JAX's; and ``hessian(f) = jacfwd(jacrev(f))``, as JAX builds it.

>>> import nxpy as nx
>>> from nxpy.defn import jacobian, hessian
>>> jacobian(lambda x: x ** 2)(nx.tensor([1.0, 2.0])).tolist()
[[2.0, 0.0], [0.0, 4.0]]
>>> hessian(lambda x: nx.sum(x ** 3))(nx.tensor([1.0, 2.0])).tolist()
[[6.0, 0.0], [0.0, 12.0]]
"""
from __future__ import annotations

import functools

from ... import ops as O
from ... import shape as S
from ...tensor import Tensor
from .. import tree as tree_mod
from ..core import Transform
from .grad import aux_pair, grad, not_an_argnum
from .grad_rules import zeros
from .jvp import jvp
from .vmap import vmap

__all__ = ["jacobian", "jacrev", "jacfwd", "hessian"]


def _first(fun, has_aux):
    """``fun``'s differentiated output, without the aux (checked on the first call)."""
    return (lambda *args: fun(*args)[0]) if has_aux else fun


def _jacobian_of(fun, args, argnums, has_aux, what):
    out = fun(*args)
    aux = None
    if has_aux:
        out, aux = aux_pair(out, what)
    leaves, tree = tree_mod.flatten(out)
    paths = tree_mod.leaf_paths(tree, "output")
    first = _first(fun, has_aux)
    single = S.as_int(argnums) is not None
    rows = []
    for k, (y, path) in enumerate(zip(leaves, paths)):
        if not isinstance(y, Tensor) or not y.type.is_float:
            got = y.type if isinstance(y, Tensor) else type(y).__name__
            raise TypeError(f"{what}: expected every output to be a real floating-point "
                            f"tensor, got {got} for {path} (convert it with nx.as_type)")
        m = S.size(y.shape)
        basis = O.reshape(O.eye(m, type=y.type), (m,) + tuple(y.shape))

        def picked(e, k=k):
            def scalar(*a):
                return O.sum(tree_mod.flatten(first(*a))[0][k] * e)
            return grad(scalar, argnums)(*args)

        per_row = vmap(picked)(basis)  # one gradient per element of y, batched along 0
        # each gradient leaf: (m, *x.shape) -> (*y.shape, *x.shape)
        g_leaves, g_tree = tree_mod.flatten(per_row if not single else (per_row,))
        shaped = [O.reshape(g, tuple(y.shape) + tuple(g.shape[1:])) for g in g_leaves]
        shaped = tree_mod.unflatten(g_tree, shaped)
        rows.append(shaped[0] if single else shaped)
    jac = tree_mod.unflatten(tree, rows)
    return (jac, aux) if has_aux else jac


class _Jacobian(Transform):
    def __init__(self, fun, argnums, has_aux, what):
        if not callable(fun):
            raise TypeError(f"{what}: expected a function to differentiate, got "
                            f"{type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun, self.argnums, self.has_aux, self.what = fun, argnums, has_aux, what

    def _passes_through(self, arg, n_args=None):
        return not_an_argnum(self.argnums, arg, n_args)

    def _traced(self, *args):
        if not args:
            raise TypeError(f"{self.what}: the function needs at least one positional "
                            f"argument to differentiate with respect to")
        return _jacobian_of(self.fun, args, self.argnums, self.has_aux, self.what)


def jacobian(fun, argnums=0, has_aux=False):
    """The Jacobian of ``fun`` with respect to its positional argument(s) ``argnums``
    (JAX's ``jax.jacrev``): for an output of shape ``Y`` and an argument of shape ``X``,
    a tensor of shape ``Y + X`` whose entry ``[i..., j...]`` is ``d out[i...] / d
    x[j...]``. Outputs and arguments may be containers: the result nests the arguments'
    structure (a tuple of them for a tuple ``argnums``) inside the output's. Outputs must
    be real floating-point; an integer argument gets zeros (as in :func:`grad`). With
    ``has_aux``, ``fun`` returns ``(output, aux)`` and the result is ``(jacobian, aux)``.

    >>> import nxpy as nx
    >>> from nxpy.defn import jacobian
    >>> j = jacobian(lambda w, x: nx.dot(w, x), argnums=(0, 1))(
    ...     nx.tensor([[1.0, 2.0]]), nx.tensor([3.0, 4.0]))
    >>> [t.shape for t in j], j[1].tolist()
    ([(1, 1, 2), (1, 2)], [[1.0, 2.0]])
    """
    return _Jacobian(fun, argnums, has_aux, "jacobian")


jacrev = jacobian  # JAX's name


def _jacfwd_of(fun, args, argnums, has_aux):
    single = S.as_int(argnums) is not None
    nums = (S.as_int(argnums),) if single else tuple(S.as_int(n) for n in argnums)
    if any(n is None for n in nums):
        raise TypeError(f"jacfwd: expected argnums to be an integer or a tuple of integers, "
                        f"got {argnums!r}")
    for n in nums:
        if not -len(args) <= n < len(args):
            raise ValueError(f"jacfwd: argnums {argnums!r} out of range for {len(args)} "
                             f"positional argument(s)")
    nums = tuple(n % len(args) for n in nums)
    selected = tuple(args[n] for n in nums)
    leaves, tree = tree_mod.flatten(selected)
    leaves = [O.to_tensor(x, f"argument leaf {i}") for i, x in enumerate(leaves)]
    paths = tree_mod.leaf_paths(tree, "argument")
    for x, path in zip(leaves, paths):
        if not x.type.is_float:
            raise TypeError(f"jacfwd: expected real floating-point inputs, got {x.type} for "
                            f"{path} (convert it with nx.as_type)")
    primals = tuple(tree_mod.unflatten(tree, leaves))

    def fsel(*sel):
        full = list(args)
        for n, v in zip(nums, sel):
            full[n] = v
        out = fun(*full)
        return aux_pair(out, "jacfwd") if has_aux else out

    per_leaf = []  # for each input leaf: the output's tree, each leaf (n, *y.shape)
    out = aux = None
    for k, x in enumerate(leaves):
        n = S.size(x.shape)
        basis = O.reshape(O.eye(n, type=x.type), (n,) + tuple(x.shape))

        def push(e, k=k):
            ts = [zeros(v.shape, v.type) for v in leaves]
            ts[k] = e
            res = jvp(fsel, primals, tuple(tree_mod.unflatten(tree, ts)), has_aux=has_aux)
            return res[1]
        per_leaf.append(vmap(push)(basis))
    res = jvp(fsel, primals, tuple(tree_mod.unflatten(tree, [zeros(v.shape, v.type)
                                                               for v in leaves])),
              has_aux=has_aux)
    out, aux = res[0], (res[2] if has_aux else None)
    y_leaves, y_tree = tree_mod.flatten(out)
    rows = []
    for j, y in enumerate(y_leaves):
        cols = []
        for k, x in enumerate(leaves):
            t = tree_mod.flatten(per_leaf[k])[0][j]  # (n, *y.shape)
            moved = O.transpose(t, list(range(1, t.rank)) + [0]) if t.rank > 1 else t
            cols.append(O.reshape(moved, tuple(y.shape) + tuple(x.shape)))
        shaped = tree_mod.unflatten(tree, cols)
        rows.append(shaped[0] if single else tuple(shaped))
    jac = tree_mod.unflatten(y_tree, rows)
    return (jac, aux) if has_aux else jac


class _Jacfwd(Transform):
    def __init__(self, fun, argnums, has_aux):
        if not callable(fun):
            raise TypeError(f"jacfwd: expected a function to differentiate, got "
                            f"{type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun, self.argnums, self.has_aux = fun, argnums, has_aux

    def _passes_through(self, arg, n_args=None):
        return not_an_argnum(self.argnums, arg, n_args)

    def _traced(self, *args):
        if not args:
            raise TypeError("jacfwd: the function needs at least one positional argument to "
                            "differentiate with respect to")
        return _jacfwd_of(self.fun, args, self.argnums, self.has_aux)


def jacfwd(fun, argnums=0, has_aux=False):
    """The Jacobian of ``fun`` by forward mode (JAX's ``jax.jacfwd``): ``vmap`` of
    :func:`~nxpy.defn.jvp` over the rows of the identity, one per element of the
    inputs. The result has :func:`jacobian`'s structure and shapes (``Y + X``); it needs
    as many tangents as the inputs have elements, so it suits tall Jacobians (few inputs,
    many outputs), where ``jacobian`` needs one gradient per output element. Inputs must be
    real floating-point (as in JAX).

    >>> import nxpy as nx
    >>> from nxpy.defn import jacfwd
    >>> jacfwd(lambda x: nx.stack([x[0] * x[1], nx.sin(x[0]), x[1] ** 2]))(
    ...     nx.tensor([0.0, 2.0])).tolist()
    [[2.0, 0.0], [1.0, 0.0], [0.0, 4.0]]
    """
    return _Jacfwd(fun, argnums, has_aux)


def hessian(fun, argnums=0):
    """The Hessian of ``fun``'s scalar output (JAX's ``jax.hessian``): the Jacobian of its
    gradient, of shape ``X + X`` for an argument of shape ``X``, built as JAX builds it:
    ``jacfwd(jacrev(fun))`` (forward over reverse).

    >>> import nxpy as nx
    >>> from nxpy.defn import hessian
    >>> hessian(lambda x: x[0] * x[1] ** 2)(nx.tensor([1.0, 3.0])).tolist()
    [[0.0, 6.0], [6.0, 2.0]]
    """
    if not callable(fun):
        raise TypeError(f"hessian: expected a function to differentiate, got "
                        f"{type(fun).__name__}")
    return _Jacfwd(_Jacobian(fun, argnums, False, "hessian"), argnums, False)
