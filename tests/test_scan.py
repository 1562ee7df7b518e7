"""scan, map and associative_scan against jax.lax's, on the Evaluator, on EXLA and eagerly;
reverse mode through scan against jax.grad, vmap of scan, scan inside shard_map."""
from __future__ import annotations

import numpy as np
import pytest

import nxpy as nx
from helpers import COMPILERS, close, covering, meshes_2x2, normal
from nxpy.defn import (associative_scan, debug_expr, grad, hessian, jacobian, jit, scan,
                       shard_map, vmap)
from nxpy.defn import map as nx_map
from nxpy.compilers.exla import to_mlir
from nxpy.stablehlo import load, parse

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

TOL = 1e-5


def run(fn, compiler, *args):
    """``fn(*args)`` eagerly (compiler None) or jitted on ``compiler``."""
    return fn(*args) if compiler is None else jit(fn, compiler=compiler)(*args)


def t(a):
    return nx.tensor(np.asarray(a))


def _cell(nxm):
    def cell(c, x):
        h = nxm.tanh(0.5 * c["h"] + x)
        return {"h": h, "n": c["n"] + 1}, (h, h * h)
    return cell


# every (reverse, unroll) pair (unroll 1: the plain loop; 2: 7 steps in 3 rounds and a
# remainder; 3: two rounds and a remainder; True: no loop) on one path each, in rotation
# (every path meets several pairs); ``make exhaustive``: on every path
@pytest.mark.parametrize("unroll,reverse,compiler", [
    (*opts, c) for opts, c in covering([(u, r) for u in (1, 2, 3, True) for r in (False, True)],
                                       [None, *COMPILERS])])
def test_forward_containers_reverse_unroll(compiler, reverse, unroll):
    xs = normal(7, 3)
    init_nx = {"h": nx.tensor(np.zeros(3, np.float32)), "n": nx.tensor(0)}
    init_j = {"h": jnp.zeros(3, jnp.float32), "n": jnp.int32(0)}
    got = run(lambda i, x: scan(_cell(nx), i, x, reverse=reverse, unroll=unroll),
              compiler, init_nx, t(xs))
    want = jax.lax.scan(_cell(jnp), init_j, xs, reverse=reverse, unroll=unroll)
    close(got, want, TOL, TOL)


