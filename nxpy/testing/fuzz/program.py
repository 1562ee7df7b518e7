"""What a fuzzed program is: its inputs (:class:`Leaf`), its steps (:class:`Step`, one op
of the twin table each) and the :class:`Program` they make, which builds both the nxpy
function and its JAX twin; :class:`Mismatch`, what a failed check raises.
``docs/fuzzing.md`` describes programs and the rules their inputs follow."""
from __future__ import annotations

import dataclasses

import numpy as np

import nxpy as nx
from ... import types as T
from ...defn import grad
from .. import _default_backend
from .twins import OPS, _Jax

TYPES = [str(t) for t in T.ALL_TYPES]
NAMES = ("w", "h", "c", "b")  # a dim's name depends on its position from the right


class Mismatch(AssertionError):
    """Two paths disagree (or one fails) on a fuzzed program."""


@dataclasses.dataclass
class Leaf:
    """An input: its values are drawn from ``seed`` (or given as ``data``)."""
    shape: tuple
    type: str
    names: tuple | None = None
    lo: float = -4
    hi: float = 4
    grid: bool = True            # floats on multiples of 1/8
    special: bool = False        # a few NaN, inf, -inf, -0.0
    seed: int = 0
    data: list | None = None

    def array(self) -> np.ndarray:
        dt = T.parse(self.type).dtype
        if self.data is not None:
            return np.asarray(self.data).astype(dt).reshape(self.shape)
        r = np.random.default_rng(self.seed)
        t = T.parse(self.type)
        if t.is_pred:
            return r.integers(0, 2, self.shape).astype(bool)
        if t.is_int:
            lo = max(self.lo, 0) if t.kind == "u" else self.lo
            return r.integers(int(lo), int(self.hi) + 1, self.shape).astype(dt)

        def draw():
            if self.grid:
                return r.integers(round(self.lo * 8), round(self.hi * 8) + 1, self.shape) / 8
            return r.uniform(self.lo, self.hi, self.shape)
        v = draw() + (1j * draw() if t.is_complex else 0)
        v = np.asarray(v).astype(dt)
        if self.special and v.size:
            flat = v.reshape(-1)
            for i in r.choice(v.size, min(2, v.size), replace=False):
                flat[i] = r.choice([np.nan, np.inf, -np.inf, -0.0])
        return v

    def __str__(self):
        names = f" names={list(self.names)}" if self.names and any(self.names) else ""
        if self.data is not None:
            return f"input {self.type}{list(self.shape)}{names} = {self.data}"
        how = ("grid" if self.grid else "uniform") + (", with NaN/inf/-0" if self.special else "")
        return (f"input {self.type}{list(self.shape)}{names} {how} [{self.lo}, {self.hi}] "
                f"seed={self.seed}")


@dataclasses.dataclass
class Step:
    op: str
    args: tuple
    kw: dict

    def __str__(self):
        kw = "".join(f", {k}={v!r}" for k, v in self.kw.items())
        return f"{self.op}({', '.join(f'n{a}' for a in self.args)}{kw})"


@dataclasses.dataclass
class Program:
    """``nodes`` (leaves and steps, each referring to earlier nodes by index), the
    ``outputs``, and each node's type as nxpy inferred it. ``grad``: the program is the
    gradient of the sum of its (float) output with respect to every input."""
    seed: int
    index: int
    nodes: list
    types: list
    outputs: tuple
    grad: bool = False

    def leaves(self):
        return [n for n in self.nodes if isinstance(n, Leaf)]

    def __str__(self):
        lines = [f"program seed={self.seed} index={self.index}"
                 + (" (grad of sum)" if self.grad else "")]
        for i, (n, t) in enumerate(zip(self.nodes, self.types)):
            lines.append(f"  n{i} = {n}" + ("" if isinstance(n, Leaf) else f"   -> {t}"))
        lines.append(f"  outputs: {', '.join(f'n{i}' for i in self.outputs)}")
        return "\n".join(lines)

    def repro(self, vmap: bool = False) -> str:
        how = " --vmap" if vmap else ""
        return f"python -m nxpy.testing.fuzz --seed {self.seed} --index {self.index}{how} --show"

    # -- the nxpy program and its JAX twin, built from the description -----------------
    def _body(self, xs):
        it = iter(xs)
        vals = []
        for n in self.nodes:
            vals.append(next(it) if isinstance(n, Leaf)
                        else OPS[n.op][0](*[vals[a] for a in n.args], **n.kw))
        outs = tuple(vals[i] for i in self.outputs)
        return outs[0] if len(outs) == 1 else outs

    def sources(self, roots) -> set:
        """The nodes ``roots`` (node indices) are computed from, ``roots`` included."""
        seen, todo = set(), list(roots)
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                if isinstance(self.nodes[i], Step):
                    todo.extend(self.nodes[i].args)
        return seen

    def argnums(self):
        """The inputs a grad program differentiates: the float ones."""
        return tuple(k for k, leaf in enumerate(self.leaves()) if T.parse(leaf.type).is_float)

    def function(self):
        """The nxpy function of the inputs."""
        if not self.grad:
            return lambda *xs: self._body(xs)
        return lambda *xs: grad(lambda *ys: nx.sum(self._body(ys)), argnums=self.argnums())(*xs)

    def jax_function(self, jax):
        J = _Jax(jax)

        def body(*xs):
            it = iter(xs)
            vals = []
            for i, n in enumerate(self.nodes):
                if isinstance(n, Leaf):
                    vals.append(next(it))
                    continue
                ts = [self.types[a] for a in n.args]
                vals.append(OPS[n.op][1](J, ts, self.types[i], *[vals[a] for a in n.args], **n.kw))
            outs = tuple(vals[i] for i in self.outputs)
            return outs[0] if len(outs) == 1 else outs
        if not self.grad:
            return body
        return jax.grad(lambda *ys: jax.numpy.sum(body(*ys)), argnums=self.argnums())


def _numpy_backend():
    """The NumPy backend as the default, for as long as the block runs: the reference."""
    return _default_backend("numpy")
