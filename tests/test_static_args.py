"""static_argnums / static_argnames on jit, defn, compile, shard_jit, shard_map and jitted
grad, with JAX's semantics: static values reach the function as themselves, are part of
the cache key (one trace and compile per distinct value), must be hashable."""
from helpers import COMPILERS

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import compile as nx_compile, defn, grad, jacfwd, jacobian, jit, shard_jit, \
    shard_map, value_and_grad, vmap

X = np.arange(12, dtype=np.float32)


def _reshape(x, n):
    return nx.reshape(x, (n, -1)) * 2


def _jreshape(x, n):
    return jnp.reshape(x, (n, -1)) * 2


@pytest.mark.parametrize("compiler", COMPILERS)
def test_static_argnums_against_jax_and_one_compile_per_value(compiler, compiles):
    f = jit(_reshape, compiler=compiler, static_argnums=1)
    jf = jax.jit(_jreshape, static_argnums=1)
    for n in (2, 3, 2, 4, 3):
        np.testing.assert_array_equal(f(nx.tensor(X), n).to_numpy(), np.asarray(jf(X, n)))
    assert f.trace_count == 3
    if compiler == "exla":
        assert len(compiles) == 3
        f(nx.tensor(X), 2)
        assert len(compiles) == 3  # a repeat compiles nothing


@pytest.mark.parametrize("compiler", COMPILERS)
def test_static_argnames_by_keyword_and_by_position(compiler):
    f = jit(_reshape, compiler=compiler, static_argnames="n")
    assert f(nx.tensor(X), n=3).shape == (3, 4)
    assert f(nx.tensor(X), 3).shape == (3, 4)  # positional: static through the signature
    assert f.trace_count == 2  # by keyword and by position are distinct calls, as in JAX
    g = jit(_reshape, compiler=compiler, static_argnums=1)
    assert g(nx.tensor(X), n=6).shape == (6, 2)  # argnums give the name too


def test_negative_argnums_count_from_the_end():
    f = jit(lambda x, n, k: nx.reshape(x, (n, -1)) * k, static_argnums=(-2, -1))
    jf = jax.jit(lambda x, n, k: jnp.reshape(x, (n, -1)) * k, static_argnums=(-2, -1))
    np.testing.assert_array_equal(f(nx.tensor(X), 4, 3).to_numpy(), np.asarray(jf(X, 4, 3)))


def test_equal_values_of_another_type_compile_again():
    f = jit(lambda x, k: x * k, static_argnums=1)
    assert f(nx.tensor([1, 2]), 2).type == nx.types.parse("s32")
    assert f(nx.tensor([1, 2]), 2.0).type.kind == "f"  # not the s32 program of 2
    f(nx.tensor([1, 2]), 2)
    assert f.trace_count == 2


def test_static_containers_and_objects():
    f = jit(lambda x, shape, how: nx.reshape(x, shape) * (2 if how == "double" else 1),
            static_argnums=(1, 2))
    assert f(nx.tensor(X), (3, 4), "double").to_numpy()[0, 1] == 2
    assert f(nx.tensor(X), (3, 4), "double").shape == (3, 4)
    assert f(nx.tensor(X), (4, 3), "same").to_numpy()[0, 1] == 1
    assert f.trace_count == 2


def test_unhashable_static_argument_is_a_type_error_naming_it():
    f = jit(_reshape, static_argnums=1)
    with pytest.raises(TypeError, match=r"_reshape: static argument 1 \(n\) must be hashable.*"
                                        r"unhashable list: \[2\]"):
        f(nx.tensor(X), [2])
    with pytest.raises(TypeError, match=r"static argument 1 \(n\) must be hashable.*got a "
                                        r"Tensor"):
        f(nx.tensor(X), nx.tensor(2))
    g = jit(_reshape, static_argnames="n")
    with pytest.raises(TypeError, match=r"static argument 'n' must be hashable.*dict"):
        g(nx.tensor(X), n={"a": 1})
    assert f.trace_count == g.trace_count == 0  # before tracing


