"""Helpers shared by the tests: switching the default backend, structural checks of
emitted MLIR through nxpy's own StableHLO parser (not substrings), and comparisons of
results with JAX's."""
import contextlib
import json
import re

import numpy as np

import nxpy as nx
from nxpy.stablehlo import parse
from nxpy.stablehlo.sharding import replica_groups

import jax  # after nxpy (importing JAX starts no client; nxpy's conftest starts XLA)


@contextlib.contextmanager
def default_backend(name):
    """``nx.default_backend(name)`` for the duration of a ``with`` block."""
    old = nx.default_backend(name)
    try:
        yield
    finally:
        nx.default_backend(old)


GROUP_ATTRS = ("replica_groups", "source_target_pairs")


def groups(text_or_module) -> list:
    """``(op name, attribute, value)`` for every op carrying replica groups or
    source/target pairs, in module order; values as nested lists. Replica groups are
    resolved to device groups through the importer (:func:`replica_groups`), so the dense
    form (jax 0.10, nxpy) and the mesh-axes form (jax 0.12) of the same groups compare
    equal."""
    m = parse(text_or_module) if isinstance(text_or_module, str) else text_or_module
    return [(op.name, k, replica_groups(m, op.attributes[k]) if k == "replica_groups"
             else op.attrs[k]) for op in m.walk() for k in GROUP_ATTRS if k in op.attributes]


def fragment(frag: str) -> tuple:
    """``"replica_groups = dense<[[0, 2], [1, 3]]>"`` → ``("replica_groups", [[0, 2], [1, 3]])``."""
    name, value = re.fullmatch(r"(\w+) = dense<(.*)>", frag).groups()
    return name, json.loads(value)  # a nested list of ints


def only(module, name: str):
    """The single op named ``name`` in ``module``."""
    ops = module.find(name)
    assert len(ops) == 1, f"expected one {name}, found {len(ops)}"
    return ops[0]


def types(module) -> set:
    """Every tensor type printed for an argument, result or op of ``module``."""
    out = {str(a.type) for f in module.funcs for a in f.args + f.results}
    for op in module.walk():
        out.update(str(t) for t in op.operand_types + op.result_types)
    return out


def assert_contains(module, frag: str):
    """The structural reading of a conformance ``mlir_must_contain`` entry: an op name, a
    ``replica_groups = dense<...>`` attribute, ``sdy.mesh``/``sdy.sharding``, or a type."""
    if frag == "sdy.mesh":
        assert module.meshes, "no sdy.mesh in the module"
    elif frag == "sdy.sharding":
        assert any(a.sharding is not None for a in module.main.args + module.main.results)
    elif frag.startswith("tensor<"):
        assert frag in types(module), f"no value of type {frag}"
    elif " = dense<" in frag:
        assert fragment(frag) in [(k, v) for _, k, v in groups(module)], frag
    else:
        assert re.fullmatch(r"\w+\.\w+", frag), f"cannot read {frag!r} structurally"
        assert module.find(frag), f"no {frag} op"


def normal(*shape, seed=0):
    """Standard normal f32 values of ``shape`` (seeded)."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close_to_jax(got, want, tol):
    """nxpy results ``got`` equal JAX's ``want`` leaf by leaf (both read in JAX's leaf
    order: dict keys sorted), shapes exactly and values within ``tol``."""
    g = jax.tree_util.tree_leaves(jax.tree_util.tree_map(lambda t: t.to_numpy(), got))
    w = jax.tree_util.tree_leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert a.shape == tuple(np.shape(b)), (a.shape, np.shape(b))
        np.testing.assert_allclose(a, np.asarray(b), rtol=tol, atol=tol)
