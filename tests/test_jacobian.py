"""jacobian and hessian (nxpy.defn.jacobian) against jax.jacrev and jax.hessian, on the
Evaluator and EXLA (and called eagerly): shapes of outputs and arguments, containers on
both sides, several argnums, has_aux, integer arguments, inside jit and composed with
vmap; errors."""
import numpy as np
import pytest

import nxpy as nx
from helpers import COMPILERS, close, normal, on
from nxpy import telemetry
from nxpy.defn import grad, hessian, jacobian, jit, vmap

import jax  # after nxpy started XLA (conftest)
import jax.numpy as jnp


_rng = normal
TOL = 2e-5

W, X, B = _rng(3, 4), _rng(4, seed=1), _rng(3, seed=2)

CASES = {  # name: (nxpy function, jax.numpy function, arguments, argnums)
    "vector to vector": (lambda x: nx.tanh(nx.dot(nx.tensor(W), x)),
                         lambda x: jnp.tanh(jnp.dot(W, x)), (X,), 0),
    "matrix to scalar": (lambda w: nx.sum(nx.sin(w) * w), lambda w: jnp.sum(jnp.sin(w) * w),
                         (W,), 0),
    "matrix to matrix": (lambda w: nx.exp(w) * 2 + w.T.T, lambda w: jnp.exp(w) * 2 + w, (W,), 0),
    "two arguments": (lambda w, x: nx.dot(w, x) ** 2, lambda w, x: jnp.dot(w, x) ** 2,
                      (W, X), (0, 1)),
    "second argument": (lambda w, x, b: nx.dot(w, x) + b, lambda w, x, b: jnp.dot(w, x) + b,
                        (W, X, B), 2),
    "container output": (lambda x: {"s": nx.sum(x ** 3), "v": nx.cos(x)},
                         lambda x: {"s": jnp.sum(x ** 3), "v": jnp.cos(x)}, (X,), 0),
    "container argument": (lambda p: nx.dot(p["w"], p["x"]), lambda p: jnp.dot(p["w"], p["x"]),
                           ({"w": W, "x": X},), 0),
    "scalar to vector": (lambda t: nx.stack([t, t ** 2, nx.sin(t)]),
                         lambda t: jnp.stack([t, t ** 2, jnp.sin(t)]), (np.float32(0.7),), 0),
}


def _args(args, to):
    return tuple(jax.tree_util.tree_map(to, a) for a in args)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("compiler", [None, *COMPILERS])
def test_jacobian_as_jax(name, compiler):
    nf, jf, args, argnums = CASES[name]
    want = jax.jacrev(jf, argnums=argnums)(*args)
    f = jacobian(nf, argnums=argnums)
    got = on(compiler, f)(*_args(args, nx.tensor))
    close(got, want, TOL, TOL)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_hessian_as_jax(compiler):
    def nf(w, x):
        return nx.sum(nx.tanh(nx.dot(w, x)) ** 2)

    def jf(w, x):
        return jnp.sum(jnp.tanh(jnp.dot(w, x)) ** 2)

    for argnums in (0, 1, (0, 1)):
        got = jit(hessian(nf, argnums=argnums), compiler=compiler)(nx.tensor(W), nx.tensor(X))
        close(got, jax.hessian(jf, argnums=argnums)(W, X), 1e-4, 1e-4)


def test_has_aux_integer_arguments_and_composition():
    j, aux = jacobian(lambda x: (x * 3, nx.sum(x)), has_aux=True)(nx.tensor(X))
    close(j, jax.jacrev(lambda x: x * 3)(X), TOL, TOL)
    assert aux.tolist() == pytest.approx(float(X.sum()), rel=1e-6)
    # an integer argument gets zeros, as grad gives it
    ji = jacobian(lambda x, n: x * nx.as_type(n, "f32"), argnums=1)(nx.tensor(X), nx.tensor(2))
    assert ji.shape == (4,) and str(ji.type) == "f32" and ji.tolist() == [0.0] * 4
    # per-example Jacobians: vmap of jacobian, as jax.vmap of jax.jacrev
    xs = _rng(5, 4, seed=3)
    def f(x):
        return nx.sin(nx.dot(nx.tensor(W), x))
    close(vmap(jacobian(f))(nx.tensor(xs)),
          jax.vmap(jax.jacrev(lambda x: jnp.sin(jnp.dot(W, x))))(xs), TOL, TOL)


def test_compiled_once():
    f = jit(jacobian(lambda x: x ** 2), compiler="exla")
    before = telemetry.counters()
    for k in range(5):
        f(nx.tensor(X + k))
    after = telemetry.counters()
    assert after["trace"] - before["trace"] == 1 and after["compile"] - before["compile"] <= 1


@pytest.mark.parametrize("call, err, match", [
    (lambda: jacobian(3), TypeError, "jacobian: expected a function to differentiate, got int"),
    (lambda: hessian("f"), TypeError, "hessian: expected a function to differentiate, got str"),
    (lambda: jacobian(lambda x: nx.as_type(x, "s32"))(nx.tensor(X)), TypeError,
     r"jacobian: expected every output to be a real floating-point tensor, got s32 for output"),
    (lambda: jacobian(lambda x: {"a": x, "b": nx.as_type(x, "c64")})(nx.tensor(X)), TypeError,
     r"got c64 for output\['b'\]"),
    (lambda: jacobian(lambda x: x, has_aux=True)(nx.tensor(X)), TypeError,
     "jacobian: with has_aux=True the function must return a pair"),
    (lambda: jacobian(lambda x: x)(), TypeError, "jacobian: the function needs at least one"),
    (lambda: jacobian(lambda x: x, argnums=3)(nx.tensor(X)), ValueError, "argnums 3 out of range"),
])
def test_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_grad_of_jacobian_is_a_second_derivative():
    # d/dx sum(J(x)) for f(x) = x ** 3 elementwise: J = diag(3x^2), sum = sum(3x^2) -> 6x
    g = grad(lambda x: nx.sum(jacobian(lambda y: y ** 3)(x)))(nx.tensor(X))
    np.testing.assert_allclose(g.to_numpy(), 6 * X, rtol=1e-5)


def test_hessian_of_a_vector_function_is_jaxs():
    """hessian is jacfwd(jacrev(f)), as JAX's: a vector output gives Y + X + X."""
    got = hessian(lambda x: nx.sin(x) * x[0])(nx.tensor(X))
    want = jax.hessian(lambda x: jnp.sin(x) * x[0])(X)
    assert got.shape == (4, 4, 4)
    close(got, want, 1e-4, 1e-4)