def test_out_of_range_and_unknown_names_are_errors_when_wrapped():
    with pytest.raises(ValueError, match=r"jit\(_reshape\): static_argnums=\(2,\) but the "
                                         r"function takes only 2 positional arguments \(x, n\)"):
        jit(_reshape, static_argnums=2)
    with pytest.raises(ValueError, match=r"static_argnums=\(-3,\)"):
        jit(_reshape, static_argnums=-3)
    with pytest.raises(ValueError, match=r"static_argnames names \['m'\], which the function "
                                         r"does not take"):
        jit(_reshape, static_argnames="m")
    with pytest.raises(TypeError, match="static_argnums must be an int or a sequence of ints"):
        jit(_reshape, static_argnums="n")
    with pytest.raises(TypeError, match="static_argnames must be a str"):
        jit(_reshape, static_argnames=1)
    # *args: any non-negative position is accepted (JAX's rule)
    f = jit(lambda x, *rest: x * rest[0], static_argnums=(1,))
    assert f(nx.tensor([1.0]), 3).tolist() == [3.0]


def test_defn_with_static_argnums():
    @defn(static_argnums=(1,), compiler="exla")
    def tile(x, times):
        return nx.concatenate([x] * times)
    assert tile(nx.tensor([1, 2]), 3).tolist() == [1, 2, 1, 2, 1, 2]
    assert tile(nx.tensor([1, 2]), 2).tolist() == [1, 2, 1, 2]
    assert tile.trace_count == 2


def test_inside_another_defn_static_values_are_passed_through():
    inner = jit(_reshape, static_argnums=1)
    outer = jit(lambda x: inner(x, 3) + 1)
    assert outer(nx.tensor(X)).shape == (3, 4)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_donation_counts_the_original_positions(compiler):
    f = jit(lambda n, w, g: w - g * n, compiler=compiler, static_argnums=0, donate_argnums=1)
    w = nx.tensor([1.0, 2.0])
    out = f(0.5, w, nx.tensor([2.0, 2.0]))
    assert out.tolist() == [0.0, 1.0] and w.donated
    with pytest.raises(ValueError, match="cannot be both static and donated"):
        jit(lambda n, w: w, static_argnums=0, donate_argnums=0)(1, nx.tensor([1.0]))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_jitted_grad_and_value_and_grad_with_static_arguments(compiler):
    def loss(x, n):
        return nx.sum(nx.reshape(x, (n, -1)) ** 2 * n)

    def jloss(x, n):
        return jnp.sum(jnp.reshape(x, (n, -1)) ** 2 * n)
    g = jit(grad(loss), compiler=compiler, static_argnums=1)
    vg = jit(value_and_grad(loss), compiler=compiler, static_argnames="n")
    for n in (2, 3):
        np.testing.assert_allclose(g(nx.tensor(X), n).to_numpy(),
                                   jax.jit(jax.grad(jloss), static_argnums=1)(X, n))
        v, d = vg(nx.tensor(X), n=n)
        jv, jd = jax.jit(jax.value_and_grad(jloss), static_argnames="n")(X, n=n)
        np.testing.assert_allclose(v.to_numpy(), jv)
        np.testing.assert_allclose(d.to_numpy(), jd)
    assert g.trace_count == 2


def test_compile_with_static_argnums(compiles):
    f = nx_compile(_reshape, nx.template((12,), "f32"), 4, static_argnums=1, compiler="exla")
    np.testing.assert_array_equal(f(nx.tensor(X)).to_numpy(), np.asarray(_jreshape(X, 4)))
    assert f(nx.tensor(X), 4).shape == (4, 3)
    with pytest.raises(ValueError, match="compiled for other static arguments"):
        f(nx.tensor(X), 3)
    j = jit(_reshape, compiler="exla", static_argnums=1)
    assert nx_compile(j, nx.template((12,), "f32"), 6)(nx.tensor(X)).shape == (6, 2)


def test_shard_map_with_static_argnums():
    mesh = nx.Mesh("m", (4,), axis_names=("x",))
    f = shard_map(lambda x, k: x * k, mesh, in_specs=nx.P("x"), out_specs=nx.P("x"),
                  static_argnums=1)
    assert f(nx.tensor(X), 3).tolist() == (X * 3).tolist()
    assert f(nx.tensor(X), 2).tolist() == (X * 2).tolist()


