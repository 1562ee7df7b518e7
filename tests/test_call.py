"""``nxpy.defn.call`` (a nested jit as a function of the program) against the function
inlined and against JAX's nested ``jax.jit``: values on every path, the module's
functions (one per distinct body, called at each site), grad, jvp and vmap against JAX's,
shard_jit and shard_map, side effects, a compiler without calls, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import nxpy as nx
from helpers import CHEAP, COMPILERS, close, meshes_2x2, normal, run
from nxpy.compilers.exla import to_mlir
from nxpy.defn import (call, cond, custom_grad, grad, hook, jit, jvp, psum, shard_map,
                       value_and_grad, vmap, while_loop)
from nxpy.defn.compiler import get_compiler
from nxpy.defn.shard_jit import shard_jit
from nxpy.defn.tracing import expansions, trace
from nxpy.stablehlo import load

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def layer(w, x, *, act="tanh"):
    h = nx.dot(x, w)
    return nx.tanh(h) if act == "tanh" else nx.sin(h) * h


def j_layer(w, x, act="tanh"):
    h = x @ w
    return jnp.tanh(h) if act == "tanh" else jnp.sin(h) * h


def net(w1, w2, x):
    return nx.sum(call(layer, w2, call(layer, w1, x)) ** 2) + nx.sum(
        call(layer, w1, x, act="sin"))


def j_net(w1, w2, x):
    jl = jax.jit(j_layer, static_argnames="act")
    return jnp.sum(jl(w2, jl(w1, x)) ** 2) + jnp.sum(jl(w1, x, act="sin"))


W1, W2, X = normal(4, 4, seed=1) * 0.5, normal(4, 4, seed=2) * 0.5, normal(3, 4, seed=3)




def test_values_on_every_path_equal_jax():
    want = jax.jit(j_net)(W1, W2, X)
    for path, got in run(net, W1, W2, X).items():
        close(got, want, rtol=1e-5)


def test_a_body_is_one_function_called_at_each_site():
    text = to_mlir(net, nx.tensor(W1), nx.tensor(W2), nx.tensor(X))
    # two bodies (the static keyword picks another), the first one called twice
    assert text.count("func.func private @layer") == 2
    assert text.count("callee = @layer}") == 2 and text.count("callee = @layer_1}") == 1
    # its constants are its own (not the caller's)
    main = text.split("func.func private")[0]
    assert "stablehlo.tanh" not in main and "stablehlo.dot_general" not in main
    # and JAX's importer (nxpy.stablehlo) loads it back to the same values
    close(load(text)(nx.tensor(W1), nx.tensor(W2), nx.tensor(X)),
          jax.jit(j_net)(W1, W2, X), rtol=1e-5)


def test_other_templates_trace_another_function():
    def f(x, y):
        return call(nx.exp, x), call(nx.exp, y)
    text = to_mlir(f, nx.tensor([1.0, 2.0]), nx.tensor([1.0, 2.0, 3.0]))
    assert text.count("func.func private @exp") == 2
    text = to_mlir(f, nx.tensor([1.0, 2.0]), nx.tensor([3.0, 4.0]))
    assert text.count("func.func private @exp") == 1


def test_captured_values_are_arguments():
    def f(x, y):
        return call(lambda v: v * y + 1.0, x)   # y is the caller's
    for path, got in run(f, np.array([1.0, 2.0], np.float32),
                         np.array([3.0, 4.0], np.float32), paths=CHEAP).items():
        close(got, [4.0, 9.0])
    text = to_mlir(f, nx.tensor([1.0, 2.0]), nx.tensor([3.0, 4.0]))
    sig = text.split("func.func private @")[1].split("{")[0]
    assert sig.count("tensor<2xf32>") == 3, sig  # x and the captured y in, one result out


def test_nested_calls_and_control_flow():
    def inner(x):
        return while_loop(lambda s: s[1] < 3, lambda s: (s[0] * 1.5, s[1] + 1), (x, 0))[0]

    def outer(x):
        return cond(nx.sum(x) > 0, lambda: call(inner, x), lambda: -call(inner, x))

    def f(x):
        return call(outer, x) + call(inner, x)

    def jf(x):
        ji = jax.jit(lambda x: jax.lax.fori_loop(0, 3, lambda i, v: v * 1.5, x))
        return jax.jit(lambda x: jax.lax.cond(jnp.sum(x) > 0, ji, lambda v: -ji(v), x))(x) + ji(x)
    x = normal(5)
    for path, got in run(f, x, paths=CHEAP).items():
        close(got, jax.jit(jf)(x))
    text = to_mlir(f, nx.tensor(x))
    assert text.count("func.func private @outer") == 1
    assert text.count("func.func private @inner") == 1  # one body, called in and outside


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_equals_jax(compiler):
    want = jax.grad(j_net, argnums=(0, 1, 2))(W1, W2, X)
    got = jit(grad(net, argnums=(0, 1, 2)), compiler=compiler)(
        nx.tensor(W1), nx.tensor(W2), nx.tensor(X))
    for g, w in zip(got, want):
        close(g, w, rtol=1e-4, atol=1e-5)
    # a call traced inside the differentiated function (and second order)
    h = jit(grad(grad(lambda x: nx.sum(call(nx.sin, x) * x))), compiler=compiler)(
        nx.tensor(0.7))
    close(h, jax.grad(jax.grad(lambda x: jnp.sin(x) * x))(0.7), rtol=1e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_body_traced_under_grad_is_not_reused_outside(compiler):
    # under grad a body records its gradient markers (custom_grad); outside, none: the two
    # contexts trace two functions, in either order
    def body(x):
        return custom_grad(nx.sin(x), [x], lambda g: [g * 2.0])

    def g(x):
        return grad(lambda v: nx.sum(call(body, v)))(x)
    x = nx.tensor([0.5, 1.0])
    grad_first = jit(lambda x: (g(x), call(body, x)), compiler=compiler)(x)
    value_first = jit(lambda x: (call(body, x), g(x)), compiler=compiler)(x)[::-1]
    for dx, y in (grad_first, value_first):
        assert dx.tolist() == [2.0, 2.0]
        close(y, np.sin([0.5, 1.0]), rtol=1e-6)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_of_a_loop_inside_a_call(compiler):
    def body(x):
        return while_loop(lambda s: s[1] < 4, lambda s: (nx.sin(s[0]) * 1.1, s[1] + 1),
                          (x, 0))[0]
    f = jit(value_and_grad(lambda x: nx.sum(call(body, x) + call(body, x * 2))),
            compiler=compiler)
    v, g = f(nx.tensor(X))

    def jbody(x):
        return jax.lax.fori_loop(0, 4, lambda i, v: jnp.sin(v) * 1.1, x)
    jb = jax.jit(jbody)
    wv, wg = jax.value_and_grad(lambda x: jnp.sum(jb(x) + jb(x * 2)))(X)
    close(v, wv, rtol=1e-5)
    close(g, wg, rtol=1e-4)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_jvp_and_vmap_equal_jax(compiler):
    t1 = normal(4, 4, seed=9)
    p, t = jit(lambda w, v: jvp(lambda w: net(w, nx.tensor(W2), nx.tensor(X)), (w,), (v,)),
               compiler=compiler)(nx.tensor(W1), nx.tensor(t1))
    wp, wt = jax.jvp(lambda w: j_net(w, W2, X), (W1,), (t1,))
    close(p, wp, rtol=1e-5)
    close(t, wt, rtol=1e-4, atol=1e-4)
    xs = normal(5, 3, 4, seed=4)
    got = jit(vmap(lambda x: net(nx.tensor(W1), nx.tensor(W2), x)), compiler=compiler)(
        nx.tensor(xs))
    close(got, jax.vmap(lambda x: j_net(W1, W2, x))(xs), rtol=1e-5)


def test_shard_jit_propagates_through_a_call():
    mesh = nx.Mesh("mesh", (2,), axis_names=("x",))
    xs = normal(4, 3)

    def prog(x):
        return call(lambda v: nx.exp(v) * 2.0, x)
    ins = [{0: ["x"]}]
    ev = shard_jit(prog, mesh, input_shardings=ins, compiler="evaluator")
    ex = shard_jit(prog, mesh, input_shardings=ins, compiler="exla")
    args = [[nx.tensor(xs[:2])], [nx.tensor(xs[2:])]]
    a, b = ev(args), ex(args)
    assert ev.output_shardings == ex.output_shardings == nx.P("x")
    for d, (ra, rb) in enumerate(zip(a, b)):
        assert ra.device_id == rb.device_id and ra.shape == rb.shape == (2, 3)
        close(ra, np.exp(xs[2 * d:2 * d + 2]) * 2.0, rtol=1e-6)
        close(rb, np.exp(xs[2 * d:2 * d + 2]) * 2.0, rtol=1e-6)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_call_in_a_shard_map_body_with_its_gradient(compiler):
    mesh, jmesh = meshes_2x2()

    def body(lib, red, c):
        def loss(w, x):
            return red(lib.sum(c(lambda v: lib.tanh(v * w), x)), ("x", "y"))
        return lambda w, x: (loss(w, x), grad(loss)(w, x) if lib is nx else
                             jax.grad(loss)(w, x))
    xs = normal(8, 4)
    want = jax.jit(jax.shard_map(body(jnp, jax.lax.psum, lambda f, x: jax.jit(f)(x)),
                                 mesh=jmesh, in_specs=(P(), P("x", "y")),
                                 out_specs=(P(), P())))(jnp.float32(0.4), xs)
    got = jit(shard_map(body(nx, psum, call), mesh, in_specs=(nx.P(), nx.P("x", "y")),
                        out_specs=(nx.P(), nx.P())), compiler=compiler)(
        nx.tensor(0.4), nx.tensor(xs))
    for g, w in zip(got, want):
        close(g, w, rtol=1e-4)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_side_effects_run_in_order(compiler):
    seen = []

    def body(x):
        return hook(x * 2, lambda v: seen.append(("in", v.tolist())))

    def f(x):
        y = hook(x, lambda v: seen.append(("before", v.tolist())))
        return call(body, y) + 1
    got = jit(f, compiler=compiler)(nx.tensor([1.0]))
    assert got.tolist() == [3.0]
    assert seen == [("before", [1.0]), ("in", [2.0])]
    seen.clear()  # a body with effects and no result still runs them
    jit(lambda x: (call(lambda v: [hook(v, lambda t: seen.append(t.tolist()))], x), x)[1],
        compiler=compiler)(nx.tensor([5.0]))
    assert seen == [[5.0]]


def test_a_compiler_without_calls_gets_the_body_inlined():
    class NoCalls:
        def supports(self, op):
            return op != "call"
    assert "call" in expansions(NoCalls())
    assert "call" not in expansions(get_compiler("exla"))
    g = trace(net, [nx.tensor(W1), nx.tensor(W2), nx.tensor(X)],
              expand=expansions(NoCalls()))
    ops = {e.op for e in g.nodes}
    assert "call" not in ops and "dot" in ops


def test_eager_is_the_function():
    assert call(lambda x, *, n: x * n, nx.tensor([1, 2]), n=3).tolist() == [3, 6]
    assert call(lambda: 5) == 5


def test_errors():
    with pytest.raises(TypeError, match="call: expected fun to be a function, got int"):
        call(3, nx.tensor(1.0))
    with pytest.raises(TypeError, match="static keyword 'k' must be hashable.*list"):
        jit(lambda x: call(lambda v, *, k: v, x, k=[1]))(nx.tensor(1.0))