@pytest.mark.parametrize("compiler", [None, *COMPILERS])
def test_xs_containers_and_none(compiler):
    xs = {"a": normal(5, 2), "b": (normal(5, seed=1),)}

    def f(nxm):
        return lambda c, x: (c + nxm.sum(x["a"]) * x["b"][0], [x["a"] * c])
    got = run(lambda c, a, b: scan(f(nx), c, {"a": a, "b": (b,)}), compiler,
              nx.tensor(1.0), t(xs["a"]), t(xs["b"][0]))
    close(got, jax.lax.scan(f(jnp), jnp.float32(1.0), xs), TOL, TOL)
    # xs=None with length
    got = run(lambda c: scan(lambda c, x: (c * 2, c), c, length=4), compiler, nx.tensor(1.5))
    close(got, jax.lax.scan(lambda c, x: (c * 2, c), jnp.float32(1.5), length=4), TOL, TOL)
    # no ys
    got = run(lambda c, x: scan(lambda c, x: (c + x, None), c, x)[0], compiler,
              nx.tensor(0.0), t(xs["b"][0]))
    np.testing.assert_allclose(got.to_numpy(), xs["b"][0].sum(), rtol=1e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_empty_scan(compiler):
    c, ys = run(lambda c, x: scan(lambda c, x: (c + x, x * 2), c, x), compiler,
                nx.tensor(np.zeros(2, np.float32)), t(np.zeros((0, 2), np.float32)))
    assert c.to_numpy().tolist() == [0.0, 0.0] and ys.shape == (0, 2)


def test_one_while_loop_with_the_unrolled_steps_inside():
    def f(c, xs):
        return scan(lambda c, x: (nx.sin(c) + x, c), c, xs, unroll=3)
    mod = parse(to_mlir(f, nx.template((), "f32"), nx.template((10,), "f32")))
    whiles = mod.find("stablehlo.while")
    assert len(whiles) == 1
    # three steps in the body, one more after the loop (10 = 3 * 3 + 1)
    assert len([o for o in mod.walk() if o.name == "stablehlo.sine"]) == 4


def _rnn_params(seed=0):
    return {"w": normal(4, 4, seed=seed) * 0.5, "u": normal(3, 4, seed=seed + 1) * 0.5,
            "b": normal(4, seed=seed + 2)}


def _rnn_loss(nxm, dot):
    def loss(p, h0, xs):
        def cell(h, x):
            h = nxm.tanh(dot(h, p["w"]) + dot(x, p["u"]) + p["b"])
            return h, nxm.sum(h * h)
        h, ys = jax.lax.scan(cell, h0, xs) if nxm is jnp else scan(cell, h0, xs)
        return nxm.sum(ys) + nxm.sum(h * 3.0)
    return loss


@pytest.mark.parametrize("compiler", COMPILERS)
def test_rnn_gradient_against_jax(compiler):
    p = _rnn_params()
    h0, xs = normal(4, seed=7), normal(6, 3, seed=8)
    want = jax.grad(_rnn_loss(jnp, jnp.dot), argnums=(0, 1, 2))(p, h0, xs)
    loss = _rnn_loss(nx, nx.dot)
    got = jit(grad(loss, argnums=(0, 1, 2)), compiler=compiler)(
        {k: t(v) for k, v in p.items()}, t(h0), t(xs))
    close(got, want, 1e-4, 1e-4)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("reverse, unroll", [(True, 1), (False, 4)])
def test_gradient_reverse_unroll_and_closures(compiler, reverse, unroll):
    xs = normal(5, 2)

    def loss(nxm, sc):
        def f(w, xs):
            def cell(c, x):
                return c * nxm.cos(x * w) + w, c * x
            c, ys = sc(cell, nxm.ones(2) if nxm is jnp else nx.tensor([1.0, 1.0]), xs)
            return nxm.sum(ys * ys) + nxm.sum(c)
        return f
    want = jax.grad(loss(jnp, lambda f, c, x: jax.lax.scan(f, c, x, reverse=reverse,
                                                           unroll=unroll)),
                    argnums=(0, 1))(jnp.float32(0.7), xs)
    got = jit(grad(loss(nx, lambda f, c, x: scan(f, c, x, reverse=reverse, unroll=unroll)),
                   argnums=(0, 1)), compiler=compiler)(nx.tensor(0.7), t(xs))
    close(got, want, 1e-4, 1e-4)


def test_gradient_keeps_stacked_carries_not_a_buffer_per_state():
    """The forward loop of the gradient keeps one carry per step (n x carry), never a
    copy of the ys buffers per step."""
    n = 50
    loss = _rnn_loss(nx, nx.dot)
    p = {k: nx.template(v.shape, "f32") for k, v in _rnn_params().items()}
    text = to_mlir(grad(loss), p, nx.template((4,), "f32"), nx.template((n, 3), "f32"))
    assert f"tensor<{n}x{n}" not in text
    assert f"tensor<{n}x4xf32>" in text
    # the loss reads the carry and the ys: one forward loop and one backward loop
    assert len(parse(text).find("stablehlo.while")) == 2


def test_gradient_keeps_residuals_and_recomputes_no_step():
    """As JAX: the forward loop stacks what the backward loop reads (here the tanh's
    output, the carry and x), so the cell's tanh runs once per step, not again in the
    backward loop; the gradient's compiled program is as large as JAX's."""
    n = 20
    p = _rnn_params()
    loss = _rnn_loss(nx, nx.dot)
    specs = [{k: nx.template(v.shape, "f32") for k, v in p.items()},
             nx.template((4,), "f32"), nx.template((n, 3), "f32")]
    text = to_mlir(grad(loss), *specs)
    jtext = jax.jit(jax.grad(_rnn_loss(jnp, jnp.dot))).lower(
        p, np.zeros(4, np.float32), np.zeros((n, 3), np.float32)).as_text()
    assert text.count("stablehlo.tanh") == jtext.count("stablehlo.tanh") == 1
    assert f"tensor<{n}x4xf32>" in text  # a stacked residual


@pytest.mark.parametrize("compiler", COMPILERS)
def test_gradient_of_scan_whose_step_loops_and_branches(compiler):
    xs = normal(5, 3, seed=3)

    def loss(nxm, sc, fori, cond):
        def f(w, xs):
            def cell(c, x):
                inner = fori(0, 3, lambda i, v: nxm.sin(v * w + x), c)
                c = cond(nxm.sum(x) > 0, lambda v: v * w, lambda v: v + w, inner)
                return c, nxm.sum(c * x)
            c, ys = sc(cell, xs[0], xs)
            return nxm.sum(ys) + nxm.sum(c * c)
        return f
    want = jax.grad(loss(jnp, jax.lax.scan, jax.lax.fori_loop,
                         lambda p, a, b, v: jax.lax.cond(p, a, b, v)),
                    argnums=(0, 1))(jnp.float32(0.6), xs)
    got = jit(grad(loss(nx, scan, nx.fori_loop,
                        lambda p, a, b, v: nx.cond(p, lambda: a(v), lambda: b(v))),
                   argnums=(0, 1)), compiler=compiler)(nx.tensor(0.6), t(xs))
    close(got, want, 1e-4, 1e-4)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_hooks_in_a_scan_step_run_once_per_step_under_grad(compiler):
    seen = []

    def f(w, xs):
        def cell(c, x):
            c = nx.hook(nx.sin(c * w + x), lambda v: seen.append(v.tolist()))
            return c, c
        return nx.sum(scan(cell, nx.tensor(0.0), xs)[1])
    g = jit(grad(f), compiler=compiler)(nx.tensor(0.5), nx.tensor([1.0, 2.0, 3.0]))
    jg = jax.grad(lambda w, xs: jnp.sum(jax.lax.scan(
        lambda c, x: (jnp.sin(c * w + x),) * 2, 0.0, xs)[1]))(0.5, np.float32([1, 2, 3]))
    close(g, jg, 1e-5, 1e-5)
    assert len(seen) == 3


@pytest.mark.parametrize("compiler", COMPILERS)
def test_vmap_of_scan(compiler):
    xs = normal(4, 6, 2)  # batch of 4 sequences of 6 steps
    c0 = normal(4, 2, seed=3)

    def f(nxm, sc):
        return lambda c, xs: sc(lambda c, x: (nxm.sin(c) * x + c, c * 2), c, xs)
    want = jax.vmap(f(jnp, jax.lax.scan))(c0, xs)
    got = jit(vmap(f(nx, scan)), compiler=compiler)(t(c0), t(xs))
    close(got, want, TOL, TOL)
    # xs batched along its second axis, the carry shared
    want = jax.vmap(f(jnp, jax.lax.scan), in_axes=(None, 1))(c0[0], xs)
    got = jit(vmap(f(nx, scan), in_axes=(None, 1)), compiler=compiler)(t(c0[0]), t(xs))
    close(got, want, TOL, TOL)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_vmap_of_grad_of_scan(compiler):
    xs = normal(3, 5, 2)

    def loss(nxm, sc):
        def f(w, xs):
            c0 = nxm.ones(2) if nxm is jnp else nx.tensor([1.0, 1.0])
            return nxm.sum(sc(lambda c, x: (nxm.tanh(c * w + x), c), c0, xs)[1])
        return f
    want = jax.vmap(jax.grad(loss(jnp, jax.lax.scan)), in_axes=(None, 0))(jnp.float32(0.3), xs)
    got = jit(vmap(grad(loss(nx, scan)), in_axes=(None, 0)), compiler=compiler)(
        nx.tensor(0.3), t(xs))
    close(got, want, 1e-4, 1e-4)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_scan_in_shard_map(compiler):
    mesh, jmesh = meshes_2x2()
    xs = normal(8, 4)  # each device scans its own (4, 2) block

    def body(nxm, sc):
        def f(x):
            c, ys = sc(lambda c, r: (c * 0.5 + r, nxm.cos(c)), x[0] * 0.0, x)
            return ys + c
        return f
    want = jax.jit(jax.shard_map(body(jnp, jax.lax.scan), mesh=jmesh, in_specs=P("x", "y"),
                                 out_specs=P("x", "y")))(xs)
    got = jit(shard_map(body(nx, scan), mesh, in_specs=nx.P("x", "y"),
                        out_specs=nx.P("x", "y")), compiler=compiler)(t(xs))
    np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("compiler", [None, *COMPILERS])
def test_map(compiler):
    xs = normal(5, 3)
    got = run(lambda x: nx_map(lambda r: (nx.sum(r * r), r * 2), x),
              compiler, t(xs))
    close(got, jax.lax.map(lambda r: (jnp.sum(r * r), r * 2), xs), TOL, TOL)
    got = run(lambda x: nx_map(lambda r: nx.exp(r), x, batch_size=2), compiler, t(xs))
    close(got, jax.lax.map(jnp.exp, xs, batch_size=2), TOL, TOL)


def _matmul2(nxm):
    def f(a, b):  # a batch of 2x2 matrix products, a before b
        return nxm.einsum("...ij,...jk->...ik", a, b) if nxm is jnp else nx.dot(
            a, [a.rank - 1], [0], b, [b.rank - 2], [0])
    return f


# every (length, reverse) pair (n 1: no combine; 2: one level; 5 and 11: odd lengths at
# several levels; 8: a power of two) on one path each, in rotation; ``make exhaustive``:
# on every path
@pytest.mark.parametrize("n,reverse,compiler", [
    (*opts, c) for opts, c in covering([(n, r) for n in (1, 2, 5, 8, 11) for r in (False, True)],
                                       [None, *COMPILERS])])
def test_associative_scan(compiler, n, reverse):
    x = normal(n, 3)
    got = run(lambda a: associative_scan(nx.add, a, reverse=reverse), compiler, t(x))
    close(got, jax.lax.associative_scan(jnp.add, x, reverse=reverse), 1e-5, 1e-5)
    got = run(lambda a: associative_scan(nx.max, a, reverse=reverse, axis=1), compiler,
              t(x.T.copy()))
    close(got, jax.lax.associative_scan(jnp.maximum, x.T, reverse=reverse, axis=1),
          1e-6, 1e-6)
    m = normal(n, 2, 2, seed=n)
    got = run(lambda a: associative_scan(_matmul2(nx), a, reverse=reverse), compiler, t(m))
    close(got, jax.lax.associative_scan(_matmul2(jnp), m, reverse=reverse), 1e-4, 1e-4)


@pytest.mark.parametrize("compiler", [None, "evaluator"])
def test_associative_scan_containers(compiler):
    a, b = normal(6), normal(6, seed=1)

    def lin(nxm):  # composition of affine maps x -> a x + b, non-commutative
        return lambda p, q: (p[0] * q[0], q[0] * p[1] + q[1])
    got = run(lambda a, b: associative_scan(lin(nx), (a, b)), compiler, t(a), t(b))
    close(got, jax.lax.associative_scan(lin(jnp), (a, b)), 1e-5, 1e-5)


@pytest.mark.parametrize("compiler", [None, "evaluator"])
def test_errors(compiler):
    with pytest.raises(ValueError, match=r"same leading axis length, got xs\[0\]: 3, xs\[1\]: 4"):
        run(lambda a, b: scan(lambda c, x: (c, x), nx.tensor(0.0), (a, b)), compiler,
            t(np.zeros(3)), t(np.zeros(4)))
    with pytest.raises(ValueError, match="length 5 does not match the leading axis length 3"):
        run(lambda a: scan(lambda c, x: (c, x), nx.tensor(0.0), a, length=5), compiler,
            t(np.zeros(3)))
    with pytest.raises(ValueError, match="expected length when xs is None"):
        scan(lambda c, x: (c, x), nx.tensor(0.0))
    with pytest.raises(ValueError, match=r"carry leaf 0 \(carry\['h'\]\) is f32\[3\] in init, "
                                         r"but the body returned f32 for it"):
        run(lambda a: scan(lambda c, x: ({"h": nx.sum(c["h"])}, x), {"h": nx.tensor([0.0] * 3)},
                           a), compiler, t(np.zeros(3, np.float32)))
    with pytest.raises(TypeError, match=r"carry leaf 0 \(carry\[0\]\) is s32 in init, but "
                                        r"the body returned f32"):
        run(lambda a: scan(lambda c, x: ((c[0] + x,), x), (nx.tensor(0),), a), compiler,
            t(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="carry with init's structure"):
        run(lambda a: scan(lambda c, x: ((c, c), x), nx.tensor(0.0), a), compiler,
            t(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="unroll to be a positive integer or True, got 0"):
        scan(lambda c, x: (c, x), nx.tensor(0.0), t(np.zeros(3)), unroll=0)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("reverse", [False, True])
def test_importer_reads_jax_scan(compiler, reverse):
    def f(c, xs):
        return jax.lax.scan(lambda c, x: (jnp.sin(c) * x + c, c * x), c, xs, reverse=reverse)
    c, xs = normal(3), normal(5, 3, seed=2)
    prog = load(jax.jit(f).lower(c, xs).as_text())
    close(prog.jit(compiler)(t(c), t(xs)), f(c, xs), 1e-5, 1e-5)
    # read back as scan: its gradient keeps the carries, and matches jax.grad
    g = grad(lambda c, xs: nx.sum(prog(c, xs)[1]) + nx.sum(prog(c, xs)[0]), argnums=(0, 1))
    want = jax.grad(lambda c, xs: jnp.sum(f(c, xs)[1]) + jnp.sum(f(c, xs)[0]),
                    argnums=(0, 1))(c, xs)
    close(jit(g, compiler=compiler)(t(c), t(xs)), want, 1e-4, 1e-4)


def test_importer_keeps_other_loops_as_while_loops():
    def f(x):  # a fori_loop: no buffer written row by row, so not a scan
        return jax.lax.fori_loop(0, 4, lambda i, v: v * 2.0 + i, x)
    prog = load(jax.jit(f).lower(jnp.float32(1.0)).as_text())
    assert prog.jit("evaluator")(nx.tensor(1.0)).tolist() == float(f(1.0))
    text = str(debug_expr(prog)(*prog.templates))
    assert "while" in text and "put_slice" not in text
    prog = load(jax.jit(lambda c, xs: jax.lax.scan(lambda c, x: (c + x, c), c, xs)).lower(
        jnp.float32(0), jnp.zeros(3, jnp.float32)).as_text())
    assert "put_slice" in str(debug_expr(prog)(*prog.templates))  # scan's ys, row by row


@pytest.mark.parametrize("reverse", [False, True])
def test_imported_scan_reads_xs_row_by_row_so_its_gradient_is_linear(reverse):
    """JAX's loop reads xs[i] from a loop constant: read back as scan's xs (not a value
    the step closes over), the gradient writes one row of xs's cotangent per step instead
    of adding a whole xs-sized cotangent every step (O(n^2) work)."""
    n = 50

    def jf(w, xs):
        return jax.lax.scan(lambda c, x: (jnp.tanh(c * w + x), c * c), jnp.zeros(4), xs,
                            reverse=reverse)
    prog = load(jax.jit(jf).lower(jnp.float32(0.5), jnp.zeros((n, 4), jnp.float32)).as_text())

    def loss(w, xs):
        c, ys = prog(w, xs)
        return nx.sum(ys) + nx.sum(c)
    text = to_mlir(grad(loss, argnums=(0, 1)), nx.template((), "f32"),
                   nx.template((n, 4), "f32"))
    assert not [ln for ln in text.splitlines()
                if "stablehlo.add" in ln and ln.rstrip().endswith(f"tensor<{n}x4xf32>")]
    w, xs = np.float32(0.5), normal(n, 4, seed=2)
    want = jax.grad(lambda w, xs: (lambda c, ys: jnp.sum(ys) + jnp.sum(c))(*jf(w, xs)),
                    argnums=(0, 1))(w, xs)
    close(jit(grad(loss, argnums=(0, 1)), compiler="exla")(nx.tensor(w), t(xs)),
          want, 1e-4, 1e-4)


def _w_loss(nxm, sc):
    def f(w, xs):
        c, ys = sc(lambda c, x: (nxm.tanh(c * w + x), c * c), xs[0] * 0.0, xs)
        return nxm.sum(ys) + nxm.sum(c)
    return f


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_of_scan_in_shard_map(compiler):
    mesh, jmesh = meshes_2x2()
    xs = normal(8, 4)
    want = jax.jit(jax.shard_map(lambda w, x: jax.grad(_w_loss(jnp, jax.lax.scan))(w, x),
                                 mesh=jmesh, in_specs=(P(), P("x", "y")),
                                 out_specs=P()))(jnp.float32(0.4), xs)
    got = jit(shard_map(lambda w, x: grad(_w_loss(nx, scan))(w, x), mesh,
                        in_specs=(nx.P(), nx.P("x", "y")), out_specs=nx.P()),
              compiler=compiler)(nx.tensor(0.4), t(xs))
    np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=1e-4)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_second_derivative_through_scan(compiler):
    xs = normal(5, 3)
    want = jax.hessian(_w_loss(jnp, jax.lax.scan))(jnp.float32(0.4), xs)
    got = jit(hessian(_w_loss(nx, scan)), compiler=compiler)(nx.tensor(0.4), t(xs))
    np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=1e-4)


def test_eager_on_exla_backend():
    xs = normal(5, 3)
    old = nx.default_backend("exla")
    try:
        got = scan(lambda c, x: (c + x, c * x), nx.tensor(np.ones(3, np.float32)), t(xs),
                   reverse=True)
        acc = associative_scan(nx.add, t(xs))
    finally:
        nx.default_backend(old)
    close(got, jax.lax.scan(lambda c, x: (c + x, c * x), jnp.ones(3), xs,
                            reverse=True), 1e-5, 1e-5)
    close(acc, jax.lax.associative_scan(jnp.add, xs), 1e-5, 1e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_gradient_through_scan_inside_cond_and_fori_loop(compiler):
    xs = normal(5, 3)

    def f(nxm, sc, cond, fori):
        def loss(w, xs):
            def inner(c):
                return sc(lambda c, x: (nxm.tanh(c * w + x), c), c, xs)[0]
            c = cond(w > 0, lambda: inner(xs[0] * 0.0), lambda: xs[0])
            return nxm.sum(fori(0, 2, lambda i, c: inner(c), c))
        return loss
    want = jax.grad(f(jnp, jax.lax.scan, jax.lax.cond, jax.lax.fori_loop))(jnp.float32(0.3), xs)
    got = jit(grad(f(nx, scan, nx.cond, nx.fori_loop)), compiler=compiler)(nx.tensor(0.3), t(xs))
    np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=1e-4)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_and_vmap_of_map_and_associative_scan(compiler):
    xs = normal(4, 5, 2)

    def loss(nxm, m, asc, mx):
        def f(w, xs):
            ys = m(lambda r: nxm.sin(r * w), xs)
            return nxm.sum(asc(lambda a, b: a + b, ys, axis=1) * asc(mx, ys, reverse=True))
        return f
    want = jax.grad(loss(jnp, jax.lax.map, jax.lax.associative_scan, jnp.maximum))(
        jnp.float32(0.7), xs)
    got = jit(grad(loss(nx, nx_map, associative_scan, nx.max)), compiler=compiler)(
        nx.tensor(0.7), t(xs))
    np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=1e-4)
    want = jax.vmap(lambda x: jax.lax.associative_scan(jnp.add, jax.lax.map(jnp.cos, x)))(xs)
    got = jit(vmap(lambda x: associative_scan(nx.add, nx_map(nx.cos, x))),
              compiler=compiler)(t(xs))
    close(got, want, 1e-5, 1e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_of_vmap_of_scan_and_jacobian(compiler):
    xs = normal(3, 5, 2)

    def f(nxm, sc, vm):
        def loss(w, xs):
            per = vm(lambda x: sc(lambda c, r: (nxm.tanh(c * w + r), c * c), x[0] * 0.0, x)[1])
            return nxm.sum(per(xs))
        return loss
    want = jax.grad(f(jnp, jax.lax.scan, jax.vmap))(jnp.float32(0.3), xs)
    got = jit(grad(f(nx, scan, vmap)), compiler=compiler)(nx.tensor(0.3), t(xs))
    np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=1e-4)

    def g(nxm, sc):
        return lambda w, xs: sc(lambda c, r: (nxm.tanh(c * w + r), c), xs[0] * 0.0, xs)[0]
    want = jax.jacrev(g(jnp, jax.lax.scan))(jnp.float32([0.3, 0.5]), xs[0])
    got = jit(jacobian(g(nx, scan)), compiler=compiler)(t(np.float32([0.3, 0.5])), t(xs[0]))
    np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=1e-4, atol=1e-6)