def test_shard_jit_with_static_argnums():
    mesh = nx.Mesh("m", (4,), axis_names=("x",))
    f = shard_jit(lambda x, k: x * k, mesh, input_shardings=[nx.P("x")], compiler="exla",
                  static_argnums=1)
    assert f(nx.tensor(X), 3).tolist() == (X * 3).tolist()  # whole tensors
    per_device = [[nx.tensor(p), 2] for p in np.split(X, 4)]
    out = f(per_device)  # per-device lists
    np.testing.assert_array_equal(np.concatenate([o.to_numpy() for o in out]), X * 2)
    with pytest.raises(ValueError, match="same on every device"):
        f([[nx.tensor(p), 2 + (i == 1)] for i, p in enumerate(np.split(X, 4))])


# ----------------------------------------------------------------------------------------
# Transforms called outside a defn: plain Python arguments they leave alone stay plain
# ----------------------------------------------------------------------------------------
def _jloss(x, n, scale=1.0):
    return jnp.sum(jnp.reshape(x, (n, -1)) ** 2) * scale


def _loss(x, n, scale=1.0):
    return nx.sum(nx.reshape(x, (n, -1)) ** 2) * scale


def test_eager_transforms_pass_plain_arguments_through_as_jax_does():
    x = nx.tensor(X)
    for n in (2, 3):
        want = jax.grad(_jloss)(X, n)
        np.testing.assert_allclose(grad(_loss)(x, n).to_numpy(), want)
        np.testing.assert_allclose(value_and_grad(_loss)(x, n)[1].to_numpy(), want)
        np.testing.assert_allclose(jacfwd(_loss)(x, n).to_numpy(), jax.jacfwd(_jloss)(X, n),
                                   rtol=1e-6)
        np.testing.assert_allclose(jacobian(_loss)(x, n).to_numpy(),
                                   jax.jacrev(_jloss)(X, n), rtol=1e-6)
        # by keyword, and a float that is not differentiated
        np.testing.assert_allclose(grad(_loss)(x, n=n, scale=0.5).to_numpy(),
                                   jax.grad(_jloss)(X, n=n, scale=0.5))
    rows = vmap(lambda x, n: nx.reshape(x, (n, -1)), in_axes=(0, None))
    np.testing.assert_array_equal(
        rows(nx.tensor(X.reshape(2, 6)), 3).to_numpy(),
        jax.vmap(lambda x, n: jnp.reshape(x, (n, -1)), in_axes=(0, None))(X.reshape(2, 6), 3))


def test_eager_transforms_trace_once_per_plain_value_and_tensors_once():
    g = grad(_loss)
    x = nx.tensor(X)
    g(x, 2), g(x, 2), g(x, 3), g(x * 2.0, 3)
    (j,) = g._jits.values()
    assert j.trace_count == 2
    # a tensor where a plain value could be is traced (one trace for every value)
    h = grad(lambda x, s: nx.sum(x * s))
    h(x, nx.tensor(2.0)), h(x, nx.tensor(3.0))
    (j,) = h._jits.values()
    assert j.trace_count == 1


def test_eager_transforms_still_differentiate_plain_numbers_they_are_given():
    # the differentiated argument is traced even when it is a Python float
    assert grad(lambda x, n: x ** n)(3.0, 2).tolist() == 6.0
    assert jacfwd(lambda x, n: x ** n, argnums=(0,))(3.0, 3)[0].tolist() == 27.0
    with pytest.raises(ValueError, match="argnums 5 out of range"):
        grad(_loss, argnums=5)(nx.tensor(X), 2)


def test_vmap_inside_a_defn_passes_plain_unbatched_values_through():
    rows = vmap(lambda x, n: nx.reshape(x, (n, -1)), in_axes=(0, None))
    f = jit(lambda x: rows(x, 3), compiler="exla")
    assert f(nx.tensor(X.reshape(2, 6))).shape == (2, 3, 2)
    with pytest.raises(ValueError, match="maps no argument"):
        vmap(lambda n: n, in_axes=(None,))(3)
