"""Multi-clause ``cond`` (Nx's ``cond`` with any number of clauses) against
``jax.lax.switch``: eagerly on the NumPy backend, on the Evaluator and EXLA, through the
StableHLO importer, under ``grad`` and per device inside ``shard_map``/``shard_jit``."""
import numpy as np
import pytest

import nxpy as nx
from nxpy.compilers import exla
from nxpy.defn import grad, jit, shard_jit, shard_map, axis_index
from nxpy.defn.sharding import specs as SH
from nxpy.stablehlo import load, parse

from helpers import COMPILERS, on

import jax  # after nxpy started XLA (conftest)
import jax.numpy as jnp
from jax import lax

POINTS = [-2.5, -0.5, 0.25, 0.75, 1.5, 4.0]


def nx_piecewise(x):
    return nx.cond([(x < -1, lambda: x * 3.0),
                    (x < 0.5, lambda: x * x),
                    (x < 1, lambda: nx.sin(x)),
                    (True, lambda: x + 10.0)])


def jax_piecewise(x):
    index = jnp.where(x < -1, 0, jnp.where(x < 0.5, 1, jnp.where(x < 1, 2, 3)))
    return lax.switch(index, [lambda: x * 3.0, lambda: x * x, lambda: jnp.sin(x),
                              lambda: x + 10.0])


def want(fun, v):
    return np.asarray(jax.jit(fun)(np.float32(v)))


@pytest.mark.parametrize("compiler", [None, *COMPILERS])
def test_first_true_clause_wins(compiler):
    f = on(compiler, nx_piecewise)
    for v in POINTS:
        got = f(nx.tensor(v))
        assert str(got.type) == "f32"
        np.testing.assert_allclose(got.to_numpy(), want(jax_piecewise, v), rtol=1e-6)
    if compiler is not None:
        assert f.trace_count == 1


@pytest.mark.parametrize("compiler", COMPILERS)
def test_containers_types_and_shapes_merge_across_clauses(compiler):
    def f(x, k):
        return nx.cond([(k == 0, lambda: {"a": x, "b": (1, x * 2)}),
                        (k == 1, lambda: {"a": -x, "b": (2.5, x)}),
                        (True, lambda: {"a": nx.sum(x), "b": (3, x + 1)})])

    x = np.array([1.0, 2.0, 3.0], np.float32)
    j = jit(f, compiler=compiler)
    for k, (a, b0, b1) in enumerate([(x, 1.0, x * 2), (-x, 2.5, x), (np.full(3, 6.0), 3.0, x + 1)]):
        r = j(nx.tensor(x), nx.tensor(k))
        assert r["a"].shape == (3,) and str(r["b"][0].type) == "f32"
        np.testing.assert_allclose(r["a"].to_numpy(), a)
        np.testing.assert_allclose(r["b"][0].to_numpy(), b0)
        np.testing.assert_allclose(r["b"][1].to_numpy(), b1)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_static_predicates_resolve_while_tracing(compiler):
    def f(x):  # False clauses drop out; a True one before the last ends the list
        return nx.cond([(False, lambda: x * 0), (x > 0, lambda: x * 2), (True, lambda: x - 1),
                        (True, lambda: x * 100)])

    j = jit(f, compiler=compiler)
    assert j(nx.tensor(3)).tolist() == 6 and j(nx.tensor(-3)).tolist() == -4
    graph = nx.defn.trace(f, [nx.template((), "s32")])
    (node,) = [n for n in _all_nodes(graph) if n.op == "cond"]
    assert len(node.fns) == 2 and len(node.args) == 1
    # all predicates static: no node at all
    g = nx.defn.trace(lambda x: nx.cond([(0, lambda: x), (nx.tensor(1), lambda: x + 1),
                                         (True, lambda: x * 5)]), [nx.template((), "s32")])
    assert [n.op for n in _all_nodes(g) if n.op == "cond"] == []


def _all_nodes(fn):
    out = []
    for n in fn.nodes:
        out.append(n)
        for f in n.fns:
            out.extend(_all_nodes(f))
    return out


def test_one_case_in_the_module_and_the_importer_runs_it():
    text = exla.to_mlir(nx_piecewise, nx.tensor(1.0))
    m = parse(text)
    (case,) = m.find("stablehlo.case")
    assert len(case.regions) == 4 and not m.find("stablehlo.if")
    # two clauses stay a stablehlo.if
    assert len(parse(exla.to_mlir(lambda x: nx.cond([(x > 0, lambda: x), (True, lambda: -x)]),
                                  nx.tensor(1.0))).find("stablehlo.if")) == 1
    program = load(text)
    for compiler in COMPILERS:
        run = program.jit(compiler=compiler)
        for v in POINTS:
            np.testing.assert_allclose(run(nx.tensor(v)).to_numpy(), want(jax_piecewise, v),
                                       rtol=1e-6)


