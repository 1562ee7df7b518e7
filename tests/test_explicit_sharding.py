"""Explicit sharding ("sharding in types", issue 45 item 4) against JAX: over make_mesh's explicit
axes a value's type carries its layout (``nx.typeof`` prints what ``jax.typeof`` prints),
ops raise where JAX's sharding rules raise, ``out_sharding=``, ``reshard``, ``auto_axes``
and ``explicit_axes`` lay results out as JAX's do, and inside ``shard_map`` the type shows
the axes a value varies along (``pcast`` adds them). Eagerly and under ``jit`` on both
compilers; values and layouts compared with JAX's."""
import numpy as np
import pytest

import nxpy as nx
import nxpy.numpy as xnp
from nxpy import P
from nxpy.defn import grad, jit, pcast, psum, shard_map, with_sharding_constraint

from helpers import COMPILERS, close
from jax_tutorials import shard_layout

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp
from jax.sharding import PartitionSpec as JP

SHAPE = (2, 4)


def meshes():
    return nx.make_mesh(SHAPE, ("X", "Y")), jax.make_mesh(SHAPE, ("X", "Y"))


def arr(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7


# each case: (name, arrays as (shape, spec), nxpy function, JAX function)
OPS = [
    ("add_broadcast", [((8, 1), ("X",)), ((1, 4), (None, "Y"))], lambda a, b: a + b,
     lambda a, b: a + b),
    ("add_rank", [((4,), ("Y",)), ((8, 4), ("X",))], lambda a, b: a + b, lambda a, b: a + b),
    ("add_one_sharded", [((8, 4), ("X", "Y")), ((8, 4), ("X",))], lambda a, b: a * b,
     lambda a, b: a * b),
    ("sin_transpose", [((8, 4), ("X", "Y"))], lambda a: xnp.sin(a).T, lambda a: jnp.sin(a).T),
    ("sum0", [((8, 4), ("X", "Y"))], lambda a: a.sum(axis=0), lambda a: a.sum(axis=0)),
    ("sum1_keep", [((8, 4), ("X", "Y"))], lambda a: a.sum(axis=1, keepdims=True),
     lambda a: a.sum(axis=1, keepdims=True)),
    ("dot_free", [((4, 8), ("X",)), ((8, 4), (None, "Y"))], lambda a, b: a @ b,
     lambda a, b: a @ b),
    ("dot_lhs_contract", [((4, 8), (None, "X")), ((8, 4), ())], lambda a, b: xnp.dot(a, b),
     lambda a, b: jnp.dot(a, b)),
    ("einsum_batch", [((2, 4, 8), ("X",)), ((2, 8, 4), ("X",))],
     lambda a, b: xnp.einsum("bij,bjk->bik", a, b), lambda a, b: jnp.einsum("bij,bjk->bik", a, b)),
    ("reshape_split", [((8, 4), ("X",))], lambda a: a.reshape(2, 4, 4),
     lambda a: a.reshape(2, 4, 4)),
    ("reshape_merge", [((8, 4), ("X",))], lambda a: a.reshape(32), lambda a: a.reshape(32)),
    ("slice_free_dim", [((8, 4), ("X",))], lambda a: a[:, :2], lambda a: a[:, :2]),
    ("where", [((8, 4), ("X",))], lambda a: xnp.where(a > 1, a, 0.0),
     lambda a: jnp.where(a > 1, a, 0.0)),
    ("broadcast_to", [((4,), ("Y",))], lambda a: xnp.broadcast_to(a, (8, 4)),
     lambda a: jnp.broadcast_to(a, (8, 4))),
    ("sort_free_dim", [((8, 4), ("X",))], lambda a: xnp.sort(a, axis=1),
     lambda a: jnp.sort(a, axis=1)),
    ("zeros_like", [((8, 4), ("X",))], lambda a: xnp.zeros_like(a) + a,
     lambda a: jnp.zeros_like(a) + a),
]


def _placed(specs, put, p):
    return [put(arr(*shape), p(*spec)) for shape, spec in specs]


@pytest.mark.parametrize("mode", ["eager", *COMPILERS])
@pytest.mark.parametrize("case", OPS, ids=[c[0] for c in OPS])
def test_types_follow_jax_s_sharding_rules(case, mode):
    _, specs, nf, jf = case
    m, j = meshes()
    seen = []

    def traced(*a):
        out = nf(*a)
        seen.append(str(nx.typeof(out)))
        return out

    with nx.set_mesh(m):
        args = _placed(specs, nx.device_put, P)
        got = nf(*args) if mode == "eager" else jit(traced, compiler=mode)(*args)
    with jax.set_mesh(j):
        want = jax.jit(jf)(*_placed(specs, jax.device_put, JP))
    close(got, want)
    assert str(nx.typeof(got)) == str(jax.typeof(want))
    assert shard_layout(got) == shard_layout(want)
    assert seen in ([], [str(jax.typeof(want))])         # the type while traced is the same


# each case raises in JAX; nxpy raises ShardingTypeError with JAX's message (its start)
ERRORS = [
    ("elementwise_axes_differ", [((8, 4), ("X",)), ((8, 4), ("Y",))], lambda a, b: a + b,
     "add got incompatible shardings for broadcasting: ('X', None), ('Y', None)."),
    ("elementwise_axis_twice", [((8, 4), ("X",)), ((8, 4), (None, "X"))], lambda a, b: a - b,
     "subtract operation with inputs: f32[8@X,4], f32[8,4@X] produces an illegally sharded"),
    ("elementwise_prefix", [((8, 4), (("X", "Y"),)), ((8, 4), ("X",))], lambda a, b: a + b,
     "add got incompatible shardings for broadcasting"),
    ("dot_contracting", [((4, 8), (None, "X")), ((8, 4), ("X",))], lambda a, b: a @ b,
     "Contracting dimensions are sharded and it is ambiguous how the output should be sharded."
     " Please specify the output sharding via the `out_sharding` parameter. Got "
     "lhs_contracting_spec=('X',) and rhs_contracting_spec=('X',)"),
    ("dot_free_axis_twice", [((4, 8), ("X",)), ((8, 4), (None, "X"))], lambda a, b: a @ b,
     "dot_general operation with inputs: f32[4@X,8], f32[8,4@X] produces an illegally sharded "
     "result: f32[4@X,4@X]"),
    ("einsum_batch_differs", [((2, 4, 8), ("X",)), ((2, 8, 4), ())],
     lambda a, b: xnp.einsum("bij,bjk->bik", a, b),
     "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same "
     "sharding, got ('X',) and (None,)."),
    ("reshape_loses_axis", [((8, 4), (None, "Y"))], lambda a: a.reshape(32),
     "This reshape is not supported."),
    ("slice_sharded_dim", [((8, 4), ("X",))], lambda a: a[:3],
     "slicing on sharded dims where out dim (3) is not divisible by mesh axes (2) with spec (X)"),
    ("sort_sharded_dim", [((8, 4), ("X",))], lambda a: xnp.sort(a, axis=0), "sort works along"),
    ("cumsum_sharded_dim", [((8, 4), ("X",))], lambda a: xnp.cumsum(a, axis=0),
     "cumulative_sum works along dim 0"),
]
JAX_ERRORS = {"elementwise_axes_differ": lambda a, b: a + b,
              "elementwise_axis_twice": lambda a, b: a - b,
              "elementwise_prefix": lambda a, b: a + b, "dot_contracting": lambda a, b: a @ b,
              "dot_free_axis_twice": lambda a, b: a @ b,
              "einsum_batch_differs": lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
              "reshape_loses_axis": lambda a: a.reshape(32), "slice_sharded_dim": lambda a: a[:3],
              "sort_sharded_dim": lambda a: jnp.sort(a, axis=0),
              "cumsum_sharded_dim": lambda a: jnp.cumsum(a, axis=0)}


#: the jax releases whose rule raises there (jax 0.10's einsum reshards batch dims itself)
JAX_RAISES_FROM = {"einsum_batch_differs": (0, 12)}


def _jax_version() -> tuple:
    return tuple(int(p) for p in jax.__version__.split(".")[:3] if p.isdigit())


@pytest.mark.parametrize("mode", ["eager", *COMPILERS])
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_explicit_mode_errors_where_jax_raises(case, mode):
    name, specs, nf, message = case
    m, j = meshes()
    if _jax_version() >= JAX_RAISES_FROM.get(name, (0,)):
        with jax.set_mesh(j):
            with pytest.raises(Exception, match="harding|reshape|sharded|[Uu]nsharded|gather"):
                jax.jit(JAX_ERRORS[name])(*_placed(specs, jax.device_put, JP))
    with nx.set_mesh(m):
        args = _placed(specs, nx.device_put, P)
        with pytest.raises(nx.ShardingTypeError) as e:
            nf(*args) if mode == "eager" else jit(nf, compiler=mode)(*args)
    assert str(e.value).startswith(message), str(e.value)
    with nx.set_mesh(nx.make_mesh(SHAPE, ("X", "Y"), axis_types=(nx.AxisType.Auto,) * 2)):
        nf(*_placed(specs, nx.device_put, P))               # Auto axes: the partitioner's


@pytest.mark.parametrize("compiler", COMPILERS)
def test_out_sharding_reshard_and_the_constraint_assert(compiler):
    m, j = meshes()
    with jax.set_mesh(j):
        ja, jb = _placed([((4, 8), (None, "X")), ((8, 4), ("X",))], jax.device_put, JP)
        want = [jnp.dot(ja, jb, out_sharding=JP("X")),
                jnp.einsum("ij,jk->ik", ja, jb, out_sharding=JP(None, "Y")),
                jnp.zeros((8, 4), out_sharding=JP("X")),
                jnp.full((8,), 2.0, jnp.float32, out_sharding=JP("Y")),
                jax.random.normal(jax.random.key(3), (8, 4), out_sharding=JP(None, "Y")),
                jax.sharding.reshard(ja, JP("X", "Y")),
                jax.jit(lambda a: jax.sharding.reshard(a * 2, JP("Y")))(ja)]
        with pytest.raises(AssertionError, match="acts as an assert"):
            jax.jit(lambda a: jax.lax.with_sharding_constraint(a, JP("Y")))(ja)
    with nx.set_mesh(m):
        a, b = _placed([((4, 8), (None, "X")), ((8, 4), ("X",))], nx.device_put, P)
        got = [xnp.dot(a, b, out_sharding=P("X")),
               xnp.einsum("ij,jk->ik", a, b, out_sharding=P(None, "Y")),
               xnp.zeros((8, 4), out_sharding=P("X")),
               xnp.full((8,), 2.0, out_sharding=P("Y")),
               nx.random.normal_split(nx.random.key(3), shape=(8, 4), out_sharding=P(None, "Y")),
               nx.reshard(a, P("X", "Y")),
               jit(lambda u: nx.reshard(u * 2, P("Y")), compiler=compiler)(a)]
        with pytest.raises(AssertionError, match="acts as an assert over explicit mesh axes"):
            jit(lambda u: with_sharding_constraint(u, P("Y")), compiler=compiler)(a)
        inside = jit(lambda u, v: xnp.dot(u, v, out_sharding=P(None, "Y")), compiler=compiler)(a, b)
    close(got, want, 1e-5, 1e-5)
    for g, w in zip(got, want):
        assert str(nx.typeof(g)) == str(jax.typeof(w)) and shard_layout(g) == shard_layout(w)
    close(inside, want[1])
    init = nx.nn.initializers.constant(0.5)
    with nx.set_mesh(m):
        z = init(nx.random.key(0), (8, 4), "f32", P("X"))    # JAX's (key, shape, dtype, sharding)
    assert str(nx.typeof(z)) == "float32[8@X,4]"


@pytest.mark.parametrize("compiler", COMPILERS)
def test_auto_axes_and_explicit_axes(compiler):
    m, j = meshes()
    with jax.set_mesh(j):
        ja, jb = _placed([((8, 4), ("X",)), ((8, 4), (None, "X"))], jax.device_put, JP)
        want = jax.jit(lambda u, v: jax.sharding.auto_axes(lambda p, q: p + q)(
            u, v, out_sharding=JP("X")))(ja, jb)
    types = []
    with nx.set_mesh(m):
        a, b = _placed([((8, 4), ("X",)), ((8, 4), (None, "X"))], nx.device_put, P)

        def f(u, v):
            @nx.auto_axes
            def add(p, q):
                types.append((nx.get_abstract_mesh().axis_types, str(nx.typeof(p + q))))
                return p + q
            return add(u, v, out_sharding=P("X"))
        got = jit(f, compiler=compiler)(a, b)
        with pytest.raises(TypeError, match="auto_axes: out_sharding is missing"):
            nx.auto_axes(lambda p: p)(a)
    close(got, want)
    assert str(nx.typeof(got)) == str(jax.typeof(want)) == "float32[8@X,4]"
    assert types == [((nx.AxisType.Auto,) * 2, "float32[8,4]")]
    auto = nx.make_mesh(SHAPE, ("X", "Y"), axis_types=(nx.AxisType.Auto,) * 2)
    inner = []
    with nx.set_mesh(auto):
        x = nx.device_put(arr(8, 4), P("X", "Y"))

        @jit
        def g(u):
            @nx.explicit_axes(axes=("X", "Y"))
            def h(v):
                inner.append(str(nx.typeof(v * 2)))
                return v * 2
            return h(xnp.sin(u), in_sharding=P("X", "Y")) + 1
        close(g(x), np.sin(arr(8, 4)) * 2 + 1)
    assert inner == ["float32[8@X,4@Y]"]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_map_infers_in_specs_checks_them_and_types_varying_values(compiler):
    m, j = nx.make_mesh((4, 2), ("i", "j")), jax.make_mesh((4, 2), ("i", "j"))
    seen, jseen = [], []

    def body(x, lib, out, psum_, pcast_):
        out.append(str(lib.typeof(x)))
        y = psum_(x, "j")
        out.append(str(lib.typeof(y)))
        z = pcast_(psum_(x, ("i", "j")), "j", to="varying")
        out.append(str(lib.typeof(z)))
        return y

    with jax.set_mesh(j):
        jx = jax.device_put(arr(8, 4), JP("i", "j"))
        want = jax.jit(jax.shard_map(lambda x: body(x, jax, jseen, jax.lax.psum, jax.lax.pcast),
                                     out_specs=JP("i")))(jx)
        with pytest.raises(ValueError, match="does not match the specs of the input"):
            jax.shard_map(lambda x: x, in_specs=JP("i"), out_specs=JP("i"))(arr(8, 4))
    with nx.set_mesh(m):
        x = nx.device_put(arr(8, 4), P("i", "j"))
        got = jit(shard_map(lambda v: body(v, nx, seen, psum, pcast), out_specs=P("i")),
                  compiler=compiler)(x)
        with pytest.raises(ValueError, match=r"in_specs passed to shard_map: P\('i'\) does not "
                                             r"match the specs of the input: P\(\)"):
            shard_map(lambda v: v, in_specs=P("i"), out_specs=P("i"), compiler=compiler)(arr(8, 4))
    close(got, want)
    assert seen == jseen == ["float32[2,2]{V:(i,j)}", "float32[2,2]{V:i}", "float32[2,2]{V:j}"]


def test_pcast_gradient_is_jax_s():
    mesh = nx.make_mesh((2,), ("i",), axis_types=(nx.AxisType.Auto,))
    jm = jax.make_mesh((2,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    x = arr(4)

    def loss(v, smap, pc, ps, p):
        f = smap(lambda a: ps(pc(a, "i", to="varying") * a.sum(), "i"), mesh_, in_specs=p(),
                 out_specs=p())
        return (f(v) ** 2).sum()

    mesh_ = mesh
    got = grad(lambda v: loss(v, lambda f, mm, **k: shard_map(f, mm, **k), pcast, psum, P))(x)
    mesh_ = jm
    want = jax.grad(lambda v: loss(v, lambda f, mm, **k: jax.shard_map(f, mesh=mm, **k),
                                   jax.lax.pcast, jax.lax.psum, JP))(x)
    close(got, want)
    with pytest.raises(NotImplementedError, match="to='unreduced'"):
        shard_map(lambda a: pcast(a, "i", to="unreduced"), mesh, P(), P())(x)
    with pytest.raises(ValueError, match="local-view collective"):
        jit(lambda a: pcast(a, "i", to="varying"))(x)


def test_typeof_and_get_abstract_mesh_outside_programs():
    m, j = meshes()
    assert str(nx.typeof(np.arange(8, dtype=np.int32))) == str(jax.typeof(np.arange(8))) \
        == "int32[8]"
    assert repr(nx.typeof(nx.iota((2,), type="f32"))) == "ShapedArray(float32[2])"
    assert nx.get_abstract_mesh() is None
    with nx.set_mesh(m):
        assert nx.get_abstract_mesh() is m
        x = nx.device_put(arr(8, 4), P(("X", "Y")))
        assert nx.typeof(x).sharding.spec == P(("X", "Y"))
    with jax.set_mesh(j):
        jx = jax.device_put(arr(8, 4), JP(("X", "Y")))
    assert str(nx.typeof(x)) == str(jax.typeof(jx)) == "float32[8@(X,Y),4]"
    auto = nx.make_mesh(SHAPE, ("X", "Y"), axis_types=(nx.AxisType.Auto,) * 2)
    assert str(nx.typeof(nx.device_put(arr(8, 4), nx.NamedSharding(auto, P("X"))))) == \
        "float32[8,4]"                                   # Auto axes are not in the type


@pytest.mark.parametrize("mode", ["eager", *COMPILERS])
def test_a_program_traced_without_checks_is_not_taken_with_them(mode):
    """out_sharding= and auto_axes trace with the checks off (or other axis types): their
    programs are keyed by that state, so the same op or function outside still raises."""
    m, _ = meshes()
    with nx.set_mesh(m):
        a, b = _placed([((4, 8), (None, "X")), ((8, 4), ("X",))], nx.device_put, P)
        f = xnp.dot if mode == "eager" else jit(lambda u, v: u @ v, compiler=mode)
        xnp.dot(a, b, out_sharding=P("X"))
        nx.auto_axes(lambda u, v: f(u, v), out_sharding=P("X"))(a, b)
        for _ in range(2):
            with pytest.raises(nx.ShardingTypeError, match="Contracting dimensions"):
                f(a, b)


@pytest.mark.parametrize("mode", ["eager", *COMPILERS])
def test_indexing_takes_out_sharding(mode):
    """``x.at[idx].get(out_sharding=)`` (the training cookbook's embedding lookup) and the
    updates' ``out_sharding=``, as JAX's."""
    m, j = meshes()
    tokens = np.array([[1, 3, 0, 2]] * 4, dtype=np.int32)

    def f(lib_p, e, t):
        return e.at[t].get(out_sharding=lib_p("X", None, None)), e.at[0].set(1.0,
                                                                          out_sharding=lib_p("Y"))
    with jax.set_mesh(j):
        je = jax.device_put(arr(4, 8), JP(None, "Y"))
        want = jax.jit(lambda e, t: f(JP, e, t))(je, tokens)
    with nx.set_mesh(m):
        e = nx.device_put(arr(4, 8), P(None, "Y"))
        got = f(P, e, tokens) if mode == "eager" else jit(lambda u, t: f(P, u, t),
                                                          compiler=mode)(e, tokens)
    close(got, want)
    for g, w in zip(got, want):
        assert str(nx.typeof(g)) == str(jax.typeof(w)) and shard_layout(g) == shard_layout(w)