def test_importer_loads_jax_switch_with_an_index_out_of_range():
    def f(i, x):
        return lax.switch(i, [lambda y: y + 1, lambda y: y * 2, lambda y: -y, lambda y: y / 4], x)
    x = np.array([1.0, -2.0], np.float32)
    program = load(jax.jit(f).lower(np.int32(0), x).as_text())
    (case,) = parse(jax.jit(f).lower(np.int32(0), x).as_text()).find("stablehlo.case")
    assert len(case.regions) == 4
    for compiler in COMPILERS:
        run = program.jit(compiler=compiler)
        for i in range(-1, 6):  # lax.switch clamps the index; the case runs as given
            np.testing.assert_allclose(run(nx.tensor(i, type="s32"), nx.tensor(x)).to_numpy(),
                                       np.asarray(jax.jit(f)(np.int32(i), x)), rtol=1e-6)


@pytest.mark.parametrize("compiler", [None, *COMPILERS])
def test_grad_through_clauses_matches_jax(compiler):
    def nx_f(x, y):
        s = nx.sum(x)
        return nx.cond([(s < -1, lambda: nx.sum(nx.sin(x) * y)),
                        (s < 1, lambda: nx.sum(x * x * y)),
                        (True, lambda: nx.sum(nx.exp(x) + y))])

    def jax_f(x, y):
        s = jnp.sum(x)
        i = jnp.where(s < -1, 0, jnp.where(s < 1, 1, 2))
        return lax.switch(i, [lambda: jnp.sum(jnp.sin(x) * y), lambda: jnp.sum(x * x * y),
                              lambda: jnp.sum(jnp.exp(x) + y)])

    g = grad(nx_f, argnums=(0, 1))
    if compiler is not None:
        g = jit(g, compiler=compiler)
    y = np.array([0.5, -1.5, 2.0], np.float32)
    for x in ([-1.0, -0.5, -0.25], [0.1, 0.2, -0.1], [1.0, 0.5, 0.25]):
        x = np.array(x, np.float32)
        dx, dy = g(nx.tensor(x), nx.tensor(y))
        jx, jy = jax.jit(jax.grad(jax_f, argnums=(0, 1)))(x, y)
        np.testing.assert_allclose(dx.to_numpy(), np.asarray(jx), rtol=1e-5)
        np.testing.assert_allclose(dy.to_numpy(), np.asarray(jy), rtol=1e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_per_device_clauses_in_shard_map(compiler):
    mesh = nx.Mesh("mesh", (4,), axis_names=("x",))
    f = shard_map(lambda a: nx.cond([(axis_index("x") == 0, lambda: a * 10),
                                     (axis_index("x") == 2, lambda: a + 100),
                                     (True, lambda: -a)]),
                  mesh, in_specs=("x",), out_specs=("x",), compiler=compiler)
    assert f(nx.tensor([1, 2, 3, 4])).tolist() == [10, -2, 103, -4]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_clauses_under_shard_jit(compiler):
    mesh = nx.Mesh("mesh", (2,), axis_names=("x",))

    def f(a):
        s = nx.sum(a)
        return nx.cond([(s < 0, lambda: a * 2), (s < 10, lambda: a + 1), (True, lambda: a - 1)])

    h = shard_jit(f, mesh, input_shardings=[{0: ["x"]}], compiler=compiler)
    for v in ([-1.0, -2.0, 1.0, 0.0], [1.0, 2.0, 3.0, 0.0], [5.0, 5.0, 5.0, 5.0]):
        x = np.array(v, np.float32)
        per_device = h([[s] for s in SH.shard(x, mesh, {0: ["x"]})])
        expect = np.asarray(jax.jit(lambda a: lax.switch(
            jnp.where(a.sum() < 0, 0, jnp.where(a.sum() < 10, 1, 2)),
            [lambda: a * 2, lambda: a + 1, lambda: a - 1]))(x))
        assert len(per_device) == 2
        for r in per_device:  # a cond's results are replicated: every device has all of it
            np.testing.assert_allclose(r.to_numpy(), expect)


def test_errors_name_the_argument():
    x = nx.tensor(1.0)
    with pytest.raises(ValueError, match=r"cond: the last clause's predicate must be True.*got 1"):
        nx.cond([(x > 0, lambda: x), (1, lambda: -x)])
    with pytest.raises(ValueError, match="last clause's predicate must be True"):
        jit(lambda x: nx.cond([(x > 0, lambda: x), (x < 0, lambda: -x)]))(x)
    with pytest.raises(TypeError, match=r"cond: clause 1 must be a \(pred, branch\) pair"):
        nx.cond([(x > 0, lambda: x), (True,)])
    with pytest.raises(TypeError, match="non-empty list of"):
        nx.cond([])
    with pytest.raises(TypeError, match="got only one branch"):
        nx.cond(x > 0, lambda: x)
    with pytest.raises(ValueError, match=r"cond: expected pred to be a scalar, got shape \(2,\)"):
        jit(lambda v: nx.cond([(v > 0, lambda: v), (True, lambda: -v)]))(nx.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="cond: all branches must return the same container"):
        jit(lambda v: nx.cond([(v > 0, lambda: v), (v < -1, lambda: (v, v)),
                               (True, lambda: -v)]))(x)
    # eagerly, the clauses are plain Python control flow
    assert nx.cond([(False, "a"), (nx.tensor(1), "b"), (True, "c")]) == "b"
    assert nx.cond([(True, lambda: "only")]) == "only"
